//! General-purpose compression of byte-shuffled values: the path that bounds karoo's
//! worst case on data prediction does not help (long runs of one value, repeated
//! patterns, quantised values with few distinct bytes).
//!
//! The values (words of `w` bytes, already mapped residuals) are byte-shuffled, all
//! first bytes, then all second bytes and so on, as HDF5's shuffle filter and Blosc do,
//! then compressed as one block:
//! - [`Backend::Lz4`]: an LZ4 block (the LZ4 block format, no frame, no checksum), for
//!   fast mode;
//! - [`Backend::Zstd`]: a Zstandard frame (RFC 8878) with its content size, for archive
//!   mode.
//!
//! The decoded size is not stored: it is the tile's word count times `w`, which the
//! decoder knows, and a block that decodes to any other size is corrupt.

use std::borrow::Cow;

use super::zstd_decompression;
use crate::stream_error::StreamError;
use crate::word::Word;

/// The general-purpose compressor behind a shuffled coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// LZ4 block format (lz4_flex).
    Lz4,
    /// Zstandard at [`ZSTD_LEVEL`] (the reference library).
    Zstd,
}

/// Zstandard level of archive mode's shuffled coding: most of level 19's ratio on
/// shuffled visibilities at several times its speed.
pub const ZSTD_LEVEL: i32 = 12;

/// The bytes of `values` shuffled: byte `b` of value `i` at `b * n + i`.
fn shuffle<T: Word>(values: &[T]) -> Vec<u8> {
    byte_streams(values, values.len())
}

/// The bytes of `values` as `T::BYTES` streams of `stride` bytes (at least
/// `values.len()`): byte `b` of value `i` at `b * stride + i`, the rest zero.
pub(super) fn byte_streams<T: Word>(values: &[T], stride: usize) -> Vec<u8> {
    debug_assert!(stride >= values.len());
    let mut out = Vec::with_capacity(stride * T::BYTES);
    // Stream by stream inside one call compiled for the CPU's vectors: the loop over the
    // `T::BYTES` streams unrolls, so each stream's shift is a constant and the pass
    // vectorises in lanes of `T`'s width ([`byte_stream_into`]'s shift is not known
    // when it is compiled).
    crate::isa::vectorised(
        #[inline(always)]
        || {
            for b in 0..T::BYTES {
                let shift = 8 * b as u32;
                out.extend(values.iter().map(|v| (v.to_u64() >> shift) as u8));
                out.resize((b + 1) * stride, 0);
            }
        },
    );
    out
}

/// Appends byte `b` of each of `values` to `out`, then zeros up to `stride` bytes: a pass
/// over the values that shifts out the byte, with no scattered stores, so it vectorises;
/// appended, so no byte is zeroed first.
pub(super) fn byte_stream_into<T: Word>(values: &[T], b: usize, stride: usize, out: &mut Vec<u8>) {
    debug_assert!(stride >= values.len());
    let end = out.len() + stride;
    let shift = 8 * b as u32;
    crate::isa::vectorised(
        #[inline(always)]
        || out.extend(values.iter().map(|v| (v.to_u64() >> shift) as u8)),
    );
    out.resize(end, 0);
}

/// Inverse of [`shuffle`] into `out` (`bytes.len() == out.len() * T::BYTES`).
fn unshuffle<T: Word>(bytes: &[u8], out: &mut [T]) {
    from_byte_streams(bytes, out.len(), out);
}

/// Inverse of [`byte_streams`] into `out`: the values of streams of `stride` bytes.
///
/// # Panics
///
/// If `bytes` holds fewer than `T::BYTES` streams.
pub(super) fn from_byte_streams<T: Word>(bytes: &[u8], stride: usize, out: &mut [T]) {
    let n = out.len();
    // Stream by stream, each byte shifted into place (the first stream's set, the
    // others' added): no gathered loads, so it vectorises.
    crate::isa::vectorised(
        #[inline(always)]
        || {
            for b in 0..T::BYTES {
                let shift = 8 * b as u32;
                // The bytes already in place: none before the first stream's.
                let earlier = if b == 0 { 0 } else { u64::MAX };
                let stream = &bytes[b * stride..b * stride + n];
                for (v, &byte) in out.iter_mut().zip(stream) {
                    *v = T::from_u64(v.to_u64() & earlier | u64::from(byte) << shift);
                }
            }
        },
    );
}

