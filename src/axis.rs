//! Which axis of a chunk its series run along: the caller's time axis is a hint, and
//! the encoder predicts along whichever axis a sample says predicts best; and which
//! axis after it gives each word its spatial neighbour (see [`choose`]).
//!
//! A chunk of one time step (a writer appending one dump per chunk) has nothing to
//! predict along time, but its neighbouring channels are close; a chunk laid out
//! baseline-major may be smoothest along its second axis. Every chunk header records
//! the axis and lag it was coded with, so decoders need nothing more.

use std::ops::Range;

use crate::layout::{checked_product, Spatial};
use crate::predict::residual::{by_map, MapOp, ResidualMap};
use crate::word::Word;

/// Words sampled per candidate axis: runs of [`RUN`] words spread over the chunk.
const SAMPLE_WORDS: usize = 1 << 13;
/// Words sampled per candidate axis are at most one in this many of the chunk's.
const AXIS_SAMPLE_SHARE: usize = 8;
/// Fewest runs a sample spreads over.
const MIN_RUNS: usize = 4;
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

/// The axis to code `data` (words of `T`, shape `shape`, elements of `components`
/// words) along and the spatial neighbour to code it with: `hint` unless another of the
/// element axes `axes` (never a component axis) with more than one element is
/// estimated clearly cheaper with the previous-sample predictor and `map` (each plane's
/// first row predicted by its spatial neighbour when `first_rows_spatial`, as archive
/// mode's spatial head does, else counted as it is); the
/// neighbour along the innermost element axis after it ([`Spatial::of_shape`]) unless
/// another element axis after it is estimated clearly cheaper.
///
/// The neighbour predicts the first row of each plane (and, with Lorenzo, every row)
/// and gives the archive coders' contexts their `left`. The innermost axis of a
/// visibility chunk is often its polarisation, whose products differ by orders of
/// magnitude, where the neighbouring channel of the same product is close.
pub fn choose<T: Word>(
    data: &[u8],
    shape: &[usize],
    axes: Range<usize>,
    hint: Axis,
    components: usize,
    map: ResidualMap,
    first_rows_spatial: bool,
) -> (Axis, Spatial) {
    let hint = past_unit_axis(hint, shape, &axes);
    let words = data.len() / T::BYTES;
    if words < 2 * RUN {
        return (hint, Spatial::of_shape(shape, hint.time_axis, components));
    }
    let sample = Sample::<T>::new(data, map, SAMPLE_WORDS, AXIS_SAMPLE_SHARE);
    let others = axes
        .clone()
        .filter(|&k| k != hint.time_axis && shape[k] > 1)
        .map(|time_axis| Axis { time_axis, lag: 0 });
    let axis = clearly_cheapest(hint, others, |axis| {
        let spatial = if first_rows_spatial {
            Spatial::of_shape(shape, axis.time_axis, components)
        } else {
            Spatial::default()
        };
        sample.previous_bits(shape, axis, spatial)
    });
    let default = Spatial::of_shape(shape, axis.time_axis, components);
    if default.stride == 0 {
        return (axis, default);
    }
    let sample = Sample::<T>::new(data, map, SPATIAL_SAMPLE_WORDS, SPATIAL_SAMPLE_SHARE);
    let others = axes
        .filter(|&k| k > axis.time_axis && shape[k] > 1)
        .map(|k| Spatial::along(shape, k))
        .filter(|s| *s != default && s.stride <= MAX_SPATIAL_STRIDE);
    let spatial = clearly_cheapest(default, others, |spatial| {
        sample.estimate(shape, axis, spatial)
    });
    (axis, spatial)
}

/// `hint`, or when its time axis has one element and its lag is derived from the shape
/// (every series would then be one sample long), the axis that time axis becomes once
/// the shape's axes of one element are dropped: the first element axis after it with
/// more than one element, else the last before it. A chunk is then coded the same
/// whatever axes of one element its shape carries (a snapshot of one integration,
/// stored with its time axis, is coded as its spectra are).
fn past_unit_axis(hint: Axis, shape: &[usize], axes: &Range<usize>) -> Axis {
    if hint.lag != 0 || shape.get(hint.time_axis) != Some(&1) {
        return hint;
    }
    let long = |k: &usize| shape[*k] > 1;
    let after = (hint.time_axis + 1..axes.end).find(long);
    let before = || (axes.start..hint.time_axis).rev().find(long);
    match after.or_else(before) {
        Some(time_axis) => Axis { time_axis, lag: 0 },
        None => hint,
    }
}

