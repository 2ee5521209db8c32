//! Scaled integers: floats that are an integer times a scale shared by a group of
//! values (spectrometer and correlator output stored as 16-bit integers times a scale
//! per spectrum), coded as the integers, which predict and pack far better than the
//! floats' noisy low mantissa bits.
//!
//! A chunk of float words is cut into groups of `group` consecutive words. For every
//! group the encoder looks for a scale `s` (a float64) and integers `q` such that each
//! word `x` is exactly `to_word(q as f64 * s)`: for float32 words the float64 product
//! rounded to the nearest float32, for float64 words the product itself. Both ways a
//! writer may have computed `x` (a float32 product `q * s32`, or a float64 product cast
//! to float32) give the same bits this way, because `q * s32` is exact in float64. A
//! group with no such scale is kept as it is, marked by a NaN scale, and its words are
//! coded as integers unchanged.

use crate::word::Word;

/// Largest integer magnitude a group may hold: exactly representable in the word's
/// float type, so `q as f64` loses nothing and integers stay small for the coders.
fn max_integer(word_bytes: usize) -> i64 {
    if word_bytes == 4 {
        1 << 24
    } else {
        1 << 52
    }
}

/// The scale marking a group whose words are kept as they are.
pub const UNSCALED: u64 = u64::MAX;

/// Integers of full-scale ranges writers commonly scale to (signed and unsigned 8, 12,
/// 16 and 24 bits).
const FULL_SCALES: [f64; 12] = [
    127.0,
    128.0,
    255.0,
    2047.0,
    2048.0,
    4095.0,
    32767.0,
    32768.0,
    65535.0,
    8_388_607.0,
    8_388_608.0,
    16_777_215.0,
];
/// The smallest nonzero magnitude is tried as this many multiples of the scale at most.
const SMALLEST_MULTIPLES: usize = 64;

/// The float a word holds, as float64.
#[inline(always)]
fn value<T: Word>(x: T) -> f64 {
    if T::BYTES == 4 {
        f64::from(f32::from_bits(x.to_u64() as u32))
    } else {
        f64::from_bits(x.to_u64())
    }
}

/// The word of `q * scale`, rounded as described in the module documentation.
pub fn dequantise<T: Word>(q: i64, scale: f64) -> T {
    product_word(q as f64, scale)
}

/// The word of `q * scale` for an integer `q` held exactly as a float64.
#[inline(always)]
fn product_word<T: Word>(q: f64, scale: f64) -> T {
    let product = q * scale;
    if T::BYTES == 4 {
        T::from_u64(u64::from((product as f32).to_bits()))
    } else {
        T::from_u64(product.to_bits())
    }
}

/// The integer of `x` under `scale`, if `x` is exactly that integer times it.
fn quantise<T: Word>(x: T, scale: f64) -> Option<i64> {
    quantise_with(x, scale, 1.0 / scale)
}

/// [`quantise`] with the scale's reciprocal given: the nearest integer of `x * inverse`
/// (half away from zero), kept only when it turns back into exactly `x`. A quotient
/// off by one near a half fails the check, so the reciprocal loses nothing.
#[inline]
fn quantise_with<T: Word>(x: T, scale: f64, inverse: f64) -> Option<i64> {
    let r = value(x) * inverse;
    // NaN and infinities fail too.
    if r.is_nan() || r.abs() > max_integer(T::BYTES) as f64 {
        return None;
    }
    let q = (r + 0.5f64.copysign(r)) as i64;
    (dequantise::<T>(q, scale) == x).then_some(q)
}

/// Whether every word of `group` is an integer times `scale`.
fn fits<T: Word>(group: &[T], scale: f64) -> bool {
    let inverse = 1.0 / scale;
    if !(scale.is_finite() && scale > 0.0) {
        return false;
    }
    if T::BYTES == 4 {
        // Whole blocks without a branch per word (they vectorise), then the rest.
        let (blocks, rest) = group.split_at(group.len() - group.len() % LANES);
        let whole = crate::isa::vectorised(
            #[inline(always)]
            || {
                blocks.chunks_exact(LANES).all(|block| {
                    block.iter().fold(true, |ok, &x| {
                        ok & quantises_f32(x.to_u64() as u32, scale, inverse)
                    })
                })
            },
        );
        return whole
            && rest
                .iter()
                .all(|&x| quantise_with(x, scale, inverse).is_some());
    }
    group
        .iter()
        .all(|&x| quantise_with(x, scale, inverse).is_some())
}

/// Words per block of the float32 loops of [`fits`] and [`refine`].
const LANES: usize = 16;

/// The integer nearest `r` (half away from zero) as the branch-free float32 loops take
/// it: the integer conversion's value wherever their range check passes (adding zero
/// turns a negative zero positive, as the conversion does).
#[inline(always)]
fn nearest_integer(r: f64) -> f64 {
    (r + 0.5f64.copysign(r)).trunc() + 0.0
}

/// [`quantise_with`] of a float32 word as a yes or no, with no branch.
#[inline(always)]
fn quantises_f32(bits: u32, scale: f64, inverse: f64) -> bool {
    let r = f64::from(f32::from_bits(bits)) * inverse;
    let in_range = r.abs() <= max_integer(4) as f64;
    in_range & (((nearest_integer(r) * scale) as f32).to_bits() == bits)
}

