//! Static rANS (range asymmetric numeral systems) with several frequency tables, two
//! interleaved 32-bit states and byte-wise renormalisation.
//!
//! Frequencies of each table sum to `1 << PROB_BITS`. The encoder walks the symbols
//! backwards and the decoder forwards; symbol `i` uses state `i % 2`, so the two
//! dependency chains of the decoder overlap. The stream is the two final encoder states
//! (4 bytes each, little-endian) followed by the renormalisation bytes in decoding order.
//! A correct stream leaves both decoder states at their initial value [`RANS_L`] with
//! every byte consumed: the decoder checks both.
//!
//! The decoder looks a symbol up in a [`DecodeTable`] (its slot's symbol, then that
//! symbol's frequency and cumulative frequency) and renormalises without a branch: a
//! decoded state is at least `RANS_L >> PROB_BITS`, so it takes at most two bytes, and
//! it reads two and shifts in as many as it needs. Past the end of the stream it reads
//! zeros and goes on counting, so that [`Decoder::finish`] reports where it ended.

use crate::stream_error::StreamError;

/// Precision of the frequencies.
pub const PROB_BITS: u32 = 12;
/// Sum of the frequencies of a table.
pub const PROB_SCALE: u32 = 1 << PROB_BITS;
/// Lower bound of the normalised state interval.
pub const RANS_L: u32 = 1 << 23;

/// One frequency table: `freq[s]` and cumulative `cum[s]` for each symbol.
#[derive(Debug, Clone)]
pub struct Table {
    /// Frequency of each symbol (0 = absent).
    pub freq: Vec<u16>,
    /// Sum of the frequencies of the symbols before each.
    pub cum: Vec<u16>,
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
        Table { freq, cum }
    }
}

/// The decoder's form of a frequency table: the symbol of each of its [`PROB_SCALE`]
/// slots, and the frequency (bits 0 to 15) and cumulative frequency (from bit 16) of
/// each of the 256 possible symbols.
///
/// Laid out as C lays it out, the symbols first, so that a vector kernel may load the
/// 4 bytes at any slot (the 3 after the last slot are the first range's).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct DecodeTable {
    symbols: [u8; PROB_SCALE as usize],
    ranges: [u32; 256],
}

/// Where a [`DecodeTable`] range holds its symbol's cumulative frequency (12 bits; the
/// frequency, up to [`PROB_SCALE`] itself, is the 13 bits below).
pub const CUM_SHIFT: u32 = 13;
/// Where a [`DecodeTable`] range holds its symbol's class (7 bits, the top ones).
pub const CLASS_SHIFT: u32 = 25;

/// The frequency of a [`DecodeTable`] range.
#[inline(always)]
pub fn range_freq(range: u32) -> u32 {
    range & ((1 << CUM_SHIFT) - 1)
}

/// The cumulative frequency of a [`DecodeTable`] range.
#[inline(always)]
pub fn range_cum(range: u32) -> u32 {
    range >> CUM_SHIFT & (PROB_SCALE - 1)
}

impl DecodeTable {
    /// The symbol of slot `slot` (its low [`PROB_BITS`] bits) and the symbol's range:
    /// its frequency ([`range_freq`]), cumulative frequency ([`range_cum`]) and class
    /// (from bit [`CLASS_SHIFT`]).
    #[inline(always)]
    pub fn lookup(&self, slot: u32) -> (usize, u32) {
        let symbol = self.symbols[(slot & (PROB_SCALE - 1)) as usize];
        (usize::from(symbol), self.ranges[usize::from(symbol)])
    }

    /// Each symbol's range (see [`DecodeTable::lookup`]), in symbol order (read by the
    /// x86 kernels).
    #[cfg(target_arch = "x86_64")]
    pub fn ranges(&self) -> &[u32; 256] {
        &self.ranges
    }
}

/// Byte offset of a [`DecodeTable`]'s symbol of slot 0 within it.
#[cfg(target_arch = "x86_64")]
pub const SYMBOLS_OFFSET: usize = std::mem::offset_of!(DecodeTable, symbols);
/// Byte offset of a [`DecodeTable`]'s range of symbol 0 within it.
#[cfg(target_arch = "x86_64")]
pub const RANGES_OFFSET: usize = std::mem::offset_of!(DecodeTable, ranges);

/// Several [`DecodeTable`]s, whose memory is kept from one use to the next.
#[derive(Debug)]
pub struct DecodeTables {
    /// The tables, the first `len` of them in use.
    tables: Vec<DecodeTable>,
    len: usize,
}

