//! LSB-first bit streams for the entropy coders: a growable writer and a bounds-safe
//! reader that reads zeros past the end and reports how far it went.

use crate::stream_error::StreamError;

/// Appends bit fields, least significant bit first, to a byte vector.
#[derive(Debug, Default)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    nbits: u32,
}

impl BitWriter {
    /// An empty writer with room for `bytes` bytes.
    pub fn with_capacity(bytes: usize) -> BitWriter {
        BitWriter {
            out: Vec::with_capacity(bytes),
            acc: 0,
            nbits: 0,
        }
    }

    /// Appends the low `n <= 56` bits of `bits` (which must be zero above them).
    #[inline(always)]
    pub fn put(&mut self, bits: u64, n: u32) {
        debug_assert!(n <= 56 && bits.checked_shr(n).unwrap_or(0) == 0);
        let start = self.out.len();
        // Fewer than 8 bits wait in `acc` between calls: its 8 bytes are stored, and
        // the whole ones kept.
        let acc = self.acc | bits << self.nbits;
        let nbits = self.nbits + n;
        self.out.extend_from_slice(&acc.to_le_bytes());
        let whole = nbits >> 3;
        self.out.truncate(start + whole as usize);
        self.acc = acc.checked_shr(8 * whole).unwrap_or(0);
        self.nbits = nbits & 7;
    }

    /// Appends the low `n <= 64` bits of `bits` (zero above them).
    #[inline(always)]
    pub fn put_wide(&mut self, bits: u64, n: u32) {
        if n <= 56 {
            self.put(bits, n);
        } else {
            self.put(bits & 0xffff_ffff, 32);
            self.put(bits >> 32, n - 32);
        }
    }

    /// Appends the fields `(bits, n)` of `fields` in turn, as [`BitWriter::put`] would,
    /// given that they hold at most `max_bits` bits in all.
    #[inline(always)]
    pub fn put_all(&mut self, fields: impl Iterator<Item = (u64, u32)>, max_bits: usize) {
        let start = self.out.len();
        let first = self.nbits as usize;
        // Whole 64-bit words from `start`, one past the last bit.
        let words = (first + max_bits).div_ceil(64) + 1;
        self.out.resize(start + 8 * words, 0);
        let buf = &mut self.out[start..];
        // The word that bit `at` falls in is built in `word` and stored after every
        // field; a field that reaches the next word leaves its spill there. No branch
        // per field: the only chain from one field to the next is an OR and a mask.
        let (mut word, mut at) = (self.acc, first);
        for (bits, n) in fields {
            debug_assert!(n <= 56 && bits.checked_shr(n).unwrap_or(0) == 0);
            let index = at >> 6;
            let shift = (at & 63) as u32;
            word |= bits << shift;
            buf[8 * index..8 * index + 8].copy_from_slice(&word.to_le_bytes());
            // Zero unless the field crosses into the next word.
            let spill = bits.checked_shr(64 - shift).unwrap_or(0);
            at += n as usize;
            let same_word = u64::from(at >> 6 == index).wrapping_neg();
            word = (word & same_word) | spill;
        }
        let index = at >> 6;
        buf[8 * index..8 * index + 8].copy_from_slice(&word.to_le_bytes());
        let whole = at >> 3;
        // The bits past the whole bytes wait in `acc` (those above them are zero).
        self.acc = u64::from(buf[whole]);
        self.nbits = (at & 7) as u32;
        self.out.truncate(start + whole);
    }

    /// Bits written so far.
    #[cfg(test)]
    pub fn len_bits(&self) -> u64 {
        self.out.len() as u64 * 8 + u64::from(self.nbits)
    }

    /// The bytes, the last one zero-padded.
    pub fn finish(mut self) -> Vec<u8> {
        let bytes = self.nbits.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
        self.out
    }
}

/// The 8 bytes of `input` from `at` as a little-endian integer, zero past the end.
#[inline(always)]
pub fn load_u64(input: &[u8], at: usize) -> u64 {
    match input.get(at..).and_then(|s| s.first_chunk::<8>()) {
        Some(bytes) => u64::from_le_bytes(*bytes),
        None => load_tail(input, at),
    }
}

