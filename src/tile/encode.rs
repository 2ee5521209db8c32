//! Encoding a tile: the residuals of its words, row by row, handed to the coder.

use crate::archive::{banded, dictionary, float_fields};
use crate::bits::plane_mask;
use crate::buffers;
use crate::coder::Coder;
use crate::fast::patched;
use crate::layout::{Dims, Geometry, Spatial, Tile};
use crate::word::Word;

use super::header::{Coding, TILE_HEADER_LEN};
use super::repeats::repeated_words;
use super::residuals::{residuals, residuals_into};
use super::search::{choose, sample_share, Candidates, FEW_PLANES, SPARSE_BITS_PER_WORD};

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
            let sparse_tile =
                8 * ((out.len() - start) as u64) < chosen.len() as u64 * SPARSE_BITS_PER_WORD;
            let exhaustive = candidates.exhaustive;
            let sparse = candidates.sparse.filter(|_| sparse_tile || exhaustive);
            let trial = GenericTrial {
                generic,
                sparse,
                few_planes: candidates.few_planes && (sparse_tile || exhaustive),
                exhaustive,
                words: TileWords {
                    src,
                    g,
                    tile,
                    spatial,
                },
                on_repeats: candidates.generic_on_repeats,
            };
            let sample = generic_sample(sample_share(g, GENERIC_SAMPLE), chosen.len());
            trial.run(coding, chosen, dims, sample, start, out);
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
    // Huffman value coding: the words themselves as dictionary symbols, when there
    // are few. Most tiles have thousands of distinct words: a few columns tell, before
    // the whole tile is copied.
    let probe = tile.col0..(tile.col0 + 16).min(tile.col1);
    let dictionary = Coding::raw(Coder::Dictionary);
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
            let coding = Coding::raw(if banded {
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
/// A tile's general-purpose sample is at most one in this many of its words ...
const GENERIC_SAMPLE_SHARE: usize = 4;
/// ... unless that is under this many words.
const GENERIC_SAMPLE_LEAST: usize = 1 << 12;

/// The general-purpose sample of a tile of `words` words, `shared` ([`GENERIC_SAMPLE`]
/// shared out) at most: no more than [`GENERIC_SAMPLE_SHARE`] of a small tile, whose
/// coding would otherwise spend a large part of its time on the trial, and not under
/// [`GENERIC_SAMPLE_LEAST`].
fn generic_sample(shared: usize, words: usize) -> usize {
    shared.min((words / GENERIC_SAMPLE_SHARE).max(GENERIC_SAMPLE_LEAST))
}

/// The general-purpose coder is tried on the whole tile when its sample codes in less
/// than this fraction (in 64ths) of the chosen coding's share.
const GENERIC_GAIN_64THS: u64 = 56;

/// A tile whose residuals repeat earlier blocks of the tile in at least this fraction
/// (one in `REPEATS_SHARE`) of its words is tried with the general-purpose coder in
/// full when that is asked for ([`Candidates::generic_on_repeats`]).
const REPEATS_SHARE: usize = 32;

/// A tile's words as they are, for the general-purpose coders.
struct TileWords<'a> {
    src: &'a [u8],
    g: &'a Geometry,
    tile: &'a Tile,
    spatial: Spatial,
}

impl TileWords<'_> {
    /// All the tile's words, in its value order.
    fn all<T: Word>(&self) -> Vec<T> {
        let cols = self.tile.col0..self.tile.col1;
        let coding = Coding::raw(Coder::Patched);
        residuals::<T>(self.src, self.g, self.tile, coding, self.spatial, cols)
    }

    /// About `take` words from the middle of the tile (at least one row): whole rows of
    /// its middle plane, or whole planes when a plane holds fewer.
    fn middle<T: Word>(&self, take: usize) -> Vec<T> {
        let tile = self.tile;
        let rows = tile.row1 - tile.row0;
        let planes = tile.plane1 - tile.plane0;
        let plane_words = self.g.tile_plane_words(tile).max(1);
        let part = if plane_words >= take {
            let width = (plane_words / rows.max(1)).max(1);
            let k = take.div_ceil(width).clamp(1, rows);
            let plane = tile.plane0 + planes / 2;
            let row = tile.row0 + (rows - k) / 2;
            Tile {
                plane0: plane,
                plane1: plane + 1,
                row0: row,
                row1: row + k,
                ..*tile
            }
        } else {
            let k = take.div_ceil(plane_words).clamp(1, planes);
            let plane = tile.plane0 + (planes - k) / 2;
            Tile {
                plane0: plane,
                plane1: plane + k,
                ..*tile
            }
        };
        let cols = tile.col0..tile.col1;
        let coding = Coding::raw(Coder::Patched);
        residuals::<T>(self.src, self.g, &part, coding, self.spatial, cols)
    }
}

/// What a tile's payload is recoded with when a general-purpose coder does better.
struct GenericTrial<'a> {
    /// The general-purpose coder, tried on the residuals.
    generic: Coder,
    /// The bit-shuffled coder of a sparse tile, tried beside `generic`, both also on the
    /// tile's `words` (data that prediction only spreads, such as flags, is smaller
    /// unpredicted).
    sparse: Option<Coder>,
    /// Also try [`Coder::ContextBitplanes`] on all the tile's `words` when they have few
    /// bit planes with a set bit.
    few_planes: bool,
    /// The tile's words as they are.
    words: TileWords<'a>,
    /// Try the coder in full when the tile's residuals hold long repeats anywhere (see
    /// [`Candidates::generic_on_repeats`]).
    on_repeats: bool,
    /// Try every coder in full, on the residuals and on the words, keeping the smallest
    /// (see [`Candidates::exhaustive`]).
    exhaustive: bool,
}

