//! The Lorenzo restore's recurrence along a row, and the strided prefix sum it becomes
//! for the additive residual maps.

use crate::predict::prefix_sum::{strided_prefix_sum, SCAN_LANES};
use crate::predict::residual::MapOp;
use crate::word::Word;

use super::spatial::{lorenzo_prediction, runs};
use crate::layout::Spatial;

/// Restores `seg[i]` for `i` from `s` on, in order, from its residual `res[i]` and its
/// neighbour `s` values back (the first `s` values are restored already): Lorenzo's
/// `M::restore(res[i], pred[i] + seg[i - s] - pred[i - s])` with a time prediction
/// `pred`, or `M::restore(res[i], seg[i - s])` without one. Strides of 1, 2 and 4 keep
/// the last `s` values in registers and walk the slices in whole steps of `s`, with no
/// bounds check or index arithmetic per value.
///
/// For an additive map (see
/// [`ResidualMap::is_additive`](crate::predict::residual::ResidualMap::is_additive))
/// with a stride of 1, 2 or 4 the recurrence is a strided prefix sum of
/// `M::restore(res[i], pred[i] - pred[i - s])` (or `M::restore(res[i], 0)`): both passes
/// vectorise, where the plain loop waits for each value before the next.
#[inline(never)]
pub(super) fn recur<T: Word, M: MapOp>(seg: &mut [T], s: usize, res: &[T], pred: Option<&[T]>) {
    if M::ADDITIVE && matches!(s, 1 | 2 | 4) {
        return crate::isa::vectorised(
            #[inline(always)]
            || match s {
                1 => recur_additive::<T, M, 1>(seg, res, pred),
                2 => recur_additive::<T, M, 2>(seg, res, pred),
                _ => recur_additive::<T, M, 4>(seg, res, pred),
            },
        );
    }
    match s {
        1 => recur_by::<T, M, 1>(seg, res, pred),
        2 => recur_by::<T, M, 2>(seg, res, pred),
        4 => recur_by::<T, M, 4>(seg, res, pred),
        _ => {
            for i in s..seg.len() {
                let left = seg[i - s];
                let p = pred.map_or(left, |p| lorenzo_prediction(p[i], left, p[i - s]));
                seg[i] = M::restore(res[i], p);
            }
        }
    }
}

#[inline(always)]
fn recur_by<T: Word, M: MapOp, const S: usize>(seg: &mut [T], res: &[T], pred: Option<&[T]>) {
    let n = seg.len();
    let Some((first, rest)) = seg.split_first_chunk_mut::<S>() else {
        return;
    };
    let mut last = *first;
    let whole = (n - S) / S * S;
    let (body, tail) = rest.split_at_mut(whole);
    let res_body = &res[S..S + whole];
    match pred {
        None => {
            for (v, r) in body.chunks_exact_mut(S).zip(res_body.chunks_exact(S)) {
                for k in 0..S {
                    last[k] = M::restore(r[k], last[k]);
                    v[k] = last[k];
                }
            }
        }
        Some(p) => {
            let steps = body.chunks_exact_mut(S).zip(res_body.chunks_exact(S)).zip(
                p[S..S + whole]
                    .chunks_exact(S)
                    .zip(p[..whole].chunks_exact(S)),
            );
            for ((v, r), (now, back)) in steps {
                for k in 0..S {
                    let predicted = lorenzo_prediction(now[k], last[k], back[k]);
                    last[k] = M::restore(r[k], predicted);
                    v[k] = last[k];
                }
            }
        }
    }
    for (k, v) in tail.iter_mut().enumerate() {
        let i = S + whole + k;
        let predicted = pred.map_or(last[k], |p| lorenzo_prediction(p[i], last[k], p[i - S]));
        *v = M::restore(res[i], predicted);
    }
}

/// [`recur`] for an additive map and a stride `S` of 1, 2 or 4: each value's own part
/// of its restore first, then the strided prefix sum that adds the neighbours.
#[inline(always)]
fn recur_additive<T: Word, M: MapOp, const S: usize>(seg: &mut [T], res: &[T], pred: Option<&[T]>) {
    let n = seg.len();
    if n <= S {
        return;
    }
    let (seg_body, res_body) = (&mut seg[S..], &res[S..n]);
    match pred {
        None => {
            for (v, &r) in seg_body.iter_mut().zip(res_body) {
                *v = M::restore(r, T::default());
            }
        }
        Some(p) => {
            let steps = seg_body
                .iter_mut()
                .zip(res_body)
                .zip(&p[S..n])
                .zip(&p[..n - S]);
            for (((v, &r), &now), &back) in steps {
                *v = M::restore(r, now.wrapping_sub(back));
            }
        }
    }
    strided_prefix_sum::<T, S>(seg);
}