/// `default`, unless one of `others` is estimated (by `bits`) below [`MARGIN_64THS`]/64
/// of it; then the cheapest such (the first of equals).
fn clearly_cheapest<C: Copy>(
    default: C,
    others: impl Iterator<Item = C>,
    bits: impl Fn(C) -> u64,
) -> C {
    let mut best = (margin(bits(default)), default);
    for other in others {
        let estimate = bits(other);
        if estimate < best.0 {
            best = (estimate, other);
        }
    }
    best.1
}

/// Words sampled per candidate spatial neighbour, at most ...
const SPATIAL_SAMPLE_WORDS: usize = 1 << 11;
/// ... and at most one word in this many of the chunk: small chunks, which code fast,
/// are not to spend a large part of their time choosing.
const SPATIAL_SAMPLE_SHARE: usize = 32;

/// Farthest spatial neighbour (in words) the encoder chooses instead of the innermost
/// axis's: the coding search samples column segments of 32 words in fast mode, which
/// must reach a word's neighbour to see what it predicts.
const MAX_SPATIAL_STRIDE: usize = 16;

/// An alternative's estimate must be below this to be taken over `bits`' (see
/// [`MARGIN_64THS`]).
fn margin(bits: u64) -> u64 {
    bits.saturating_mul(MARGIN_64THS) / 64
}

/// The words a chunk's estimates look at: runs of [`RUN`] words spread over it, read as
/// the integers of `map`.
struct Sample<'a, T: Word> {
    data: &'a [u8],
    map: ResidualMap,
    words: usize,
    runs: usize,
    _word: std::marker::PhantomData<T>,
}

impl<'a, T: Word> Sample<'a, T> {
    /// About `most` words of `data` in runs, at most one in `share` of them but at least
    /// [`MIN_RUNS`] runs (all of a chunk of fewer), so that a small chunk's sample still
    /// spans its rows.
    fn new(data: &'a [u8], map: ResidualMap, most: usize, share: usize) -> Self {
        let words = data.len() / T::BYTES;
        Sample {
            data,
            map,
            words,
            runs: (most / RUN)
                .min(words / share / RUN)
                .max(MIN_RUNS.min(words / RUN))
                .max(1),
            _word: std::marker::PhantomData,
        }
    }

    /// The mapped integer of word `i` (for the estimates' word-by-word definitions).
    #[cfg(test)]
    fn int(&self, i: usize) -> T {
        self.map.to_int(T::load(&self.data[i * T::BYTES..]))
    }

    /// Bits of the residual of `m` against prediction `p` (for the same).
    #[cfg(test)]
    fn bits(&self, m: T, p: T) -> u64 {
        u64::from(self.map.residual(m, p).bit_length())
    }

    /// Words between samples of a series along `axis` and words per plane.
    fn lag_and_plane(&self, shape: &[usize], axis: Axis) -> (usize, usize) {
        let after = checked_product(&shape[axis.time_axis + 1..]).unwrap_or(usize::MAX);
        let lag = if axis.lag == 0 {
            after.max(1)
        } else {
            axis.lag
        };
        let plane_len = checked_product(&shape[axis.time_axis..])
            .unwrap_or(self.words)
            .max(1);
        (lag, plane_len)
    }