/// A scale under which every word of `group` is an integer multiple, if one is found.
///
/// Candidates, each verified on every word: for a group longer than its head (its first
/// [`HEAD_WORDS`] words that are not zero), the largest magnitude over common full-scale
/// integers, then the head's own scale; then the smallest rung (the smallest magnitude,
/// or the smallest gap between magnitudes) taken as 1 to 64 times the scale and climbed
/// through the larger rungs (see [`climb_every_multiple`]), then the full-scale
/// candidates again (for a group no longer than its head); each in the forms of
/// [`forms`], rounded to float32, as it is, and as the middle of the interval of scales
/// the words' rounding allows.
pub fn find_scale<T: Word>(group: &[T]) -> Option<f64> {
    // A group has a scale only if its first words that are not zero do: most groups of
    // other data are turned down after a look at those. Zeros are a multiple of every
    // scale, so they are passed over (flagged channels begin many a spectrum).
    let head: Vec<T> = group
        .iter()
        .copied()
        .filter(|x| x.to_u64() != 0)
        .take(HEAD_WORDS)
        .collect();
    let (smallest, largest) = crate::isa::vectorised(
        #[inline(always)]
        || magnitude_range(group),
    )?;
    // The head's first block decides most wrong seeds: a group's interval only narrows
    // word by word and a bad word stays bad, so a seed its first block turns down the
    // whole head turns down too.
    let first_block = &head[..head.len().min(LANES)];
    let admitted = |s: &f64| !refutes(first_block, *s) && refine(&head, *s).is_some();
    let full_scales = FULL_SCALES
        .iter()
        .map(|&d| largest / d)
        .filter(admitted)
        .flat_map(|s| forms(group, s));
    if group.len() > head.len() {
        // A group scaled to fill its integers' range (a spectrum scaled by its peak) is
        // answered by its largest magnitude over a common full scale, with no search.
        if let Some(scale) = full_scales.clone().find(|&s| fits(group, s)) {
            return Some(scale);
        }
        // The head's scale, in its forms over the group, is the usual answer:
        // tried before the group's own rungs are built.
        let head = find_scale(&head)?;
        if let Some(scale) = forms(group, head).find(|&s| fits(group, s)) {
            return Some(scale);
        }
    }
    if largest == 0.0 {
        // Zeros only (positive zeros: a negative zero is no multiple of 1).
        return group
            .iter()
            .all(|&x| quantise(x, 1.0).is_some())
            .then_some(1.0);
    }
    let rungs = rungs(group, largest);
    let smallest_rung = rungs.first().copied().unwrap_or(smallest);
    // Seeds, largest scale first: the smallest rung as a small multiple of the scale
    // (climbed through every rung to full precision), then common full-scale ranges.
    // A seed is refined over the whole group only when the first words' rounding admits
    // it: most wrong seeds cost a look at a few dozen words.
    let climbed = climb_every_multiple(&rungs, smallest_rung)
        .into_iter()
        .flatten()
        .filter(admitted)
        .flat_map(|s| forms(group, s));
    // A group longer than its head had the full-scale candidates tried above.
    let untried_full_scales = full_scales.filter(|_| group.len() <= head.len());
    climbed.chain(untried_full_scales).find(|&s| fits(group, s))
}

/// The forms of the estimate `seed` that are tried as `group`'s scale, cheapest first:
/// `seed` rounded to float32 (a writer's float32 scale, whose float64 bits the scale
/// section compresses best), `seed` itself, then `seed` refined over the group (see
/// [`refine`]): a pass of divisions over the group, made only when the others do not
/// fit (a [`fits`] that fails stops at the first block of words it fails on).
fn forms<T: Word>(group: &[T], seed: f64) -> impl Iterator<Item = f64> + Clone + '_ {
    let rounded = f64::from(seed as f32);
    let refined = std::iter::once_with(move || refine(group, seed)).flatten();
    std::iter::once(rounded)
        .chain(Some(seed).filter(|&s| s != rounded))
        .chain(refined)
}

/// The smallest nonzero and the largest magnitude of the values of `group` (infinity
/// and 0 when all are zero), unless one is not finite; in [`LANES`] independent lanes
/// with no branch per word, so that it vectorises.
#[inline(always)]
fn magnitude_range<T: Word>(group: &[T]) -> Option<(f64, f64)> {
    let mut smallest = [f64::INFINITY; LANES];
    let mut largest = [0.0f64; LANES];
    let mut finite = [true; LANES];
    let mut lane = |k: usize, x: T| {
        let v = value(x).abs();
        finite[k] &= v.is_finite();
        largest[k] = if v > largest[k] { v } else { largest[k] };
        smallest[k] = if v > 0.0 && v < smallest[k] {
            v
        } else {
            smallest[k]
        };
    };
    let mut blocks = group.chunks_exact(LANES);
    for block in &mut blocks {
        for (k, &x) in block.iter().enumerate() {
            lane(k, x);
        }
    }
    for (k, &x) in blocks.remainder().iter().enumerate() {
        lane(k, x);
    }
    if finite.contains(&false) {
        return None;
    }
    let smallest = smallest.into_iter().fold(f64::INFINITY, f64::min);
    let largest = largest.into_iter().fold(0.0f64, f64::max);
    Some((smallest, largest))
}

/// Words at the start of a group (zeros passed over) a seed must fit before it is
/// refined over the group.
const HEAD_WORDS: usize = 64;

