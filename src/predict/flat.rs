//! Prediction of narrow rows a whole plane at a time.
//!
//! When a chunk's series run along an inner axis (a snapshot of one time step, say, whose
//! series run along frequency), a tile's rows are only a few words wide, and the
//! bookkeeping of [`RowPredictor`](super::RowPredictor) for each row costs more than the
//! arithmetic. Once a predictor has seen its full history, though, its prediction of a
//! word depends only on the words one, two, .. rows before it: with the rows contiguous
//! in one slice, the functions here apply the row predictor's formulas to every row from
//! that point on, reading the earlier rows in place. The results are identical to the
//! row predictor's (the tests compare them on every kind and map).

use super::predictor::Predictor;
use super::prefix_sum::{strided_prefix_sum, SCAN_LANES};
use super::residual::MapOp;
use super::rows::{lagrange_word, mean_pow2_word};
use crate::word::Word;

/// Widest rows that take the flat path: from here on the row predictor's per-row costs
/// are small against the row's arithmetic.
const MAX_FLAT_WIDTH: usize = 256;

/// The rows `kind` codes row by row before the flat pass takes each plane's remaining
/// rows, when it takes them: for rows of `width` words that are whole (`full_rows`, so a
/// plane's rows are contiguous) and narrow (any width without prediction, whose pass
/// maps each word alone), and a kind with a flat form ([`full_history`]; `spatial` as
/// there).
pub fn plane_pass(kind: Predictor, spatial: bool, width: usize, full_rows: bool) -> Option<usize> {
    full_history(kind, spatial)
        .filter(|&history| full_rows && (history == 0 || width <= MAX_FLAT_WIDTH))
}

/// Rows `kind` must have seen before it predicts every later row with one formula of
/// the rows before it, when it has such a form (the medians and Holt's smoothing take
/// the row path; so do Lorenzo and no prediction when `spatial`, i.e. when rows start
/// from their neighbour along the row). No prediction needs none: every word is mapped
/// alone.
pub fn full_history(kind: Predictor, spatial: bool) -> Option<usize> {
    match kind {
        Predictor::Zero if !spatial => Some(0),
        Predictor::Lagrange(n @ 1..=4) => Some(usize::from(n)),
        Predictor::Mean(n @ (2 | 4 | 8)) => Some(usize::from(n)),
        Predictor::Lorenzo if !spatial => Some(1),
        _ => None,
    }
}

/// Replaces each word of rows `from..` of `plane` by its residual (under map `M`)
/// against `kind`'s prediction from the rows before it, which hold mapped words. Rows
/// are `width` words long, the last one possibly shorter; `kind` must have a flat form
/// ([`full_history`]) of at most `from` rows. Rows are coded from the last back, so the
/// rows a prediction reads still hold words when it is made.
pub fn residuals_in_place<T: Word, M: MapOp>(
    kind: Predictor,
    plane: &mut [T],
    width: usize,
    from: usize,
) {
    dispatch::<T, M, false>(kind, plane, width, from);
}

/// Restores rows `from..` of `plane` in place: each residual (under map `M`) becomes
/// its mapped word, from `kind`'s prediction from the rows before it, which are
/// restored already. The inverse of [`residuals_in_place`].
pub fn restore_in_place<T: Word, M: MapOp>(
    kind: Predictor,
    plane: &mut [T],
    width: usize,
    from: usize,
) {
    dispatch::<T, M, true>(kind, plane, width, from);
}

