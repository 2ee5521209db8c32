//! The general-purpose pipelines of brief chunks (format version 4): a transform of the
//! decoded bytes (none, a byte shuffle of words or of elements, a bit shuffle of words),
//! then a general-purpose compressor (LZ4, Zstandard, LZMA as an .xz stream, bzip2, or
//! Zstandard after a byte delta of each shuffled stream).
//! docs/format.md, "Brief chunks", defines the bytes.

use std::borrow::Cow;

use super::bitshuffle;
use crate::buffers;
use crate::coder::bitshuffled;
use crate::coder::shuffled::{self, Backend};
use crate::stream_error::StreamError;
use crate::word::Word;

/// How the decoded bytes are rearranged before they are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    /// The bytes as they are.
    None,
    /// Byte shuffle of words: byte `b` of word `i` at `b * n + i`.
    Words,
    /// Byte shuffle of elements of two words (complex numbers).
    Elements,
    /// Bit shuffle of words, as coders 12 and 13 lay out their planes.
    Bits,
}

/// The general-purpose compressor of a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compressor {
    /// The bytes verbatim (a stored chunk).
    None,
    /// One LZ4 block.
    Lz4,
    /// One Zstandard frame.
    Zstd,
    /// One .xz stream (LZMA2).
    Lzma,
    /// One bzip2 stream (the Burrows-Wheeler transform, move-to-front, Huffman coding).
    Bzip2,
    /// The Bitshuffle filter's LZ4 coding: blocks of 8 KiB, each bit-transposed and coded
    /// as one LZ4 block, of words ([`Transform::Words`]) or elements
    /// ([`Transform::Elements`]).
    Bitshuffle,
    /// One Zstandard frame of the transformed bytes' byte deltas: each stream (the whole
    /// bytes, or a byte shuffle's rows) as its first byte and each later byte minus the
    /// one before it, as Blosc2's bytedelta filter codes a shuffle's streams (format
    /// version 4.2).
    ByteDeltaZstd,
}

/// A transform and a compressor: what a brief chunk's pipeline byte names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pipeline {
    /// The rearrangement of the decoded bytes.
    pub transform: Transform,
    /// The compressor of the rearranged bytes.
    pub compressor: Compressor,
}

/// The pipeline of a stored chunk.
pub const STORED: Pipeline = Pipeline {
    transform: Transform::None,
    compressor: Compressor::None,
};

impl Transform {
    /// Every transform, in id order.
    pub const ALL: [Transform; 4] = [
        Transform::None,
        Transform::Words,
        Transform::Elements,
        Transform::Bits,
    ];
}

impl Compressor {
    /// Every compressor, in id order.
    pub const ALL: [Compressor; 7] = [
        Compressor::None,
        Compressor::Lz4,
        Compressor::Zstd,
        Compressor::Lzma,
        Compressor::Bzip2,
        Compressor::Bitshuffle,
        Compressor::ByteDeltaZstd,
    ];
}

impl Pipeline {
    /// The pipeline byte (bits 0-3 compressor, 4-5 transform, 6-7 log2 of the word size).
    pub fn to_byte(self, word_size: usize) -> u8 {
        let compressor = Compressor::ALL.iter().position(|&c| c == self.compressor);
        let transform = Transform::ALL.iter().position(|&t| t == self.transform);
        compressor.unwrap_or(0) as u8
            | (transform.unwrap_or(0) as u8) << 4
            | (word_size.trailing_zeros() as u8) << 6
    }

    /// The pipeline and word size a pipeline byte names, or why it names none.
    pub fn from_byte(byte: u8) -> Result<(Pipeline, usize), String> {
        let word_size = 1usize << (byte >> 6);
        let transform = Transform::ALL[usize::from(byte >> 4 & 3)];
        let Some(&compressor) = Compressor::ALL.get(usize::from(byte & 0x0f)) else {
            return Err(format!("unknown whole-chunk compressor {}", byte & 0x0f));
        };
        let pipeline = Pipeline {
            transform,
            compressor,
        };
        let takes = match compressor {
            Compressor::None => transform == Transform::None,
            Compressor::Lz4 | Compressor::Zstd => true,
            Compressor::Lzma | Compressor::Bzip2 | Compressor::ByteDeltaZstd => {
                transform != Transform::Bits
            }
            Compressor::Bitshuffle => matches!(transform, Transform::Words | Transform::Elements),
        };
        if !takes {
            return Err(format!("{pipeline:?} is not a whole-chunk pipeline"));
        }
        Ok((pipeline, word_size))
    }

