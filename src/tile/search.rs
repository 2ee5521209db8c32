//! The coding search: with `auto`, each tile's predictor, residual map and spatial head
//! are chosen from an estimate on a sample of the tile's columns.

use std::ops::Range;

use crate::coder::Coder;
use crate::layout::{Dims, Geometry, Spatial, Tile, TARGET_TILE_WORDS};
use crate::predict::residual::ResidualMap;
use crate::predict::Predictor;
use crate::word::Word;

use super::header::Coding;
use super::residuals::residuals_into;

/// Bits per word under which a tile's chosen coding is sparse enough for
/// [`Candidates::sparse`] to try its bit-shuffled coder: denser residuals leave no bit plane
/// empty, and their bit planes code no smaller than the chosen coder's bits.
pub const SPARSE_BITS_PER_WORD: u64 = 4;

/// Most bit planes with a set bit of a sparse tile's words for
/// [`Candidates::few_planes`] (each plane costs a pass of binary coding).
pub const FEW_PLANES: u32 = 4;

/// The codings a tile may use: every combination of the lists, all with `coder`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidates {
    /// Predictors to try (never empty).
    pub predictors: Vec<Predictor>,
    /// Residual maps to try (never empty).
    pub maps: Vec<ResidualMap>,
    /// Whether to predict a plane's first row spatially (`[false]` or `[false, true]`).
    pub heads: Vec<bool>,
    /// The residual coder.
    pub coder: Coder,
    /// Choose the predictor and map first, then the head, instead of estimating
    /// every combination.
    pub greedy: bool,
    /// Also try, and keep when smaller, fast mode's patched packing of the chosen
    /// residuals (tiny tiles, where entropy tables do not pay) and the value dictionary
    /// of Huffman value coding on the tile's words as they are (archive mode with no
    /// coder requested).
    pub try_alternatives: bool,
    /// The general-purpose coder to try on the chosen residuals when a sample says it
    /// beats the chosen coder clearly (no coder requested: shuffled LZ4 in fast mode,
    /// shuffled Zstandard in archive mode).
    pub generic: Option<Coder>,
    /// The bit-shuffled coder also tried, on the chosen residuals and on the tile's words
    /// as they are, when the chosen coding takes under [`SPARSE_BITS_PER_WORD`] (no coder
    /// or predictor requested: bit-shuffled LZ4 in fast mode, bit-shuffled Zstandard in
    /// archive mode; for flags, weights and counts, which prediction only spreads and
    /// Bitshuffle codes well).
    pub sparse: Option<Coder>,
    /// Also try, on such a sparse tile, [`Coder::ContextBitplanes`] on the whole tile's
    /// words as they are when at most [`FEW_PLANES`] of their bit planes hold a set bit
    /// (archive mode with no coder or predictor requested: flags take one plane,
    /// weights of one value two).
    pub few_planes: bool,
    /// Also try the general-purpose coder in full on a tile whose residuals repeat
    /// earlier blocks of the tile (archive mode: Zstandard's window spans a tile).
    pub generic_on_repeats: bool,
    /// Also try, with [`Candidates::try_alternatives`], the tile's words as they are
    /// coded by their float fields (float data in archive mode): for noise, which no
    /// predictor helps.
    pub float_fields: bool,
    /// Code tiles large enough with coder 11 (banded context rANS) in place of the
    /// context coders 4 and 10 (archive mode with no coder requested).
    pub banded: bool,
    /// Try every general-purpose coder (`generic`, and `sparse` on every tile) in full,
    /// on the chosen residuals and on the tile's words as they are, and keep the
    /// smallest, instead of trying one only when a sample says it pays (level 9).
    pub exhaustive: bool,
}

impl Candidates {
    /// Every combination.
    pub fn all(&self) -> Vec<Coding> {
        let mut out = Vec::new();
        for &predictor in &self.predictors {
            for &map in &self.maps {
                for &spatial_head in &self.heads {
                    out.push(Coding {
                        predictor,
                        map,
                        coder: self.coder,
                        spatial_head,
                    });
                }
            }
        }
        out
    }
}

/// How much of a tile is sampled to choose a coding automatically: about `words` words,
/// in column segments of at least `least` columns.
#[derive(Debug, Clone, Copy)]
struct Sampling {
    words: usize,
    least: usize,
    /// Whether the sample takes planes spread across the tile, up to every second one, to
    /// bring it near `words` (archive mode), or only as many of its first planes as
    /// the rows leave room for (fast mode: a tile of many small planes is a small chunk,
    /// whose coding a larger sample would slow down by half).
    spread: bool,
}