impl Default for DecodeTables {
    fn default() -> Self {
        Self::new()
    }
}

impl DecodeTables {
    /// No tables.
    pub const fn new() -> DecodeTables {
        DecodeTables {
            tables: Vec::new(),
            len: 0,
        }
    }

    /// No tables, keeping the memory of `self`'s.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends the table of `freq`, which must sum to [`PROB_SCALE`] over at most 256
    /// symbols, each symbol's range carrying its class from `classes` (below 128); its
    /// number is the count of tables before it.
    pub fn push(&mut self, freq: &[u16], classes: &[u8; 256]) {
        debug_assert_eq!(freq.iter().map(|&f| u32::from(f)).sum::<u32>(), PROB_SCALE);
        debug_assert!(freq.len() <= 256);
        if self.len == self.tables.len() {
            self.tables.push(DecodeTable {
                symbols: [0; PROB_SCALE as usize],
                ranges: [0; 256],
            });
        }
        let table = &mut self.tables[self.len];
        self.len += 1;
        let mut cum = 0usize;
        for ((s, &f), range) in (0u8..=255).zip(freq).zip(&mut table.ranges) {
            let end = (cum + usize::from(f)).min(PROB_SCALE as usize);
            table.symbols[cum..end].fill(s);
            let class = u32::from(classes[usize::from(s)]);
            debug_assert!(class < 128);
            // A symbol of no frequency after the last slot (never looked up) keeps
            // its cumulative frequency's low bits.
            *range = (end - cum) as u32
                | (cum as u32 & (PROB_SCALE - 1)) << CUM_SHIFT
                | class << CLASS_SHIFT;
            cum = end;
        }
        table.symbols[cum..].fill(0);
    }

    /// The tables, in the order they came.
    pub fn as_slice(&self) -> &[DecodeTable] {
        &self.tables[..self.len]
    }
}

/// The index of the first of the largest of `freq` (not empty).
fn first_largest(freq: &[u16]) -> usize {
    let mut best = 0;
    for (i, &f) in freq.iter().enumerate().skip(1) {
        if f > freq[best] {
            best = i;
        }
    }
    best
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
        let i = first_largest(&freq);
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

/// A symbol as the encoders ([`Encoder`] and coder 11's banded encoder) code it: its
/// frequency (nonzero), its cumulative frequency, and the reciprocal that divides a
/// state by the frequency with one multiplication.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct EncodeSymbol {
    /// `ceil(2^RECIPROCAL_SHIFT / freq)`.
    reciprocal: u64,
    /// The frequency (0 only in a placeholder that is never coded).
    pub(super) freq: u32,
    /// The cumulative frequency.
    pub(super) cum: u32,
}

/// Byte offsets of an [`EncodeSymbol`]'s fields (its layout is C's), for vector
/// kernels that gather them.
#[cfg(target_arch = "x86_64")]
pub(super) mod encode_symbol_layout {
    /// Bytes per symbol.
    pub const SIZE: usize = 16;
    /// The reciprocal's offset.
    pub const RECIPROCAL: usize = 0;
    /// The frequency's offset.
    pub const FREQ: usize = 8;
    /// The cumulative frequency's offset.
    pub const CUM: usize = 12;
    const _: () = {
        assert!(std::mem::size_of::<super::EncodeSymbol>() == SIZE);
        assert!(std::mem::offset_of!(super::EncodeSymbol, reciprocal) == RECIPROCAL);
        assert!(std::mem::offset_of!(super::EncodeSymbol, freq) == FREQ);
        assert!(std::mem::offset_of!(super::EncodeSymbol, cum) == CUM);
    };
}

/// Fixed-point position of [`EncodeSymbol`]'s reciprocal. With frequencies of at most
/// `2^PROB_BITS` and states below `2^32`, `32 + PROB_BITS` bits make the quotient exact:
/// the reciprocal's rounding adds less than `2^32 / 2^(32 + PROB_BITS) <= 1 / freq` to
/// it, which a remainder of at most `freq - 1` cannot carry over an integer.
const RECIPROCAL_SHIFT: u32 = 32 + PROB_BITS;

impl EncodeSymbol {
    /// The symbol of frequency `freq` (1 to [`PROB_SCALE`]) and cumulative frequency
    /// `cum`.
    pub fn new(freq: u32, cum: u32) -> EncodeSymbol {
        debug_assert!((1..=PROB_SCALE).contains(&freq));
        EncodeSymbol {
            reciprocal: (1u64 << RECIPROCAL_SHIFT).div_ceil(u64::from(freq)),
            freq,
            cum,
        }
    }

