//! Patched bit packing: fixed-width low bits per group of 32 residuals, the few that do
//! not fit patched in afterwards (PFOR with a bitmap or a list of exceptions).
//!
//! Residual words are expected to be sign-folded (zigzag or XOR), so most are small.
//! Each group of [`GROUP`] = 32 values stores the low `b` bits of every value at a fixed
//! width, which packs and unpacks without a branch per value; the values of more than
//! `b` bits (the exceptions) also store their high bits, found by a bitmap or a short
//! list of positions. The encoder picks `b` per group to minimise the group's size, so
//! one outlier costs its own high bits instead of widening the whole group (what the
//! bit-plane coder pays) and a heavy tail costs no unary runs (what Rice pays).
//!
//! # Format
//!
//! The coding is specified in docs/format.md, "Coder 7: patched packing": per group of
//! [`GROUP`] = 32 values a header byte with the width `b` (and an exception flag), the
//! low bits at that width, then the exceptions' positions (a list or a bitmap) and high
//! parts. This module writes and reads exactly that; what follows is how it does so.
//!
//! Low bits and high parts are both fixed-width fields, unpacked by the same loop (one
//! copy per width). The encoder writes a list when it takes fewer bytes than the
//! bitmap, and picks `b` (and `e`, the bit length of the group's largest value minus
//! `b`) as the width that makes the group smallest, ties to the wider `b`. A group never
//! costs more than `1 + 4 * T::BITS` bytes (`b` the widest bit length, no exceptions):
//! `n` values take at most `ceil(n / 32) + ceil(n * T::BITS / 8)` bytes and at least
//! `ceil(n / 32)`.
//!
//! The decoder accepts any valid choice of `b` and position form, but rejects an
//! invalid header, an `e` other than the bit length of the largest high part, a zero
//! high part, positions out of order or out of range, a stream that ends early,
//! trailing bytes and nonzero padding bits.

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
mod group;
#[cfg(not(target_arch = "x86_64"))]
mod no_simd;

#[cfg(target_arch = "x86_64")]
use avx2::Avx2;
#[cfg(target_arch = "x86_64")]
use avx512::Avx512;
use group::{unpack_reads, GroupLayout, PACK_MAX_WIDTH, PACK_MIN_WIDTH};
#[cfg(not(target_arch = "x86_64"))]
use no_simd::{Avx2, Avx512};

use crate::bits::io::load_u64;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Values per group (one width each).
pub use group::GROUP;
/// Bit of `H` marking a group with exceptions.
const HAS_EXCEPTIONS: u8 = 0x80;
/// Bit of `E` marking exception positions as a list.
const LIST: u8 = 0x80;
/// Bits of a list's exception count.
const COUNT_BITS: u32 = 3;
/// Bits of one listed position.
const POSITION_BITS: u32 = 5;
/// Slack bytes the fixed-width unpacking may read past a group's low bits.
const SLACK: usize = 16;
/// Bytes of a group's low bits at the widest width.
const MAX_LOW_BYTES: usize = GROUP * 64 / 8;

/// `$body` with `$k` bound to `$width` (1 to 64) as a literal: one copy of the body per
/// width, so the shifts and offsets in it are constants. Widths above 32 get copies
/// only for words wider than 32 bits.
macro_rules! by_width {
    ($bits:expr, $width:expr, $k:ident => $body:expr) => {
        if $bits <= 32 {
            by_width!(@arms $width, $k => $body;
                1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
                30 31 32)
        } else {
            by_width!(@arms $width, $k => $body;
                1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29
                30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55
                56 57 58 59 60 61 62 63 64)
        }
    };
    (@arms $width:expr, $k:ident => $body:expr; $($n:literal)*) => {
        match $width {
            $($n => {
                let $k: u32 = $n;
                $body
            })*
            other => {
                let $k: u32 = other;
                $body
            }
        }
    };
}

/// One group's layout as the encoder chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Choice {
    /// Width of the packed low bits.
    b: u32,
    /// Width of the exceptions' high parts (0: no exceptions).
    e: u32,
    /// Number of exceptions.
    exceptions: usize,
    /// Size of the group's coding in bits (whole bytes).
    bits: u32,
}

/// Bytes of the positions of `k` exceptions among `m` values, in the encoder's form.
#[inline(always)]
fn position_bytes(k: u32, m: u32) -> u32 {
    list_bytes(k).min(m.div_ceil(8))
}

/// Bytes of a list of `k` positions (count included).
#[inline(always)]
fn list_bytes(k: u32) -> u32 {
    (COUNT_BITS + POSITION_BITS * k).div_ceil(8)
}

/// The encoder's choice of position form: a list when it takes fewer bytes.
#[inline(always)]
fn is_list(k: usize, m: usize) -> bool {
    list_bytes(k as u32) < (m as u32).div_ceil(8)
}

/// Size in bits of a group of `m` values coded at width `b` with `k` exceptions whose
/// high parts take `e` bits each.
#[inline(always)]
fn group_bits(m: usize, b: u32, k: usize, e: u32) -> u32 {
    let (m, k) = (m as u32, k as u32);
    let low = (m * b).div_ceil(8) * 8;
    if k == 0 {
        8 + low
    } else {
        16 + low + 8 * position_bytes(k, m) + (k * e).div_ceil(8) * 8
    }
}

/// The smallest layout of `group` (1 to 32 values); `simd`: survey whole groups of
/// 32-bit words with these kernels.
#[inline(always)]
fn choose<T: Word, K: Kernels>(group: &[T], simd: Option<K>) -> Choice {
    let m = group.len();
    match simd_words(group, simd) {
        Some((kernels, words)) => {
            let layout = kernels.choose(words);
            let exceptions = layout.exceptions as usize;
            Choice {
                b: layout.width,
                e: if exceptions == 0 {
                    0
                } else {
                    layout.widest - layout.width
                },
                exceptions,
                bits: layout.bits,
            }
        }
        None => {
            let mut above = [0u32; 64];
            let (narrowest, widest) = match wide_words(group, simd) {
                Some((kernels, words)) => kernels.survey_wide(words, &mut above),
                None => survey(group, &mut above),
            };
            smallest::<T>(&above, narrowest, widest, m)
        }
    }
}

/// The smallest layout of a group of `m` values whose narrowest has `narrowest` bits
/// and widest `widest`, where `above[b]` values are longer than `b` bits for each
/// `narrowest <= b < widest`.
#[inline(always)]
fn smallest<T: Word>(above: &[u32; 64], narrowest: u32, widest: u32, m: usize) -> Choice {
    let best = Choice {
        b: widest,
        e: 0,
        exceptions: 0,
        bits: group_bits(m, widest, 0, 0),
    };
    if widest == 0 {
        return best;
    }
    // Every narrower width, as keys ordering by size then by wider width (computed
    // without branches, so they vectorise); a width leaving every value an exception
    // is never the smallest. For words of up to 32 bits every width is computed and
    // those from the widest on masked off (a loop of constant length: faster, measured
    // on the AVX2 path); for wider words only the widths from the narrowest value's on
    // (below, every value is an exception), measured faster.
    let m32 = m as u32;
    let key_of = |b: u32, k: u32| {
        let positions = list_bytes(k).min(m32.div_ceil(8));
        let high = (k * widest.wrapping_sub(b)).div_ceil(8);
        let bits = 16 + (m32 * b).div_ceil(8) * 8 + 8 * positions + high * 8;
        bits << 7 | (127 - b)
    };
    let mut keys = [u32::MAX; 64];
    let lanes = if T::BITS <= 32 {
        for (b, (key, &k)) in keys
            .iter_mut()
            .zip(above)
            .enumerate()
            .take(T::BITS as usize)
        {
            let b = b as u32;
            *key = if (narrowest..widest).contains(&b) {
                key_of(b, k)
            } else {
                u32::MAX
            };
        }
        T::BITS as usize
    } else {
        let (from, to) = (narrowest as usize, widest as usize);
        for (b, (key, &k)) in (from..to).zip(keys.iter_mut().zip(&above[from..to])) {
            *key = key_of(b as u32, k);
        }
        to - from
    };
    let key = keys[..lanes]
        .iter()
        .fold(best.bits << 7 | (127 - widest), |a, &k| a.min(k));
    let b = 127 - (key & 127);
    if b == widest {
        return best;
    }
    Choice {
        b,
        e: widest - b,
        exceptions: above[b as usize] as usize,
        bits: key >> 7,
    }
}

