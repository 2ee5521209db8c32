//! Length-limited canonical Huffman coding with table-driven decoding.
//!
//! [`code_lengths`] turns symbol counts into optimal code lengths of at most
//! [`MAX_CODE_LEN`] bits (package-merge), [`Encoder`] turns lengths into canonical
//! codes, [`Decoder`] decodes a code with one table lookup, and [`write_lengths`] /
//! [`read_lengths`] store the lengths in a chunk.
//!
//! # Codes
//!
//! Codes are canonical, as in DEFLATE: shorter codes come first (numerically smaller),
//! codes of one length are assigned in increasing symbol order, consecutively. A code is
//! written to an LSB-first bit stream (bit `i` of the stream is bit `i % 8` of byte
//! `i / 8`) most significant code bit first, so [`Encoder::code`] hands out the code
//! already bit-reversed: its low `length` bits go to the stream as one LSB-first field.
//!
//! # Length table format
//!
//! [`write_lengths`] writes, for lengths of an alphabet of at most 256 symbols:
//!
//! * byte 0: `first`, the index of the first symbol with a nonzero length;
//! * byte 1: `last`, the index of the last symbol with a nonzero length;
//! * then `last - first + 1` lengths of 4 bits each, for symbols `first ..= last` in
//!   order, packed LSB-first (the length of symbol `first + i` is the low nibble of byte
//!   `2 + i / 2` when `i` is even, its high nibble when `i` is odd); a final unused
//!   high nibble is zero.
//!
//! An all-zero set of lengths is the two bytes `1, 0` (`first > last`). The whole table
//! takes `2 + ceil((last - first + 1) / 2)` bytes.
//!
//! [`read_lengths`] accepts exactly what [`write_lengths`] can write (for lengths of at
//! most [`MAX_CODE_LEN`]): it rejects a truncated table, `first > last` other than the
//! empty marker, `last` outside the alphabet, a zero length at `first` or `last`, a
//! length above [`MAX_CODE_LEN`] and a nonzero padding nibble. It does not check the
//! Kraft sum; [`Decoder::new`] does.

use crate::stream_error::StreamError;

/// Longest code length allowed.
pub const MAX_CODE_LEN: u32 = 12;

/// Entries of the decoding table.
const TABLE_SIZE: usize = 1 << MAX_CODE_LEN;
/// Mask of the peeked bits the table looks at.
const PEEK_MASK: u32 = (1 << MAX_CODE_LEN) - 1;
/// Most symbols an [`Encoder`] or [`Decoder`] alphabet may have (a decoding table entry
/// holds the symbol in 12 bits above a 4-bit length).
const MAX_ALPHABET: usize = 1 << 12;
/// The `first, last` bytes of an empty length table.
const EMPTY_TABLE: [u8; 2] = [1, 0];

/// Code lengths (0 = symbol absent) for `counts`, each <= [`MAX_CODE_LEN`], minimising
/// the coded size `sum(counts[i] * lengths[i])` under that limit.
///
/// The lengths come from the package-merge algorithm, so they are optimal among all
/// length-limited prefix codes, and complete (Kraft sum exactly 1) when at least two
/// symbols are present. Deterministic: symbols are ordered by (count, symbol index) and
/// ties between a leaf and a package go to the leaf, so an encoder and a decoder agree.
/// Exactly one present symbol gets length 1; no present symbols give all zeros.
///
/// # Panics
///
/// If `counts.len() > 1 << MAX_CODE_LEN` (the documented use is at most 256 symbols).
pub fn code_lengths(counts: &[u32]) -> Vec<u8> {
    limited_code_lengths(counts, MAX_CODE_LEN)
}

