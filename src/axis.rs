//! Which axis of a chunk its series run along: the caller's time axis is a hint, and
//! the encoder predicts along whichever axis a sample says predicts best.
//!
//! A chunk of one time step (a writer appending one dump per chunk) has nothing to
//! predict along time, but its neighbouring channels are close; a chunk laid out
//! baseline-major may be smoothest along its second axis. Every chunk header records
//! the axis and lag it was coded with, so decoders need nothing more.

use std::ops::Range;

use crate::layout::checked_product;
use crate::predict::residual::ResidualMap;
use crate::word::Word;

/// Words sampled per candidate axis: runs of [`RUN`] words spread over the chunk.
const SAMPLE_WORDS: usize = 1 << 13;
/// Length of one contiguous sample run.
const RUN: usize = 256;
/// An alternative axis must beat the caller's by this factor (in estimated bits, as
/// a fraction over 64) to be taken: near-ties keep the axis the caller named.
const MARGIN_64THS: u64 = 62;

/// A way to read a chunk as series: samples `lag` words apart within planes whose
/// first row is `time_axis`'s index 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Axis {
    /// Index of the axis in the shape.
    pub time_axis: usize,
    /// Words between successive samples (0: derived from the shape).
    pub lag: usize,
}

/// The axis to code `data` (words of `T`, shape `shape`) along: `hint` unless another
/// of the element axes `axes` (never a component axis) with more than one element is
/// estimated clearly cheaper with the previous-sample predictor and `map`.
pub fn choose<T: Word>(
    data: &[u8],
    shape: &[usize],
    axes: Range<usize>,
    hint: Axis,
    map: ResidualMap,
) -> Axis {
    let words = data.len() / T::BYTES;
    if words < 2 * RUN {
        return hint;
    }
    let candidates = axes
        .filter(|&k| k != hint.time_axis && shape[k] > 1)
        .map(|time_axis| Axis { time_axis, lag: 0 });
    let hint_bits = estimate::<T>(data, shape, hint, map);
    let mut best = (hint_bits.saturating_mul(MARGIN_64THS) / 64, hint);
    for axis in candidates {
        let bits = estimate::<T>(data, shape, axis, map);
        if bits < best.0 {
            best = (bits, axis);
        }
    }
    best.1
}

/// The axes of a chunk of rank `rank` that series may run along: all but a trailing
/// axis of `components` words per element (when above 1), and all but the leading
/// axis of a [`planar`](crate::planar) chunk's coded array, which holds its components.
pub fn element_axes(rank: usize, components: usize, planar: bool) -> Range<usize> {
    usize::from(planar)..rank - usize::from(components > 1)
}

/// Estimated bits of the sampled residuals of the previous-sample predictor along
/// `axis` (words with no earlier sample in their plane count as they are).
fn estimate<T: Word>(data: &[u8], shape: &[usize], axis: Axis, map: ResidualMap) -> u64 {
    let words = data.len() / T::BYTES;
    let after = checked_product(&shape[axis.time_axis + 1..]).unwrap_or(usize::MAX);
    let lag = if axis.lag == 0 {
        after.max(1)
    } else {
        axis.lag
    };
    let plane_len = checked_product(&shape[axis.time_axis..]).unwrap_or(words);
    let runs = (SAMPLE_WORDS / RUN).min(words / RUN).max(1);
    let word = |i: usize| T::load(&data[i * T::BYTES..]);
    let mut bits = 0u64;
    for r in 0..runs {
        let start = (words - RUN) * r / (runs - 1).max(1);
        for i in start..start + RUN {
            let x = word(i);
            let prediction = if i % plane_len.max(1) >= lag {
                word(i - lag)
            } else {
                T::default()
            };
            let residual = map.residual(map.to_int(x), map.to_int(prediction));
            bits += u64::from(residual.bit_length());
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
        values.flat_map(f32::to_le_bytes).collect()
    }

    #[test]
    fn one_time_step_chunks_are_predicted_along_frequency() {
        // (time 1, channel 2048, product 4): smooth along channels.
        let data = f32_bytes((0..2048 * 4).map(|i| {
            let (ch, p) = (i / 4, i % 4);
            (ch as f32 * 0.01).sin() * 100.0 + p as f32 * 37.0
        }));
        let hint = Axis {
            time_axis: 0,
            lag: 0,
        };
        let chosen = choose::<u32>(
            &data,
            &[1, 2048, 4],
            0..3,
            hint,
            ResidualMap::RotateSubtract,
        );
        assert_eq!(chosen.time_axis, 1);
    }

    #[test]
    fn series_smooth_along_time_keep_the_hint() {
        let data = f32_bytes((0..64 * 256).map(|i| {
            let (t, c) = (i / 256, i % 256);
            (c as f32 * 1.7).sin() * 1000.0 + t as f32 * 1e-3
        }));
        let hint = Axis {
            time_axis: 0,
            lag: 0,
        };
        let chosen = choose::<u32>(&data, &[64, 256], 0..2, hint, ResidualMap::RotateSubtract);
        assert_eq!(chosen, hint);
    }

    #[test]
    fn the_component_axis_is_never_chosen() {
        // Both components of each element equal, elements unrelated: along the
        // component axis every other word would be predicted exactly, but series never
        // run along it.
        let data = f32_bytes((0..4096u32).map(|i| (i / 2).wrapping_mul(2_654_435_761) as f32));
        let hint = Axis {
            time_axis: 0,
            lag: 0,
        };
        let chosen = choose::<u32>(
            &data,
            &[1, 2048, 2],
            element_axes(3, 2, false),
            hint,
            ResidualMap::RotateSubtract,
        );
        assert_ne!(chosen.time_axis, 2);
        // The same words as planes, (2, 1, 2048): the leading axis is the components'.
        let planes = crate::planar::split(&data, 4, 2);
        let hint = Axis {
            time_axis: 1,
            lag: 0,
        };
        let axes = element_axes(3, 1, true);
        let chosen = choose::<u32>(
            &planes,
            &[2, 1, 2048],
            axes,
            hint,
            ResidualMap::RotateSubtract,
        );
        assert_ne!(chosen.time_axis, 0);
    }
}