    /// The pipeline's name, as `karoo_describe` reports it: `stored`, or the transform
    /// and the compressor (`shuffled-words/zstd`, `bit-shuffled-words/lz4`,
    /// `bitshuffle-elements/lz4`, ...).
    pub fn name(self) -> String {
        if self.compressor == Compressor::Bitshuffle {
            let unit = match self.transform {
                Transform::Elements => "elements",
                _ => "words",
            };
            return format!("bitshuffle-{unit}/lz4");
        }
        let transform = match self.transform {
            Transform::None => "bytes",
            Transform::Words => "shuffled-words",
            Transform::Elements => "shuffled-elements",
            Transform::Bits => "bit-shuffled-words",
        };
        let compressor = match self.compressor {
            Compressor::None => return "stored".into(),
            Compressor::Lz4 => "lz4",
            Compressor::Zstd => "zstd",
            Compressor::Lzma => "lzma",
            Compressor::Bzip2 => "bzip2",
            Compressor::ByteDeltaZstd => "bytedelta-zstd",
            Compressor::Bitshuffle => unreachable!("named above"),
        };
        format!("{transform}/{compressor}")
    }

    /// The minor version of format version 4 that the pipeline needs: 2 for
    /// [`Compressor::ByteDeltaZstd`], else 0.
    pub fn minor_version(self) -> u8 {
        match self.compressor {
            Compressor::ByteDeltaZstd => crate::format::MINOR_BYTE_DELTA,
            _ => 0,
        }
    }

    /// Whether the pipeline applies to `len` bytes of `word_size`-byte words.
    pub fn fits(self, len: usize, word_size: usize) -> bool {
        self.fits_size(len as u64, word_size)
    }

    /// [`Self::fits`] for a size as a header records it.
    pub fn fits_size(self, len: u64, word_size: usize) -> bool {
        len.is_multiple_of(self.unit(word_size) as u64)
    }

    /// Bytes of the unit the transform rearranges: two words for
    /// [`Transform::Elements`], else one.
    fn unit(self, word_size: usize) -> usize {
        match self.transform {
            Transform::Elements => 2 * word_size,
            _ => word_size,
        }
    }
}

/// Most decoded bytes a payload of `len` bytes through `compressor` may declare: 256 per
/// byte for LZ4 (a sequence of one token byte codes at most about 255 bytes more),
/// 32768 per byte for the others (a Zstandard block of 4 bytes codes at most 128 KiB);
/// `len` for a stored payload. Checked before anything is allocated, so the decoded size
/// is bounded by a multiple of the chunk's; encoders keep no brief chunk beyond it.
pub fn max_decoded_len(compressor: Compressor, len: usize) -> u64 {
    let len = len as u64;
    match compressor {
        Compressor::None => len,
        Compressor::Lz4 | Compressor::Bitshuffle => len.saturating_mul(256),
        _ => len.saturating_mul(32768),
    }
}

/// How hard the compressors work: the levels a trial on a sample uses, or the full ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// Zstandard at level 3 (a sample's estimate).
    Estimate,
    /// Zstandard at level 19, LZMA at preset 9 extreme, bzip2 at 900 kB blocks.
    Full,
}

/// Zstandard level of [`Effort::Full`].
const ZSTD_FULL_LEVEL: i32 = 19;
/// Zstandard level of [`Effort::Estimate`].
const ZSTD_ESTIMATE_LEVEL: i32 = 3;

