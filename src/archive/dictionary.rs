//! Huffman value coding: when a tile holds few distinct words (at most
//! [`MAX_SYMBOLS`]), each word is coded as its index in the tile's dictionary of
//! distinct values with one canonical, length-limited Huffman code.
//!
//! Coding layout: a kind byte, then for kind 0 (dictionary) the number of distinct
//! values minus one (1 byte), the values in increasing order as LEB128 varints of their
//! differences (the first from zero), the code lengths ([`huffman::write_lengths`]) and
//! the codes, an LSB-first bit stream, to the end. A tile with more distinct values is
//! coded as kind 1: a [`context rANS`](super::context_ans) coding follows.

use std::collections::HashSet;

use super::context_ans;
use super::huffman::{self, MAX_CODE_LEN};
use crate::bits::io::{BitReader, BitWriter};
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Most distinct values a dictionary holds.
pub const MAX_SYMBOLS: usize = 256;

const KIND_DICTIONARY: u8 = 0;
const KIND_FALLBACK: u8 = 1;

/// The sorted distinct values of `values`, or `None` when there are more than
/// [`MAX_SYMBOLS`] (found early: the scan stops at the first value over the limit).
pub fn distinct<T: Word>(values: &[T]) -> Option<Vec<u64>> {
    let mut seen = HashSet::with_capacity(MAX_SYMBOLS + 1);
    // Runs of one word (flags, fill) are looked up once.
    let mut last = None;
    for v in values {
        let v = v.to_u64();
        if last == Some(v) {
            continue;
        }
        last = Some(v);
        seen.insert(v);
        if seen.len() > MAX_SYMBOLS {
            return None;
        }
    }
    let mut out: Vec<u64> = seen.into_iter().collect();
    out.sort_unstable();
    Some(out)
}

/// A tile's words as dictionary symbols.
struct Symbols {
    /// The distinct values, increasing.
    dictionary: Vec<u64>,
    /// Each word's index in `dictionary`.
    indices: Vec<usize>,
    /// Occurrences of each index.
    counts: Vec<u32>,
}

/// The symbols of `values`, `None` when they have none or too many distinct values.
fn symbols<T: Word>(values: &[T]) -> Option<Symbols> {
    let dictionary = distinct(values).filter(|d| !d.is_empty())?;
    let indices: Vec<usize> = values
        .iter()
        .map(|v| {
            dictionary
                .binary_search(&v.to_u64())
                .expect("every word is in the dictionary")
        })
        .collect();
    let mut counts = vec![0u32; dictionary.len()];
    for &s in &indices {
        counts[s] += 1;
    }
    Some(Symbols {
        dictionary,
        indices,
        counts,
    })
}

/// Appends the coding of `values` to `out`.
pub fn encode<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) {
    let Some(Symbols {
        dictionary,
        indices,
        counts,
    }) = symbols(values)
    else {
        out.push(KIND_FALLBACK);
        context_ans::encode(values, dims, out);
        return;
    };
    out.push(KIND_DICTIONARY);
    out.push((dictionary.len() - 1) as u8);
    let mut previous = 0u64;
    for &v in &dictionary {
        write_varint(v - previous, out);
        previous = v;
    }
    let lengths = huffman::code_lengths(&counts);
    huffman::write_lengths(&lengths, out);
    let code = huffman::Encoder::new(&lengths).expect("code_lengths gives a valid code");
    let mut w = BitWriter::with_capacity(values.len() / 2);
    for &s in &indices {
        let (bits, len) = code.code(s);
        w.put(u64::from(bits), len);
    }
    out.extend_from_slice(&w.finish());
}

/// Decodes `out.len()` values from `input`, which must be exactly their coding.
pub fn decode<T: Word>(input: &[u8], dims: Dims, out: &mut [T]) -> Result<(), StreamError> {
    let (&kind, rest) = input
        .split_first()
        .ok_or(StreamError::Truncated("empty dictionary coding"))?;
    match kind {
        KIND_DICTIONARY => {}
        KIND_FALLBACK => return context_ans::decode(rest, dims, out),
        id => {
            return Err(StreamError::UnknownId {
                what: "dictionary coding kind",
                id,
            })
        }
    }
    let (&count, mut rest) = rest
        .split_first()
        .ok_or(StreamError::Truncated("dictionary size missing"))?;
    let count = usize::from(count) + 1;
    let mut dictionary = Vec::with_capacity(count);
    let mut value = 0u64;
    for i in 0..count {
        let (delta, used) =
            read_varint(rest).ok_or(StreamError::Truncated("truncated dictionary"))?;
        rest = &rest[used..];
        if i > 0 && delta == 0 {
            return Err(StreamError::NonCanonical(
                "dictionary values not strictly increasing",
            ));
        }
        value = value
            .checked_add(delta)
            .filter(|&v| v <= T::ONES.to_u64())
            .ok_or(StreamError::Invalid("dictionary value wider than the word"))?;
        dictionary.push(T::from_u64(value));
    }
    let (lengths, used) = huffman::read_lengths(rest, count)?;
    let decoder = huffman::Decoder::new(&lengths)?;
    let stream = &rest[used..];
    let mut r = BitReader::new(stream);
    for o in out.iter_mut() {
        // `let else`, not `ok_or`: that builds the error and drops it for every value.
        let Some((s, len)) = decoder.decode(r.peek(MAX_CODE_LEN) as u32) else {
            return Err(StreamError::Invalid("invalid Huffman code"));
        };
        r.consume(len);
        *o = dictionary[usize::from(s)];
    }
    r.finish("code stream")
}

