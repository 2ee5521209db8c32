//! Encoding a tile: the residuals of its words, row by row, handed to the coder.

use crate::archive::{banded, dictionary, float_fields};
use crate::buffers;
use crate::coder::Coder;
use crate::fast::patched;
use crate::layout::{Dims, Geometry, Spatial, Tile};
use crate::predict::residual::ResidualMap;
use crate::predict::Predictor;
use crate::word::Word;

use super::header::{Coding, TILE_HEADER_LEN};
use super::repeats::repeated_words;
use super::residuals::{residuals, residuals_into};
use super::search::{choose, sample_share, Candidates};

/// Appends the payload of `tile` of chunk `src` to `out`: coded with the only candidate
/// when there is one, else with the candidate estimated smallest on a sample of the
/// tile.
pub fn encode_tile_into<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    candidates: &Candidates,
    spatial: Spatial,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    let coding = choose::<T>(src, g, tile, candidates, spatial);
    let cols = tile.col0..tile.col1;
    let dims = Dims::of(tile, spatial);
    T::with_scratch(|chosen| {
        residuals_into(src, g, tile, coding, spatial, cols.clone(), chosen);
        let coding = if candidates.banded
            && coding.coder == Coder::ContextAns
            && banded::pays(chosen.len(), dims)
        {
            Coding {
                coder: Coder::Banded,
                ..coding
            }
        } else {
            coding
        };
        encode_with(coding, chosen, dims, out);
        if let Some(generic) = candidates.generic {
            let sample = sample_share(g, GENERIC_SAMPLE);
            let on_repeats = candidates.generic_on_repeats;
            try_generic(
                coding, generic, on_repeats, chosen, dims, sample, start, out,
            );
        }
        if candidates.try_alternatives {
            // The patched estimate is exact.
            let bits = Coder::Patched.estimate_bits(chosen, dims);
            if (TILE_HEADER_LEN as u64) + bits / 8 < (out.len() - start) as u64 {
                let packed = Coding {
                    coder: Coder::Patched,
                    ..coding
                };
                out.truncate(start);
                encode_with(packed, chosen, dims, out);
            }
        }
    });
    if !candidates.try_alternatives {
        return;
    }
    // The tile's words as they are, for the coders of raw words.
    let raw = |coder| Coding {
        predictor: Predictor::Zero,
        map: ResidualMap::Xor,
        coder,
        spatial_head: false,
    };
    // Huffman value coding: the words themselves as dictionary symbols, when there
    // are few. Most tiles have thousands of distinct words: a few columns tell, before
    // the whole tile is copied.
    let probe = tile.col0..(tile.col0 + 16).min(tile.col1);
    let dictionary = raw(Coder::Dictionary);
    let mut words = None;
    if dictionary::distinct(&residuals::<T>(src, g, tile, dictionary, spatial, probe)).is_some() {
        let all = words.insert(residuals::<T>(
            src,
            g,
            tile,
            dictionary,
            spatial,
            cols.clone(),
        ));
        if dictionary::distinct(all).is_some() {
            keep_if_smaller(dictionary, all, dims, start, out);
        }
    }
    if candidates.float_fields {
        let words = words
            .get_or_insert_with(|| residuals::<T>(src, g, tile, dictionary, spatial, cols.clone()));
        // One histogram estimates the coding with one context (more contexts save a
        // few percent at most on the noise this coder is for) and gives the window
        // and token width the coding then uses.
        let choice = float_fields::zero_order(words);
        let current = (out.len() - start) as u64;
        if choice.bits / 8 < current + current / FLOAT_FIELDS_CONTEXT_GAIN {
            let banded = candidates.banded && banded::pays(words.len(), dims);
            let coding = raw(if banded {
                Coder::Banded
            } else {
                Coder::FloatFields
            });
            keep_smaller_of::<T>(words.len(), start, out, |alternative| {
                coding.write_header(alternative);
                if banded {
                    banded::encode_fields(words, dims, choice, alternative);
                } else {
                    float_fields::encode_chosen(words, dims, choice, alternative);
                }
            });
        }
    }
}

