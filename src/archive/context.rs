//! The context model of the archive coders: each residual becomes a token, its bit
//! length `c` and the `token_bits` (1 or 2, chosen per tile) bits below its leading
//! one, coded with a table chosen by the bit lengths of its neighbours, followed by its
//! remaining low bits, stored raw (a "hybrid integer", as JPEG XL calls it). With
//! `k = token_bits`, values below `2^(k + 1)` are their own token; above, a value's
//! token is `2^(k + 1) + (c - k - 2) 2^k + m`, `m` the `k` bits below its leading one.
//!
//! The context of residual `i` of a tile whose rows are `width` words long comes from
//! `up`, the bit length of residual `i - width` (the same series one time step earlier;
//! on the first row, `left`) and `left`, the bit length of residual `i - left` (the
//! same component of the neighbouring element, `left` being the component count):
//! `up` falls into one of `buckets` classes (class 0 for a zero residual, then one class
//! per bit length from `base` on, the last class open-ended), and with `split` = 3 the
//! sign of `left - up` refines it. Small tiles use fewer contexts, so their tables cost
//! less than they save.

use crate::bits::io::{BitReader, BitWriter};
use crate::isa;
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// How a tile's contexts and tokens are formed; recorded in the first
/// [`CONFIG_LEN`] bytes of its coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextConfig {
    /// Classes of `up` (1..=16).
    pub buckets: u8,
    /// 1, or 3 to refine each class by the sign of `left - up`.
    pub split: u8,
    /// Bit length of `up` that class 1 stands for.
    pub base: u8,
    /// Bits below the leading one that a token carries (1 or 2); with float fields,
    /// the mantissa bits a token carries (0 to 4).
    pub token_bits: u8,
    /// With tokens of float fields (coder 10), the word's fields and the window of
    /// exponents that have tokens of their own; `None` for bit-length tokens.
    pub fields: Option<FloatFields>,
}

/// Bytes of a recorded [`ContextConfig`] with bit-length tokens.
pub const CONFIG_LEN: usize = 4;

/// Bytes a recorded [`FloatFields`] window adds to its [`ContextConfig`].
pub const FIELDS_LEN: usize = 3;

/// The fields of an IEEE 754 word of `word_bits` bits (sign, `exponent_bits` exponent
/// bits, the rest mantissa) and the window of exponent fields `emin .. emin + count`
/// whose values have tokens of their own: tokens of sign, exponent and top mantissa
/// bits (coder 10), for values that no predictor helps, coded by their distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatFields {
    /// Bits in a word (8, 16, 32 or 64).
    pub word_bits: u8,
    /// Exponent bits of the word (4, 5, 8 or 11).
    pub exponent_bits: u8,
    /// The first exponent field of the window.
    pub emin: u16,
    /// Exponent fields in the window (1 to [`MAX_WINDOW`]).
    pub count: u8,
}

/// Most exponent fields a window holds: their classes (2 on) stay bit-length sized.
pub const MAX_WINDOW: u8 = 63;

/// Most exponent fields a window of tokens of `token_bits` mantissa bits can hold:
/// [`MAX_WINDOW`], or fewer to keep the alphabet (3 tokens, then 2 signs times
/// `2^token_bits` per exponent) within 256 tokens.
pub fn widest_window(token_bits: u8) -> u8 {
    MAX_WINDOW.min(((256 - 3) >> (token_bits + 1)) as u8)
}

/// Most mantissa bits a float-field token carries.
pub const MAX_FIELD_TOKEN_BITS: u8 = 4;

impl FloatFields {
    /// The window `emin .. emin + count` of words of type `T`.
    pub fn of<T: Word>(emin: u16, count: u8) -> FloatFields {
        FloatFields {
            word_bits: T::BITS as u8,
            exponent_bits: exponent_bits(T::BITS),
            emin,
            count,
        }
    }

    /// Mantissa bits of the word.
    #[inline(always)]
    pub fn mantissa_bits(self) -> u32 {
        u32::from(self.word_bits) - 1 - u32::from(self.exponent_bits)
    }

    /// The exponent field of `v`.
    #[inline(always)]
    pub fn exponent(self, v: u64) -> u32 {
        (v >> self.mantissa_bits()) as u32 & ((1 << self.exponent_bits) - 1)
    }

    /// The sign bit of `v`.
    #[inline(always)]
    fn sign(self, v: u64) -> u32 {
        (v >> (self.word_bits - 1)) as u32 & 1
    }

