//! The archive-mode coder: the [`context`](super::context) model's tokens coded with
//! static rANS, one frequency table per context, raw bits after.
//!
//! Coding layout (specified in docs/format.md, "Coder 4: context rANS"): the context
//! configuration (4 bytes); the tables (bit-packed, padded to a byte); the rANS stream
//! length (u32, little-endian) and stream; the raw bits to the end. A table is 1 bit (context unused) or 1 bit, the first and last token present
//! (8 bits each) and a 6-bit quantised count `q` per token in between, 0 for an absent
//! token: the count is about `2^((q - 1) / 3)`. Encoder and decoder derive the
//! frequencies from the quantised counts alone (`weight` and [`rans::normalize`]), so
//! they agree bit for bit; quantising costs a small fraction of the token bits.
//!
//! Decoding is one dependency chain per rANS state, so it is written for latency: each
//! table becomes a [`DecodeTable`] (slot to symbol, symbol to frequency range; kept
//! per thread from tile to tile), a context is one lookup by `up` plus the sign of
//! `left - up` without branches, what a token means (bit length, raw bits, top bits)
//! is one lookup in a per-tile array, the raw bits are read at their bit position
//! ([`BitCursor`]) and, where `left` is 1 or 2 words back, the last bit lengths stay
//! in registers rather than going through memory.

use std::cell::Cell;

use super::context::{ContextConfig, Model, CONFIG_LEN};
use super::rans::{self, DecodeTable, DecodeTables, Table};
use crate::bits::io::{BitCursor, BitReader, BitWriter};
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Largest quantised count.
const MAX_Q: u32 = 63;

/// The weight quantised count `q` stands for: `2^((q - 1) / 3)` in 16.16 fixed point,
/// computed with integers only (0 for `q` = 0).
const WEIGHTS: [u64; MAX_Q as usize + 1] = {
    // 2^(1/3) in 16.16 fixed point, rounded.
    const CUBE_ROOT_2: u64 = 82_570;
    let mut table = [0u64; MAX_Q as usize + 1];
    table[1] = 1 << 16;
    let mut q = 2;
    while q <= MAX_Q as usize {
        table[q] = (table[q - 1] * CUBE_ROOT_2 + (1 << 15)) >> 16;
        q += 1;
    }
    table
};

/// See [`WEIGHTS`].
fn weight(q: u32) -> u64 {
    WEIGHTS[q as usize]
}

/// The quantised count nearest (on a log scale) to `count`.
fn quantise(count: u32) -> u32 {
    if count == 0 {
        return 0;
    }
    let target = u64::from(count) << 16;
    let mut q = 1;
    while q < MAX_Q && weight(q + 1) <= target {
        q += 1;
    }
    // Between weight(q) and weight(q + 1): the nearer on a log scale, i.e. compare the
    // square of the target with their product.
    if q < MAX_Q && u128::from(target).pow(2) > u128::from(weight(q)) * u128::from(weight(q + 1)) {
        q + 1
    } else {
        q
    }
}

/// Appends the quantised counts of one context and returns its frequency table.
fn write_table(counts: &[u32], w: &mut BitWriter) -> Table {
    let present = || {
        counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(s, _)| s)
    };
    let (Some(lo), Some(hi)) = (present().next(), present().next_back()) else {
        w.put(0, 1);
        return Table::new(rans::normalize(&vec![0; counts.len()]));
    };
    w.put(1, 1);
    w.put(lo as u64, 8);
    w.put(hi as u64, 8);
    let mut weights = vec![0u64; counts.len()];
    for s in lo..=hi {
        let q = quantise(counts[s]);
        w.put(u64::from(q), 6);
        weights[s] = weight(q);
    }
    Table::new(rans::normalize(&weights))
}

/// Reads one context's table for an alphabet of `alphabet` tokens and appends it to
/// `tables`.
fn read_table(
    r: &mut BitReader<'_>,
    alphabet: usize,
    classes: &[u8; 256],
    tables: &mut DecodeTables,
) -> Result<(), StreamError> {
    let mut weights = vec![0u64; alphabet];
    if r.get_wide(1) == 1 {
        let lo = r.get_wide(8) as usize;
        let hi = r.get_wide(8) as usize;
        if lo > hi || hi >= alphabet {
            return Err(StreamError::TableRange { lo, hi, alphabet });
        }
        for weight_of in &mut weights[lo..=hi] {
            *weight_of = weight(r.get_wide(6) as u32);
        }
    }
    tables.push(&rans::normalize(&weights), classes);
    Ok(())
}