/// The rungs a scale is climbed through: the distinct magnitudes of (up to
/// [`DIVISOR_SAMPLE`] of) the values, the gaps between them and their differences from
/// the smallest, ascending, rungs closer
/// than rounding noise counted once. Every rung is a multiple of the scale (up to
/// rounding); the smallest, a gap when every value is large, a small multiple.
fn rungs<T: Word>(group: &[T], largest: f64) -> Vec<f64> {
    let tolerance = largest * DIVISOR_TOLERANCE;
    let step = group.len().div_ceil(DIVISOR_SAMPLE).max(1);
    let mut magnitudes: Vec<f64> = group
        .iter()
        .step_by(step)
        .map(|&x| value(x).abs())
        .filter(|&v| v > 0.0)
        .collect();
    magnitudes.sort_by(f64::total_cmp);
    magnitudes.dedup();
    let Some(&least) = magnitudes.first() else {
        return Vec::new();
    };
    // Three ascending lists merged: the gaps (sorted), the differences from the
    // smallest magnitude and the magnitudes (both ascending already).
    let mut gaps: Vec<f64> = magnitudes.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let differences = magnitudes.iter().map(|&v| v - least);
    let ladder = merge(&merge(&gaps, differences), magnitudes.iter().copied())
        .into_iter()
        .filter(|&v| v > tolerance);
    // Rungs at least RUNG_STEP apart suffice (each halves the error at most), so the
    // climb takes tens of steps, not thousands; near-equal rungs count once.
    let mut kept: Vec<f64> = Vec::new();
    for v in ladder {
        if kept.is_empty() {
            kept.push(v);
            continue;
        }
        let last = kept[kept.len() - 1];
        if v - last > tolerance && v >= last * RUNG_STEP {
            kept.push(v);
        }
    }
    kept
}

/// `sorted` and the ascending `other` merged into one ascending list.
fn merge(sorted: &[f64], other: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out = Vec::with_capacity(2 * sorted.len() + 1);
    let mut rest = sorted.iter().copied().peekable();
    for v in other {
        while let Some(s) = rest.next_if(|&s| s <= v) {
            out.push(s);
        }
        out.push(v);
    }
    out.extend(rest);
    out
}

/// Smallest ratio between successive rungs of a climb.
const RUNG_STEP: f64 = 1.5;

/// `seed` refined through `rungs` (ascending): each rung divided by its nearest multiple
/// of the estimate so far, so the relative error shrinks to the largest rung's rounding;
/// `None` as soon as a rung is not near a multiple. The definition
/// [`climb_every_multiple`] follows for many seeds at once.
#[cfg(test)]
fn climb(rungs: &[f64], seed: f64) -> Option<f64> {
    let mut scale = seed;
    for &v in rungs {
        let ratio = v / scale;
        let q = ratio.round();
        if q < 1.0 || (ratio - q).abs() > CLIMB_SLACK {
            return None;
        }
        scale = v / q;
    }
    Some(scale)
}

/// `climb` (the one-seed form, kept for the tests) of each seed `smallest_rung / k`,
/// `k` from 1 to [`SMALLEST_MULTIPLES`], in that order: the seeds' climbs side by side
/// (vectors of them, where a climb alone waits on one division after another), each
/// lane exactly the scalar climb's operations, so the same results.
fn climb_every_multiple(rungs: &[f64], smallest_rung: f64) -> [Option<f64>; SMALLEST_MULTIPLES] {
    crate::isa::vectorised(
        #[inline(always)]
        || {
            let mut scale: [f64; SMALLEST_MULTIPLES] =
                std::array::from_fn(|k| smallest_rung / (k + 1) as f64);
            let mut climbing = [true; SMALLEST_MULTIPLES];
            for &v in rungs {
                for (scale, climbing) in scale.iter_mut().zip(&mut climbing) {
                    let ratio = v / *scale;
                    let q = ratio.round();
                    // As in `climb`: a lane that fails stays failed (its scale is
                    // then never read).
                    let off = q < 1.0 || (ratio - q).abs() > CLIMB_SLACK;
                    *climbing &= !off;
                    *scale = v / q;
                }
                if !climbing.iter().any(|&c| c) {
                    break;
                }
            }
            std::array::from_fn(|k| climbing[k].then_some(scale[k]))
        },
    )
}

/// How far from a whole multiple of the estimate a rung may be while climbing.
const CLIMB_SLACK: f64 = 0.25;

/// A scale close to `approximate` that makes every word of `group` an exact multiple,
/// if the integers `approximate` gives admit one: for float32 words, the middle of the
/// interval of scales each word's rounding allows; for float64 words, the scale of the
/// largest multiple.
fn refine<T: Word>(group: &[T], approximate: f64) -> Option<f64> {
    if T::BYTES == 4 {
        return crate::isa::vectorised(
            #[inline(always)]
            || refine_f32(group, approximate),
        );
    }
    refine_each(group, approximate)
}