/// Coder 10 is tried in full when its single-context estimate is below the tile's
/// payload plus one part in this many (its contexts may win that back).
const FLOAT_FIELDS_CONTEXT_GAIN: u64 = 16;

/// Replaces the tile payload `out[start..]` by `coding` of `residuals` when that is
/// smaller.
fn keep_if_smaller<T: Word>(
    coding: Coding,
    residuals: &[T],
    dims: Dims,
    start: usize,
    out: &mut Vec<u8>,
) {
    keep_smaller_of::<T>(residuals.len(), start, out, |alternative| {
        encode_with(coding, residuals, dims, alternative);
    });
}

/// Replaces the tile payload `out[start..]` by the payload `write` appends (for a tile
/// of `words` words of type `T`) when that is smaller.
fn keep_smaller_of<T: Word>(
    words: usize,
    start: usize,
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut Vec<u8>),
) {
    let mut alternative = buffers::take(max_payload_len::<T>(words));
    write(&mut alternative);
    if alternative.len() < out.len() - start {
        out.truncate(start);
        out.extend_from_slice(&alternative);
    }
    buffers::give(alternative);
}

/// Words of the chosen residuals a general-purpose coder is first tried on (shared out
/// by [`sample_share`] when a chunk has several tiles).
const GENERIC_SAMPLE: usize = 1 << 13;
/// The general-purpose coder is tried on the whole tile when its sample codes in less
/// than this fraction (in 64ths) of the chosen coding's share.
const GENERIC_GAIN_64THS: u64 = 56;

/// A tile whose residuals repeat earlier blocks of the tile in at least this fraction
/// (one in `REPEATS_SHARE`) of its words is tried with the general-purpose coder in
/// full when that is asked for ([`Candidates::generic_on_repeats`]).
const REPEATS_SHARE: usize = 32;

/// Recodes the tile payload `out[start..]` (the chosen `coding` of `residuals`) with the
/// general-purpose coder `generic` when that is smaller: tried in full only when a sample
/// of `sample` residuals from the middle of the tile codes clearly smaller than its share
/// of the payload, or (`on_repeats`) when the tile holds long repeats anywhere, which a
/// sample from its middle may miss; so tiles it does not help cost one small trial.
#[allow(clippy::too_many_arguments)]
fn try_generic<T: Word>(
    coding: Coding,
    generic: Coder,
    on_repeats: bool,
    residuals: &[T],
    dims: Dims,
    sample: usize,
    start: usize,
    out: &mut Vec<u8>,
) {
    let n = residuals.len();
    if n == 0 {
        return;
    }
    let current = (out.len() - start) as u64;
    let take = n.min(sample);
    let at = (n - take) / 2;
    let sample_bits = generic.estimate_bits(&residuals[at..at + take], dims);
    let share_bits = 8 * current * take as u64 / n as u64;
    let sample_gains = sample_bits * 64 < share_bits * GENERIC_GAIN_64THS;
    let repeats = || on_repeats && repeated_words(residuals) * REPEATS_SHARE >= n;
    if !sample_gains && !repeats() {
        return;
    }
    let coding = Coding {
        coder: generic,
        ..coding
    };
    keep_if_smaller(coding, residuals, dims, start, out);
}

/// Room for the payload of `words` words whatever the coder: an incompressible tile
/// (the fast coders' worst case is the raw size plus a byte per 32 words) and the slack
/// the patched coder writes past its end, so the coder never reallocates and copies.
pub fn max_payload_len<T: Word>(words: usize) -> usize {
    let raw = words * T::BYTES;
    TILE_HEADER_LEN + raw + raw / 32 + 16 + patched::ENCODE_SLACK
}

/// Appends the tile payload of `residuals` coded as `coding` says to `out`.
fn encode_with<T: Word>(coding: Coding, residuals: &[T], dims: Dims, out: &mut Vec<u8>) {
    out.reserve(max_payload_len::<T>(residuals.len()));
    coding.write_header(out);
    coding.coder.encode(residuals, dims, out);
}
