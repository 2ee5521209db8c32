//! Coder 12, bit-shuffled LZ4 (specified in docs/format.md): the values' bits
//! transposed over the whole tile, as the Bitshuffle filter does, the bit planes that
//! are not all zero compressed as one LZ4 block behind a mask of which they are. Values
//! with few significant bits spread over whole words (flags, counts, weights, sparse
//! residuals) leave most planes empty, which byte shuffling ([`super::shuffled`])
//! exploits only when whole bytes are zero.
//!
//! Layout: `m = ceil(n / 8)` groups of eight values (the last padded with zero words);
//! bit plane `j = 8 b + k` (bit `k` of byte `b`) takes `m` bytes, byte `g` holding bit
//! `j` of values `8 g .. 8 g + 8`, value `8 g + i` in bit `i`.

use super::shuffled::{
    byte_stream_into, compress_bytes_into, compressed_len, decompress_bytes, from_byte_streams,
    Backend, ESTIMATE_LEVEL, ZSTD_LEVEL,
};
use crate::bits::plane_mask;
use crate::buffers;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Transposes the 8x8 bit matrix in `x` (row `r` in byte `r`, column `c` in bit `c`):
/// bit `8 r + c` moves to bit `8 c + r`. Its own inverse.
#[inline(always)]
fn transpose8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// Groups of eight values in a coding of `n` values.
fn groups(n: usize) -> usize {
    n.div_ceil(8)
}

/// Appends to `out` the bit planes of `stream` (`8 m` bytes) that `mask` names, in
/// order: plane `k` (bit `k` of `mask`) takes `m` bytes, byte `g` holding bit `k` of
/// bytes `8 g .. 8 g + 8` of the stream, byte `8 g + i` in bit `i`.
pub(crate) fn append_planes(stream: &[u8], mask: u8, out: &mut Vec<u8>) {
    let m = stream.len() / 8;
    let start = out.len();
    out.resize(start + mask.count_ones() as usize * m, 0);
    if m == 0 {
        return;
    }
    let mut planes: Vec<(u32, &mut [u8])> = (0..8)
        .filter(|k| mask >> k & 1 == 1)
        .zip(out[start..].chunks_exact_mut(m))
        .collect();
    // A block of the stream at a time, each of its planes a pass over it while it is
    // in the first-level cache.
    for first in (0..m).step_by(PLANE_BLOCK_GROUPS) {
        let groups = first..(first + PLANE_BLOCK_GROUPS).min(m);
        let bytes = &stream[8 * groups.start..8 * groups.end];
        for (k, plane) in &mut planes {
            plane_bits(bytes, *k, &mut plane[groups.clone()]);
        }
    }
}

/// Groups of eight bytes [`append_planes`] takes at a time (4 KiB of the stream).
const PLANE_BLOCK_GROUPS: usize = 512;

/// Bit `k` of each of `bytes` into `plane` (one byte per eight bytes: byte `8 g + i`
/// in bit `i` of `plane[g]`).
fn plane_bits(bytes: &[u8], k: u32, plane: &mut [u8]) {
    let done = match crate::isa::avx2_kernels() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 is present (detected at run time).
        true => unsafe { x86::plane_bits_avx2(bytes, k, plane) },
        _ => 0,
    };
    for (byte, group) in plane[done..]
        .iter_mut()
        .zip(bytes[8 * done..].chunks_exact(8))
    {
        let x = u64::from_le_bytes(group.try_into().expect("8 bytes"));
        *byte = gather_bit(x, k);
    }
}

