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
    byte_streams, compress_bytes_into, compressed_len, decompress_bytes, from_byte_streams,
    Backend, ESTIMATE_LEVEL, ZSTD_LEVEL,
};
use crate::bits::plane_mask;
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

/// The eight bit planes of `stream` (`8 m` bytes) into `planes` (`8 m` bytes: plane `k`
/// at `k m`).
fn stream_to_planes(stream: &[u8], planes: &mut [u8]) {
    let m = stream.len() / 8;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline, so every x86_64 CPU has it.
    let done = unsafe { sixteen_at_a_time(stream, split8(planes, m)) };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    let [p0, p1, p2, p3, p4, p5, p6, p7] = split8(planes, m);
    for (g, group) in stream.chunks_exact(8).enumerate().skip(done) {
        let t = transpose8(u64::from_le_bytes(group.try_into().expect("8 bytes")));
        let bytes = t.to_le_bytes();
        p0[g] = bytes[0];
        p1[g] = bytes[1];
        p2[g] = bytes[2];
        p3[g] = bytes[3];
        p4[g] = bytes[4];
        p5[g] = bytes[5];
        p6[g] = bytes[6];
        p7[g] = bytes[7];
    }
}

/// [`stream_to_planes`] for the groups of whole 16-byte pieces of `stream`, with SSE2
/// (the x86_64 baseline): bit `k` of 16 bytes is one byte mask after a shift by `7 - k`.
/// Returns the groups done.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn sixteen_at_a_time(stream: &[u8], planes: [&mut [u8]; 8]) -> usize {
    use std::arch::x86_64::{_mm_movemask_epi8, _mm_set_epi64x, _mm_slli_epi16};
    let [p0, p1, p2, p3, p4, p5, p6, p7] = planes;
    let pieces = stream.len() / 16;
    for (i, piece) in stream.chunks_exact(16).enumerate() {
        let lo = u64::from_le_bytes(piece[..8].try_into().expect("8 bytes"));
        let hi = u64::from_le_bytes(piece[8..].try_into().expect("8 bytes"));
        let x = _mm_set_epi64x(hi as i64, lo as i64);
        let at = 2 * i..2 * i + 2;
        // Shifting 16-bit lanes left by `7 - k` moves bit `k` of each byte to its bit 7.
        p0[at.clone()]
            .copy_from_slice(&(_mm_movemask_epi8(_mm_slli_epi16::<7>(x)) as u16).to_le_bytes());
        p1[at.clone()]
            .copy_from_slice(&(_mm_movemask_epi8(_mm_slli_epi16::<6>(x)) as u16).to_le_bytes());
        p2[at.clone()]
            .copy_from_slice(&(_mm_movemask_epi8(_mm_slli_epi16::<5>(x)) as u16).to_le_bytes());
        p3[at.clone()]
            .copy_from_slice(&(_mm_movemask_epi8(_mm_slli_epi16::<4>(x)) as u16).to_le_bytes());
        p4[at.clone()]
            .copy_from_slice(&(_mm_movemask_epi8(_mm_slli_epi16::<3>(x)) as u16).to_le_bytes());
        p5[at.clone()]
            .copy_from_slice(&(_mm_movemask_epi8(_mm_slli_epi16::<2>(x)) as u16).to_le_bytes());
        p6[at.clone()]
            .copy_from_slice(&(_mm_movemask_epi8(_mm_slli_epi16::<1>(x)) as u16).to_le_bytes());
        p7[at].copy_from_slice(&(_mm_movemask_epi8(x) as u16).to_le_bytes());
    }
    2 * pieces
}

