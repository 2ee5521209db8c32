//! Coder 10: the context model's rANS coding (see [`context_ans`])
//! with tokens of a word's float fields, its sign, its exponent and the top mantissa
//! bits, instead of bit lengths. Values that no predictor helps (noise, single
//! integrations) are coded by their distribution, as pcodec's classic mode codes them:
//! exact zeros (flagged data) as one token with no raw bits, every other value by its
//! binade and the top of its mantissa, the rest raw.
//!
//! Coding layout (specified in docs/format.md, "Coder 10: context rANS over float
//! fields"): the context configuration and the window of exponents (7 bytes), then as
//! coder 4.
//!
//! The encoder picks the window and the token width from one histogram of the words'
//! sign, exponent and top 4 mantissa bits ([`zero_order`]), then the context layout as
//! coder 4 does.

use super::context::{
    entropy_and_table_bits, exponent_bits, widest_window, ContextConfig, FloatFields, Model,
    CONFIG_LEN, FIELDS_LEN, MAX_FIELD_TOKEN_BITS,
};
use super::context_ans;
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// The float fields and token width the encoder codes `values` with, and the coding's
/// estimated bits with a single context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The window of exponents with tokens of their own.
    pub fields: FloatFields,
    /// Mantissa bits per token.
    pub token_bits: u8,
    /// Estimated bits of the coding with one context: token entropy, raw bits, table.
    pub bits: u64,
}

/// The cheapest window and token width for `values` by a single context's estimate:
/// for each token width, the window of as many exponents as the alphabet allows that
/// holds the most nonzero values.
pub fn zero_order<T: Word>(values: &[T]) -> Choice {
    let exponent = u32::from(exponent_bits(T::BITS));
    let mantissa = T::BITS - 1 - exponent;
    // The histogram keeps as many mantissa bits as the widest token carries.
    let kept = u32::from(MAX_FIELD_TOKEN_BITS).min(mantissa);
    let (keys, zeros) = key_counts(values, mantissa - kept, 1 + exponent + kept);
    let exponents = 1usize << exponent;
    let mut by_exponent = vec![0u64; exponents];
    for &(key, n) in &keys {
        by_exponent[key as usize >> kept & (exponents - 1)] += u64::from(n);
    }
    let mut best: Option<Choice> = None;
    for token_bits in 0..=kept as u8 {
        let (emin, count) = window(&by_exponent, usize::from(widest_window(token_bits)));
        let fields = FloatFields::of::<T>(emin as u16, count as u8);
        let cfg = ContextConfig {
            token_bits,
            fields: Some(fields),
            ..ContextConfig::single()
        };
        let alphabet = cfg.alphabet::<T>();
        let mut tokens = vec![0u32; alphabet];
        tokens[0] = zeros;
        let mut raw = 0u64;
        for &(key, n) in &keys {
            // The key's values share its token: take one with these fields (and a
            // nonzero bit below them where they are all zero).
            let v = (u64::from(key) << (mantissa - kept)).max(1);
            let c = cfg.class(v);
            tokens[usize::from(cfg.token(v, c))] += n;
            raw += u64::from(n) * u64::from(cfg.raw_bits(c));
        }
        let bits = raw + entropy_and_table_bits(&tokens, alphabet);
        if best.is_none_or(|b| bits < b.bits) {
            best = Some(Choice {
                fields,
                token_bits,
                bits,
            });
        }
    }
    best.expect("at least one token width")
}

/// Tiles of fewer words than this are counted by sorting their keys, not in a table of
/// every key.
const SORTED_BELOW: usize = 1 << 14;

/// The nonzero `values` counted by their top `key_bits` bits (below which `shift` bits
/// are dropped), as `(key, count)` in key order, and the number of zero values (a tile
/// has fewer than 2^32 words).
fn key_counts<T: Word>(values: &[T], shift: u32, key_bits: u32) -> (Vec<(u32, u32)>, u32) {
    let nonzero = values.iter().map(|v| v.to_u64()).filter(|&v| v != 0);
    let key = |v: u64| (v >> shift) as u32;
    let mut keys = Vec::new();
    if values.len() < SORTED_BELOW {
        let mut sorted: Vec<u32> = nonzero.map(key).collect();
        sorted.sort_unstable();
        for k in sorted {
            match keys.last_mut() {
                Some((last, n)) if *last == k => *n += 1,
                _ => keys.push((k, 1)),
            }
        }
    } else {
        let mut table = vec![0u32; 1 << key_bits];
        for v in nonzero {
            table[key(v) as usize] += 1;
        }
        keys.extend((0u32..).zip(table).filter(|&(_, n)| n > 0));
    }
    let zeros = values.len() as u32 - keys.iter().map(|&(_, n)| n).sum::<u32>();
    (keys, zeros)
}