/// Appends the coding of `values`, laid out as `dims` says, to `out`.
pub fn encode<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) {
    let model = Model::build_and_write(values, dims, out);
    encode_model(values, &model, out);
}

/// Appends what follows the context configuration in the coding of `values` with
/// `model` (theirs): tables, rANS stream and raw bits.
pub fn encode_model<T: Word>(values: &[T], model: &Model, out: &mut Vec<u8>) {
    let symbols = write_tables::<T>(model, out);
    let mut enc = rans::Encoder::with_capacity(values.len());
    let (contexts, tokens) = (
        &model.contexts[..values.len()],
        &model.tokens[..values.len()],
    );
    for i in (0..values.len()).rev() {
        enc.put(i, symbols.get(contexts[i], tokens[i]));
    }
    let mut stream = Vec::new();
    enc.finish(&mut stream);
    out.extend_from_slice(&(stream.len() as u32).to_le_bytes());
    out.extend_from_slice(&stream);

    let mut raw = BitWriter::with_capacity(values.len() * T::BYTES);
    model.cfg.write_raw_bits(values, &model.classes, &mut raw);
    out.extend_from_slice(&raw.finish());
}

/// Appends the tables of `model`'s contexts (bit-packed, padded to a byte) to `out` and
/// returns their symbols as the encoder codes them.
pub(super) fn write_tables<T: Word>(model: &Model, out: &mut Vec<u8>) -> rans::EncodeSymbols {
    let mut tw = BitWriter::default();
    let tables: Vec<Table> = model
        .context_counts::<T>()
        .map(|c| write_table(c, &mut tw))
        .collect();
    out.extend_from_slice(&tw.finish());
    rans::EncodeSymbols::new(&tables, model.cfg.alphabet::<T>())
}

/// Reads the tables of `cfg`'s contexts into `tables` from the start of `input` (the
/// coding after its configuration), each symbol's range carrying its class from
/// `values` (its [`token_values`]), then the rANS stream length; returns the rANS
/// stream and the raw bits after it.
pub(super) fn read_tables<'a, T: Word>(
    input: &'a [u8],
    cfg: ContextConfig,
    values: &[u32; 256],
    tables: &mut DecodeTables,
) -> Result<(&'a [u8], &'a [u8]), StreamError> {
    let alphabet = cfg.alphabet::<T>();
    let classes = values.map(|value| value as u8);
    let mut tr = BitReader::new(input);
    tables.clear();
    for _ in 0..cfg.contexts() {
        read_table(&mut tr, alphabet, &classes, tables)?;
    }
    if tr.overrun() {
        return Err(StreamError::Truncated("coding ends inside its tables"));
    }
    let rest = &input[tr.bytes_used()..];
    let (len, rest) = rest.split_first_chunk::<4>().ok_or(StreamError::Truncated(
        "coding ends before its rANS stream length",
    ))?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > rest.len() {
        return Err(StreamError::RansOverrun {
            len,
            left: rest.len(),
        });
    }
    Ok(rest.split_at(len))
}

/// `f` of this thread's decoding tables (fresh ones when they are in use).
pub(super) fn with_tables<R>(f: impl FnOnce(&mut DecodeTables) -> R) -> R {
    TABLES.with(|cell| match cell.try_borrow_mut() {
        Ok(mut tables) => f(&mut tables),
        Err(_) => f(&mut DecodeTables::new()),
    })
}