    /// The class of `v`: 0 for zero, 1 for an escape (an exponent outside the window),
    /// else 2 plus its exponent's place in the window.
    #[inline(always)]
    pub fn class(self, v: u64) -> u8 {
        if v == 0 {
            return 0;
        }
        let at = self.exponent(v).wrapping_sub(u32::from(self.emin));
        if at < u32::from(self.count) {
            at as u8 + 2
        } else {
            1
        }
    }
}

/// Exponent bits of an IEEE 754 word (binary16, 32, 64; the 8-bit E4M3 layout for
/// bytes).
pub fn exponent_bits(word_bits: u32) -> u8 {
    match word_bits {
        8 => 4,
        16 => 5,
        32 => 8,
        _ => 11,
    }
}

impl ContextConfig {
    /// The layout of `buckets` classes of `up` (each refined by the sign of `left - up`
    /// when `split` is 3) centred on `median`, the median nonzero bit length of a
    /// tile's residuals; `token_bits` 1.
    fn centred(median: u8, buckets: u8, split: u8) -> ContextConfig {
        let base = median.saturating_sub((buckets - 1) / 2).max(1);
        ContextConfig {
            buckets,
            split,
            base,
            token_bits: 1,
            fields: None,
        }
    }

    /// One context, `token_bits` 1 and bit-length tokens: the layout whose
    /// token and class functions the others share.
    pub fn single() -> ContextConfig {
        ContextConfig::centred(1, 1, 1)
    }

    /// The fixed layout for `n` residuals whose median nonzero bit length is `median`:
    /// more contexts for more residuals. Estimates use it; the encoder chooses among
    /// [`LAYOUTS`] instead.
    fn by_count(n: usize, median: u8) -> ContextConfig {
        let (buckets, split) = match n {
            0..2048 => (1, 1),
            2048..16384 => (6, 1),
            _ => (16, 3),
        };
        ContextConfig::centred(median, buckets, split)
    }

    /// Context of a residual whose neighbourhood (see [`neighbourhoods`]) is `nb`.
    #[inline(always)]
    fn context_of_neighbourhood(self, nb: u8) -> usize {
        let (up, refine) = (nb / 3, nb % 3);
        let left = match refine {
            0 => up - 1,
            1 => up,
            _ => up + 1,
        };
        self.context(up, left)
    }

    /// Number of contexts.
    pub fn contexts(self) -> usize {
        usize::from(self.buckets) * usize::from(self.split)
    }