/// The bit lengths of the narrowest and the widest of `group`, and for each width `b`
/// between them (`narrowest <= b < widest`), how many values are longer than `b` bits,
/// in `above[b]` (the rest of `above` left as it is).
#[inline(always)]
fn survey<T: Word>(group: &[T], above: &mut [u32; 64]) -> (u32, u32) {
    let (least, any) = group
        .iter()
        .fold((u64::MAX, T::default()), |(least, any), &v| {
            (least.min(v.to_u64()), any | v)
        });
    let (narrowest, widest) = (least.bit_length(), any.bit_length());
    if widest == 0 {
        return (0, 0);
    }
    // Histogram of bit lengths (two, to shorten store-to-load chains).
    let mut counts = [[0u8; 65]; 2];
    for pair in group.chunks(2) {
        for (h, &v) in counts.iter_mut().zip(pair) {
            h[v.bit_length() as usize] += 1;
        }
    }
    let mut longer = 0;
    for b in (narrowest as usize..widest as usize).rev() {
        longer += u32::from(counts[0][b + 1] + counts[1][b + 1]);
        above[b] = longer;
    }
    (narrowest, widest)
}

/// `group` as words of type `W` for the kernels, when they run (`simd`), it is a whole
/// group and `T` is `W`.
#[inline(always)]
fn group_of<W: 'static, T: Word, K: Kernels>(
    group: &[T],
    simd: Option<K>,
) -> Option<(K, &[W; GROUP])> {
    let kernels = simd?;
    let full: &[T; GROUP] = group.try_into().ok()?;
    let words = (full as &dyn std::any::Any).downcast_ref::<[W; GROUP]>()?;
    Some((kernels, words))
}

/// `group` as 32-bit words for the kernels (see [`group_of`]).
#[inline(always)]
fn simd_words<T: Word, K: Kernels>(group: &[T], simd: Option<K>) -> Option<(K, &[u32; GROUP])> {
    group_of(group, simd)
}

/// `group` as 64-bit words for the kernels' survey (see [`group_of`]).
#[inline(always)]
fn wide_words<T: Word, K: Kernels>(group: &[T], simd: Option<K>) -> Option<(K, &[u64; GROUP])> {
    group_of(group, simd)
}

/// The kernels the coder runs for words of type `T` where there are none for 32-bit
/// words: AVX-512's for whole groups of 64-bit words (the encoder's survey and gathering,
/// see [`Kernels::survey_wide`], and the decoder's unpacking), on a CPU that has them.
fn wide_kernels_for<T: Word>() -> Option<Avx512> {
    if T::BITS == 64 {
        Avx512::detect()
    } else {
        None
    }
}

/// The AVX2 kernels, when the encoder and decoder run them for words of type `T`.
fn kernels_for<T: Word>() -> Option<Avx2> {
    if T::BITS == 32 {
        Avx2::detect()
    } else {
        None
    }
}

/// The widest kernels for words of type `T` on this CPU.
enum Isa {
    /// AVX-512's for whole groups, AVX2's for groups at the end of a stream.
    Avx512(Avx2, Avx512),
    /// AVX2's.
    Avx2(Avx2),
    /// None: the portable loops.
    Portable,
}

impl Isa {
    /// The widest kernels for words of type `T` on this CPU.
    fn detect<T: Word>() -> Isa {
        match (kernels_for::<T>(), Avx512::detect()) {
            (Some(avx2), Some(avx512)) => Isa::Avx512(avx2, avx512),
            (Some(avx2), None) => Isa::Avx2(avx2),
            _ => Isa::Portable,
        }
    }
}

/// Appends the patched packing of `values` to `out`.
///
/// The layout is described in the [module documentation](self); it takes at most
/// `ceil(n / 32) + ceil(n * T::BITS / 8)` bytes for `n` values.
pub fn encode<T: Word>(values: &[T], out: &mut Vec<u8>) {
    // Resolved at compile time: the kernels for whole groups exist for 32-bit words
    // only, so no other word type compiles their paths.
    if const { T::BITS == 32 } {
        match Isa::detect::<T>() {
            // The whole loop compiled for AVX-512 (or AVX2), so the kernels inline into it.
            Isa::Avx512(_, avx512) => avx512.run(
                #[inline(always)]
                || encode_with(values, out, Some(avx512)),
            ),
            Isa::Avx2(avx2) => avx2.run(
                #[inline(always)]
                || encode_with(values, out, Some(avx2)),
            ),
            // No AVX2, so no wider loops either (`crate::isa` detects AVX2 loops only
            // where the AVX2 kernels run).
            Isa::Portable => {
                debug_assert_eq!(crate::isa::level(), crate::isa::Level::Portable);
                encode_with(values, out, None::<Avx2>)
            }
        }
    } else {
        // The portable loops, compiled for the CPU's widest vectors and its bit-counting
        // instructions; for 64-bit words, with AVX-512's kernels for them where the CPU
        // has those.
        crate::isa::vectorised(
            #[inline(always)]
            || encode_with(values, out, wide_kernels_for::<T>()),
        )
    }
}

/// [`encode`], with kernels for whole groups of 32-bit words (`simd`) or without.
#[inline(always)]
fn encode_with<T: Word, K: Kernels>(values: &[T], out: &mut Vec<u8>, simd: Option<K>) {
    // Groups are coded straight into the output, grown (zeroed) to room for a batch's
    // largest coding plus the slack of a group's scratch, and cut back to the bytes
    // written at the end: no copy. A batch at a time, the zeroed bytes are still in the
    // cache when the groups are written over them (zeroing a whole tile's bound at once
    // streams it to memory and reads it back). The room left after a batch is kept for
    // the next, not zeroed again: a group writes every byte of its coding, whatever the
    // bytes held before.
    let mut at = out.len();
    out.reserve(max_len::<T>(values.len()) + SCRATCH);
    for batch in values.chunks(BATCH_GROUPS * GROUP) {
        let room = at + max_len::<T>(batch.len()) + SCRATCH;
        if out.len() < room {
            out.resize(room, 0);
        }
        let mut full = batch.chunks_exact(GROUP);
        for group in &mut full {
            at += encode_group(group, scratch_at(out, at), simd);
        }
        if !full.remainder().is_empty() {
            at += encode_group(full.remainder(), scratch_at(out, at), None::<K>);
        }
    }
    out.truncate(at);
}

/// Groups [`encode_with`] zeroes room for at a time: a batch's bound (16 KiB of 32-bit
/// words) fits the first-level cache.
const BATCH_GROUPS: usize = 128;

/// The longest coding of `n` values.
fn max_len<T: Word>(n: usize) -> usize {
    n.div_ceil(GROUP) + (n * T::BITS as usize).div_ceil(8)
}

/// The scratch of a group coded at byte `at` of `out`.
#[inline(always)]
fn scratch_at(out: &mut [u8], at: usize) -> &mut [u8; SCRATCH] {
    (&mut out[at..at + SCRATCH])
        .try_into()
        .expect("the output has a scratch's slack")
}

/// Bytes of the encoder's scratch: the largest group coding (headers, low bits at the
/// widest width, a bitmap and 32 high parts of 64 bits) and the slack of whole-word
/// stores.
const SCRATCH: usize = 2 + MAX_LOW_BYTES + 4 + GROUP * 8 + 16;

/// Bytes [`encode`] needs beyond the end of its longest coding while it writes (its
/// output grows by them, then is cut back): callers that reserve room for a coding
/// reserve them too, so the output is not moved.
pub const ENCODE_SLACK: usize = SCRATCH;

/// Codes one group of 1 to 32 values into the start of `buf`; its length.
#[inline(always)]
fn encode_group<T: Word, K: Kernels>(
    group: &[T],
    buf: &mut [u8; SCRATCH],
    simd: Option<K>,
) -> usize {
    let choice = choose(group, simd);
    let b = choice.b;
    if choice.exceptions == 0 {
        buf[0] = b as u8;
        return 1 + pack_lows(group, b, &mut buf[1..], simd);
    }
    let m = group.len();
    let list = is_list(choice.exceptions, m);
    buf[0] = b as u8 | HAS_EXCEPTIONS;
    buf[1] = choice.e as u8 | if list { LIST } else { 0 };
    let at = 2 + pack_lows(group, b, &mut buf[2..], simd);
    // The exceptions' positions, and their high parts gathered in position order.
    let mut highs = [T::default(); GROUP];
    let bitmap = match simd_words(group, simd) {
        Some((kernels, words)) => {
            // `simd_words` found `T` to be `u32`.
            let high = (&mut highs as &mut dyn std::any::Any)
                .downcast_mut::<[u32; GROUP]>()
                .expect("32-bit words");
            u64::from(kernels.gather_longer(words, b, high))
        }
        None => match wide_words(group, simd) {
            Some((kernels, words)) => {
                // `wide_words` found `T` to be `u64`.
                let high = (&mut highs as &mut dyn std::any::Any)
                    .downcast_mut::<[u64; GROUP]>()
                    .expect("64-bit words");
                u64::from(kernels.gather_longer_wide(words, b, high))
            }
            None => gather_longer(group, b, &mut highs),
        },
    };
    let mut at = at;
    if list {
        let mut field = choice.exceptions as u64;
        let mut shift = COUNT_BITS;
        let mut rest = bitmap;
        while rest != 0 {
            field |= u64::from(rest.trailing_zeros()) << shift;
            shift += POSITION_BITS;
            rest &= rest - 1;
        }
        buf[at..at + 8].copy_from_slice(&field.to_le_bytes());
        at += list_bytes(choice.exceptions as u32) as usize;
    } else {
        buf[at..at + 8].copy_from_slice(&bitmap.to_le_bytes());
        at += m.div_ceil(8);
    }
    let high_bytes = (choice.exceptions * choice.e as usize).div_ceil(8);
    match simd_words(&highs, simd) {
        // The kernels pack all 32: the zeros after the exceptions' pad the last byte.
        Some((kernels, words)) if kernels.packs_fast(choice.e) => {
            kernels.pack_fast(words, choice.e, &mut buf[at..]);
            at + high_bytes
        }
        _ => at + pack_highs(&highs, choice.exceptions, choice.e, &mut buf[at..]),
    }
}

