//! Decoding a tile: the coder's residuals restored row by row into the chunk's words.

use crate::checksum::RowDigest;
use crate::error::{Error, Result};
use crate::layout::{Dims, Geometry, Spatial, Tile};
use crate::predict::residual::{by_map, MapOp};
use crate::predict::{flat, RowPredictor};
use crate::word::Word;

use super::header::Coding;
use super::header::{parse_coding, TILE_HEADER_LEN};
use super::scan::restore_runs;

/// Mutable access to the rows of one tile being decoded, wherever they lie in memory.
pub trait TileRows {
    /// The first `len` bytes of row `j` of the tile's plane `k`; when the rows are
    /// [`contiguous`](TileRows::contiguous), `len` may reach into the rows after.
    fn row(&mut self, k: usize, j: usize, len: usize) -> &mut [u8];
    /// Whether each plane's rows follow one another in memory.
    fn contiguous(&self) -> bool;
}

/// Tile rows at fixed strides in one buffer (tiles that span whole rows).
pub struct StridedRows<'a> {
    /// The buffer, starting at the tile's first byte.
    pub buf: &'a mut [u8],
    /// Bytes from one row to the next.
    pub row_stride: usize,
    /// Bytes from one plane to the next.
    pub plane_stride: usize,
}

impl TileRows for StridedRows<'_> {
    fn row(&mut self, k: usize, j: usize, len: usize) -> &mut [u8] {
        let at = k * self.plane_stride + j * self.row_stride;
        &mut self.buf[at..at + len]
    }

    fn contiguous(&self) -> bool {
        true
    }
}

/// Tile rows as separate disjoint slices (tiles that split rows by columns; one plane).
pub struct RowSegments<'a> {
    /// The tile's rows in order.
    pub rows: Vec<&'a mut [u8]>,
}

impl TileRows for RowSegments<'_> {
    fn row(&mut self, _k: usize, j: usize, len: usize) -> &mut [u8] {
        &mut self.rows[j][..len]
    }

    fn contiguous(&self) -> bool {
        false
    }
}

/// Decodes tile number `index` from `payload` into `rows`; the tile's digest (see
/// [`crate::checksum::tile_digest`]), hashed row by row as they are written.
pub fn decode_tile<T: Word>(
    payload: &[u8],
    g: &Geometry,
    tile: &Tile,
    index: usize,
    rows: &mut impl TileRows,
    spatial: Spatial,
) -> Result<u64> {
    let corrupt = |reason| Error::corrupt_block(index, reason);
    let coding = parse_coding(payload).map_err(corrupt)?;
    T::with_scratch(|residuals| {
        // No need to zero the reused words: every coder writes each value it decodes
        // (the coders' shared tests decode into a buffer of ones).
        residuals.resize(g.tile_words(tile), T::default());
        coding
            .coder
            .decode(
                &payload[TILE_HEADER_LEN..],
                Dims::of(tile, spatial),
                residuals,
            )
            .map_err(corrupt)?;
        let args = (&mut residuals[..], g, tile, coding, spatial);
        let mut digest = RowDigest::new();
        // The restore loops compiled for the CPU's widest vectors.
        crate::isa::vectorised(
            #[inline(always)]
            || by_map!(coding.map, M => restore_with::<T, M>(args, rows, &mut digest)),
        );
        Ok(digest.finish())
    })
}

type DecodeArgs<'a, T> = (&'a mut [T], &'a Geometry, &'a Tile, Coding, Spatial);

#[inline(always)]
fn restore_with<T: Word, M: MapOp>(
    (mut residuals, g, tile, coding, spatial): DecodeArgs<T>,
    rows: &mut impl TileRows,
    digest: &mut RowDigest,
) {
    let w = T::BYTES;
    let predictor = coding.predictor;
    let (lorenzo, spatial_first) = coding.spatial_rows(spatial);
    let mut rp = RowPredictor::<T>::new(predictor);
    // Narrow full rows: each plane's rows are contiguous, restored in one flat pass once
    // the predictor has its history (see the encoder's residuals).
    let full_rows = rows.contiguous() && tile.col0 == 0 && tile.col1 >= g.lag;
    let flat = flat::plane_pass(predictor, spatial_first, g.lag, full_rows);
    let plane_words = g.tile_plane_words(tile);
    for k in 0..tile.plane1 - tile.plane0 {
        rp.reset();
        let (plane, rest) = std::mem::take(&mut residuals).split_at_mut(plane_words);
        residuals = rest;
        let mut at = 0;
        for j in 0..tile.row1 - tile.row0 {
            let width = g.tile_row_width(tile, tile.row0 + j);
            if width == 0 {
                break;
            }
            if let Some(history) = flat.filter(|&h| j == h) {
                // The rows so far hold their mapped words: the history of the rest.
                flat::restore_in_place::<T, M>(predictor, plane, g.lag, history);
                let out = rows.row(k, j, (plane_words - at) * w);
                for (dst, &m) in out.chunks_exact_mut(w).zip(&plane[at..]) {
                    M::from_int(m).store(dst);
                }
                digest.update(out);
                break;
            }
            let r = &mut plane[at..at + width];
            at += width;
            let out = rows.row(k, j, width * w);
            let cur =
                restore_row::<T, M>(&mut rp, r, out, tile.col0, spatial, lorenzo, spatial_first);
            digest.update(out);
            if flat.is_some() {
                r.copy_from_slice(&cur);
            }
            rp.observe(cur);
        }
    }
}

/// Restores the next row from its residuals `r` and the predictor's prediction, stores
/// its words in `out` and returns its mapped words (the predictor's next history row).
#[inline(always)]
fn restore_row<T: Word, M: MapOp>(
    rp: &mut RowPredictor<T>,
    r: &[T],
    out: &mut [u8],
    col0: usize,
    spatial: Spatial,
    lorenzo: bool,
    spatial_first: bool,
) -> Vec<T> {
    let (w, width) = (T::BYTES, r.len());
    // Every arm below writes all `width` values of `cur`.
    let mut cur = rp.take_row(width);
    // Whether the arm stored the row already.
    let stored = match rp.predict(width) {
        None if spatial_first => {
            restore_runs::<T, M>(&mut cur, r, None, col0, spatial);
            false
        }
        None => {
            for (v, &r) in cur.iter_mut().zip(r) {
                *v = M::restore(r, T::default());
            }
            false
        }
        Some(p) if lorenzo => {
            restore_runs::<T, M>(&mut cur, r, Some(p), col0, spatial);
            false
        }
        Some(p) => {
            // The common case: restore, keep for the next prediction and store in one
            // pass.
            let restored = cur.iter_mut().zip(r).zip(p);
            for (((v, &r), &p), dst) in restored.zip(out.chunks_exact_mut(w)) {
                *v = M::restore(r, p);
                M::from_int(*v).store(dst);
            }
            true
        }
    };
    if !stored {
        for (dst, &m) in out.chunks_exact_mut(w).zip(&cur) {
            M::from_int(m).store(dst);
        }
    }
    cur
}
