//! Rice (Golomb power-of-two) coding of sign-folded residual words.
//!
//! The residuals a predictor leaves are folded to small unsigned values (zero is the
//! most common one); this coder spends about `log2(mean) + 2` bits on each, adapting its
//! parameter every 32 values.
//!
//! # Format
//!
//! The stream is specified in docs/format.md, "Coder 3: Rice": groups of [`GROUP`] = 32
//! values in one least-significant-bit-first stream, each behind a 6-bit header `h`
//! (63: all zero; `R = min(T::BITS, 62)`: raw; `k < R`: Rice coding with parameter `k`
//! and an escape for long quotients). This module writes and reads exactly that; what
//! follows is how the encoder chooses.
//!
//! The encoder picks each group's header to make the group small, deterministically
//! (the same values give the same bytes on every platform). An all-zero group gets
//! `h = 63`. Otherwise, with `b` about the average bit length of the group's values,
//! rounded down, it computes the group's exact size for `k = b - 1, b, b + 1`; where
//! zeros are common, also around the average bit length of the nonzero values; then,
//! from the best so far, for each next `k` down (or up) not yet tried while the size
//! strictly falls (all `k` clamped to `0 ..= R - 1`; ties between the sizes first
//! computed go to the lower `k`). Raw is taken only when strictly smaller, so a group
//! never costs more than `6 + 32 * T::BITS` bits, and `n` values at most
//! `ceil((6 * ceil(n / 32) + n * T::BITS) / 8)` bytes. (The average bit length,
//! unlike the mean, is barely moved by a rare huge outlier, which the escape then
//! codes at a bounded cost.) Over geometric residuals the size is that of the best
//! header per group; over sparse or mixed data close to it.
//!
//! The decoder accepts any valid choice of parameters (it does not re-derive them), but
//! rejects an invalid header, a unary run of more than 16 zeros, a stream that ends
//! early, any byte after the last coded bit's byte, and nonzero padding bits.

use crate::stream_error::StreamError;
use crate::word::Word;

/// Number of values per group (one parameter header each).
pub const GROUP: usize = 32;

/// Bits of a group header.
const HEADER_BITS: u32 = 6;
/// Header of an all-zero group.
const ZERO_GROUP: u32 = 63;
/// Quotients from this value up are escaped (written raw after `ESCAPE` zeros).
const ESCAPE: u32 = 16;
/// Most bits the writer may take at once (after a flush at most 7 are pending) and the
/// fewest the reader holds after a refill.
const MAX_PUT: u32 = 56;

/// Appends the Rice coding of `values` to `out`.
///
/// The layout is described in the [module documentation](self). The encoding takes at
/// most `ceil((6 * ceil(n / 32) + n * T::BITS) / 8)` bytes for `n` values, and at least
/// `ceil(6 * ceil(n / 32) / 8)`.
pub fn encode<T: Word>(values: &[T], out: &mut Vec<u8>) {
    out.reserve(max_encoded_len::<T>(values.len()));
    // Codes go to a stack buffer, moved to `out` about a KiB at a time.
    let mut w = BitWriter {
        buf: &mut [0; SCRATCH + 8],
        pos: 0,
        acc: 0,
        nbits: 0,
    };
    let max_group_bytes = (HEADER_BITS + GROUP as u32 * (ESCAPE + 1 + T::BITS)) as usize / 8 + 1;
    let mut full = values.chunks_exact(GROUP);
    for group in &mut full {
        if w.pos > SCRATCH - max_group_bytes {
            w.drain(out);
        }
        encode_group(group, &mut w);
    }
    if !full.remainder().is_empty() {
        if w.pos > SCRATCH - max_group_bytes {
            w.drain(out);
        }
        encode_group(full.remainder(), &mut w);
    }
    w.drain(out);
    if w.nbits > 0 {
        out.push(w.acc as u8);
    }
}

/// Bytes of the encoder's stack buffer (a power of two), less the 8 bytes of slack a
/// whole-word store needs.
const SCRATCH: usize = 1024;

/// Codes one group.
#[inline(always)]
fn encode_group<T: Word>(group: &[T], w: &mut BitWriter<'_>) {
    let (header, _) = choose(group);
    w.put(u64::from(header), HEADER_BITS);
    w.flush();
    if header == ZERO_GROUP {
    } else if header == raw_header::<T>() {
        for &v in group {
            w.put_wide(v.to_u64(), T::BITS);
        }
    } else if ESCAPE + header <= MAX_PUT {
        encode_rice_short(group, header, w);
    } else {
        encode_rice_long(group, header, w);
    }
}