/// Writes the low `b` bits of each value of `group` to the start of `buf` (at least
/// [`SCRATCH`]` - 2` bytes; up to 128 of them may be overwritten); the bytes they take.
#[inline(always)]
fn pack_lows<T: Word, K: Kernels>(group: &[T], b: u32, buf: &mut [u8], simd: Option<K>) -> usize {
    match simd_words(group, simd) {
        Some((kernels, words)) if b > 0 => kernels.pack_lows(words, b, buf),
        _ => pack_dispatch(group, b, buf),
    }
}

/// Writes the low `b` (1 to 32) bits of each of a whole group of 32-bit words to the start
/// of `buf`, by blocks of 8 (the portable packing under the kernels); the bytes they take.
#[inline(always)]
fn pack_whole_group(values: &[u32; GROUP], b: u32, buf: &mut [u8]) -> usize {
    by_width!(32, b, k => pack_blocks::<u32>(values, GROUP / 8, k, buf))
}

/// Writes the first `k` of `highs` (zeros after them) at width `e` to the start of
/// `buf`; the bytes they take (up to 16 bytes after them may be overwritten).
#[inline(always)]
fn pack_highs<T: Word>(highs: &[T; GROUP], k: usize, e: u32, buf: &mut [u8]) -> usize {
    // Whole blocks of 8: the zeros after the `k`th pad the last byte.
    let blocks = k.div_ceil(8);
    if T::BITS > 32 {
        by_width!(T::BITS, e, w => pack_wide_blocks::<T>(highs, blocks, w, buf));
    } else {
        by_width!(T::BITS, e, w => pack_blocks::<T>(highs, blocks, w, buf));
    }
    (k * e as usize).div_ceil(8)
}

/// The bitmap of the values of `group` longer than `b` bits, and their high parts
/// `value >> b` in position order at the start of `highs`.
#[inline(always)]
fn gather_longer<T: Word>(group: &[T], b: u32, highs: &mut [T; GROUP]) -> u64 {
    let mut bitmap = 0u64;
    for (i, &v) in group.iter().enumerate() {
        bitmap |= u64::from(v.to_u64() >> b != 0) << i;
    }
    let mut rest = bitmap;
    for high in highs.iter_mut().take(bitmap.count_ones() as usize) {
        *high = T::from_u64(group[rest.trailing_zeros() as usize].to_u64() >> b);
        rest &= rest - 1;
    }
    bitmap
}

/// Writes the low `b` bits of each value of `group` to the start of `buf`; the bytes
/// they take, `ceil(len * b / 8)` (up to 8 bytes after them may be overwritten).
#[inline(always)]
fn pack_dispatch<T: Word>(group: &[T], b: u32, buf: &mut [u8]) -> usize {
    if b == 0 {
        return 0;
    }
    match <&[T; GROUP]>::try_from(group) {
        Ok(full) if T::BITS <= 32 => {
            by_width!(T::BITS, b, k => pack_blocks::<T>(full, GROUP / 8, k, buf))
        }
        Ok(full) => by_width!(T::BITS, b, k => pack_wide_blocks::<T>(full, GROUP / 8, k, buf)),
        _ => by_width!(T::BITS, b, k => pack::<T>(group, k, buf)),
    }
}

/// [`pack`] for the first `blocks` blocks of 8 values of a group of words wider than 32
/// bits (`b` bytes each), coded with a 128-bit accumulator whose stores fall at the same
/// values in every block: with `b` constant the loop unrolls with no branch per value.
/// Up to 8 bytes after the fields may be overwritten.
#[inline(always)]
fn pack_wide_blocks<T: Word>(group: &[T; GROUP], blocks: usize, b: u32, buf: &mut [u8]) -> usize {
    let mask = low_mask(b);
    for (j, block) in group.chunks_exact(8).enumerate().take(blocks) {
        let mut at = j * b as usize;
        let (mut acc, mut filled) = (0u128, 0u32);
        for &v in block {
            acc |= u128::from(v.to_u64() & mask) << filled;
            filled += b;
            if filled >= 64 {
                buf[at..at + 8].copy_from_slice(&(acc as u64).to_le_bytes());
                at += 8;
                acc >>= 64;
                filled -= 64;
            }
        }
        // The block ends on a byte boundary: the rest of its last bytes.
        buf[at..at + 8].copy_from_slice(&(acc as u64).to_le_bytes());
    }
    blocks * b as usize
}

/// [`pack`] for the first `blocks` blocks of 8 values of a group of words of up to 32
/// bits (`b` bytes each), each built in two 128-bit halves of 4 values with constant
/// shifts: no branch and no variable shift per value. Up to 16 bytes after the fields
/// may be overwritten (with zeros).
#[inline(always)]
fn pack_blocks<T: Word>(group: &[T; GROUP], blocks: usize, b: u32, buf: &mut [u8]) -> usize {
    let mask = low_mask(b);
    // The second half starts at bit 4b: byte `split`, bit `skew` (0 or 4) in it.
    let (split, skew) = ((4 * b / 8) as usize, 4 * b % 8);
    for (j, block) in group.chunks_exact(8).enumerate().take(blocks) {
        let at = j * b as usize;
        let (mut low, mut high) = (0u128, 0u128);
        for i in 0..4 {
            low |= u128::from(block[i].to_u64() & mask) << (i as u32 * b);
            high |= u128::from(block[4 + i].to_u64() & mask) << (skew + i as u32 * b);
        }
        // The byte the halves share takes the first half's bits below the skew.
        high |= low.checked_shr(8 * split as u32).unwrap_or(0);
        buf[at..at + 16].copy_from_slice(&low.to_le_bytes());
        buf[at + split..at + split + 16].copy_from_slice(&high.to_le_bytes());
    }
    blocks * b as usize
}

#[inline(always)]
fn pack<T: Word>(group: &[T], b: u32, buf: &mut [u8]) -> usize {
    let mask = low_mask(b);
    let mut at = 0;
    if T::BITS <= 32 {
        // Fields of at most 32 bits: a 64-bit accumulator stored 4 bytes at a time.
        let mut acc: u64 = 0;
        let mut nbits = 0;
        for &v in group {
            acc |= (v.to_u64() & mask) << nbits;
            nbits += b;
            if nbits >= 32 {
                buf[at..at + 8].copy_from_slice(&acc.to_le_bytes());
                at += 4;
                acc >>= 32;
                nbits -= 32;
            }
        }
        buf[at..at + 8].copy_from_slice(&acc.to_le_bytes());
    } else {
        let mut acc: u128 = 0;
        let mut nbits = 0;
        for &v in group {
            acc |= u128::from(v.to_u64() & mask) << nbits;
            nbits += b;
            if nbits >= 64 {
                buf[at..at + 8].copy_from_slice(&(acc as u64).to_le_bytes());
                at += 8;
                acc >>= 64;
                nbits -= 64;
            }
        }
        buf[at..at + 8].copy_from_slice(&(acc as u64).to_le_bytes());
    }
    (group.len() * b as usize).div_ceil(8)
}

/// `(1 << n) - 1` for `n` in `0..=64`.
#[inline(always)]
fn low_mask(n: u32) -> u64 {
    u64::MAX.checked_shr(64 - n).unwrap_or(0)
}

/// The error for a stream that ends inside a group.
const TRUNCATED: StreamError = StreamError::Truncated("patched: stream truncated");

/// The error for nonzero bits after the last field of a group's part.
const NONZERO_PADDING: StreamError = StreamError::NonzeroPadding("patched: nonzero padding bits");

/// Decodes `out.len()` values from `input`, which must be exactly what `encode` wrote
/// for them (every byte consumed, padding bits zero); otherwise the error.
///
/// Never panics and never reads outside `input`, whatever its contents.
pub fn decode<T: Word>(input: &[u8], out: &mut [T]) -> Result<(), StreamError> {
    // Resolved at compile time, as in `encode`.
    if const { T::BITS == 32 } {
        match Isa::detect::<T>() {
            // The whole loop compiled for AVX-512 (or AVX2), so the kernels inline into it.
            Isa::Avx512(avx2, avx512) => avx512.run(
                #[inline(always)]
                || decode_with(input, out, Some(avx2), Some(avx512), None),
            ),
            Isa::Avx2(avx2) => avx2.run(
                #[inline(always)]
                || decode_with(input, out, Some(avx2), Some(avx2), None),
            ),
            // No AVX2, so no wider loops either (see `encode`).
            Isa::Portable => {
                debug_assert_eq!(crate::isa::level(), crate::isa::Level::Portable);
                decode_with(input, out, None, None::<Avx2>, None)
            }
        }
    } else {
        // For 64-bit words, with AVX-512's unpacking of whole groups' low bits where the
        // CPU has it.
        crate::isa::vectorised(
            #[inline(always)]
            || decode_with(input, out, None, None::<Avx2>, wide_kernels_for::<T>()),
        )
    }
}