    /// `x / freq`, exactly.
    #[inline(always)]
    pub(super) fn quotient(self, x: u32) -> u32 {
        ((u128::from(x) * u128::from(self.reciprocal)) >> RECIPROCAL_SHIFT) as u32
    }
}

/// The [`EncodeSymbol`] of every symbol of a model's tables, looked up by table and
/// symbol.
pub struct EncodeSymbols {
    /// Table after table, `alphabet` symbols a table (a placeholder for a symbol a
    /// table lacks).
    symbols: Vec<EncodeSymbol>,
    alphabet: usize,
}

impl EncodeSymbols {
    /// The symbols of `tables`, whose symbols are below `alphabet`.
    pub fn new(tables: &[Table], alphabet: usize) -> EncodeSymbols {
        let symbols = (tables.iter())
            .flat_map(|t| {
                (0..alphabet).map(|s| match t.freq.get(s) {
                    Some(&freq) if freq > 0 => EncodeSymbol::new(freq.into(), t.cum[s].into()),
                    _ => EncodeSymbol::default(),
                })
            })
            .collect();
        EncodeSymbols { symbols, alphabet }
    }

    /// Symbol `symbol` of table `table`.
    #[inline(always)]
    pub fn get(&self, table: u8, symbol: u8) -> EncodeSymbol {
        self.symbols[usize::from(table) * self.alphabet + usize::from(symbol)]
    }

    /// Every table's symbols, table after table, and the symbols a table has.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn as_slice(&self) -> (&[EncodeSymbol], usize) {
        (&self.symbols, self.alphabet)
    }
}

/// Encodes symbols given back to front.
#[derive(Debug)]
pub struct Encoder {
    states: [u32; 2],
    /// Renormalisation bytes in reverse decoding order: the first `len`, then room for
    /// two more (written before it is known how many are kept).
    bytes: Vec<u8>,
    len: usize,
}

impl Encoder {
    /// An encoder with room for `capacity` bytes (it grows beyond them as needed).
    pub fn with_capacity(capacity: usize) -> Encoder {
        Encoder {
            states: [RANS_L; 2],
            bytes: vec![0; capacity.max(2)],
            len: 0,
        }
    }

    /// Encodes symbol number `index` (symbols must come in decreasing index order).
    ///
    /// Branch-free: a state of at most 31 bits sheds 0, 1 or 2 bytes (while it is at
    /// least `(RANS_L >> PROB_BITS) << 8` times the frequency); both are written, and
    /// as many kept as it sheds.
    #[inline(always)]
    pub fn put(&mut self, index: usize, symbol: EncodeSymbol) {
        debug_assert!(symbol.freq > 0);
        if self.len + 2 > self.bytes.len() {
            self.bytes.resize(2 * self.bytes.len(), 0);
        }
        let x = &mut self.states[index & 1];
        let x_max = u64::from((RANS_L >> PROB_BITS) << 8) * u64::from(symbol.freq);
        let shed = usize::from(u64::from(*x) >= x_max) + usize::from(u64::from(*x) >= x_max << 8);
        self.bytes[self.len] = *x as u8;
        self.bytes[self.len + 1] = (*x >> 8) as u8;
        self.len += shed;
        let y = *x >> (8 * shed);
        let q = symbol.quotient(y);
        *x = (q << PROB_BITS) + (y - q * symbol.freq) + symbol.cum;
    }

    /// Appends the stream to `out`.
    pub fn finish(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.states[0].to_le_bytes());
        out.extend_from_slice(&self.states[1].to_le_bytes());
        out.extend(self.bytes[..self.len].iter().rev());
    }
}