/// [`refine`] word by word (float64 words, and the reference of [`refine_f32`]).
fn refine_each<T: Word>(group: &[T], approximate: f64) -> Option<f64> {
    let (mut low, mut high) = (0.0f64, f64::INFINITY);
    let mut largest = (0.0f64, 0.0f64);
    let inverse = 1.0 / approximate;
    for &x in group {
        let v = value(x);
        let r = v * inverse;
        if r.is_nan() || r.abs() > max_integer(T::BYTES) as f64 {
            return None;
        }
        let q = ((r + 0.5f64.copysign(r)) as i64) as f64;
        if q == 0.0 {
            continue;
        }
        if v.abs() > largest.0 {
            largest = (v.abs(), q.abs());
        }
        if T::BYTES == 4 {
            // The float32s rounding to v: half an ulp either side.
            let f = v.abs() as f32;
            let below = f64::from(f32::from_bits(f.to_bits() - 1));
            let above = f64::from(f32::from_bits(f.to_bits() + 1));
            let (lo, hi) = ((v.abs() + below) / 2.0, (v.abs() + above) / 2.0);
            low = low.max(lo / q.abs());
            high = high.min(hi / q.abs());
            if low > high {
                return None;
            }
        }
    }
    if largest.1 == 0.0 {
        return None;
    }
    if T::BYTES == 4 {
        // Closed intervals: a product that was a tie rounded to the even float32 puts the
        // writer's scale exactly on an end.
        (low <= high).then_some(low + (high - low) / 2.0)
    } else {
        Some(largest.0 / largest.1)
    }
}

/// [`refine`] of float32 words, computed in [`LANES`] independent lanes with no branch
/// per word (so it vectorises): the same interval and the same answer, since the
/// bounds only tighten and a word out of range fails the group wherever it lies.
#[inline(always)]
fn refine_f32<T: Word>(group: &[T], approximate: f64) -> Option<f64> {
    let lanes = narrowed_lanes(group, approximate)?;
    if !lanes.nonzero.contains(&true) {
        return None;
    }
    let (low, high) = lanes.bounds();
    Some(low + (high - low) / 2.0)
}

/// Whether the rounding of the float32 words of `group` rules out every scale near
/// `approximate` (a word out of range, or intervals that do not meet): then it rules
/// them out for any group that begins with it. Always false for float64 words.
fn refutes<T: Word>(group: &[T], approximate: f64) -> bool {
    T::BYTES == 4
        && crate::isa::vectorised(
            #[inline(always)]
            || narrowed_lanes(group, approximate).is_none(),
        )
}

/// [`refine_f32`]'s lanes after every word of `group`, unless they fail.
#[inline(always)]
fn narrowed_lanes<T: Word>(group: &[T], approximate: f64) -> Option<Lanes> {
    let inverse = 1.0 / approximate;
    let mut lanes = Lanes {
        low: [0.0; LANES],
        high: [f64::INFINITY; LANES],
        bad: [false; LANES],
        nonzero: [false; LANES],
    };
    // In pieces, after each of which a group that already fails stops: its bounds only
    // tighten and a bad word stays bad, so the answer is the one of the whole group.
    let whole = group.len() - group.len() % LANES;
    for piece in group[..whole].chunks(REFINE_PIECE) {
        for block in piece.chunks_exact(LANES) {
            for (k, &x) in block.iter().enumerate() {
                lanes.take(k, x.to_u64() as u32, inverse);
            }
        }
        if lanes.failed() {
            return None;
        }
    }
    for (k, &x) in group[whole..].iter().enumerate() {
        lanes.take(k, x.to_u64() as u32, inverse);
    }
    (!lanes.failed()).then_some(lanes)
}

/// The state of [`refine_f32`]'s lanes: each lane's interval of scales, whether a word
/// was out of range and whether one was a nonzero multiple.
struct Lanes {
    low: [f64; LANES],
    high: [f64; LANES],
    bad: [bool; LANES],
    nonzero: [bool; LANES],
}

impl Lanes {
    /// Narrows lane `k`'s interval by the float32 word `bits` (no branch).
    #[inline(always)]
    fn take(&mut self, k: usize, bits: u32, inverse: f64) {
        let v = f64::from(f32::from_bits(bits));
        let r = v * inverse;
        // NaN fails too.
        self.bad[k] |= r.is_nan() || r.abs() > max_integer(4) as f64;
        let q = nearest_integer(r).abs();
        let counts = q != 0.0;
        self.nonzero[k] |= counts;
        // The float32s rounding to v: half an ulp either side.
        let magnitude = bits & 0x7fff_ffff;
        let below = f64::from(f32::from_bits(magnitude.wrapping_sub(1)));
        let above = f64::from(f32::from_bits(magnitude.wrapping_add(1)));
        let (lo, hi) = ((v.abs() + below) / 2.0, (v.abs() + above) / 2.0);
        let (lo, hi) = if counts {
            (lo / q, hi / q)
        } else {
            (0.0, f64::INFINITY)
        };
        self.low[k] = if lo > self.low[k] { lo } else { self.low[k] };
        self.high[k] = if hi < self.high[k] { hi } else { self.high[k] };
    }

    /// The interval every lane allows.
    #[inline(always)]
    fn bounds(&self) -> (f64, f64) {
        let low = self.low.iter().fold(0.0f64, |a, &b| a.max(b));
        let high = self.high.iter().fold(f64::INFINITY, |a, &b| a.min(b));
        (low, high)
    }

    /// Whether a word was out of range or the lanes allow no scale.
    #[inline(always)]
    fn failed(&self) -> bool {
        let (low, high) = self.bounds();
        self.bad.contains(&true) || low > high
    }
}

/// Words [`refine_f32`] looks at between checks whether the group already fails (a
/// multiple of [`LANES`]).
const REFINE_PIECE: usize = 4096;

/// Values of a group the rungs are taken from.
const DIVISOR_SAMPLE: usize = 128;
/// Remainders below this fraction of the largest magnitude count as zero: above the
/// rounding error of integers of up to about 2^19 times a float32 scale.
const DIVISOR_TOLERANCE: f64 = 1.0 / (1u64 << 20) as f64;

