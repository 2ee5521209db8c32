//! Static rANS with one 32-bit state per band (at most [`MAX_BANDS`]) and 16-bit
//! renormalisation words in one shared stream: the entropy stage of coder 11 (banded
//! context rANS, specified in docs/format.md).
//!
//! Symbol `p` (in decoding order) uses the state of band `p mod G`. The states of one
//! turn of `G` symbols depend on none of each other, so a decoder may follow them all
//! at once (the vector kernel does, 16 to a register). States lie in `[2^16, 2^32)`;
//! a decoded state below `2^16` takes exactly one word. The stream is the `G` final
//! encoder states (4 bytes each, little-endian) followed by the words (2 bytes each,
//! little-endian) in decoding order. A correct stream leaves every state at
//! [`BAND_L`] with every word consumed: [`Decoder::finish`] checks both.

use super::rans::{range_cum, range_freq, DecodeTable, EncodeSymbol, PROB_BITS, PROB_SCALE};
use crate::stream_error::StreamError;

/// Most bands (states) a stream may have.
pub const MAX_BANDS: usize = 32;
/// Lower bound of the normalised state interval.
pub const BAND_L: u32 = 1 << 16;

/// Encodes `symbol` with the state `x`, appending the word it sheds, if any, to the
/// first `len` of `words` (which must have room for one more). Branch-free: the word is
/// always written, and kept when the state must shed it.
#[inline(always)]
fn put(x: &mut u32, symbol: EncodeSymbol, words: &mut [u16], len: &mut usize) {
    debug_assert!(symbol.freq > 0);
    let renormalise = u64::from(*x) >= u64::from(symbol.freq) << (32 - PROB_BITS);
    words[*len] = *x as u16;
    *len += usize::from(renormalise);
    let y = if renormalise { *x >> 16 } else { *x };
    let q = symbol.quotient(y);
    *x = (q << PROB_BITS) + (y - q * symbol.freq) + symbol.cum;
}

/// Encodes symbols given back to front.
#[derive(Debug)]
pub struct Encoder {
    states: [u32; MAX_BANDS],
    bands: usize,
    /// Renormalisation words in reverse decoding order: the first `len`, then room for
    /// one more (written before it is known whether it is kept).
    words: Vec<u16>,
    len: usize,
}

impl Encoder {
    /// An encoder of `bands` states (1 to [`MAX_BANDS`]) with room for the words of
    /// `capacity` symbols.
    pub fn new(bands: usize, capacity: usize) -> Encoder {
        assert!((1..=MAX_BANDS).contains(&bands), "1 to 32 bands");
        Encoder {
            states: [BAND_L; MAX_BANDS],
            bands,
            words: vec![0; capacity + 1],
            len: 0,
        }
    }

    /// Encodes the stream's `n` symbols (once per encoder), symbol `p` (in decoding
    /// order) being `symbol(p)`, each with the state of its band `p mod G`.
    #[inline(always)]
    pub fn put_all(&mut self, n: usize, symbol: impl Fn(usize) -> EncodeSymbol) {
        // The loop's state in locals, which the compiler keeps in registers.
        let bands = self.bands;
        let mut states = self.states;
        let mut len = self.len;
        let mut words = std::mem::take(&mut self.words);
        let mut end = n;
        while end > 0 {
            let start = (end - 1) / bands * bands;
            if len + bands >= words.len() {
                words.resize(2 * words.len().max(bands), 0);
            }
            for (band, state) in states[..end - start].iter_mut().enumerate().rev() {
                put(state, symbol(start + band), &mut words, &mut len);
            }
            end = start;
        }
        (self.states, self.len, self.words) = (states, len, words);
    }