    /// Appends the configuration's bytes ([`Self::len`] of them).
    pub fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.buckets, self.split, self.base, self.token_bits]);
        if let Some(f) = self.fields {
            out.extend_from_slice(&f.emin.to_le_bytes());
            out.push(f.count);
        }
    }

    /// Bytes of the recorded configuration.
    pub fn len(self) -> usize {
        CONFIG_LEN + if self.fields.is_some() { FIELDS_LEN } else { 0 }
    }

    /// The configuration of float-field tokens (coder 10) for words of type `T` at the
    /// start of `input`, validated.
    pub fn read_fields<T: Word>(input: &[u8]) -> Result<ContextConfig, StreamError> {
        let short = StreamError::Truncated("coding shorter than its context configuration");
        let bytes = input
            .first_chunk::<{ CONFIG_LEN + FIELDS_LEN }>()
            .ok_or(short)?;
        let &[buckets, split, base, token_bits, e0, e1, count] = bytes;
        let layout = ContextConfig::read_layout(buckets, split, base, token_bits, 0..=4)?;
        let fields = FloatFields::of::<T>(u16::from_le_bytes([e0, e1]), count);
        let cfg = ContextConfig {
            fields: Some(fields),
            ..layout
        };
        if u32::from(token_bits) > fields.mantissa_bits()
            || !(1..=MAX_WINDOW).contains(&count)
            || u32::from(fields.emin) + u32::from(count) > 1 << fields.exponent_bits
            || cfg.alphabet::<T>() > 256
        {
            return Err(StreamError::FloatWindow {
                token_bits,
                emin: fields.emin,
                count,
                word_bits: T::BITS,
            });
        }
        Ok(cfg)
    }

    /// The configuration of bytes `buckets`, `split`, `base` and `token_bits`, checked
    /// against the format's ranges, `token_bits` against `widths`.
    fn read_layout(
        buckets: u8,
        split: u8,
        base: u8,
        token_bits: u8,
        widths: std::ops::RangeInclusive<u8>,
    ) -> Result<ContextConfig, StreamError> {
        if !(1..=16).contains(&buckets)
            || !(split == 1 || split == 3)
            || base == 0
            || !widths.contains(&token_bits)
        {
            return Err(StreamError::ContextConfig {
                buckets,
                split,
                base,
                token_bits,
            });
        }
        Ok(ContextConfig {
            buckets,
            split,
            base,
            token_bits,
            fields: None,
        })
    }

    /// The configuration at the start of `input`, validated.
    pub fn read(input: &[u8]) -> Result<ContextConfig, StreamError> {
        let short = StreamError::Truncated("coding shorter than its context configuration");
        let &[buckets, split, base, token_bits] = input.first_chunk::<CONFIG_LEN>().ok_or(short)?;
        ContextConfig::read_layout(buckets, split, base, token_bits, 1..=2)
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

    /// Values below this are their own token.
    #[inline(always)]
    fn direct(self) -> u32 {
        2 << self.token_bits
    }

    /// Number of token symbols for words of type `T` (at most 256).
    pub fn alphabet<T: Word>(self) -> usize {
        let k = u32::from(self.token_bits);
        match self.fields {
            None => (self.direct() + (T::BITS - k - 1) * (1 << k)) as usize,
            Some(f) => 3 + (usize::from(f.count) << (k + 1)),
        }
    }

    /// The class of value `v`: its bit length, or with float fields its
    /// [`FloatFields::class`].
    #[inline(always)]
    pub fn class(self, v: u64) -> u8 {
        match self.fields {
            None => (64 - v.leading_zeros()) as u8,
            Some(f) => f.class(v),
        }
    }

    /// The token of value `v` of class `c`.
    #[inline(always)]
    pub fn token(self, v: u64, c: u8) -> u8 {
        let k = u32::from(self.token_bits);
        if let Some(f) = self.fields {
            return match c {
                0 => 0,
                1 => 1 + f.sign(v) as u8,
                _ => {
                    let top = (v >> (f.mantissa_bits() - k)) as u32 & ((1 << k) - 1);
                    let place = (u32::from(c) - 2) << 1 | f.sign(v);
                    (3 + (place << k) + top) as u8
                }
            };
        }
        // Branch-free: with `s` the bits below the token's (none for a value below
        // `direct`), the value's top `k + 1` bits `v >> s` (leading one included) plus
        // `s << k` is `direct + ((c - k - 2) << k) + m` for the others.
        let s = u32::from(c).saturating_sub(k + 1);
        ((v >> s) + (u64::from(s) << k)) as u8
    }

    /// Class of the values token `t` stands for.
    #[inline(always)]
    pub fn class_of(self, t: u8) -> u8 {
        let t = u32::from(t);
        if self.fields.is_some() {
            return match t {
                0 => 0,
                1 | 2 => 1,
                _ => ((t - 3) >> (self.token_bits + 1)) as u8 + 2,
            };
        }
        if t < self.direct() {
            (32 - t.leading_zeros()) as u8
        } else {
            ((t - self.direct()) >> self.token_bits) as u8 + self.token_bits + 2
        }
    }

    /// Raw bits of a value of class `c`: those below the token's.
    #[inline(always)]
    pub fn raw_bits(self, c: u8) -> u32 {
        match self.fields {
            None => u32::from(c).saturating_sub(u32::from(self.token_bits) + 1),
            Some(f) => match c {
                0 => 0,
                1 => u32::from(f.word_bits) - 1,
                _ => f.mantissa_bits() - u32::from(self.token_bits),
            },
        }
    }

    /// What token `t` stands for: its class, the number `n` of raw bits that follow
    /// it, and the bits of its value above those (the value is `top << n | raw`).
    pub fn token_value(self, t: u8) -> (u8, u32, u64) {
        let c = self.class_of(t);
        let n = self.raw_bits(c);
        let k = u32::from(self.token_bits);
        let top = match self.fields {
            None if n == 0 => u64::from(t),
            None => u64::from(t) & ((1 << k) - 1) | 1 << k,
            Some(f) => match t {
                0 => 0,
                1 | 2 => u64::from(t - 1),
                _ => {
                    let u = u64::from(t - 3);
                    let sign = u >> k & 1;
                    let exponent = u64::from(f.emin) + (u >> (k + 1));
                    ((sign << f.exponent_bits | exponent) << k) | u & ((1 << k) - 1)
                }
            },
        };
        (c, n, top)
    }

    /// The value of token `t` whose raw bits come next from `r`, and its class.
    #[inline(always)]
    pub fn read_value<T: Word>(self, t: u8, r: &mut BitReader<'_>) -> (T, u8) {
        let (c, n, top) = self.token_value(t);
        let v = if n == 0 {
            top
        } else {
            top << n | r.get_wide(n)
        };
        (T::from_u64(v), c)
    }

    /// Appends the raw bits of every value.
    pub fn write_raw_bits<T: Word>(self, values: &[T], classes: &[u8], out: &mut BitWriter) {
        let widths: [u8; CLASSES] = std::array::from_fn(|c| self.raw_bits(c as u8) as u8);
        let fields = values.iter().zip(classes).map(|(v, &c)| {
            let n = u32::from(widths[usize::from(c)]);
            (v.to_u64() & u64::MAX.checked_shr(64 - n).unwrap_or(0), n)
        });
        if T::BYTES <= 4 {
            out.put_all(fields, values.len() * T::BYTES * 8);
        } else {
            for (bits, n) in fields {
                out.put_wide(bits, n);
            }
        }
    }
}

