//! The residuals of a tile's words: each mapped word against its prediction, row by row,
//! plane by plane (what the coder codes, and what the coding search estimates).

use std::ops::Range;

use crate::layout::{Geometry, Spatial, Tile};
use crate::predict::residual::{by_map, MapOp};
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
    by_map!(coding.map, M => residuals_with::<T, M>(args, out))
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
    let flat = flat::plane_pass(predictor, spatial_first, g.lag, full_rows);
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
                Some(p) => along_runs::<T, M>(&cur, Some(p), dst, spatial, cols.start),
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
        None if spatial_first => along_runs::<T, M>(cur, None, dst, spatial, col0),
        None => {
            for (d, &m) in dst.iter_mut().zip(cur) {
                *d = M::residual(m, T::default());
            }
        }
    }
}

/// Writes into `dst` the residuals of the mapped row `cur` (starting at column `col0`)
/// predicted from the neighbour `spatial.stride` (above 0) back within runs of the
/// innermost axis (see [`runs`]): by Lorenzo's prediction with the time prediction
/// `prediction`, else by the neighbour alone; each run's first `stride` words, which
/// have no neighbour, by the time prediction alone (zero without one). Every word is
/// first coded as if it had a neighbour, in one pass that vectorises, and the runs'
/// first words are then coded again: runs of a few polarisations make a loop per run
/// cost more than its words.
fn along_runs<T: Word, M: MapOp>(
    cur: &[T],
    prediction: Option<&[T]>,
    dst: &mut [T],
    spatial: Spatial,
    col0: usize,
) {
    let (s, width) = (spatial.stride, cur.len());
    let s = s.min(width);
    let (later, left) = (&cur[s..], &cur[..width - s]);
    match prediction {
        Some(p) => {
            let (now, back) = (&p[s..width], &p[..width - s]);
            let words = dst[s..].iter_mut().zip(later).zip(left).zip(now).zip(back);
            for ((((d, &m), &left), &now), &back) in words {
                *d = M::residual(m, lorenzo_prediction(now, left, back));
            }
        }
        None => {
            for ((d, &m), &left) in dst[s..].iter_mut().zip(later).zip(left) {
                *d = M::residual(m, left);
            }
        }
    }
    for run in runs(col0, width, spatial) {
        for c in run.start..(run.start + spatial.stride).min(run.end) {
            let time = prediction.map_or(T::default(), |p| p[c]);
            dst[c] = M::residual(cur[c], time);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::residual::{RotateSubtractOp, SubtractOp, XorOp};
    use crate::tile::spatial::row_cases;

    #[test]
    fn rows_along_runs_code_as_run_by_run() {
        // Every stride and run length, first runs cut part-way by the first column,
        // with and without a time prediction, against each run's words coded alone.
        fn check<M: MapOp>() {
            let word = |i: usize, k: u64| (i as u64 ^ k).wrapping_mul(0x9e37_79b9) as u32 >> 5;
            for (spatial, col0, width) in row_cases() {
                let stride = spatial.stride;
                let cur: Vec<u32> = (0..width).map(|i| word(i, 1)).collect();
                let time: Vec<u32> = (0..width).map(|i| word(i, 9)).collect();
                for p in [None, Some(&time[..])] {
                    let mut row = vec![7u32; width];
                    along_runs::<u32, M>(&cur, p, &mut row, spatial, col0);
                    let mut expected = vec![0u32; width];
                    for run in runs(col0, width, spatial) {
                        for c in run.clone() {
                            let now = p.map_or(0, |p| p[c]);
                            let predicted = if c >= run.start + stride {
                                let back = p.map_or(0, |p| p[c - stride]);
                                lorenzo_prediction(now, cur[c - stride], back)
                            } else {
                                now
                            };
                            expected[c] = M::residual(cur[c], predicted);
                        }
                    }
                    assert_eq!(row, expected, "{spatial:?} {col0} {width} {}", p.is_some());
                }
            }
        }
        check::<XorOp>();
        check::<SubtractOp>();
        check::<RotateSubtractOp>();
    }
}