/// Decodes `out.len()` values from `input`, which must be exactly what `encode` wrote
/// for them (every byte consumed, padding bits zero); otherwise the error.
///
/// Never panics and never reads outside `input`, whatever its contents; a corrupt
/// stream may decode to wrong values without an error only where it still parses as a
/// valid stream of exactly `input.len()` bytes.
pub fn decode<T: Word>(input: &[u8], out: &mut [T]) -> Result<(), StreamError> {
    let mut r = BitReader {
        input,
        ptr: 0,
        buf: 0,
        cnt: 0,
    };
    for (g, group) in out.chunks_mut(GROUP).enumerate() {
        r.refill();
        let header = (r.buf & 63) as u32;
        r.consume(HEADER_BITS);
        if header == ZERO_GROUP {
            group.fill(T::default());
        } else if header > raw_header::<T>() {
            return Err(StreamError::WidthForWord {
                what: "rice: invalid parameter",
                value: header,
                word_bits: T::BITS,
            }
            .in_group(g));
        } else if header == raw_header::<T>() {
            for o in group.iter_mut() {
                *o = T::from_u64(r.read_wide(T::BITS));
            }
        } else if ESCAPE + header <= MAX_PUT {
            decode_rice_short(&mut r, group, header).map_err(|e| e.in_group(g))?;
        } else {
            decode_rice_long(&mut r, group, header).map_err(|e| e.in_group(g))?;
        }
        if r.consumed_bits().div_ceil(8) > input.len() as u64 {
            return Err(StreamError::RiceTruncated {
                group: g,
                len: input.len(),
            });
        }
    }
    let used = r.consumed_bits();
    let used_bytes = used.div_ceil(8);
    if used_bytes < input.len() as u64 {
        return Err(StreamError::TrailingBytes {
            coder: "rice",
            // Fewer than `input.len()`.
            used: used_bytes as usize,
            len: input.len(),
        });
    }
    if !used.is_multiple_of(8) {
        if let Some(&last) = input.last() {
            if last >> (used % 8) != 0 {
                return Err(StreamError::NonzeroPadding("rice: nonzero padding bits"));
            }
        }
    }
    Ok(())
}

/// Estimated encoded size in bits of `values` (cheap; used to choose between predictors).
///
/// This is the exact number of stream bits `encode` writes (headers and codes of every
/// group) before the final padding to whole bytes.
pub fn estimate_bits<T: Word>(values: &[T]) -> u64 {
    let mut full = values.chunks_exact(GROUP);
    let mut bits: u64 = (&mut full).map(|g| u64::from(choose(g).1)).sum();
    if !full.remainder().is_empty() {
        bits += u64::from(choose(full.remainder()).1);
    }
    bits
}

/// Most bytes `encode` writes for `n` values: every group costs at most its raw size.
fn max_encoded_len<T: Word>(n: usize) -> usize {
    let groups = n.div_ceil(GROUP);
    (groups * HEADER_BITS as usize + n * T::BITS as usize).div_ceil(8)
}

/// The header of a raw group: `T::BITS`, or 62 for 64-bit words; Rice parameters are
/// below it.
#[inline(always)]
fn raw_header<T: Word>() -> u32 {
    T::BITS.min(62)
}