/// Estimated bits of the dictionary coding of `values`, `None` when they have too many
/// distinct values.
pub fn estimate_bits<T: Word>(values: &[T]) -> Option<u64> {
    let Symbols {
        dictionary, counts, ..
    } = symbols(values)?;
    let lengths = huffman::code_lengths(&counts);
    let codes: u64 = counts
        .iter()
        .zip(&lengths)
        .map(|(&n, &l)| u64::from(n) * u64::from(l))
        .sum();
    Some(codes + dictionary.len() as u64 * (4 + T::BITS as u64))
}

/// Fewest bytes a coding can take: kind, size, one varint and an empty code.
pub fn min_encoded_len() -> usize {
    5
}

fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// (value, bytes used) of the LEB128 varint at the start of `input`.
fn read_varint(input: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in input.iter().enumerate().take(10) {
        let bits = u64::from(b & 0x7f);
        if i == 9 && bits > 1 {
            return None;
        }
        v |= bits << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    const DIMS: Dims = Dims { width: 7, left: 2 };

    fn round_trip<T: Word>(values: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(values, DIMS, &mut out);
        let mut back = vec![T::default(); values.len()];
        decode(&out, DIMS, &mut back).unwrap();
        assert_eq!(back, values);
        out
    }

    #[test]
    fn few_values_use_the_dictionary_many_fall_back() {
        let mut rng = SmallRng::seed_from_u64(1);
        let levels = [0u32, 7, 0x4000_0000, u32::MAX];
        let few: Vec<u32> = (0..10_000).map(|_| levels[rng.gen_range(0..4)]).collect();
        let out = round_trip(&few);
        assert_eq!(out[0], KIND_DICTIONARY);
        // Two bits per value (4 equally likely values) plus a few header bytes.
        assert!(out.len() < 10_000 / 4 + 40, "{}", out.len());
        let many: Vec<u64> = (0..1000).map(|_| rng.gen()).collect();
        assert_eq!(round_trip(&many)[0], KIND_FALLBACK);
        assert_eq!(round_trip::<u16>(&[])[0], KIND_FALLBACK);
        round_trip(&[u64::MAX, 0, u64::MAX]);
        round_trip(&[5u8; 300]);
        let exactly: Vec<u16> = (0..256u16).chain(0..256).collect();
        assert_eq!(round_trip(&exactly)[0], KIND_DICTIONARY);
        let one_more: Vec<u16> = (0..257u16).collect();
        assert_eq!(round_trip(&one_more)[0], KIND_FALLBACK);
    }

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            let mut out = Vec::new();
            write_varint(v, &mut out);
            assert_eq!(read_varint(&out), Some((v, out.len())));
            assert_eq!(read_varint(&out[..out.len() - 1]), None);
        }
        assert_eq!(read_varint(&[0xff; 10]), None);
    }

    #[test]
    fn every_truncation_and_bad_dictionary_is_an_error() {
        let values: Vec<u32> = (0..500).map(|i| (i % 5) * 1000).collect();
        let out = round_trip(&values);
        let mut back = vec![0u32; values.len()];
        for cut in 0..out.len() {
            assert!(decode(&out[..cut], DIMS, &mut back).is_err(), "cut {cut}");
        }
        let mut wide = out.clone();
        wide[2] = 0xff; // first value delta becomes a varint continuing into the next
        assert!(decode(&wide, DIMS, &mut back).is_err());
        let mut back8 = vec![0u8; values.len()];
        assert_eq!(
            decode(&out, DIMS, &mut back8).unwrap_err(),
            StreamError::Invalid("dictionary value wider than the word")
        );
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = SmallRng::seed_from_u64(4);
        let mut back = vec![0u32; 300];
        for _ in 0..20_000 {
            let len = rng.gen_range(0..120);
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if let Some(b) = bytes.first_mut() {
                *b = 0;
            }
            let _ = decode(&bytes, DIMS, &mut back);
        }
    }
}