/// Runs of at least this many words are restored one after another by [`recur`]; in
/// shorter ones (an innermost axis of a few polarisations, say) the calls would cost
/// more than the words, so [`restore_runs`] restores the row in one loop.
const LONG_RUN: usize = 64;

/// Restores a row of columns `col0..col0 + res.len()` whose words are predicted from
/// their neighbour `spatial.stride` back within runs of the innermost axis (see
/// [`runs`]): a run's first `stride` words from `pred` alone (zero without one), the
/// others by Lorenzo's prediction (`pred`'s, plus the neighbour's value less its
/// prediction) or, without `pred`, from the neighbour alone. `spatial.stride` is above 0.
pub(super) fn restore_runs<T: Word, M: MapOp>(
    cur: &mut [T],
    res: &[T],
    pred: Option<&[T]>,
    col0: usize,
    spatial: Spatial,
) {
    let s = spatial.stride;
    if spatial.run >= LONG_RUN {
        for run in runs(col0, res.len(), spatial) {
            let (seg, r) = (&mut cur[run.clone()], &res[run.clone()]);
            let p = pred.map(|p| &p[run]);
            for (k, v) in seg.iter_mut().enumerate().take(s) {
                *v = M::restore(r[k], p.map_or(T::default(), |p| p[k]));
            }
            recur::<T, M>(seg, s, r, p);
        }
        return;
    }
    if M::ADDITIVE && short_runs_additive::<T, M>(cur, res, pred, col0, spatial) {
        return;
    }
    short_runs_word_by_word::<T, M>(cur, res, pred, col0, spatial);
}

/// [`restore_runs`] of short runs word by word, with each word's place in its run (the
/// first run may start part-way, see `runs`); a word waits only for its neighbour in the
/// same run.
fn short_runs_word_by_word<T: Word, M: MapOp>(
    cur: &mut [T],
    res: &[T],
    pred: Option<&[T]>,
    col0: usize,
    spatial: Spatial,
) {
    let s = spatial.stride;
    let run = spatial.run;
    let mut at = run - col0 % run;
    let mut c = 0;
    while c < res.len() {
        let end = at.min(res.len());
        let head = (c + s).min(end);
        match pred {
            Some(p) => {
                for i in c..head {
                    cur[i] = M::restore(res[i], p[i]);
                }
                for i in head..end {
                    cur[i] = M::restore(res[i], lorenzo_prediction(p[i], cur[i - s], p[i - s]));
                }
            }
            None => {
                for i in c..head {
                    cur[i] = M::restore(res[i], T::default());
                }
                for i in head..end {
                    cur[i] = M::restore(res[i], cur[i - s]);
                }
            }
        }
        c = end;
        at = end + run;
    }
}

/// [`restore_runs`] of short runs for an additive map, when the runs are 2, 4, 8 or 16
/// words long and their stride is below that: each run's restore is a prefix sum of
/// its words' own parts within the run (see [`recur`]), summed for [`SCAN_LANES`] words
/// (whole runs) at a time by doubling shifts that stop at run starts, which vectorises
/// where word by word each waits for its neighbour. Returns false, having done nothing,
/// for other runs.
fn short_runs_additive<T: Word, M: MapOp>(
    cur: &mut [T],
    res: &[T],
    pred: Option<&[T]>,
    col0: usize,
    spatial: Spatial,
) -> bool {
    let args = (cur, res, pred, col0, spatial);
    crate::isa::vectorised(
        #[inline(always)]
        || {
            match (spatial.stride, spatial.run) {
                (1, 2) => runs_in_blocks::<T, M, 1, 2>(args),
                (1, 4) => runs_in_blocks::<T, M, 1, 4>(args),
                (2, 4) => runs_in_blocks::<T, M, 2, 4>(args),
                (1, 8) => runs_in_blocks::<T, M, 1, 8>(args),
                (2, 8) => runs_in_blocks::<T, M, 2, 8>(args),
                (4, 8) => runs_in_blocks::<T, M, 4, 8>(args),
                (1, 16) => runs_in_blocks::<T, M, 1, 16>(args),
                (2, 16) => runs_in_blocks::<T, M, 2, 16>(args),
                (4, 16) => runs_in_blocks::<T, M, 4, 16>(args),
                (8, 16) => runs_in_blocks::<T, M, 8, 16>(args),
                _ => return false,
            }
            true
        },
    )
}

type RowArgs<'a, T> = (&'a mut [T], &'a [T], Option<&'a [T]>, usize, Spatial);