/// Kernels for whole groups of 32-bit words: AVX2's or AVX-512's.
trait Kernels: Copy {
    /// The smallest layout of the group (see `Avx2::choose`).
    fn choose(self, values: &[u32; GROUP]) -> GroupLayout;

    /// The bitmap of `values` longer than `b < 32` bits, and their high parts in
    /// position order at the start of `high` (see `Avx2::gather_longer`).
    fn gather_longer(self, values: &[u32; GROUP], b: u32, high: &mut [u32; GROUP]) -> u32;

    /// Writes the low `b` (1 to 32) bits of each of `values` to the start of `buf`
    /// (which holds [`SCRATCH`]` - 2` bytes), by [`Kernels::pack_fast`] where it takes
    /// `b`, else by the portable packing; the bytes they take, `4 b`. Up to 128 bytes
    /// from the start may be overwritten.
    #[inline(always)]
    fn pack_lows(self, values: &[u32; GROUP], b: u32, buf: &mut [u8]) -> usize {
        if self.packs_fast(b) {
            self.pack_fast(values, b, buf)
        } else {
            pack_whole_group(values, b, buf)
        }
    }

    /// Whether [`Kernels::pack_fast`] packs `b`-bit fields, faster than the portable
    /// loop packs a few of them.
    fn packs_fast(self, _b: u32) -> bool {
        false
    }

    /// [`Kernels::pack_lows`] by the kernels, for a width [`Kernels::packs_fast`] takes
    /// (the portable packing where there is no such kernel).
    #[inline(always)]
    fn pack_fast(self, values: &[u32; GROUP], b: u32, buf: &mut [u8]) -> usize {
        pack_whole_group(values, b, buf)
    }

    /// Unpacks 32 fields of `width` (1 to 32) bits from `src`, which holds at least
    /// `unpack_reads(width)` bytes.
    fn unpack(self, src: &[u8], width: u32, out: &mut [u32; GROUP]);

    /// [`survey`] of a whole group of 64-bit words (writing at least the counts of the
    /// widths between the narrowest and the widest value).
    fn survey_wide(self, values: &[u64; GROUP], above: &mut [u32; 64]) -> (u32, u32) {
        survey(values, above)
    }

    /// [`gather_longer`] of a whole group of 64-bit words (`b < 64`), into `high` of
    /// zeros; the bitmap.
    fn gather_longer_wide(self, values: &[u64; GROUP], b: u32, high: &mut [u64; GROUP]) -> u32 {
        gather_longer(values, b, high) as u32
    }

    /// ORs `high[j] << b` into `out[i]` for the `j`-th set bit `i` of `bitmap`, for the
    /// first `k = bitmap.count_ones()` values of `high`; whether those are all nonzero
    /// and the widest is exactly `e` bits long.
    fn expand_checked(
        self,
        high: &[u32; GROUP],
        bitmap: u32,
        b: u32,
        e: u32,
        out: &mut [u32; GROUP],
    ) -> bool;
}

impl Kernels for Avx2 {
    #[inline(always)]
    fn choose(self, values: &[u32; GROUP]) -> GroupLayout {
        Avx2::choose(self, values)
    }

    #[inline(always)]
    fn packs_fast(self, b: u32) -> bool {
        self.packs(b)
    }

    #[inline(always)]
    fn pack_fast(self, values: &[u32; GROUP], b: u32, buf: &mut [u8]) -> usize {
        self.pack(values, b, buf)
    }

    #[inline(always)]
    fn gather_longer(self, values: &[u32; GROUP], b: u32, high: &mut [u32; GROUP]) -> u32 {
        Avx2::gather_longer(self, values, b, high)
    }

    #[inline(always)]
    fn unpack(self, src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        Avx2::unpack(self, src, width, out);
    }

    #[inline(always)]
    fn expand_checked(
        self,
        high: &[u32; GROUP],
        bitmap: u32,
        b: u32,
        e: u32,
        out: &mut [u32; GROUP],
    ) -> bool {
        let (all, empty) = self.expand_or(high, bitmap, b, out);
        !empty && all.bit_length() == e
    }
}

impl Kernels for Avx512 {
    #[inline(always)]
    fn choose(self, values: &[u32; GROUP]) -> GroupLayout {
        Avx512::choose(self, values)
    }

    #[inline(always)]
    fn gather_longer(self, values: &[u32; GROUP], b: u32, high: &mut [u32; GROUP]) -> u32 {
        Avx512::gather_longer(self, values, b, high)
    }

    #[inline(always)]
    fn packs_fast(self, b: u32) -> bool {
        (PACK_MIN_WIDTH..=PACK_MAX_WIDTH).contains(&b)
    }

    #[inline(always)]
    fn pack_fast(self, values: &[u32; GROUP], b: u32, buf: &mut [u8]) -> usize {
        self.pack(values, b, buf)
    }

    #[inline(always)]
    fn unpack(self, src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        Avx512::unpack(self, src, width, out);
    }

    #[inline(always)]
    fn survey_wide(self, values: &[u64; GROUP], above: &mut [u32; 64]) -> (u32, u32) {
        Avx512::survey_wide(self, values, above)
    }

    #[inline(always)]
    fn gather_longer_wide(self, values: &[u64; GROUP], b: u32, high: &mut [u64; GROUP]) -> u32 {
        Avx512::gather_longer_wide(self, values, b, high)
    }

    #[inline(always)]
    fn expand_checked(
        self,
        high: &[u32; GROUP],
        bitmap: u32,
        b: u32,
        e: u32,
        out: &mut [u32; GROUP],
    ) -> bool {
        Avx512::expand_checked(self, high, bitmap, b, e, out)
    }
}

/// [`decode`], with the AVX2 kernels for 32-bit words (`simd`) or without, the
/// kernels that decode whole groups (`whole`, AVX2's or AVX-512's) or none, and
/// AVX-512's unpacking of the low bits of whole groups of 64-bit words (`wide`) or not.
#[inline(always)]
fn decode_with<T: Word, K: Kernels>(
    input: &[u8],
    out: &mut [T],
    simd: Option<Avx2>,
    whole: Option<K>,
    wide: Option<Avx512>,
) -> Result<(), StreamError> {
    let mut pos = 0;
    let mut padded = [0u8; MAX_LOW_BYTES + SLACK];
    for (g, group) in out.chunks_mut(GROUP).enumerate() {
        let words = whole.and_then(|kernels| Some((kernels, simd_words_mut(group, simd)?.1)));
        if let Some(next) = words.and_then(|(kernels, w)| decode_whole(kernels, input, pos, w)) {
            pos = next;
            continue;
        }
        pos =
            decode_group(input, pos, group, &mut padded, simd, wide).map_err(|e| e.in_group(g))?;
    }
    if pos != input.len() {
        return Err(StreamError::TrailingBytes {
            coder: "patched",
            used: pos,
            len: input.len(),
        });
    }
    Ok(())
}

/// Bytes from a group's first that [`decode_whole`] may read: the headers, 32 low
/// fields and 32 high parts of up to 32 bits, a bitmap, and the kernels' slack.
const WHOLE_GROUP_READS: usize = 2 + 128 + 4 + 128 + SLACK;