/// What the decoder needs of a token: its class (bits 0 to 7), the number of raw
/// bits that follow it (bits 8 to 15) and the bits of its value above those (from bit
/// 16), for each of the 256 possible tokens.
pub(super) fn token_values<T: Word>(cfg: ContextConfig) -> [u32; 256] {
    let mut values = [0u32; 256];
    for (t, value) in values.iter_mut().enumerate().take(cfg.alphabet::<T>()) {
        let (c, n, top) = cfg.token_value(t as u8);
        // At most 16 bits: a float field's sign, 11 exponent bits and 4 mantissa bits.
        debug_assert!(top < 1 << 16);
        *value = u32::from(c) | n << 8 | (top as u32) << 16;
    }
    values
}

thread_local! {
    /// Each thread's decoding tables, reused from one tile to the next.
    static TABLES: std::cell::RefCell<DecodeTables> = const {
        std::cell::RefCell::new(DecodeTables::new())
    };
}

/// Decodes `out.len()` values, laid out as `dims` says, from `input`, which must be
/// exactly their coding.
pub fn decode<T: Word>(input: &[u8], dims: Dims, out: &mut [T]) -> Result<(), StreamError> {
    decode_configured(input, ContextConfig::read(input)?, dims, out)
}

/// [`decode`] of a coding whose configuration, read from its start, is `cfg`.
pub fn decode_configured<T: Word>(
    input: &[u8],
    cfg: ContextConfig,
    dims: Dims,
    out: &mut [T],
) -> Result<(), StreamError> {
    with_tables(|tables| decode_with(input, cfg, dims, out, tables))
}

/// [`decode_configured`] with `tables` for the decoding tables.
fn decode_with<T: Word>(
    input: &[u8],
    cfg: ContextConfig,
    dims: Dims,
    out: &mut [T],
    tables: &mut DecodeTables,
) -> Result<(), StreamError> {
    let values = token_values::<T>(cfg);
    let (stream, raw) = read_tables::<T>(&input[cfg.len()..], cfg, &values, tables)?;
    let mut base = [0; 256];
    for (c, b) in base.iter_mut().enumerate() {
        *b = cfg.context(c as u8, c as u8) as u8 - u8::from(cfg.split == 3);
    }
    let words = Words {
        tables: tables.as_slice(),
        values,
        base,
        refine_mask: if cfg.split == 3 { 3 } else { 0 },
    };
    let dec = rans::Decoder::new(stream)?;
    let bits = BitCursor::new(raw);
    let (dec, bits) = u8::with_scratch(move |classes| {
        // Compiled for the CPU's widest instructions: BMI2's shifts and bit extraction.
        crate::isa::vectorised(
            #[inline(always)]
            || words.decode_all(dec, bits, dims, classes, out),
        )
    });
    dec.finish()?;
    bits.finish("raw bits")
}

/// What decoding a tile's words looks up.
struct Words<'a> {
    tables: &'a [DecodeTable],
    /// See [`token_values`].
    values: [u32; 256],
    /// The context of neighbours of bit lengths `up` and `left`: `base[up]`, plus 1
    /// when `left` equals `up` and 2 when it is longer if `refine_mask` is 3 (split 3).
    base: [u8; 256],
    refine_mask: u8,
}