/// [`short_runs_additive`] for runs of `RUN` words and a stride of `S` (`S < RUN`,
/// `RUN` dividing [`SCAN_LANES`]): the first run when it starts part-way and the words
/// after the last whole block word by word, the blocks between by doubling shifts.
#[inline(always)]
fn runs_in_blocks<T: Word, M: MapOp, const S: usize, const RUN: usize>(
    (cur, res, pred, col0, spatial): RowArgs<T>,
) {
    let n = res.len();
    let first = ((RUN - col0 % RUN) % RUN).min(n);
    let whole = (n - first) / SCAN_LANES * SCAN_LANES;
    let body = first..first + whole;
    let part = |range: std::ops::Range<usize>| pred.map(|p| &p[range]);
    short_runs_word_by_word::<T, M>(
        &mut cur[..first],
        &res[..first],
        part(0..first),
        col0,
        spatial,
    );
    let blocks = cur[body.clone()]
        .chunks_exact_mut(SCAN_LANES)
        .zip(res[body.clone()].chunks_exact(SCAN_LANES));
    for (k, (block, r)) in blocks.enumerate() {
        let mut x = [T::default(); SCAN_LANES];
        for (v, &r) in x.iter_mut().zip(r) {
            *v = M::restore(r, T::default());
        }
        let mut shift = S;
        while shift < RUN {
            let before = x;
            for i in shift..SCAN_LANES {
                if i % RUN >= shift {
                    x[i] = x[i].wrapping_add(before[i - shift]);
                }
            }
            shift *= 2;
        }
        if let Some(p) = pred {
            let p = &p[body.start + k * SCAN_LANES..][..SCAN_LANES];
            for (v, &q) in x.iter_mut().zip(p) {
                *v = v.wrapping_add(q);
            }
        }
        block.copy_from_slice(&x);
    }
    let tail = body.end;
    short_runs_word_by_word::<T, M>(
        &mut cur[tail..],
        &res[tail..],
        part(tail..n),
        col0 + tail,
        spatial,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::residual::{RotateSubtractOp, SubtractOp, XorOp};
    use crate::tile::spatial::row_cases;

    #[test]
    fn rows_of_short_and_long_runs_restore_as_run_by_run() {
        // Every stride and run length (short and long), first runs cut part-way by
        // the tile's first column, with and without a time prediction; each run's words
        // restored as `recur` restores a run alone.
        fn check<M: MapOp>() {
            let word = |i: usize, k: u64| (i as u64 ^ k).wrapping_mul(0x9e37_79b9) as u32 >> 5;
            for (spatial, col0, width) in row_cases() {
                let stride = spatial.stride;
                let res: Vec<u32> = (0..width).map(|i| word(i, 1)).collect();
                let pred: Vec<u32> = (0..width).map(|i| word(i, 9)).collect();
                for p in [None, Some(&pred[..])] {
                    let mut row = vec![7u32; width];
                    restore_runs::<u32, M>(&mut row, &res, p, col0, spatial);
                    let mut expected = vec![0u32; width];
                    for run in runs(col0, width, spatial) {
                        let seg = &mut expected[run.clone()];
                        for (k, v) in seg.iter_mut().enumerate().take(stride) {
                            *v = M::restore(res[run.start + k], p.map_or(0, |p| p[run.start + k]));
                        }
                        let p = p.map(|p| &p[run.clone()]);
                        recur::<u32, M>(seg, stride, &res[run.clone()], p);
                    }
                    assert_eq!(row, expected, "{spatial:?} {col0} {width} {}", p.is_some());
                }
            }
        }
        check::<XorOp>();
        check::<SubtractOp>();
        check::<RotateSubtractOp>();
    }

    #[test]
    fn recurrences_of_every_stride_match_the_plain_loop() {
        // Lengths past several scan blocks, with every tail; both word sizes.
        fn check<T: Word, M: MapOp>(name: &str) {
            let word = |i: usize, k: u64| {
                T::from_u64((i as u64 ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 3)
            };
            for s in 1..=5 {
                for len in 0..100 {
                    let residuals: Vec<T> = (0..len).map(|i| word(i, 1)).collect();
                    let pred: Vec<T> = (0..len).map(|i| word(i, 7)).collect();
                    let head: Vec<T> = (0..len).map(|i| word(i, 3)).collect();
                    for lorenzo in [false, true] {
                        let mut fast = head.clone();
                        let p = lorenzo.then_some(&pred[..]);
                        recur::<T, M>(&mut fast, s, &residuals, p);
                        let mut plain = head.clone();
                        for i in s..len {
                            let left = plain[i - s];
                            let predicted = if lorenzo {
                                pred[i].wrapping_add(left).wrapping_sub(pred[i - s])
                            } else {
                                left
                            };
                            plain[i] = M::restore(residuals[i], predicted);
                        }
                        let bits = T::BITS;
                        assert_eq!(
                            fast, plain,
                            "{name} {bits}, stride {s}, length {len}, {lorenzo}"
                        );
                    }
                }
            }
        }
        check::<u32, XorOp>("xor");
        check::<u32, SubtractOp>("subtract");
        check::<u32, RotateSubtractOp>("rotate-subtract");
        check::<u64, XorOp>("xor");
        check::<u64, SubtractOp>("subtract");
        check::<u64, RotateSubtractOp>("rotate-subtract");
    }
}