/// A tile's residuals as the context model sees them.
#[derive(Debug)]
pub struct Model {
    /// How contexts and tokens are formed.
    pub cfg: ContextConfig,
    /// Bit length of each residual.
    pub classes: Vec<u8>,
    /// Context of each residual.
    pub contexts: Vec<u8>,
    /// Token of each residual.
    pub tokens: Vec<u8>,
    /// Token counts per context (`cfg.contexts()` rows of `cfg.alphabet()`).
    pub counts: Vec<u32>,
    /// Estimated coded bits: token entropy per context, raw bits and tables.
    pub estimated_bits: u64,
}

impl Model {
    /// The model of `values` laid out as `dims` says with the layout of [`LAYOUTS`] and
    /// the token width that give the smallest estimated size, tables included: a tile
    /// of a few thousand residuals cannot pay for 48 tables, one of a million gains
    /// from them.
    pub fn build_best<T: Word>(values: &[T], dims: Dims) -> Model {
        Model::build_best_of(values, dims, None, &[1, 2])
    }

    /// [`Model::build_best`] with tokens of float fields `fields` (or bit-length tokens
    /// for `None`), choosing the token width among `widths`.
    pub fn build_best_of<T: Word>(
        values: &[T],
        dims: Dims,
        fields: Option<FloatFields>,
        widths: &[u8],
    ) -> Model {
        let classifier = ContextConfig {
            fields,
            ..ContextConfig::single()
        };
        let classes = classes_of(values, classifier);
        let histogram = class_histogram(&classes);
        let median = median_nonzero(&histogram);
        let nbs = neighbourhoods(&classes, dims);
        let mut used = [false; NEIGHBOURHOODS];
        for &nb in &nbs {
            used[usize::from(nb)] = true;
        }
        let used: Vec<u8> = (0..NEIGHBOURHOODS as u8)
            .filter(|&nb| used[usize::from(nb)])
            .collect();
        // Tokens of the widest width, counted once per neighbourhood; those of the
        // narrower widths are a function of them.
        let token_config = |token_bits| ContextConfig {
            token_bits,
            fields,
            ..ContextConfig::centred(median, 1, 1)
        };
        let wide = token_config(*widths.iter().max().expect("at least one width"));
        let wide_tokens = tokens(values, &classes, wide);
        let wide_fine = token_counts(&wide_tokens, &nbs, NEIGHBOURHOODS, wide.alphabet::<T>());
        let wide_present = present_tokens(&wide_fine, wide.alphabet::<T>());
        // The best so far: its model without tokens, and each neighbourhood's context.
        let mut best: Option<(Model, [u8; NEIGHBOURHOODS])> = None;
        for &token_bits in widths {
            let cfg1 = token_config(token_bits);
            let alphabet = cfg1.alphabet::<T>();
            let (narrowed, narrow_present);
            let (fine, present) = if cfg1 == wide {
                (&wide_fine[..], &wide_present[..])
            } else {
                let narrowing = Narrowing::of(wide, cfg1, wide_present.clone());
                (narrowed, narrow_present) = (
                    narrowing.counts::<T>(&wide_fine, wide, cfg1),
                    narrowing.present(),
                );
                (&narrowed[..], &narrow_present[..])
            };
            let raw = raw_bits(&histogram, cfg1);
            for &(buckets, split) in &LAYOUTS {
                let cfg = ContextConfig {
                    token_bits,
                    fields,
                    ..ContextConfig::centred(median, buckets, split)
                };
                let mut map = [0u8; NEIGHBOURHOODS];
                let mut counts = vec![0u32; cfg.contexts() * alphabet];
                for &nb in &used {
                    let x = cfg.context_of_neighbourhood(nb);
                    map[usize::from(nb)] = x as u8;
                    let from = &fine[usize::from(nb) * alphabet..][..alphabet];
                    let to = &mut counts[x * alphabet..][..alphabet];
                    for &t in present {
                        to[usize::from(t)] += from[usize::from(t)];
                    }
                }
                let estimated_bits = raw + entropy_and_table_bits_of(&counts, alphabet, present);
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| estimated_bits < b.estimated_bits)
                {
                    let model = Model {
                        cfg,
                        classes: Vec::new(),
                        contexts: Vec::new(),
                        tokens: Vec::new(),
                        counts,
                        estimated_bits,
                    };
                    best = Some((model, map));
                }
            }
        }
        let (mut model, map) = best.expect("at least one layout");
        model.tokens = if model.cfg.token_bits == wide.token_bits {
            wide_tokens
        } else {
            let narrow = token_config(model.cfg.token_bits);
            Narrowing::of(wide, narrow, wide_present).apply(&wide_tokens)
        };
        model.contexts = nbs.iter().map(|&nb| map[usize::from(nb)]).collect();
        model.classes = classes;
        model
    }
}

