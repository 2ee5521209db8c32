//! Prediction along the innermost element axis: the runs of that axis a row crosses, and
//! Lorenzo's prediction from a neighbour.

use std::ops::Range;

use crate::layout::Spatial;
use crate::word::Word;

/// Lorenzo's prediction of a value from its time prediction `now`, its neighbour along
/// the innermost axis `left`, and the neighbour's time prediction `back`.
#[inline(always)]
pub(super) fn lorenzo_prediction<T: Word>(now: T, left: T, back: T) -> T {
    now.wrapping_add(left).wrapping_sub(back)
}

/// The runs of the innermost axis that columns `start..start + width` of a row cross,
/// as index ranges into those columns (one run of everything without such an axis).
pub(super) fn runs(
    start: usize,
    width: usize,
    spatial: Spatial,
) -> impl Iterator<Item = Range<usize>> {
    let run = if spatial.stride == 0 {
        usize::MAX
    } else {
        spatial.run
    };
    let first = (run - start % run).min(width);
    std::iter::once(0..first).chain(
        (first..width)
            .step_by(run.max(1))
            .map(move |at| at..(at + run).min(width)),
    )
}

/// Rows of runs for the tests of the codings along them: every stride and run length
/// (runs of one neighbour, short runs of a few, long runs), first runs cut part-way by
/// the row's first column, rows from empty to many runs long; as (spatial, first column,
/// width).
#[cfg(test)]
pub(super) fn row_cases() -> impl Iterator<Item = (Spatial, usize, usize)> {
    let shapes = [
        (1, 2),
        (2, 2),
        (2, 4),
        (1, 4),
        (1, 8),
        (4, 2),
        (1, 16),
        (2, 8),
        (8, 2),
        (1, 5),
        (4, 4),
        (2, 40),
        (1, 64),
        (8, 1),
    ];
    shapes.into_iter().flat_map(|(stride, axis)| {
        let spatial = Spatial {
            stride,
            run: stride * axis,
        };
        [0, 1, 3, 7, 64].into_iter().flat_map(move |col0| {
            [0, 1, 5, 31, 200]
                .into_iter()
                .map(move |width| (spatial, col0, width))
        })
    })
}