impl GenericTrial<'_> {
    /// Recodes the tile payload `out[start..]` (the chosen `coding` of `residuals`) when
    /// that is smaller. Each coder is tried on `sample` residuals from the middle of the
    /// tile and, for a sparse tile, on as many of its words; the sample coded smallest for its
    /// length is tried in full only when it codes clearly smaller than its share of the
    /// payload, or on repeats, which a sample from the middle may miss; so tiles it does
    /// not help cost one small trial per coder.
    fn run<T: Word>(
        self,
        coding: Coding,
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
        let take = n.min(sample);
        // The tile's words as they are, copied at most once for the trials below.
        let mut all = None;
        if self.exhaustive {
            let all = all.get_or_insert_with(|| self.words.all::<T>());
            for coder in std::iter::once(self.generic).chain(self.sparse) {
                keep_if_smaller(Coding { coder, ..coding }, residuals, dims, start, out);
                keep_if_smaller(Coding::raw(coder), all, dims, start, out);
            }
        }
        let unpredicted = self.sparse.map(|_| self.words.middle::<T>(take));
        let current = (out.len() - start) as u64;
        // Exhaustively, every coder was tried in full above.
        let picked = (!self.exhaustive)
            .then(|| self.pick(residuals, unpredicted.as_deref(), dims, take, current))
            .flatten();
        if let Some((coder, raw)) = picked {
            if raw {
                let all = all.get_or_insert_with(|| self.words.all::<T>());
                keep_if_smaller(Coding::raw(coder), all, dims, start, out);
            } else {
                let coding = Coding { coder, ..coding };
                keep_if_smaller(coding, residuals, dims, start, out);
            }
        }
        // The context-modelled bit planes learn as they go, so a sample would understate
        // them: they are tried on the whole tile, only on words of few bit planes.
        let few = |words: &[T]| plane_mask::of(words).count_ones() <= FEW_PLANES;
        if self.few_planes && unpredicted.as_deref().is_none_or(few) {
            let all = all.get_or_insert_with(|| self.words.all::<T>());
            if few(all) {
                keep_if_smaller(Coding::raw(Coder::ContextBitplanes), all, dims, start, out);
            }
        }
    }

    /// The coder to try on the whole tile, and whether on its words as they are rather
    /// than its `residuals`: the one whose sample (`take` residuals from the middle of the
    /// tile and, when given, the `unpredicted` words) codes in the fewest bits per word, when
    /// that sample codes clearly smaller than its share of the tile's `current` payload
    /// bytes, or on repeats.
    fn pick<T: Word>(
        &self,
        residuals: &[T],
        unpredicted: Option<&[T]>,
        dims: Dims,
        take: usize,
        current: u64,
    ) -> Option<(Coder, bool)> {
        let n = residuals.len();
        let at = (n - take) / 2;
        let predicted = &residuals[at..at + take];
        // (bits, sample length, coder, whether on the words as they are): the fewest
        // bits per word.
        let mut best: Option<(u64, usize, Coder, bool)> = None;
        for coder in std::iter::once(self.generic).chain(self.sparse) {
            let samples = [(predicted, false)]
                .into_iter()
                .chain(unpredicted.map(|u| (u, true)));
            for (values, raw) in samples {
                let bits = coder.estimate_bits(values, dims);
                let len = values.len().max(1);
                let fewer = |(b, l, _, _): (u64, usize, Coder, bool)| {
                    u128::from(bits) * (l as u128) < u128::from(b) * (len as u128)
                };
                if best.is_none_or(fewer) {
                    best = Some((bits, len, coder, raw));
                }
            }
        }
        let (sample_bits, len, coder, raw) = best?;
        let share_bits = 8 * current * len as u64 / n as u64;
        let sample_gains = sample_bits * 64 < share_bits * GENERIC_GAIN_64THS;
        let repeats = || self.on_repeats && repeated_words(residuals) * REPEATS_SHARE >= n;
        (sample_gains || repeats()).then_some((coder, raw))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_tiles_try_the_general_purpose_coder_on_a_quarter_of_their_words() {
        // A 141 KiB chunk of complex128 (18040 words, one tile): a quarter of it.
        assert_eq!(generic_sample(GENERIC_SAMPLE, 18_040), 4510);
        // Tiles of at least four full samples keep the sample; the share given by
        // several tiles stays the cap.
        assert_eq!(
            generic_sample(GENERIC_SAMPLE, 4 * GENERIC_SAMPLE),
            GENERIC_SAMPLE
        );
        assert_eq!(
            generic_sample(GENERIC_SAMPLE / 4, 40_000),
            GENERIC_SAMPLE / 4
        );
        // Never under the floor (the trial takes at most the tile's words).
        assert_eq!(generic_sample(GENERIC_SAMPLE, 6000), GENERIC_SAMPLE_LEAST);
        assert_eq!(generic_sample(GENERIC_SAMPLE, 100), GENERIC_SAMPLE_LEAST);
    }
}
