//! How a chunk's words are organised into series and into independently coded tiles.
//!
//! A chunk of shape `(d0, .., dk, .., dn)` with time axis `k` is a stack of
//! `planes = d0 * .. * d(k-1)` planes of `plane_len` words each. Within a plane, word `p`
//! is the sample that follows word `p - lag` of the same series, so a plane reads as a
//! matrix of `lag`-word rows (the last row may be shorter): each column is one series,
//! each row one time step.
//!
//! Tiles are the unit of parallelism: a tile is either a run of whole planes or a
//! rectangle of rows and columns of one plane. The tiling depends only on the geometry,
//! never on the thread count, so the output bytes never do either.

use crate::error::{Error, Result};
use crate::stream_error::{StreamError, TilingFault};

/// Words a tile aims to hold: big enough to amortise its header, small enough for cache.
pub const TARGET_TILE_WORDS: usize = 1 << 17;
/// Most words a tile may hold: a format limit that decoders enforce whatever tiling a
/// chunk records (the encoder's choice, [`Tiling::choose`], never exceeds it). It bounds
/// the decoded size of a hostile chunk whose entropy-coded tiles have no per-word floor.
pub const MAX_TILE_WORDS: usize = 1 << 17;
/// Fewest words fast mode aims at per tile when it cuts a chunk finer than
/// [`TARGET_TILE_WORDS`] so that the tiles of one chunk share the cores.
pub const FAST_MIN_TILE_WORDS: usize = 1 << 15;
/// Tiles fast mode aims to cut a chunk into, as long as they keep
/// [`FAST_MIN_TILE_WORDS`]: a chunk of one time step is otherwise one tile, coded by one
/// core.
pub const FAST_TILES_PER_CHUNK: usize = 4;

/// Archive mode cuts a chunk of more words than this that would be one tile into two, so
/// that two cores code and decode it (a chunk of one time step, say).
pub const ARCHIVE_MIN_SPLIT_WORDS: usize = 1 << 16;

/// Fewest words per row for which fast mode cuts a chunk finer than
/// [`TARGET_TILE_WORDS`]: shorter rows would cut it into bands of rows, which decode
/// row by row instead of a plane at a time (much slower for rows of 8 words, as fast
/// from rows of 32).
pub const FAST_MIN_SPLIT_LAG: usize = 32;

/// The words per tile fast mode aims at for a chunk of `words` words in rows of `lag`
/// words: a quarter of the chunk, from [`FAST_MIN_TILE_WORDS`] to [`TARGET_TILE_WORDS`];
/// the latter for a chunk that is one tile either way or whose rows are shorter than
/// [`FAST_MIN_SPLIT_LAG`].
pub fn fast_tile_target(words: usize, lag: usize) -> usize {
    if words <= FAST_MIN_TILE_WORDS || lag < FAST_MIN_SPLIT_LAG {
        return TARGET_TILE_WORDS;
    }
    (words / FAST_TILES_PER_CHUNK).clamp(FAST_MIN_TILE_WORDS, TARGET_TILE_WORDS)
}

/// Fewest rows a full-width tile may have before tiles are split by columns instead.
const MIN_TILE_ROWS: usize = 64;
/// Fewest columns of a column-split tile.
const MIN_TILE_COLS: usize = 256;

/// Tile dimensions of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    /// Whole planes per tile (more than 1 only when a tile spans full planes).
    pub planes_per_tile: usize,
    /// Rows per tile.
    pub tile_rows: usize,
    /// Columns (series) per tile.
    pub tile_cols: usize,
}

/// Where Lorenzo finds a word's neighbour along the innermost element axis: `stride`
/// words back, within runs of `run` words that start at multiples of `run` in a row.
/// A stride of 0 means there is no such axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spatial {
    /// Words between neighbours.
    pub stride: usize,
    /// Words per run of the innermost axis.
    pub run: usize,
}