/// How the tokens of one width map to those of a narrower one: each token of the wider
/// width stands for values that all have one token of the narrower (its class and its
/// top bits, of which the narrower keeps the first).
#[derive(Debug, Clone)]
struct Narrowing {
    /// The narrower token of each wider one that occurs (0 for the others).
    map: [u8; 256],
    /// The wider tokens that occur, increasing.
    present: Vec<u8>,
}

impl Narrowing {
    /// The narrowing from tokens of `wide` to those of `narrow` (same fields, no more
    /// token bits), for the tokens of `wide` that occur, `present` (increasing).
    fn of(wide: ContextConfig, narrow: ContextConfig, present: Vec<u8>) -> Narrowing {
        debug_assert!(narrow.token_bits <= wide.token_bits && narrow.fields == wide.fields);
        let mut map = [0u8; 256];
        for &t in &present {
            let (c, n, top) = wide.token_value(t);
            map[usize::from(t)] = narrow.token(top << n, c);
        }
        Narrowing { map, present }
    }

    /// `counts` (rows of `wide`'s alphabet) as rows of `narrow`'s.
    fn counts<T: Word>(
        &self,
        counts: &[u32],
        wide: ContextConfig,
        narrow: ContextConfig,
    ) -> Vec<u32> {
        let (from, to) = (wide.alphabet::<T>(), narrow.alphabet::<T>());
        let mut narrowed = vec![0u32; counts.len() / from * to];
        for (row, out) in counts.chunks_exact(from).zip(narrowed.chunks_exact_mut(to)) {
            for &t in &self.present {
                out[usize::from(self.map[usize::from(t)])] += row[usize::from(t)];
            }
        }
        narrowed
    }

    /// The narrower tokens that occur, increasing.
    fn present(&self) -> Vec<u8> {
        let mut narrow: Vec<u8> = self
            .present
            .iter()
            .map(|&t| self.map[usize::from(t)])
            .collect();
        narrow.dedup();
        narrow
    }

    /// The narrower token of each of `tokens`.
    fn apply(&self, tokens: &[u8]) -> Vec<u8> {
        tokens.iter().map(|&t| self.map[usize::from(t)]).collect()
    }
}

impl Model {
    /// Builds the model of `values` with the best layout ([`Model::build_best`]) and
    /// writes its configuration to `out`: the start of every archive coder's coding.
    pub fn build_and_write<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) -> Model {
        let model = Model::build_best(values, dims);
        model.cfg.write(out);
        model
    }

    /// The token counts of each context, in context order.
    pub fn context_counts<T: Word>(&self) -> std::slice::Chunks<'_, u32> {
        self.counts.chunks(self.cfg.alphabet::<T>())
    }
}

/// Empirical entropy of the token counts of each context, plus what their tables cost
/// as [`super::context_ans`] stores them: a bit for an unused context, else 17 bits and
/// 6 per token from its first to its last present one.
pub(super) fn entropy_and_table_bits(counts: &[u32], alphabet: usize) -> u64 {
    let tokens: Vec<u8> = (0..alphabet).map(|t| t as u8).collect();
    entropy_and_table_bits_of(counts, alphabet, &tokens)
}

/// [`entropy_and_table_bits`] of `counts` whose nonzero counts are all among the tokens
/// `present` (increasing): the others are not looked at.
fn entropy_and_table_bits_of(counts: &[u32], alphabet: usize, present: &[u8]) -> u64 {
    let mut bits = 0.0f64;
    let mut table = 0u64;
    for row in counts.chunks(alphabet) {
        let mut nonzero = present
            .iter()
            .map(|&t| usize::from(t))
            .filter(|&t| row[t] > 0);
        let Some(lo) = nonzero.next() else {
            table += 1;
            continue;
        };
        let hi = nonzero.next_back().unwrap_or(lo);
        let present = present
            .iter()
            .map(|&t| row[usize::from(t)])
            .filter(|&n| n > 0);
        let total: u32 = present.clone().sum();
        let t = f64::from(total);
        table += 17 + 6 * (hi - lo + 1) as u64;
        bits += present
            .map(|n| f64::from(n) * (t / f64::from(n)).log2())
            .sum::<f64>();
    }
    bits as u64 + table
}

