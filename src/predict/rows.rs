//! The predictors' arithmetic: each predicts the next row of a tile's series from the
//! rows it has seen.

use super::predictor::Predictor;
use crate::word::Word;

/// Fractional bits of Holt's fixed-point state.
const HOLT_FRACTION: u32 = 8;

/// Coefficients of Lagrange extrapolation through `n` equally spaced samples,
/// most recent first: (-1)^(i+1) * C(n, i+1).
fn lagrange_coefficients(n: usize) -> &'static [i64] {
    match n {
        1 => &[1],
        2 => &[2, -1],
        3 => &[3, -3, 1],
        _ => &[4, -6, 4, -1],
    }
}

/// Per-plane predictor state over rows of one tile.
pub struct RowPredictor<T: Word> {
    kind: Predictor,
    /// Earlier rows, most recent first.
    rows: Vec<Vec<T>>,
    /// A row buffer for the caller to fill, recycled from the oldest row.
    spare: Vec<T>,
    /// Holt level and trend per column, scaled by 2^HOLT_FRACTION.
    level: Vec<i128>,
    trend: Vec<i128>,
    prediction: Vec<T>,
    scratch: Vec<u64>,
}

impl<T: Word> RowPredictor<T> {
    /// A predictor of kind `kind` that has seen no rows.
    pub fn new(kind: Predictor) -> Self {
        RowPredictor {
            kind,
            rows: Vec::with_capacity(kind.history() + 1),
            spare: Vec::new(),
            level: Vec::new(),
            trend: Vec::new(),
            prediction: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Forgets every row seen (start of a new plane).
    pub fn reset(&mut self) {
        if let Some(row) = self.rows.pop() {
            self.spare = row;
        }
        self.rows.clear();
        self.level.clear();
        self.trend.clear();
    }

    /// A buffer of `len` values for the next row, to fill and hand to [`Self::observe`]:
    /// recycled from the oldest row, so its values are stale (overwrite every one).
    pub fn take_row(&mut self, len: usize) -> Vec<T> {
        let mut buffer = std::mem::take(&mut self.spare);
        buffer.resize(len, T::default());
        buffer
    }

    /// The prediction of the next row's first `n` columns, or `None` before any row
    /// (predict zero). For "previous" and Lorenzo this is the previous row itself. The
    /// loops run compiled for the CPU's widest vectors ([`crate::isa::vectorised`]).
    pub fn predict(&mut self, n: usize) -> Option<&[T]> {
        let seen = self.rows.len();
        if seen == 0 {
            return None;
        }
        if matches!(self.kind, Predictor::Lorenzo)
            || seen == 1 && !matches!(self.kind, Predictor::Holt)
        {
            return Some(&self.rows[0][..n]);
        }
        self.prediction.resize(n, T::default());
        let out = &mut self.prediction[..];
        let (kind, rows) = (self.kind, &self.rows);
        let (level, trend, scratch) = (&self.level, &self.trend, &mut self.scratch);
        crate::isa::vectorised(
            #[inline(always)]
            || match kind {
                Predictor::Lagrange(_) => {
                    let coefficients = lagrange_coefficients(seen);
                    let (h0, h1) = (&rows[0][..n], &rows[1][..n]);
                    if seen == 2 {
                        for ((o, &a), &b) in out.iter_mut().zip(h0).zip(h1) {
                            *o = a.wrapping_add(a).wrapping_sub(b);
                        }
                    } else {
                        for (c, o) in out.iter_mut().enumerate() {
                            let mut acc = T::default();
                            for (row, &k) in rows.iter().zip(coefficients) {
                                acc = acc.wrapping_add(T::from_u64(
                                    row[c].to_u64().wrapping_mul(k as u64),
                                ));
                            }
                            *o = acc;
                        }
                    }
                }
                Predictor::Mean(_) => mean(rows, out),
                Predictor::Median(_) => median(rows, out, scratch),
                Predictor::Holt => {
                    for ((o, &level), &trend) in out.iter_mut().zip(level).zip(trend) {
                        *o = T::from_u64(((level + trend) >> HOLT_FRACTION) as u64);
                    }
                }
                Predictor::Lorenzo | Predictor::Zero => unreachable!("handled above"),
            },
        );
        Some(&self.prediction[..n])
    }

    /// Records the actual (mapped) row that followed.
    pub fn observe(&mut self, row: Vec<T>) {
        if self.kind == Predictor::Zero {
            self.spare = row;
            return;
        }
        if self.kind == Predictor::Holt {
            self.observe_holt(&row);
        }
        if self.rows.len() == self.kind.history() {
            if let Some(oldest) = self.rows.pop() {
                self.spare = oldest;
            }
        }
        self.rows.insert(0, row);
    }

    fn observe_holt(&mut self, row: &[T]) {
        let value = |x: T| i128::from(x.to_u64()) << HOLT_FRACTION;
        if self.level.is_empty() {
            self.level = row.iter().map(|&x| value(x)).collect();
            self.trend = vec![0; row.len()];
            return;
        }
        for ((level, trend), &x) in self.level.iter_mut().zip(&mut self.trend).zip(row) {
            let forecast = *level + *trend;
            let new_level = forecast + (((value(x) - forecast) * 3) >> 2);
            *trend += (new_level - *level - *trend) >> 2;
            *level = new_level;
        }
    }
}

/// The first `n` columns of each of the `N` rows, as an array for the loops whose row
/// count is a constant.
#[inline(always)]
fn columns<T: Word, const N: usize>(rows: &[Vec<T>], n: usize) -> [&[T]; N] {
    std::array::from_fn(|j| &rows[j][..n])
}

/// Writes into `out` the integer mean of the first `out.len()` columns of `rows`,
/// column by column (truncated), for a history of 1 to 8 rows (more take a slower loop).
#[inline(always)]
fn mean<T: Word>(rows: &[Vec<T>], out: &mut [T]) {
    let n = out.len();
    match rows.len() {
        2 => mean_pow2::<T, 2>(columns(rows, n), out),
        4 => mean_pow2::<T, 4>(columns(rows, n), out),
        8 => mean_pow2::<T, 8>(columns(rows, n), out),
        3 => mean_by::<T, 3>(columns(rows, n), out),
        5 => mean_by::<T, 5>(columns(rows, n), out),
        6 => mean_by::<T, 6>(columns(rows, n), out),
        7 => mean_by::<T, 7>(columns(rows, n), out),
        _ => mean_of(rows, out),
    }
}

/// Writes into `out` the lower median of the first `out.len()` columns of `rows`,
/// column by column: the `(rows - 1) / 2`-th smallest as unsigned words. Histories of 2
/// to 5 rows (every median predictor's) are sorted by a network of minima and maxima,
/// which vectorises across columns; longer ones by sorting each column in `scratch`.
#[inline(always)]
fn median<T: Word>(rows: &[Vec<T>], out: &mut [T], scratch: &mut Vec<u64>) {
    let n = out.len();
    match rows.len() {
        2 => median_by::<T, 2>(columns(rows, n), out),
        3 => median_by::<T, 3>(columns(rows, n), out),
        4 => median_by::<T, 4>(columns(rows, n), out),
        5 => median_by::<T, 5>(columns(rows, n), out),
        _ => median_of(rows, out, scratch),
    }
}

/// The lower median of `N` rows by odd-even transposition sort: `N` rounds of
/// compare-exchanges on neighbours sort any `N` values, with no branch.
#[inline(always)]
fn median_by<T: Word, const N: usize>(rows: [&[T]; N], out: &mut [T]) {
    for (c, o) in out.iter_mut().enumerate() {
        let mut v: [T; N] = std::array::from_fn(|j| rows[j][c]);
        for round in 0..N {
            for i in (round % 2..N - 1).step_by(2) {
                let (low, high) = (v[i].min(v[i + 1]), v[i].max(v[i + 1]));
                (v[i], v[i + 1]) = (low, high);
            }
        }
        *o = v[(N - 1) / 2];
    }
}

/// The lower median of any number of rows, each column sorted in `scratch`.
fn median_of<T: Word>(rows: &[Vec<T>], out: &mut [T], scratch: &mut Vec<u64>) {
    for (c, o) in out.iter_mut().enumerate() {
        scratch.clear();
        scratch.extend(rows.iter().map(|row| row[c].to_u64()));
        scratch.sort_unstable();
        *o = T::from_u64(scratch[(rows.len() - 1) / 2]);
    }
}

/// The mean of `N = 2^k` rows in the words' own width: `floor(sum / 2^k)` is the sum
/// of the values shifted right by `k` plus the sum of their low `k` bits shifted right
/// by `k`, and neither sum overflows (`2^k` values below `2^(BITS - k)`).
#[inline(always)]
fn mean_pow2<T: Word, const N: usize>(rows: [&[T]; N], out: &mut [T]) {
    for (c, o) in out.iter_mut().enumerate() {
        *o = mean_pow2_word::<T, N>(std::array::from_fn(|j| rows[j][c]));
    }
}

/// The mean of `N = 2^k` words, as [`mean_pow2`] takes it column by column.
#[inline(always)]
pub(super) fn mean_pow2_word<T: Word, const N: usize>(values: [T; N]) -> T {
    let k = N.trailing_zeros();
    let low = T::from_u64((1 << k) - 1);
    let mut high_sum = T::default();
    let mut low_sum = T::default();
    for v in values {
        high_sum = high_sum.wrapping_add(v.shr_or_zero(k));
        low_sum = low_sum.wrapping_add(v & low);
    }
    high_sum.wrapping_add(low_sum.shr_or_zero(k))
}

/// Lagrange extrapolation through `N` words, most recent first, as the row predictor
/// computes it once it has seen `N` rows.
#[inline(always)]
pub(super) fn lagrange_word<T: Word, const N: usize>(values: [T; N]) -> T {
    let mut acc = T::default();
    for (v, &k) in values.iter().zip(lagrange_coefficients(N)) {
        acc = acc.wrapping_add(T::from_u64(v.to_u64().wrapping_mul(k as u64)));
    }
    acc
}

/// The mean of `N` rows (not a power of two: a history still filling up), summed in
/// 64 bits for words of up to 32 bits, in 128 bits for wider ones.
#[inline(always)]
fn mean_by<T: Word, const N: usize>(rows: [&[T]; N], out: &mut [T]) {
    for (c, o) in out.iter_mut().enumerate() {
        *o = if T::BITS <= 32 {
            let sum: u64 = rows.iter().map(|row| row[c].to_u64()).sum();
            T::from_u64(sum / N as u64)
        } else {
            let sum: u128 = rows.iter().map(|row| u128::from(row[c].to_u64())).sum();
            T::from_u64((sum / N as u128) as u64)
        };
    }
}

/// Writes into `out` the integer mean of `rows` column by column (truncated), summed in
/// 128 bits: any number of rows.
fn mean_of<T: Word>(rows: &[Vec<T>], out: &mut [T]) {
    let count = rows.len() as u128;
    for (c, o) in out.iter_mut().enumerate() {
        let sum: u128 = rows.iter().map(|row| u128::from(row[c].to_u64())).sum();
        *o = T::from_u64((sum / count) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn predict_after(kind: Predictor, rows: &[&[u32]]) -> Vec<u32> {
        let mut p = RowPredictor::<u32>::new(kind);
        for row in rows {
            p.observe(row.to_vec());
        }
        let n = rows.last().map_or(1, |r| r.len());
        p.predict(n).map_or(vec![0; n], <[u32]>::to_vec)
    }

    #[test]
    fn lagrange_extrapolates_polynomials_exactly() {
        assert_eq!(predict_after(Predictor::Lagrange(1), &[&[5], &[7]]), [7]);
        assert_eq!(predict_after(Predictor::Lagrange(2), &[&[5], &[7]]), [9]);
        assert_eq!(
            predict_after(Predictor::Lagrange(3), &[&[1], &[4], &[9]]),
            [16]
        );
        assert_eq!(
            predict_after(Predictor::Lagrange(4), &[&[1], &[8], &[27], &[64]]),
            [125]
        );
        // Fewer rows than the order: lower order.
        assert_eq!(predict_after(Predictor::Lagrange(4), &[&[3], &[5]]), [7]);
        assert_eq!(predict_after(Predictor::Lagrange(2), &[]), [0]);
        // Wrapping arithmetic, no overflow panic.
        assert_eq!(
            predict_after(Predictor::Lagrange(2), &[&[0], &[u32::MAX]]),
            [u32::MAX - 1]
        );
    }

    #[test]
    fn mean_median_and_holt() {
        assert_eq!(
            predict_after(Predictor::Mean(4), &[&[1], &[2], &[3], &[6]]),
            [3]
        );
        assert_eq!(
            predict_after(Predictor::Mean(2), &[&[1], &[2], &[3], &[6]]),
            [4]
        );
        assert_eq!(
            predict_after(Predictor::Median(3), &[&[9], &[1], &[5]]),
            [5]
        );
        assert_eq!(predict_after(Predictor::Median(5), &[&[9], &[1]]), [1]);
        assert_eq!(
            predict_after(Predictor::Mean(2), &[&[u32::MAX], &[u32::MAX]]),
            [u32::MAX]
        );
        // Holt on a straight line converges to extrapolating it (to within the
        // fixed point's truncation).
        let line: Vec<Vec<u32>> = (0..40u32).map(|t| vec![1000 + 10 * t]).collect();
        let rows: Vec<&[u32]> = line.iter().map(Vec::as_slice).collect();
        assert_eq!(predict_after(Predictor::Holt, &rows), [1399]);
        assert_eq!(predict_after(Predictor::Holt, &rows[..1]), [1000]);
        assert_eq!(predict_after(Predictor::Holt, &rows[..2]), [1009]);
    }

    #[test]
    fn means_of_every_history_length_match_a_wide_sum_at_every_word_size() {
        fn check<T: Word>() {
            let max = u64::MAX >> (64 - T::BITS);
            // Extremes (all ones, top bit, low bits set) and a spread of values.
            let column = |j: usize, c: usize| -> T {
                T::from_u64(match (j + c) % 5 {
                    0 => max,
                    1 => max >> 1 ^ max,
                    2 => max.wrapping_mul(c as u64 + 1) >> (j % 3),
                    3 => (c * 7 + j) as u64 & max,
                    _ => max - j as u64,
                })
            };
            for history in 1..=8 {
                let rows: Vec<Vec<T>> = (0..history)
                    .map(|j| (0..40).map(|c| column(j, c)).collect())
                    .collect();
                let mut out = vec![T::default(); 37];
                mean(&rows, &mut out);
                let mut wide = vec![T::default(); 37];
                mean_of(&rows, &mut wide);
                assert_eq!(out, wide, "{} bits, {history} rows", T::BITS);
            }
        }
        check::<u8>();
        check::<u16>();
        check::<u32>();
        check::<u64>();
    }

    #[test]
    fn medians_of_every_history_length_match_a_sort_at_every_word_size() {
        // Every arrangement of five values (ties and extremes among them) over the
        // history's rows, one arrangement per column.
        fn check<T: Word>() {
            let max = u64::MAX >> (64 - T::BITS);
            let values = [0, 1, 2, max >> 1 ^ max, max].map(T::from_u64);
            for history in 1..=6u32 {
                let columns = values.len().pow(history.min(5));
                let value = |j: u32, c: usize| values[c / values.len().pow(j % 5) % values.len()];
                let rows: Vec<Vec<T>> = (0..history)
                    .map(|j| (0..columns).map(|c| value(j, c)).collect())
                    .collect();
                let mut out = vec![T::default(); columns];
                median(&rows, &mut out, &mut Vec::new());
                for (c, &got) in out.iter().enumerate() {
                    let mut column: Vec<T> = rows.iter().map(|row| row[c]).collect();
                    column.sort_unstable();
                    let want = column[(column.len() - 1) / 2];
                    assert_eq!(got, want, "{} bits, {history} rows, {column:?}", T::BITS);
                }
            }
        }
        check::<u8>();
        check::<u16>();
        check::<u32>();
        check::<u64>();
    }

    #[test]
    fn ids_are_stable_and_unique() {
        for (i, p) in Predictor::ALL.iter().enumerate() {
            assert_eq!(p.id() as usize, i + 1);
            assert_eq!(Predictor::from_id(i as u32 + 1), Some(*p));
        }
        assert_eq!(Predictor::from_id(0), None);
        assert_eq!(Predictor::from_id(12), None);
        assert_eq!(Predictor::from_id(13), Some(Predictor::Zero));
        assert_eq!(Predictor::from_id(14), None);
    }

    #[test]
    fn zero_never_predicts() {
        let mut p = RowPredictor::<u32>::new(Predictor::Zero);
        for t in 0..5u32 {
            assert!(p.predict(1).is_none());
            let mut row = p.take_row(1);
            row[0] = t;
            p.observe(row);
        }
        assert!(p.rows.is_empty());
    }
}