/// Decodes a whole group of 32-bit words starting at byte `pos` of `input` with the
/// AVX2 kernels, when everything it may read lies within `input`; the position after
/// it. `None` when that is not so or the group is not valid: then [`decode_group`]
/// decodes it again (writing every value anew), and names what is wrong. Accepts
/// exactly what [`decode_group`] accepts, with fewer checks: every read lies in one
/// window, and 32 fields of any width fill whole bytes.
#[inline(always)]
fn decode_whole<K: Kernels>(
    kernels: K,
    input: &[u8],
    pos: usize,
    words: &mut [u32; GROUP],
) -> Option<usize> {
    let window = input.get(pos..pos + WHOLE_GROUP_READS)?;
    let h = window[0];
    let b = u32::from(h & !HAS_EXCEPTIONS);
    if b > 32 {
        return None;
    }
    let exceptions = h & HAS_EXCEPTIONS != 0;
    let lows = 1 + usize::from(exceptions);
    if b == 0 {
        *words = [0; GROUP];
    } else {
        kernels.unpack(&window[lows..], b, words);
    }
    let at = lows + 4 * b as usize;
    if !exceptions {
        return Some(pos + at);
    }
    let e_byte = window[1];
    let e = u32::from(e_byte & !LIST);
    if e == 0 || b + e > 32 {
        return None;
    }
    let field = load_u64(window, at);
    let (bitmap, bits) = if e_byte & LIST != 0 {
        // At most 7 positions of 5 bits after the count: all within `field`.
        let k = (field & low_mask(COUNT_BITS)) as u32;
        let mut bitmap = 0u32;
        let mut next = 0;
        let mut ordered = k > 0;
        for j in 0..k {
            let i = field >> (COUNT_BITS + POSITION_BITS * j) & low_mask(POSITION_BITS);
            ordered &= i >= next;
            bitmap |= 1 << i;
            next = i + 1;
        }
        if !ordered {
            return None;
        }
        (bitmap, COUNT_BITS + POSITION_BITS * k)
    } else {
        (field as u32, GROUP as u32)
    };
    if bitmap == 0 || bits % 8 != 0 && window[at + bits as usize / 8] >> (bits % 8) != 0 {
        return None;
    }
    let start = at + bits.div_ceil(8) as usize;
    let high_bits = bitmap.count_ones() * e;
    let end = start + high_bits.div_ceil(8) as usize;
    if high_bits % 8 != 0 && window[end - 1] >> (high_bits % 8) != 0 {
        return None;
    }
    let mut highs = [0u32; GROUP];
    kernels.unpack(&window[start..], e, &mut highs);
    kernels
        .expand_checked(&highs, bitmap, b, e, words)
        .then_some(pos + end)
}

/// Decodes one group starting at byte `pos` of `input`; the position after it.
#[inline(always)]
fn decode_group<T: Word>(
    input: &[u8],
    pos: usize,
    group: &mut [T],
    padded: &mut [u8; MAX_LOW_BYTES + SLACK],
    simd: Option<Avx2>,
    wide: Option<Avx512>,
) -> Result<usize, StreamError> {
    // `let else`, not `ok_or`: that builds the error and drops it for every group.
    let Some(&h) = input.get(pos) else {
        return Err(TRUNCATED);
    };
    let b = u32::from(h & !HAS_EXCEPTIONS);
    if b > T::BITS {
        return Err(StreamError::WidthForWord {
            what: "patched: width",
            value: b,
            word_bits: T::BITS,
        });
    }
    if h & HAS_EXCEPTIONS == 0 {
        return unpack_field(input, pos + 1, b, group, padded, simd, wide);
    }
    let Some(&e_byte) = input.get(pos + 1) else {
        return Err(TRUNCATED);
    };
    let at = unpack_field(input, pos + 2, b, group, padded, simd, wide)?;
    patch(input, at, b, e_byte, group, padded, simd)
}

/// Unpacks `out.len()` fields of `width` bits from byte `at` of `input`; the position
/// after them. Checks the padding bits of their last byte.
#[inline(always)]
fn unpack_field<T: Word>(
    input: &[u8],
    at: usize,
    width: u32,
    out: &mut [T],
    padded: &mut [u8; MAX_LOW_BYTES + SLACK],
    simd: Option<Avx2>,
    wide: Option<Avx512>,
) -> Result<usize, StreamError> {
    let bits = out.len() * width as usize;
    let end = at + bits.div_ceil(8);
    if end > input.len() {
        return Err(TRUNCATED);
    }
    if !bits.is_multiple_of(8) && input[end - 1] >> (bits % 8) != 0 {
        return Err(NONZERO_PADDING);
    }
    if let Some((avx2, words)) = simd_group(out, simd, width, input.len() - at) {
        avx2.unpack(&input[at..], width, words);
    } else if let Some((avx512, words)) = wide_group(out, wide, width) {
        // The fields' bytes alone: the kernel reads no further.
        avx512.unpack_wide(&input[at..end], width, words);
    } else if at + (GROUP * width as usize).div_ceil(8) + SLACK <= input.len() {
        unpack_dispatch(&input[at..], width, out);
    } else {
        // The end of the stream: unpack from a zero-padded copy.
        padded.fill(0);
        padded[..end - at].copy_from_slice(&input[at..end]);
        unpack_dispatch(&padded[..], width, out);
    }
    Ok(end)
}

/// Applies a group's exception fields (from byte `at` of `input`) to its unpacked low
/// bits; the position after them.
#[inline(always)]
fn patch<T: Word>(
    input: &[u8],
    at: usize,
    b: u32,
    e_byte: u8,
    group: &mut [T],
    padded: &mut [u8; MAX_LOW_BYTES + SLACK],
    simd: Option<Avx2>,
) -> Result<usize, StreamError> {
    let m = group.len();
    let e = u32::from(e_byte & !LIST);
    if e == 0 || b + e > T::BITS {
        return Err(StreamError::ExceptionWidth {
            width: e,
            low: b,
            word_bits: T::BITS,
        });
    }
    let field = input.get(at..).unwrap_or_default();
    let (bitmap, bits) = if e_byte & LIST != 0 {
        let k = bits_at(field, 0, COUNT_BITS);
        if k == 0 {
            return Err(StreamError::NonCanonical("patched: 0 listed exceptions"));
        }
        let mut bitmap = 0u64;
        let mut next = 0;
        for j in 0..k as usize {
            let i = bits_at(
                field,
                COUNT_BITS as usize + j * POSITION_BITS as usize,
                POSITION_BITS,
            );
            if i < next || i >= m as u64 {
                return Err(StreamError::ExceptionOrder { position: i });
            }
            bitmap |= 1 << i;
            next = i + 1;
        }
        (bitmap, (COUNT_BITS + POSITION_BITS * k as u32) as usize)
    } else {
        let bitmap = bits_at(field, 0, m as u32);
        if bitmap == 0 {
            return Err(StreamError::NonCanonical("patched: empty exception bitmap"));
        }
        (bitmap, m)
    };
    let used = bits.div_ceil(8);
    if used > field.len() {
        return Err(TRUNCATED);
    }
    if bits % 8 != 0 && field[used - 1] >> (bits % 8) != 0 {
        return Err(NONZERO_PADDING);
    }
    let start = at + used;
    let k = bitmap.count_ones() as usize;
    let (all, empty, end) =
        if let Some((avx2, words)) = simd_group(group, simd, e, input.len() - start) {
            // Unpack a whole group's worth of high parts (only the first `k` are this
            // group's) and move them to their positions.
            let end = start + (k * e as usize).div_ceil(8);
            check_padding(input, end, k * e as usize)?;
            let mut highs = [0u32; GROUP];
            avx2.unpack(&input[start..], e, &mut highs);
            let (all, empty) = avx2.expand_or(&highs, bitmap as u32, b, words);
            (u64::from(all), empty, end)
        } else {
            match <&mut [T; GROUP]>::try_from(&mut *group) {
                Ok(full) if start + (GROUP * e as usize).div_ceil(8) + SLACK <= input.len() => {
                    // Common case: unpack each high part straight into its value.
                    let end = start + (k * e as usize).div_ceil(8);
                    check_padding(input, end, k * e as usize)?;
                    let (all, empty) = scatter_dispatch(&input[start..], e, b, bitmap, full);
                    (all, empty, end)
                }
                _ => {
                    let mut highs = [T::default(); GROUP];
                    let end = unpack_field(input, start, e, &mut highs[..k], padded, None, None)?;
                    let mut rest = bitmap;
                    let mut all = 0;
                    let mut empty = false;
                    for &high in &highs[..k] {
                        all |= high.to_u64();
                        empty |= high == T::default();
                        let v = &mut group[rest.trailing_zeros() as usize];
                        *v = T::from_u64(v.to_u64() | high.to_u64() << b);
                        rest &= rest - 1;
                    }
                    (all, empty, end)
                }
            }
        };
    if empty {
        return Err(StreamError::NonCanonical(
            "patched: an exception without high bits",
        ));
    }
    // The encoder makes `e` the width of the largest high part: any other `e` is a
    // corrupt stream (it would swallow padding bits).
    if all.bit_length() != e {
        return Err(StreamError::ExceptionTooWide { width: e });
    }
    Ok(end)
}

/// `group` as 32-bit words, when the AVX2 kernels may decode it: `simd` (32-bit words
/// on a CPU with AVX2), a whole group, a width the kernels handle and `available` bytes
/// covering what they read.
#[inline(always)]
fn simd_group<T: Word>(
    group: &mut [T],
    simd: Option<Avx2>,
    width: u32,
    available: usize,
) -> Option<(Avx2, &mut [u32; GROUP])> {
    if width == 0 || unpack_reads(width) > available {
        return None;
    }
    simd_words_mut(group, simd)
}

/// `group` as 64-bit words for AVX-512's unpacking of `width`-bit fields, when `wide`,
/// it is a whole group of them and the width is 1 to 64.
#[inline(always)]
fn wide_group<T: Word>(
    group: &mut [T],
    wide: Option<Avx512>,
    width: u32,
) -> Option<(Avx512, &mut [u64; GROUP])> {
    group_of_mut(group, wide.filter(|_| (1..=64).contains(&width)))
}