/// The tokens with a nonzero count in any row of `counts` (rows of `alphabet`),
/// increasing.
fn present_tokens(counts: &[u32], alphabet: usize) -> Vec<u8> {
    let mut occurs = [false; 256];
    for row in counts.chunks_exact(alphabet) {
        for (o, &n) in occurs.iter_mut().zip(row) {
            *o |= n > 0;
        }
    }
    (0..alphabet)
        .filter(|&t| occurs[t])
        .map(|t| t as u8)
        .collect()
}

/// The layouts (`buckets`, `split`) the encoder chooses among.
const LAYOUTS: [(u8, u8); 8] = [
    (1, 1),
    (3, 1),
    (6, 1),
    (10, 1),
    (16, 1),
    (6, 3),
    (10, 3),
    (16, 3),
];

/// Number of neighbourhoods (see [`neighbourhoods`]): 65 bit lengths of `up`, 3 signs.
const NEIGHBOURHOODS: usize = 65 * 3;

/// Classes a value can have: bit lengths 0 to 64, and float-field classes (0, 1, then 2
/// on for the exponents of a window of at most [`MAX_WINDOW`]).
const CLASSES: usize = 65;

/// How many of `classes` (each below [`CLASSES`]) there are of each class.
fn class_histogram(classes: &[u8]) -> [u32; CLASSES] {
    // Four histograms, so that runs of one class do not wait on their own increments.
    let mut partial = [[0u32; CLASSES]; 4];
    let quads = classes.chunks_exact(4);
    for &c in quads.remainder() {
        partial[0][usize::from(c)] += 1;
    }
    for q in quads {
        for (h, &c) in partial.iter_mut().zip(q) {
            h[usize::from(c)] += 1;
        }
    }
    let mut histogram = partial[0];
    for h in &partial[1..] {
        for (a, &b) in histogram.iter_mut().zip(h) {
            *a += b;
        }
    }
    histogram
}

/// The median of the nonzero classes counted in `histogram` (1 when all are zero).
fn median_nonzero(histogram: &[u32; CLASSES]) -> u8 {
    let nonzero: u64 = histogram[1..].iter().map(|&n| u64::from(n)).sum();
    let mut seen = 0u64;
    (1..CLASSES)
        .find(|&c| {
            seen += u64::from(histogram[c]);
            2 * seen >= nonzero
        })
        .unwrap_or(1) as u8
}

/// The class of each of `values` under `cfg`.
fn classes_of<T: Word>(values: &[T], cfg: ContextConfig) -> Vec<u8> {
    let mut classes = vec![0u8; values.len()];
    match cfg.fields {
        None => isa::vectorised(
            #[inline(always)]
            || {
                for (c, v) in classes.iter_mut().zip(values) {
                    *c = v.bit_length() as u8;
                }
            },
        ),
        Some(_) => {
            for (c, v) in classes.iter_mut().zip(values) {
                *c = cfg.class(v.to_u64());
            }
        }
    }
    classes
}

/// The token of each of `values` (bit lengths `classes`) under `cfg`.
fn tokens<T: Word>(values: &[T], classes: &[u8], cfg: ContextConfig) -> Vec<u8> {
    let mut tokens = vec![0u8; values.len()];
    isa::vectorised(
        #[inline(always)]
        || {
            for (t, (v, &c)) in tokens.iter_mut().zip(values.iter().zip(classes)) {
                *t = cfg.token(v.to_u64(), c);
            }
        },
    );
    tokens
}

/// Counts of `tokens` by their `rows` (each below `row_count`), in rows of `alphabet`.
fn token_counts(tokens: &[u8], rows: &[u8], row_count: usize, alphabet: usize) -> Vec<u32> {
    let mut counts = vec![0u32; row_count * alphabet];
    for (&t, &r) in tokens.iter().zip(rows) {
        counts[usize::from(r) * alphabet + usize::from(t)] += 1;
    }
    counts
}

/// Raw bits of the values whose classes `histogram` counts under `cfg`.
fn raw_bits(histogram: &[u32; CLASSES], cfg: ContextConfig) -> u64 {
    (histogram.iter().enumerate())
        .filter(|&(_, &n)| n > 0)
        .map(|(c, &n)| u64::from(n) * u64::from(cfg.raw_bits(c as u8)))
        .sum()
}