/// Integers of a chunk of float words in groups of `group` words, with each group's
/// scale (its bits; [`UNSCALED`] for a group kept as it is).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq)]
pub struct Quantised<T> {
    /// The words as integers (two's complement in the word's width), or as they were
    /// in unscaled groups.
    pub integers: Vec<T>,
    /// The bits of each group's float64 scale, or [`UNSCALED`].
    pub scales: Vec<u64>,
}

/// [`quantise_chunk_into`] with the integers as words.
#[cfg(test)]
pub fn quantise_chunk<T: Word>(
    words: &[T],
    group: usize,
    max_unscaled: usize,
) -> Option<Quantised<T>> {
    let mut bytes = vec![0; words.len() * T::BYTES];
    let scales = quantise_chunk_into(words, group, max_unscaled, &mut bytes)?;
    Some(Quantised {
        integers: bytes.chunks_exact(T::BYTES).map(T::load).collect(),
        scales,
    })
}

/// Writes `words` as integers (little-endian words of `T`, two's complement, or the
/// words as they were in unscaled groups) in groups of `group` to `integers`, as long
/// as they are, and returns each group's scale bits ([`UNSCALED`] for a group kept as
/// it is), if at most `max_unscaled` groups (and not all) lack a scale. Returns early,
/// having looked at little, when the first groups have none; the rest of `integers`
/// then holds what it held.
pub fn quantise_chunk_into<T: Word>(
    words: &[T],
    group: usize,
    max_unscaled: usize,
    integers: &mut [u8],
) -> Option<Vec<u64>> {
    if group == 0 || words.is_empty() {
        return None;
    }
    assert_eq!(
        integers.len(),
        words.len() * T::BYTES,
        "room for every word"
    );
    let mut scales = Vec::with_capacity(words.len().div_ceil(group));
    let mut unscaled = 0;
    let mut previous: Option<f64> = None;
    for (g, out) in words
        .chunks(group)
        .zip(integers.chunks_mut(group * T::BYTES))
    {
        // Writers often keep one scale for many groups: the previous one is tried first.
        let reused = previous.filter(|&s| fits(g, s));
        let found = reused.or_else(|| find_scale(g));
        previous = found.or(previous);
        if unscaled >= GIVE_UP_AFTER && scales.len() == unscaled && found.is_none() {
            // The first groups have no scale: the probes were misled.
            return None;
        }
        if found.is_none() {
            unscaled += 1;
            if unscaled > max_unscaled {
                return None;
            }
        }
        scales.push(write_group(g, found, out));
    }
    (unscaled < scales.len()).then_some(scales)
}

/// Writes the words of `group` to `out` as integers under `scale`, which fits every one
/// of them, or as they are when there is none; returns the scale's bits ([`UNSCALED`]
/// for none).
fn write_group<T: Word>(group: &[T], scale: Option<f64>, out: &mut [u8]) -> u64 {
    let Some(scale) = scale else {
        for (&x, o) in group.iter().zip(out.chunks_exact_mut(T::BYTES)) {
            x.store(o);
        }
        return UNSCALED;
    };
    // The scale fits every word: each is its nearest integer, which the loop takes with
    // no check (so it vectorises).
    let inverse = 1.0 / scale;
    crate::isa::vectorised(
        #[inline(always)]
        || {
            for (&x, o) in group.iter().zip(out.chunks_exact_mut(T::BYTES)) {
                let r = value(x) * inverse;
                let q = if T::BYTES == 4 {
                    // Within 2^24 (see `max_integer`): added to 1.5 * 2^52, the integer
                    // is the float64's low mantissa bits, its low 32 bits in two's
                    // complement. A conversion that vectorises: AVX2 converts no
                    // float64 to 64-bit integers, and Rust's saturating conversion to
                    // 32-bit ones runs a word at a time.
                    u64::from((nearest_integer(r) + INTEGER_BITS_OFFSET).to_bits() as u32)
                } else {
                    (r + 0.5f64.copysign(r)) as i64 as u64
                };
                T::from_u64(q).store(o);
            }
        },
    );
    debug_assert!(group
        .iter()
        .zip(out.chunks_exact(T::BYTES))
        .all(|(&x, q)| { quantise_with(x, scale, inverse) == Some(signed(T::load(q))) }));
    scale.to_bits()
}

/// 1.5 * 2^52: a float64 integer of magnitude below 2^51 added to it is exact, and the
/// sum's low 32 bits are the integer's in two's complement.
const INTEGER_BITS_OFFSET: f64 = 6_755_399_441_055_744.0;