    /// Appends the stream to `out`.
    pub fn finish(self, out: &mut Vec<u8>) {
        for x in &self.states[..self.bands] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.reserve(2 * self.len);
        for w in self.words[..self.len].iter().rev() {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
}

/// Decodes symbols front to back.
#[derive(Debug)]
pub struct Decoder<'a> {
    /// The state of each band.
    pub(super) states: [u32; MAX_BANDS],
    bands: usize,
    /// The whole stream, states included.
    pub(super) input: &'a [u8],
    /// Next word's byte offset; past the end of `input` when the decoder read beyond it.
    pub(super) pos: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder of the stream `input` of `bands` states (1 to [`MAX_BANDS`]); an error
    /// when it cannot hold them, holds half a word, or a state is out of its interval.
    pub fn new(input: &'a [u8], bands: usize) -> Result<Decoder<'a>, StreamError> {
        debug_assert!((1..=MAX_BANDS).contains(&bands));
        let head = 4 * bands;
        if input.len() < head {
            return Err(StreamError::Truncated(
                "banded rANS stream shorter than its states",
            ));
        }
        if !(input.len() - head).is_multiple_of(2) {
            return Err(StreamError::Invalid(
                "banded rANS stream ends inside a word",
            ));
        }
        let mut states = [BAND_L; MAX_BANDS];
        for (x, bytes) in states.iter_mut().zip(input[..head].chunks_exact(4)) {
            *x = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
            if *x < BAND_L {
                return Err(StreamError::Invalid("rANS state below its interval"));
            }
        }
        Ok(Decoder {
            states,
            bands,
            input,
            pos: head,
        })
    }

    /// Bands of the stream.
    pub fn bands(&self) -> usize {
        self.bands
    }

    /// Decodes the next symbol, with the state of `band` and `table`.
    #[inline(always)]
    pub fn get(&mut self, band: usize, table: &DecodeTable) -> usize {
        let x = self.states[band];
        let slot = x & (PROB_SCALE - 1);
        let (symbol, range) = table.lookup(slot);
        let x = range_freq(range) * (x >> PROB_BITS) + slot - range_cum(range);
        let word = match self
            .input
            .get(self.pos..)
            .and_then(|s| s.first_chunk::<2>())
        {
            Some(&bytes) => u32::from(u16::from_le_bytes(bytes)),
            None => 0,
        };
        let renormalise = x < BAND_L;
        self.states[band] = if renormalise { x << 16 | word } else { x };
        self.pos += 2 * usize::from(renormalise);
        symbol
    }

    /// Ok when the stream was consumed exactly and every state is back at the start.
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.pos != self.input.len() {
            return Err(StreamError::RansEnd {
                len: self.input.len(),
                pos: self.pos,
            });
        }
        if self.states[..self.bands].iter().any(|&x| x != BAND_L) {
            return Err(StreamError::NonCanonical(
                "rANS stream does not end in its initial state",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::rans::{normalize, test_tables, Table};
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// `n` symbols of random tables among `tables`, coded with `bands` states.
    fn coded(
        rng: &mut SmallRng,
        tables: &[Table],
        bands: usize,
        n: usize,
    ) -> (Vec<(usize, usize)>, Vec<u8>) {
        let syms: Vec<(usize, usize)> = (0..n)
            .map(|_| loop {
                let t = rng.gen_range(0..tables.len());
                let s = rng.gen_range(0..tables[t].freq.len());
                if tables[t].freq[s] > 0 {
                    break (t, s);
                }
            })
            .collect();
        let mut enc = Encoder::new(bands, n);
        enc.put_all(n, |p| {
            let (t, s) = syms[p];
            EncodeSymbol::new(tables[t].freq[s].into(), tables[t].cum[s].into())
        });
        let mut out = Vec::new();
        enc.finish(&mut out);
        (syms, out)
    }

    #[test]
    fn streams_of_every_band_count_round_trip_and_end_exactly() {
        let mut rng = SmallRng::seed_from_u64(17);
        let (tables, decode_tables) =
            test_tables(&[vec![1u64], vec![1_000_000, 1, 0, 3], (1..=256).collect()]);
        for bands in 1..=MAX_BANDS {
            for n in [0usize, 1, 15, 16, 17, 5000] {
                let (syms, out) = coded(&mut rng, &tables, bands, n);
                assert!((out.len() - 4 * bands).is_multiple_of(2));
                let mut dec = Decoder::new(&out, bands).unwrap();
                for (p, &(t, s)) in syms.iter().enumerate() {
                    assert_eq!(dec.get(p % bands, &decode_tables.as_slice()[t]), s);
                }
                dec.finish().unwrap();
                // A word too many or too few is detected.
                let mut longer = out.clone();
                longer.extend_from_slice(&[0, 0]);
                let shorter = &out[..out.len() - 2];
                for stream in [&longer[..], shorter] {
                    if let Ok(mut dec) = Decoder::new(stream, bands) {
                        for (p, &(t, _)) in syms.iter().enumerate() {
                            dec.get(p % bands, &decode_tables.as_slice()[t]);
                        }
                        assert!(dec.finish().is_err(), "bands {bands}, n {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn malformed_heads_are_errors() {
        assert!(Decoder::new(&[0; 7], 2).is_err());
        assert!(Decoder::new(&[0, 0, 1, 0, 0, 0, 1, 0, 0], 2).is_err());
        assert!(Decoder::new(&[0xff, 0xff, 0, 0], 1).is_err());
        assert!(Decoder::new(&[0, 0, 1, 0], 1).is_ok());
    }

    #[test]
    fn skewed_source_codes_near_its_entropy_with_sixteen_bands() {
        // p(0) = 0.95: entropy 0.2864 bits per symbol.
        let table = Table::new(normalize(&[95, 5]));
        let mut rng = SmallRng::seed_from_u64(1);
        let n = 200_000;
        let mut enc = Encoder::new(16, 0);
        let syms: Vec<usize> = (0..n)
            .map(|_| usize::from(rng.gen_range(0..100) >= 95))
            .collect();
        enc.put_all(n, |p| {
            EncodeSymbol::new(table.freq[syms[p]].into(), table.cum[syms[p]].into())
        });
        let mut out = Vec::new();
        enc.finish(&mut out);
        let bits_per_symbol = out.len() as f64 * 8.0 / n as f64;
        assert!(
            (0.28..0.295).contains(&bits_per_symbol),
            "{bits_per_symbol}"
        );
    }
}