/// Decodes symbols front to back.
#[derive(Debug)]
pub struct Decoder<'a> {
    /// The state of the next symbol, then of the one after.
    states: [u32; 2],
    input: &'a [u8],
    /// Next byte to read; past the end of `input` when the decoder read beyond it.
    pos: usize,
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
        })
    }

    /// The two bytes from `pos` as a big-endian number, zero past the end.
    #[inline(always)]
    fn next_two_bytes(&self) -> u32 {
        match self
            .input
            .get(self.pos..)
            .and_then(|s| s.first_chunk::<2>())
        {
            Some(&bytes) => u32::from(u16::from_be_bytes(bytes)),
            None => tail_two_bytes(self.input, self.pos),
        }
    }

    /// Decodes the next symbol (symbols come in order, from the first) with `table`.
    #[inline(always)]
    pub fn get(&mut self, table: &DecodeTable) -> usize {
        let x = self.states[0];
        let slot = x & (PROB_SCALE - 1);
        let symbol = table.symbols[slot as usize];
        let range = table.ranges[usize::from(symbol)];
        let x = range_freq(range) * (x >> PROB_BITS) + slot - range_cum(range);
        // Renormalise: `x` is at least `(RANS_L >> PROB_BITS)`, so at most two bytes
        // bring it back to `RANS_L` or above; past the end of the input they are zeros.
        let bytes = u32::from(x < RANS_L) + u32::from(x < RANS_L >> 8);
        let x = x << (8 * bytes) | self.next_two_bytes() >> (16 - 8 * bytes);
        self.pos += bytes as usize;
        self.states = [self.states[1], x];
        usize::from(symbol)
    }

    /// Ok when the stream was consumed exactly and both states are back at the start.
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.pos != self.input.len() {
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

/// The two bytes of `input` from `at` as a big-endian number, zero past the end.
#[cold]
#[inline(never)]
fn tail_two_bytes(input: &[u8], at: usize) -> u32 {
    let byte = |at: usize| u32::from(input.get(at).copied().unwrap_or(0));
    byte(at) << 8 | byte(at + 1)
}

/// The tables of each row of `weights` ([`normalize`]d) and their decoder form, every
/// class 0: what the rANS tests decode with.
#[cfg(test)]
pub(super) fn test_tables(weights: &[Vec<u64>]) -> (Vec<Table>, DecodeTables) {
    let tables: Vec<Table> = weights.iter().map(|w| Table::new(normalize(w))).collect();
    let mut decode_tables = DecodeTables::new();
    for table in &tables {
        decode_tables.push(&table.freq, &[0; 256]);
    }
    (tables, decode_tables)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The encoder as first written: a division per symbol and a loop of byte pushes.
    fn reference_encode(symbols: &[(u32, u32)]) -> Vec<u8> {
        let mut states = [RANS_L; 2];
        let mut bytes = Vec::new();
        for (i, &(freq, cum)) in symbols.iter().enumerate().rev() {
            let x = &mut states[i & 1];
            let x_max = ((RANS_L >> PROB_BITS) << 8) * freq;
            while *x >= x_max {
                bytes.push(*x as u8);
                *x >>= 8;
            }
            *x = ((*x / freq) << PROB_BITS) + (*x % freq) + cum;
        }
        let mut out = Vec::new();
        out.extend_from_slice(&states[0].to_le_bytes());
        out.extend_from_slice(&states[1].to_le_bytes());
        out.extend(bytes.iter().rev());
        out
    }

    /// On symbols of every frequency, skewed and flat (states that shed 0, 1 and 2
    /// bytes), the encoder writes the reference encoder's bytes.
    #[test]
    fn the_encoder_writes_the_reference_bytes() {
        let mut rng = SmallRng::seed_from_u64(11);
        for case in 0..60 {
            let n = rng.gen_range(0..5000);
            let symbols: Vec<(u32, u32)> = (0..n)
                .map(|_| {
                    let freq = match case % 3 {
                        0 => rng.gen_range(1..=PROB_SCALE),
                        1 => rng.gen_range(1..8),
                        _ => PROB_SCALE - rng.gen_range(0..8),
                    };
                    (freq, rng.gen_range(0..=PROB_SCALE - freq))
                })
                .collect();
            let mut enc = Encoder::with_capacity(rng.gen_range(0..4));
            for (i, &(freq, cum)) in symbols.iter().enumerate().rev() {
                enc.put(i, EncodeSymbol::new(freq, cum));
            }
            let mut out = Vec::new();
            enc.finish(&mut out);
            assert_eq!(out, reference_encode(&symbols), "case {case}");
        }
    }

    #[test]
    fn reciprocals_divide_every_state_exactly() {
        let mut rng = SmallRng::seed_from_u64(5);
        for freq in 1..=PROB_SCALE {
            let symbol = EncodeSymbol::new(freq, 0);
            let edges = (1..4).flat_map(|k| {
                let q = u32::MAX / freq / k;
                [q * freq - 1, q * freq, (q * freq).saturating_add(freq - 1)]
            });
            let random = (0..64).map(|_| rng.gen::<u32>());
            for x in edges.chain(random).chain([0, 1, u32::MAX]) {
                assert_eq!(symbol.quotient(x), x / freq, "{x} / {freq}");
            }
        }
    }

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
                Table::new(normalize(&w))
            })
            .collect();
        let mut decode_tables = DecodeTables::new();
        for table in &tables {
            decode_tables.push(&table.freq, &[0; 256]);
        }
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
                enc.put(
                    i,
                    EncodeSymbol::new(tables[t].freq[s].into(), tables[t].cum[s].into()),
                );
            }
            let mut out = Vec::new();
            enc.finish(&mut out);
            let mut dec = Decoder::new(&out).unwrap();
            for &(t, s) in &syms {
                assert_eq!(dec.get(&decode_tables.as_slice()[t]), s);
            }
            dec.finish().unwrap();
            // One byte too many or too few is detected.
            let mut longer = out.clone();
            longer.push(0);
            let shorter = &out[..out.len() - 1];
            for stream in [&longer[..], shorter] {
                if let Ok(mut dec) = Decoder::new(stream) {
                    for &(t, _) in &syms {
                        dec.get(&decode_tables.as_slice()[t]);
                    }
                    assert!(dec.finish().is_err());
                }
            }
        }
    }

    #[test]
    fn skewed_source_codes_near_its_entropy() {
        // p(0) = 0.95: entropy 0.2864 bits per symbol.
        let table = Table::new(normalize(&[95, 5]));
        let mut rng = SmallRng::seed_from_u64(1);
        let syms: Vec<usize> = (0..200_000)
            .map(|_| usize::from(rng.gen_range(0..100) >= 95))
            .collect();
        let mut enc = Encoder::with_capacity(0);
        for (i, &s) in syms.iter().enumerate().rev() {
            enc.put(
                i,
                EncodeSymbol::new(table.freq[s].into(), table.cum[s].into()),
            );
        }
        let mut out = Vec::new();
        enc.finish(&mut out);
        let bits_per_symbol = out.len() as f64 * 8.0 / syms.len() as f64;
        assert!(
            (0.28..0.295).contains(&bits_per_symbol),
            "{bits_per_symbol}"
        );
    }

    /// The decoder as first written: a slot-to-symbol lookup, then a byte at a time.
    fn reference_decode(
        input: &[u8],
        tables: &[Table],
        order: &[usize],
    ) -> (Vec<usize>, u32, u32, usize) {
        let state = |i: usize| u32::from_le_bytes(input[i..i + 4].try_into().unwrap());
        let mut states = [state(0), state(4)];
        let mut pos = 8;
        let mut symbols = Vec::new();
        for (i, &t) in order.iter().enumerate() {
            let table = &tables[t];
            let x = &mut states[i & 1];
            let slot = *x & (PROB_SCALE - 1);
            let s = (0..table.freq.len())
                .find(|&s| {
                    slot >= u32::from(table.cum[s])
                        && slot < u32::from(table.cum[s]) + u32::from(table.freq[s])
                })
                .unwrap();
            *x = u32::from(table.freq[s]) * (*x >> PROB_BITS) + slot - u32::from(table.cum[s]);
            while *x < RANS_L {
                *x = (*x << 8) | u32::from(input.get(pos).copied().unwrap_or(0));
                pos += 1;
            }
            symbols.push(s);
        }
        (symbols, states[0], states[1], pos)
    }

    #[test]
    fn arbitrary_streams_decode_as_the_bytewise_decoder_does() {
        let mut rng = SmallRng::seed_from_u64(3);
        let (tables, decode_tables) = test_tables(&[
            vec![1u64],
            vec![1, 1],
            vec![1_000_000, 1, 0, 3],
            (1..=256).collect(),
        ]);
        for len in [8usize, 9, 10, 20, 1000] {
            for _ in 0..20 {
                let mut input: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                input[3] |= 1;
                input[7] |= 1;
                let order: Vec<usize> = (0..rng.gen_range(0..3000))
                    .map(|_| rng.gen_range(0..tables.len()))
                    .collect();
                let (symbols, x0, x1, pos) = reference_decode(&input, &tables, &order);
                let mut dec = Decoder::new(&input).unwrap();
                let got: Vec<usize> = order
                    .iter()
                    .map(|&t| dec.get(&decode_tables.as_slice()[t]))
                    .collect();
                assert_eq!(got, symbols);
                let states = if order.len().is_multiple_of(2) {
                    [x0, x1]
                } else {
                    [x1, x0]
                };
                assert_eq!((dec.states, dec.pos), (states, pos));
            }
        }
    }
}