/// `(1 << n) - 1` for `n` in `0..=64`.
#[inline(always)]
fn low_mask(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// The header of `group` and the group's exact size in bits (header included).
///
/// (Not inlined: with the group's length a known constant, the compiler unrolls the
/// loops into slower scalar code.)
#[inline(never)]
fn choose<T: Word>(group: &[T]) -> (u32, u32) {
    let n = group.len() as u32;
    let (lengths, zeros, or) = if T::BITS <= 32 {
        // (In 32-bit lanes: a 64-bit OR would halve the vector width.)
        let (l, z, o) = group.iter().fold((0u32, 0u32, 0u32), |(l, z, o), &v| {
            let v = v.to_u64() as u32;
            (l + approx_bit_length32(v), z + u32::from(v == 0), o | v)
        });
        (l, z, u64::from(o))
    } else {
        group.iter().fold((0u32, 0u32, 0u64), |(l, z, o), &v| {
            let v = v.to_u64();
            (l + (v | 2).bit_length(), z + u32::from(v == 0), o | v)
        })
    };
    if or == 0 {
        return (ZERO_GROUP, HEADER_BITS);
    }
    // Zeros were counted as 2 bits. The search starts around the average bit length,
    // rounded down, and, in groups with many zeros, also around the average over the
    // nonzero values (a group of zeros and large values may be best coded either way).
    let lengths = lengths - 2 * zeros;
    let top = raw_header::<T>() - 1;
    let b = if n == GROUP as u32 {
        lengths / GROUP as u32
    } else {
        lengths / n
    }
    .min(top);
    let mut tried = 0u64;
    let mut best = (0, u32::MAX);
    let mut consider = |ks: [u32; 3], costs: [u32; 3], best: &mut (u32, u32)| {
        for (k, bits) in ks.into_iter().zip(costs) {
            tried |= 1 << k;
            if bits < best.1 || (bits == best.1 && k < best.0) {
                *best = (k, bits);
            }
        }
    };
    let ks = [b.saturating_sub(1), b, (b + 1).min(top)];
    consider(ks, rice_costs(group, or, ks), &mut best);
    let b_nonzero = if zeros > 0 {
        (lengths / (n - zeros)).min(top)
    } else {
        b
    };
    if b_nonzero > b + 2 {
        let ks = [b_nonzero - 1, b_nonzero, (b_nonzero + 1).min(top)];
        consider(ks, rice_costs(group, or, ks), &mut best);
    }
    // Walk on while the size keeps falling past the parameters tried.
    while best.0 > 0 && tried & (1 << (best.0 - 1)) == 0 {
        let bits = rice_costs(group, or, [best.0 - 1])[0];
        tried |= 1 << (best.0 - 1);
        if bits >= best.1 {
            break;
        }
        best = (best.0 - 1, bits);
    }
    while best.0 < top && tried & (1 << (best.0 + 1)) == 0 {
        let bits = rice_costs(group, or, [best.0 + 1])[0];
        tried |= 1 << (best.0 + 1);
        if bits >= best.1 {
            break;
        }
        best = (best.0 + 1, bits);
    }
    let raw = HEADER_BITS + n * T::BITS;
    if raw < best.1 {
        best = (raw_header::<T>(), raw);
    }
    best
}

/// `max(v.bit_length(), 2)`, give or take one (cheap, vectorisable).
#[inline(always)]
fn approx_bit_length32(v: u32) -> u32 {
    // The float exponent of max(v >> 1, 1), a positive i32: exact below 2^25, rounded
    // up to the next power of two for some values just below larger ones.
    let x = ((v >> 1) | 1) as i32;
    (x as f32).to_bits() / (1 << 23) - 125
}

/// Exact sizes in bits of `group` (header included) Rice-coded with each parameter of
/// `ks` (each below `raw_header`), in one pass; `or` is the OR of the group's values.
#[inline(always)]
fn rice_costs<T: Word, const N: usize>(group: &[T], or: u64, ks: [u32; N]) -> [u32; N] {
    // A value costs q + 1 + k, or 17 + BITS when escaped. Where nothing can escape
    // (`or >> k < 16`) the sum of the quotients will do, cheaply for all `ks` at once
    // (wrapping: the sums that may overflow are replaced).
    let mut acc = [0u32; N];
    if T::BITS <= 32 {
        for &v in group {
            let v = v.to_u64() as u32;
            for j in 0..N {
                acc[j] = acc[j].wrapping_add(v >> ks[j]);
            }
        }
    } else {
        for &v in group {
            let v = v.to_u64();
            for j in 0..N {
                acc[j] = acc[j].wrapping_add((v >> ks[j]) as u32);
            }
        }
    }
    let n = group.len() as u32;
    for j in 0..N {
        if or >> ks[j] >= u64::from(ESCAPE) {
            acc[j] = escaping_quotients(group, ks[j]);
        }
        acc[j] += HEADER_BITS + n * (1 + ks[j]);
    }
    acc
}

/// The sum over `group` of the quotients `v >> k`, or of `16 + T::BITS - k` for those
/// that escape: the group's Rice-coded size less `n (1 + k)` and the header.
#[inline(always)]
fn escaping_quotients<T: Word>(group: &[T], k: u32) -> u32 {
    let extra = ESCAPE + T::BITS - k;
    if T::BITS <= 32 {
        group
            .iter()
            .map(|&v| {
                let q = v.to_u64() as u32 >> k;
                if q < ESCAPE {
                    q
                } else {
                    extra
                }
            })
            .sum()
    } else {
        group
            .iter()
            .map(|&v| {
                let q = v.to_u64() >> k;
                if q < u64::from(ESCAPE) {
                    q as u32
                } else {
                    extra
                }
            })
            .sum()
    }
}

/// The Rice code of `v` (`q < 16`) or its escape when that fits one put (words of at
/// most 32 bits), with its length.
#[inline(always)]
fn rice_code<T: Word>(v: u64, k: u32, mask: u64) -> (u64, u32) {
    let q = v >> k;
    if q < u64::from(ESCAPE) {
        ((((v & mask) << 1) | 1) << q, q as u32 + 1 + k)
    } else {
        ((v << (ESCAPE + 1)) | (1 << ESCAPE), ESCAPE + 1 + T::BITS)
    }
}

/// Rice codes of one group whose non-escaped codes fit one put (`16 + k <= 56`).
#[inline(always)]
fn encode_rice_short<T: Word>(group: &[T], k: u32, w: &mut BitWriter<'_>) {
    let mask = low_mask(k);
    if 17 + T::BITS <= MAX_PUT {
        // Every code fits one put: two codes per store where they fit together.
        let mut pairs = group.chunks_exact(2);
        for pair in &mut pairs {
            let (c0, l0) = rice_code::<T>(pair[0].to_u64(), k, mask);
            let (c1, l1) = rice_code::<T>(pair[1].to_u64(), k, mask);
            if l0 + l1 <= MAX_PUT {
                w.put(c0 | (c1 << l0), l0 + l1);
                w.flush();
            } else {
                w.put(c0, l0);
                w.flush();
                w.put(c1, l1);
                w.flush();
            }
        }
        for &v in pairs.remainder() {
            let (c, l) = rice_code::<T>(v.to_u64(), k, mask);
            w.put(c, l);
            w.flush();
        }
        return;
    }
    for &v in group {
        let v = v.to_u64();
        let q = v >> k;
        if q < u64::from(ESCAPE) {
            w.put((((v & mask) << 1) | 1) << q, q as u32 + 1 + k);
            w.flush();
        } else {
            w.put(1 << ESCAPE, ESCAPE + 1);
            w.flush();
            w.put_wide(v, T::BITS);
        }
    }
}

/// Rice codes of one group with a large `k` (64-bit words only): in one put the codes
/// that fit, the others as quotient and low bits separately.
#[inline(never)]
fn encode_rice_long<T: Word>(group: &[T], k: u32, w: &mut BitWriter<'_>) {
    let mask = low_mask(k);
    for &v in group {
        let v = v.to_u64();
        let q = v >> k;
        if q < u64::from(ESCAPE) {
            let len = q as u32 + 1 + k;
            if len <= MAX_PUT {
                w.put((((v & mask) << 1) | 1) << q, len);
                w.flush();
            } else {
                w.put(1 << q, q as u32 + 1);
                w.flush();
                w.put_wide(v & mask, k);
            }
        } else {
            w.put(1 << ESCAPE, ESCAPE + 1);
            w.flush();
            w.put_wide(v, T::BITS);
        }
    }
}

/// Decodes one Rice group whose non-escaped codes fit one refill (`16 + k <= 56`).
#[inline(always)]
fn decode_rice_short<T: Word>(
    r: &mut BitReader<'_>,
    group: &mut [T],
    k: u32,
) -> Result<(), StreamError> {
    let mask = low_mask(k);
    if 2 * (ESCAPE + k) <= MAX_PUT {
        // Two codes per refill (an escape refills after itself).
        let mut pairs = group.chunks_exact_mut(2);
        for pair in &mut pairs {
            r.refill();
            pair[0] = T::from_u64(r.read_rice::<T>(k, mask)?);
            pair[1] = T::from_u64(r.read_rice::<T>(k, mask)?);
        }
        for o in pairs.into_remainder() {
            r.refill();
            *o = T::from_u64(r.read_rice::<T>(k, mask)?);
        }
    } else {
        for o in group.iter_mut() {
            r.refill();
            *o = T::from_u64(r.read_rice::<T>(k, mask)?);
        }
    }
    Ok(())
}

/// Decodes one Rice group with a large `k` (64-bit words only): in one step the codes
/// that fit a refill, in two the others.
#[inline(never)]
fn decode_rice_long<T: Word>(
    r: &mut BitReader<'_>,
    group: &mut [T],
    k: u32,
) -> Result<(), StreamError> {
    let mask = low_mask(k);
    for o in group.iter_mut() {
        r.refill();
        let q = r.buf.trailing_zeros();
        if q < ESCAPE && q + 1 + k <= MAX_PUT {
            let v = (u64::from(q) << k) | ((r.buf >> (q + 1)) & mask);
            r.consume(q + 1 + k);
            *o = T::from_u64(v);
        } else if q < ESCAPE {
            r.consume(q + 1);
            let low = r.read_wide(k);
            *o = T::from_u64((u64::from(q) << k) | low);
        } else {
            *o = T::from_u64(r.read_escaped::<T>(q)?);
        }
    }
    Ok(())
}

/// LSB-first bit writer into a fixed buffer, drained into a `Vec` by the caller.
///
/// Bytes before `pos` are final; `acc` holds the `nbits` (at most 7 after a flush)
/// pending bits of byte `pos` onwards, which `flush` stores as a whole `u64`. The
/// caller drains the buffer before `pos` can pass `SCRATCH`.
struct BitWriter<'a> {
    buf: &'a mut [u8; SCRATCH + 8],
    pos: usize,
    acc: u64,
    nbits: u32,
}