/// Fast mode's sampling: one 32-word group per row and segment, half the words of
/// archive mode's: faster compression at the same ratios on the benchmark data.
const FAST_SAMPLING: Sampling = Sampling {
    words: 1 << 11,
    least: 32,
    spread: false,
};

/// Fast mode's sampling of `tile`: [`FAST_SAMPLING`], its words shared out by
/// [`sample_share`].
fn fast_sampling(g: &Geometry) -> Sampling {
    Sampling {
        words: sample_share(g, FAST_SAMPLING.words),
        ..FAST_SAMPLING
    }
}

/// The part of a sample of `words` words that each tile of `g` takes: all of it when
/// the chunk's tiles are of the target size [`TARGET_TILE_WORDS`] or the chunk is one
/// tile; else in proportion to the tiling's full tile against the target, at least a
/// quarter of it, so that a chunk cut into smaller tiles to share the cores samples
/// about as much in all as one tile of the target size did.
pub(super) fn sample_share(g: &Geometry, words: usize) -> usize {
    let full = g.full_tile_words().unwrap_or(TARGET_TILE_WORDS);
    if g.words() <= full {
        return words;
    }
    (words * full / TARGET_TILE_WORDS).clamp(words / 4, words)
}

/// Archive mode's sampling: narrow segments over more rows, for the context coders.
const ARCHIVE_SAMPLING: Sampling = Sampling {
    words: 1 << 12,
    least: 8,
    spread: true,
};
/// Column segments the sample is spread over.
const SAMPLE_SEGMENTS: usize = 8;

/// The candidate with the smallest estimated size on a sample of the tile: column
/// segments spread evenly across it, all rows. Greedy choice takes the best predictor
/// and map first (each with a spatially predicted first row, when that is a
/// candidate), then decides on the spatial head for them.
pub(super) fn choose<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    candidates: &Candidates,
    spatial: Spatial,
) -> Coding {
    let all = candidates.all();
    if all.len() == 1 {
        return all[0];
    }
    let cols = tile.col1 - tile.col0;
    let sampling = if candidates.greedy {
        ARCHIVE_SAMPLING
    } else {
        fast_sampling(g)
    };
    // Deep tiles are sampled over their middle rows only, in planes spread across the
    // tile, so the sample stays near `sampling.words` however many time steps a tile holds.
    let sample = sample_rows(tile, cols, sampling);
    let rows = (sample.row1 - sample.row0) * sample.planes.len();
    let width =
        (sampling.words / SAMPLE_SEGMENTS / rows.max(1)).clamp(cols.min(sampling.least), cols);
    let segments = SAMPLE_SEGMENTS.min(cols / width);
    let starts: Vec<usize> = (0..segments)
        .map(|i| tile.col0 + (cols - width) * i / (segments - 1).max(1))
        .collect();
    let dims = Dims {
        width,
        left: spatial.stride.max(1),
    };
    let mut scratch = SampleScratch::default();
    // The estimate of `coding` on the sample's segments that start at `starts`.
    let mut estimate_on = |coding: Coding, cost: Cost, starts: &[usize]| -> u64 {
        let mut lengths = BitLengths::default();
        let mut bits = 0;
        for &start in starts {
            let columns = start..start + width;
            sample_residuals::<T>(
                src,
                g,
                tile,
                &sample,
                coding,
                spatial,
                columns,
                &mut scratch,
            );
            match cost {
                Cost::Coder => bits += coding.coder.estimate_bits(&scratch.residuals, dims),
                Cost::BitLengths => lengths.add(&scratch.residuals),
            }
        }
        match cost {
            Cost::Coder => bits,
            Cost::BitLengths => lengths.bits(),
        }
    };
    if !candidates.greedy {
        return shortlisted(&all, &starts, |coding, starts| {
            estimate_on(coding, Cost::Coder, starts)
        });
    }
    let mut estimate = |coding: Coding, cost: Cost| estimate_on(coding, cost, &starts);
    // Each coding is estimated by its coder once, however many stages compare it.
    let mut estimated: Vec<(Coding, u64)> = Vec::new();
    let mut best_of = |options: Vec<Coding>, estimate: &mut dyn FnMut(Coding, Cost) -> u64| {
        options
            .into_iter()
            .map(|c| {
                let bits = match estimated.iter().find(|(e, _)| *e == c) {
                    Some(&(_, bits)) => bits,
                    None => {
                        let bits = estimate(c, Cost::Coder);
                        estimated.push((c, bits));
                        bits
                    }
                };
                (bits, c)
            })
            .min_by_key(|&(bits, _)| bits)
            .expect("at least one candidate")
            .1
    };
    // The predictors are compared with a spatially predicted first row when it is a
    // candidate: in a tile of few rows the first row is a large share, and a predictor
    // judged with it coded as it is would lose to one that predicts it spatially anyway
    // (Lorenzo) even where the other with the head is smaller.
    let head = candidates.heads.contains(&true);
    let first: Vec<Coding> = all.into_iter().filter(|c| c.spatial_head == head).collect();
    // The coder's estimate (a context model fitted to each sample segment) is the
    // search's main cost: of each map's predictors it ranks only the shortlist that the
    // bit lengths rank best (the bit lengths would misjudge the maps against each other:
    // the context model gains more on some maps' residuals).
    let mut ranked: Vec<(ResidualMap, u64, usize)> = Vec::with_capacity(first.len());
    for (i, &c) in first.iter().enumerate() {
        let in_map = first.iter().filter(|o| o.map == c.map).count();
        let bits = if in_map > SHORTLIST {
            estimate(c, Cost::BitLengths)
        } else {
            0
        };
        ranked.push((c.map, bits, i));
    }
    ranked.sort_unstable_by_key(|&(map, bits, i)| (map.id(), bits, i));
    let mut kept: Vec<usize> = (ranked.chunk_by(|a, b| a.0 == b.0))
        .flat_map(|group| group.iter().take(SHORTLIST).map(|&(_, _, i)| i))
        .collect();
    // In the candidates' order, so that ties go as without the shortlist.
    kept.sort_unstable();
    let shortlist = kept.into_iter().map(|i| first[i]).collect();
    let best = best_of(shortlist, &mut estimate);
    best_of(
        (candidates.heads.iter())
            .map(|&spatial_head| Coding {
                spatial_head,
                ..best
            })
            .collect(),
        &mut estimate,
    )
}