/// Zstandard level of the estimates that decide whether to try the coding in full.
pub(super) const ESTIMATE_LEVEL: i32 = 3;

/// Appends the shuffled coding of `values` to `out`.
pub fn encode<T: Word>(values: &[T], backend: Backend, out: &mut Vec<u8>) {
    encode_at(values, backend, ZSTD_LEVEL, out);
}

fn encode_at<T: Word>(values: &[T], backend: Backend, level: i32, out: &mut Vec<u8>) {
    compress_bytes_into(&shuffle(values), backend, level, out);
}

/// Appends `bytes` as one LZ4 block or one Zstandard frame (at `level`) with its content
/// size to `out`: an LZ4 block straight into it.
pub(crate) fn compress_bytes_into(bytes: &[u8], backend: Backend, level: i32, out: &mut Vec<u8>) {
    match backend {
        Backend::Lz4 => {
            let start = out.len();
            out.resize(
                start + lz4_flex::block::get_maximum_output_size(bytes.len()),
                0,
            );
            let len = lz4_in_room(bytes, &mut out[start..]);
            out.truncate(start + len);
        }
        Backend::Zstd => out.extend_from_slice(&super::zstd_compression::compress(bytes, level)),
    }
}

/// Bytes of the coding [`compress_bytes_into`] appends for `bytes`; an LZ4 block is
/// coded into this thread's reused buffer (neither allocated nor zeroed afresh).
pub(super) fn compressed_len(bytes: &[u8], backend: Backend, level: i32) -> usize {
    match backend {
        Backend::Lz4 => u8::with_scratch(|scratch| {
            let room = lz4_flex::block::get_maximum_output_size(bytes.len());
            if scratch.len() < room {
                scratch.resize(room, 0);
            }
            lz4_in_room(bytes, &mut scratch[..room])
        }),
        Backend::Zstd => {
            let mut out = Vec::new();
            compress_bytes_into(bytes, backend, level, &mut out);
            out.len()
        }
    }
}

/// `bytes` as one LZ4 block at the start of `room`, which holds the longest one; its
/// length. The reference LZ4's default compression (as the Bitshuffle filter's), or
/// lz4_flex's for inputs beyond the reference's 2 GiB.
fn lz4_in_room(bytes: &[u8], room: &mut [u8]) -> usize {
    if bytes.len() <= i32::MAX as usize {
        if let Ok(len) = lz4::block::compress_to_buffer(bytes, None, false, room) {
            return len;
        }
    }
    lz4_flex::block::compress_into(bytes, room).expect("room for the longest LZ4 block")
}

/// Decompresses `input`, which must be exactly one LZ4 block or Zstandard frame of
/// exactly `out.len()` bytes, into `out`.
pub(crate) fn decompress_bytes(
    input: &[u8],
    backend: Backend,
    out: &mut [u8],
) -> Result<(), StreamError> {
    let refused = |what, e: &dyn std::fmt::Display| StreamError::Backend {
        what,
        message: Cow::Owned(e.to_string()),
    };
    let got = match backend {
        Backend::Lz4 => {
            lz4_flex::block::decompress_into(input, out).map_err(|e| refused("LZ4 block", &e))?
        }
        Backend::Zstd => {
            check_single_zstd_frame(input)?;
            zstd_decompression::decompress_to(input, out).map_err(|e| refused("zstd frame", &e))?
        }
    };
    if got != out.len() {
        return Err(StreamError::DecodedLength {
            got,
            expected: out.len(),
        });
    }
    Ok(())
}

/// Decodes exactly `out.len()` values from `input`, which must be exactly their coding.
pub fn decode<T: Word>(input: &[u8], backend: Backend, out: &mut [T]) -> Result<(), StreamError> {
    // Every byte is written by a decompression that succeeds.
    let mut bytes = crate::buffers::take_filled(out.len() * T::BYTES);
    let decoded = decompress_bytes(input, backend, &mut bytes);
    if decoded.is_ok() {
        unshuffle(&bytes, out);
    }
    crate::buffers::give(bytes);
    decoded
}

