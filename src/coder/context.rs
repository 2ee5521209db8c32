//! The context model of the archive coders: each residual becomes a token, its bit
//! length (0 for zero), coded with a table chosen by the bit lengths of its neighbours,
//! followed by the bits below its leading one, stored raw.
//!
//! The context of residual `i` of a tile whose rows are `width` words long comes from
//! `up`, the bit length of residual `i - width` (the same series one time step earlier;
//! on the first row, `left`) and `left`, the bit length of residual `i - left` (the
//! same component of the neighbouring element, `left` being the component count):
//! `up` falls into one of `buckets` classes (class 0 for a zero residual, then one class
//! per bit length from `base` on, the last class open-ended), and with `split` = 3 the
//! sign of `left - up` refines it. Small tiles use fewer contexts, so their tables cost
//! less than they save.

use super::bitio::{BitReader, BitWriter};
use super::Dims;
use crate::word::Word;

/// Most contexts a tile can use.
pub const MAX_CONTEXTS: usize = 48;

/// How a tile's contexts are formed; recorded in the first 3 bytes of its coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextConfig {
    /// Classes of `up` (1..=16).
    pub buckets: u8,
    /// 1, or 3 to refine each class by the sign of `left - up`.
    pub split: u8,
    /// Bit length of `up` that class 1 stands for.
    pub base: u8,
}

/// Bytes of a recorded [`ContextConfig`].
pub const CONFIG_LEN: usize = 3;

impl ContextConfig {
    /// The configuration for `classes` (bit lengths of a tile's residuals): more contexts
    /// for more residuals, the classes centred on the median nonzero bit length.
    pub fn choose(classes: &[u8]) -> ContextConfig {
        let (buckets, split) = match classes.len() {
            0..2048 => (1, 1),
            2048..16384 => (6, 1),
            _ => (16, 3),
        };
        let mut hist = [0usize; 65];
        for &c in classes {
            hist[usize::from(c)] += 1;
        }
        let nonzero: usize = hist[1..].iter().sum();
        let mut seen = 0;
        let median = (1..65)
            .find(|&c| {
                seen += hist[c];
                2 * seen >= nonzero
            })
            .unwrap_or(1);
        let base = median.saturating_sub(usize::from(buckets - 1) / 2).max(1) as u8;
        ContextConfig {
            buckets,
            split,
            base,
        }
    }

    /// Number of contexts.
    pub fn contexts(self) -> usize {
        usize::from(self.buckets) * usize::from(self.split)
    }

    /// Appends the configuration's bytes.
    pub fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.buckets, self.split, self.base]);
    }

    /// The configuration at the start of `input`, validated.
    pub fn read(input: &[u8]) -> Result<ContextConfig, String> {
        let &[buckets, split, base] = input
            .first_chunk::<CONFIG_LEN>()
            .ok_or("coding shorter than its context configuration")?;
        if !(1..=16).contains(&buckets) || !(split == 1 || split == 3) || base == 0 {
            return Err(format!(
                "invalid context configuration {buckets}/{split}/{base}"
            ));
        }
        Ok(ContextConfig {
            buckets,
            split,
            base,
        })
    }

    /// Context of a residual whose neighbours have bit lengths `up` and `left`.
    #[inline(always)]
    pub fn context(self, up: u8, left: u8) -> usize {
        let last = i32::from(self.buckets) - 1;
        let class = if up == 0 {
            0
        } else {
            (i32::from(up) - i32::from(self.base) + 1).clamp(1.min(last), last)
        };
        let refine = if self.split == 3 {
            (i32::from(left) - i32::from(up)).signum() + 1
        } else {
            0
        };
        (class * i32::from(self.split) + refine) as usize
    }
}

/// Number of token symbols for words of type `T`: bit lengths 0..=BITS.
pub fn alphabet<T: Word>() -> usize {
    T::BITS as usize + 1
}

/// Bit length of each value.
pub fn classes<T: Word>(values: &[T]) -> Vec<u8> {
    values.iter().map(|v| v.bit_length() as u8).collect()
}

/// Context of each value (see the module documentation).
pub fn contexts(classes: &[u8], dims: Dims, cfg: ContextConfig) -> Vec<u8> {
    let (width, step) = (dims.width.max(1), dims.left.max(1));
    (0..classes.len())
        .map(|i| {
            let left = if i >= step { classes[i - step] } else { 0 };
            let up = if i >= width { classes[i - width] } else { left };
            cfg.context(up, left) as u8
        })
        .collect()
}

/// Token counts per context.
pub fn count(classes: &[u8], contexts: &[u8], n_contexts: usize, alphabet: usize) -> Vec<u32> {
    let mut counts = vec![0u32; n_contexts * alphabet];
    for (&c, &x) in classes.iter().zip(contexts) {
        counts[usize::from(x) * alphabet + usize::from(c)] += 1;
    }
    counts
}

/// Appends the raw bits (those below the leading one) of every value.
pub fn write_raw_bits<T: Word>(values: &[T], classes: &[u8], w: &mut BitWriter) {
    for (v, &c) in values.iter().zip(classes) {
        if c >= 2 {
            let n = u32::from(c) - 1;
            w.put_wide(v.to_u64() & (u64::MAX >> (64 - n)), n);
        }
    }
}

/// The value of bit length `class` whose raw bits come next from `r`.
#[inline(always)]
pub fn read_value<T: Word>(class: u8, r: &mut BitReader<'_>) -> T {
    let v = match class {
        0 => 0,
        1 => 1,
        c => {
            let n = u32::from(c) - 1;
            (1u64 << n) | r.get_wide(n)
        }
    };
    T::from_u64(v)
}

/// Estimated bits of coding `values` (laid out as `dims` says): the empirical
/// conditional entropy of the tokens plus the raw bits, without table costs.
pub fn estimate_bits<T: Word>(values: &[T], dims: Dims) -> u64 {
    let classes = classes(values);
    let cfg = ContextConfig::choose(&classes);
    let ctx = contexts(&classes, dims, cfg);
    let alphabet = alphabet::<T>();
    let counts = count(&classes, &ctx, cfg.contexts(), alphabet);
    let raw: u64 = classes
        .iter()
        .map(|&c| u64::from(c.saturating_sub(1)))
        .sum();
    let mut bits = 0.0f64;
    for row in counts.chunks(alphabet) {
        let total: u32 = row.iter().sum();
        if total == 0 {
            continue;
        }
        let t = f64::from(total);
        bits += row
            .iter()
            .filter(|&&n| n > 0)
            .map(|&n| f64::from(n) * (t / f64::from(n)).log2())
            .sum::<f64>();
    }
    raw + bits as u64
}
