//! The archive-mode coder: the [`context`](super::context) model's tokens coded with
//! static rANS, one frequency table per context, raw bits after.
//!
//! Coding layout (specified in docs/format.md, "Coder 4: context rANS"): the context
//! configuration (4 bytes); the tables (bit-packed, padded to a byte); the rANS stream
//! length (u32, little-endian) and stream; the raw bits to the end. A table is 1 bit (context unused) or 1 bit, the first and last token present
//! (8 bits each) and a 6-bit quantised count `q` per token in between, 0 for an absent
//! token: the count is about `2^((q - 1) / 3)`. Encoder and decoder derive the
//! frequencies from the quantised counts alone (`weight` and [`rans::normalize`]), so
//! they agree bit for bit; quantising costs well under 1% of the token bits.

use super::context::{ContextConfig, Model, CONFIG_LEN};
use super::rans::{self, Table};
use crate::bits::io::{BitReader, BitWriter};
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

/// Reads one context's table for an alphabet of `alphabet` tokens.
fn read_table(r: &mut BitReader<'_>, alphabet: usize) -> Result<Table, StreamError> {
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
    let mut table = Table::new(rans::normalize(&weights));
    table.build_lookup();
    Ok(table)
}

/// Appends the coding of `values`, laid out as `dims` says, to `out`.
pub fn encode<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) {
    let model = Model::build_and_write(values, dims, out);
    let mut tw = BitWriter::default();
    let tables: Vec<Table> = model
        .context_counts::<T>()
        .map(|c| write_table(c, &mut tw))
        .collect();
    out.extend_from_slice(&tw.finish());

    let mut enc = rans::Encoder::with_capacity(values.len());
    for i in (0..values.len()).rev() {
        let t = &tables[usize::from(model.contexts[i])];
        let s = usize::from(model.tokens[i]);
        enc.put(i, t.freq[s].into(), t.cum[s].into());
    }
    let mut stream = Vec::new();
    enc.finish(&mut stream);
    out.extend_from_slice(&(stream.len() as u32).to_le_bytes());
    out.extend_from_slice(&stream);

    let mut raw = BitWriter::with_capacity(values.len() * T::BYTES);
    model.cfg.write_raw_bits(values, &model.classes, &mut raw);
    out.extend_from_slice(&raw.finish());
}

/// Decodes `out.len()` values, laid out as `dims` says, from `input`, which must be
/// exactly their coding.
pub fn decode<T: Word>(input: &[u8], dims: Dims, out: &mut [T]) -> Result<(), StreamError> {
    let cfg = ContextConfig::read(input)?;
    let alphabet = cfg.alphabet::<T>();
    let mut tr = BitReader::new(&input[CONFIG_LEN..]);
    let tables = (0..cfg.contexts())
        .map(|_| read_table(&mut tr, alphabet))
        .collect::<Result<Vec<_>, _>>()?;
    if tr.overrun() {
        return Err(StreamError::Truncated("coding ends inside its tables"));
    }
    let rest = &input[CONFIG_LEN + tr.bytes_used()..];
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
    let (stream, raw) = rest.split_at(len);
    let mut dec = rans::Decoder::new(stream)?;
    let mut bits = BitReader::new(raw);
    let (width, step) = (dims.width.max(1), dims.left.max(1));
    let mut classes = vec![0u8; out.len()];
    let n = out.len();
    // The first `step` words have no `left`; the rest of the first row's `up` is `left`.
    for i in 0..step.min(n) {
        let up = if i >= width { classes[i - width] } else { 0 };
        let t = dec.get(i, &tables[cfg.context(up, 0)]) as u8;
        (out[i], classes[i]) = cfg.read_value(t, &mut bits);
    }
    for i in step.min(n)..width.max(step).min(n) {
        let left = classes[i - step];
        let t = dec.get(i, &tables[cfg.context(left, left)]) as u8;
        (out[i], classes[i]) = cfg.read_value(t, &mut bits);
    }
    for i in width.max(step).min(n)..n {
        let (up, left) = (classes[i - width], classes[i - step]);
        let t = dec.get(i, &tables[cfg.context(up, left)]) as u8;
        (out[i], classes[i]) = cfg.read_value(t, &mut bits);
    }
    dec.finish()?;
    bits.finish("raw bits")
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
