//! Static rANS with one 32-bit state per band (at most [`MAX_BANDS`]) and 16-bit
//! renormalisation words in one shared stream: the entropy stage of coder 11 (banded
//! context rANS, specified in docs/format.md).
//!
//! Symbol `p` (in decoding order) uses the state of band `p mod G`. The states of one
//! turn of `G` symbols depend on none of each other, so a decoder may follow them all
//! at once (the vector kernel does, 16 to a register), and so may an encoder (the
//! AVX-512 kernel here does, for 16 and 32 bands). States lie in `[2^16, 2^32)`;
//! a decoded state below `2^16` takes exactly one word. The stream is the `G` final
//! encoder states (4 bytes each, little-endian) followed by the words (2 bytes each,
//! little-endian) in decoding order. A correct stream leaves every state at
//! [`BAND_L`] with every word consumed: [`Decoder::finish`] checks both.

use super::rans::{
    range_cum, range_freq, DecodeTable, EncodeSymbol, EncodeSymbols, PROB_BITS, PROB_SCALE,
};
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

    /// [`Encoder::put_all`] of the symbols `symbols.get(contexts[p], tokens[p])` of the
    /// `tokens.len()` positions: the whole turns with the vector kernel when this CPU has
    /// one and the bands are 16 or 32, the rest as `put_all` does.
    pub fn put_all_of(&mut self, contexts: &[u8], tokens: &[u8], symbols: &EncodeSymbols) {
        let n = tokens.len();
        let contexts = &contexts[..n];
        let symbol = |p: usize| symbols.get(contexts[p], tokens[p]);
        #[cfg(target_arch = "x86_64")]
        if self.len == 0
            && (self.bands == 16 || self.bands == 32)
            && crate::isa::level() == crate::isa::Level::Avx512
            && indexes_within(contexts, tokens, symbols)
        {
            // The last turn's symbols, if it is partial, first (symbols are coded back to
            // front), then the whole turns by the kernel.
            let whole = n / self.bands * self.bands;
            self.put_all(n - whole, |p| symbol(whole + p));
            let room = self.len + whole + 1;
            if self.words.len() < room {
                self.words.resize(room, 0);
            }
            let (table, alphabet) = symbols.as_slice();
            // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (the level's features); every
            // context names a table and every token a symbol of it (checked above), and
            // `words` has room for a word per symbol.
            unsafe {
                x86::put_turns(
                    &mut self.states,
                    self.bands,
                    &contexts[..whole],
                    &tokens[..whole],
                    table,
                    alphabet,
                    &mut self.words,
                    &mut self.len,
                )
            };
            return;
        }
        self.put_all(n, symbol);
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

/// Whether every context names one of the tables of `symbols` and every token one of
/// their symbols (the vector kernel looks them up unchecked).
#[cfg(target_arch = "x86_64")]
fn indexes_within(contexts: &[u8], tokens: &[u8], symbols: &EncodeSymbols) -> bool {
    let (table, alphabet) = symbols.as_slice();
    let largest = |bytes: &[u8]| usize::from(bytes.iter().copied().max().unwrap_or(0));
    alphabet > 0 && largest(tokens) < alphabet && largest(contexts) < table.len() / alphabet
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

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::super::rans::encode_symbol_layout as layout;
    use super::{EncodeSymbol, MAX_BANDS, PROB_BITS};

    /// Lanes of a register of 32-bit states.
    const LANES: usize = 16;

    /// Encodes the whole turns of `bands` (16 or 32) symbols of `contexts` and `tokens`
    /// (symbol `p` is `table[contexts[p] * alphabet + tokens[p]]`), back to front, as
    /// [`super::put`] does one at a time: 16 states to a register, each register's
    /// words kept in descending band order (the order the scalar loop appends them).
    ///
    /// # Safety
    ///
    /// AVX-512 F, BW, DQ and VL must be present; every `contexts[p] * alphabet +
    /// tokens[p]` must index `table` and name a symbol of nonzero frequency; `words`
    /// must have room for `tokens.len()` words from `*len`.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn put_turns(
        states: &mut [u32; MAX_BANDS],
        bands: usize,
        contexts: &[u8],
        tokens: &[u8],
        table: &[EncodeSymbol],
        alphabet: usize,
        words: &mut [u16],
        len: &mut usize,
    ) {
        let registers = bands / LANES;
        let turns = tokens.len() / bands;
        debug_assert!(words.len() >= *len + turns * bands);
        // SAFETY: the states are 32 (at most 2 registers of 16 read).
        let mut x: [__m512i; 2] = std::array::from_fn(|v| unsafe {
            _mm512_loadu_si512(states.as_ptr().add(v * LANES).cast())
        });
        let reversed = _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        let alphabet_v = _mm512_set1_epi32(alphabet as i32);
        let base = table.as_ptr().cast::<u8>();
        let mut at = *len;
        for turn in (0..turns).rev() {
            for v in (0..registers).rev() {
                let p = turn * bands + v * LANES;
                // SAFETY: positions `p..p + 16` lie in `contexts` and `tokens` (a whole
                // turn); the symbols' indices lie in `table` (the caller's promise), and
                // the gathers read the fields of those symbols.
                let (freq, cum, reciprocal) = unsafe {
                    let c = _mm512_cvtepu8_epi32(_mm_loadu_si128(contexts.as_ptr().add(p).cast()));
                    let t = _mm512_cvtepu8_epi32(_mm_loadu_si128(tokens.as_ptr().add(p).cast()));
                    let index = _mm512_add_epi32(_mm512_mullo_epi32(c, alphabet_v), t);
                    // In units of 4 bytes for the 32-bit fields, 8 for the reciprocal.
                    let words4 = _mm512_slli_epi32::<2>(index);
                    let words8 = _mm512_slli_epi32::<1>(index);
                    (
                        _mm512_i32gather_epi32::<4>(words4, base.add(layout::FREQ).cast()),
                        _mm512_i32gather_epi32::<4>(words4, base.add(layout::CUM).cast()),
                        [
                            _mm512_i32gather_epi64::<8>(
                                _mm512_castsi512_si256(words8),
                                base.add(layout::RECIPROCAL).cast(),
                            ),
                            _mm512_i32gather_epi64::<8>(
                                _mm512_extracti64x4_epi64::<1>(words8),
                                base.add(layout::RECIPROCAL).cast(),
                            ),
                        ],
                    )
                };
                let state = x[v];
                // A state sheds a word when at least `freq << (32 - PROB_BITS)`; the
                // bound less one fits 32 bits (`u32::MAX` for the full frequency).
                let bound = _mm512_sub_epi32(
                    _mm512_slli_epi32::<{ 32 - PROB_BITS }>(freq),
                    _mm512_set1_epi32(1),
                );
                let shed = _mm512_cmpgt_epu32_mask(state, bound);
                // The shed words in descending lane order.
                let down = _mm512_permutexvar_epi32(reversed, state);
                let down_mask = shed.reverse_bits();
                let kept = _mm512_maskz_compress_epi32(down_mask, down);
                let k = shed.count_ones() as usize;
                // SAFETY: `k` words from `at`, within the room the caller gave.
                unsafe {
                    _mm512_mask_cvtepi32_storeu_epi16(
                        words.as_mut_ptr().add(at).cast(),
                        ((1u32 << k) - 1) as u16,
                        kept,
                    )
                };
                at += k;
                let y = _mm512_mask_srli_epi32(state, shed, state, 16);
                // `y / freq` as `(y * reciprocal) >> (32 + PROB_BITS)`: the reciprocal's
                // low and high 32 bits multiplied apart.
                let quotient = |y: __m256i, reciprocal: __m512i| {
                    let y = _mm512_cvtepu32_epi64(y);
                    let low = _mm512_mul_epu32(y, reciprocal);
                    let high = _mm512_mul_epu32(y, _mm512_srli_epi64::<32>(reciprocal));
                    let q = _mm512_srli_epi64::<{ PROB_BITS }>(_mm512_add_epi64(
                        _mm512_srli_epi64::<32>(low),
                        high,
                    ));
                    _mm512_cvtepi64_epi32(q)
                };
                let q = _mm512_inserti64x4::<1>(
                    _mm512_castsi256_si512(quotient(_mm512_castsi512_si256(y), reciprocal[0])),
                    quotient(_mm512_extracti64x4_epi64::<1>(y), reciprocal[1]),
                );
                x[v] = _mm512_add_epi32(
                    _mm512_add_epi32(
                        _mm512_slli_epi32::<{ PROB_BITS }>(q),
                        _mm512_sub_epi32(y, _mm512_mullo_epi32(q, freq)),
                    ),
                    cum,
                );
            }
        }
        for (v, x) in x.iter().enumerate().take(registers) {
            // SAFETY: 16 of the 32 states.
            unsafe { _mm512_storeu_si512(states.as_mut_ptr().add(v * LANES).cast(), *x) };
        }
        *len = at;
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

    /// Coding from contexts and tokens (by the vector kernel where the CPU has one and
    /// the bands are 16 or 32) writes the stream coding symbol by symbol writes.
    #[test]
    fn coding_by_tables_writes_the_symbol_by_symbol_stream() {
        let mut rng = SmallRng::seed_from_u64(19);
        // Tables of one symbol (the full frequency), skewed and flat ones.
        let counts = [vec![5u64], vec![1_000_000, 1, 0, 3], (1..=40).collect()];
        let (tables, _) = test_tables(&counts);
        let alphabet = 40;
        let symbols = EncodeSymbols::new(&tables, alphabet);
        for bands in [1, 8, 16, 32, 31] {
            for n in [0usize, 15, 16, 32, 33, 100, 5000, 20_011] {
                let (contexts, tokens): (Vec<u8>, Vec<u8>) = (0..n)
                    .map(|_| loop {
                        let t = rng.gen_range(0..tables.len());
                        let s = rng.gen_range(0..tables[t].freq.len());
                        if tables[t].freq[s] > 0 {
                            break (t as u8, s as u8);
                        }
                    })
                    .unzip();
                let mut expected = Vec::new();
                let mut enc = Encoder::new(bands, n);
                enc.put_all(n, |p| symbols.get(contexts[p], tokens[p]));
                enc.finish(&mut expected);
                let mut got = Vec::new();
                let mut enc = Encoder::new(bands, n);
                enc.put_all_of(&contexts, &tokens, &symbols);
                enc.finish(&mut got);
                assert_eq!(got, expected, "bands {bands}, n {n}");
            }
        }
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