impl Spatial {
    /// Lorenzo's neighbour along the innermost element axis of `shape` (words) with more
    /// than one element, when that axis comes after the time axis; `components` words
    /// make one element. Trailing axes of one element (HDF5's real numbers carry a
    /// component axis of length 1) are looked through.
    pub fn of_shape(shape: &[usize], time_axis: usize, components: usize) -> Spatial {
        let element_rank = shape.len() - usize::from(components > 1);
        let Some(mut inner) = element_rank.checked_sub(1) else {
            return Spatial::default();
        };
        while inner > time_axis && shape[inner] == 1 {
            inner -= 1;
        }
        if inner <= time_axis || shape[inner] == 0 {
            return Spatial::default();
        }
        Spatial::along(shape, inner)
    }

    /// The neighbour one index back along axis `axis` of `shape` (words): `stride` the
    /// words per index of that axis, runs of the axis's whole length.
    pub fn along(shape: &[usize], axis: usize) -> Spatial {
        let stride: usize = shape[axis + 1..].iter().product();
        Spatial {
            stride,
            run: shape[axis] * stride,
        }
    }
}

/// How a tile's residuals are laid out, for coders that model neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Words per row: the residual `width` back is the same series one step earlier.
    pub width: usize,
    /// Words between neighbouring elements of a row (the component count), at least 1.
    pub left: usize,
}

impl Dims {
    /// The layout of `tile`'s residuals.
    pub fn of(tile: &Tile, spatial: Spatial) -> Dims {
        Dims {
            width: tile.col1 - tile.col0,
            left: spatial.stride.max(1),
        }
    }
}

/// The series structure and tiling of one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Number of independent planes (product of the dimensions before the time axis).
    pub planes: usize,
    /// Words per plane.
    pub plane_len: usize,
    /// Words between two successive samples of one series.
    pub lag: usize,
    /// Tile dimensions.
    pub tiling: Tiling,
}

/// One independently coded tile: rows `row0..row1` and columns `col0..col1` of planes
/// `plane0..plane1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// First plane.
    pub plane0: usize,
    /// One past the last plane.
    pub plane1: usize,
    /// First row (time step) within each plane.
    pub row0: usize,
    /// One past the last row.
    pub row1: usize,
    /// First column (series).
    pub col0: usize,
    /// One past the last column.
    pub col1: usize,
}

impl Geometry {
    /// Derives the geometry of a chunk of `shape` words with the given time axis and lag
    /// (0 = product of the dimensions after the time axis), choosing the tiling.
    pub fn from_shape(shape: &[usize], time_axis: usize, lag: usize) -> Result<Geometry> {
        let planes = checked_product(&shape[..time_axis])?;
        let words = checked_product(shape)?;
        let plane_len = words.checked_div(planes).unwrap_or(0);
        let lag = if lag == 0 {
            checked_product(&shape[time_axis + 1..])?.max(1)
        } else {
            lag
        };
        if plane_len > 0 && lag > plane_len {
            return Err(Error::InvalidParams(format!(
                "lag {lag} exceeds the {plane_len} words of one time series plane"
            )));
        }
        let tiling = Tiling::choose(plane_len, lag, TARGET_TILE_WORDS, BANDED_COLUMNS);
        Ok(Geometry {
            planes,
            plane_len,
            lag,
            tiling,
        })
    }

    /// This geometry with the encoder's tiling for tiles of about `target` words (at
    /// most [`TARGET_TILE_WORDS`]).
    pub fn retiled(self, target: usize) -> Geometry {
        let target = target.clamp(1, TARGET_TILE_WORDS);
        Geometry {
            tiling: Tiling::choose(self.plane_len, self.lag, target, 1),
            ..self
        }
    }