/// `group` as 32-bit words for the AVX2 kernels, when `simd` and it is a whole group of
/// them (the decoder's [`simd_words`]).
#[inline(always)]
fn simd_words_mut<T: Word>(
    group: &mut [T],
    simd: Option<Avx2>,
) -> Option<(Avx2, &mut [u32; GROUP])> {
    group_of_mut(group, simd)
}

/// `group` as words of type `W` for `kernels`, when they run, it is a whole group and
/// `T` is `W` (the decoder's [`group_of`]).
#[inline(always)]
fn group_of_mut<W: 'static, T: Word, K>(
    group: &mut [T],
    kernels: Option<K>,
) -> Option<(K, &mut [W; GROUP])> {
    let kernels = kernels?;
    let full: &mut [T; GROUP] = group.try_into().ok()?;
    let words = (full as &mut dyn std::any::Any).downcast_mut::<[W; GROUP]>()?;
    Some((kernels, words))
}

/// Checks that the bits of the byte ending a field of `bits` bits at `end` (exclusive)
/// beyond the field are zero.
#[inline(always)]
fn check_padding(input: &[u8], end: usize, bits: usize) -> Result<(), StreamError> {
    if !bits.is_multiple_of(8) && input[end - 1] >> (bits % 8) != 0 {
        return Err(NONZERO_PADDING);
    }
    Ok(())
}

/// ORs the `bitmap.count_ones()` high parts of `e` bits packed at the start of `src`
/// (which holds [`SLACK`] bytes more than a full group of them), shifted by `b`, into
/// the values at the bitmap's positions; the OR of the high parts and whether one was
/// zero.
#[inline(always)]
fn scatter_dispatch<T: Word>(
    src: &[u8],
    e: u32,
    b: u32,
    bitmap: u64,
    group: &mut [T; GROUP],
) -> (u64, bool) {
    by_width!(T::BITS, e, k => scatter::<T>(src, k, b, bitmap, group))
}

#[inline(always)]
fn scatter<T: Word>(
    src: &[u8],
    e: u32,
    b: u32,
    bitmap: u64,
    group: &mut [T; GROUP],
) -> (u64, bool) {
    let mask = low_mask(e);
    let src = &src[..(GROUP * e as usize).div_ceil(8) + SLACK];
    let mut rest = bitmap;
    let mut all = 0;
    let mut empty = false;
    for j in 0..GROUP {
        if rest == 0 {
            break;
        }
        let high = fixed_field::<T>(src, j, e) & mask;
        all |= high;
        empty |= high == 0;
        let v = &mut group[rest.trailing_zeros() as usize % GROUP];
        *v = T::from_u64(v.to_u64() | high << b);
        rest &= rest - 1;
    }
    (all, empty)
}

/// The `n <= 64` bits of `field` from bit `at` (zeros past its end).
#[inline(always)]
fn bits_at(field: &[u8], at: usize, n: u32) -> u64 {
    let shift = (at % 8) as u32;
    let low = load_u64(field, at / 8) >> shift;
    let bits = if n + shift > 64 {
        low | load_u64(field, at / 8 + 8) << (64 - shift)
    } else {
        low
    };
    bits & low_mask(n)
}

/// Unpacks `group.len()` (at most [`GROUP`]) values of `b` bits from `src`, which holds
/// at least [`SLACK`] bytes more than a full group's packed bits.
#[inline(always)]
fn unpack_dispatch<T: Word>(src: &[u8], b: u32, group: &mut [T]) {
    if b == 0 {
        group.fill(T::default());
        return;
    }
    by_width!(T::BITS, b, k => unpack::<T>(src, k, group))
}

#[inline(always)]
fn unpack<T: Word>(src: &[u8], b: u32, group: &mut [T]) {
    let mask = low_mask(b);
    // A full group's worth, so every offset below is provably in bounds.
    let src = &src[..(GROUP * b as usize).div_ceil(8) + SLACK];
    if let Ok(full) = <&mut [T; GROUP]>::try_from(&mut *group) {
        // A constant count: with `b` constant every field's offset is too.
        for (i, v) in full.iter_mut().enumerate() {
            *v = T::from_u64(fixed_field::<T>(src, i, b) & mask);
        }
        return;
    }
    for (i, v) in group.iter_mut().enumerate().take(GROUP) {
        *v = T::from_u64(fixed_field::<T>(src, i, b) & mask);
    }
}

/// Field `index` of `width` bits packed from the start of `src`, and the bits after it
/// (mask them off): one unaligned 8-byte load for fields of up to 57 bits (a field starts
/// at most 7 bits into its first byte), 16 bytes for wider ones of wider words, so `src`
/// needs that many bytes from the field's first.
#[inline(always)]
fn fixed_field<T: Word>(src: &[u8], index: usize, width: u32) -> u64 {
    let bit = index * width as usize;
    let (at, shift) = (bit / 8, (bit % 8) as u32);
    if T::BITS <= 32 || width <= 57 {
        let bytes: [u8; 8] = src[at..at + 8].try_into().expect("8 bytes");
        u64::from_le_bytes(bytes) >> shift
    } else {
        let bytes: [u8; 16] = src[at..at + 16].try_into().expect("16 bytes");
        (u128::from_le_bytes(bytes) >> shift) as u64
    }
}

/// Encoded size in bits of `values` (exact, whole bytes per group).
pub fn estimate_bits<T: Word>(values: &[T]) -> u64 {
    match Isa::detect::<T>() {
        Isa::Avx512(_, avx512) => avx512.run(
            #[inline(always)]
            || estimate_with(values, Some(avx512)),
        ),
        Isa::Avx2(avx2) => avx2.run(
            #[inline(always)]
            || estimate_with(values, Some(avx2)),
        ),
        Isa::Portable => crate::isa::vectorised(
            #[inline(always)]
            || estimate_with(values, wide_kernels_for::<T>()),
        ),
    }
}

/// [`estimate_bits`], with the AVX2 kernels for whole groups of 32-bit words (`simd`) or
/// without.
#[inline(always)]
fn estimate_with<T: Word, K: Kernels>(values: &[T], simd: Option<K>) -> u64 {
    // A plain loop: an iterator's sum may be left out of line, compiled without the
    // caller's vector features.
    let mut full = values.chunks_exact(GROUP);
    let mut bits = 0u64;
    for group in &mut full {
        bits += u64::from(choose(group, simd).bits);
    }
    if !full.remainder().is_empty() {
        bits += u64::from(choose(full.remainder(), None::<K>).bits);
    }
    bits
}