/// The bit lengths `(up, left)` of each value's neighbours (see the module
/// documentation): `left` the value `dims.left` back (0 when there is none), `up` the
/// value a row back (`left` on the first row).
fn neighbours(classes: &[u8], dims: Dims) -> impl Iterator<Item = (u8, u8)> + '_ {
    let (width, step) = (dims.width.max(1), dims.left.max(1));
    (0..classes.len()).map(move |i| {
        let left = if i >= step { classes[i - step] } else { 0 };
        let up = if i >= width { classes[i - width] } else { left };
        (up, left)
    })
}

/// What every layout's context of each value is a function of: `3 up + 1 + sign(left - up)`
/// with `up` and `left` as [`neighbours`] gives them.
fn neighbourhoods(classes: &[u8], dims: Dims) -> Vec<u8> {
    let of = |up: u8, left: u8| 3 * up + 1 + u8::from(left > up) - u8::from(left < up);
    // The values with both neighbours in the tile, past the first `head`, in one
    // vectorised pass.
    let (width, step) = (dims.width.max(1), dims.left.max(1));
    let head = classes.len().min(width.max(step));
    let mut out = vec![0u8; classes.len()];
    for (o, (up, left)) in out.iter_mut().zip(neighbours(&classes[..head], dims)) {
        *o = of(up, left);
    }
    isa::vectorised(
        #[inline(always)]
        || {
            let ups = &classes[head - head.min(width)..];
            let lefts = &classes[head - head.min(step)..];
            for (o, (&up, &left)) in out[head..].iter_mut().zip(ups.iter().zip(lefts)) {
                *o = of(up, left);
            }
        },
    );
    out
}

/// Context of each value (see the module documentation).
#[cfg(test)]
pub fn contexts(classes: &[u8], dims: Dims, cfg: ContextConfig) -> Vec<u8> {
    neighbours(classes, dims)
        .map(|(up, left)| cfg.context(up, left) as u8)
        .collect()
}

