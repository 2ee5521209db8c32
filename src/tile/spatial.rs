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