    /// Archive mode's tiling of a chunk of more than [`ARCHIVE_MIN_SPLIT_WORDS`] words that
    /// this tiling leaves in one tile: the encoder's tiling for tiles of half the chunk,
    /// when that gives two tiles; else this geometry.
    pub fn in_two_tiles(self) -> Geometry {
        let words = self.words();
        if self.tile_count() != Some(1) || words <= ARCHIVE_MIN_SPLIT_WORDS {
            return self;
        }
        let two = Geometry {
            tiling: Tiling::choose(self.plane_len, self.lag, words.div_ceil(2), BANDED_COLUMNS),
            ..self
        };
        if two.tile_count() == Some(2) {
            two
        } else {
            self
        }
    }

    /// This geometry with its tiles of several planes cut so that none spans two groups
    /// of `group` consecutive planes (a planar chunk's components, whose statistics
    /// differ): the most planes per tile, up to the tiling's, that divide `group`.
    pub fn tiles_within_groups(self, group: usize) -> Geometry {
        if self.tiling.planes_per_tile <= 1 || group == 0 {
            return self;
        }
        let most = self.tiling.planes_per_tile.min(group);
        let planes_per_tile = (1..=most)
            .rev()
            .find(|p| group.is_multiple_of(*p))
            .unwrap_or(1);
        Geometry {
            tiling: Tiling {
                planes_per_tile,
                ..self.tiling
            },
            ..self
        }
    }

    /// This geometry with rows `data_rows..` of every plane (fill: see [`crate::fill`])
    /// in tiles apart from the rows before them: the same columns per tile, one plane per
    /// tile, and as many rows as before or, when fewer, as `data_rows` (narrowed, by at
    /// most half, to a count that divides `data_rows`). Unchanged when no such count
    /// exists or every row is before `data_rows`.
    pub fn rows_apart(self, data_rows: usize) -> Geometry {
        if data_rows == 0 || data_rows >= self.rows() {
            return self;
        }
        let most = self.tiling.tile_rows.min(data_rows);
        let Some(tile_rows) = (most.div_ceil(2)..=most)
            .rev()
            .find(|r| data_rows.is_multiple_of(*r))
        else {
            return self;
        };
        Geometry {
            tiling: Tiling {
                planes_per_tile: 1,
                tile_rows,
                ..self.tiling
            },
            ..self
        }
    }

    /// This geometry with tiles of at most `cols` columns (one plane each, the same rows).
    pub fn with_tile_cols(self, cols: usize) -> Geometry {
        Geometry {
            tiling: Tiling {
                planes_per_tile: 1,
                tile_rows: self.tiling.tile_rows.min(self.rows()),
                tile_cols: cols.clamp(1, self.lag),
            },
            ..self
        }
    }

    /// This geometry with the tiling a chunk header records instead of the encoder's
    /// choice, if a decoder may accept it: every dimension at least 1, tiles of several
    /// planes made of whole planes, and at most [`MAX_TILE_WORDS`] words in a tile.
    /// Decoders accept any such tiling, so a future encoder may tile differently.
    pub fn with_recorded_tiling(
        self,
        tiling: Tiling,
    ) -> std::result::Result<Geometry, StreamError> {
        let t = tiling;
        let bad = |fault| {
            Err(StreamError::BadTiling {
                planes: t.planes_per_tile,
                rows: t.tile_rows,
                cols: t.tile_cols,
                fault,
            })
        };
        if self.words() == 0 {
            return Ok(self);
        }
        if t.planes_per_tile == 0 || t.tile_rows == 0 || t.tile_cols == 0 {
            return bad(TilingFault::ZeroDimension);
        }
        let planes = t.planes_per_tile.min(self.planes);
        let rows = t.tile_rows.min(self.rows());
        let cols = t.tile_cols.min(self.lag);
        if planes > 1 && (rows < self.rows() || cols < self.lag) {
            return bad(TilingFault::PartialPlanes);
        }
        let words = Geometry { tiling, ..self }.full_tile_words();
        if words.is_none_or(|w| w > MAX_TILE_WORDS) {
            return bad(TilingFault::TooManyWords {
                limit: MAX_TILE_WORDS,
            });
        }
        Ok(Geometry { tiling, ..self })
    }

