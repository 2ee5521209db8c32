//! Static rANS (range asymmetric numeral systems) with several frequency tables, two
//! interleaved 32-bit states and byte-wise renormalisation.
//!
//! Frequencies of each table sum to `1 << PROB_BITS`. The encoder walks the symbols
//! backwards and the decoder forwards; symbol `i` uses state `i % 2`, so the two
//! dependency chains of the decoder overlap. The stream is the two final encoder states
//! (4 bytes each, little-endian) followed by the renormalisation bytes in decoding order.
//! A correct stream leaves both decoder states at their initial value [`RANS_L`] with
//! every byte consumed: the decoder checks both.

use crate::stream_error::StreamError;

/// Precision of the frequencies.
pub const PROB_BITS: u32 = 12;
/// Sum of the frequencies of a table.
pub const PROB_SCALE: u32 = 1 << PROB_BITS;
/// Lower bound of the normalised state interval.
pub const RANS_L: u32 = 1 << 23;

/// One frequency table: `freq[s]` and cumulative `cum[s]` for each symbol, and the
/// slot-to-symbol lookup the decoder uses.
#[derive(Debug, Clone)]
pub struct Table {
    /// Frequency of each symbol (0 = absent).
    pub freq: Vec<u16>,
    /// Sum of the frequencies of the symbols before each.
    pub cum: Vec<u16>,
    /// Symbol of each of the `PROB_SCALE` slots (empty until [`Table::build_lookup`]).
    lookup: Vec<u8>,
}

impl Table {
    /// The table for `freq`, which must sum to [`PROB_SCALE`] over at most 256 symbols.
    pub fn new(freq: Vec<u16>) -> Table {
        debug_assert_eq!(freq.iter().map(|&f| u32::from(f)).sum::<u32>(), PROB_SCALE);
        let mut cum = Vec::with_capacity(freq.len());
        let mut acc = 0u16;
        for &f in &freq {
            cum.push(acc);
            acc = acc.wrapping_add(f);
        }
        Table {
            freq,
            cum,
            lookup: Vec::new(),
        }
    }

    /// Fills the decoder's slot-to-symbol lookup.
    pub fn build_lookup(&mut self) {
        self.lookup = vec![0u8; PROB_SCALE as usize];
        for (s, (&f, &c)) in self.freq.iter().zip(&self.cum).enumerate() {
            self.lookup[usize::from(c)..usize::from(c) + usize::from(f)].fill(s as u8);
        }
    }
}

/// Frequencies summing to [`PROB_SCALE`] in proportion to `weights`, every symbol of
/// non-zero weight at least 1. Integer arithmetic only: encoder and decoder derive the
/// same table from the same weights. All-zero weights give symbol 0 the whole range.
pub fn normalize(weights: &[u64]) -> Vec<u16> {
    let total: u64 = weights.iter().sum();
    let mut freq = vec![0u16; weights.len().max(1)];
    if total == 0 {
        freq[0] = PROB_SCALE as u16;
        return freq;
    }
    let scale = u64::from(PROB_SCALE);
    let mut sum = 0u32;
    for (f, &w) in freq.iter_mut().zip(weights) {
        if w > 0 {
            *f = ((w * scale / total).max(1)) as u16;
            sum += u32::from(*f);
        }
    }
    // Give the rounding error to (or take it from) the largest frequencies.
    while sum != PROB_SCALE {
        let (i, _) = freq
            .iter()
            .enumerate()
            .max_by_key(|&(i, &f)| (f, std::cmp::Reverse(i)))
            .expect("non-empty");
        if sum < PROB_SCALE {
            let add = (PROB_SCALE - sum) as u16;
            freq[i] += add;
            sum += u32::from(add);
        } else {
            // Take from the largest symbol, leaving it at least 1; repeat over others.
            let take = (sum - PROB_SCALE).min(u32::from(freq[i]) - 1) as u16;
            if take == 0 {
                unreachable!("at most 256 symbols of frequency 1 fit in the scale");
            }
            freq[i] -= take;
            sum -= u32::from(take);
        }
    }
    freq
}

/// Encodes symbols given back to front.
#[derive(Debug)]
pub struct Encoder {
    states: [u32; 2],
    /// Renormalisation bytes in reverse decoding order.
    bytes: Vec<u8>,
}

impl Encoder {
    /// An encoder with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Encoder {
        Encoder {
            states: [RANS_L; 2],
            bytes: Vec::with_capacity(capacity),
        }
    }

    /// Encodes symbol number `index` (symbols must come in decreasing index order)
    /// with frequency `freq` and cumulative frequency `cum`.
    #[inline(always)]
    pub fn put(&mut self, index: usize, freq: u32, cum: u32) {
        debug_assert!(freq > 0);
        let x = &mut self.states[index & 1];
        let x_max = ((RANS_L >> PROB_BITS) << 8) * freq;
        while *x >= x_max {
            self.bytes.push(*x as u8);
            *x >>= 8;
        }
        *x = ((*x / freq) << PROB_BITS) + (*x % freq) + cum;
    }

    /// Appends the stream to `out`.
    pub fn finish(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.states[0].to_le_bytes());
        out.extend_from_slice(&self.states[1].to_le_bytes());
        out.extend(self.bytes.iter().rev());
    }
}

