//! Scaled integers: chunks of floats that are integers times a scale shared by each
//! group of words (spectrometer and correlator output stored as 16-bit integers times
//! a scale per spectrum) are coded as the integers, with the scales in a section after
//! the chunk header (header flag bit 1, see docs/format.md).
//!
//! - [`scale`]: finding a group's scale and turning words into integers and back;
//! - [`section`]: the scale section's bytes.

pub mod scale;
pub mod section;

use crate::buffers;
use crate::word::Word;
pub use section::{Scales, MIN_GROUP};

/// Words at the start of a group a probe looks at before the whole chunk is tried.
const PROBE_WORDS: usize = MIN_GROUP;
/// Probes spread over the chunk; if none finds a scale, the chunk is not tried.
const PROBES: usize = 4;

/// The chunk's words as integers and the scale section, if the floats of `data` (words
/// of `T`, shape `shape`) are integers times one scale per group, for one of the
/// shape's trailing sizes as the group (a spectrum, a spectrum of every product, ...):
/// the largest that works. The smallest group is quantised first, and its scales carried
/// over to each larger group in turn (see [`scale::coarsened`]): a chunk of one scale
/// per spectrum is then not searched for a scale of the whole chunk first. Probes at the
/// start of a few groups reject most chunks of other data after looking at a few dozen
/// words. The integers' buffer comes from [`buffers`]: give it back when done.
pub fn scaled_integers<T: Word>(data: &[u8], shape: &[usize]) -> Option<(Vec<u8>, Scales)> {
    let len = data.len() / T::BYTES;
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
        let end = (starts * (p + 1) / PROBES * smallest).max(at + PROBE_WORDS);
        probe_words::<T>(&data[at * T::BYTES..end.min(len) * T::BYTES])
            .is_some_and(|words| scale::find_scale(&words).is_some())
    });
    if !probed {
        return None;
    }
    // The words go through this thread's scratch and the integers into a pooled
    // buffer: fresh chunk-sized buffers on every call page-fault in (a third of fast
    // mode's compress time on scaled spectra).
    T::with_scratch(|words| {
        words.clear();
        words.extend(data[..len * T::BYTES].chunks_exact(T::BYTES).map(T::load));
        // Every byte is written before it is read: no zeroing.
        let mut bytes = buffers::take_filled(len * T::BYTES);
        let most_unscaled = |group: usize| words.len().div_ceil(group) / MOST_UNSCALED_PART;
        let Some(scales) =
            scale::quantise_chunk_into(words, smallest, most_unscaled(smallest), &mut bytes)
        else {
            buffers::give(bytes);
            return None;
        };
        // The largest group that the smallest groups' scales carry over to.
        for &group in groups.iter().rev().take_while(|&&g| g > smallest) {
            let merged = scale::coarsened(
                words,
                smallest,
                &scales,
                group,
                most_unscaled(group),
                &mut bytes,
            );
            if let Some(scales) = merged {
                return Some((bytes, Scales { group, scales }));
            }
        }
        Some((
            bytes,
            Scales {
                group: smallest,
                scales,
            },
        ))
    })
}

/// At most one group in this many may be left without a scale.
const MOST_UNSCALED_PART: usize = 16;

/// The first [`PROBE_WORDS`] words of `data` that are not positive zeros, if it has
/// that many. Zeros are a multiple of every scale, so they say nothing: flagged data
/// and fill begin many a group with runs of them, and a probe of zeros alone would
/// send every such chunk through the whole search.
fn probe_words<T: Word>(data: &[u8]) -> Option<Vec<T>> {
    let words: Vec<T> = data
        .chunks_exact(T::BYTES)
        .map(T::load)
        .filter(|w| w.to_u64() != 0)
        .take(PROBE_WORDS)
        .collect();
    (words.len() == PROBE_WORDS).then_some(words)
}

/// Turns decoded integers of `word_size`-byte words back into floats, in place: groups
/// of `group` words, the first with the first of `scales` (the scale section's, from
/// the group the bytes begin with).
pub fn dequantise_bytes(bytes: &mut [u8], word_size: usize, group: usize, scales: &[u64]) {
    match word_size {
        4 => scale::dequantise_in_place::<u32>(bytes, group, scales),
        _ => scale::dequantise_in_place::<u64>(bytes, group, scales),
    }
}

/// [`dequantise_bytes`] on a piece of a chunk's words that starts at word `first_word`
/// of the chunk, anywhere in its group: `scales` are the whole chunk's.
pub fn dequantise_piece(
    bytes: &mut [u8],
    word_size: usize,
    first_word: usize,
    group: usize,
    scales: &[u64],
) {
    let group = group.max(1);
    let scales = scales.get(first_word / group..).unwrap_or_default();
    // The words before the piece's first whole group take the first scale alone.
    let head = match first_word % group {
        0 => 0,
        into => (group - into).min(bytes.len() / word_size),
    };
    let (head, rest) = bytes.split_at_mut(head * word_size);
    let whole = scales
        .get(usize::from(!head.is_empty())..)
        .unwrap_or_default();
    dequantise_bytes(head, word_size, group, scales);
    dequantise_bytes(rest, word_size, group, whole);
}