impl BitWriter<'_> {
    /// Moves the final bytes to `out`.
    #[inline(never)]
    fn drain(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.buf[..self.pos]);
        self.pos = 0;
    }

    /// Appends the low `n` bits of `bits` (which must be zero above them); at most
    /// [`MAX_PUT`] bits, right after a flush.
    #[inline(always)]
    fn put(&mut self, bits: u64, n: u32) {
        debug_assert!(self.nbits <= 7 && n <= MAX_PUT && bits & !low_mask(n) == 0);
        self.acc |= bits << self.nbits;
        self.nbits += n;
    }

    /// Stores the pending bits and moves the whole bytes among them out of `acc`.
    #[inline(always)]
    fn flush(&mut self) {
        // The mask is a no-op (the caller drains in time) that spares a bounds check.
        let at = self.pos % SCRATCH;
        let dst = &mut self.buf[at..at + 8];
        dst.copy_from_slice(&self.acc.to_le_bytes());
        let bytes = self.nbits >> 3;
        self.pos += bytes as usize;
        self.acc >>= bytes * 8;
        self.nbits &= 7;
    }

    /// Appends the low `n <= 64` bits of `bits` (zero above them), flushing.
    #[inline(always)]
    fn put_wide(&mut self, bits: u64, n: u32) {
        if n <= MAX_PUT {
            self.put(bits, n);
            self.flush();
        } else {
            self.put(bits & 0xffff_ffff, 32);
            self.flush();
            self.put(bits >> 32, n - 32);
            self.flush();
        }
    }
}