/// [`code_lengths`] with a length limit of `limit` bits, `1 <= limit <= 15`.
fn limited_code_lengths(counts: &[u32], limit: u32) -> Vec<u8> {
    assert!((1..=15).contains(&limit), "code length limit {limit}");
    assert!(
        counts.len() <= 1 << limit,
        "{} symbols do not fit codes of {limit} bits",
        counts.len()
    );
    let mut lengths = vec![0u8; counts.len()];
    // Present symbols by increasing (count, index): the key is unique.
    let mut order: Vec<usize> = (0..counts.len()).filter(|&s| counts[s] > 0).collect();
    let n = order.len();
    match n {
        0 => return lengths,
        1 => {
            lengths[order[0]] = 1;
            return lengths;
        }
        _ => {}
    }
    order.sort_unstable_by_key(|&s| (counts[s], s));
    let leaves: Vec<u64> = order.iter().map(|&s| u64::from(counts[s])).collect();

    // Package-merge. The list of level 0 (the deepest) is the leaves; the list of each
    // next level merges the leaves with the packages (sums of consecutive pairs) of the
    // level below. `packages[l]` flags which items of level `l + 1`'s list are packages.
    let levels = limit as usize;
    let mut packages: Vec<Vec<bool>> = Vec::with_capacity(levels - 1);
    let mut below = leaves.clone();
    let mut merged: Vec<u64> = Vec::with_capacity(2 * n);
    for _ in 1..levels {
        merged.clear();
        let mut flags = Vec::with_capacity(2 * n);
        let pairs = below.len() / 2;
        let (mut leaf, mut pair) = (0, 0);
        while leaf < n || pair < pairs {
            let package = if pair < pairs {
                below[2 * pair] + below[2 * pair + 1]
            } else {
                u64::MAX
            };
            if leaf < n && leaves[leaf] <= package {
                merged.push(leaves[leaf]);
                flags.push(false);
                leaf += 1;
            } else {
                merged.push(package);
                flags.push(true);
                pair += 1;
            }
        }
        packages.push(flags);
        std::mem::swap(&mut below, &mut merged);
    }

    // Take the 2n - 2 cheapest items of the top list and expand the packages among
    // them level by level: every time a leaf is taken its symbol's code grows a bit.
    // The items taken from a list are always a prefix of it, and the leaves of a list
    // are in `order`, so the leaves taken are a prefix of `order`.
    let mut take = 2 * n - 2;
    for flags in packages.iter().rev() {
        let taken_packages = flags[..take].iter().filter(|&&p| p).count();
        for &s in &order[..take - taken_packages] {
            lengths[s] += 1;
        }
        take = 2 * taken_packages;
    }
    for &s in &order[..take] {
        lengths[s] += 1;
    }
    lengths
}

/// Checks `lengths` for [`Encoder::new`] and [`Decoder::new`]; returns the number of
/// codes of each length.
fn length_counts(lengths: &[u8]) -> Result<[u32; MAX_CODE_LEN as usize + 1], StreamError> {
    if lengths.len() > MAX_ALPHABET {
        return Err(StreamError::HuffmanAlphabet {
            symbols: lengths.len(),
            limit: MAX_ALPHABET,
        });
    }
    let mut counts = [0u32; MAX_CODE_LEN as usize + 1];
    let mut kraft: u64 = 0;
    for (symbol, &len) in lengths.iter().enumerate() {
        if u32::from(len) > MAX_CODE_LEN {
            return Err(StreamError::HuffmanCodeLength {
                len,
                symbol,
                limit: MAX_CODE_LEN,
            });
        }
        if len > 0 {
            counts[usize::from(len)] += 1;
            kraft += 1 << (MAX_CODE_LEN - u32::from(len));
        }
    }
    if kraft > TABLE_SIZE as u64 {
        return Err(StreamError::Invalid(
            "huffman code lengths over-subscribe the code space",
        ));
    }
    Ok(counts)
}

/// Calls `assign(symbol, reversed_code, length)` for every present symbol of `lengths`
/// (already checked by [`length_counts`]), giving canonical codes.
fn canonical_codes(
    lengths: &[u8],
    counts: &[u32; MAX_CODE_LEN as usize + 1],
    mut assign: impl FnMut(usize, u32, u32),
) {
    let mut next = [0u32; MAX_CODE_LEN as usize + 1];
    let mut code = 0u32;
    for len in 1..=MAX_CODE_LEN as usize {
        // `counts[0]` is always 0.
        code = (code + counts[len - 1]) << 1;
        next[len] = code;
    }
    for (symbol, &len) in lengths.iter().enumerate() {
        if len > 0 {
            let len = u32::from(len);
            let c = next[len as usize];
            next[len as usize] += 1;
            assign(symbol, c.reverse_bits() >> (32 - len), len);
        }
    }
}

/// Canonical codes for a set of lengths, ready for encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoder {
    /// Per symbol: the bit-reversed code in the low 16 bits, the length above them.
    codes: Vec<u32>,
}

impl Encoder {
    /// Canonical codes (shorter codes first, ties by symbol index) for `lengths`
    /// (0 = symbol absent).
    ///
    /// Errors if the lengths over-subscribe the code space (Kraft sum > 1), a length
    /// exceeds [`MAX_CODE_LEN`], or there are more than `1 << MAX_CODE_LEN` symbols. An
    /// incomplete code (Kraft sum < 1) is allowed.
    pub fn new(lengths: &[u8]) -> Result<Encoder, StreamError> {
        let counts = length_counts(lengths)?;
        let mut codes = vec![0u32; lengths.len()];
        canonical_codes(lengths, &counts, |symbol, bits, len| {
            codes[symbol] = bits | len << 16;
        });
        Ok(Encoder { codes })
    }