/// Of every this many of a sample's segments, fast mode's search estimates the first
/// for every candidate (see [`shortlisted`]).
const PRELIMINARY_EVERY: usize = 2;
/// Candidates fast mode's search keeps after its preliminary segments, at least ...
const FINALISTS: usize = 2;
/// ... and also every other candidate within this many 64ths above the last of them.
const FINALIST_MARGIN_64THS: u64 = 4;

/// Fast mode's choice among `all`: each candidate is estimated on every
/// [`PRELIMINARY_EVERY`]-th of the segments that start at `starts` (the first among
/// them); the [`FINALISTS`] smallest there, and any within [`FINALIST_MARGIN_64THS`]
/// of them, are estimated on the other segments too; the smallest over all segments
/// wins, ties going to the earlier candidate. `estimate` gives a coding's bits on the
/// segments that start where it is told: the bits of a sample are the sum of its
/// segments', so the finalists' totals are those of an estimate on the whole sample.
///
/// A candidate ranked out would have had to gain on the other segments what it lost on
/// the preliminary ones, which are spread across the tile. Those that tie go on
/// together: segments of flagged zeros, on which every candidate costs the same, leave
/// the choice to the other segments (ranked by their order alone, the first
/// candidates went on, and some chunks came out larger).
fn shortlisted(
    all: &[Coding],
    starts: &[usize],
    mut estimate: impl FnMut(Coding, &[usize]) -> u64,
) -> Coding {
    let preliminary: Vec<usize> = starts.iter().copied().step_by(PRELIMINARY_EVERY).collect();
    let rest: Vec<usize> = (starts.iter().enumerate())
        .filter(|&(i, _)| i % PRELIMINARY_EVERY != 0)
        .map(|(_, &start)| start)
        .collect();
    let mut ranked: Vec<(u64, usize)> = (all.iter().enumerate())
        .map(|(i, &coding)| (estimate(coding, &preliminary), i))
        .collect();
    if !rest.is_empty() {
        ranked.sort_unstable();
        let last = ranked[FINALISTS.min(ranked.len()) - 1].0;
        let within = last + last * FINALIST_MARGIN_64THS / 64;
        let finalists = ranked
            .iter()
            .take_while(|&&(bits, _)| bits <= within)
            .count();
        ranked.truncate(finalists);
        for (bits, i) in &mut ranked {
            *bits += estimate(all[*i], &rest);
        }
    }
    let (_, best) = ranked.into_iter().min().expect("at least one candidate");
    all[best]
}