/// Bit `k` of each byte of `x`, byte `i`'s in bit `i`: the bits, one per byte, are
/// multiplied into the top byte (each lands on a bit of its own, so nothing carries).
#[inline(always)]
fn gather_bit(x: u64, k: u32) -> u8 {
    ((x >> k & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_sll_epi16, _mm_cvtsi32_si128,
    };

    /// [`super::plane_bits`] for the whole 32-byte pieces of `bytes`: shifting 16-bit
    /// lanes left by `7 - k` moves bit `k` of each byte to its bit 7, which
    /// `vpmovmskb` gathers. Returns the plane bytes written.
    #[target_feature(enable = "avx2")]
    pub(super) fn plane_bits_avx2(bytes: &[u8], k: u32, plane: &mut [u8]) -> usize {
        let shift = _mm_cvtsi32_si128(7 - k as i32);
        let pieces = (bytes.len() / 32).min(plane.len() / 4);
        for (piece, out) in bytes
            .chunks_exact(32)
            .zip(plane.chunks_exact_mut(4))
            .take(pieces)
        {
            // SAFETY: `piece` holds 32 bytes, the load's width (unaligned).
            let x = unsafe { _mm256_loadu_si256(piece.as_ptr().cast()) };
            let bits = _mm256_movemask_epi8(_mm256_sll_epi16(x, shift)) as u32;
            out.copy_from_slice(&bits.to_le_bytes());
        }
        4 * pieces
    }
}

/// The bytes of a byte stream (`stream`, `8 m` bytes) from its eight planes `p` (`m`
/// bytes each; the inverse of [`append_planes`] with every plane), in a loop compiled
/// for the CPU's vectors.
pub(crate) fn planes_to_stream(p: [&[u8]; 8], stream: &mut [u8]) {
    crate::isa::vectorised(
        #[inline(always)]
        || planes_to_stream_with(p, stream),
    );
}

/// [`planes_to_stream`] as plain Rust.
#[inline(always)]
fn planes_to_stream_with(p: [&[u8]; 8], stream: &mut [u8]) {
    let m = stream.len() / 8;
    let [p0, p1, p2, p3, p4, p5, p6, p7] = p.map(|plane| &plane[..m]);
    for (g, group) in stream.chunks_exact_mut(8).enumerate() {
        let x = u64::from_le_bytes([p0[g], p1[g], p2[g], p3[g], p4[g], p5[g], p6[g], p7[g]]);
        group.copy_from_slice(&transpose8(x).to_le_bytes());
    }
}

/// Inverse of [`present_planes`] into `out`, from the planes `present` says are there (`m`
/// bytes each, in order, in `planes`; the others zero); an error when a padding value
/// has a bit set. A block of values at a time: the block of each byte stream with a plane
/// present is rebuilt, and the block's values made from the streams while they are in
/// the first-level cache (the streams without a plane are zeros).
fn unshuffle<T: Word>(planes: &[u8], present: u64, out: &mut [T]) -> Result<(), StreamError> {
    let n = out.len();
    let m = groups(n);
    let mut stored = planes.chunks_exact(m.max(1));
    let zero = [0u8; PLANE_BLOCK_GROUPS];
    // Each byte stream with a plane present, and its eight planes (empty where absent).
    let streams: Vec<(usize, [&[u8]; 8])> = (0..T::BYTES)
        .filter(|b| present >> (8 * b) & 0xff != 0)
        .map(|b| {
            let mask = present >> (8 * b);
            let p = std::array::from_fn(|k| match mask >> k & 1 {
                1 => stored.next().expect("a stored plane per mask bit"),
                _ => &[][..],
            });
            (b, p)
        })
        .collect();
    let stride = 8 * PLANE_BLOCK_GROUPS;
    let mut block_streams = vec![0u8; T::BYTES * stride];
    for first in (0..m).step_by(PLANE_BLOCK_GROUPS) {
        let groups = first..(first + PLANE_BLOCK_GROUPS).min(m);
        let values = &mut out[8 * groups.start..n.min(8 * groups.end)];
        for (b, p) in &streams {
            let block = p.map(|plane| match plane.is_empty() {
                true => &zero[..groups.len()],
                false => &plane[groups.clone()],
            });
            let bytes = &mut block_streams[b * stride..][..8 * groups.len()];
            planes_to_stream(block, bytes);
            if bytes[values.len()..].iter().any(|&byte| byte != 0) {
                return Err(StreamError::Invalid(
                    "bit-shuffled padding values are not zero",
                ));
            }
        }
        from_byte_streams(&block_streams, stride, values);
    }
    Ok(())
}

/// The planes of `values` that are not all zero, in order, and the mask of which they
/// are (bit `j` for plane `j`). A plane holds a set bit exactly when one of the values
/// has that bit set, so the mask is the OR of the values, and only the byte streams
/// with a plane present are made and transposed, only the planes present kept.
fn present_planes<T: Word>(values: &[T]) -> (Vec<u8>, u64) {
    let present = crate::isa::vectorised(
        #[inline(always)]
        || values.iter().fold(0, |any, v| any | v.to_u64()),
    );
    let m = groups(values.len());
    let mut planes = buffers::take(present.count_ones() as usize * m);
    let mut stream = buffers::take(8 * m);
    for b in 0..T::BYTES {
        let mask = (present >> (8 * b)) as u8;
        if mask != 0 {
            stream.clear();
            byte_stream_into(values, b, 8 * m, &mut stream);
            append_planes(&stream, mask, &mut planes);
        }
    }
    buffers::give(stream);
    (planes, present)
}

/// Appends the coding of `values` to `out`: the mask of the planes present (`T::BYTES`
/// bytes, little-endian), then, when any is, one LZ4 block (coder 12) or Zstandard frame
/// (coder 13) of them.
pub fn encode<T: Word>(values: &[T], backend: Backend, out: &mut Vec<u8>) {
    let (planes, present) = present_planes(values);
    plane_mask::write::<T>(present, out);
    if present != 0 {
        compress_bytes_into(&planes, backend, ZSTD_LEVEL, out);
    }
    buffers::give(planes);
}

/// Decodes exactly `out.len()` values from `input`, which must be exactly their coding.
pub fn decode<T: Word>(input: &[u8], backend: Backend, out: &mut [T]) -> Result<(), StreamError> {
    let (present, block) = plane_mask::read::<T>(input).ok_or(StreamError::Truncated(
        "bit-shuffled coding shorter than its plane mask",
    ))?;
    if present == 0 {
        if !block.is_empty() {
            return Err(StreamError::Invalid(
                "bit-shuffled coding of no plane has bytes after its mask",
            ));
        }
        out.fill(T::from_u64(0));
        return Ok(());
    }
    // Every byte is written by the decompression (or it fails).
    let mut planes = buffers::take_filled(present.count_ones() as usize * groups(out.len()));
    let decoded = decompress_bytes(block, backend, &mut planes)
        .and_then(|()| unshuffle(&planes, present, out));
    buffers::give(planes);
    decoded
}

/// The coded size of `values` in bits (exact for LZ4; for Zstandard, at a fast level).
pub fn encoded_bits<T: Word>(values: &[T], backend: Backend) -> u64 {
    let (planes, present) = present_planes(values);
    let block = if present == 0 {
        0
    } else {
        compressed_len(&planes, backend, ESTIMATE_LEVEL)
    };
    buffers::give(planes);
    8 * (T::BYTES + block) as u64
}

/// Fewest bytes a coding of `bytes`-byte words takes: the plane mask (LZ4 has no
/// per-value floor worth stating, so the bound on a hostile chunk's decoded size is per
/// tile).
pub fn min_encoded_len(bytes: usize) -> usize {
    bytes
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn transposing_twice_is_the_identity_and_moves_bits_across() {
        for x in [
            0u64,
            1,
            0x8000_0000_0000_0000,
            0x0123_4567_89AB_CDEF,
            u64::MAX,
        ] {
            assert_eq!(transpose8(transpose8(x)), x);
        }
        // Bit 1 of row 0 (value 0) becomes bit 0 of row 1 (plane 1).
        assert_eq!(transpose8(0b10), 1 << 8);
    }

    /// Every bit plane of `values` as the module documentation defines them, eight
    /// values at a time through [`transpose8`]: the reference for the encoder's planes.
    fn all_planes<T: Word>(values: &[T]) -> Vec<u8> {
        let m = groups(values.len());
        let streams = super::super::shuffled::byte_streams(values, 8 * m);
        let mut planes = vec![0u8; streams.len()];
        for (b, stream) in streams.chunks_exact(8 * m.max(1)).enumerate() {
            for (g, group) in stream.chunks_exact(8).enumerate() {
                let t = transpose8(u64::from_le_bytes(group.try_into().unwrap())).to_le_bytes();
                for (k, &byte) in t.iter().enumerate() {
                    planes[(8 * b + k) * m + g] = byte;
                }
            }
        }
        planes
    }

    /// Random 64-bit words from `seed`.
    fn words_from(seed: u64) -> impl FnMut() -> u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        move || rng.gen()
    }

    #[test]
    fn gathered_bits_are_the_transposed_planes() {
        let mut next = words_from(0x9E37_79B9_7F4A_7C15);
        for _ in 0..1000 {
            let x = next();
            let t = transpose8(x).to_le_bytes();
            for k in 0..8 {
                assert_eq!(gather_bit(x, k), t[k as usize], "{x:#x} bit {k}");
            }
        }
    }

    #[test]
    fn present_planes_are_the_planes_with_a_set_bit_in_order() {
        let mut next = words_from(0x2545_F491_4F6C_DD1D);
        fn check<T: Word>(values: &[T]) {
            let m = groups(values.len());
            let all = all_planes(values);
            let mut expected = Vec::new();
            let mut mask = 0u64;
            for (j, plane) in all.chunks_exact(m.max(1)).enumerate() {
                if plane.iter().any(|&byte| byte != 0) {
                    mask |= 1 << j;
                    expected.extend_from_slice(plane);
                }
            }
            let (planes, present) = present_planes(values);
            assert_eq!(present, mask, "{} values", values.len());
            assert!(planes == expected, "{} values: planes differ", values.len());
        }
        // Lengths around a group, a 32-byte piece and a block of the transposition.
        let block = 8 * PLANE_BLOCK_GROUPS;
        for n in [
            0,
            1,
            7,
            8,
            9,
            31,
            32,
            33,
            255,
            257,
            block - 1,
            block + 9,
            2 * block + 40,
        ] {
            // Dense words, words of a few low bits, and rare set bits.
            for sparsity in [0u32, 60, 63] {
                let v64: Vec<u64> = (0..n)
                    .map(|_| next() >> sparsity & next() >> (next() % 64))
                    .collect();
                check(&v64);
                check(&v64.iter().map(|&v| v as u32).collect::<Vec<_>>());
                check(&v64.iter().map(|&v| (v >> 8) as u16).collect::<Vec<_>>());
                check(&v64.iter().map(|&v| v as u8).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn planes_hold_one_bit_of_eight_values_each() {
        // Values 0..10 of one byte: plane 0 holds their low bits.
        let values: Vec<u8> = (0..10).collect();
        let planes = all_planes(&values);
        assert_eq!(planes.len(), 8 * 2);
        // Plane 0: values 1, 3, 5, 7 (group 0), 9 (group 1, value 1).
        assert_eq!(&planes[0..2], &[0b1010_1010, 0b10]);
        // Plane 1: values 2, 3, 6, 7.
        assert_eq!(&planes[2..4], &[0b1100_1100, 0]);
        // Plane 3: values 8 and 9 (group 1, values 0 and 1).
        assert_eq!(&planes[6..8], &[0, 0b11]);
        // Two-byte words: byte 1's planes follow byte 0's.
        let wide: Vec<u16> = vec![0x0100, 0, 0, 0, 0, 0, 0, 0];
        let planes = all_planes(&wide);
        assert_eq!(planes[8], 1, "plane 8 (bit 0 of byte 1), value 0");
        assert_eq!(planes.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    }

    #[test]
    fn round_trips_every_width_and_length_and_refuses_other_sizes() {
        let mut next = words_from(0x9E37_79B9_7F4A_7C15);
        for n in [0usize, 1, 7, 8, 9, 63, 1000] {
            let v64: Vec<u64> = (0..n).map(|_| next() >> (next() % 64)).collect();
            let v32: Vec<u32> = v64.iter().map(|&v| v as u32).collect();
            let v16: Vec<u16> = v64.iter().map(|&v| v as u16).collect();
            let v8: Vec<u8> = v64.iter().map(|&v| v as u8).collect();
            fn check<T: Word>(values: &[T]) {
                let mut out = Vec::new();
                encode(values, Backend::Lz4, &mut out);
                assert_eq!(8 * out.len() as u64, encoded_bits(values, Backend::Lz4));
                let mut back = vec![T::ONES; values.len()];
                decode(&out, Backend::Lz4, &mut back).unwrap();
                assert_eq!(back, values);
                if !values.is_empty() {
                    let mut more = vec![T::ONES; values.len() + 8];
                    assert!(decode(&out, Backend::Lz4, &mut more).is_err());
                }
            }
            check(&v64);
            check(&v32);
            check(&v16);
            check(&v8);
        }
    }

    #[test]
    fn set_padding_bits_are_refused() {
        // Nine one-byte values of 1: the second group pads with seven values.
        let mut planes = all_planes(&[1u8; 9]);
        planes.truncate(2); // plane 0 only
        planes[1] = 0b11; // group 1: value 8 and a padding value.
        let mut input = vec![1u8];
        input.extend_from_slice(&lz4_flex::block::compress(&planes));
        let mut out = [0u8; 9];
        assert_eq!(
            decode(&input, Backend::Lz4, &mut out),
            Err(StreamError::Invalid(
                "bit-shuffled padding values are not zero"
            ))
        );
        planes[1] = 0b1;
        let mut input = vec![1u8];
        input.extend_from_slice(&lz4_flex::block::compress(&planes));
        decode(&input, Backend::Lz4, &mut out).unwrap();
        assert_eq!(out, [1u8; 9]);
    }

    #[test]
    fn only_planes_with_a_set_bit_are_stored() {
        // Bits 0 and 9 of two-byte words: planes 0 and 9.
        let values: Vec<u16> = (0..64)
            .map(|i| if i % 3 == 0 { 0x0201 } else { 0 })
            .collect();
        let mut out = Vec::new();
        encode(&values, Backend::Lz4, &mut out);
        assert_eq!(&out[..2], &[0b1, 0b10]);
        let (planes, present) = present_planes(&values);
        assert_eq!((planes.len(), present), (2 * 8, 0x0201));
        // No plane: the mask alone, and decoders refuse anything after it.
        let mut zeros = Vec::new();
        encode(&[0u32; 100], Backend::Lz4, &mut zeros);
        assert_eq!(zeros, vec![0; 4]);
        let mut back = [7u32; 100];
        decode(&zeros, Backend::Lz4, &mut back).unwrap();
        assert_eq!(back, [0; 100]);
        zeros.push(0);
        assert_eq!(
            decode(&zeros, Backend::Lz4, &mut back),
            Err(StreamError::Invalid(
                "bit-shuffled coding of no plane has bytes after its mask"
            ))
        );
        assert_eq!(
            decode(&[0u8; 3], Backend::Lz4, &mut back),
            Err(StreamError::Truncated(
                "bit-shuffled coding shorter than its plane mask"
            ))
        );
    }

    #[test]
    fn sparse_flags_code_far_below_their_bytes() {
        // About one flag in 64, at random places.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let flags: Vec<u8> = (0..1 << 16)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                u8::from(state.is_multiple_of(64))
            })
            .collect();
        let mut out = Vec::new();
        encode(&flags, Backend::Lz4, &mut out);
        let mut bytes = Vec::new();
        super::super::shuffled::encode(&flags, super::super::shuffled::Backend::Lz4, &mut bytes);
        assert!(
            out.len() * 8 < bytes.len() * 5,
            "bit-shuffled {} bytes, byte-shuffled {}",
            out.len(),
            bytes.len()
        );
    }
}