/// The scales of `words` in groups of `group` words, given `scales`, those of its groups
/// of `small` words (a divisor of `group`) that made `integers` (see
/// [`quantise_chunk_into`]): a group whose small groups share one scale (or none) keeps
/// it; any other is given the scale refined over it from one of the first
/// [`MOST_SEEDS`] distinct scales of its small groups (a group of zeros has scale 1),
/// when that fits all its words, or none, and its `integers` are rewritten
/// accordingly. None, with `integers` untouched, when more than `max_unscaled` groups
/// (or all of them) are left without a scale: a group's first differing small groups
/// usually tell, so a size that does not fit costs little.
pub fn coarsened<T: Word>(
    words: &[T],
    small: usize,
    scales: &[u64],
    group: usize,
    max_unscaled: usize,
    integers: &mut [u8],
) -> Option<Vec<u64>> {
    if small == 0 || !group.is_multiple_of(small) || scales.len() != words.len().div_ceil(small) {
        return None;
    }
    let per = group / small;
    let mut merged = Vec::with_capacity(scales.len().div_ceil(per));
    // Groups to rewrite: their index, words and new scale (none: kept as they are).
    let mut rewrites: Vec<(usize, &[T], Option<f64>)> = Vec::new();
    let mut unscaled = 0;
    for (index, (subs, g)) in scales.chunks(per).zip(words.chunks(group)).enumerate() {
        let scale = if subs.iter().all(|&s| s == subs[0]) {
            subs[0]
        } else {
            let mut seeds: Vec<u64> = Vec::with_capacity(MOST_SEEDS);
            for &s in subs {
                if s != UNSCALED && !seeds.contains(&s) && seeds.len() < MOST_SEEDS {
                    seeds.push(s);
                }
            }
            let found = (seeds.into_iter().map(f64::from_bits))
                .find_map(|seed| forms(g, seed).find(|&s| fits(g, s)));
            rewrites.push((index, g, found));
            found.map_or(UNSCALED, f64::to_bits)
        };
        if scale == UNSCALED {
            unscaled += 1;
            if unscaled > max_unscaled {
                return None;
            }
        }
        merged.push(scale);
    }
    if unscaled == merged.len() {
        return None;
    }
    for (index, g, scale) in rewrites {
        let at = index * group * T::BYTES;
        write_group(g, scale, &mut integers[at..at + g.len() * T::BYTES]);
    }
    Some(merged)
}

/// Distinct scales of its small groups that [`coarsened`] refines a group's scale from.
const MOST_SEEDS: usize = 3;

/// Groups without a scale at the start of a chunk after which it is not tried further.
const GIVE_UP_AFTER: usize = 8;

/// Turns the decoded integers in `bytes` (little-endian words of `T`) back into the
/// floats, group by group, in place.
pub fn dequantise_in_place<T: Word>(bytes: &mut [u8], group: usize, scales: &[u64]) {
    crate::isa::vectorised(
        #[inline(always)]
        || {
            // Saturating: a group of any length (the scale section bounds it by the
            // chunk) cuts the bytes into whole pieces, never pieces of 0 bytes.
            let piece = group.saturating_mul(T::BYTES).max(T::BYTES);
            for (g, &bits) in bytes.chunks_mut(piece).zip(scales) {
                if bits == UNSCALED {
                    continue;
                }
                let scale = f64::from_bits(bits);
                for word in g.chunks_exact_mut(T::BYTES) {
                    dequantised_word::<T>(T::load(word), scale).store(word);
                }
            }
        },
    );
}

/// [`dequantise_in_place`] from the integers in `integers` to the floats in `out`, of
/// the same length: the words of unscaled groups (and of any beyond the last scale)
/// copied as they are.
pub fn dequantise_into<T: Word>(integers: &[u8], out: &mut [u8], group: usize, scales: &[u64]) {
    assert_eq!(integers.len(), out.len(), "as many bytes out as in");
    crate::isa::vectorised(
        #[inline(always)]
        || {
            let bytes = group.saturating_mul(T::BYTES).max(T::BYTES);
            let mut done = 0;
            for ((from, to), &bits) in integers
                .chunks(bytes)
                .zip(out.chunks_mut(bytes))
                .zip(scales)
            {
                done += from.len();
                if bits == UNSCALED {
                    to.copy_from_slice(from);
                    continue;
                }
                let scale = f64::from_bits(bits);
                for (x, word) in from
                    .chunks_exact(T::BYTES)
                    .zip(to.chunks_exact_mut(T::BYTES))
                {
                    dequantised_word::<T>(T::load(x), scale).store(word);
                }
            }
            out[done..].copy_from_slice(&integers[done..]);
        },
    );
}

/// The float whose integer `x` is, times `scale`.
#[inline(always)]
fn dequantised_word<T: Word>(x: T, scale: f64) -> T {
    // A 32-bit integer converts to float64 as a vector (a 64-bit one does not on AVX2);
    // both exactly.
    let q = if T::BYTES == 4 {
        f64::from(x.to_u64() as u32 as i32)
    } else {
        signed(x) as f64
    };
    product_word::<T>(q, scale)
}

/// A word's bits as a two's complement integer of its width.
fn signed<T: Word>(x: T) -> i64 {
    let shift = 64 - T::BITS;
    ((x.to_u64() << shift) as i64) >> shift
}