/// How a candidate's sample is costed.
#[derive(Debug, Clone, Copy)]
enum Cost {
    /// The coder's estimate.
    Coder,
    /// [`BitLengths::bits`].
    BitLengths,
}

/// Predictors of each residual map that archive mode's search ranks by the coder's
/// estimate; the others are ranked out by [`BitLengths::bits`] first.
const SHORTLIST: usize = 2;

/// The histogram of the bit lengths of a candidate's sample: a cheap estimate of its
/// size ([`BitLengths::bits`]) that ranks the predictors of one map nearly as the
/// context coders' estimate does: it leaves out the context gain, which varies less
/// between them than between maps.
struct BitLengths {
    /// Values of each bit length, 0 to 64.
    histogram: [u32; 65],
}

impl Default for BitLengths {
    fn default() -> Self {
        BitLengths { histogram: [0; 65] }
    }
}

impl BitLengths {
    /// Counts the bit lengths of `values`.
    fn add<T: Word>(&mut self, values: &[T]) {
        for v in values {
            self.histogram[v.bit_length() as usize] += 1;
        }
    }

    /// Bits of the values counted coded as their bit lengths with one static model (the
    /// entropy of the histogram) followed by the bits below each leading one.
    fn bits(&self) -> u64 {
        let n: u32 = self.histogram.iter().sum();
        let n = f64::from(n);
        let mut bits = 0.0f64;
        for (length, &count) in self.histogram.iter().enumerate() {
            if count > 0 {
                let c = f64::from(count);
                bits += c * (n / c).log2() + c * length.saturating_sub(1) as f64;
            }
        }
        bits as u64
    }
}

/// The residuals of `coding` in the sampled rows and planes of `tile`, over `columns`,
/// plane after plane, into `out`. The rows before the sample that the predictor needs as
/// history are coded first and left out, so a sample from the middle of a plane predicts
/// its first row as the whole tile's coding does, not as a plane's first.
///
/// A coding that looks at no neighbour along the row codes each plane's piece gathered
/// into contiguous rows (`gathered`, `piece`: reused buffers), which the predictors'
/// flat pass then takes whole: the piece's rows are a sample segment wide, so row by row
/// their bookkeeping would cost more than their arithmetic. The residuals are the same.
#[allow(clippy::too_many_arguments)]
fn sample_residuals<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    sample: &SampleRows,
    coding: Coding,
    spatial: Spatial,
    columns: Range<usize>,
    scratch: &mut SampleScratch<T>,
) {
    let SampleScratch {
        residuals: out,
        gathered,
        piece: coded,
    } = scratch;
    out.clear();
    let warm = coding.predictor.history().min(sample.row0 - tile.row0);
    let width = columns.len();
    let along_rows_only = coding.spatial_rows(spatial) == (false, false);
    for &plane in &sample.planes {
        let piece = Tile {
            plane0: plane,
            plane1: plane + 1,
            row0: sample.row0 - warm,
            row1: sample.row1,
            ..*tile
        };
        if along_rows_only {
            let w = T::BYTES;
            let cut = Tile {
                col0: columns.start,
                col1: columns.end,
                ..piece
            };
            gathered.clear();
            for words in g.tile_row_ranges(&cut) {
                gathered.extend_from_slice(&src[words.start * w..words.end * w]);
            }
            let rows = Geometry {
                planes: 1,
                plane_len: gathered.len() / w,
                lag: width,
                tiling: g.tiling,
            };
            let whole = Tile {
                plane0: 0,
                plane1: 1,
                row0: 0,
                row1: rows.rows(),
                col0: 0,
                col1: width,
            };
            residuals_into(gathered, &rows, &whole, coding, spatial, 0..width, coded);
        } else {
            residuals_into(src, g, &piece, coding, spatial, columns.clone(), coded);
        }
        out.extend_from_slice(&coded[(warm * width).min(coded.len())..]);
    }
}

