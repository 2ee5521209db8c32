//! The residuals of a tile's words: each mapped word against its prediction, row by row,
//! plane by plane (what the coder codes, and what the coding search estimates).

use std::ops::Range;

use crate::layout::{Geometry, Spatial, Tile};
use crate::predict::residual::{MapOp, ResidualMap, RotateSubtractOp, SubtractOp, XorOp};
use crate::predict::{flat, RowPredictor};
use crate::word::Word;

use super::header::Coding;
use super::spatial::{lorenzo_prediction, runs};

/// Residuals of columns `cols` of `tile`, row by row, plane by plane.
pub(super) fn residuals<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    coding: Coding,
    spatial: Spatial,
    cols: Range<usize>,
) -> Vec<T> {
    let mut out = Vec::new();
    residuals_into(src, g, tile, coding, spatial, cols, &mut out);
    out
}

/// [`residuals`] into `out` (cleared first).
pub(super) fn residuals_into<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    coding: Coding,
    spatial: Spatial,
    cols: Range<usize>,
    out: &mut Vec<T>,
) {
    out.clear();
    let args = (src, g, tile, coding, spatial, cols);
    match coding.map {
        ResidualMap::Xor => residuals_with::<T, XorOp>(args, out),
        ResidualMap::RotateSubtract => residuals_with::<T, RotateSubtractOp>(args, out),
        ResidualMap::Subtract => residuals_with::<T, SubtractOp>(args, out),
    }
}

type EncodeArgs<'a> = (
    &'a [u8],
    &'a Geometry,
    &'a Tile,
    Coding,
    Spatial,
    Range<usize>,
);

fn residuals_with<T: Word, M: MapOp>(
    (src, g, tile, coding, spatial, cols): EncodeArgs,
    out: &mut Vec<T>,
) {
    let w = T::BYTES;
    let predictor = coding.predictor;
    let (lorenzo, spatial_first) = coding.spatial_rows(spatial);
    out.reserve(g.tile_words(tile));
    let mut rp = RowPredictor::<T>::new(predictor);
    // Narrow full rows: each plane's rows are contiguous, coded in one flat pass once
    // the predictor has its history.
    let full_rows = cols.start == 0 && cols.end >= g.lag;
    let flat = flat::plane_pass(predictor, lorenzo, g.lag, full_rows);
    let plane_words = g.tile_plane_words(tile);
    for plane in tile.plane0..tile.plane1 {
        rp.reset();
        if let Some(history) = flat {
            let at = g.offset(plane, tile.row0, 0);
            let base = out.len();
            out.extend(
                src[at * w..(at + plane_words) * w]
                    .chunks_exact(w)
                    .map(|x| M::to_int(T::load(x))),
            );
            let rows = &mut out[base..];
            flat::residuals_in_place::<T, M>(predictor, rows, g.lag, history);
            // The first rows, with less history, in place by the row predictor.
            for row in rows.chunks_mut(g.lag).take(history) {
                let mut cur = rp.take_row(row.len());
                cur.copy_from_slice(row);
                row_residuals::<T, M>(rp.predict(row.len()), &cur, row, spatial_first, spatial, 0);
                rp.observe(cur);
            }
            continue;
        }
        for row in tile.row0..tile.row1 {
            let width = g.row_len(row).min(cols.end).saturating_sub(cols.start);
            if width == 0 {
                break;
            }
            let at = g.offset(plane, row, cols.start) * w;
            let words = src[at..at + width * w].chunks_exact(w);
            let mut cur = rp.take_row(width);
            let s = spatial.stride;
            let prediction = rp.predict(width);
            if let (Some(p), false) = (prediction, lorenzo) {
                // The common case in one pass: each word read once, kept as history and
                // its residual appended (not zeroed first).
                out.extend(cur.iter_mut().zip(words).zip(p).map(|((c, x), &p)| {
                    let m = M::to_int(T::load(x));
                    *c = m;
                    M::residual(m, p)
                }));
                rp.observe(cur);
                continue;
            }
            let start = out.len();
            out.resize(start + width, T::default());
            let dst = &mut out[start..];
            for (c, x) in cur.iter_mut().zip(words) {
                *c = M::to_int(T::load(x));
            }
            match prediction {
                // Lorenzo (the plain time prediction took the one-pass loop above).
                Some(p) => {
                    for run in runs(cols.start, width, spatial) {
                        let head = run.start..(run.start + s).min(run.end);
                        for c in head.clone() {
                            dst[c] = M::residual(cur[c], p[c]);
                        }
                        for c in head.end..run.end {
                            let predicted = lorenzo_prediction(p[c], cur[c - s], p[c - s]);
                            dst[c] = M::residual(cur[c], predicted);
                        }
                    }
                }
                None => row_residuals::<T, M>(None, &cur, dst, spatial_first, spatial, cols.start),
            }
            rp.observe(cur);
        }
    }
}

/// Writes into `dst` the residuals of the mapped row `cur` (starting at column `col0`)
/// against `prediction`, or with none, against zero or (`spatial_first`) the neighbour
/// along the innermost axis.
fn row_residuals<T: Word, M: MapOp>(
    prediction: Option<&[T]>,
    cur: &[T],
    dst: &mut [T],
    spatial_first: bool,
    spatial: Spatial,
    col0: usize,
) {
    match prediction {
        Some(p) => {
            for ((d, &m), &p) in dst.iter_mut().zip(cur).zip(p) {
                *d = M::residual(m, p);
            }
        }
        None if spatial_first => {
            let s = spatial.stride;
            for run in runs(col0, cur.len(), spatial) {
                for c in run.clone() {
                    let p = if c >= run.start + s {
                        cur[c - s]
                    } else {
                        T::default()
                    };
                    dst[c] = M::residual(cur[c], p);
                }
            }
        }
        None => {
            for (d, &m) in dst.iter_mut().zip(cur) {
                *d = M::residual(m, T::default());
            }
        }
    }
}