/// Estimated bits of coding `values` (laid out as `dims` says) with the fixed layout
/// for their count ([`ContextConfig::by_count`]) and the token width (1 or 2 bits below
/// the leading one) that gives the smaller size: what the coding search estimates with.
pub fn estimate_bits<T: Word>(values: &[T], dims: Dims) -> u64 {
    let classes = classes_of(values, ContextConfig::single());
    let histogram = class_histogram(&classes);
    let layout = ContextConfig::by_count(classes.len(), median_nonzero(&histogram));
    let wide = ContextConfig {
        token_bits: 2,
        ..layout
    };
    let alphabet = wide.alphabet::<T>();
    let mut counts = vec![0u32; wide.contexts() * alphabet];
    let tokens = tokens(values, &classes, wide);
    if wide.contexts() == 1 {
        for &t in &tokens {
            counts[usize::from(t)] += 1;
        }
    } else {
        for (&t, (up, left)) in tokens.iter().zip(neighbours(&classes, dims)) {
            counts[wide.context(up, left) * alphabet + usize::from(t)] += 1;
        }
    }
    let narrow = ContextConfig {
        token_bits: 1,
        ..layout
    };
    let present = present_tokens(&counts, alphabet);
    let narrowing = Narrowing::of(wide, narrow, present.clone());
    let narrowed = narrowing.counts::<T>(&counts, wide, narrow);
    let narrow_bits = raw_bits(&histogram, narrow)
        + entropy_and_table_bits_of(&narrowed, narrow.alphabet::<T>(), &narrowing.present());
    let wide_bits =
        raw_bits(&histogram, wide) + entropy_and_table_bits_of(&counts, alphabet, &present);
    narrow_bits.min(wide_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_values_into_class_and_top_bits() {
        for token_bits in [1u8, 2] {
            let cfg = ContextConfig {
                buckets: 1,
                split: 1,
                base: 1,
                token_bits,
                fields: None,
            };
            let mut previous = None;
            for v in (0u64..5000).chain([u32::MAX.into(), u64::MAX - 1, u64::MAX]) {
                let c = (64 - v.leading_zeros()) as u8;
                let t = cfg.token(v, c);
                assert_eq!(cfg.class_of(t), c, "{v}");
                assert!(usize::from(t) < cfg.alphabet::<u64>());
                // Tokens never decrease as values grow.
                if v < 5000 {
                    assert!(previous.is_none_or(|p| p <= t));
                    previous = Some(t);
                }
                let mut w = BitWriter::default();
                cfg.write_raw_bits(&[v], &[c], &mut w);
                let bytes = w.finish();
                let (back, class) = cfg.read_value::<u64>(t, &mut BitReader::new(&bytes));
                assert_eq!((back, class), (v, c));
            }
        }
        let two = ContextConfig {
            buckets: 1,
            split: 1,
            base: 1,
            token_bits: 2,
            fields: None,
        };
        assert_eq!(two.alphabet::<u64>(), 252);
        assert_eq!(two.alphabet::<u8>(), 28);
        assert_eq!(
            (two.token(7, 3), two.token(8, 4), two.token(15, 4)),
            (7, 8, 11)
        );
    }

    #[test]
    fn the_layout_is_chosen_with_what_its_tables_cost() {
        // 20 000 residuals whose bit lengths owe nothing to their neighbours': the layout
        // by count has 48 contexts, whose tables cost more than they save.
        let hash = |i: u32| i.wrapping_mul(2_654_435_761);
        let values: Vec<u32> = (0..20_000u32)
            .map(|i| hash(i) >> (8 + hash(i ^ 0x5555) % 13))
            .collect();
        let dims = Dims {
            width: 100,
            left: 1,
        };
        let fixed_bits = estimate_bits(&values, dims);
        let best = Model::build_best(&values, dims);
        assert_eq!(ContextConfig::by_count(values.len(), 1).contexts(), 48);
        assert!(best.cfg.contexts() < 48, "{:?}", best.cfg);
        assert!(best.estimated_bits < fixed_bits);
        // Every value's context is the one decoders derive from its neighbours.
        assert_eq!(best.contexts, contexts(&best.classes, dims, best.cfg));
        // Residuals whose bit lengths follow their neighbours' keep many contexts.
        let values: Vec<u32> = (0..20_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> (8 + (i / 100 + i % 100 / 10) % 20))
            .collect();
        let best = Model::build_best(&values, dims);
        assert!(best.cfg.contexts() > 3, "{:?}", best.cfg);
        assert_eq!(best.contexts, contexts(&best.classes, dims, best.cfg));
    }

    /// Counts of narrow tokens, counted directly and narrowed from wide ones, for the
    /// values of `values` under `wide` and every narrower token width.
    fn check_narrowing<T: Word>(values: &[T], wide: ContextConfig) {
        let classes: Vec<u8> = values.iter().map(|v| wide.class(v.to_u64())).collect();
        let rows: Vec<u8> = (0..values.len()).map(|i| (i % 3) as u8).collect();
        let wide_counts = token_counts(
            &tokens(values, &classes, wide),
            &rows,
            3,
            wide.alphabet::<T>(),
        );
        for token_bits in 0..wide.token_bits {
            let narrow = ContextConfig { token_bits, ..wide };
            if narrow.fields.is_none() && token_bits == 0 {
                continue;
            }
            let narrow_tokens = tokens(values, &classes, narrow);
            let direct = token_counts(&narrow_tokens, &rows, 3, narrow.alphabet::<T>());
            let present = present_tokens(&wide_counts, wide.alphabet::<T>());
            let narrowing = Narrowing::of(wide, narrow, present);
            assert_eq!(
                narrowing.counts::<T>(&wide_counts, wide, narrow),
                direct,
                "{narrow:?}"
            );
            assert_eq!(
                narrowing.apply(&tokens(values, &classes, wide)),
                narrow_tokens
            );
        }
    }

    #[test]
    fn narrow_tokens_are_a_function_of_wide_ones() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let words: Vec<u64> = (0..4000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Every bit length, and zeros.
                x >> (i % 65).min(63) & if i % 65 == 64 { 0 } else { u64::MAX }
            })
            .collect();
        let bit_lengths = ContextConfig {
            token_bits: 2,
            ..ContextConfig::single()
        };
        check_narrowing(&words, bit_lengths);
        check_narrowing(
            &words.iter().map(|&w| w as u32).collect::<Vec<_>>(),
            bit_lengths,
        );
        check_narrowing(
            &words.iter().map(|&w| w as u8).collect::<Vec<_>>(),
            bit_lengths,
        );
        let fields = ContextConfig {
            token_bits: 4,
            fields: Some(FloatFields::of::<u32>(120, widest_window(4))),
            ..ContextConfig::single()
        };
        check_narrowing(&words.iter().map(|&w| w as u32).collect::<Vec<_>>(), fields);
        let fields = ContextConfig {
            token_bits: 4,
            fields: Some(FloatFields::of::<u64>(1016, widest_window(4))),
            ..ContextConfig::single()
        };
        check_narrowing(&words, fields);
    }
}