/// Fewest bytes the coding of `n` values can take: one header byte per group.
pub fn min_encoded_len(n: usize) -> usize {
    n.div_ceil(GROUP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coder::{testing, Coder};

    testing::shared_coder_tests!(Coder::Patched);

    fn encoded<T: Word>(values: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(values, &mut out);
        let mut back = vec![T::default(); values.len()];
        decode(&out, &mut back).unwrap();
        assert_eq!(back, values);
        assert_eq!(out.len() as u64 * 8, estimate_bits(values));
        out
    }

    #[test]
    fn zero_group_is_one_byte() {
        assert_eq!(encoded(&[0u32; 32]), [0]);
        assert_eq!(encoded(&[0u64; 40]), [0, 0]);
        assert!(encoded::<u16>(&[]).is_empty());
    }

    #[test]
    fn a_long_coding_is_its_groups_codings_in_order() {
        // Wide random words (many groups with exceptions) and a ragged last group.
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        // Batches of groups are coded into room the batch before left: that room holds
        // the slack bytes its groups wrote, which the groups after must not keep.
        let values: Vec<u32> = (0..32 * 700 + 5)
            .map(|i| rng.gen::<u32>() >> (i % 32))
            .collect();
        let whole = encoded(&values);
        let groups: Vec<u8> = values.chunks(GROUP).flat_map(encoded).collect();
        assert!(whole.len() > 48 * 1024);
        assert_eq!(whole, groups);
        let wide: Vec<u64> = (0..32 * 300 + 17)
            .map(|i| rng.gen::<u64>() >> (i % 64))
            .collect();
        let groups: Vec<u8> = wide.chunks(GROUP).flat_map(encoded).collect();
        assert_eq!(encoded(&wide), groups);
    }

    /// The survey by its definition: the narrowest and widest bit lengths, and for each
    /// width between them the values longer than it.
    fn survey_by_definition<T: Word>(group: &[T]) -> (u32, u32, Vec<u32>) {
        let lengths: Vec<u32> = group.iter().map(|v| v.bit_length()).collect();
        let (narrowest, widest) = (lengths.iter().min().copied(), lengths.iter().max().copied());
        let (narrowest, widest) = (narrowest.unwrap_or(0), widest.unwrap_or(0));
        if widest == 0 {
            return (0, 0, Vec::new());
        }
        let above = (narrowest..widest)
            .map(|b| lengths.iter().filter(|&&n| n > b).count() as u32)
            .collect();
        (narrowest, widest, above)
    }

    fn check_survey<T: Word>(group: &[T]) {
        // Entries outside the range are left as they were.
        let mut above = [u32::MAX; 64];
        let (narrowest, widest) = survey(group, &mut above);
        let (n, w, expected) = survey_by_definition(group);
        assert_eq!((narrowest, widest), (n, w), "{group:?}");
        let range = narrowest as usize..widest as usize;
        assert_eq!(above[range.clone()], expected[..], "{group:?}");
        assert!(above[..range.start].iter().all(|&a| a == u32::MAX));
        assert!(above[range.end..].iter().all(|&a| a == u32::MAX));
    }

    #[test]
    fn the_survey_counts_the_values_longer_than_each_width() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(19);
        for len in [1, 2, 7, 31, 32] {
            for _ in 0..200 {
                // Values of every bit length, zeros and the widest included.
                let wide: Vec<u64> = (0..len)
                    .map(|_| {
                        let v = rng.gen::<u64>() >> rng.gen_range(0..64);
                        if rng.gen_ratio(1, 8) {
                            0
                        } else {
                            v
                        }
                    })
                    .collect();
                check_survey(&wide);
                check_survey(&wide.iter().map(|&v| v as u32).collect::<Vec<_>>());
                check_survey(&wide.iter().map(|&v| v as u16).collect::<Vec<_>>());
                check_survey(&wide.iter().map(|&v| v as u8).collect::<Vec<_>>());
            }
        }
        check_survey(&[u64::MAX; 32]);
        check_survey(&[0u64; 32]);
        check_survey(&[1u8; 32]);
    }

    /// 64-bit words coded with AVX-512's survey, where the CPU has it, code as the
    /// portable loops code them.
    #[test]
    fn the_wide_survey_codes_as_the_portable_loops() {
        use rand::{Rng, SeedableRng};
        let Some(avx512) = wide_kernels_for::<u64>() else {
            return;
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(43);
        let values: Vec<u64> = (0..32 * 500 + 9)
            .map(|i| match i % 5 {
                0 => 0,
                1 => rng.gen::<u64>(),
                _ => rng.gen::<u64>() >> (20 + i % 30),
            })
            .collect();
        // One inlined coder per frame: unoptimised, the coder's frame is large.
        #[inline(never)]
        fn coded<K: Kernels>(values: &[u64], simd: Option<K>) -> (Vec<u8>, u64) {
            let mut out = Vec::new();
            encode_with(values, &mut out, simd);
            (out, estimate_with(values, simd))
        }
        let (by_kernel, kernel_bits) = coded(&values, Some(avx512));
        let (portable, portable_bits) = coded(&values, None::<Avx2>);
        assert_eq!(by_kernel, portable);
        assert_eq!(kernel_bits, portable_bits);
        assert_eq!(encoded(&values), portable);
    }

    #[test]
    fn uniform_widths_need_no_exceptions() {
        let values: Vec<u32> = (0..32).map(|i| 4 + i % 4).collect();
        // 3 bits each: 12 bytes of low bits after the header.
        let out = encoded(&values);
        assert_eq!(out.len(), 13);
        assert_eq!(out[0], 3);
    }

    #[test]
    fn one_outlier_is_listed() {
        let mut values = vec![1u32; 32];
        values[17] = u32::MAX;
        let out = encoded(&values);
        // H, E, 4 bytes of 1-bit lows, 3 + 5 + 31 = 39 bits of field = 5 bytes.
        assert_eq!(out.len(), 2 + 4 + 5);
        assert_eq!(out[0], 1 | HAS_EXCEPTIONS);
        assert_eq!(out[1], 31 | LIST);
    }

    #[test]
    fn many_outliers_use_a_bitmap() {
        let values: Vec<u64> = (0..32u64)
            .map(|i| if i % 3 == 0 { 1 << 40 } else { 5 })
            .collect();
        let out = encoded(&values);
        // 11 exceptions: a bitmap of 32 bits and 11 high parts of 38 bits (3 + 38 = 41
        // bit values, width 3): 2 + 12 + ceil((32 + 418) / 8) = 71 bytes.
        assert_eq!(out[0], 3 | HAS_EXCEPTIONS);
        assert_eq!(out[1], 38);
        assert_eq!(out.len(), 2 + 12 + 57);
    }

    #[test]
    fn every_width_of_every_word_size_round_trips() {
        for b in 0..=64u32 {
            let values: Vec<u64> = (0..70u64)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 3) & low_mask(b))
                .collect();
            encoded(&values);
            if b <= 32 {
                encoded(&values.iter().map(|&v| v as u32).collect::<Vec<_>>());
            }
            if b <= 16 {
                encoded(&values.iter().map(|&v| v as u16).collect::<Vec<_>>());
            }
            if b <= 8 {
                encoded(&values.iter().map(|&v| v as u8).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn wide_blocks_pack_as_the_value_by_value_loop() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for b in 1..=64u32 {
            let group: [u64; GROUP] = std::array::from_fn(|_| rng.gen::<u64>());
            let (mut blocks, mut values) =
                (vec![0xAAu8; 8 * GROUP + 16], vec![0x55u8; 8 * GROUP + 16]);
            let len = pack_wide_blocks(&group, GROUP / 8, b, &mut blocks);
            assert_eq!(len, pack(&group, b, &mut values), "width {b}");
            assert_eq!(blocks[..len], values[..len], "width {b}");
            // The first `k` values of a group of zeros after them (as exceptions' high
            // parts are packed), in the blocks that hold them.
            for k in [1, 7, 8, 9, 20, 31] {
                let mut first = group;
                first[k..].fill(0);
                let len = pack(&first[..k], b, &mut values);
                pack_wide_blocks(&first, k.div_ceil(8), b, &mut blocks);
                assert_eq!(blocks[..len], values[..len], "{k} values of width {b}");
            }
        }
    }

    #[test]
    fn width_is_the_smallest_among_present_lengths() {
        let values: Vec<u32> = (0..32)
            .map(|i| if i < 30 { i % 8 } else { 1 << 20 })
            .collect();
        let c = choose(&values, None::<Avx2>);
        assert_eq!((c.b, c.e, c.exceptions), (3, 18, 2));
        assert_eq!(choose(&values, Avx2::detect()), c);
        assert_eq!(choose(&values, Avx512::detect()), c);
        for b in 0..=21u32 {
            let k = values.iter().filter(|v| v.bit_length() > b).count();
            assert!(group_bits(32, b, k, 21 - b) >= c.bits, "width {b}");
        }
    }

    /// For 64-bit words (whose choice weighs only the widths from the narrowest value's
    /// length), the layout is the smallest over every width, ties to the wider, on
    /// groups whose values all have many bits (noise) and on groups with small ones.
    #[test]
    fn wide_words_choose_the_smallest_over_every_width() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(43);
        for round in 0..300 {
            let m = [GROUP, GROUP, 1, 7, 31][round % 5];
            let low = rng.gen_range(0..64);
            let high = rng.gen_range(low..=64);
            let group: Vec<u64> = (0..m)
                .map(|_| {
                    let bits = rng.gen_range(low..=high);
                    match bits {
                        0 => 0,
                        _ => {
                            (1u64 << (bits - 1))
                                | rng.gen::<u64>().checked_shr(65 - bits).unwrap_or(0)
                        }
                    }
                })
                .collect();
            let widest = group.iter().fold(0, |a, &v| a | v).bit_length();
            let best = (0..=widest)
                .map(|b| {
                    let k = group.iter().filter(|v| v.bit_length() > b).count();
                    let e = if k == 0 { 0 } else { widest - b };
                    (group_bits(m, b, k, e), std::cmp::Reverse(b))
                })
                .min()
                .expect("a width");
            let c = choose(&group, None::<Avx2>);
            assert_eq!((c.bits, c.b), (best.0, best.1 .0), "round {round}");
        }
    }

    /// `n` Laplace residuals of up to 32 bits for test round `round`, with zeros,
    /// outliers of every length (the top bit included) and, some rounds, whole groups of
    /// one value.
    fn mixed_residuals(rng: &mut rand::rngs::SmallRng, round: usize, n: usize) -> Vec<u32> {
        use rand::Rng;
        let bits = rng.gen_range(0..=32);
        testing::laplace(rng, n, bits)
            .into_iter()
            .enumerate()
            .map(|(i, v): (usize, u32)| match (i + round) % 7 {
                0 => 0,
                1 if round.is_multiple_of(3) => u32::MAX >> rng.gen_range(0..32),
                2 if round.is_multiple_of(4) => 1 << rng.gen_range(0..32),
                _ if round.is_multiple_of(11) => 0x8000_0000,
                _ => v,
            })
            .collect()
    }

    #[test]
    fn simd_and_portable_encoders_write_the_same_bytes() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(29);
        let (avx2, avx512) = (Avx2::detect(), Avx512::detect());
        for round in 0..400 {
            let n = rng.gen_range(1..200);
            let values = mixed_residuals(&mut rng, round, n);
            let mut portable = Vec::new();
            encode_with(&values, &mut portable, None::<Avx2>);
            let (mut by_avx2, mut by_avx512) = (Vec::new(), Vec::new());
            encode_with(&values, &mut by_avx2, avx2);
            encode_with(&values, &mut by_avx512, avx512);
            assert_eq!(portable, by_avx2, "round {round}");
            assert_eq!(portable, by_avx512, "round {round}");
            for group in values.chunks(GROUP) {
                let c = choose(group, None::<Avx2>);
                assert_eq!(c, choose(group, avx2));
                assert_eq!(c, choose(group, avx512));
            }
        }
    }

    /// `input` decoded to `n` values by every path this CPU has, the portable loops
    /// first, then the AVX2 kernels group by group, and whole groups by the AVX2 and the
    /// AVX-512 kernels; each with its name.
    fn decode_every_way(
        input: &[u8],
        n: usize,
    ) -> Vec<(&'static str, Result<Vec<u32>, StreamError>)> {
        let run = |decode: &dyn Fn(&mut [u32]) -> Result<(), StreamError>| {
            let mut out = vec![u32::MAX; n];
            decode(&mut out).map(|()| out)
        };
        let mut ways = vec![(
            "portable",
            run(&|out| decode_with(input, out, None, None::<Avx2>, None)),
        )];
        if let Some(avx2) = Avx2::detect() {
            ways.push((
                "AVX2 groups",
                run(&|out| decode_with(input, out, Some(avx2), None::<Avx2>, None)),
            ));
            ways.push((
                "AVX2 whole groups",
                run(&|out| decode_with(input, out, Some(avx2), Some(avx2), None)),
            ));
            if let Some(avx512) = Avx512::detect() {
                ways.push((
                    "AVX-512 whole groups",
                    run(&|out| decode_with(input, out, Some(avx2), Some(avx512), None)),
                ));
            }
        }
        ways
    }

    /// 64-bit words decode alike with and without AVX-512's unpacking of whole groups'
    /// low bits, where the CPU has it: valid streams to the same values, corrupt ones to
    /// the same error.
    #[test]
    fn wide_unpacking_decodes_as_the_portable_loops() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let Some(avx512) = wide_kernels_for::<u64>() else {
            return;
        };
        // One decoder per frame: unoptimised, the decoder's frame is large.
        #[inline(never)]
        fn decoded(input: &[u8], n: usize, wide: Option<Avx512>) -> Result<Vec<u64>, StreamError> {
            let mut out = vec![u64::MAX; n];
            decode_with(input, &mut out, None, None::<Avx2>, wide).map(|()| out)
        }
        let mut rng = SmallRng::seed_from_u64(53);
        for round in 0..300 {
            let n = rng.gen_range(1..300);
            let shift = rng.gen_range(0..64);
            let values: Vec<u64> = (0..n)
                .map(|i| match (i + round) % 7 {
                    0 => 0,
                    1 => rng.gen::<u64>(),
                    _ => rng.gen::<u64>() >> shift,
                })
                .collect();
            let mut coded = Vec::new();
            encode(&values, &mut coded);
            assert_eq!(decoded(&coded, n, Some(avx512)), Ok(values.clone()));
            for _ in 0..10 {
                let mut bad = coded.clone();
                let at = rng.gen_range(0..bad.len());
                bad[at] ^= 1 << rng.gen_range(0..8);
                if rng.gen_ratio(1, 4) {
                    bad.truncate(rng.gen_range(0..bad.len()));
                }
                assert_eq!(
                    decoded(&bad, n, Some(avx512)),
                    decoded(&bad, n, None),
                    "round {round}"
                );
            }
        }
    }

    /// Values whose group 0 is zeros but for 200 at 3 and 255 at 9 (b = 0, a list of two
    /// 8-bit high parts at bytes 4 and 5: dropping one leaves no padding bits to catch
    /// it), then enough groups for the whole-group path to take group 0; and their
    /// coding.
    fn two_listed_exceptions() -> (Vec<u32>, Vec<u8>) {
        let mut values = vec![0u32; 32 * 12];
        values[3] = 200;
        values[9] = 255;
        for (i, v) in values.iter_mut().enumerate().skip(32) {
            *v = (i as u32).wrapping_mul(2_654_435_761);
        }
        let mut coded = Vec::new();
        encode(&values, &mut coded);
        assert_eq!(&coded[..2], &[HAS_EXCEPTIONS, LIST | 8]);
        assert_eq!((coded[2] & 7, coded[2] >> 3, coded[3] & 31), (2, 3, 9));
        assert_eq!(&coded[4..6], &[200, 255]);
        (values, coded)
    }

    #[test]
    fn zero_high_parts_are_rejected_on_every_path() {
        let (values, coded) = two_listed_exceptions();
        for at in [4, 5] {
            let mut corrupt = coded.clone();
            corrupt[at] = 0;
            for (path, result) in decode_every_way(&corrupt, values.len()) {
                assert_eq!(
                    result.unwrap_err().to_string(),
                    "patched: an exception without high bits in group 0",
                    "byte {at}, {path}"
                );
            }
        }
    }

    #[test]
    fn listed_positions_out_of_order_are_rejected_on_every_path() {
        let (values, coded) = two_listed_exceptions();
        for (second, message) in [
            (3, "position 3 out of order"),
            (2, "position 2 out of order"),
        ] {
            let mut corrupt = coded.clone();
            corrupt[3] = corrupt[3] & !31 | second;
            for (path, result) in decode_every_way(&corrupt, values.len()) {
                assert_eq!(
                    result.unwrap_err().to_string(),
                    format!("patched: exception {message} in group 0"),
                    "{path}"
                );
            }
        }
    }

    #[test]
    fn simd_and_portable_decoders_agree_on_valid_and_corrupt_input() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(17);
        // Up to 64 groups, so most are far enough from the end for the whole-group path.
        for round in 0..600 {
            let n = rng.gen_range(1..2048);
            let values = mixed_residuals(&mut rng, round, n);
            let mut coded = Vec::new();
            encode(&values, &mut coded);
            let mut corrupt = coded.clone();
            for _ in 0..=round % 3 {
                if !corrupt.is_empty() {
                    let at = rng.gen_range(0..corrupt.len());
                    corrupt[at] ^= 1 << rng.gen_range(0..8);
                }
            }
            for input in [&coded, &corrupt] {
                let mut ways = decode_every_way(input, n).into_iter();
                let (_, portable) = ways.next().unwrap();
                for (path, result) in ways {
                    assert_eq!(result, portable, "round {round}, {path}");
                }
            }
            let mut back = vec![0u32; n];
            decode(&coded, &mut back).unwrap();
            assert_eq!(back, values);
        }
    }

    #[test]
    fn invalid_headers_are_errors() {
        let mut back = [0u32; 32];
        let cases: [(&[u8], &str); 5] = [
            (&[33], "patched: width 33 for 32-bit words in group 0"),
            (
                &[0x81, 0, 0, 0, 0, 0],
                "patched: exception width 0 above width 1 for 32-bit words in group 0",
            ),
            (
                &[0x81, 32, 0, 0, 0, 0, 0, 0, 0, 0],
                "patched: exception width 32 above width 1 for 32-bit words in group 0",
            ),
            (
                &[0x80, 1 | LIST, 0, 0],
                "patched: 0 listed exceptions in group 0",
            ),
            (
                &[0x80, 1, 0, 0, 0, 0],
                "patched: empty exception bitmap in group 0",
            ),
        ];
        for (bytes, message) in cases {
            assert_eq!(decode(bytes, &mut back).unwrap_err().to_string(), message);
        }
        // One listed exception at 0 with a zero high part.
        let bytes = [0x80, 1 | LIST, 1, 0];
        assert_eq!(
            decode(&bytes, &mut back).unwrap_err().to_string(),
            "patched: an exception without high bits in group 0"
        );
        // One listed exception at 0 with a high part of 1 in a field of width 2.
        let field = 1u64 | 1 << 8; // count 1, position 0, high part 1
        let bytes = [0x80, 2 | LIST, field as u8, (field >> 8) as u8];
        assert_eq!(
            decode(&bytes, &mut back).unwrap_err().to_string(),
            "patched: exception width 2 wider than its values in group 0"
        );
        // Positions 3 then 2: out of order.
        let field = 2u64 | 3 << 3 | 2 << 8;
        let bytes = [0x80, 1 | LIST, field as u8, (field >> 8) as u8];
        assert_eq!(
            decode(&bytes, &mut back).unwrap_err().to_string(),
            "patched: exception position 2 out of order in group 0"
        );
        assert_eq!(
            decode(&[0, 0], &mut back).unwrap_err().to_string(),
            "patched: 1 bytes after the coded values (1 of 2 used)"
        );
        assert_eq!(
            decode(&[1, 0, 0, 0, 0x80], &mut back[..31])
                .unwrap_err()
                .to_string(),
            "patched: nonzero padding bits in group 0"
        );
    }
}