/// The payload of `data` (words of `word_size` bytes, `pipeline.fits` them) through
/// `pipeline`.
pub fn encode(data: &[u8], word_size: usize, pipeline: Pipeline, effort: Effort) -> Vec<u8> {
    let zstd_level = match effort {
        Effort::Estimate => ZSTD_ESTIMATE_LEVEL,
        Effort::Full => ZSTD_FULL_LEVEL,
    };
    if pipeline.compressor == Compressor::Bitshuffle {
        return bitshuffle::encode(data, pipeline.unit(word_size));
    }
    let bytes: Cow<[u8]> = match pipeline.transform {
        Transform::None => Cow::Borrowed(data),
        Transform::Words => Cow::Owned(shuffle(data, word_size)),
        Transform::Elements => Cow::Owned(shuffle(data, 2 * word_size)),
        Transform::Bits => {
            let backend = match pipeline.compressor {
                Compressor::Lz4 => Backend::Lz4,
                _ => Backend::Zstd,
            };
            let mut out = Vec::new();
            match word_size {
                1 => bitshuffled::encode(&words::<u8>(data), backend, &mut out),
                2 => bitshuffled::encode(&words::<u16>(data), backend, &mut out),
                4 => bitshuffled::encode(&words::<u32>(data), backend, &mut out),
                _ => bitshuffled::encode(&words::<u64>(data), backend, &mut out),
            }
            return out;
        }
    };
    let mut out = Vec::new();
    let bytes = match pipeline.compressor {
        Compressor::ByteDeltaZstd => {
            let mut deltas = bytes.into_owned();
            to_deltas(&mut deltas, stream_len(data.len(), pipeline, word_size));
            Cow::Owned(deltas)
        }
        _ => bytes,
    };
    match pipeline.compressor {
        Compressor::None => out.extend_from_slice(&bytes),
        Compressor::Lz4 => shuffled::compress_bytes_into(&bytes, Backend::Lz4, 0, &mut out),
        Compressor::Zstd | Compressor::ByteDeltaZstd => {
            shuffled::compress_bytes_into(&bytes, Backend::Zstd, zstd_level, &mut out)
        }
        Compressor::Lzma => out = lzma_compress(&bytes),
        Compressor::Bzip2 => out = bzip2_compress(&bytes),
        Compressor::Bitshuffle => unreachable!("coded by blocks"),
    }
    if let Cow::Owned(rearranged) = bytes {
        buffers::give(rearranged);
    }
    out
}

/// Bytes of each stream a byte delta runs along, of `len` transformed bytes: all of
/// them without a shuffle, else a byte shuffle's row (one per byte of the unit).
fn stream_len(len: usize, pipeline: Pipeline, word_size: usize) -> usize {
    match pipeline.transform {
        Transform::None => len,
        _ => len / pipeline.unit(word_size),
    }
}

/// Replaces each byte of every `stream`-byte stream of `bytes` but the first by its
/// difference from the one before it (modulo 256).
fn to_deltas(bytes: &mut [u8], stream: usize) {
    for run in bytes.chunks_mut(stream.max(1)) {
        let mut previous = 0u8;
        for byte in run {
            let value = *byte;
            *byte = value.wrapping_sub(previous);
            previous = value;
        }
    }
}

/// The inverse of [`to_deltas`]: sums each `stream`-byte stream of `bytes` (modulo 256).
fn from_deltas(bytes: &mut [u8], stream: usize) {
    for run in bytes.chunks_mut(stream.max(1)) {
        let mut sum = 0u8;
        for byte in run {
            sum = sum.wrapping_add(*byte);
            *byte = sum;
        }
    }
}

