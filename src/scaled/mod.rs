//! Scaled integers: chunks of floats that are integers times a scale shared by each
//! group of words (spectrometer and correlator output stored as 16-bit integers times
//! a scale per spectrum) are coded as the integers, with the scales in a section after
//! the chunk header (header flag bit 1, see docs/format.md).
//!
//! - [`scale`]: finding a group's scale and turning words into integers and back;
//! - [`section`]: the scale section's bytes.

pub mod scale;
pub mod section;

use crate::word::Word;
pub use section::{Scales, MIN_GROUP};

/// Words at the start of a group a probe looks at before the whole chunk is tried.
const PROBE_WORDS: usize = MIN_GROUP;
/// Probes spread over the chunk; if none finds a scale, the chunk is not tried.
const PROBES: usize = 4;

/// The chunk's words as integers and the scale section, if the floats of `data` (words
/// of `T`, shape `shape`) are integers times one scale per group, for one of the
/// shape's trailing sizes as the group (a spectrum, a spectrum of every product, ...):
/// the largest that works. Probes at the start of a few groups reject most chunks of
/// other data after looking at a few dozen words.
pub fn scaled_integers<T: Word>(data: &[u8], shape: &[usize]) -> Option<(Vec<u8>, Scales)> {
    let len = data.len() / T::BYTES;
    let load = |from: usize, to: usize| -> Vec<T> {
        data[from * T::BYTES..to * T::BYTES]
            .chunks_exact(T::BYTES)
            .map(T::load)
            .collect()
    };
    let mut groups: Vec<usize> = (0..shape.len())
        .rev()
        .scan(1usize, |size, k| {
            *size = size.saturating_mul(shape[k]);
            Some(*size)
        })
        .filter(|&g| g >= MIN_GROUP && g <= len)
        .collect();
    groups.dedup();
    let smallest = *groups.first()?;
    let starts = len / smallest;
    let probed = (0..PROBES).any(|p| {
        let at = starts * p / PROBES * smallest;
        scale::find_scale(&load(at, at + PROBE_WORDS)).is_some()
    });
    if !probed {
        return None;
    }
    let words = load(0, len);
    groups.into_iter().rev().find_map(|group| {
        let count = words.len().div_ceil(group);
        let found = scale::quantise_chunk(&words, group, count / 16)?;
        let bytes = found
            .integers
            .iter()
            .flat_map(|w| {
                let mut b = [0u8; 8];
                w.store(&mut b);
                b.into_iter().take(T::BYTES)
            })
            .collect();
        Some((
            bytes,
            Scales {
                group,
                scales: found.scales,
            },
        ))
    })
}

/// Turns the decoded integers of a chunk of `word_size`-byte words back into floats,
/// in place.
pub fn dequantise_bytes(bytes: &mut [u8], word_size: usize, scales: &Scales) {
    match word_size {
        4 => scale::dequantise_in_place::<u32>(bytes, scales.group, &scales.scales),
        _ => scale::dequantise_in_place::<u64>(bytes, scales.group, &scales.scales),
    }
}