/// The buffers [`sample_residuals`] reuses from one call to the next.
#[derive(Default)]
struct SampleScratch<T> {
    /// The sample's residuals.
    residuals: Vec<T>,
    /// One plane's piece of the sample, its rows contiguous.
    gathered: Vec<u8>,
    /// The residuals of one plane's piece.
    piece: Vec<T>,
}

/// Fewest rows a sample keeps per plane (predictors with a history of up to 8 rows
/// settle within them).
const SAMPLE_MIN_ROWS: usize = 16;

/// The rows and planes of a tile that a coding's sample covers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SampleRows {
    /// First sampled row of each sampled plane.
    row0: usize,
    /// One past the last sampled row.
    row1: usize,
    /// The sampled planes, in order.
    planes: Vec<usize>,
}

/// The part of `tile` (of `cols` columns) a coding's sample covers: all its rows unless
/// it has more than `sampling.words` spreads over [`SAMPLE_SEGMENTS`] segments of
/// `sampling.least` columns (at least [`SAMPLE_MIN_ROWS`] of them), then as many of its
/// middle rows; and as many planes as the rows leave room for, or (`sampling.spread`)
/// as bring the sample near `sampling.words`, spread evenly across the tile, up to every
/// second one (a tile of many narrow planes, such as a chunk coded along its frequency
/// axis with one series per plane, is then sampled in many planes, not only its first).
fn sample_rows(tile: &Tile, cols: usize, sampling: Sampling) -> SampleRows {
    let budget = (sampling.words / SAMPLE_SEGMENTS / sampling.least).max(SAMPLE_MIN_ROWS);
    let rows = (tile.row1 - tile.row0).min(budget);
    let row_words =
        cols.min(SAMPLE_SEGMENTS * (sampling.words / SAMPLE_SEGMENTS / rows).max(sampling.least));
    let tile_planes = tile.plane1 - tile.plane0;
    let mut count = budget / rows;
    if sampling.spread {
        count = count.max((sampling.words / (rows * row_words).max(1)).min(tile_planes / 2));
    }
    let count = count.clamp(1, tile_planes);
    let step = if sampling.spread {
        tile_planes - 1
    } else {
        count - 1
    };
    let row0 = tile.row0 + (tile.row1 - tile.row0 - rows) / 2;
    SampleRows {
        row0,
        row1: row0 + rows,
        planes: (0..count)
            .map(|i| tile.plane0 + step * i / (count - 1).max(1))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_lengths_cost_their_entropy_and_the_bits_below_the_leading_ones() {
        let mut lengths = BitLengths::default();
        // Lengths 0, 1, 2, 2 over two calls: 2 + 2 + 2 x 1 bits of entropy, and
        // 0 + 0 + 2 x 1 bits below the leading ones.
        lengths.add(&[0u32, 1]);
        lengths.add(&[2u32, 3]);
        assert_eq!(lengths.bits(), 8);
        // One length only: no entropy, 63 bits below each leading one.
        let mut wide = BitLengths::default();
        wide.add(&[u64::MAX; 3]);
        assert_eq!(wide.bits(), 3 * 63);
        assert_eq!(BitLengths::default().bits(), 0);
    }

    #[test]
    fn fast_search_finishes_the_estimates_of_its_finalists_only() {
        // Eight candidates, eight segments: candidate k costs bits[k][s] on segment s.
        // The preliminary segments are 0, 2, 4 and 6.
        let all: Vec<Coding> = (0..8)
            .map(|k| Coding {
                predictor: Predictor::Lagrange(1 + k / 2),
                map: [ResidualMap::Subtract, ResidualMap::RotateSubtract][k as usize % 2],
                coder: Coder::Patched,
                spatial_head: false,
            })
            .collect();
        let starts: Vec<usize> = (0..8).map(|s| 100 + 10 * s).collect();
        let mut bits = [[50u64; 8]; 8];
        // On the preliminary segments candidate 2 leads (80), 5 follows (120) and 6 is
        // within 4/64 of it (124 <= 127); of these 5 is the smallest in all (280, 2
        // and 6: 320 and 304). Candidate 7 would be the smallest in all (184) but is
        // ranked out (180 on the preliminary segments).
        bits[2] = [20, 60, 20, 60, 20, 60, 20, 60];
        bits[5] = [30, 40, 30, 40, 30, 40, 30, 40];
        bits[6] = [31, 45, 31, 45, 31, 45, 31, 45];
        bits[7] = [45, 1, 45, 1, 45, 1, 45, 1];
        let mut calls = Vec::new();
        let mut estimate = |coding: Coding, segments: &[usize]| -> u64 {
            let k = all.iter().position(|&c| c == coding).unwrap();
            calls.push((k, segments.to_vec()));
            segments.iter().map(|s| bits[k][(s - 100) / 10]).sum()
        };
        assert_eq!(shortlisted(&all, &starts, &mut estimate), all[5]);
        let preliminary = vec![100, 120, 140, 160];
        let rest = vec![110, 130, 150, 170];
        let mut expected: Vec<(usize, Vec<usize>)> =
            (0..8).map(|k| (k, preliminary.clone())).collect();
        expected.extend([(2, rest.clone()), (5, rest.clone()), (6, rest.clone())]);
        assert_eq!(calls, expected);
        // Segments of flagged zeros cost every candidate the same: all go on, and the
        // other segments decide.
        let mut finished = 0;
        let mut zeros = |coding: Coding, segments: &[usize]| -> u64 {
            if segments == preliminary.as_slice() {
                return 0;
            }
            finished += 1;
            if coding == all[6] {
                1
            } else {
                5
            }
        };
        assert_eq!(shortlisted(&all, &starts, &mut zeros), all[6]);
        assert_eq!(finished, 8);
        // Equal totals go to the earlier candidate; a sample of one segment is all
        // preliminary.
        let mut even = |_: Coding, segments: &[usize]| 7 * segments.len() as u64;
        assert_eq!(shortlisted(&all, &starts, &mut even), all[0]);
        let mut one =
            |coding: Coding, _: &[usize]| u64::from(coding.map == ResidualMap::Subtract) + 3;
        assert_eq!(shortlisted(&all, &starts[..1], &mut one), all[1]);
    }

    #[test]
    fn archive_search_finds_the_predictor_that_predicts_each_series_exactly() {
        use crate::params::{ElementKind, Mode, Params};
        // Quadratics in time, their coefficients column by column: the 3-point Lagrange
        // extrapolation predicts every sample after a series' first three exactly, and
        // of the predictors that do, it is the first candidate.
        let (rows, cols) = (64, 512);
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u32
        };
        let coefficients: Vec<[u32; 3]> = (0..cols)
            .map(|_| [next(), next() % 4096, next() % 64])
            .collect();
        let data: Vec<u8> = (0..rows * cols)
            .flat_map(|i| {
                let (t, [a, b, k]) = ((i / cols) as u32, coefficients[i % cols]);
                a.wrapping_add(b * t).wrapping_add(k * t * t).to_le_bytes()
            })
            .collect();
        let g = Geometry::from_shape(&[rows, cols], 0, 0).unwrap();
        let mut params = Params::new(4, &[rows, cols]);
        params.mode = Mode::Archive;
        params.element = ElementKind::Integer;
        let candidates = params.candidates(false);
        assert!(candidates.greedy && candidates.all().len() > SHORTLIST);
        let spatial = Spatial { stride: 0, run: 0 };
        let coding = choose::<u32>(&data, &g, &g.tiles()[0], &candidates, spatial);
        assert_eq!(coding.predictor, Predictor::Lagrange(3));
    }

    fn tile(planes: usize, rows: usize) -> Tile {
        Tile {
            plane0: 3,
            plane1: 3 + planes,
            row0: 10,
            row1: 10 + rows,
            col0: 5,
            col1: 900,
        }
    }

    #[test]
    fn deep_tiles_are_sampled_over_their_middle_rows() {
        // Fast mode: 2048 words over 8 segments of 32 columns is 8 rows; at least 16.
        let all = sample_rows(&tile(1, 8), 895, FAST_SAMPLING);
        assert_eq!((all.row0, all.row1, all.planes), (10, 18, vec![3]));
        let first = sample_rows(&tile(4, 8), 895, FAST_SAMPLING);
        assert_eq!(first.planes, vec![3, 4]);
        let deep = sample_rows(&tile(1, 128), 895, FAST_SAMPLING);
        assert_eq!((deep.row0, deep.row1), (10 + 56, 10 + 72));
        // Archive mode: 4096 words over 8-column segments is 64 rows.
        let deep = sample_rows(&tile(3, 128), 895, ARCHIVE_SAMPLING);
        assert_eq!(
            (deep.row0, deep.row1, deep.planes),
            (10 + 32, 10 + 96, vec![3])
        );
    }

    #[test]
    fn tiles_of_narrow_planes_are_sampled_across_their_planes() {
        // One column per plane (a chunk coded along its frequency axis): 64 middle rows
        // of 64 planes spread over the tile's 200, not 64 rows of its first plane.
        let narrow = sample_rows(&tile(200, 1024), 1, ARCHIVE_SAMPLING);
        assert_eq!((narrow.row0, narrow.row1), (10 + 480, 10 + 544));
        assert_eq!(narrow.planes.len(), 64);
        let spread = (narrow.planes[0], narrow.planes[1], narrow.planes[63]);
        assert_eq!(spread, (3, 6, 202));
        // Archive mode samples at most every second plane; fast mode its first planes.
        let few = sample_rows(&tile(21, 1024), 1, ARCHIVE_SAMPLING);
        assert_eq!(few.planes, vec![3, 5, 7, 9, 11, 14, 16, 18, 20, 23]);
        let fast = sample_rows(&tile(36, 64), 4, FAST_SAMPLING);
        assert_eq!((fast.row0, fast.row1, fast.planes), (34, 50, vec![3]));
    }

    /// Words `base[c] + noise` of a (rows, cols) chunk: series that stay near their own
    /// level, whose levels step by up to 2^14 from column to column.
    fn levels_and_noise(rows: usize, cols: usize) -> Vec<u8> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut level = 1u32 << 24;
        let levels: Vec<u32> = (0..cols)
            .map(|_| {
                level += (next() % (1 << 14)) as u32;
                level
            })
            .collect();
        (0..rows * cols)
            .flat_map(|i| (levels[i % cols] + (next() % 32) as u32).to_le_bytes())
            .collect()
    }

    #[test]
    fn samples_from_a_tiles_middle_give_the_predictor_its_history() {
        use crate::tile::residuals::residuals as residuals_of;
        // A sample of middle rows holds the residuals the whole tile's coding gives those
        // rows, in every sampled plane: its first row is predicted from the rows before
        // it, not coded as a plane's first.
        let (planes, rows, cols) = (3, 256, 64);
        let data = levels_and_noise(planes * rows, cols);
        let g = Geometry::from_shape(&[planes, rows, cols], 1, 0).unwrap();
        let spatial = Spatial {
            stride: 1,
            run: cols,
        };
        let tile = g.tiles()[0];
        assert_eq!(
            (tile.plane1 - tile.plane0, tile.row1 - tile.row0),
            (planes, rows)
        );
        let sample = SampleRows {
            row0: tile.row0 + 100,
            row1: tile.row0 + 116,
            planes: vec![tile.plane0, tile.plane0 + 2],
        };
        let columns = tile.col0 + 16..tile.col0 + 48;
        for predictor in [
            Predictor::PREVIOUS,
            Predictor::Lagrange(3),
            Predictor::Mean(8),
            Predictor::Median(3),
            Predictor::Lorenzo,
        ] {
            for map in [ResidualMap::Subtract, ResidualMap::RotateSubtract] {
                let coding = Coding {
                    predictor,
                    map,
                    coder: Coder::Patched,
                    spatial_head: false,
                };
                let mut scratch = SampleScratch::default();
                sample_residuals::<u32>(
                    &data,
                    &g,
                    &tile,
                    &sample,
                    coding,
                    spatial,
                    columns.clone(),
                    &mut scratch,
                );
                let sampled = scratch.residuals;
                let whole: Vec<u32> = (sample.planes.iter())
                    .flat_map(|&plane| {
                        let piece = Tile {
                            plane0: plane,
                            plane1: plane + 1,
                            ..tile
                        };
                        let coded = residuals_of::<u32>(
                            &data,
                            &g,
                            &piece,
                            coding,
                            spatial,
                            columns.clone(),
                        );
                        coded[100 * columns.len()..116 * columns.len()].to_vec()
                    })
                    .collect();
                assert_eq!(sampled.len(), 2 * 16 * 32, "{predictor:?}");
                assert_eq!(sampled, whole, "{predictor:?}");
            }
        }
    }
}