/// Decodes `payload` through `pipeline` into `out`, which it must fill exactly.
pub fn decode(
    payload: &[u8],
    word_size: usize,
    pipeline: Pipeline,
    out: &mut [u8],
) -> Result<(), StreamError> {
    if pipeline.compressor == Compressor::Bitshuffle {
        return bitshuffle::decode(payload, pipeline.unit(word_size), out);
    }
    let stream = stream_len(out.len(), pipeline, word_size);
    let delta = pipeline.compressor == Compressor::ByteDeltaZstd;
    let unit = match pipeline.transform {
        Transform::None => {
            decompress(payload, pipeline.compressor, out)?;
            if delta {
                from_deltas(out, stream);
            }
            return Ok(());
        }
        Transform::Words => word_size,
        Transform::Elements => 2 * word_size,
        Transform::Bits => {
            let backend = match pipeline.compressor {
                Compressor::Lz4 => Backend::Lz4,
                _ => Backend::Zstd,
            };
            return match word_size {
                1 => decode_bits::<u8>(payload, backend, out),
                2 => decode_bits::<u16>(payload, backend, out),
                4 => decode_bits::<u32>(payload, backend, out),
                _ => decode_bits::<u64>(payload, backend, out),
            };
        }
    };
    // Every byte is written by the decompressor (or the decoding fails).
    let mut shuffled = buffers::take_filled(out.len());
    let decoded = decompress(payload, pipeline.compressor, &mut shuffled);
    if decoded.is_ok() {
        if delta {
            from_deltas(&mut shuffled, stream);
        }
        unshuffle(&shuffled, unit, out);
    }
    buffers::give(shuffled);
    decoded
}

/// Decompresses `payload` with `compressor` into exactly `out` (with
/// [`Compressor::ByteDeltaZstd`], the deltas).
fn decompress(payload: &[u8], compressor: Compressor, out: &mut [u8]) -> Result<(), StreamError> {
    match compressor {
        Compressor::None => {
            out.copy_from_slice(payload);
            Ok(())
        }
        Compressor::Lz4 => shuffled::decompress_bytes(payload, Backend::Lz4, out),
        Compressor::Zstd | Compressor::ByteDeltaZstd => {
            shuffled::decompress_bytes(payload, Backend::Zstd, out)
        }
        Compressor::Lzma => lzma_decompress(payload, out),
        Compressor::Bzip2 => bzip2_decompress(payload, out),
        Compressor::Bitshuffle => unreachable!("decoded by blocks"),
    }
}

/// The words of `data` (little-endian), for the bit shuffle's coder.
fn words<T: Word>(data: &[u8]) -> Vec<T> {
    data.chunks_exact(T::BYTES).map(T::load).collect()
}

/// Decodes coder 12's or 13's coding of `out.len() / T::BYTES` words into `out`.
fn decode_bits<T: Word>(
    payload: &[u8],
    backend: Backend,
    out: &mut [u8],
) -> Result<(), StreamError> {
    let mut values = vec![T::from_u64(0); out.len() / T::BYTES];
    bitshuffled::decode(payload, backend, &mut values)?;
    for (word, bytes) in values.into_iter().zip(out.chunks_exact_mut(T::BYTES)) {
        word.store(bytes);
    }
    Ok(())
}

/// The bytes of `data` shuffled in units of `unit` bytes: byte `b` of unit `i` at
/// `b * n + i`.
fn shuffle(data: &[u8], unit: usize) -> Vec<u8> {
    let n = data.len() / unit;
    let mut out = buffers::take_filled(data.len());
    for (b, stream) in out.chunks_exact_mut(n.max(1)).take(unit).enumerate() {
        for (byte, element) in stream.iter_mut().zip(data.chunks_exact(unit)) {
            *byte = element[b];
        }
    }
    out
}

/// The inverse of [`shuffle`], into `out`.
fn unshuffle(shuffled: &[u8], unit: usize, out: &mut [u8]) {
    let n = out.len() / unit;
    for (b, stream) in shuffled.chunks_exact(n.max(1)).take(unit).enumerate() {
        for (&byte, element) in stream.iter().zip(out.chunks_exact_mut(unit)) {
            element[b] = byte;
        }
    }
}

/// The smallest power of two of at least `len` bytes and 4 KiB, at most 64 MiB: the
/// LZMA dictionary of `len` bytes, and the most a decoder of them allows.
fn lzma_dictionary(len: usize) -> u32 {
    len.clamp(4096, 64 << 20).next_power_of_two() as u32
}