    /// The first word of each run.
    fn run_starts(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.runs).map(|r| (self.words - RUN) * r / (self.runs - 1).max(1))
    }

    /// Estimated bits of the sampled residuals of the previous-sample predictor along
    /// `axis`; words with no earlier sample in their plane (its first row) are predicted
    /// by their `spatial` neighbour, as the encoder's first rows may be, and count as
    /// they are where they have none.
    fn previous_bits(&self, shape: &[usize], axis: Axis, spatial: Spatial) -> u64 {
        by_map!(self.map, M => self.previous_bits_with::<M>(shape, axis, spatial))
    }

    /// [`Self::previous_bits`] under the map `M` (which is `self.map`): each run's words
    /// and their predictions gathered as integers first, then their residuals' bits
    /// summed in one loop compiled for the CPU's widest vectors.
    fn previous_bits_with<M: MapOp>(&self, shape: &[usize], axis: Axis, spatial: Spatial) -> u64 {
        let (lag, plane_len) = self.lag_and_plane(shape, axis);
        let zero = M::to_int(T::default());
        let mut words = [T::default(); RUN];
        let mut above = [T::default(); RUN];
        let mut bits = 0u64;
        for start in self.run_starts() {
            self.load_run::<M>(start, &mut words);
            // The word `lag` back of each (those before the chunk not loaded: they are
            // within their plane's first `lag`), then the mapped zero wherever there is
            // none in the plane.
            let before = lag.saturating_sub(start).min(RUN);
            if before < RUN {
                self.load_run::<M>(start + before - lag, &mut above[before..]);
            }
            let mut at = 0;
            let mut in_plane = start % plane_len;
            while at < RUN {
                let span = if in_plane < lag {
                    let span = (lag - in_plane).min(RUN - at);
                    let (s, run) = (spatial.stride, spatial.run.max(1));
                    for (j, p) in (at..at + span).zip(&mut above[at..at + span]) {
                        // The row's column is its place in the plane.
                        let column = in_plane + j - at;
                        *p = if s > 0 && column % run >= s {
                            M::to_int(T::load(&self.data[(start + j - s) * T::BYTES..]))
                        } else {
                            zero
                        };
                    }
                    span
                } else {
                    (plane_len - in_plane).min(RUN - at)
                };
                at += span;
                in_plane = (in_plane + span) % plane_len;
            }
            bits += crate::isa::vectorised(
                #[inline(always)]
                || {
                    (words.iter().zip(&above))
                        .map(|(&m, &p)| u64::from(M::residual(m, p).bit_length()))
                        .sum::<u64>()
                },
            );
        }
        bits
    }

    /// The mapped integers (under `M`) of the `out.len()` words from word `first`.
    #[inline(always)]
    fn load_run<M: MapOp>(&self, first: usize, out: &mut [T]) {
        let bytes = &self.data[first * T::BYTES..(first + out.len()) * T::BYTES];
        for (o, x) in out.iter_mut().zip(bytes.chunks_exact(T::BYTES)) {
            *o = M::to_int(T::load(x));
        }
    }

    /// Estimated bits per 2^16 words of coding the chunk (shape `shape`) along `axis`
    /// with the spatial neighbour `spatial`: a plane's first row predicted from the
    /// neighbour (words with none, or all words when there is no neighbour, count as
    /// they are), the other rows by the cheaper of the previous sample alone and
    /// Lorenzo's sum of it and the neighbour's difference, each weighted by its share of
    /// the rows.
    fn estimate(&self, shape: &[usize], axis: Axis, spatial: Spatial) -> u64 {
        by_map!(self.map, M => self.estimate_with::<M>(shape, axis, spatial))
    }

    /// [`Self::estimate`] under the map `M` (which is `self.map`): each run's words and
    /// their three predictions gathered as integers first, then their residuals' bits
    /// summed in one loop compiled for the CPU's widest vectors.
    fn estimate_with<M: MapOp>(&self, shape: &[usize], axis: Axis, spatial: Spatial) -> u64 {
        let (lag, plane_len) = self.lag_and_plane(shape, axis);
        let rows = plane_len.div_ceil(lag).max(1) as u64;
        let int = |i: usize| M::to_int(T::load(&self.data[i * T::BYTES..]));
        let (mut head, mut time, mut lorenzo, mut later) = (0u64, 0u64, 0u64, 0u64);
        let run = spatial.run.max(1);
        let mut words = [T::default(); RUN];
        // The neighbour (zero where there is none), the previous sample and Lorenzo's
        // prediction (the previous sample where there is no neighbour); `counted` is 1
        // where the word has a previous sample in its plane, else 0 (its `up` and
        // `corner` then do not count).
        let mut left = [T::default(); RUN];
        let mut up = [T::default(); RUN];
        let mut corner = [T::default(); RUN];
        let mut counted = [0u64; RUN];
        for start in self.run_starts() {
            self.load_run::<M>(start, &mut words);
            // Positions in the spatial run and in the plane, kept without a division
            // per word.
            let (mut in_run, mut in_plane) = (start % run, start % plane_len);
            for j in 0..RUN {
                let i = start + j;
                let neighbour = spatial.stride > 0 && in_run >= spatial.stride;
                left[j] = if neighbour {
                    int(i - spatial.stride)
                } else {
                    T::default()
                };
                if in_plane >= lag {
                    let previous = int(i - lag);
                    up[j] = previous;
                    // (With a lag that is not a multiple of the run, the word a
                    // neighbour's length back may lie before the chunk.)
                    corner[j] = match (i - lag).checked_sub(spatial.stride) {
                        Some(back) if neighbour => {
                            previous.wrapping_add(left[j]).wrapping_sub(int(back))
                        }
                        _ => previous,
                    };
                    counted[j] = 1;
                } else {
                    counted[j] = 0;
                }
                in_run += 1;
                if in_run == run {
                    in_run = 0;
                }
                in_plane += 1;
                if in_plane == plane_len {
                    in_plane = 0;
                }
            }
            let bits = |m: T, p: T| u64::from(M::residual(m, p).bit_length());
            let (h, t, l, n) = crate::isa::vectorised(
                #[inline(always)]
                || {
                    let mut sums = (0u64, 0u64, 0u64, 0u64);
                    for j in 0..RUN {
                        let (m, c) = (words[j], counted[j]);
                        sums.0 += bits(m, left[j]);
                        sums.1 += c * bits(m, up[j]);
                        sums.2 += c * bits(m, corner[j]);
                        sums.3 += c;
                    }
                    sums
                },
            );
            head += h;
            time += t;
            lorenzo += l;
            later += n;
        }
        let per_word = |b: u64, n: u64| (b << 16) / n.max(1);
        let sampled = (self.runs * RUN) as u64;
        per_word(head, sampled) / rows + per_word(time.min(lorenzo), later) * (rows - 1) / rows
    }
}