/// Refuses input with bytes after its zstd frame: a coding is exactly one frame.
fn check_single_zstd_frame(input: &[u8]) -> Result<(), StreamError> {
    match zstd::zstd_safe::find_frame_compressed_size(input) {
        Ok(size) if size == input.len() => Ok(()),
        Ok(size) => Err(StreamError::TrailingFrameBytes {
            size,
            extra: input.len() - size,
        }),
        Err(_) => Err(StreamError::Backend {
            what: "zstd frame",
            message: Cow::Borrowed("truncated or invalid"),
        }),
    }
}

/// The coded size of `values` in bits, measured on a coding made at a fast level (for
/// Zstandard; exact for LZ4).
pub fn encoded_bits<T: Word>(values: &[T], backend: Backend) -> u64 {
    8 * compressed_len(&shuffle(values), backend, ESTIMATE_LEVEL) as u64
}

/// Fewest bytes a coding takes: general-purpose compressors have no per-value floor
/// worth stating, so the bound on a hostile chunk's decoded size is per tile.
pub fn min_encoded_len() -> usize {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_streams_are_the_values_bytes_in_planes_padded_with_zeros() {
        fn check<T: Word>(values: &[T], stride: usize) {
            let streams = byte_streams(values, stride);
            assert_eq!(streams.len(), stride * T::BYTES);
            let mut word = [0u8; 8];
            for (i, v) in values.iter().enumerate() {
                v.store(&mut word);
                for (b, &byte) in word[..T::BYTES].iter().enumerate() {
                    assert_eq!(streams[b * stride + i], byte, "value {i} byte {b}");
                }
            }
            for b in 0..T::BYTES {
                let padding = &streams[b * stride + values.len()..(b + 1) * stride];
                assert!(padding.iter().all(|&x| x == 0), "stream {b}");
            }
            let mut back = vec![T::default(); values.len()];
            from_byte_streams(&streams, stride, &mut back);
            assert_eq!(back, values);
        }
        let mixed = |i: u64| {
            i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(i as u32 % 64)
        };
        for n in [0usize, 1, 7, 33, 1000] {
            let wide: Vec<u64> = (0..n as u64).map(mixed).collect();
            let narrow: Vec<u32> = wide.iter().map(|&v| (v >> 17) as u32).collect();
            let short: Vec<u16> = wide.iter().map(|&v| (v >> 40) as u16).collect();
            for stride in [n, n + 5, 8 * n.div_ceil(8) + 8] {
                check(&wide, stride);
                check(&narrow, stride);
                check(&short, stride);
            }
        }
    }

    #[test]
    fn shuffle_puts_each_byte_plane_together() {
        let values: Vec<u32> = vec![0x0403_0201, 0x0807_0605];
        assert_eq!(shuffle(&values), vec![1, 5, 2, 6, 3, 7, 4, 8]);
        let mut back = vec![0u32; 2];
        unshuffle(&shuffle(&values), &mut back);
        assert_eq!(back, values);
    }

    #[test]
    fn both_backends_round_trip_and_refuse_other_sizes() {
        let values: Vec<u16> = (0..5000u32).map(|i| (i % 7 * 300) as u16).collect();
        for backend in [Backend::Lz4, Backend::Zstd] {
            let mut out = Vec::new();
            encode(&values, backend, &mut out);
            assert!(out.len() < 200, "{backend:?}: {} bytes", out.len());
            let mut back = vec![0u16; values.len()];
            decode(&out, backend, &mut back).unwrap();
            assert_eq!(back, values);
            let mut short = vec![0u16; values.len() - 1];
            assert!(decode(&out, backend, &mut short).is_err(), "{backend:?}");
        }
    }

    #[test]
    fn trailing_bytes_after_a_zstd_frame_are_refused() {
        let values = vec![7u32; 100];
        let mut out = Vec::new();
        encode(&values, Backend::Zstd, &mut out);
        out.push(0);
        let mut back = vec![0u32; 100];
        let err = decode(&out, Backend::Zstd, &mut back).unwrap_err();
        assert_eq!(
            err,
            StreamError::TrailingFrameBytes {
                size: out.len() - 1,
                extra: 1
            }
        );
        assert!(err.to_string().starts_with("zstd frame of"), "{err}");
    }
}