/// Decodes symbols front to back.
#[derive(Debug)]
pub struct Decoder<'a> {
    states: [u32; 2],
    input: &'a [u8],
    pos: usize,
    overrun: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder of the stream `input`; an error when it cannot hold the two states.
    pub fn new(input: &'a [u8]) -> Result<Decoder<'a>, StreamError> {
        let (head, _) = input
            .split_first_chunk::<8>()
            .ok_or(StreamError::Truncated(
                "rANS stream shorter than its two states",
            ))?;
        let state = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
        let states = [state(0), state(4)];
        if states.iter().any(|&x| x < RANS_L) {
            return Err(StreamError::Invalid("rANS state below its interval"));
        }
        Ok(Decoder {
            states,
            input,
            pos: 8,
            overrun: false,
        })
    }

    /// Decodes symbol number `index` with `table` (which must have its lookup built).
    #[inline(always)]
    pub fn get(&mut self, index: usize, table: &Table) -> usize {
        let x = &mut self.states[index & 1];
        let slot = *x & (PROB_SCALE - 1);
        let s = usize::from(table.lookup[slot as usize]);
        let freq = u32::from(table.freq[s]);
        let cum = u32::from(table.cum[s]);
        *x = freq * (*x >> PROB_BITS) + slot - cum;
        while *x < RANS_L {
            let byte = match self.input.get(self.pos) {
                Some(&b) => b,
                None => {
                    self.overrun = true;
                    0
                }
            };
            self.pos += 1;
            *x = (*x << 8) | u32::from(byte);
        }
        s
    }

    /// Ok when the stream was consumed exactly and both states are back at the start.
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.overrun || self.pos != self.input.len() {
            return Err(StreamError::RansEnd {
                len: self.input.len(),
                pos: self.pos,
            });
        }
        if self.states != [RANS_L; 2] {
            return Err(StreamError::NonCanonical(
                "rANS stream does not end in its initial state",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn normalize_sums_to_scale_and_keeps_every_symbol() {
        let cases: Vec<Vec<u64>> = vec![
            vec![1],
            vec![0, 5],
            vec![1; 256],
            vec![1_000_000, 1, 1, 0, 1],
            (0..65).map(|i| 1u64 << (i % 40)).collect(),
            vec![0, 0, 0],
        ];
        for w in cases {
            let f = normalize(&w);
            assert_eq!(
                f.iter().map(|&x| u32::from(x)).sum::<u32>(),
                PROB_SCALE,
                "{w:?}"
            );
            for (i, (&fi, &wi)) in f.iter().zip(&w).enumerate() {
                assert_eq!(fi > 0, wi > 0 || (i == 0 && w.iter().all(|&x| x == 0)));
            }
        }
        assert_eq!(normalize(&[1, 1, 2]), vec![1024, 1024, 2048]);
    }

    #[test]
    fn streams_round_trip_with_several_tables() {
        let mut rng = SmallRng::seed_from_u64(7);
        let tables: Vec<Table> = (0..3)
            .map(|t| {
                let w: Vec<u64> = (0..40).map(|s| (s as u64 * (t + 1)) % 7).collect();
                let mut table = Table::new(normalize(&w));
                table.build_lookup();
                table
            })
            .collect();
        for n in [0usize, 1, 2, 3, 1000, 100_000] {
            let syms: Vec<(usize, usize)> = (0..n)
                .map(|_| loop {
                    let t = rng.gen_range(0..3);
                    let s = rng.gen_range(0..40);
                    if tables[t].freq[s] > 0 {
                        break (t, s);
                    }
                })
                .collect();
            let mut enc = Encoder::with_capacity(n);
            for (i, &(t, s)) in syms.iter().enumerate().rev() {
                enc.put(i, tables[t].freq[s].into(), tables[t].cum[s].into());
            }
            let mut out = Vec::new();
            enc.finish(&mut out);
            let mut dec = Decoder::new(&out).unwrap();
            for (i, &(t, s)) in syms.iter().enumerate() {
                assert_eq!(dec.get(i, &tables[t]), s);
            }
            dec.finish().unwrap();
            // One byte too many or too few is detected.
            let mut longer = out.clone();
            longer.push(0);
            let mut dec = Decoder::new(&longer).unwrap();
            for (i, &(t, _)) in syms.iter().enumerate() {
                dec.get(i, &tables[t]);
            }
            assert!(dec.finish().is_err());
        }
    }

    #[test]
    fn skewed_source_codes_near_its_entropy() {
        // p(0) = 0.95: entropy 0.2864 bits per symbol.
        let mut table = Table::new(normalize(&[95, 5]));
        table.build_lookup();
        let mut rng = SmallRng::seed_from_u64(1);
        let syms: Vec<usize> = (0..200_000)
            .map(|_| usize::from(rng.gen_range(0..100) >= 95))
            .collect();
        let mut enc = Encoder::with_capacity(0);
        for (i, &s) in syms.iter().enumerate().rev() {
            enc.put(i, table.freq[s].into(), table.cum[s].into());
        }
        let mut out = Vec::new();
        enc.finish(&mut out);
        let bits_per_symbol = out.len() as f64 * 8.0 / syms.len() as f64;
        assert!(
            (0.28..0.295).contains(&bits_per_symbol),
            "{bits_per_symbol}"
        );
    }
}