    /// The tiling of one tile that holds the whole chunk (the tiling of a one-tile chunk,
    /// format version 5).
    pub fn whole_tile(&self) -> Tiling {
        Tiling {
            planes_per_tile: self.planes.max(1),
            tile_rows: self.rows().max(1),
            tile_cols: self.lag.max(1),
        }
    }

    /// Words of a tile that no edge of the chunk cuts (the first tile's dimensions), or
    /// `None` if that overflows.
    pub fn full_tile_words(&self) -> Option<usize> {
        let t = &self.tiling;
        t.planes_per_tile
            .min(self.planes)
            .checked_mul(t.tile_rows.min(self.rows()))?
            .checked_mul(t.tile_cols.min(self.lag))
    }

    /// Total words in the chunk.
    pub fn words(&self) -> usize {
        self.planes * self.plane_len
    }

    /// Rows (time steps) per plane, the last possibly partial.
    pub fn rows(&self) -> usize {
        self.plane_len.div_ceil(self.lag)
    }

    /// Words in row `row` of a plane.
    pub fn row_len(&self, row: usize) -> usize {
        (self.plane_len - row * self.lag).min(self.lag)
    }

    /// True when every tile spans whole rows, so tiles are contiguous in memory.
    pub fn tiles_are_contiguous(&self) -> bool {
        self.tiling.tile_cols >= self.lag
    }

    /// Number of tiles, or `None` if it overflows.
    pub fn tile_count(&self) -> Option<usize> {
        if self.words() == 0 {
            return Some(0);
        }
        let t = &self.tiling;
        self.planes
            .div_ceil(t.planes_per_tile)
            .checked_mul(self.rows().div_ceil(t.tile_rows))?
            .checked_mul(self.lag.div_ceil(t.tile_cols))
    }

    /// All tiles in storage order: planes, then rows, then columns.
    pub fn tiles(&self) -> Vec<Tile> {
        let mut tiles = Vec::with_capacity(self.tile_count().unwrap_or(0));
        if self.words() == 0 {
            return tiles;
        }
        let t = self.tiling;
        let rows = self.rows();
        for plane0 in (0..self.planes).step_by(t.planes_per_tile) {
            let plane1 = (plane0 + t.planes_per_tile).min(self.planes);
            for row0 in (0..rows).step_by(t.tile_rows) {
                let row1 = (row0 + t.tile_rows).min(rows);
                for col0 in (0..self.lag).step_by(t.tile_cols) {
                    let col1 = (col0 + t.tile_cols).min(self.lag);
                    tiles.push(Tile {
                        plane0,
                        plane1,
                        row0,
                        row1,
                        col0,
                        col1,
                    });
                }
            }
        }
        tiles
    }

    /// Words of `tile` that lie in row `row` (the last row of a plane may be short).
    pub fn tile_row_width(&self, tile: &Tile, row: usize) -> usize {
        self.row_len(row).min(tile.col1).saturating_sub(tile.col0)
    }

    /// Words in `tile`.
    pub fn tile_words(&self, tile: &Tile) -> usize {
        self.tile_plane_words(tile) * (tile.plane1 - tile.plane0)
    }

    /// Words of `tile` in each of its planes.
    pub fn tile_plane_words(&self, tile: &Tile) -> usize {
        // Only a plane's last row may be short, so every row of the tile before its last
        // is as wide as the first: no pass over the rows (a chunk of one integration
        // may be one tile of thousands of short rows).
        let Some(last) = tile.row1.checked_sub(1).filter(|&last| last >= tile.row0) else {
            return 0;
        };
        (last - tile.row0) * self.tile_row_width(tile, tile.row0) + self.tile_row_width(tile, last)
    }