/// The axes of a chunk of rank `rank` that series may run along: all but a trailing
/// axis of `components` words per element (when above 1), and all but the leading
/// axis of a [`planar`](crate::planar) chunk's coded array, which holds its components.
pub fn element_axes(rank: usize, components: usize, planar: bool) -> Range<usize> {
    usize::from(planar)..rank - usize::from(components > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The previous-sample estimate and [`Sample::estimate`] word by word, as their
    /// definitions read.
    fn word_by_word<T: Word>(
        sample: &Sample<T>,
        shape: &[usize],
        axis: Axis,
        spatial: Spatial,
    ) -> (u64, u64) {
        let (lag, plane_len) = sample.lag_and_plane(shape, axis);
        let rows = plane_len.div_ceil(lag).max(1) as u64;
        let int = |i: usize| sample.int(i);
        let bits = |m: T, p: T| sample.bits(m, p);
        let (s, run) = (spatial.stride, spatial.run.max(1));
        let mut previous = 0u64;
        let (mut head, mut time, mut lorenzo, mut later) = (0u64, 0u64, 0u64, 0u64);
        for start in sample.run_starts() {
            for i in start..start + RUN {
                let m = int(i);
                let neighbour = s > 0 && i % run >= s;
                let left = if neighbour { int(i - s) } else { T::default() };
                head += bits(m, left);
                if i % plane_len >= lag {
                    let up = int(i - lag);
                    previous += bits(m, up);
                    time += bits(m, up);
                    lorenzo += match (i - lag).checked_sub(s) {
                        Some(back) if neighbour => {
                            bits(m, up.wrapping_add(left).wrapping_sub(int(back)))
                        }
                        _ => bits(m, up),
                    };
                    later += 1;
                } else {
                    // The plane's first row: the neighbour in its row, else the mapped
                    // zero.
                    let column = i % plane_len;
                    let zero = sample.map.to_int(T::default());
                    let p = if s > 0 && column % run >= s {
                        int(i - s)
                    } else {
                        zero
                    };
                    previous += bits(m, p);
                }
            }
        }
        let per_word = |b: u64, n: u64| (b << 16) / n.max(1);
        let sampled = (sample.runs * RUN) as u64;
        let estimate =
            per_word(head, sampled) / rows + per_word(time.min(lorenzo), later) * (rows - 1) / rows;
        (previous, estimate)
    }

    /// 2^15 words of 8 bytes whose bit lengths vary from word to word.
    fn mixed_words() -> Vec<u8> {
        (0..1u64 << 15)
            .flat_map(|i| ((i * 2654435761) >> (i % 29)).to_le_bytes())
            .collect()
    }

    #[test]
    fn the_spatial_estimate_is_its_definition() {
        // Strides within and across runs, runs of several words and of a whole row,
        // lags that are and are not multiples of the run, under every map.
        let data = mixed_words();
        let shapes: [&[usize]; 3] = [&[8, 64, 64], &[2, 16384], &[4, 2, 4096]];
        for shape in shapes {
            for map in ResidualMap::ALL {
                for (most, share) in [(SPATIAL_SAMPLE_WORDS, SPATIAL_SAMPLE_SHARE), (1 << 15, 1)] {
                    let sample = Sample::<u64>::new(&data, map, most, share);
                    for time_axis in 0..shape.len() {
                        for lag in [0, 1, 300, 5000] {
                            let axis = Axis { time_axis, lag };
                            let spatials = [
                                Spatial::default(),
                                Spatial::of_shape(shape, time_axis, 1),
                                Spatial { stride: 1, run: 4 },
                                Spatial { stride: 3, run: 64 },
                                Spatial {
                                    stride: 16,
                                    run: 40,
                                },
                            ];
                            for spatial in spatials {
                                assert_eq!(
                                    sample.estimate(shape, axis, spatial),
                                    word_by_word(&sample, shape, axis, spatial).1,
                                    "{shape:?} {map:?} {axis:?} {spatial:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_previous_sample_estimate_is_its_definition() {
        // Lags shorter and longer than a run, planes shorter and longer than one, runs
        // that start before their plane's first lag, under every map.
        let data = mixed_words();
        let shapes: [&[usize]; 4] = [&[8, 64, 64], &[2, 16384], &[32768], &[4, 2, 4096]];
        for shape in shapes {
            for map in ResidualMap::ALL {
                for (most, share) in [(SAMPLE_WORDS, AXIS_SAMPLE_SHARE), (1 << 15, 1)] {
                    let sample = Sample::<u64>::new(&data, map, most, share);
                    for time_axis in 0..shape.len() {
                        for lag in [0, 1, 300, 5000] {
                            let axis = Axis { time_axis, lag };
                            let spatial = Spatial::of_shape(shape, time_axis, 1);
                            for spatial in [Spatial::default(), spatial] {
                                assert_eq!(
                                    sample.previous_bits(shape, axis, spatial),
                                    word_by_word(&sample, shape, axis, spatial).0,
                                    "{shape:?} {map:?} {axis:?} {spatial:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

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
        let (chosen, spatial) = choose::<u32>(
            &data,
            &[1, 2048, 4],
            0..3,
            hint,
            1,
            ResidualMap::RotateSubtract,
            false,
        );
        assert_eq!(chosen.time_axis, 1);
        assert_eq!(spatial, Spatial { stride: 1, run: 4 });
    }

    #[test]
    fn axes_of_one_element_do_not_change_the_choice() {
        // Smooth along channels, the products apart by orders of magnitude: the
        // chunk of one time step (and of one spectral window) is read as its spectra.
        let data = f32_bytes((0..3 * 1024i32).map(|i| {
            let (p, ch) = (i / 1024, i % 1024);
            (ch as f32 * 0.003).cos() * 10f32.powi(p + 1)
        }));
        let hint = Axis {
            time_axis: 0,
            lag: 0,
        };
        let choice = |shape: &[usize]| {
            let (axis, spatial) = choose::<u32>(
                &data,
                shape,
                0..shape.len(),
                hint,
                1,
                ResidualMap::RotateSubtract,
                true,
            );
            (shape[axis.time_axis], spatial)
        };
        let squeezed = choice(&[3, 1024]);
        assert_eq!(squeezed.0, 1024);
        assert_eq!(choice(&[1, 3, 1024]), squeezed);
        assert_eq!(choice(&[1, 3, 1, 1024, 1]), squeezed);
        assert_eq!(
            past_unit_axis(hint, &[1, 1, 5], &(0..3)),
            Axis {
                time_axis: 2,
                lag: 0
            }
        );
        assert_eq!(
            past_unit_axis(
                Axis {
                    time_axis: 2,
                    lag: 0
                },
                &[4, 5, 1],
                &(0..3)
            ),
            Axis {
                time_axis: 1,
                lag: 0
            }
        );
        let explicit = Axis {
            time_axis: 0,
            lag: 7,
        };
        assert_eq!(past_unit_axis(explicit, &[1, 7], &(0..2)), explicit);
        assert_eq!(past_unit_axis(hint, &[1, 1], &(0..2)), hint);
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
        let (chosen, spatial) = choose::<u32>(
            &data,
            &[64, 256],
            0..2,
            hint,
            1,
            ResidualMap::RotateSubtract,
            false,
        );
        assert_eq!(chosen, hint);
        assert_eq!(
            spatial,
            Spatial {
                stride: 1,
                run: 256
            }
        );
    }

    #[test]
    fn short_chunks_smooth_along_time_keep_the_hint() {
        // (time 4, channel 1024, product 4): each series nearly constant along its four
        // steps, neighbouring channels unrelated. Only three rows of each plane have an
        // earlier sample, and the first row costs the same whatever the axis, so time
        // must win on the rows it predicts, with or without a spatial first row.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let levels: Vec<f32> = (0..1024 * 4)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / 16.0
            })
            .collect();
        let data = f32_bytes((0..4 * 1024 * 4).map(|i| {
            let (t, e) = (i / 4096, i % 4096);
            levels[e] + t as f32 * 1e-3
        }));
        let hint = Axis {
            time_axis: 0,
            lag: 0,
        };
        for first_rows_spatial in [false, true] {
            let (chosen, _) = choose::<u32>(
                &data,
                &[4, 1024, 4],
                0..3,
                hint,
                1,
                ResidualMap::RotateSubtract,
                first_rows_spatial,
            );
            assert_eq!(chosen, hint, "spatial first rows: {first_rows_spatial}");
        }
        // Levels that change with every step but not along channels: channels win.
        let data = f32_bytes((0..4 * 1024 * 4).map(|i| {
            let (t, ch, p) = (i / 4096, i / 4 % 1024, i % 4);
            levels[t * 4 + p] + ch as f32 * 1e-3
        }));
        let (chosen, _) = choose::<u32>(
            &data,
            &[4, 1024, 4],
            0..3,
            hint,
            1,
            ResidualMap::RotateSubtract,
            false,
        );
        assert_eq!(chosen.time_axis, 1);
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
        let (chosen, spatial) = choose::<u32>(
            &data,
            &[1, 2048, 2],
            element_axes(3, 2, false),
            hint,
            2,
            ResidualMap::RotateSubtract,
            false,
        );
        assert_ne!(chosen.time_axis, 2);
        assert_ne!(
            spatial.stride, 1,
            "a component is never a spatial neighbour"
        );
        // The same words as planes, (2, 1, 2048): the leading axis is the components'.
        let planes = crate::planar::split(&data, 4, 2);
        let hint = Axis {
            time_axis: 1,
            lag: 0,
        };
        let axes = element_axes(3, 1, true);
        let (chosen, _) = choose::<u32>(
            &planes,
            &[2, 1, 2048],
            axes,
            hint,
            1,
            ResidualMap::RotateSubtract,
            false,
        );
        assert_ne!(chosen.time_axis, 0);
    }

    #[test]
    fn spatial_neighbours_are_chosen_by_what_they_predict() {
        // (time 4, channel 256, product 4): products of unrelated levels, each smooth
        // along channels and slowly drifting along time.
        let level = [1e4f32, 3.0, -50.0, 7e3];
        let data = f32_bytes((0..4 * 256 * 4).map(|i| {
            let (t, ch, p) = (i / 1024, i / 4 % 256, i % 4);
            let fixed = ((i % 1024) as u32).wrapping_mul(2_654_435_761) >> 8;
            let ripple = 1e-3 * fixed as f32 / (1 << 24) as f32;
            level[p] * (1.0 + 0.2 * (ch as f32 * 0.3).sin() + ripple + t as f32 * 1e-5)
        }));
        let hint = Axis {
            time_axis: 0,
            lag: 0,
        };
        let map = ResidualMap::RotateSubtract;
        let (axis, spatial) = choose::<u32>(&data, &[4, 256, 4], 0..3, hint, 1, map, false);
        assert_eq!(
            (axis, spatial),
            (
                hint,
                Spatial {
                    stride: 4,
                    run: 1024
                }
            )
        );
        // Products alike, channels unrelated: the innermost axis stays.
        let data = f32_bytes((0..4 * 256 * 4).map(|i| {
            let (t, ch) = (i / 1024, i / 4 % 256);
            let level = (ch as u32).wrapping_mul(2_654_435_761) as f32 * 1e-3;
            level * (1.0 + t as f32 * 1e-3) + (i % 4) as f32 * 1e-3
        }));
        let (_, spatial) = choose::<u32>(&data, &[4, 256, 4], 0..3, hint, 1, map, false);
        assert_ne!(spatial.stride, 4, "not along channels");
        // Neighbours farther than the coding search's sample reaches are not taken.
        let wide = f32_bytes((0..4 * 64 * 32).map(|i| {
            let (ch, p) = (i / 32 % 64, i % 32);
            (p as f32 * 1e3 + 1.0) * (1.0 + 0.2 * (ch as f32 * 0.03).sin())
        }));
        let (_, spatial) = choose::<u32>(&wide, &[4, 64, 32], 0..3, hint, 1, map, false);
        assert_eq!(spatial, Spatial { stride: 1, run: 32 });
    }
}