    /// `(bits, length)` of `symbol`'s code, bits LSB-first: write the low `length` bits
    /// of `bits` to an LSB-first bit stream. Length 0 (and bits 0) for an absent symbol,
    /// including one outside the alphabet.
    #[inline]
    pub fn code(&self, symbol: usize) -> (u32, u32) {
        let entry = self.codes.get(symbol).copied().unwrap_or(0);
        (entry & 0xffff, entry >> 16)
    }
}

/// A table-driven decoder: one lookup of [`MAX_CODE_LEN`] bits gives symbol and length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoder {
    /// Indexed by the next `MAX_CODE_LEN` stream bits: `symbol << 4 | length`, or 0
    /// (length 0) where no code matches.
    table: Vec<u16>,
}

impl Decoder {
    /// The decoder for `lengths` (same rules as [`Encoder::new`]). An incomplete code
    /// (Kraft sum < 1) is allowed: table entries no code reaches decode as an error
    /// (see [`Decoder::decode`]). A single present symbol of length 1 is allowed (bit 0
    /// decodes it; bit 1 is invalid).
    pub fn new(lengths: &[u8]) -> Result<Decoder, StreamError> {
        let counts = length_counts(lengths)?;
        let mut table = vec![0u16; TABLE_SIZE];
        canonical_codes(lengths, &counts, |symbol, bits, len| {
            // `symbol < MAX_ALPHABET` and `len <= MAX_CODE_LEN < 16`: the entry fits.
            let entry = (symbol as u16) << 4 | len as u16;
            let step = 1usize << len;
            let mut index = bits as usize;
            while index < TABLE_SIZE {
                table[index] = entry;
                index += step;
            }
        });
        Ok(Decoder { table })
    }

    /// Given the next [`MAX_CODE_LEN`] bits of an LSB-first stream (`peek`, low bit =
    /// next bit; bits beyond the end of the stream are zero; higher bits of `peek` are
    /// ignored), the symbol and its code length, or `None` when no code matches those
    /// bits.
    #[inline]
    pub fn decode(&self, peek: u32) -> Option<(u16, u32)> {
        let entry = self.table[(peek & PEEK_MASK) as usize];
        let len = u32::from(entry & 15);
        if len == 0 {
            None
        } else {
            Some((entry >> 4, len))
        }
    }
}

/// Appends `lengths` (each 0..=15) to `out` in the compact format of the module
/// documentation: the first and last present symbol as bytes, then 4 bits per symbol in
/// between, packed LSB-first and zero-padded to a byte (`2 + ceil(range / 2)` bytes;
/// two bytes when no symbol is present).
///
/// # Panics
///
/// If a length exceeds 15 or a symbol from index 256 up has a nonzero length.
pub fn write_lengths(lengths: &[u8], out: &mut Vec<u8>) {
    let Some(first) = lengths.iter().position(|&l| l != 0) else {
        out.extend_from_slice(&EMPTY_TABLE);
        return;
    };
    let last = lengths.iter().rposition(|&l| l != 0).unwrap_or(first);
    assert!(last < 256, "symbol {last} does not fit a length table");
    out.push(first as u8);
    out.push(last as u8);
    for pair in lengths[first..=last].chunks(2) {
        let low = pair[0];
        let high = pair.get(1).copied().unwrap_or(0);
        assert!(low <= 15 && high <= 15, "code length above 15");
        out.push(low | high << 4);
    }
}