    /// The word ranges of `tile`'s rows in the chunk, plane by plane, row by row,
    /// leaving out rows the tile does not reach (a plane's short last row).
    pub fn tile_row_ranges<'a>(
        &'a self,
        tile: &'a Tile,
    ) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
        (tile.plane0..tile.plane1).flat_map(move |plane| {
            (tile.row0..tile.row1).filter_map(move |row| {
                let width = self.tile_row_width(tile, row);
                let at = self.offset(plane, row, tile.col0);
                (width > 0).then_some(at..at + width)
            })
        })
    }

    /// The word ranges that `tile` covers in the chunk, in order: a tile of whole rows
    /// as one range per plane (its rows follow one another in memory), any other tile
    /// row by row as [`Geometry::tile_row_ranges`]. The same words either way; a tile of
    /// many short rows (series along an inner axis) is then visited in a few long pieces.
    pub fn tile_spans<'a>(
        &'a self,
        tile: &'a Tile,
    ) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
        let whole_rows = tile.col0 == 0 && tile.col1 >= self.lag;
        let rows = if whole_rows {
            tile.row0..(tile.row0 + 1).min(tile.row1)
        } else {
            tile.row0..tile.row1
        };
        (tile.plane0..tile.plane1).flat_map(move |plane| {
            rows.clone().filter_map(move |row| {
                let at = self.offset(plane, row, tile.col0);
                let end = if whole_rows {
                    plane * self.plane_len + (tile.row1 * self.lag).min(self.plane_len)
                } else {
                    at + self.tile_row_width(tile, row)
                };
                (end > at).then_some(at..end)
            })
        })
    }

    /// Word offset of row `row`, column `col` of plane `plane` in the chunk.
    pub fn offset(&self, plane: usize, row: usize, col: usize) -> usize {
        plane * self.plane_len + row * self.lag + col
    }
}

/// Product of `dims`, or an error if it overflows.
pub fn checked_product(dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::InvalidParams(format!("shape {dims:?} overflows")))
}

/// The archive tiling's tiles narrower than their rows have a multiple of this many
/// columns, so that their rows cut into the bands of coder 11.
const BANDED_COLUMNS: usize = 32;