/// Runs the pass of `kind` (residuals, or restores when `RESTORE`) compiled for the
/// CPU's widest vectors.
fn dispatch<T: Word, M: MapOp, const RESTORE: bool>(
    kind: Predictor,
    plane: &mut [T],
    width: usize,
    from: usize,
) {
    let history = full_history(kind, false).expect("a predictor with a flat form");
    assert!(from >= history && width > 0, "flat rows need their history");
    crate::isa::vectorised(
        #[inline(always)]
        || match kind {
            // Each word alone: the plane as one row.
            Predictor::Zero => {
                pass::<T, M, 0, RESTORE>(plane, plane.len().max(1), from, |[]| T::default())
            }
            Predictor::Lagrange(1) | Predictor::Lorenzo
                if RESTORE && M::ADDITIVE && prefix_sum_restore::<T, M>(plane, width, from) => {}
            Predictor::Lagrange(1) | Predictor::Lorenzo => {
                pass::<T, M, 1, RESTORE>(plane, width, from, |[a]| a)
            }
            Predictor::Lagrange(2) => pass::<T, M, 2, RESTORE>(plane, width, from, |[a, b]| {
                a.wrapping_add(a).wrapping_sub(b)
            }),
            Predictor::Lagrange(3) => pass::<T, M, 3, RESTORE>(plane, width, from, lagrange_word),
            Predictor::Lagrange(_) => pass::<T, M, 4, RESTORE>(plane, width, from, lagrange_word),
            Predictor::Mean(2) => mean_pass::<T, M, 2, RESTORE>(plane, width, from),
            Predictor::Mean(4) => mean_pass::<T, M, 4, RESTORE>(plane, width, from),
            _ => mean_pass::<T, M, 8, RESTORE>(plane, width, from),
        },
    );
}

/// Restores rows `from..` of `plane` (rows of `width` words) predicted from the row
/// above under an additive map `M`, when the width divides [`SCAN_LANES`]: each word is
/// its own part of the restore plus the word above, so the rows from `from - 1` on are
/// a prefix sum with a stride of the width, summed a register at a time where word by
/// word each row waits for the one above. Returns false, having done nothing, for other
/// widths.
#[inline(always)]
fn prefix_sum_restore<T: Word, M: MapOp>(plane: &mut [T], width: usize, from: usize) -> bool {
    if !SCAN_LANES.is_multiple_of(width) {
        return false;
    }
    let Some(seg) = plane.get_mut((from - 1) * width..) else {
        return true;
    };
    for v in seg.iter_mut().skip(width) {
        *v = M::restore(*v, T::default());
    }
    match width {
        1 => strided_prefix_sum::<T, 1>(seg),
        2 => strided_prefix_sum::<T, 2>(seg),
        4 => strided_prefix_sum::<T, 4>(seg),
        8 => strided_prefix_sum::<T, 8>(seg),
        _ => strided_prefix_sum::<T, 16>(seg),
    }
    true
}

/// [`pass`] against the mean of the `N` rows above each: rows of a few words by
/// [`narrow_mean_rows`] first.
#[inline(always)]
fn mean_pass<T: Word, M: MapOp, const N: usize, const RESTORE: bool>(
    plane: &mut [T],
    width: usize,
    from: usize,
) {
    let from = match width {
        1 => narrow_mean_rows::<T, M, N, 1, RESTORE>(plane, from),
        2 => narrow_mean_rows::<T, M, N, 2, RESTORE>(plane, from),
        4 => narrow_mean_rows::<T, M, N, 4, RESTORE>(plane, from),
        8 => narrow_mean_rows::<T, M, N, 8, RESTORE>(plane, from),
        16 => narrow_mean_rows::<T, M, N, 16, RESTORE>(plane, from),
        _ => from,
    };
    pass::<T, M, N, RESTORE>(plane, width, from, mean_pow2_word);
}