#[cold]
#[inline(never)]
fn load_tail(input: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    if let Some(rest) = input.get(at..) {
        let n = rest.len().min(8);
        bytes[..n].copy_from_slice(&rest[..n]);
    }
    u64::from_le_bytes(bytes)
}

/// Reads bit fields written by [`BitWriter`]. Past the end of the input it reads zeros;
/// [`BitReader::overrun`] tells whether it did.
#[derive(Debug)]
pub struct BitReader<'a> {
    input: &'a [u8],
    /// Next input byte not yet in `buf`.
    ptr: usize,
    buf: u64,
    cnt: u32,
    /// Bits read in total.
    consumed: u64,
}

impl<'a> BitReader<'a> {
    /// A reader at the start of `input`.
    pub fn new(input: &'a [u8]) -> BitReader<'a> {
        BitReader {
            input,
            ptr: 0,
            buf: 0,
            cnt: 0,
            consumed: 0,
        }
    }

    #[inline(always)]
    fn refill(&mut self) {
        self.buf |= load_u64(self.input, self.ptr) << self.cnt;
        self.ptr += ((63 - self.cnt) >> 3) as usize;
        self.cnt |= 56;
    }

    /// The next `n <= 56` bits without consuming them.
    #[inline(always)]
    pub fn peek(&mut self, n: u32) -> u64 {
        if self.cnt < n {
            self.refill();
        }
        self.buf & ((1u64 << n) - 1)
    }

    /// Drops `n` bits that a [`BitReader::peek`] of at least `n` bits made available.
    #[inline(always)]
    pub fn consume(&mut self, n: u32) {
        debug_assert!(n <= self.cnt);
        self.buf >>= n;
        self.cnt -= n;
        self.consumed += u64::from(n);
    }

    /// Reads an `n <= 64`-bit field.
    #[inline(always)]
    pub fn get_wide(&mut self, n: u32) -> u64 {
        if n <= 56 {
            let v = self.peek(n);
            self.consume(n);
            v
        } else {
            let lo = self.peek(32);
            self.consume(32);
            let hi = self.peek(n - 32);
            self.consume(n - 32);
            lo | hi << 32
        }
    }

    /// True when more bits were read than the input holds.
    pub fn overrun(&self) -> bool {
        self.consumed > self.input.len() as u64 * 8
    }

    /// Whole bytes the bits read so far occupy (the last one possibly partly).
    pub fn bytes_used(&self) -> usize {
        self.consumed.div_ceil(8) as usize
    }

    /// Ok when the reads ended exactly in the input's last byte; else an error naming
    /// the stream (`what`) and where it ended.
    pub fn finish(&self, what: &'static str) -> Result<(), StreamError> {
        check_end(self.consumed, self.input.len(), what)
    }
}

/// Ok when `consumed` bits end exactly in the last of `len` bytes; else the error
/// [`BitReader::finish`] describes.
fn check_end(consumed: u64, len: usize, what: &'static str) -> Result<(), StreamError> {
    let used = consumed.div_ceil(8);
    if used != len as u64 {
        return Err(StreamError::BitStreamEnd {
            what,
            used: used as usize,
            len,
        });
    }
    Ok(())
}

/// Reads the same bit fields as [`BitReader`], each with one unaligned load at its bit
/// position: only that position carries from one read to the next, so reads of
/// fields whose widths are known early overlap. Past the end of the input it reads
/// zeros.
#[derive(Debug)]
pub struct BitCursor<'a> {
    input: &'a [u8],
    /// Bits read in total.
    pos: u64,
}

