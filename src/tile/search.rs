//! The coding search: with `auto`, each tile's predictor, residual map and spatial head
//! are chosen from an estimate on a sample of the tile's columns.

use crate::coder::Coder;
use crate::layout::{Dims, Geometry, Spatial, Tile, TARGET_TILE_WORDS};
use crate::predict::residual::ResidualMap;
use crate::predict::Predictor;
use crate::word::Word;

use super::header::Coding;
use super::residuals::residuals;

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
    /// Also try the general-purpose coder in full on a tile whose residuals repeat
    /// earlier blocks of the tile (archive mode: Zstandard's window spans a tile).
    pub generic_on_repeats: bool,
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
}

/// Fast mode's sampling: one 32-word group per row and segment. Half the words of
/// archive mode's made compression 5-10% faster at the same ratios on the shared HERA
/// files (the generated observation: 0.7686 -> 0.7689), measured.
const FAST_SAMPLING: Sampling = Sampling {
    words: 1 << 11,
    least: 32,
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
};
/// Column segments the sample is spread over.
const SAMPLE_SEGMENTS: usize = 8;

/// The candidate with the smallest estimated size on a sample of the tile: column
/// segments spread evenly across it, all rows. Greedy choice takes the best predictor
/// and map first, then decides on the spatial head for them.
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
    // Deep tiles are sampled over their middle rows only (of their first planes), so the
    // sample stays near `sampling.words` however many time steps a tile holds.
    let sample = sample_rows(tile, sampling);
    let rows = (sample.row1 - sample.row0) * (sample.plane1 - sample.plane0);
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
    let estimate = |coding: Coding| -> u64 {
        starts
            .iter()
            .map(|&start| {
                let residuals =
                    residuals::<T>(src, g, &sample, coding, spatial, start..start + width);
                coding.coder.estimate_bits(&residuals, dims)
            })
            .sum()
    };
    let best_of = |options: Vec<Coding>| {
        options
            .into_iter()
            .map(|c| (estimate(c), c))
            .min_by_key(|&(bits, _)| bits)
            .expect("at least one candidate")
            .1
    };
    if !candidates.greedy {
        return best_of(all);
    }
    let best = best_of(all.into_iter().filter(|c| !c.spatial_head).collect());
    best_of(
        (candidates.heads.iter())
            .map(|&spatial_head| Coding {
                spatial_head,
                ..best
            })
            .collect(),
    )
}

/// Fewest rows a sample keeps per plane (predictors with a history of up to 8 rows
/// settle within them).
const SAMPLE_MIN_ROWS: usize = 16;

/// The part of `tile` a coding's sample covers: all of it unless it has more rows than
/// `sampling.words` spreads over [`SAMPLE_SEGMENTS`] segments of `sampling.least` columns
/// (at least [`SAMPLE_MIN_ROWS`] of them), then as many of its middle rows, in its first
/// planes.
fn sample_rows(tile: &Tile, sampling: Sampling) -> Tile {
    let budget = (sampling.words / SAMPLE_SEGMENTS / sampling.least).max(SAMPLE_MIN_ROWS);
    let rows = (tile.row1 - tile.row0).min(budget);
    let planes = (tile.plane1 - tile.plane0).min(budget / rows).max(1);
    let row0 = tile.row0 + (tile.row1 - tile.row0 - rows) / 2;
    Tile {
        row0,
        row1: row0 + rows,
        plane1: tile.plane0 + planes,
        ..*tile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(sample_rows(&tile(1, 8), FAST_SAMPLING), tile(1, 8));
        assert_eq!(sample_rows(&tile(4, 8), FAST_SAMPLING), tile(2, 8));
        let deep = sample_rows(&tile(1, 128), FAST_SAMPLING);
        assert_eq!((deep.row0, deep.row1), (10 + 56, 10 + 72));
        // Archive mode: 4096 words over 8-column segments is 64 rows.
        let deep = sample_rows(&tile(3, 128), ARCHIVE_SAMPLING);
        assert_eq!((deep.row0, deep.row1, deep.plane1), (10 + 32, 10 + 96, 4));
        assert_eq!((deep.col0, deep.col1), (5, 900));
    }
}