/// [`narrow_rows`] against the mean of the `N = 2^k` rows above, as [`mean_pow2_word`]
/// takes it (the sum of the words shifted right by `k`, plus the sum of their low `k`
/// bits shifted right by `k`), with both sums kept running down each column: a row adds
/// its own words and takes off those of the row `N` above it, where summing the `N`
/// rows anew costs `N` loads and additions a word. The sums wrap as
/// [`mean_pow2_word`]'s do, so they are the same. The words of the `N` rows above are
/// kept in a ring (coding overwrites the rows with residuals). Returns the first row it
/// left, as [`narrow_rows`] does.
#[inline(always)]
fn narrow_mean_rows<T: Word, M: MapOp, const N: usize, const W: usize, const RESTORE: bool>(
    plane: &mut [T],
    from: usize,
) -> usize {
    let rows = plane.len() / W;
    if from >= rows || from < N {
        return from;
    }
    let last = rows * W;
    if !RESTORE {
        // The last, partial row first, while the rows it reads still hold words.
        for c in 0..plane.len() - last {
            let column: [T; N] = std::array::from_fn(|k| plane[(rows - 1 - k) * W + c]);
            plane[last + c] = M::residual(plane[last + c], mean_pow2_word(column));
        }
    }
    let k = N.trailing_zeros();
    let low = T::from_u64((1 << k) - 1);
    // Slot `j` of the ring holds the words of the row `j` (mod `N`) rows after
    // `from - N`: when row `from + r` is reached, slot `r % N` holds the row `N` above.
    let mut ring: [[T; W]; N] = std::array::from_fn(|j| {
        plane[(from - N + j) * W..][..W]
            .try_into()
            .expect("a whole row")
    });
    let (mut high_sums, mut low_sums) = ([T::default(); W], [T::default(); W]);
    for row in &ring {
        for c in 0..W {
            high_sums[c] = high_sums[c].wrapping_add(row[c].shr_or_zero(k));
            low_sums[c] = low_sums[c].wrapping_add(row[c] & low);
        }
    }
    for (r, row) in plane[from * W..last].chunks_exact_mut(W).enumerate() {
        let oldest = &mut ring[r % N];
        for c in 0..W {
            let p = high_sums[c].wrapping_add(low_sums[c].shr_or_zero(k));
            let v = if RESTORE {
                M::restore(row[c], p)
            } else {
                row[c]
            };
            row[c] = if RESTORE { v } else { M::residual(v, p) };
            let o = oldest[c];
            high_sums[c] = high_sums[c]
                .wrapping_add(v.shr_or_zero(k))
                .wrapping_sub(o.shr_or_zero(k));
            low_sums[c] = low_sums[c].wrapping_add(v & low).wrapping_sub(o & low);
            oldest[c] = v;
        }
    }
    if RESTORE {
        rows
    } else {
        plane.len().div_ceil(W)
    }
}

/// Rows `from..` of `plane` coded (or restored) against `predict` of the `N` words
/// above each, most recent first.
#[inline(always)]
fn pass<T: Word, M: MapOp, const N: usize, const RESTORE: bool>(
    plane: &mut [T],
    width: usize,
    from: usize,
    predict: impl Fn([T; N]) -> T,
) {
    let rows = plane.len().div_ceil(width);
    // Rows of a few words: whole rows with the rows above in registers.
    let from = match width {
        1 => narrow_rows::<T, M, N, 1, RESTORE>(plane, from, &predict),
        2 => narrow_rows::<T, M, N, 2, RESTORE>(plane, from, &predict),
        4 => narrow_rows::<T, M, N, 4, RESTORE>(plane, from, &predict),
        8 => narrow_rows::<T, M, N, 8, RESTORE>(plane, from, &predict),
        16 => narrow_rows::<T, M, N, 16, RESTORE>(plane, from, &predict),
        _ => from,
    };
    for step in from..rows {
        // Restores run forwards (each row reads restored rows); residuals backwards
        // (each row reads rows that still hold words).
        let j = if RESTORE {
            step
        } else {
            rows - 1 - (step - from)
        };
        let at = j * width;
        let (before, row) = plane.split_at_mut(at);
        let n = row.len().min(width);
        let row = &mut row[..n];
        let above: [&[T]; N] = std::array::from_fn(|k| &before[at - (k + 1) * width..][..n]);
        for c in 0..n {
            let p = predict(std::array::from_fn(|k| above[k][c]));
            row[c] = if RESTORE {
                M::restore(row[c], p)
            } else {
                M::residual(row[c], p)
            };
        }
    }
}