/// [`dequantise_bytes`] from the integers in `integers` to the floats in `out` (of the
/// same length), instead of in place.
pub fn dequantise_bytes_into(
    integers: &[u8],
    out: &mut [u8],
    word_size: usize,
    group: usize,
    scales: &[u64],
) {
    match word_size {
        4 => scale::dequantise_into::<u32>(integers, out, group, scales),
        _ => scale::dequantise_into::<u64>(integers, out, group, scales),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn probes_skip_positive_zeros_and_keep_negative_ones() {
        let mut values = vec![0.0f32; 40];
        values.extend((0..20).map(|i| i as f32 + 0.5));
        values[45] = -0.0;
        let words = probe_words::<u32>(&bytes_of(&values)).expect("sixteen nonzero words");
        let expected: Vec<u32> = values[40..]
            .iter()
            .map(|v| v.to_bits())
            .take(PROBE_WORDS)
            .collect();
        assert_eq!(words, expected);
        assert_eq!(words[5], 0x8000_0000);
        assert_eq!(probe_words::<u32>(&bytes_of(&[0.0; 64])), None);
        assert_eq!(probe_words::<u32>(&bytes_of(&[1.0; 15])), None);
    }

    #[test]
    fn one_scale_for_every_spectrum_is_found_for_the_whole_chunk() {
        // Eight spectra of 512 channels, int16 times one float32 scale: the first holds
        // small integers, whose rounding admits scales the others' larger integers do
        // not, and the second is flagged (zero).
        let shape = [8, 512];
        let scale = 0.012_345_f32;
        let values: Vec<f32> = (0..8 * 512)
            .map(|k| {
                let (spectrum, channel) = (k / 512, k % 512);
                let q = match spectrum {
                    0 => (channel % 7) as f32 - 3.0,
                    1 => 0.0,
                    _ => ((k * 37) % 2001) as f32 - 1000.0,
                };
                q * scale
            })
            .collect();
        let data = bytes_of(&values);
        let words: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        let spectra = scale::quantise_chunk(&words, 512, 0).expect("every spectrum scaled");
        assert!(
            spectra.scales.iter().any(|&s| s != spectra.scales[0]),
            "the spectra's own scales differ"
        );
        let (integers, scales) = scaled_integers::<u32>(&data, &shape).expect("scaled");
        assert_eq!((scales.group, scales.scales.len()), (8 * 512, 1));
        let mut back = integers;
        dequantise_bytes(&mut back, 4, scales.group, &scales.scales);
        assert_eq!(back, data);
    }

    #[test]
    fn pieces_dequantise_as_the_whole_chunk_does() {
        // 100 words in groups of 16 (the last of 4), one group kept as it is, cut into
        // pieces that start inside a group, on its first word, and in the short last
        // group.
        let (group, words) = (16, 100);
        let integers: Vec<u8> = (0..words)
            .flat_map(|k: i32| ((k * 37) % 201 - 100).to_le_bytes())
            .collect();
        let mut scales: Vec<u64> = (0..7).map(|g| (0.5 + f64::from(g)).to_bits()).collect();
        scales[3] = scale::UNSCALED;
        let mut whole = integers.clone();
        dequantise_bytes(&mut whole, 4, group, &scales);
        assert_ne!(
            whole[..16 * 4],
            integers[..16 * 4],
            "the first group is scaled"
        );
        assert_eq!(
            whole[48 * 4..64 * 4],
            integers[48 * 4..64 * 4],
            "group 3 kept"
        );
        for cuts in [
            vec![0, 100],
            vec![0, 5, 16, 37, 64, 99, 100],
            vec![0, 15, 17, 100],
        ] {
            let mut pieces = integers.clone();
            for span in cuts.windows(2) {
                let piece = &mut pieces[span[0] * 4..span[1] * 4];
                dequantise_piece(piece, 4, span[0], group, &scales);
            }
            assert_eq!(pieces, whole, "cut at {cuts:?}");
        }
    }

    #[test]
    fn spectra_with_flagged_zero_edges_are_found() {
        // Sixteen spectra of 256 channels, int16 times a scale per spectrum, whose first
        // and last 64 channels are flagged (zero): every probe starts in a run of zeros.
        let shape = [16, 256];
        let values: Vec<f32> = (0..16 * 256)
            .map(|k| {
                let (spectrum, channel) = (k / 256, k % 256);
                if !(64..192).contains(&channel) {
                    return 0.0;
                }
                let q = ((k * 37) % 2001) as f32 - 1000.0;
                q * (0.001 + spectrum as f32 * 1e-4)
            })
            .collect();
        let data = bytes_of(&values);
        let (integers, scales) = scaled_integers::<u32>(&data, &shape).expect("scaled");
        assert_eq!(scales.group, 256);
        assert_eq!(scales.scales.len(), 16);
        let mut back = integers;
        dequantise_bytes(&mut back, 4, scales.group, &scales.scales);
        assert_eq!(back, data);
    }
}