/// Inverse of [`stream_to_planes`], from the eight planes `p` (`m` bytes each), in a
/// loop compiled for the CPU's vectors.
fn planes_to_stream(p: [&[u8]; 8], stream: &mut [u8]) {
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

/// `planes` (at least `8 m` bytes) as eight slices of `m` bytes.
fn split8(planes: &mut [u8], m: usize) -> [&mut [u8]; 8] {
    let (p0, rest) = planes.split_at_mut(m);
    let (p1, rest) = rest.split_at_mut(m);
    let (p2, rest) = rest.split_at_mut(m);
    let (p3, rest) = rest.split_at_mut(m);
    let (p4, rest) = rest.split_at_mut(m);
    let (p5, rest) = rest.split_at_mut(m);
    let (p6, rest) = rest.split_at_mut(m);
    let (p7, _) = rest.split_at_mut(m);
    [p0, p1, p2, p3, p4, p5, p6, p7]
}

/// The bit planes of `values` (see the module documentation).
fn shuffle<T: Word>(values: &[T]) -> Vec<u8> {
    let m = groups(values.len());
    let streams = byte_streams(values, 8 * m);
    let mut planes = vec![0u8; streams.len()];
    if m > 0 {
        for (stream, out) in streams
            .chunks_exact(8 * m)
            .zip(planes.chunks_exact_mut(8 * m))
        {
            stream_to_planes(stream, out);
        }
    }
    planes
}

/// Inverse of [`shuffle`] into `out`, from the planes `present` says are there (`m`
/// bytes each, in order, in `planes`; the others zero); an error when a padding value
/// has a bit set.
fn unshuffle<T: Word>(planes: &[u8], present: u64, out: &mut [T]) -> Result<(), StreamError> {
    let n = out.len();
    let m = groups(n);
    if m == 0 {
        return Ok(());
    }
    let len = 8 * m;
    let zero = vec![0u8; m];
    let mut stored = planes.chunks_exact(m);
    let mut streams = vec![0u8; T::BYTES * len];
    for (b, stream) in streams.chunks_exact_mut(len).enumerate() {
        let mask = present >> (8 * b) & 0xff;
        if mask == 0 {
            continue;
        }
        let p: [&[u8]; 8] = std::array::from_fn(|k| match mask >> k & 1 {
            1 => stored.next().expect("a stored plane per mask bit"),
            _ => &zero[..],
        });
        planes_to_stream(p, stream);
        if stream[n..].iter().any(|&byte| byte != 0) {
            return Err(StreamError::Invalid(
                "bit-shuffled padding values are not zero",
            ));
        }
    }
    from_byte_streams(&streams, len, out);
    Ok(())
}

/// The planes of `values` that are not all zero, in order, and the mask of which they
/// are (bit `j` for plane `j`).
fn present_planes<T: Word>(values: &[T]) -> (Vec<u8>, u64) {
    let mut planes = shuffle(values);
    let m = groups(values.len());
    if m == 0 {
        return (planes, 0);
    }
    let mut present = 0u64;
    let mut kept = 0;
    for j in 0..8 * T::BYTES {
        let plane = j * m..(j + 1) * m;
        if planes[plane.clone()]
            .iter()
            .fold(0, |any, &byte| any | byte)
            != 0
        {
            present |= 1 << j;
            if kept != j {
                planes.copy_within(plane, kept * m);
            }
            kept += 1;
        }
    }
    planes.truncate(kept * m);
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
    let mut planes = vec![0u8; present.count_ones() as usize * groups(out.len())];
    decompress_bytes(block, backend, &mut planes)?;
    unshuffle(&planes, present, out)
}

/// The coded size of `values` in bits (exact for LZ4; for Zstandard, at a fast level).
pub fn encoded_bits<T: Word>(values: &[T], backend: Backend) -> u64 {
    let (planes, present) = present_planes(values);
    let block = if present == 0 {
        0
    } else {
        compressed_len(&planes, backend, ESTIMATE_LEVEL)
    };
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

    #[test]
    fn planes_hold_one_bit_of_eight_values_each() {
        // Values 0..10 of one byte: plane 0 holds their low bits.
        let values: Vec<u8> = (0..10).collect();
        let planes = shuffle(&values);
        assert_eq!(planes.len(), 8 * 2);
        // Plane 0: values 1, 3, 5, 7 (group 0), 9 (group 1, value 1).
        assert_eq!(&planes[0..2], &[0b1010_1010, 0b10]);
        // Plane 1: values 2, 3, 6, 7.
        assert_eq!(&planes[2..4], &[0b1100_1100, 0]);
        // Plane 3: values 8 and 9 (group 1, values 0 and 1).
        assert_eq!(&planes[6..8], &[0, 0b11]);
        // Two-byte words: byte 1's planes follow byte 0's.
        let wide: Vec<u16> = vec![0x0100, 0, 0, 0, 0, 0, 0, 0];
        let planes = shuffle(&wide);
        assert_eq!(planes[8], 1, "plane 8 (bit 0 of byte 1), value 0");
        assert_eq!(planes.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    }

    #[test]
    fn round_trips_every_width_and_length_and_refuses_other_sizes() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
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
        let mut planes = shuffle(&[1u8; 9]);
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