/// LSB-first bit reader with a 64-bit buffer.
///
/// `buf` holds the next `cnt` stream bits at its bottom (and, above them, possibly some
/// of the following ones); the stream bits up to byte `ptr` have been taken into
/// `buf`. Past the end of `input` the stream reads as zeros.
struct BitReader<'a> {
    input: &'a [u8],
    ptr: usize,
    buf: u64,
    cnt: u32,
}

impl BitReader<'_> {
    /// Tops the buffer up to at least 56 bits.
    #[inline(always)]
    fn refill(&mut self) {
        self.buf |= crate::bits::io::load_u64(self.input, self.ptr) << self.cnt;
        self.ptr += ((63 - self.cnt) >> 3) as usize;
        self.cnt |= 56;
    }

    /// Drops `n <= cnt` bits.
    #[inline(always)]
    fn consume(&mut self, n: u32) {
        debug_assert!(n <= self.cnt);
        self.buf >>= n;
        self.cnt -= n;
    }

    /// Reads an `n`-bit field, `n <= 64`.
    #[inline(always)]
    fn read_wide(&mut self, n: u32) -> u64 {
        self.refill();
        if n <= MAX_PUT {
            let v = self.buf & low_mask(n);
            self.consume(n);
            v
        } else {
            let lo = self.buf & 0xffff_ffff;
            self.consume(32);
            self.refill();
            let hi = self.buf & low_mask(n - 32);
            self.consume(n - 32);
            lo | (hi << 32)
        }
    }

    /// Reads a Rice code with parameter `k` (`mask` its low mask); the buffer must
    /// hold `16 + k` bits.
    #[inline(always)]
    fn read_rice<T: Word>(&mut self, k: u32, mask: u64) -> Result<u64, StreamError> {
        let q = self.buf.trailing_zeros();
        if q < ESCAPE {
            let v = (u64::from(q) << k) | ((self.buf >> (q + 1)) & mask);
            self.consume(q + 1 + k);
            Ok(v)
        } else {
            self.read_escaped::<T>(q)
        }
    }

    /// Reads an escaped value (a unary run of `q` zeros, an error unless 16: the
    /// prefix), then the raw word, and refills.
    #[cold]
    #[inline(never)]
    fn read_escaped<T: Word>(&mut self, q: u32) -> Result<u64, StreamError> {
        if q != ESCAPE {
            return Err(StreamError::Invalid(
                "rice: unary code longer than the escape",
            ));
        }
        self.consume(ESCAPE + 1);
        let v = self.read_wide(T::BITS);
        self.refill();
        Ok(v)
    }

    /// Stream bits consumed so far.
    #[inline(always)]
    fn consumed_bits(&self) -> u64 {
        self.ptr as u64 * 8 - u64::from(self.cnt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn round_trip<T: Word>(values: &[T]) -> Vec<u8> {
        let mut enc = vec![0xaa, 0xbb];
        encode(values, &mut enc);
        assert_eq!(&enc[..2], &[0xaa, 0xbb], "encode must append");
        let enc = enc.split_off(2);
        assert!(enc.len() <= max_encoded_len::<T>(values.len()));
        assert_eq!(
            estimate_bits(values).div_ceil(8),
            enc.len() as u64,
            "estimate is the exact size"
        );
        let mut back = vec![T::default(); values.len()];
        decode(&enc, &mut back).unwrap();
        if let Some(i) = (0..values.len()).find(|&i| back[i] != values[i]) {
            panic!(
                "value {i} of {}: {:?} decoded as {:?}",
                values.len(),
                values[i],
                back[i]
            );
        }
        enc
    }

    /// Values with `bits` random significant bits at most (uniform width up to it).
    fn random_words<T: Word>(rng: &mut SmallRng, n: usize, bits: u32) -> Vec<T> {
        (0..n)
            .map(|_| {
                let v: u64 = rng.gen();
                let width = rng.gen_range(0..=bits);
                T::from_u64(v & low_mask(width))
            })
            .collect()
    }

    /// Geometric-like values of mean about `2^bits`.
    fn geometric<T: Word>(rng: &mut SmallRng, n: usize, bits: u32) -> Vec<T> {
        let scale = (2f64).powi(bits as i32);
        (0..n)
            .map(|_| {
                let u: f64 = rng.gen_range(f64::EPSILON..1.0);
                let v = (-u.ln() * scale) as u64;
                T::from_u64(v.min(low_mask(T::BITS)))
            })
            .collect()
    }

    fn all_round_trips<T: Word>() {
        let mut rng = SmallRng::seed_from_u64(0x7269_6365 + u64::from(T::BITS));
        round_trip::<T>(&[]);
        for n in 1..=100 {
            round_trip(&vec![T::default(); n]);
            round_trip(&vec![T::ONES; n]);
            for bits in 0..=T::BITS {
                round_trip(&random_words::<T>(&mut rng, n, bits));
            }
        }
        for bits in 0..=T::BITS {
            let mut v = vec![T::default(); 1000];
            v.iter_mut()
                .for_each(|x| *x = T::from_u64(rng.gen::<u64>() & low_mask(bits)));
            round_trip(&v);
            round_trip(&geometric::<T>(&mut rng, 1000, bits));
        }
    }

    fn outliers<T: Word>() {
        let mut rng = SmallRng::seed_from_u64(99);
        for bits in [0, 1, 3, 7, T::BITS / 2, T::BITS - 8] {
            for rate in [1000, 100, 10, 3] {
                let mut v = geometric::<T>(&mut rng, 3000, bits);
                for x in v.iter_mut() {
                    if rng.gen_range(0..rate) == 0 {
                        *x = T::from_u64(rng.gen::<u64>() | (1 << (T::BITS - 1)));
                    }
                }
                round_trip(&v);
            }
        }
        // A lone huge value in a group of small ones is escaped, not coded with a huge k.
        let mut v = vec![T::from_u64(1); 32];
        v[7] = T::ONES;
        let enc = round_trip(&v);
        let escaped = 6 + 31 * 2 + 17 + T::BITS as usize;
        assert_eq!(enc.len(), escaped.div_ceil(8));
    }

    #[test]
    fn exact_sizes_of_small_cases() {
        // 32 zeros: one all-zero header, 6 bits.
        assert_eq!(round_trip(&[0u32; 32]), vec![63]);
        // 33 zeros: two all-zero headers.
        assert_eq!(round_trip(&[0u16; 33]), vec![0xff, 0x0f]);
        // [1]: the search starts at b = 2 (the estimate counts a 1 as 2 bits): k = 1
        // costs 2 bits ("1" then low bit 1), k = 2 and 3 more; k = 0 (q = 1: "01")
        // only ties, so k = 1 stays. Header 1 (100000), then 1, 1.
        assert_eq!(round_trip(&[1u32]), vec![0b1100_0001]);
        // [5u8]: b = 3, k in 2..=4: k = 2 costs 1 + 1 + 2 = 4 (q = 1), k = 3 costs 4 too
        // (q = 0), k = 1 also 4 (q = 2); k = 2 stays: header 2, then q "01", low bits 01.
        assert_eq!(round_trip(&[5u8]), vec![0b1000_0010, 0b0000_0001]);
        // [0, 0, 3] as u64: b = 0, k in 0..=1: k = 0 costs 1 + 1 + 4 = 6,
        // k = 1 costs 2 + 2 + 3 = 7: header 0, "1", "1", "0001".
        assert_eq!(round_trip(&[0u64, 0, 3]), vec![0b1100_0000, 0b0000_1000]);
        // Raw when it is cheapest: 32 values of 255 in u8.
        let enc = round_trip(&[255u8; 32]);
        assert_eq!(enc.len(), (6 + 32 * 8usize).div_ceil(8));
        assert_eq!(enc[0] & 63, 8);
        let enc = round_trip(&[u64::MAX; 3]);
        assert_eq!(enc.len(), (6 + 3 * 64usize).div_ceil(8));
        assert_eq!(enc[0] & 63, 62);
        // A mixture: [0] * 31 + [1 << 20] as u32: b = 0, so k in 0..=1 and the big value
        // escapes: 6 + 31 + 17 + 32 = 86 bits.
        let mut v = [0u32; 32];
        v[31] = 1 << 20;
        assert_eq!(estimate_bits(&v), 86);
        assert_eq!(round_trip(&v).len(), 11);
    }

    #[test]
    fn choice_is_near_optimal() {
        // Compare with an exhaustive search over every header, on geometric data, on
        // geometric data with outliers, sparse data and a mixture of two scales.
        let mut rng = SmallRng::seed_from_u64(5);
        let exhaustive = |g: &[u32]| -> u64 {
            let or = g.iter().fold(0, |o, &x| o | u64::from(x));
            let rice = (0..32).map(|k| rice_costs(g, or, [k])[0]).min().unwrap();
            let raw = HEADER_BITS + 32 * g.len() as u32;
            u64::from(if or == 0 { HEADER_BITS } else { rice.min(raw) })
        };
        for (kind, tolerance_permille) in [(0, 0), (1, 0), (2, 4), (3, 2), (4, 20)] {
            let (mut chosen, mut best) = (0, 0);
            for tenths in 0..250 {
                let scale = 2f64.powf(tenths as f64 / 10.0);
                let v: Vec<u32> = (0..32 * 8)
                    .map(|_| {
                        let e = -rng.gen_range(f64::EPSILON..1.0).ln();
                        let x = (e * scale) as u64;
                        let x = match kind {
                            1 if rng.gen_range(0..30) == 0 => rng.gen::<u32>().into(),
                            2 if rng.gen_range(0..10) != 0 => 0,
                            3 if rng.gen::<bool>() => x >> 6,
                            4 => (e as u64) * scale as u64,
                            _ => x,
                        };
                        x.min(u32::MAX.into()) as u32
                    })
                    .collect();
                chosen += estimate_bits(&v);
                best += v.chunks(GROUP).map(exhaustive).sum::<u64>();
            }
            assert!(
                chosen * 1000 <= best * (1000 + tolerance_permille),
                "kind {kind}: {chosen} vs {best}"
            );
        }
    }

    #[test]
    fn long_streams_cross_buffer_drains() {
        // Enough worst-case groups to drain the encoder's buffer many times.
        let mut rng = SmallRng::seed_from_u64(17);
        let v: Vec<u64> = (0..50_000)
            .map(|i| match i % 3 {
                0 => rng.gen(),
                1 => rng.gen::<u64>() >> rng.gen_range(0..64),
                _ => rng.gen_range(0..4),
            })
            .collect();
        round_trip(&v);
        let v: Vec<u32> = (0..50_000).map(|_| rng.gen()).collect();
        round_trip(&v);
    }

    fn corruptions<T: Word>() {
        let mut rng = SmallRng::seed_from_u64(0xc0ff_ee00 + u64::from(T::BITS));
        for case in 0..40 {
            let n = rng.gen_range(1..200);
            let bits = rng.gen_range(0..=T::BITS);
            let mut v = geometric::<T>(&mut rng, n, bits);
            if case % 3 == 0 {
                v[rng.gen_range(0..n)] = T::ONES;
            }
            let enc = round_trip(&v);
            let mut back = vec![T::default(); n];
            // Every truncation fails.
            for cut in 0..enc.len() {
                assert!(decode(&enc[..cut], &mut back).is_err(), "cut {cut}");
            }
            // A trailing byte fails, whatever its value.
            for extra in [0u8, 1, 0xff] {
                let mut longer = enc.clone();
                longer.push(extra);
                assert!(decode(&longer, &mut back).is_err());
            }
            // Asking for more or fewer values fails.
            // (Not detectable when the extra value falls in a trailing all-zero group.)
            let mut more = vec![T::default(); n + 1];
            let zero_tail = n % GROUP != 0 && v[n - n % GROUP..].iter().all(|&x| x == T::default());
            assert_eq!(decode(&enc, &mut more).is_err(), !zero_tail);
            if n > 1 {
                let mut fewer = vec![T::default(); n - 1];
                let _ = decode(&enc, &mut fewer);
            }
            // Flipped bits and random bytes never panic.
            for _ in 0..200 {
                let mut bad = enc.clone();
                for _ in 0..rng.gen_range(1..4) {
                    let i = rng.gen_range(0..bad.len());
                    bad[i] ^= 1 << rng.gen_range(0..8);
                }
                let _ = decode(&bad, &mut back);
                let i = rng.gen_range(0..bad.len());
                bad[i] = rng.gen();
                let _ = decode(&bad, &mut back);
            }
        }
        // Arbitrary bytes never panic.
        for len in 0..300 {
            let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let mut back = vec![T::default(); rng.gen_range(0..400)];
            let _ = decode(&junk, &mut back);
        }
    }

    #[test]
    fn structural_errors_are_reported() {
        let mut out = [0u32; 3];
        // Header 33 is invalid for 32-bit words.
        assert!(decode(&[33], &mut out).is_err());
        // Empty output needs an empty stream.
        assert!(decode::<u32>(&[], &mut []).is_ok());
        assert!(decode::<u32>(&[0], &mut []).is_err());
        // A unary run of 17+ zeros is invalid: header 0, then zeros.
        assert!(decode(&[0, 0, 0, 0], &mut out).is_err());
        // Nonzero padding: a zero group (6 bits) then a stray bit.
        assert!(decode(&[63 | 64], &mut [0u32; 1]).is_err());
        assert!(decode(&[63], &mut [0u32; 1]).is_ok());
    }

    /// One test per word type for each generic test function.
    macro_rules! per_word_type {
        ($($name:ident => $generic:ident),* $(,)?) => {$(
            mod $name {
                #[test]
                fn u8() {
                    super::$generic::<u8>();
                }
                #[test]
                fn u16() {
                    super::$generic::<u16>();
                }
                #[test]
                fn u32() {
                    super::$generic::<u32>();
                }
                #[test]
                fn u64() {
                    super::$generic::<u64>();
                }
            }
        )*};
    }

    per_word_type! {
        round_trips => all_round_trips,
        outliers_take_the_escape => outliers,
        corrupt_streams_fail_or_decode_without_panic => corruptions,
    }
}