/// [`pass`] over the whole rows from `from` on of rows `W` words wide, first to last,
/// keeping the `N` rows above each (their words, restored or not yet coded) in an array
/// instead of reading them back: each row's slices and bounds checks would cost more than
/// its few words. Returns the first row it left: the last, partial one, if any, when
/// restoring; none when coding (which codes the partial row first, before the rows it
/// reads hold residuals).
#[inline(always)]
fn narrow_rows<T: Word, M: MapOp, const N: usize, const W: usize, const RESTORE: bool>(
    plane: &mut [T],
    from: usize,
    predict: &impl Fn([T; N]) -> T,
) -> usize {
    let rows = plane.len() / W;
    if N == 0 || from >= rows {
        return from;
    }
    if !RESTORE {
        // The last, partial row first, while the rows it reads still hold words.
        let last = rows * W;
        for c in 0..plane.len() - last {
            let mut column = [T::default(); N];
            for (k, v) in column.iter_mut().enumerate() {
                *v = plane[(rows - 1 - k) * W + c];
            }
            plane[last + c] = M::residual(plane[last + c], predict(column));
        }
    }
    let mut above: [[T; W]; N] = std::array::from_fn(|k| {
        plane[(from - 1 - k) * W..][..W]
            .try_into()
            .expect("a whole row")
    });
    for row in plane[from * W..rows * W].chunks_exact_mut(W) {
        let mut words = [T::default(); W];
        for c in 0..W {
            let mut column = [T::default(); N];
            for (k, v) in column.iter_mut().enumerate() {
                *v = above[k][c];
            }
            let p = predict(column);
            if RESTORE {
                words[c] = M::restore(row[c], p);
                row[c] = words[c];
            } else {
                words[c] = row[c];
                row[c] = M::residual(row[c], p);
            }
        }
        for k in (1..N).rev() {
            above[k] = above[k - 1];
        }
        above[0] = words;
    }
    if RESTORE {
        rows
    } else {
        plane.len().div_ceil(W)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::residual::{RotateSubtractOp, SubtractOp, XorOp};
    use crate::predict::RowPredictor;

    /// Residuals of `plane` by the row predictor, row by row.
    fn row_residuals<T: Word, M: MapOp>(kind: Predictor, plane: &[T], width: usize) -> Vec<T> {
        let mut rp = RowPredictor::<T>::new(kind);
        let mut out = Vec::new();
        for row in plane.chunks(width) {
            let mut cur = rp.take_row(row.len());
            cur.copy_from_slice(row);
            match rp.predict(row.len()) {
                Some(p) => out.extend(row.iter().zip(p).map(|(&m, &p)| M::residual(m, p))),
                None => out.extend(row.iter().map(|&m| M::residual(m, T::default()))),
            }
            rp.observe(cur);
        }
        out
    }

    fn check<T: Word, M: MapOp>() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        // Every kind with a flat form.
        for (kind, history) in (Predictor::ALL.iter().chain(&[Predictor::Zero]))
            .filter_map(|&kind| Some((kind, full_history(kind, false)?)))
        {
            for width in [1, 2, 3, 4, 8, 16, 33] {
                for len in [history * width, 5 * width + 1, 12 * width, 12 * width - 1] {
                    // Extremes and noise, so the wrapping arithmetic is exercised.
                    let plane: Vec<T> = (0..len)
                        .map(|i| {
                            state = state
                                .wrapping_mul(6_364_136_223_846_793_005)
                                .wrapping_add(1);
                            T::from_u64(match i % 7 {
                                0 => u64::MAX,
                                1 => 0,
                                _ => state >> 7,
                            })
                        })
                        .collect();
                    let want = row_residuals::<T, M>(kind, &plane, width);
                    let mut flat = plane.clone();
                    residuals_in_place::<T, M>(kind, &mut flat, width, history);
                    let from = (history * width).min(len);
                    let head = &row_residuals::<T, M>(kind, &plane[..from], width);
                    flat[..from].copy_from_slice(head);
                    assert_eq!(
                        flat,
                        want,
                        "{kind:?} {} bits, width {width}, {len}",
                        T::BITS
                    );
                    // Restoring: the history rows hold words, the rest residuals.
                    let mut back = want.clone();
                    back[..from].copy_from_slice(&plane[..from]);
                    restore_in_place::<T, M>(kind, &mut back, width, history);
                    assert_eq!(
                        back,
                        plane,
                        "{kind:?} {} bits, width {width}, {len}",
                        T::BITS
                    );
                }
            }
        }
    }

    #[test]
    fn flat_passes_match_the_row_predictor() {
        check::<u32, XorOp>();
        check::<u32, SubtractOp>();
        check::<u64, RotateSubtractOp>();
        check::<u16, SubtractOp>();
        check::<u8, XorOp>();
    }

    #[test]
    fn kinds_without_a_flat_form_take_the_row_path() {
        assert_eq!(full_history(Predictor::Holt, false), None);
        assert_eq!(full_history(Predictor::Median(3), false), None);
        assert_eq!(full_history(Predictor::Lorenzo, true), None);
        assert_eq!(full_history(Predictor::Zero, true), None);
        assert_eq!(full_history(Predictor::Zero, false), Some(0));
        assert_eq!(full_history(Predictor::Mean(4), true), Some(4));
    }
}