impl Words<'_> {
    /// Decodes all of `out`, laid out as `dims` says, with `classes` for their bit
    /// lengths, from `dec` and `bits`; returns those at the end.
    #[inline(always)]
    fn decode_all<'a, T: Word>(
        &self,
        mut dec: rans::Decoder<'a>,
        mut bits: BitCursor<'a>,
        dims: Dims,
        classes: &mut Vec<u8>,
        out: &mut [T],
    ) -> (rans::Decoder<'a>, BitCursor<'a>) {
        let (width, step) = (dims.width.max(1), dims.left.max(1));
        let n = out.len();
        // Every class is written before it is read.
        classes.resize(n, 0);
        // The first `step` words have no `left`; the rest of the first row's `up` is `left`.
        for i in 0..step.min(n) {
            let up = if i >= width { classes[i - width] } else { 0 };
            (out[i], classes[i]) = self.next(&mut dec, &mut bits, up, 0);
        }
        for i in step.min(n)..width.max(step).min(n) {
            let left = classes[i - step];
            (out[i], classes[i]) = self.next(&mut dec, &mut bits, left, left);
        }
        let start = width.max(step).min(n);
        let rest = match step {
            1 => self.decode_rows::<T, 1>(&mut dec, &mut bits, width, classes, out, start),
            2 => self.decode_rows::<T, 2>(&mut dec, &mut bits, width, classes, out, start),
            _ => start,
        };
        for i in rest..n {
            let (up, left) = (classes[i - width], classes[i - step]);
            (out[i], classes[i]) = self.next(&mut dec, &mut bits, up, left);
        }
        (dec, bits)
    }

    /// Decodes words of `out` from `start` on (which must have both neighbours:
    /// `start` is at least `width` and `STEP`), `STEP` (the distance to `left`) at a
    /// time, keeping the last `STEP` bit lengths in registers; returns where it
    /// stopped (fewer than `STEP` words before the end).
    #[inline(always)]
    fn decode_rows<T: Word, const STEP: usize>(
        &self,
        dec: &mut rans::Decoder<'_>,
        bits: &mut BitCursor<'_>,
        width: usize,
        classes: &mut [u8],
        out: &mut [T],
        start: usize,
    ) -> usize {
        if start < STEP || start < width || start > out.len() {
            return start;
        }
        let classes = Cell::from_mut(classes).as_slice_of_cells();
        let mut lefts: [u8; STEP] = std::array::from_fn(|j| classes[start - STEP + j].get());
        // `up` of a word may be one decoded in the same group when `width` < `STEP`:
        // the cells give the value as of its reading.
        let (ups, _) = classes[start - width..].as_chunks::<STEP>();
        let (news, _) = classes[start..].as_chunks::<STEP>();
        let (outs, _) = out[start..].as_chunks_mut::<STEP>();
        let groups = outs.len();
        for ((up, new), out) in ups.iter().zip(news).zip(outs) {
            for j in 0..STEP {
                let class;
                (out[j], class) = self.next(dec, bits, up[j].get(), lefts[j]);
                new[j].set(class);
                lefts[j] = class;
            }
        }
        start + groups * STEP
    }

    /// The next word, whose neighbours have bit lengths `up` and `left`, and its bit
    /// length.
    #[inline(always)]
    fn next<T: Word>(
        &self,
        dec: &mut rans::Decoder<'_>,
        bits: &mut BitCursor<'_>,
        up: u8,
        left: u8,
    ) -> (T, u8) {
        let refine = (u8::from(left > up) + u8::from(left >= up)) & self.refine_mask;
        let context = usize::from(self.base[usize::from(up)] + refine);
        let value = self.values[dec.get(&self.tables[context])];
        let n = value >> 8 & 0xff;
        let raw = if T::BITS <= 32 {
            bits.get(n)
        } else {
            bits.get_wide(n)
        };
        let v = u64::from(value >> 16) << n | raw;
        (T::from_u64(v), value as u8)
    }
}

/// Fewest bytes a coding can take, whatever the number of values: the configuration,
/// one bit per table, the stream length and the two rANS states.
pub fn min_encoded_len() -> usize {
    CONFIG_LEN + 1 + 4 + 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coder::testing::{self, round_trip};
    use crate::coder::Coder;

    testing::shared_coder_tests!(Coder::ContextAns);

    #[test]
    fn quantised_counts_are_monotonic_and_near() {
        assert_eq!(weight(1), 1 << 16);
        assert!(weight(4).abs_diff(2 << 16) <= 2);
        for q in 1..MAX_Q {
            assert!(weight(q + 1) > weight(q));
        }
        for count in [1u32, 2, 3, 10, 1000, 131_072, 1_000_000] {
            let w = weight(quantise(count)) as f64 / 65536.0;
            assert!((w / f64::from(count) - 1.0).abs() < 0.13, "{count} -> {w}");
        }
    }

    #[test]
    fn constant_residuals_cost_only_the_headers() {
        let out = round_trip::<u32>(Coder::ContextAns, &vec![0; 100_000], 1000);
        assert!(out.len() < 60, "{}", out.len());
    }

    #[test]
    fn size_tracks_the_estimate() {
        let (size, estimate) = testing::size_and_estimate(Coder::ContextAns);
        assert!(
            size >= estimate && size < estimate + estimate / 100 + 600,
            "{size} vs {estimate}"
        );
    }
}