/// The window of at most `widest` exponents that holds the most values of
/// `by_exponent` (the first such), as its first exponent and length; the present
/// exponents' span when that is narrower, `(0, 1)` when there are none.
fn window(by_exponent: &[u64], widest: usize) -> (usize, usize) {
    let present = || by_exponent.iter().enumerate().filter(|(_, &n)| n > 0);
    let (Some((lo, _)), Some((hi, _))) = (present().next(), present().next_back()) else {
        return (0, 1);
    };
    if hi - lo < widest {
        return (lo, hi - lo + 1);
    }
    let mut held: u64 = by_exponent[lo..lo + widest].iter().sum();
    let (mut best, mut best_at) = (held, lo);
    for start in lo + 1..=hi + 1 - widest {
        held = held + by_exponent[start + widest - 1] - by_exponent[start - 1];
        if held > best {
            (best, best_at) = (held, start);
        }
    }
    (best_at, widest)
}

/// The model coder 10 codes `values` (laid out as `dims` says) with: the window and
/// token width of `choice`, the context layout estimated smallest.
pub fn model<T: Word>(values: &[T], dims: Dims, choice: Choice) -> Model {
    Model::build_best_of(values, dims, Some(choice.fields), &[choice.token_bits])
}

/// Appends the coding of `values`, laid out as `dims` says, to `out`.
pub fn encode<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) {
    encode_chosen(values, dims, zero_order(values), out);
}

/// [`encode`] with the window and token width of `choice` (the [`zero_order`] of
/// `values`, already at hand).
pub fn encode_chosen<T: Word>(values: &[T], dims: Dims, choice: Choice, out: &mut Vec<u8>) {
    let model = model(values, dims, choice);
    model.cfg.write(out);
    context_ans::encode_model(values, &model, out);
}

/// Decodes `out.len()` values, laid out as `dims` says, from `input`, which must be
/// exactly their coding.
pub fn decode<T: Word>(input: &[u8], dims: Dims, out: &mut [T]) -> Result<(), StreamError> {
    let cfg = ContextConfig::read_fields::<T>(input)?;
    context_ans::decode_configured(input, cfg, dims, out)
}

/// Estimated bits of coding `values` (laid out as `dims` says).
pub fn estimate_bits<T: Word>(values: &[T], dims: Dims) -> u64 {
    model(values, dims, zero_order(values)).estimated_bits
}