/// `bytes` as one .xz stream (LZMA2 at preset 9 extreme, no integrity check: the chunk
/// has its own), its dictionary no larger than the bytes need.
fn lzma_compress(bytes: &[u8]) -> Vec<u8> {
    use liblzma::stream::{Action, Check, Filters, LzmaOptions, Stream, PRESET_EXTREME};
    let mut options = LzmaOptions::new_preset(9 | PRESET_EXTREME).expect("preset 9 exists");
    options.dict_size(lzma_dictionary(bytes.len()));
    let mut filters = Filters::new();
    filters.lzma2(&options);
    let mut stream =
        Stream::new_stream_encoder(&filters, Check::None).expect("an LZMA2 encoder of a preset");
    let mut out = Vec::with_capacity(bytes.len() / 2 + 1024);
    loop {
        out.reserve(bytes.len() / 4 + 1024);
        let read = stream.total_in() as usize;
        let status = stream
            .process_vec(&bytes[read..], &mut out, Action::Finish)
            .expect("LZMA2 encodes any input");
        if status == liblzma::stream::Status::StreamEnd {
            return out;
        }
    }
}

/// Decodes one .xz stream of exactly `out.len()` bytes, with nothing after it.
fn lzma_decompress(payload: &[u8], out: &mut [u8]) -> Result<(), StreamError> {
    use liblzma::stream::{Action, Status, Stream};
    let refused = |message: String| StreamError::Backend {
        what: "xz stream",
        message: Cow::Owned(message),
    };
    let limit = u64::from(lzma_dictionary(out.len())) + (1 << 20);
    let mut stream = Stream::new_stream_decoder(limit, 0).map_err(|e| refused(e.to_string()))?;
    drain(payload, out, refused, |input, output| {
        let status = stream.process(input, output, Action::Finish);
        let end = status.map_err(|e| e.to_string())? == Status::StreamEnd;
        Ok((end, stream.total_in(), stream.total_out()))
    })
}

/// The bzip2 block size (in 100 kB) that holds `len` bytes in one block as 900 kB
/// blocks would: bzip2's first run-length step may lengthen its input by a quarter, and a
/// block of `100000 k` bytes holds 19 fewer. Larger inputs take 900 kB blocks. The stream
/// is then that of 900 kB blocks but for the block size digit of its header, and the
/// encoder and decoder allocate no more than the bytes need.
fn bzip2_block_size(len: usize) -> u32 {
    let longest = len + len / 4 + 19;
    longest.div_ceil(100_000).clamp(1, 9) as u32
}

/// `bytes` as one bzip2 stream at bzip2's best compression: the stream of 900 kB blocks,
/// with blocks no larger than the bytes need ([`bzip2_block_size`]).
fn bzip2_compress(bytes: &[u8]) -> Vec<u8> {
    use bzip2::{Action, Compress, Compression, Status};
    let level = Compression::new(bzip2_block_size(bytes.len()));
    let mut stream = Compress::new(level, 30);
    let mut out = Vec::with_capacity(bytes.len() / 2 + 1024);
    loop {
        out.reserve(bytes.len() / 4 + 1024);
        let read = stream.total_in() as usize;
        let status = stream
            .compress_vec(&bytes[read..], &mut out, Action::Finish)
            .expect("bzip2 compresses any input");
        if status == Status::StreamEnd {
            return out;
        }
    }
}

/// Decodes one bzip2 stream of exactly `out.len()` bytes, with nothing after it.
fn bzip2_decompress(payload: &[u8], out: &mut [u8]) -> Result<(), StreamError> {
    use bzip2::{Decompress, Status};
    let refused = |message: String| StreamError::Backend {
        what: "bzip2 stream",
        message: Cow::Owned(message),
    };
    let mut stream = Decompress::new(false);
    drain(payload, out, refused, |input, output| {
        let status = stream.decompress(input, output);
        let end = status.map_err(|e| e.to_string())? == Status::StreamEnd;
        Ok((end, stream.total_in(), stream.total_out()))
    })
}

