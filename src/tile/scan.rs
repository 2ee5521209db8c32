//! The Lorenzo restore's recurrence along a row, and the strided prefix sum it becomes
//! for the additive residual maps.

use crate::predict::residual::MapOp;
use crate::word::Word;

use super::spatial::lorenzo_prediction;

/// Restores `seg[i]` for `i` from `s` on, in order, from its residual `res[i]` and its
/// neighbour `s` values back (the first `s` values are restored already): Lorenzo's
/// `M::restore(res[i], pred[i] + seg[i - s] - pred[i - s])` with a time prediction
/// `pred`, or `M::restore(res[i], seg[i - s])` without one. Strides of 1, 2 and 4 keep
/// the last `s` values in registers and walk the slices in whole steps of `s`, with no
/// bounds check or index arithmetic per value.
///
/// For an additive map (see [`ResidualMap::is_additive`]) with a stride of 1, 2 or 4
/// the recurrence is a strided prefix sum of `M::restore(res[i], pred[i] - pred[i - s])`
/// (or `M::restore(res[i], 0)`): both passes vectorise, where the plain loop waits
/// for each value before the next.
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

/// Adds `seg[i - S]` to each `seg[i]` from `S` on, in order (wrapping): each value
/// becomes the sum of itself and every `S`-th value before it. Blocks of [`SCAN_LANES`]
/// values are summed in registers by doubling shifts, then the sums of the blocks before
/// (the carry) are added. `S` divides the lanes.
#[inline(always)]
fn strided_prefix_sum<T: Word, const S: usize>(seg: &mut [T]) {
    // The sums of the last block's final `S` values, repeated across the lanes.
    let mut carry = [T::default(); SCAN_LANES];
    let mut blocks = seg.chunks_exact_mut(SCAN_LANES);
    for block in &mut blocks {
        let mut x: [T; SCAN_LANES] = std::array::from_fn(|i| block[i]);
        let mut shift = S;
        while shift < SCAN_LANES {
            let before = x;
            for i in shift..SCAN_LANES {
                x[i] = x[i].wrapping_add(before[i - shift]);
            }
            shift *= 2;
        }
        // The block's own sums, repeated: computed before the carry is added, so the
        // only wait from one block to the next is the carry's one addition.
        let totals: [T; SCAN_LANES] = std::array::from_fn(|i| x[SCAN_LANES - S + i % S]);
        for (v, &c) in x.iter_mut().zip(&carry) {
            *v = v.wrapping_add(c);
        }
        block.copy_from_slice(&x);
        for (c, &t) in carry.iter_mut().zip(&totals) {
            *c = c.wrapping_add(t);
        }
    }
    let tail = blocks.into_remainder();
    for i in 0..tail.len() {
        let left = if i >= S { tail[i - S] } else { carry[i] };
        tail[i] = tail[i].wrapping_add(left);
    }
}

/// Values per block of [`strided_prefix_sum`]: a 512-bit register of 32-bit words.
const SCAN_LANES: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::residual::{RotateSubtractOp, SubtractOp, XorOp};

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