impl<'a> BitCursor<'a> {
    /// A cursor at the start of `input`.
    pub fn new(input: &'a [u8]) -> BitCursor<'a> {
        BitCursor { input, pos: 0 }
    }

    /// A cursor at bit `bit` of `input`.
    pub fn at(input: &'a [u8], bit: u64) -> BitCursor<'a> {
        BitCursor { input, pos: bit }
    }

    /// Reads an `n <= 56`-bit field.
    #[inline(always)]
    pub fn get(&mut self, n: u32) -> u64 {
        debug_assert!(n <= 56);
        let bits = load_u64(self.input, (self.pos >> 3) as usize) >> (self.pos & 7);
        self.pos += u64::from(n);
        bits & ((1u64 << (n & 63)) - 1)
    }

    /// Reads an `n <= 64`-bit field.
    #[inline(always)]
    pub fn get_wide(&mut self, n: u32) -> u64 {
        if n <= 56 {
            self.get(n)
        } else {
            let lo = self.get(32);
            lo | self.get(n - 32) << 32
        }
    }

    /// Ok when the reads ended exactly in the input's last byte; else an error naming
    /// the stream (`what`) and where it ended, as [`BitReader::finish`] gives.
    pub fn finish(&self, what: &'static str) -> Result<(), StreamError> {
        check_end(self.pos, self.input.len(), what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_every_width_round_trip() {
        let mut w = BitWriter::default();
        let fields: Vec<(u64, u32)> = (0..=64u32)
            .map(|n| {
                let v = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(u64::from(n) + 1);
                (if n == 64 { v } else { v & ((1u64 << n) - 1) }, n)
            })
            .collect();
        for &(v, n) in &fields {
            w.put_wide(v, n);
        }
        let total: u64 = fields.iter().map(|f| u64::from(f.1)).sum();
        assert_eq!(w.len_bits(), total);
        let bytes = w.finish();
        assert_eq!(bytes.len() as u64, total.div_ceil(8));
        let mut r = BitReader::new(&bytes);
        for &(v, n) in &fields {
            assert_eq!(r.get_wide(n), v, "width {n}");
        }
        assert!(!r.overrun());
        assert_eq!(r.bytes_used(), bytes.len());
        r.get_wide(9);
        assert!(r.overrun());
    }

    #[test]
    fn fields_put_all_at_once_are_the_fields_put_one_by_one() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for pending in 0..8u32 {
            for count in [0usize, 1, 2, 7, 64, 1000] {
                let fields: Vec<(u64, u32)> = (0..count)
                    .map(|k| {
                        // Widths of 0 to 56, every fifth the widest (crossing words).
                        let n = if k % 5 == 0 { 56 } else { (next() % 57) as u32 };
                        (if n == 0 { 0 } else { next() >> (64 - n) }, n)
                    })
                    .collect();
                let (mut one, mut all) = (BitWriter::default(), BitWriter::default());
                one.put(0x5a & ((1 << pending) - 1), pending);
                all.put(0x5a & ((1 << pending) - 1), pending);
                for &(v, n) in &fields {
                    one.put(v, n);
                }
                let total: usize = fields.iter().map(|f| f.1 as usize).sum();
                all.put_all(fields.iter().copied(), total + 3);
                all.put(1, 1);
                one.put(1, 1);
                assert_eq!(all.len_bits(), one.len_bits());
                assert_eq!(all.finish(), one.finish(), "{pending} bits, {count} fields");
            }
        }
    }

    #[test]
    fn the_cursor_reads_what_the_reader_reads() {
        let bytes: Vec<u8> = (0..40u32).map(|i| (i * 37 + 11) as u8).collect();
        let widths = [0u32, 1, 7, 56, 3, 64, 0, 33, 57, 12, 5];
        for len in [0, 1, 7, 8, 9, 30, 40] {
            let input = &bytes[..len];
            let mut reader = BitReader::new(input);
            let mut cursor = BitCursor::new(input);
            for &n in widths.iter().cycle().take(30) {
                assert_eq!(
                    cursor.get_wide(n),
                    reader.get_wide(n),
                    "{len} bytes, width {n}"
                );
                assert_eq!(
                    format!("{:?}", cursor.finish("raw bits")),
                    format!("{:?}", reader.finish("raw bits"))
                );
            }
        }
    }
}