/// Fewest bytes a coding can take, whatever the number of values: the configuration
/// and window, one bit per table, the stream length and the two rANS states.
pub fn min_encoded_len() -> usize {
    CONFIG_LEN + FIELDS_LEN + 1 + 4 + 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::io::{BitReader, BitWriter};
    use crate::coder::testing::{self, round_trip};
    use crate::coder::Coder;

    testing::shared_coder_tests!(Coder::FloatFields);

    /// Every token's value comes back from its token and raw bits, for the window
    /// `emin .. emin + count` of `T`'s words.
    fn tokens_round_trip<T: Word>(emin: u16, count: u8, token_bits: u8, values: &[u64]) {
        let cfg = ContextConfig {
            token_bits,
            fields: Some(FloatFields::of::<T>(emin, count)),
            ..ContextConfig::single()
        };
        for &v in values {
            let c = cfg.class(v);
            let t = cfg.token(v, c);
            assert!(usize::from(t) < cfg.alphabet::<T>(), "{v:#x}");
            assert_eq!(cfg.class_of(t), c, "{v:#x}");
            let mut w = BitWriter::default();
            cfg.write_raw_bits(&[T::from_u64(v)], &[c], &mut w);
            let bytes = w.finish();
            let (back, class) = cfg.read_value::<T>(t, &mut BitReader::new(&bytes));
            assert_eq!((back.to_u64(), class), (v, c), "{v:#x}");
        }
    }

    #[test]
    fn float_tokens_hold_sign_exponent_and_top_mantissa_bits() {
        let f64s = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            1000.25,
            -3037.897,
            f64::MIN_POSITIVE / 3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            1e-300,
        ];
        let bits: Vec<u64> = f64s.iter().map(|x| x.to_bits()).collect();
        for token_bits in 0..=4 {
            let widest = widest_window(token_bits);
            tokens_round_trip::<u64>(1023 - 3, widest, token_bits, &bits);
            tokens_round_trip::<u64>(0, 7, token_bits, &bits);
            tokens_round_trip::<u64>(2048 - 7, 7, token_bits, &bits);
        }
        let f32s: Vec<u64> = [0.0f32, -0.0, 1.0, -2.5e3, f32::NAN, 1e-40, f32::MAX]
            .iter()
            .map(|x| u64::from(x.to_bits()))
            .collect();
        tokens_round_trip::<u32>(120, 15, 3, &f32s);
        tokens_round_trip::<u16>(3, 20, 2, &[0, 1, 0x3c00, 0xbc01, 0x7fff, 0xffff]);
        tokens_round_trip::<u8>(2, 5, 3, &[0, 1, 0x38, 0xb9, 0x7f, 0xff]);
        // Zero, escapes of either sign, then sign and exponent above the top bits.
        let cfg = ContextConfig {
            token_bits: 2,
            fields: Some(FloatFields::of::<u64>(1023, 4)),
            ..ContextConfig::single()
        };
        let token = |x: f64| cfg.token(x.to_bits(), cfg.class(x.to_bits()));
        assert_eq!(
            (
                token(0.0),
                token(1e10),
                token(-1e10),
                token(1.0),
                token(1.75)
            ),
            (0, 1, 2, 3, 6)
        );
        assert_eq!((token(-1.0), token(2.0), token(-15.9)), (7, 11, 3 + 28 + 3));
        assert_eq!(cfg.alphabet::<u64>(), 3 + 4 * 8);
    }

    #[test]
    fn keys_are_counted_alike_by_sorting_and_by_table() {
        for n in [1000, SORTED_BELOW, 3 * SORTED_BELOW] {
            let values: Vec<u32> = noise(n, 50.0, 7)
                .iter()
                .map(|&x| (x as f32).to_bits())
                .collect();
            let mut expected = std::collections::BTreeMap::new();
            for &v in values.iter().filter(|&&v| v != 0) {
                *expected.entry(v >> 19).or_insert(0u32) += 1;
            }
            let (keys, zeros) = key_counts(&values, 19, 13);
            assert_eq!(keys, expected.into_iter().collect::<Vec<_>>(), "{n}");
            assert_eq!(zeros, n.div_ceil(7) as u32, "{n}");
        }
    }

    #[test]
    fn the_window_holds_the_most_values() {
        let mut by_exponent = vec![0u64; 64];
        by_exponent[10] = 5;
        by_exponent[20] = 100;
        by_exponent[22] = 100;
        by_exponent[30] = 1;
        assert_eq!(window(&by_exponent, 63), (10, 21));
        assert_eq!(window(&by_exponent, 3), (20, 3));
        assert_eq!(window(&by_exponent, 1), (20, 1));
        assert_eq!(window(&[0; 8], 5), (0, 1));
    }

    /// Gaussian noise of standard deviation `sigma`, one value in `flagged` zero.
    fn noise(n: usize, sigma: f64, flagged: usize) -> Vec<f64> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut unit = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|i| {
                let (u, v) = (unit().max(1e-300), unit());
                let x = sigma * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                if i % flagged == 0 {
                    0.0
                } else {
                    x
                }
            })
            .collect()
    }

    #[test]
    fn noise_costs_its_distribution_and_flags_almost_nothing() {
        // Gaussian float32 noise with one value in 8 flagged: its zero-order entropy
        // is about 26.5 bits per nonzero value (the sign, about 3 bits of binade and
        // 23 of mantissa, less the skew of its top bits) and 0.54 per value for the
        // flags, 23.7 per value in all.
        let values: Vec<u32> = noise(1 << 16, 1000.0, 8)
            .iter()
            .map(|&x| (x as f32).to_bits())
            .collect();
        let out = round_trip::<u32>(Coder::FloatFields, &values, 256);
        let bits_per_word = out.len() as f64 * 8.0 / values.len() as f64;
        let mut ints = Vec::new();
        Coder::ContextAns.encode(&values, testing::dims(256), &mut ints);
        let int_bits_per_word = ints.len() as f64 * 8.0 / values.len() as f64;
        assert!(
            (22.8..23.8).contains(&bits_per_word),
            "{bits_per_word} bits per word"
        );
        // Bit-length tokens code the same words in over 2 bits more per word.
        assert!(
            int_bits_per_word > bits_per_word + 2.0,
            "{int_bits_per_word}"
        );
    }

    #[test]
    fn the_choice_estimates_the_coding() {
        let values: Vec<u64> = noise(50_000, 3.0, 50).iter().map(|x| x.to_bits()).collect();
        let choice = zero_order(&values);
        let mut out = Vec::new();
        encode(&values, testing::dims(100), &mut out);
        let size = out.len() as u64 * 8;
        assert!(
            size <= choice.bits + choice.bits / 100,
            "{size} vs {}",
            choice.bits
        );
        assert!(
            size > choice.bits - choice.bits / 50,
            "{size} vs {}",
            choice.bits
        );
    }
}