/// Runs a streaming decoder over `payload` into `out` until its stream ends: `step`
/// decodes from the unread input into the unfilled output and returns whether the
/// stream ended and the decoder's input and output totals. A step that makes no
/// progress before the end means the stream is cut short or longer than `out`; the
/// stream must then have read all of `payload` and filled `out` exactly.
fn drain(
    payload: &[u8],
    out: &mut [u8],
    refused: impl Fn(String) -> StreamError,
    mut step: impl FnMut(&[u8], &mut [u8]) -> Result<(bool, u64, u64), String>,
) -> Result<(), StreamError> {
    let (mut read, mut written) = (0u64, 0u64);
    loop {
        let input = &payload[read as usize..];
        let output = &mut out[written as usize..];
        let (end, total_in, total_out) = step(input, output).map_err(&refused)?;
        let progressed = total_in > read || total_out > written;
        (read, written) = (total_in, total_out);
        if end {
            return finished(read, payload.len(), written, out.len());
        }
        if !progressed {
            return Err(refused("cut short, or longer than the chunk".into()));
        }
    }
}

/// Refuses a stream that left input unread or did not fill the output.
fn finished(read: u64, len: usize, written: u64, expected: usize) -> Result<(), StreamError> {
    if written != expected as u64 {
        return Err(StreamError::DecodedLength {
            got: written as usize,
            expected,
        });
    }
    if read != len as u64 {
        return Err(StreamError::Backend {
            what: "whole-chunk stream",
            message: Cow::Owned(format!("{} bytes after its end", len as u64 - read)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pipeline a byte names, for 4-byte words.
    fn every_pipeline() -> Vec<Pipeline> {
        (0..=0x3fu8)
            .filter_map(|b| Pipeline::from_byte(b | 2 << 6).ok())
            .map(|(p, _)| p)
            .collect()
    }

    #[test]
    fn pipeline_bytes_round_trip_and_unknown_ones_are_refused() {
        let pipelines = every_pipeline();
        // 1 stored, 4 transforms x LZ4 and Zstandard, 3 x LZMA, bzip2 and byte delta +
        // Zstandard, Bitshuffle of words and of elements.
        assert_eq!(pipelines.len(), 1 + 4 * 2 + 3 * 3 + 2);
        for p in pipelines {
            for w in [1, 2, 4, 8] {
                assert_eq!(Pipeline::from_byte(p.to_byte(w)), Ok((p, w)));
            }
        }
        assert_eq!(
            Pipeline::from_byte(7),
            Err("unknown whole-chunk compressor 7".into())
        );
        assert!(
            Pipeline::from_byte(0x36).is_err(),
            "byte delta + Zstandard takes no bit shuffle"
        );
        assert!(
            Pipeline::from_byte(0x35).is_err(),
            "Bitshuffle takes words or elements only"
        );
        assert!(
            Pipeline::from_byte(0x10).is_err(),
            "stored takes no transform"
        );
        assert!(
            Pipeline::from_byte(0x33).is_err(),
            "LZMA takes no bit shuffle"
        );
    }

    #[test]
    fn every_pipeline_round_trips_and_refuses_truncation() {
        let data: Vec<u8> = (0..6000u32)
            .flat_map(|i| ((i % 97) as f32 * 0.5 + (i / 97) as f32).to_le_bytes())
            .collect();
        for p in every_pipeline() {
            for effort in [Effort::Estimate, Effort::Full] {
                let payload = encode(&data, 4, p, effort);
                let mut out = vec![0u8; data.len()];
                decode(&payload, 4, p, &mut out).unwrap();
                assert_eq!(out, data, "{p:?}");
                if p.compressor != Compressor::None {
                    assert!(payload.len() < data.len() / 2, "{p:?}: {}", payload.len());
                    let cut = &payload[..payload.len() - 1];
                    assert!(decode(cut, 4, p, &mut out).is_err(), "{p:?} cut short");
                    let mut longer = payload.clone();
                    longer.push(0);
                    assert!(
                        decode(&longer, 4, p, &mut out).is_err(),
                        "{p:?} with a byte more"
                    );
                    let mut short = vec![0u8; data.len() - 4];
                    assert!(
                        decode(&payload, 4, p, &mut short).is_err(),
                        "{p:?} into less"
                    );
                }
            }
        }
    }

    #[test]
    fn shuffles_place_each_byte_of_a_unit_in_its_stream() {
        let data: Vec<u8> = (0..12).collect();
        assert_eq!(shuffle(&data, 4), [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
        let mut back = vec![0u8; 12];
        unshuffle(&shuffle(&data, 6), 6, &mut back);
        assert_eq!(back, data);
        assert!(shuffle(&[], 8).is_empty());
    }

    #[test]
    fn byte_deltas_run_along_each_stream_and_sum_back() {
        let mut bytes = vec![5u8, 7, 6, 255, 1, 1, 3, 0];
        to_deltas(&mut bytes, 4);
        assert_eq!(bytes, [5, 2, 255, 249, 1, 0, 2, 253]);
        from_deltas(&mut bytes, 4);
        assert_eq!(bytes, [5, 7, 6, 255, 1, 1, 3, 0]);
        // The streams of a byte shuffle of 2-byte words are its two rows.
        let words = Pipeline {
            transform: Transform::Words,
            compressor: Compressor::ByteDeltaZstd,
        };
        assert_eq!(stream_len(8, words, 2), 4);
        let bytes_only = Pipeline {
            transform: Transform::None,
            ..words
        };
        assert_eq!(stream_len(8, bytes_only, 2), 8);
        let elements = Pipeline {
            transform: Transform::Elements,
            ..words
        };
        assert_eq!(stream_len(16, elements, 2), 4);
        assert_eq!(words.minor_version(), 2);
        assert_eq!(elements.to_byte(4), 0xa6);
    }

    #[test]
    fn bzip2_streams_are_those_of_900_kb_blocks_but_for_the_block_size_digit() {
        use bzip2::{Action, Compress, Compression};
        use rand::{rngs::SmallRng, RngCore, SeedableRng};
        let best = |bytes: &[u8]| {
            let mut stream = Compress::new(Compression::best(), 30);
            let mut out = Vec::with_capacity(2 * bytes.len() + 1024);
            stream
                .compress_vec(bytes, &mut out, Action::Finish)
                .unwrap();
            out
        };
        // Noise, and runs of four equal bytes (which bzip2's first step lengthens by a
        // quarter), around the sizes where the block size steps up.
        let mut rng = SmallRng::seed_from_u64(0x9e37_79b9);
        let mut noise = |n: usize| -> Vec<u8> {
            let mut bytes = vec![0; n];
            rng.fill_bytes(&mut bytes);
            bytes
        };
        let runs = |n: usize| -> Vec<u8> { (0..n).map(|i| (i / 4 % 251) as u8).collect() };
        for (bytes, level) in [
            (noise(2000), 1),
            (noise(79_984), 1),
            (noise(79_986), 2),
            (runs(79_984), 1),
            (runs(79_988), 2),
            (noise(300_000), 4),
        ] {
            assert_eq!(bzip2_block_size(bytes.len()), level, "{}", bytes.len());
            let (sized, nine) = (bzip2_compress(&bytes), best(&bytes));
            assert_eq!(sized.len(), nine.len(), "{}", bytes.len());
            assert_eq!((sized[3], nine[3]), (b'0' + level as u8, b'9'));
            assert_eq!(sized[4..], nine[4..], "{}", bytes.len());
        }
        assert_eq!(bzip2_block_size(720_000), 9);
        assert_eq!(bzip2_block_size(usize::MAX / 2), 9);
    }

    #[test]
    fn lzma_dictionaries_are_powers_of_two_within_bounds() {
        assert_eq!(lzma_dictionary(0), 4096);
        assert_eq!(lzma_dictionary(4097), 8192);
        assert_eq!(lzma_dictionary(1 << 30), 64 << 20);
    }
}
