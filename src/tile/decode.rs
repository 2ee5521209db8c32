//! Decoding a tile: the coder's residuals restored row by row into the chunk's words.

use crate::checksum::RowDigest;
use crate::error::{Error, Result};
use crate::layout::{Dims, Geometry, Spatial, Tile};
use crate::predict::residual::{MapOp, ResidualMap, RotateSubtractOp, SubtractOp, XorOp};
use crate::predict::RowPredictor;
use crate::word::Word;

use super::header::Coding;
use super::header::{parse_coding, TILE_HEADER_LEN};
use super::scan::recur;
use super::spatial::runs;

/// Mutable access to the rows of one tile being decoded, wherever they lie in memory.
pub trait TileRows {
    /// The first `len` bytes of row `j` of the tile's plane `k`.
    fn row(&mut self, k: usize, j: usize, len: usize) -> &mut [u8];
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
}

/// Decodes tile number `index` from `payload` into `rows`; the tile's digest (see
/// [`crate::format::tile_digest`]), hashed row by row as they are written.
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
        let args = (&residuals[..], g, tile, coding, spatial);
        let mut digest = RowDigest::new();
        // The restore loops compiled for the CPU's widest vectors.
        crate::isa::vectorised(
            #[inline(always)]
            || match coding.map {
                ResidualMap::Xor => restore_with::<T, XorOp>(args, rows, &mut digest),
                ResidualMap::RotateSubtract => {
                    restore_with::<T, RotateSubtractOp>(args, rows, &mut digest)
                }
                ResidualMap::Subtract => restore_with::<T, SubtractOp>(args, rows, &mut digest),
            },
        );
        Ok(digest.finish())
    })
}

type DecodeArgs<'a, T> = (&'a [T], &'a Geometry, &'a Tile, Coding, Spatial);

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
    for k in 0..tile.plane1 - tile.plane0 {
        rp.reset();
        for j in 0..tile.row1 - tile.row0 {
            let width = g.tile_row_width(tile, tile.row0 + j);
            if width == 0 {
                break;
            }
            let (r, rest) = residuals.split_at(width);
            residuals = rest;
            // Every arm below writes all `width` values of `cur`.
            let mut cur = rp.take_row(width);
            let out = rows.row(k, j, width * w);
            let s = spatial.stride;
            // Whether the arm stored the row already.
            let stored = match rp.predict(width) {
                None if spatial_first => {
                    for run in runs(tile.col0, width, spatial) {
                        let (seg, res) = (&mut cur[run.clone()], &r[run]);
                        let head = s.min(seg.len());
                        for (v, &r) in seg.iter_mut().zip(res).take(head) {
                            *v = M::restore(r, T::default());
                        }
                        recur::<T, M>(seg, s, res, None);
                    }
                    false
                }
                None => {
                    for (v, &r) in cur.iter_mut().zip(r) {
                        *v = M::restore(r, T::default());
                    }
                    false
                }
                Some(p) if lorenzo => {
                    for run in runs(tile.col0, width, spatial) {
                        let (seg, res, p) = (&mut cur[run.clone()], &r[run.clone()], &p[run]);
                        let head = s.min(seg.len());
                        for ((v, &r), &p) in seg.iter_mut().zip(res).zip(p).take(head) {
                            *v = M::restore(r, p);
                        }
                        recur::<T, M>(seg, s, res, Some(p));
                    }
                    false
                }
                Some(p) => {
                    // The common case: restore, keep for the next prediction and store
                    // in one pass.
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
            digest.update(out);
            rp.observe(cur);
        }
    }
}