/// Whether `scale_bits` is a scale a decoder accepts: [`UNSCALED`], or a positive
/// finite float64.
pub fn valid_scale(scale_bits: u64) -> bool {
    let s = f64::from_bits(scale_bits);
    scale_bits == UNSCALED || (s.is_finite() && s > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts that each seed `smallest / k` climbs `rungs` side by side as alone, to
    /// the same bits; how many climbs succeeded.
    fn assert_climbs_as_alone(rungs: &[f64], smallest: f64) -> usize {
        let all = climb_every_multiple(rungs, smallest);
        let mut climbed = 0;
        for (k, &got) in all.iter().enumerate() {
            let alone = climb(rungs, smallest / (k + 1) as f64);
            assert_eq!(
                got.map(f64::to_bits),
                alone.map(f64::to_bits),
                "{rungs:?} from {smallest}, seed {k}"
            );
            climbed += usize::from(alone.is_some());
        }
        climbed
    }

    #[test]
    fn every_multiple_climbs_as_its_seed_alone() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(59);
        let mut climbed = 0;
        for case in 0..3000 {
            let scale = rng.gen_range(1e-6..1e6f64);
            let count = rng.gen_range(0..12);
            // Rungs of a true scale (with rounding noise), of noise, and of exact halves
            // (where rounding half away from zero and half to even differ).
            let mut rungs: Vec<f64> = (0..count)
                .map(|_| match case % 3 {
                    0 => {
                        scale
                            * f64::from(rng.gen_range(1..5000u32))
                            * (1.0 + rng.gen_range(-1e-9..1e-9))
                    }
                    1 => rng.gen_range(1e-3..1e9),
                    _ => scale * (f64::from(rng.gen_range(1..200u32)) + 0.5),
                })
                .collect();
            rungs.sort_by(f64::total_cmp);
            let smallest = rungs.first().copied().unwrap_or(scale);
            climbed += assert_climbs_as_alone(&rungs, smallest);
        }
        // Odd rungs: zero, infinite and not a number.
        for rungs in [
            vec![0.0, 1.0],
            vec![1.0, f64::INFINITY],
            vec![f64::NAN, 2.0],
            vec![],
        ] {
            for smallest in [0.0, 1.0, f64::INFINITY, f64::NAN] {
                assert_climbs_as_alone(&rungs, smallest);
            }
        }
        assert!(climbed > 10_000, "{climbed} climbs succeeded");
    }

    /// Dequantises bytes into another buffer exactly as in place: scaled and unscaled
    /// groups, negative integers, and words past the last scale kept as they are.
    fn check_dequantise_into<T: Word>() {
        let integers: Vec<T> = (0..18i64)
            .map(|i| T::from_u64(((i - 9) * 1001) as u64 & (u64::MAX >> (64 - T::BITS))))
            .collect();
        let bytes: Vec<u8> = integers
            .iter()
            .flat_map(|w| {
                let mut b = vec![0; T::BYTES];
                w.store(&mut b);
                b
            })
            .collect();
        let scales = [0.25f64.to_bits(), UNSCALED, 3.0f64.to_bits()];
        let mut in_place = bytes.clone();
        dequantise_in_place::<T>(&mut in_place, 5, &scales);
        let mut out = vec![0xa5; bytes.len()];
        dequantise_into::<T>(&bytes, &mut out, 5, &scales);
        assert_eq!(out, in_place, "{} bits", T::BITS);
        let word = |i: usize| T::load(&out[i * T::BYTES..]).to_u64();
        let float = |q: f64| {
            if T::BITS == 32 {
                u64::from((q as f32).to_bits())
            } else {
                q.to_bits()
            }
        };
        assert_eq!(word(0), float(-9.0 * 1001.0 * 0.25));
        assert_eq!(word(5), integers[5].to_u64());
        assert_eq!(word(14), float(5.0 * 1001.0 * 3.0));
        assert_eq!(word(17), integers[17].to_u64());
    }

    #[test]
    fn dequantising_into_another_buffer_matches_in_place() {
        check_dequantise_into::<u32>();
        check_dequantise_into::<u64>();
    }

    /// The floats the integers of `found` (in groups of `group`) turn back into.
    fn dequantised<T: Word>(found: &Quantised<T>, group: usize) -> Vec<T> {
        let mut bytes = vec![0u8; found.integers.len() * T::BYTES];
        for (w, out) in found.integers.iter().zip(bytes.chunks_exact_mut(T::BYTES)) {
            w.store(out);
        }
        dequantise_in_place::<T>(&mut bytes, group, &found.scales);
        bytes.chunks_exact(T::BYTES).map(T::load).collect()
    }

    fn f32_words(values: &[f32]) -> Vec<u32> {
        values.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn int16_spectra_times_a_float32_scale_are_found() {
        let scale = 0.003_172_f32;
        let q: Vec<i32> = (0..256).map(|i| ((i * 37) % 2001) - 1000).collect();
        let x: Vec<f32> = q.iter().map(|&q| q as f32 * scale).collect();
        let words = f32_words(&x);
        let found = quantise_chunk(&words, 256, 0).expect("scaled integers");
        assert_eq!(found.scales.len(), 1);
        let back = dequantised(&found, 256);
        assert_eq!(back, words);
        let s = f64::from_bits(found.scales[0]);
        let ints: Vec<i64> = found.integers.iter().map(|&w| signed(w)).collect();
        // The integers found are the writer's, or a fixed multiple of them.
        let k = ints[1] / i64::from(q[1]);
        assert!(k != 0 && ints.iter().zip(&q).all(|(&a, &b)| a == k * i64::from(b)));
        assert!(s > 0.0);
    }

    #[test]
    fn a_spectrum_scaled_to_fill_int16_keeps_the_writers_float32_scale() {
        // Scaled by its peak: the largest magnitude over 32767 is the scale, to within
        // the float32 rounding that its float32 form undoes.
        let scale = 0.000_417_3_f32;
        let mut q: Vec<i32> = (0..512).map(|i| ((i * 7919) % 65_535) - 32_767).collect();
        q[100] = 32_767;
        let words = f32_words(&q.iter().map(|&q| q as f32 * scale).collect::<Vec<_>>());
        let found = quantise_chunk(&words, 512, 0).expect("scaled integers");
        assert_eq!(found.scales, vec![f64::from(scale).to_bits()]);
        let ints: Vec<i64> = found.integers.iter().map(|&w| signed(w)).collect();
        assert_eq!(ints, q.iter().map(|&q| i64::from(q)).collect::<Vec<_>>());
    }

    #[test]
    fn integers_are_written_exactly_up_to_the_largest_magnitude() {
        let scale = 0.75f64;
        let q: Vec<i64> = vec![0, 1, -1, 2, -2, 1000, -1000, (1 << 24) - 1, 1 - (1 << 24)];
        let words: Vec<u32> = q.iter().map(|&q| dequantise::<u32>(q, scale)).collect();
        let mut out = vec![0u8; 4 * words.len()];
        assert_eq!(write_group(&words, Some(scale), &mut out), scale.to_bits());
        let written: Vec<i64> = out
            .chunks_exact(4)
            .map(|b| signed(u32::from_le_bytes(b.try_into().unwrap())))
            .collect();
        assert_eq!(written, q);
    }

    #[test]
    fn spectra_of_large_integers_are_found() {
        // Autocorrelation-like spectra: all values large, no small multiple present.
        let scale = 0.000_371_3_f32;
        let q: Vec<i32> = (0..512).map(|i| 20_000 + ((i * 7919) % 9001)).collect();
        let x: Vec<f32> = q.iter().map(|&q| q as f32 * scale).collect();
        let words = f32_words(&x);
        let found = quantise_chunk(&words, 512, 0).expect("scaled integers");
        let back = dequantised(&found, 512);
        assert_eq!(back, words);
        assert!(found.integers.iter().all(|&w| signed(w).abs() < 1 << 16));
    }

    #[test]
    fn float64_products_cast_to_float32_are_found() {
        let scale = 1.0 / 3.0f64;
        let x: Vec<f32> = (0..100)
            .map(|i| (f64::from(i * 7 - 300) * scale) as f32)
            .collect();
        let words = f32_words(&x);
        let found = quantise_chunk(&words, 100, 0).expect("scaled integers");
        let back = dequantised(&found, 100);
        assert_eq!(back, words);
    }

    #[test]
    fn noisy_floats_have_no_scale_and_stop_early() {
        let x: Vec<f32> = (0..1000)
            .map(|i| (i as f32 * 0.1).sin() * 1.234_567)
            .collect();
        assert!(find_scale(&f32_words(&x)).is_none());
        assert!(quantise_chunk(&f32_words(&x), 100, 1).is_none());
    }

    #[test]
    fn special_values_leave_a_group_unscaled() {
        let mut x: Vec<f32> = (0..64).map(|i| i as f32 * 0.5).collect();
        x[3] = f32::NAN;
        let mut words = f32_words(&x);
        words.extend(f32_words(
            &(0..64).map(|i| i as f32 * 0.25).collect::<Vec<_>>(),
        ));
        let found = quantise_chunk(&words, 64, 1).expect("one group scaled");
        assert_eq!(found.scales[0], UNSCALED);
        let back = dequantised(&found, 64);
        assert_eq!(back, words);
        // Negative zero is no integer multiple: its group stays unscaled.
        assert!(find_scale(&f32_words(&[-0.0, 1.0])).is_none());
    }

    #[test]
    fn float64_words_round_trip() {
        let x: Vec<u64> = (0..50)
            .map(|i| (f64::from(i) * 0.125 - 3.0).to_bits())
            .collect();
        let found = quantise_chunk(&x, 50, 0).expect("scaled");
        let back = dequantised(&found, 50);
        assert_eq!(back, x);
    }

    #[test]
    fn float32_blocks_answer_as_word_by_word() {
        // Groups of scaled integers (some words off by an ulp, zeros, specials and
        // out-of-range words mixed in) against their own scale, a near miss and a
        // wrong one, at lengths around the block size.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let specials = [
            0.0f32,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            1.0e30,
            f32::MIN_POSITIVE / 8.0,
        ];
        let mut refuted = 0;
        for case in 0..400 {
            let scale = 1.0e-3 * (1.0 + (next() % 1000) as f32 / 1000.0);
            let len = [1, 15, 16, 17, 33, 64, 100][case % 7];
            let words: Vec<u32> = (0..len)
                .map(|_| {
                    let q = (next() % 65_536) as i32 - 32_768;
                    let bits = (q as f32 * scale).to_bits();
                    match next() % 50 {
                        0 if case % 3 == 0 => specials[(next() % 6) as usize].to_bits(),
                        1 if case % 5 == 0 => bits.wrapping_add(1),
                        _ => bits,
                    }
                })
                .collect();
            for s in [
                f64::from(scale),
                f64::from(scale) * (1.0 + 1e-9),
                f64::from(scale) * 1.5,
            ] {
                assert_eq!(
                    refine(&words, s),
                    refine_each(&words, s),
                    "case {case}, {s}"
                );
                // A first block that refutes the scale refutes the group it begins.
                if refutes(&words[..words.len().min(LANES)], s) {
                    refuted += 1;
                    assert_eq!(refine(&words, s), None, "case {case}, {s}");
                }
                let each = words
                    .iter()
                    .all(|&x| quantise_with(x, s, 1.0 / s).is_some());
                assert_eq!(fits(&words, s), each, "case {case}, {s}");
            }
        }
        assert!(refuted > 100, "{refuted} first blocks refuted their scale");
    }
}