/// Reads what [`write_lengths`] wrote for an alphabet of `alphabet` symbols from the
/// start of `input`; returns (lengths of len `alphabet`, bytes consumed).
///
/// Every malformed input (truncated, range outside the alphabet, a length above
/// [`MAX_CODE_LEN`], a zero length at either end of the range, nonzero padding) is an
/// `Err`; never panics on any input.
pub fn read_lengths(input: &[u8], alphabet: usize) -> Result<(Vec<u8>, usize), StreamError> {
    const TRUNCATED: StreamError = StreamError::Truncated("truncated huffman length table");
    let [first, last, ..] = *input else {
        return Err(TRUNCATED);
    };
    if [first, last] == EMPTY_TABLE {
        return Ok((vec![0; alphabet], 2));
    }
    let (first, last) = (usize::from(first), usize::from(last));
    if first > last {
        return Err(StreamError::Invalid("bad huffman length table range"));
    }
    if last >= alphabet {
        return Err(StreamError::Invalid(
            "huffman length table range outside the alphabet",
        ));
    }
    let range = last - first + 1;
    let end = 2 + range.div_ceil(2);
    let Some(packed) = input.get(2..end) else {
        return Err(TRUNCATED);
    };
    let mut lengths = vec![0u8; alphabet];
    for (i, length) in lengths[first..=last].iter_mut().enumerate() {
        let l = (packed[i / 2] >> (4 * (i % 2))) & 15;
        if u32::from(l) > MAX_CODE_LEN {
            return Err(StreamError::Invalid("huffman code length too long"));
        }
        *length = l;
    }
    if range % 2 == 1 && packed[range / 2] >> 4 != 0 {
        return Err(StreamError::NonzeroPadding(
            "nonzero padding in huffman length table",
        ));
    }
    if lengths[first] == 0 || lengths[last] == 0 {
        return Err(StreamError::NonCanonical(
            "huffman length table range not tight",
        ));
    }
    Ok((lengths, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A minimal LSB-first bit writer.
    #[derive(Default)]
    struct BitWriter {
        bytes: Vec<u8>,
        acc: u64,
        n: u32,
        bits: u64,
    }

    impl BitWriter {
        fn put(&mut self, bits: u32, len: u32) {
            assert!(len <= 32);
            assert!(len == 32 || bits >> len == 0, "stray high bits");
            self.acc |= u64::from(bits) << self.n;
            self.n += len;
            self.bits += u64::from(len);
            while self.n >= 8 {
                self.bytes.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }

        fn finish(mut self) -> (Vec<u8>, u64) {
            if self.n > 0 {
                self.bytes.push(self.acc as u8);
            }
            (self.bytes, self.bits)
        }
    }

    /// A minimal LSB-first bit reader (bits beyond the end read as zero).
    struct BitReader<'a> {
        bytes: &'a [u8],
        pos: u64,
    }

    impl BitReader<'_> {
        fn peek(&self) -> u32 {
            let mut v = 0u32;
            for i in 0..MAX_CODE_LEN {
                let p = self.pos + u64::from(i);
                let byte = self.bytes.get((p / 8) as usize).copied().unwrap_or(0);
                v |= u32::from((byte >> (p % 8)) & 1) << i;
            }
            v
        }

        fn consume(&mut self, n: u32) {
            self.pos += u64::from(n);
        }
    }

    /// Encodes `symbols` with `lengths`, decodes them back, and checks the size.
    fn round_trip(symbols: &[usize], lengths: &[u8]) {
        let enc = Encoder::new(lengths).unwrap();
        let dec = Decoder::new(lengths).unwrap();
        let mut w = BitWriter::default();
        let mut expect_bits = 0u64;
        for &s in symbols {
            let (bits, len) = enc.code(s);
            assert_eq!(len, u32::from(lengths[s]), "length of symbol {s}");
            assert!(len > 0, "symbol {s} absent");
            w.put(bits, len);
            expect_bits += u64::from(len);
        }
        let (bytes, bits) = w.finish();
        assert_eq!(bits, expect_bits);
        assert_eq!(bytes.len() as u64, expect_bits.div_ceil(8), "exact size");
        let mut r = BitReader {
            bytes: &bytes,
            pos: 0,
        };
        for (i, &s) in symbols.iter().enumerate() {
            let (got, len) = dec
                .decode(r.peek())
                .unwrap_or_else(|| panic!("symbol {i} invalid"));
            assert_eq!(usize::from(got), s, "symbol {i}");
            assert_eq!(len, u32::from(lengths[s]));
            r.consume(len);
        }
        assert_eq!(r.pos, expect_bits);
    }

    /// Kraft sum scaled by `2^15`.
    fn kraft(lengths: &[u8]) -> u64 {
        lengths
            .iter()
            .filter(|&&l| l > 0)
            .map(|&l| 1u64 << (15 - l))
            .sum()
    }

    fn cost(counts: &[u32], lengths: &[u8]) -> u64 {
        counts
            .iter()
            .zip(lengths)
            .map(|(&c, &l)| u64::from(c) * u64::from(l))
            .sum()
    }

    /// Unlimited Huffman lengths (simple O(n^2) reference implementation).
    fn huffman_reference(counts: &[u32]) -> Vec<u32> {
        let mut lengths = vec![0u32; counts.len()];
        // Nodes: (weight, symbols below).
        let mut nodes: Vec<(u64, Vec<usize>)> = (0..counts.len())
            .filter(|&s| counts[s] > 0)
            .map(|s| (u64::from(counts[s]), vec![s]))
            .collect();
        if nodes.len() == 1 {
            lengths[nodes[0].1[0]] = 1;
        }
        while nodes.len() > 1 {
            nodes.sort_by_key(|n| std::cmp::Reverse(n.0));
            let (wa, a) = nodes.pop().unwrap();
            let (wb, b) = nodes.pop().unwrap();
            for &s in a.iter().chain(&b) {
                lengths[s] += 1;
            }
            nodes.push((wa + wb, [a, b].concat()));
        }
        lengths
    }

    /// Checks the invariants of `limited_code_lengths(counts, limit)`.
    fn check_lengths(counts: &[u32], lengths: &[u8], limit: u32) {
        assert_eq!(lengths.len(), counts.len());
        let present = counts.iter().filter(|&&c| c > 0).count();
        for (s, (&c, &l)) in counts.iter().zip(lengths).enumerate() {
            assert_eq!(c == 0, l == 0, "symbol {s} count {c} length {l}");
            assert!(u32::from(l) <= limit, "symbol {s} length {l}");
        }
        match present {
            0 => {}
            1 => assert_eq!(lengths.iter().copied().max(), Some(1)),
            _ => assert_eq!(kraft(lengths), 1 << 15, "complete code"),
        }
        for a in 0..counts.len() {
            for b in 0..counts.len() {
                if counts[a] > 0 && counts[a] > counts[b] && counts[b] > 0 {
                    assert!(lengths[a] <= lengths[b], "monotone: {a} vs {b}");
                }
            }
        }
    }

    /// Counts of a random skewed distribution over `alphabet` symbols.
    fn skewed_weights(rng: &mut SmallRng, alphabet: usize) -> Vec<f64> {
        let ratio: f64 = rng.gen_range(0.3..1.0);
        let zero_p: f64 = rng.gen_range(0.0..0.6);
        let mut w: Vec<f64> = (0..alphabet)
            .map(|i| {
                if rng.gen_bool(zero_p) {
                    0.0
                } else {
                    ratio.powi(i as i32) * rng.gen_range(0.5..2.0)
                }
            })
            .collect();
        // Shuffle which symbols are common.
        for i in (1..alphabet).rev() {
            let j = rng.gen_range(0..=i);
            w.swap(i, j);
        }
        if w.iter().all(|&x| x == 0.0) {
            w[rng.gen_range(0..alphabet)] = 1.0;
        }
        w
    }

    fn sample(rng: &mut SmallRng, weights: &[f64], n: usize) -> Vec<usize> {
        let mut cumulative = Vec::with_capacity(weights.len());
        let mut total = 0.0;
        for &w in weights {
            total += w;
            cumulative.push(total);
        }
        (0..n)
            .map(|_| {
                let x = rng.gen_range(0.0..total);
                let i = cumulative.partition_point(|&c| c <= x);
                // Never an absent symbol, even at rounding edges.
                (i..weights.len())
                    .chain((0..i).rev())
                    .find(|&j| weights[j] > 0.0)
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn known_distribution_lengths() {
        let counts = [1, 1, 2, 4, 8];
        let lengths = code_lengths(&counts);
        assert_eq!(lengths, vec![4, 4, 3, 2, 1]);
        assert_eq!(cost(&counts, &lengths), 30);
        // Absent symbols interleaved.
        let counts = [0, 8, 0, 1, 4, 1, 2, 0];
        assert_eq!(code_lengths(&counts), vec![0, 1, 0, 4, 2, 4, 3, 0]);
        // Equal counts: a full balanced code.
        assert_eq!(code_lengths(&[5; 8]), vec![3; 8]);
        // Ties broken by symbol index: the later of equal counts gets the shorter code.
        assert_eq!(code_lengths(&[1, 1, 1]), vec![2, 2, 1]);
    }

    #[test]
    fn degenerate_alphabets() {
        assert_eq!(code_lengths(&[]), Vec::<u8>::new());
        assert_eq!(code_lengths(&[0, 0, 0]), vec![0, 0, 0]);
        assert_eq!(code_lengths(&[0, 7, 0]), vec![0, 1, 0]);
        assert_eq!(code_lengths(&[u32::MAX]), vec![1]);
        assert_eq!(code_lengths(&[3, 0, 9]), vec![1, 0, 1]);
        let lengths = code_lengths(&[u32::MAX; 256]);
        assert_eq!(lengths, vec![8; 256]);
    }

    #[test]
    fn canonical_codes_known() {
        // DEFLATE's example: lengths (3,3,3,3,3,2,4,4) give codes
        // 010 011 100 101 110 00 1110 1111.
        let lengths = [3, 3, 3, 3, 3, 2, 4, 4];
        let expect = [
            (0b010, 3),
            (0b011, 3),
            (0b100, 3),
            (0b101, 3),
            (0b110, 3),
            (0b00, 2),
            (0b1110, 4),
            (0b1111, 4),
        ];
        let enc = Encoder::new(&lengths).unwrap();
        let dec = Decoder::new(&lengths).unwrap();
        for (s, &(code, len)) in expect.iter().enumerate() {
            let reversed = (code as u32).reverse_bits() >> (32 - len);
            assert_eq!(enc.code(s), (reversed, len), "symbol {s}");
            // Any continuation bits decode the same symbol.
            for rest in [0u32, 0xfff, 0x5a5] {
                let peek = reversed | rest << len;
                assert_eq!(dec.decode(peek), Some((s as u16, len)));
            }
        }
        assert_eq!(enc.code(8), (0, 0), "outside the alphabet");
    }

    #[test]
    fn absent_symbols_have_no_code() {
        let enc = Encoder::new(&[0, 2, 0, 1, 2]).unwrap();
        assert_eq!(enc.code(0), (0, 0));
        assert_eq!(enc.code(2), (0, 0));
        assert_eq!(enc.code(3), (0, 1));
        assert_eq!(enc.code(1), (0b01, 2));
        assert_eq!(enc.code(4), (0b11, 2));
    }

    #[test]
    fn single_symbol_decoder() {
        let lengths = [0, 0, 1, 0];
        let dec = Decoder::new(&lengths).unwrap();
        assert_eq!(Encoder::new(&lengths).unwrap().code(2), (0, 1));
        for peek in 0..1u32 << MAX_CODE_LEN {
            if peek & 1 == 0 {
                assert_eq!(dec.decode(peek), Some((2, 1)));
            } else {
                assert_eq!(dec.decode(peek), None);
            }
        }
        round_trip(&[2, 2, 2, 2, 2], &lengths);
    }

    #[test]
    fn incomplete_code_invalid_entries() {
        // Codes 0, 10; 11 unused.
        let dec = Decoder::new(&[1, 2]).unwrap();
        let mut valid = 0;
        for peek in 0..1u32 << MAX_CODE_LEN {
            match dec.decode(peek) {
                Some((0, 1)) => assert_eq!(peek & 1, 0),
                Some((1, 2)) => assert_eq!(peek & 3, 0b01),
                None => assert_eq!(peek & 3, 0b11),
                other => panic!("{other:?}"),
            }
            valid += u32::from(dec.decode(peek).is_some());
        }
        assert_eq!(valid, 3 << (MAX_CODE_LEN - 2));
        // No present symbols: nothing decodes.
        let dec = Decoder::new(&[0; 10]).unwrap();
        assert!((0..1u32 << MAX_CODE_LEN).all(|p| dec.decode(p).is_none()));
        let dec = Decoder::new(&[]).unwrap();
        assert_eq!(dec.decode(0), None);
    }

    #[test]
    fn rejects_bad_lengths() {
        for bad in [
            &[1u8, 1, 1][..],
            &[2, 2, 2, 2, 2],
            &[1, 2, 3, 3, 3],
            &[12; 4097],
        ] {
            assert!(Decoder::new(bad).is_err(), "{bad:?}");
            assert!(Encoder::new(bad).is_err(), "{bad:?}");
        }
        let too_long = [13u8, 1];
        assert!(Decoder::new(&too_long).is_err());
        assert!(Encoder::new(&too_long).is_err());
        // Exactly full is fine, at every length.
        for len in 1..=MAX_CODE_LEN as u8 {
            let full = vec![len; 1 << len];
            assert!(Decoder::new(&full).is_ok(), "{len}");
            assert!(Encoder::new(&full).is_ok(), "{len}");
            let mut over = full.clone();
            over.push(MAX_CODE_LEN as u8);
            assert!(Decoder::new(&over).is_err(), "{len}");
            assert!(Encoder::new(&over).is_err(), "{len}");
        }
        // Too many symbols even when absent.
        assert!(Decoder::new(&vec![0; MAX_ALPHABET + 1]).is_err());
        // The largest alphabet decodes its last symbol.
        let mut lengths = vec![0u8; MAX_ALPHABET];
        lengths[MAX_ALPHABET - 1] = 1;
        lengths[0] = 1;
        let dec = Decoder::new(&lengths).unwrap();
        assert_eq!(dec.decode(1), Some((MAX_ALPHABET as u16 - 1, 1)));
    }

    #[test]
    fn fibonacci_counts_respect_limit() {
        let mut counts = vec![1u32, 1];
        while counts.len() < 45 {
            let n = counts.len();
            counts.push(counts[n - 1] + counts[n - 2]);
        }
        let unlimited = huffman_reference(&counts);
        assert!(
            unlimited.iter().copied().max().unwrap() >= 30,
            "{unlimited:?}"
        );
        let lengths = code_lengths(&counts);
        assert_eq!(lengths.iter().copied().max(), Some(MAX_CODE_LEN as u8));
        check_lengths(&counts, &lengths, MAX_CODE_LEN);
        let symbols: Vec<usize> = (0..counts.len()).flat_map(|s| [s, s, s]).collect();
        round_trip(&symbols, &lengths);
        // The frequent symbols keep short codes; the limit costs little.
        assert!(lengths[44] <= 2 && lengths[43] <= 2, "{lengths:?}");
        let unlimited_cost: u64 = counts
            .iter()
            .zip(&unlimited)
            .map(|(&c, &l)| u64::from(c) * u64::from(l))
            .sum();
        let limited_cost = cost(&counts, &lengths);
        assert!(limited_cost > unlimited_cost);
        assert!(
            limited_cost * 100 < unlimited_cost * 101,
            "{limited_cost} vs {unlimited_cost}"
        );
    }

    /// The optimal cost of codes of lengths `1 ..= limit` for `counts` by brute force.
    fn brute_force_cost(counts: &[u32], limit: u32) -> u64 {
        let n = counts.len();
        let mut best = u64::MAX;
        let mut lengths = vec![1u8; n];
        loop {
            if kraft(&lengths) <= 1 << 15 {
                best = best.min(cost(counts, &lengths));
            }
            // Next combination.
            let mut i = 0;
            loop {
                if i == n {
                    return best;
                }
                if u32::from(lengths[i]) < limit {
                    lengths[i] += 1;
                    break;
                }
                lengths[i] = 1;
                i += 1;
            }
        }
    }

    #[test]
    fn optimal_under_small_limits() {
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..300 {
            let n = rng.gen_range(2..=7);
            let limit = rng.gen_range(3..=5u32);
            if n > 1 << limit {
                continue;
            }
            let max = *[2u32, 10, 1000, 1 << 30].get(rng.gen_range(0..4)).unwrap();
            let counts: Vec<u32> = (0..n)
                .map(|i| rng.gen_range(1..=max) >> rng.gen_range(0..=(2 * i as u32).min(31)))
                .map(|c| c.max(1))
                .collect();
            let lengths = limited_code_lengths(&counts, limit);
            check_lengths(&counts, &lengths, limit);
            assert_eq!(
                cost(&counts, &lengths),
                brute_force_cost(&counts, limit),
                "{counts:?} limit {limit}: {lengths:?}"
            );
        }
        // A limit that is the bare minimum: 8 symbols in 3 bits.
        let lengths = limited_code_lengths(&[1, 2, 4, 8, 16, 32, 64, 128], 3);
        assert_eq!(lengths, vec![3; 8]);
        assert_eq!(limited_code_lengths(&[1, 2], 1), vec![1, 1]);
    }

    #[test]
    fn round_trip_random_streams() {
        let mut rng = SmallRng::seed_from_u64(0x4a52_4f4f);
        for alphabet in 1..=256usize {
            for _ in 0..2 {
                let weights = skewed_weights(&mut rng, alphabet);
                let n = rng.gen_range(1..3000);
                let symbols = sample(&mut rng, &weights, n);
                let mut counts = vec![0u32; alphabet];
                for &s in &symbols {
                    counts[s] += 1;
                }
                let lengths = code_lengths(&counts);
                check_lengths(&counts, &lengths, MAX_CODE_LEN);
                // Optimal where the limit does not bind.
                let unlimited = huffman_reference(&counts);
                if unlimited.iter().all(|&l| l <= MAX_CODE_LEN) {
                    let reference: u64 = counts
                        .iter()
                        .zip(&unlimited)
                        .map(|(&c, &l)| u64::from(c) * u64::from(l))
                        .sum();
                    assert_eq!(cost(&counts, &lengths), reference, "{counts:?}");
                }
                round_trip(&symbols, &lengths);
                // The lengths survive their table.
                let mut table = Vec::new();
                write_lengths(&lengths, &mut table);
                assert_eq!(read_lengths(&table, alphabet), Ok((lengths, table.len())));
            }
        }
    }

    #[test]
    fn write_lengths_format() {
        let mut out = vec![0xee];
        write_lengths(&[0, 0, 3, 1, 0, 12, 0], &mut out);
        assert_eq!(out, vec![0xee, 2, 5, 0x13, 0xc0]);
        let mut out = Vec::new();
        write_lengths(&[0, 0, 3, 1, 0, 12, 2], &mut out);
        assert_eq!(out, vec![2, 6, 0x13, 0xc0, 0x02]);
        assert_eq!(
            read_lengths(&out, 7).unwrap(),
            (vec![0, 0, 3, 1, 0, 12, 2], 5)
        );
        // Trailing bytes are not consumed.
        out.extend_from_slice(&[9, 9]);
        assert_eq!(read_lengths(&out, 7).unwrap().1, 5);
        let mut out = Vec::new();
        write_lengths(&[0; 65], &mut out);
        assert_eq!(out, EMPTY_TABLE);
        assert_eq!(read_lengths(&out, 65), Ok((vec![0; 65], 2)));
        assert_eq!(read_lengths(&out, 0), Ok((vec![], 2)));
        // Sizes: 2 bytes plus half a byte per symbol of the range.
        for (range, size) in [(1, 3), (2, 3), (3, 4), (40, 22), (65, 35), (256, 130)] {
            let lengths = vec![8u8; range];
            let mut out = Vec::new();
            write_lengths(&lengths, &mut out);
            assert_eq!(out.len(), size, "range {range}");
            let mut expect = lengths;
            expect.resize(256, 0);
            assert_eq!(read_lengths(&out, 256), Ok((expect, size)));
        }
        // The last symbol of a 256-symbol alphabet.
        let mut lengths = vec![0u8; 256];
        lengths[255] = 1;
        let mut out = Vec::new();
        write_lengths(&lengths, &mut out);
        assert_eq!(out, vec![255, 255, 1]);
        assert_eq!(read_lengths(&out, 256), Ok((lengths, 3)));
    }

    #[test]
    fn read_lengths_rejects_malformed() {
        let mut table = Vec::new();
        write_lengths(&[0, 5, 0, 1, 12, 7], &mut table);
        assert!(read_lengths(&table, 6).is_ok());
        // Range outside the alphabet.
        assert!(read_lengths(&table, 5).is_err());
        assert!(read_lengths(&table, 0).is_err());
        // first > last, other than the empty marker.
        assert!(read_lengths(&[3, 2, 0x11], 6).is_err());
        assert!(read_lengths(&[255, 0], 256).is_err());
        // A length above the limit.
        assert!(read_lengths(&[0, 1, 0xd1], 2).is_err());
        assert!(read_lengths(&[0, 0, 0x0f], 2).is_err());
        // Nonzero padding.
        assert!(read_lengths(&[0, 0, 0x11], 2).is_err());
        // Zero length at an end of the range.
        assert!(read_lengths(&[0, 1, 0x10], 2).is_err());
        assert!(read_lengths(&[0, 1, 0x01], 2).is_err());
        assert!(read_lengths(&[0, 1, 0x11], 2).is_ok());
    }

    #[test]
    fn read_lengths_rejects_truncations() {
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..200 {
            let alphabet = rng.gen_range(1..=256usize);
            let density: f64 = rng.gen_range(0.0..1.0);
            let lengths: Vec<u8> = (0..alphabet)
                .map(|_| {
                    if rng.gen_bool(density) {
                        rng.gen_range(1..=MAX_CODE_LEN as u8)
                    } else {
                        0
                    }
                })
                .collect();
            let mut table = Vec::new();
            write_lengths(&lengths, &mut table);
            assert_eq!(
                read_lengths(&table, alphabet),
                Ok((lengths.clone(), table.len()))
            );
            for cut in 0..table.len() {
                assert!(
                    read_lengths(&table[..cut], alphabet).is_err(),
                    "{cut} of {}",
                    table.len()
                );
            }
        }
    }

    #[test]
    fn read_lengths_random_bytes_never_panic() {
        let mut rng = SmallRng::seed_from_u64(12);
        let mut accepted = 0;
        for i in 0..200_000 {
            let len = rng.gen_range(0..40);
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if i % 2 == 0 && len >= 2 {
                // Plausible ranges, so that the body gets parsed too.
                bytes[0] %= 70;
                bytes[1] = bytes[0].saturating_add(bytes[1] % 20);
                for b in &mut bytes[2..] {
                    *b &= 0xbb;
                }
            }
            let alphabet = rng.gen_range(0..=300);
            if let Ok((lengths, used)) = read_lengths(&bytes, alphabet) {
                accepted += 1;
                assert_eq!(lengths.len(), alphabet);
                assert!(lengths.iter().all(|&l| u32::from(l) <= MAX_CODE_LEN));
                // What is accepted is exactly what the writer writes.
                let mut again = Vec::new();
                write_lengths(&lengths, &mut again);
                assert_eq!(again, bytes[..used]);
            }
        }
        assert!(accepted > 100, "{accepted}");
    }

    proptest! {
        #[test]
        fn prop_kraft_and_limit(
            counts in prop::collection::vec(
                prop_oneof![3 => Just(0u32), 5 => 1u32..100, 1 => any::<u32>()],
                0..=256,
            )
        ) {
            let lengths = code_lengths(&counts);
            check_lengths(&counts, &lengths, MAX_CODE_LEN);
            prop_assert!(kraft(&lengths) <= 1 << 15);
            prop_assert_eq!(&lengths, &code_lengths(&counts), "deterministic");
            prop_assert!(Encoder::new(&lengths).is_ok());
            prop_assert!(Decoder::new(&lengths).is_ok());
        }

        #[test]
        fn prop_lengths_table_round_trip(
            lengths in prop::collection::vec(
                prop_oneof![2 => Just(0u8), 3 => 1u8..=12],
                0..=256,
            ),
            tail in prop::collection::vec(any::<u8>(), 0..4),
        ) {
            let mut table = Vec::new();
            write_lengths(&lengths, &mut table);
            let used = table.len();
            table.extend_from_slice(&tail);
            prop_assert_eq!(read_lengths(&table, lengths.len()), Ok((lengths, used)));
        }
    }
}