impl Tiling {
    /// Chooses tile dimensions for planes of `plane_len` words and rows of `lag` words,
    /// tiles of about `target` words (at most [`MAX_TILE_WORDS`]); tiles narrower than
    /// their rows get a multiple of `column_step` columns.
    pub fn choose(plane_len: usize, lag: usize, target: usize, column_step: usize) -> Tiling {
        let rows = plane_len.div_ceil(lag.max(1)).max(1);
        if plane_len <= target {
            return Tiling {
                planes_per_tile: (target / plane_len.max(1)).max(1),
                tile_rows: rows,
                tile_cols: lag,
            };
        }
        if lag * MIN_TILE_ROWS <= target {
            return Tiling {
                planes_per_tile: 1,
                tile_rows: target / lag,
                tile_cols: lag,
            };
        }
        let tile_cols = (target / rows).clamp(MIN_TILE_COLS, lag);
        let tile_cols = if tile_cols < lag {
            tile_cols / column_step * column_step
        } else {
            tile_cols
        };
        let tile_rows = (target / tile_cols).clamp(1, rows);
        Tiling {
            planes_per_tile: 1,
            tile_rows,
            tile_cols,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_chunks_of_one_tile_above_2_16_words_are_cut_in_two() {
        let tiles = |g: Geometry| (g.tiling.tile_rows, g.tiling.tile_cols, g.tile_count());
        // 2^16 words: one tile.
        let small = Geometry::from_shape(&[1, 1 << 16], 0, 0).unwrap();
        assert_eq!(tiles(small.in_two_tiles()), (1, 1 << 16, Some(1)));
        // One time step of 2^17 words: two tiles of half its columns.
        let step = Geometry::from_shape(&[1, 1 << 17], 0, 0).unwrap();
        assert_eq!(tiles(step), (1, 1 << 17, Some(1)));
        assert_eq!(tiles(step.in_two_tiles()), (1, 1 << 16, Some(2)));
        // Rows of 8 words: two bands of rows.
        let rows = Geometry::from_shape(&[8256, 8], 0, 0).unwrap();
        assert_eq!(tiles(rows.in_two_tiles()), (4128, 8, Some(2)));
        // Half the columns, rounded down to a multiple of 32, would make three tiles
        // (14976, 14976 and 48 columns): one tile.
        let odd = Geometry::from_shape(&[3, 30_000], 0, 0).unwrap();
        assert_eq!(tiles(odd.in_two_tiles()), (3, 30_000, Some(1)));
        // A chunk already in two tiles keeps them.
        let two = Geometry::from_shape(&[2, 1 << 17], 0, 0).unwrap();
        assert_eq!(tiles(two.in_two_tiles()), tiles(two));
    }

    #[test]
    fn archive_tiles_narrower_than_their_rows_have_a_multiple_of_32_columns() {
        // 2^17 / 60 rows = 2184 columns: 2176 in archive mode, 2184 retiled for fast mode.
        let g50 = Geometry::from_shape(&[50, 9216], 0, 0).unwrap();
        assert_eq!((g50.tiling.tile_rows, g50.tiling.tile_cols), (50, 2592));
        let g = Geometry::from_shape(&[60, 9216], 0, 0).unwrap();
        assert_eq!((g.tiling.tile_rows, g.tiling.tile_cols), (60, 2176));
        let g = g.retiled(TARGET_TILE_WORDS);
        assert_eq!((g.tiling.tile_rows, g.tiling.tile_cols), (60, 2184));
        // Whole rows are not cut.
        let g = Geometry::from_shape(&[1000, 1000], 0, 0).unwrap();
        assert_eq!((g.tiling.tile_rows, g.tiling.tile_cols), (131, 1000));
    }

    #[test]
    fn fast_mode_cuts_mid_sized_chunks_into_four_tiles() {
        let lag = FAST_MIN_SPLIT_LAG;
        assert_eq!(fast_tile_target(1 << 15, lag), TARGET_TILE_WORDS);
        assert_eq!(fast_tile_target((1 << 15) + 4, lag), FAST_MIN_TILE_WORDS);
        assert_eq!(fast_tile_target(1 << 17, lag), 1 << 15);
        assert_eq!(fast_tile_target(320_000, lag), 80_000);
        assert_eq!(fast_tile_target(1 << 19, lag), TARGET_TILE_WORDS);
        assert_eq!(fast_tile_target(1 << 30, lag), TARGET_TILE_WORDS);
        // Short rows: whole planes, decoded a plane at a time.
        assert_eq!(fast_tile_target(1 << 17, lag - 1), TARGET_TILE_WORDS);
        // A chunk of one time step of 2^17 words: four tiles of 2^15 columns.
        let g = Geometry::from_shape(&[1, 4096, 32], 0, 0)
            .unwrap()
            .retiled(fast_tile_target(1 << 17, lag));
        assert_eq!(g.tiles().len(), 4);
        assert_eq!(
            g.tiling,
            Tiling {
                planes_per_tile: 1,
                tile_rows: 1,
                tile_cols: 1 << 15
            }
        );
    }

    fn covered(g: &Geometry) -> Vec<u32> {
        let mut hits = vec![0u32; g.words()];
        for tile in g.tiles() {
            for words in g.tile_row_ranges(&tile) {
                for hit in &mut hits[words] {
                    *hit += 1;
                }
            }
        }
        hits
    }

    #[test]
    fn a_tiles_words_are_the_sum_of_its_rows_widths() {
        // Planes of 10 words in rows of 4 (the last row short, 2 words) and of 12 in
        // rows of 4 (none short), cut into tiles of every size of rows and columns.
        for plane_len in [10, 12] {
            for (tile_rows, tile_cols) in [(1, 4), (2, 4), (3, 4), (1, 3), (2, 1), (3, 2)] {
                let g = Geometry {
                    planes: 3,
                    plane_len,
                    lag: 4,
                    tiling: Tiling {
                        planes_per_tile: 1,
                        tile_rows,
                        tile_cols,
                    },
                };
                let tiles = g.tiles();
                for tile in &tiles {
                    let by_row: usize = (tile.row0..tile.row1)
                        .map(|r| g.tile_row_width(tile, r))
                        .sum();
                    assert_eq!(g.tile_plane_words(tile), by_row, "{g:?} {tile:?}");
                }
                let all: usize = tiles.iter().map(|t| g.tile_words(t)).sum();
                assert_eq!(all, 3 * plane_len, "{g:?}");
            }
        }
        let empty = Tile {
            plane0: 0,
            plane1: 1,
            row0: 2,
            row1: 2,
            col0: 0,
            col1: 4,
        };
        let g = Geometry::from_shape(&[3, 4], 0, 0).unwrap();
        assert_eq!(g.tile_plane_words(&empty), 0);
    }

    #[test]
    fn tiles_within_groups_never_span_two_groups() {
        // Twelve planes of 128 words: the encoder's tiling puts them in one tile.
        let g = Geometry::from_shape(&[12, 16, 8], 1, 0).unwrap();
        let planes_of = |g: &Geometry| -> Vec<usize> {
            g.tiles().iter().map(|t| t.plane1 - t.plane0).collect()
        };
        assert_eq!(planes_of(&g), vec![12]);
        for (group, tiles) in [
            (6, vec![6, 6]),
            (4, vec![4, 4, 4]),
            (5, vec![5, 5, 2]),
            (12, vec![12]),
            (24, vec![12]),
        ] {
            let cut = g.tiles_within_groups(group);
            assert_eq!(planes_of(&cut), tiles, "group {group}");
            assert!(covered(&cut).iter().all(|&hits| hits == 1), "group {group}");
            for tile in cut.tiles() {
                assert_eq!(tile.plane0 / group, (tile.plane1 - 1) / group, "{tile:?}");
            }
        }
        // Fewer planes per tile than a group: the largest that divides it.
        let four = g.retiled(4 * 128);
        assert_eq!(planes_of(&four), vec![4, 4, 4]);
        assert_eq!(planes_of(&four.tiles_within_groups(6)), vec![3; 4]);
        assert_eq!(planes_of(&four.tiles_within_groups(7)), vec![1; 12]);
        assert_eq!(planes_of(&four.tiles_within_groups(8)), vec![4, 4, 4]);
    }

    #[test]
    fn rows_apart_start_a_tile_at_the_first_row_of_fill() {
        let rows_of = |g: &Geometry| -> Vec<(usize, usize)> {
            g.tiles().iter().map(|t| (t.row0, t.row1)).collect()
        };
        // A chunk of 16 rows of 9216 words, 12 of data: the encoder's tiling cuts 8192
        // columns of all 16 rows, then the rest; apart, the data rows and the fill rows.
        let g = Geometry::from_shape(&[16, 9216], 0, 0).unwrap();
        assert_eq!(rows_of(&g), vec![(0, 16), (0, 16)]);
        let apart = g.rows_apart(12);
        assert_eq!(rows_of(&apart), vec![(0, 12), (0, 12), (12, 16), (12, 16)]);
        let cols: Vec<(usize, usize)> = apart.tiles().iter().map(|t| (t.col0, t.col1)).collect();
        assert_eq!(cols, [(0, 8192), (8192, 9216)].repeat(2));
        // Whole planes become one plane per tile.
        let planes = Geometry::from_shape(&[3, 16, 64], 1, 0).unwrap();
        assert_eq!(planes.tiles().len(), 1);
        let apart = planes.rows_apart(5);
        assert_eq!(
            rows_of(&apart),
            [(0, 5), (5, 10), (10, 15), (15, 16)].repeat(3)
        );
        assert!(covered(&apart).iter().all(|&hits| hits == 1));
        // Bands of 2048 rows of 64 words: 5000 data rows take bands of 1250.
        let long = Geometry::from_shape(&[6000, 64], 0, 0).unwrap();
        let apart = long.rows_apart(5000);
        assert_eq!(apart.tiling.tile_rows, 1250);
        assert!(apart.tiles().iter().any(|t| t.row0 == 5000));
        // No count within half of the band divides a prime number of rows: unchanged;
        // so when every row holds data.
        assert_eq!(long.rows_apart(4099), long);
        assert_eq!(g.rows_apart(16), g);
        assert_eq!(g.rows_apart(0), g);
    }

    #[test]
    fn tiles_cover_every_word_exactly_once() {
        let cases: &[(&[usize], usize, usize)] = &[
            (&[60, 36, 64, 2], 0, 0),
            (&[100, 36 * 64 * 2], 0, 36 * 64 * 2 * 3),
            (&[8, 4096, 16, 2], 0, 0),
            (&[4, 100, 64], 1, 0),
            (&[100_000, 3], 1, 0),
            (&[1 << 20], 0, 0),
            (&[1000, 1000], 0, 0),
            (&[7, 300_001], 0, 0),
            (&[3, 5, 7], 2, 2),
        ];
        for &(shape, axis, lag) in cases {
            let g = Geometry::from_shape(shape, axis, lag).unwrap();
            assert_eq!(g.tile_count(), Some(g.tiles().len()), "{shape:?}");
            assert!(covered(&g).iter().all(|&h| h == 1), "{shape:?} lag {lag}");
            let total: usize = g.tiles().iter().map(|t| g.tile_words(t)).sum();
            assert_eq!(total, g.words());
        }
    }

    #[test]
    fn tile_spans_are_the_tiles_rows_joined_where_they_follow_in_memory() {
        let cases: &[(&[usize], usize, usize)] = &[
            (&[2, 6, 4, 1536, 2], 3, 0),
            (&[60, 36, 64, 2], 0, 0),
            (&[4, 100, 64], 1, 0),
            (&[100_000, 3], 1, 0),
            (&[7, 300_001], 0, 0),
            (&[3, 5, 7], 2, 2),
        ];
        for &(shape, axis, lag) in cases {
            let g = Geometry::from_shape(shape, axis, lag).unwrap();
            for tile in g.tiles() {
                let words = |ranges: Vec<std::ops::Range<usize>>| -> Vec<usize> {
                    ranges.into_iter().flatten().collect()
                };
                let rows: Vec<_> = g.tile_row_ranges(&tile).collect();
                let spans: Vec<_> = g.tile_spans(&tile).collect();
                let whole_rows = tile.col0 == 0 && tile.col1 >= g.lag;
                let expected = if whole_rows {
                    tile.plane1 - tile.plane0
                } else {
                    rows.len()
                };
                assert_eq!(spans.len(), expected, "{shape:?} {tile:?}");
                assert_eq!(words(spans), words(rows), "{shape:?} {tile:?}");
            }
        }
    }

    #[test]
    fn default_lag_is_product_after_time_axis() {
        let g = Geometry::from_shape(&[10, 4, 3, 2], 1, 0).unwrap();
        assert_eq!((g.planes, g.plane_len, g.lag), (10, 24, 6));
    }

    #[test]
    fn lag_beyond_plane_is_rejected() {
        let err = Geometry::from_shape(&[4, 5], 0, 21).unwrap_err();
        assert_eq!(
            err.to_string(),
            "karoo: invalid parameters: lag 21 exceeds the 20 words of one time series plane"
        );
    }
}
