//! Bit-plane residual coder (MPC / ndzip "residual value encoding").
//!
//! Residual words are expected to be already sign-folded (zigzag or XOR), so their
//! high bits are usually zero. The coder cuts them into groups of `G = T::BITS` words
//! (8 for `u8`, 16 for `u16`, 32 for `u32`, 64 for `u64`) and transposes each group's
//! `G x G` bit matrix, so that equal bit positions of the `G` words land in one word,
//! and drops the words that are zero.
//!
//! # Format
//!
//! The coding is specified in docs/format.md, "Coder 2: bit planes": per group of `G`
//! words (the last padded with zeros) a `G`-bit header of the non-zero planes, then
//! those planes in order, little-endian. This module writes and reads exactly that.
//!
//! The decoder accepts exactly what the encoder writes: it fails (never panics) on a
//! truncated input, trailing bytes, a header bit whose plane word is zero, or padding
//! words of the last group that would decode to non-zero values.
//!
//! # Implementation
//!
//! The portable path (safe code) transposes with the recursive block swap of Hacker's
//! Delight (section 7-3): `log2(G)` stages of masked swaps between rows `i` and
//! `i + s`. The encoder knows from the header that the columns `W..` are zero (`W` the
//! power of two above the highest set bit), so for the stages `s >= W` it merges rows
//! instead of swapping them and runs the other stages on `W` rows only: for 12-bit
//! residuals in `u32`, one cheap stage plus 4 stages on 16 rows instead of 5 full
//! stages. The decoder mirrors this with the planes `W..` zero.
//!
//! On `x86_64` with AVX2 (detected at run time), `u32` and `u64` groups use ndzip's
//! transposition instead: in-lane byte shuffles and unpacks gather byte `b` of every
//! row into one vector, whose `vpmovmskb` after a left shift by `7 - q` is output row
//! `8b + q`. The encoder extracts only the planes of non-zero header bytes and writes
//! them behind a branch-free cursor; the `u32` decoder does not scatter the plane
//! words into a group but expands their byte vectors to the planes' positions with
//! `vpshufb`, indexed by the header's ranks. Both paths write identical bytes.
//!
//! Either way an all-zero group is detected first and skips the transposition.

use std::ops::{BitAnd, BitOr, BitXor, Shl, Shr};

use crate::stream_error::StreamError;
use crate::word::Word;

/// Appends the bit-plane coding of `values` to `out`.
///
/// # Panics
///
/// If `T::BITS` is not 8, 16, 32 or 64 (never for the crate's `Word` types).
pub fn encode<T: Word>(values: &[T], out: &mut Vec<u8>) {
    #[cfg(target_arch = "x86_64")]
    if avx2::handles::<T>() {
        // SAFETY: `handles` checked that the CPU supports AVX2.
        unsafe { avx2::encode(values, out) };
        return;
    }
    encode_scalar(values, out)
}

/// Decodes `out.len()` values from `input`, which must be exactly what `encode` wrote
/// for them; otherwise the error.
pub fn decode<T: Word>(input: &[u8], out: &mut [T]) -> Result<(), StreamError> {
    #[cfg(target_arch = "x86_64")]
    if avx2::handles::<T>() {
        // SAFETY: `handles` checked that the CPU supports AVX2.
        return unsafe { avx2::decode(input, out) };
    }
    decode_scalar(input, out)
}

/// [`encode`] with the portable transposition.
fn encode_scalar<T: Word>(values: &[T], out: &mut Vec<u8>) {
    match T::BITS {
        8 => encode_groups::<T, u8, _>(values, out, transpose_encode::<u8>),
        16 => encode_groups::<T, u16, _>(values, out, transpose_encode::<u16>),
        32 => encode_groups::<T, u32, _>(values, out, transpose_encode::<u32>),
        64 => encode_groups::<T, u64, _>(values, out, transpose_encode::<u64>),
        bits => unsupported(bits),
    }
}

/// [`decode`] with the portable transposition.
fn decode_scalar<T: Word>(input: &[u8], out: &mut [T]) -> Result<(), StreamError> {
    match T::BITS {
        8 => decode_groups::<T, u8, _>(input, 0, out, transpose_decode::<u8>),
        16 => decode_groups::<T, u16, _>(input, 0, out, transpose_decode::<u16>),
        32 => decode_groups::<T, u32, _>(input, 0, out, transpose_decode::<u32>),
        64 => decode_groups::<T, u64, _>(input, 0, out, transpose_decode::<u64>),
        bits => Err(StreamError::UnsupportedWordWidth { bits }),
    }
}

/// Exact encoded size in bytes of `values` (used to choose between predictors).
///
/// # Panics
///
/// If `T::BITS` is not 8, 16, 32 or 64 (never for the crate's `Word` types).
pub fn encoded_len<T: Word>(values: &[T]) -> usize {
    match T::BITS {
        8 => encoded_len_with::<T, u8>(values),
        16 => encoded_len_with::<T, u16>(values),
        32 => encoded_len_with::<T, u32>(values),
        64 => encoded_len_with::<T, u64>(values),
        bits => unsupported(bits),
    }
}

/// `Word` is implemented for `u8`, `u16`, `u32` and `u64` only.
#[cold]
#[track_caller]
fn unsupported(bits: u32) -> ! {
    panic!("bitplane: unsupported word width {bits}")
}

/// A concrete word type the groups are transposed in (`G = 8 * BYTES`).
trait Lane:
    Copy
    + Eq
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + Shl<usize, Output = Self>
    + Shr<usize, Output = Self>
    + 'static
{
    /// Size in bytes.
    const BYTES: usize;
    /// `[Self; G]`: one group.
    type Block: Copy + AsRef<[Self]> + AsMut<[Self]>;
    /// `[u8; (G + 1) * BYTES]`: room for the coding of one group.
    type Buf: Copy + AsRef<[u8]> + AsMut<[u8]>;
    /// An all-zero group.
    const ZERO_BLOCK: Self::Block;
    /// An all-zero group coding buffer.
    const ZERO_BUF: Self::Buf;
    /// The zero word.
    const ZERO: Self;
    /// The low `8 * BYTES` bits of `v`.
    fn of_u64(v: u64) -> Self;
    /// Zero-extended to 64 bits.
    fn as_u64(self) -> u64;
    /// Little-endian load from the first `BYTES` bytes of `b`.
    fn get(b: &[u8]) -> Self;
    /// Little-endian store into the first `BYTES` bytes of `b`.
    fn put(self, b: &mut [u8]);
}

macro_rules! impl_lane {
    ($t:ty, $g:expr) => {
        impl Lane for $t {
            const BYTES: usize = $g / 8;
            type Block = [$t; $g];
            type Buf = [u8; ($g + 1) * ($g / 8)];
            const ZERO_BLOCK: [$t; $g] = [0; $g];
            const ZERO_BUF: [u8; ($g + 1) * ($g / 8)] = [0; ($g + 1) * ($g / 8)];
            const ZERO: $t = 0;
            #[inline(always)]
            fn of_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn as_u64(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn get(b: &[u8]) -> Self {
                let mut raw = [0u8; $g / 8];
                raw.copy_from_slice(&b[..$g / 8]);
                <$t>::from_le_bytes(raw)
            }
            #[inline(always)]
            fn put(self, b: &mut [u8]) {
                b[..$g / 8].copy_from_slice(&self.to_le_bytes());
            }
        }
    };
}

impl_lane!(u8, 8);
impl_lane!(u16, 16);
impl_lane!(u32, 32);
impl_lane!(u64, 64);

/// The columns with bit `S` of their index clear: 0x5555..., 0x3333..., 0x0f0f...
#[inline(always)]
fn low_columns<L: Lane, const S: usize>() -> L {
    L::of_u64(u64::MAX / ((1 << S) + 1))
}

/// One stage of the block-swap transposition on rows `0..rows` of `a`: for every
/// pair of rows `i`, `i + S` with bit `S` of `i` clear, swaps the bits of row `i` at
/// the columns with bit `S` set against the bits of row `i + S` at the columns `S`
/// lower, i.e. exchanges bit `S` of the row and column indices. The stages for the
/// different `S` (powers of two) commute, and all of them together transpose the
/// matrix (row `i` is `a[i]`, column `j` its bit `j`).
#[inline(always)]
fn swap_stage<L: Lane, const S: usize>(a: &mut [L], rows: usize) {
    let m = low_columns::<L, S>();
    let mut base = 0;
    while base < rows {
        for i in base..base + S {
            let t = ((a[i] >> S) ^ a[i + S]) & m;
            a[i + S] = a[i + S] ^ t;
            a[i] = a[i] ^ (t << S);
        }
        base += 2 * S;
    }
}

/// Stage `S` of [`transpose_narrow`].
#[inline(always)]
fn narrow_stage<L: Lane, const W: usize, const S: usize>(a: &mut [L]) {
    if S >= 8 * L::BYTES {
        return;
    }
    if S >= W {
        // Columns `S..` are zero: row `i + S` moves into the upper columns of row `i`.
        for i in 0..S {
            a[i] = a[i] | (a[i + S] << S);
        }
    } else {
        swap_stage::<L, S>(a, W);
    }
}

/// Transposes the `G x G` bit matrix `a` (`G = 8 * L::BYTES`) whose columns `W..` are
/// zero, for the encoder: rows `0..W` of the result are exact, the other rows are
/// left unspecified (they are zero in the transposition).
///
/// Exchanging an index bit `S >= W` just moves row `i + S` into the empty upper
/// columns of row `i` (rows `S..` are unused afterwards); the `log2(W)` remaining
/// stages only touch rows `0..W`.
#[inline(always)]
fn transpose_narrow<L: Lane, const W: usize>(a: &mut [L]) {
    narrow_stage::<L, W, 32>(a);
    narrow_stage::<L, W, 16>(a);
    narrow_stage::<L, W, 8>(a);
    narrow_stage::<L, W, 4>(a);
    narrow_stage::<L, W, 2>(a);
    narrow_stage::<L, W, 1>(a);
}

/// Stage `S` of [`transpose_short`].
#[inline(always)]
fn short_stage<L: Lane, const W: usize, const S: usize>(a: &mut [L]) {
    if S >= 8 * L::BYTES {
        return;
    }
    if S >= W {
        // Rows `S..` are zero: row `i + S` gets the upper columns of row `i`.
        let m = low_columns::<L, S>();
        for i in 0..S {
            a[i + S] = (a[i] >> S) & m;
            a[i] = a[i] & m;
        }
    } else {
        swap_stage::<L, S>(a, W);
    }
}

/// Transposes the `G x G` bit matrix `a` (`G = 8 * L::BYTES`) whose rows `W..` are
/// zero, for the decoder: the mirror image of [`transpose_narrow`], exact.
#[inline(always)]
fn transpose_short<L: Lane, const W: usize>(a: &mut [L]) {
    short_stage::<L, W, 1>(a);
    short_stage::<L, W, 2>(a);
    short_stage::<L, W, 4>(a);
    short_stage::<L, W, 8>(a);
    short_stage::<L, W, 16>(a);
    short_stage::<L, W, 32>(a);
}

/// The smallest power of two `W` (at most `g`) such that `bits` has no bit `W` or
/// higher set.
#[inline(always)]
fn width(bits: u64, g: usize) -> usize {
    ((64 - bits.leading_zeros()) as usize)
        .next_power_of_two()
        .min(g)
}

/// Portable transposition for the encoder: `header` is the OR of the rows of `a`,
/// only its rows at `header`'s set bits are needed.
#[inline(always)]
fn transpose_encode<L: Lane>(a: &mut L::Block, header: u64) {
    let a = a.as_mut();
    match width(header, a.len()) {
        1 => transpose_narrow::<L, 1>(a),
        2 => transpose_narrow::<L, 2>(a),
        4 => transpose_narrow::<L, 4>(a),
        8 => transpose_narrow::<L, 8>(a),
        16 => transpose_narrow::<L, 16>(a),
        32 => transpose_narrow::<L, 32>(a),
        _ => transpose_narrow::<L, 64>(a),
    }
}

/// Portable transposition for the decoder: `header` has the set bits of the non-zero
/// rows of `a`.
#[inline(always)]
fn transpose_decode<L: Lane>(a: &mut L::Block, header: u64) {
    let a = a.as_mut();
    match width(header, a.len()) {
        1 => transpose_short::<L, 1>(a),
        2 => transpose_short::<L, 2>(a),
        4 => transpose_short::<L, 4>(a),
        8 => transpose_short::<L, 8>(a),
        16 => transpose_short::<L, 16>(a),
        32 => transpose_short::<L, 32>(a),
        _ => transpose_short::<L, 64>(a),
    }
}
/// Bitwise OR of a group: the group's header.
#[inline(always)]
fn or_all<L: Lane>(block: &L::Block) -> u64 {
    block.as_ref().iter().fold(0, |acc, &w| acc | w.as_u64())
}

/// The encoder's group loop, with `transpose` transposing one group in place.
#[inline(always)]
fn encode_groups<T: Word, L: Lane, F: FnMut(&mut L::Block, u64)>(
    values: &[T],
    out: &mut Vec<u8>,
    mut transpose: F,
) {
    let g = 8 * L::BYTES;
    let groups = values.len().div_ceil(g);
    out.reserve(groups * (g + 1) * L::BYTES);
    let mut buf = L::ZERO_BUF;
    let mut chunks = values.chunks_exact(g);
    for chunk in &mut chunks {
        let mut block = L::ZERO_BLOCK;
        for (d, s) in block.as_mut().iter_mut().zip(chunk) {
            *d = L::of_u64(s.to_u64());
        }
        encode_group::<L, F>(&mut block, &mut buf, out, &mut transpose);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut block = L::ZERO_BLOCK;
        for (d, s) in block.as_mut().iter_mut().zip(rest) {
            *d = L::of_u64(s.to_u64());
        }
        encode_group::<L, F>(&mut block, &mut buf, out, &mut transpose);
    }
}

/// Appends the coding of one (padded) group, using `buf` as scratch.
#[inline(always)]
fn encode_group<L: Lane, F: FnMut(&mut L::Block, u64)>(
    block: &mut L::Block,
    buf: &mut L::Buf,
    out: &mut Vec<u8>,
    transpose: &mut F,
) {
    let header = or_all::<L>(block);
    if header == 0 {
        out.extend_from_slice(&L::ZERO_BUF.as_ref()[..L::BYTES]);
        return;
    }
    transpose(block, header);
    let buf = buf.as_mut();
    L::of_u64(header).put(buf);
    let mut pos = L::BYTES;
    let planes = block.as_ref();
    let mut bits = header;
    while bits != 0 {
        let p = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        planes[p].put(&mut buf[pos..]);
        pos += L::BYTES;
    }
    // A constant-size copy (no `memcpy` call), then drop what was not written.
    let start = out.len();
    out.extend_from_slice(buf);
    out.truncate(start + pos);
}

/// The decoder's group loop from byte `start` of `input` on, with `transpose`
/// transposing one group in place (given the group's header). Checks that the groups
/// end exactly at the end of `input`.
#[inline(always)]
fn decode_groups<T: Word, L: Lane, F: FnMut(&mut L::Block, u64)>(
    input: &[u8],
    start: usize,
    out: &mut [T],
    mut transpose: F,
) -> Result<(), StreamError> {
    let g = 8 * L::BYTES;
    let w = L::BYTES;
    let mut pos = start;
    // Set when a header bit announces a plane word that is zero.
    let mut zero_plane = false;
    let mut chunks = out.chunks_mut(g);
    for chunk in &mut chunks {
        let Some(head) = input.get(pos..pos + w) else {
            return Err(truncated(pos));
        };
        let header = L::get(head).as_u64();
        pos += w;
        if header == 0 {
            chunk.fill(T::from_u64(0));
            continue;
        }
        let k = header.count_ones() as usize;
        let Some(body) = input.get(pos..pos + k * w) else {
            return Err(truncated(pos));
        };
        pos += k * w;
        let mut block = L::ZERO_BLOCK;
        let planes = block.as_mut();
        let mut bits = header;
        for word in body.chunks_exact(w) {
            let p = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let v = L::get(word);
            zero_plane |= v == L::ZERO;
            planes[p] = v;
        }
        if chunk.len() < g {
            let used = planes.iter().fold(0, |acc, v| acc | v.as_u64());
            if used >> chunk.len() != 0 {
                return Err(StreamError::NonzeroPadding(
                    "bitplane: padding of the last group is not zero",
                ));
            }
        }
        transpose(&mut block, header);
        for (d, s) in chunk.iter_mut().zip(block.as_ref()) {
            *d = T::from_u64(s.as_u64());
        }
    }
    if zero_plane {
        return Err(zero_plane_error());
    }
    if pos != input.len() {
        return Err(StreamError::TrailingGroupBytes {
            extra: input.len() - pos,
        });
    }
    Ok(())
}

/// The error for an input that ends before the group at byte `pos` does.
#[cold]
fn truncated(pos: usize) -> StreamError {
    StreamError::GroupTruncated { pos }
}

/// The error for a header bit whose plane word is zero.
#[cold]
fn zero_plane_error() -> StreamError {
    StreamError::NonCanonical("bitplane: a header announces a zero plane word")
}

/// `encoded_len` for lane type `L`: one header plus one word per set header bit.
#[inline(always)]
fn encoded_len_with<T: Word, L: Lane>(values: &[T]) -> usize {
    let g = 8 * L::BYTES;
    let planes: usize = values
        .chunks(g)
        .map(|c| c.iter().fold(0, |acc, v| acc | v.to_u64()).count_ones() as usize)
        .sum();
    (values.len().div_ceil(g) + planes) * L::BYTES
}

/// AVX2 transpositions (ndzip's byte shuffle + `vpmovmskb`) and the group loops
/// compiled with AVX2 enabled.
///
/// A 32 x 32 bit matrix (rows `a[i]`) is transposed by first gathering byte `b` of
/// every row into vector `v[b]` (byte `i` of `v[b]` is byte `b` of row `i`) with
/// in-lane byte shuffles and unpacks, then reading output row `8b + q` as the sign
/// bits (`vpmovmskb`) of `v[b]` shifted left by `7 - q`. A 64 x 64 matrix is done as
/// two halves of 32 rows, each giving the low or high 32 bits of every output row.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;
    use std::ptr::write_unaligned;

    use super::{decode_groups, StreamError, Word};

    /// Per 128-bit lane: four little-endian `u32` rows to dwords holding byte 0, 1,
    /// 2, 3 of the four rows.
    const BYTES_OF_4X32: [i8; 16] = [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15];
    /// Per 128-bit lane: two little-endian `u64` rows to 16-bit words holding byte 0,
    /// 1, ..., 7 of the two rows.
    const BYTES_OF_2X64: [i8; 16] = [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15];

    /// Whether [`encode`] and [`decode`] handle `T` (32- and 64-bit words) on this CPU.
    #[inline]
    pub(super) fn handles<T: Word>() -> bool {
        (T::BITS == 32 || T::BITS == 64) && crate::isa::avx2_kernels()
    }

    /// Loads 32 `u32` rows from `p`: vector `r` holds rows `4r..4r + 4` in its low
    /// lane and rows `16 + 4r..16 + 4r + 4` in its high lane, the order
    /// [`bytes32`] needs.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and `p` must be valid for reading 128 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn load32(p: *const u8) -> [__m256i; 4] {
        // SAFETY: the reads cover bytes `16r..16r + 16` and `64 + 16r..64 + 16r + 16`
        // of `p` for `r < 4`, inside the 128 bytes the caller vouches for.
        unsafe {
            let half = |r: usize| _mm_loadu_si128(p.add(16 * r) as *const __m128i);
            [0, 1, 2, 3]
                .map(|r| _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(half(r)), half(4 + r)))
        }
    }

    /// The byte vectors of 32 rows loaded by [`load32`]: byte `i` of vector `b` is
    /// byte `b` of row `i`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn bytes32(r: [__m256i; 4]) -> [__m256i; 4] {
        // SAFETY: register-only AVX2 operations (AVX2 is the caller's contract), and
        // a 16-byte read of a 16-byte constant.
        unsafe {
            let shuf = _mm256_broadcastsi128_si256(_mm_loadu_si128(
                BYTES_OF_4X32.as_ptr() as *const __m128i
            ));
            // Dword d of each lane: byte d of the lane's four rows.
            let r = r.map(|x| _mm256_shuffle_epi8(x, shuf));
            // 4 x 4 dword transposition within each lane.
            let u0 = _mm256_unpacklo_epi32(r[0], r[1]);
            let u1 = _mm256_unpackhi_epi32(r[0], r[1]);
            let u2 = _mm256_unpacklo_epi32(r[2], r[3]);
            let u3 = _mm256_unpackhi_epi32(r[2], r[3]);
            [
                _mm256_unpacklo_epi64(u0, u2),
                _mm256_unpackhi_epi64(u0, u2),
                _mm256_unpacklo_epi64(u1, u3),
                _mm256_unpackhi_epi64(u1, u3),
            ]
        }
    }

    /// Loads 32 `u64` rows from `p`: vector `r` holds rows `2r, 2r + 1` in its low
    /// lane and rows `16 + 2r, 16 + 2r + 1` in its high lane, the order [`bytes64`]
    /// needs.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and `p` must be valid for reading 256 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn load64(p: *const u8) -> [__m256i; 8] {
        // SAFETY: the reads cover bytes `16r..16r + 16` and `128 + 16r..128 + 16r + 16`
        // of `p` for `r < 8`, inside the 256 bytes the caller vouches for.
        unsafe {
            let half = |r: usize| _mm_loadu_si128(p.add(16 * r) as *const __m128i);
            [0, 1, 2, 3, 4, 5, 6, 7]
                .map(|r| _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(half(r)), half(8 + r)))
        }
    }

    /// The byte vectors of 32 rows loaded by [`load64`]: byte `i` of vector `b` is
    /// byte `b` of row `i`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn bytes64(r: [__m256i; 8]) -> [__m256i; 8] {
        // SAFETY: register-only AVX2 operations (AVX2 is the caller's contract), and
        // a 16-byte read of a 16-byte constant.
        unsafe {
            let shuf = _mm256_broadcastsi128_si256(_mm_loadu_si128(
                BYTES_OF_2X64.as_ptr() as *const __m128i
            ));
            // 16-bit word w of each lane: byte w of the lane's two rows.
            let r = r.map(|x| _mm256_shuffle_epi8(x, shuf));
            // 8 x 8 transposition of 16-bit words within each lane.
            let a0 = _mm256_unpacklo_epi16(r[0], r[1]);
            let a1 = _mm256_unpackhi_epi16(r[0], r[1]);
            let a2 = _mm256_unpacklo_epi16(r[2], r[3]);
            let a3 = _mm256_unpackhi_epi16(r[2], r[3]);
            let a4 = _mm256_unpacklo_epi16(r[4], r[5]);
            let a5 = _mm256_unpackhi_epi16(r[4], r[5]);
            let a6 = _mm256_unpacklo_epi16(r[6], r[7]);
            let a7 = _mm256_unpackhi_epi16(r[6], r[7]);
            let b0 = _mm256_unpacklo_epi32(a0, a2);
            let b1 = _mm256_unpackhi_epi32(a0, a2);
            let b2 = _mm256_unpacklo_epi32(a1, a3);
            let b3 = _mm256_unpackhi_epi32(a1, a3);
            let b4 = _mm256_unpacklo_epi32(a4, a6);
            let b5 = _mm256_unpackhi_epi32(a4, a6);
            let b6 = _mm256_unpacklo_epi32(a5, a7);
            let b7 = _mm256_unpackhi_epi32(a5, a7);
            [
                _mm256_unpacklo_epi64(b0, b4),
                _mm256_unpackhi_epi64(b0, b4),
                _mm256_unpacklo_epi64(b1, b5),
                _mm256_unpackhi_epi64(b1, b5),
                _mm256_unpacklo_epi64(b2, b6),
                _mm256_unpackhi_epi64(b2, b6),
                _mm256_unpacklo_epi64(b3, b7),
                _mm256_unpackhi_epi64(b3, b7),
            ]
        }
    }

    /// Bit `q` (a literal, `0..8`) of every byte of `v`, as a 32-bit mask.
    macro_rules! bit_of_bytes {
        ($v:expr, $q:literal) => {
            _mm256_movemask_epi8(_mm256_slli_epi16::<{ 7 - $q }>($v)) as u32
        };
    }

    /// Calls `$emit!(q)` for `q` = 0 to 7, in order.
    macro_rules! for_each_bit {
        ($emit:ident) => {
            $emit!(0);
            $emit!(1);
            $emit!(2);
            $emit!(3);
            $emit!(4);
            $emit!(5);
            $emit!(6);
            $emit!(7);
        };
    }

    /// Transposes a 32 x 32 bit matrix (row `i` is `a[i]`, column `j` its bit `j`).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn transpose32(a: &mut [u32; 32]) {
        // SAFETY: AVX2 is the caller's contract; `load32` reads the 128 bytes of `a`,
        // all before the first write to `a`.
        unsafe {
            let v = bytes32(load32(a.as_ptr() as *const u8));
            for (b, &x) in v.iter().enumerate() {
                let rows = &mut a[8 * b..8 * b + 8];
                macro_rules! row {
                    ($q:literal) => {
                        rows[$q] = bit_of_bytes!(x, $q);
                    };
                }
                for_each_bit!(row);
            }
        }
    }

    /// Transposes a 64 x 64 bit matrix (row `i` is `a[i]`, column `j` its bit `j`).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn transpose64(a: &mut [u64; 64]) {
        // SAFETY: AVX2 is the caller's contract; the two `load64` read the two halves
        // (256 bytes each) of `a`, all before the first write to `a`.
        unsafe {
            let lo = bytes64(load64(a.as_ptr() as *const u8));
            let hi = bytes64(load64(a[32..].as_ptr() as *const u8));
            for (b, (&x, &y)) in lo.iter().zip(&hi).enumerate() {
                let rows = &mut a[8 * b..8 * b + 8];
                macro_rules! row {
                    ($q:literal) => {
                        rows[$q] =
                            u64::from(bit_of_bytes!(x, $q)) | u64::from(bit_of_bytes!(y, $q)) << 32;
                    };
                }
                for_each_bit!(row);
            }
        }
    }

    /// Appends the coding of the 32 `u32` rows at `p` to `out`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and `p` must be valid for reading 128 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn group32(p: *const u8, out: &mut Vec<u8>) {
        out.reserve(33 * 4);
        // SAFETY: AVX2 and the 128 bytes at `p` are the caller's contract. `out` has
        // room for 33 more words (reserved above); the writes go to byte offsets
        // `pos <= 4 * 32` of its spare capacity (`pos` grows by 4 at most 32 times
        // after the header), and `set_len` covers only bytes written.
        unsafe {
            let rows = load32(p);
            let or = _mm256_or_si256(
                _mm256_or_si256(rows[0], rows[1]),
                _mm256_or_si256(rows[2], rows[3]),
            );
            let dst = out.as_mut_ptr().add(out.len());
            if _mm256_testz_si256(or, or) == 1 {
                write_unaligned(dst as *mut u32, 0);
                out.set_len(out.len() + 4);
                return;
            }
            let or = _mm_or_si128(
                _mm256_castsi256_si128(or),
                _mm256_extracti128_si256::<1>(or),
            );
            let or = _mm_or_si128(or, _mm_shuffle_epi32::<0b0100_1110>(or));
            let or = _mm_or_si128(or, _mm_shuffle_epi32::<0b1011_0001>(or));
            let header = _mm_cvtsi128_si32(or) as u32;
            write_unaligned(dst as *mut u32, header);
            let mut pos = 4;
            let v = bytes32(rows);
            for (b, &x) in v.iter().enumerate() {
                let bits = (header >> (8 * b)) as usize & 0xff;
                if bits == 0 {
                    continue;
                }
                // Every plane is written, the cursor only moves past non-zero ones.
                macro_rules! plane {
                    ($q:literal) => {
                        write_unaligned(dst.add(pos) as *mut u32, bit_of_bytes!(x, $q));
                        pos += 4 * ((bits >> $q) & 1);
                    };
                }
                for_each_bit!(plane);
            }
            out.set_len(out.len() + pos);
        }
    }

    /// Appends the coding of the 64 `u64` rows at `p` to `out`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and `p` must be valid for reading 512 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn group64(p: *const u8, out: &mut Vec<u8>) {
        out.reserve(65 * 8);
        // SAFETY: AVX2 and the 512 bytes at `p` are the caller's contract. `out` has
        // room for 65 more words (reserved above); the writes go to byte offsets
        // `pos <= 8 * 64` of its spare capacity (`pos` grows by 8 at most 64 times
        // after the header), and `set_len` covers only bytes written.
        unsafe {
            let lo = load64(p);
            let hi = load64(p.add(256));
            let mut or = _mm256_or_si256(lo[0], hi[0]);
            for (&x, &y) in lo[1..].iter().zip(&hi[1..]) {
                or = _mm256_or_si256(or, _mm256_or_si256(x, y));
            }
            let dst = out.as_mut_ptr().add(out.len());
            if _mm256_testz_si256(or, or) == 1 {
                write_unaligned(dst as *mut u64, 0);
                out.set_len(out.len() + 8);
                return;
            }
            let or = _mm_or_si128(
                _mm256_castsi256_si128(or),
                _mm256_extracti128_si256::<1>(or),
            );
            let or = _mm_or_si128(or, _mm_unpackhi_epi64(or, or));
            let header = _mm_cvtsi128_si64(or) as u64;
            write_unaligned(dst as *mut u64, header);
            let mut pos = 8;
            let lo = bytes64(lo);
            let hi = bytes64(hi);
            for (b, (&x, &y)) in lo.iter().zip(&hi).enumerate() {
                let bits = (header >> (8 * b)) as usize & 0xff;
                if bits == 0 {
                    continue;
                }
                // Every plane is written, the cursor only moves past non-zero ones.
                macro_rules! plane {
                    ($q:literal) => {
                        let w =
                            u64::from(bit_of_bytes!(x, $q)) | u64::from(bit_of_bytes!(y, $q)) << 32;
                        write_unaligned(dst.add(pos) as *mut u64, w);
                        pos += 8 * ((bits >> $q) & 1);
                    };
                }
                for_each_bit!(plane);
            }
            out.set_len(out.len() + pos);
        }
    }

    /// The encoder's group loop for `G`-word groups of `W` words, `group` coding the
    /// `G` words at a pointer.
    ///
    /// # Safety
    ///
    /// `group` must be safe to call with a pointer to `G` words of type `W`.
    #[inline(always)]
    unsafe fn encode_groups<T: Word, W: Word, const G: usize>(
        values: &[T],
        out: &mut Vec<u8>,
        group: unsafe fn(*const u8, &mut Vec<u8>),
    ) {
        out.reserve(values.len().div_ceil(G) * (G + 1) * W::BYTES);
        // Each group is copied to `block`, even when `T` is `W`: measured as fast as
        // reading `values` in place.
        let mut block = [W::from_u64(0); G];
        let mut chunks = values.chunks_exact(G);
        for chunk in &mut chunks {
            for (d, s) in block.iter_mut().zip(chunk) {
                *d = W::from_u64(s.to_u64());
            }
            // SAFETY: `block` holds `G` words of type `W`.
            unsafe { group(block.as_ptr() as *const u8, out) };
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut block = [W::from_u64(0); G];
            for (d, s) in block.iter_mut().zip(rest) {
                *d = W::from_u64(s.to_u64());
            }
            // SAFETY: `block` holds `G` words of type `W`.
            unsafe { group(block.as_ptr() as *const u8, out) };
        }
    }

    /// [`super::encode`] for 32- and 64-bit words, other widths go to the scalar path.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn encode<T: Word>(values: &[T], out: &mut Vec<u8>) {
        // SAFETY: AVX2 is the caller's contract, and `group32` (`group64`) gets
        // pointers to 32 `u32` (64 `u64`), i.e. 128 (512) bytes.
        unsafe {
            match T::BITS {
                32 => encode_groups::<T, u32, 32>(values, out, group32),
                64 => encode_groups::<T, u64, 64>(values, out, group64),
                _ => super::encode_scalar(values, out),
            }
        }
    }

    /// `RANK8[h]` byte `q`: the number of bits of `h` below bit `q` if bit `q` of `h`
    /// is set, else 0x80.
    static RANK8: [u64; 256] = {
        let mut table = [0u64; 256];
        let mut h = 0;
        while h < 256 {
            let mut q = 0;
            let mut rank = 0;
            while q < 8 {
                let byte = if (h >> q) & 1 == 1 {
                    rank += 1;
                    rank - 1
                } else {
                    0x80
                };
                table[h] |= (byte as u64) << (8 * q);
                q += 1;
            }
            h += 1;
        }
        table
    };

    /// Decodes the full groups of 32-bit words: [`decode`]'s main loop. The plane words
    /// are not scattered into a block: their byte vectors (as for a transposition) are
    /// expanded to the planes' positions with byte shuffles driven by the header.
    /// Returns the input position after the full groups, or an error.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn decode32_full<T: Word>(input: &[u8], out: &mut [T]) -> Result<usize, StreamError> {
        let mut pos = 0;
        // Bit `j` set: plane word `j` of some group is zero.
        let mut zero_planes = 0;
        let mut block = [0u32; 32];
        let mut padded = [0u8; 128];
        for chunk in out.chunks_exact_mut(32) {
            let Some(head) = input.get(pos..pos + 4) else {
                return Err(super::truncated(pos));
            };
            let header = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
            if header == 0 {
                chunk.fill(T::from_u64(0));
                pos += 4;
                continue;
            }
            let k = header.count_ones() as usize;
            let Some(rest) = input.get(pos + 4..) else {
                return Err(super::truncated(pos));
            };
            if rest.len() < 4 * k {
                return Err(super::truncated(pos));
            }
            // The k plane words, and whatever follows them up to 128 bytes.
            let src = if rest.len() >= 128 {
                rest.as_ptr()
            } else {
                padded[..rest.len()].copy_from_slice(rest);
                padded.as_ptr()
            };
            // SAFETY: AVX2 is this function's contract; `src` points to 128 readable
            // bytes (`rest` has 128 or more, `padded` has 128).
            unsafe {
                let u = bytes32(load32(src));
                // Zero planes among the k plane words.
                let or = _mm256_or_si256(_mm256_or_si256(u[0], u[1]), _mm256_or_si256(u[2], u[3]));
                let zeros = _mm256_movemask_epi8(_mm256_cmpeq_epi8(or, _mm256_setzero_si256()));
                zero_planes |= zeros as u32 & (u32::MAX >> (32 - k));
                // Byte 8c + q of `idx`: index of plane 8c + q among the plane words,
                // or bit 7 set when plane 8c + q is zero.
                let below = |c: u32| (header & ((1 << (8 * c)) - 1)).count_ones() as i64;
                let byte = |c: u32| RANK8[(header >> (8 * c)) as usize & 0xff] as i64;
                let ones = 0x0101_0101_0101_0101;
                let idx = _mm256_add_epi8(
                    _mm256_set_epi64x(byte(3), byte(2), byte(1), byte(0)),
                    _mm256_set_epi64x(below(3) * ones, below(2) * ones, below(1) * ones, 0),
                );
                // Index bit 4 picks the low (clear) or high (set) lane of a source.
                let bit4 = _mm256_set1_epi8(0x10);
                let high = _mm256_cmpeq_epi8(_mm256_and_si256(idx, bit4), bit4);
                let idx_lo = _mm256_or_si256(idx, high);
                let idx_hi =
                    _mm256_or_si256(idx, _mm256_andnot_si256(high, _mm256_set1_epi8(-128)));
                for (b, &x) in u.iter().enumerate() {
                    let lo = _mm256_permute2x128_si256::<0x00>(x, x);
                    let hi = _mm256_permute2x128_si256::<0x11>(x, x);
                    let v = _mm256_or_si256(
                        _mm256_shuffle_epi8(lo, idx_lo),
                        _mm256_shuffle_epi8(hi, idx_hi),
                    );
                    let rows = &mut block[8 * b..8 * b + 8];
                    macro_rules! row {
                        ($q:literal) => {
                            rows[$q] = bit_of_bytes!(v, $q);
                        };
                    }
                    for_each_bit!(row);
                }
            }
            for (d, &s) in chunk.iter_mut().zip(&block) {
                *d = T::from_u64(s.into());
            }
            pos += 4 + 4 * k;
        }
        if zero_planes != 0 {
            return Err(super::zero_plane_error());
        }
        Ok(pos)
    }

    /// [`super::decode`] for 32- and 64-bit words, other widths go to the scalar path.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn decode<T: Word>(input: &[u8], out: &mut [T]) -> Result<(), StreamError> {
        match T::BITS {
            32 => {
                // SAFETY: AVX2 is this function's contract.
                let pos = unsafe { decode32_full(input, out)? };
                let full = out.len() / 32 * 32;
                // The last, partial group (and the check for trailing bytes).
                decode_groups::<T, u32, _>(input, pos, &mut out[full..], |block, _| {
                    // SAFETY: this closure runs inside an AVX2 function.
                    unsafe { transpose32(block) }
                })
            }
            64 => decode_groups::<T, u64, _>(input, 0, out, |block, _| {
                // SAFETY: this closure runs inside an AVX2 function.
                unsafe { transpose64(block) }
            }),
            _ => super::decode_scalar(input, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    type Encoder<T> = fn(&[T], &mut Vec<u8>);
    type Decoder<T> = fn(&[u8], &mut [T]) -> Result<(), StreamError>;

    /// Every implementation of the coder available on this machine, with a name.
    fn paths<T: Word>() -> Vec<(&'static str, Encoder<T>, Decoder<T>)> {
        #[allow(unused_mut)]
        let mut paths: Vec<(&'static str, Encoder<T>, Decoder<T>)> = vec![
            ("public", encode::<T>, decode::<T>),
            ("scalar", encode_scalar::<T>, decode_scalar::<T>),
        ];
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx2_kernels() {
            fn enc<T: Word>(values: &[T], out: &mut Vec<u8>) {
                // SAFETY: AVX2 was detected before this function was listed.
                unsafe { avx2::encode(values, out) }
            }
            fn dec<T: Word>(input: &[u8], out: &mut [T]) -> Result<(), StreamError> {
                // SAFETY: AVX2 was detected before this function was listed.
                unsafe { avx2::decode(input, out) }
            }
            paths.push(("avx2", enc::<T>, dec::<T>));
        }
        paths
    }

    /// Encodes `values` with every path (appending to a non-empty buffer), checks that
    /// all paths agree byte for byte, that `encoded_len` is exact and that every path
    /// decodes every coding back to `values`. Returns the coding.
    fn round_trip<T: Word>(values: &[T]) -> Vec<u8> {
        let prefix = [0xa5u8, 0x5a, 0x01];
        let mut reference: Option<Vec<u8>> = None;
        for (name, enc, _) in paths::<T>() {
            let mut out = prefix.to_vec();
            enc(values, &mut out);
            assert_eq!(&out[..3], &prefix, "{name}: prefix clobbered");
            let coded = out[3..].to_vec();
            assert_eq!(coded.len(), encoded_len(values), "{name}: encoded_len");
            match &reference {
                None => reference = Some(coded),
                Some(r) => assert_eq!(&coded, r, "{name} differs from public ({})", T::BITS),
            }
        }
        let coded = reference.unwrap();
        for (name, _, dec) in paths::<T>() {
            let mut back = vec![T::from_u64(0x5a5a_5a5a_5a5a_5a5a); values.len()];
            dec(&coded, &mut back).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                back == values,
                "{name}: round trip of {} values",
                values.len()
            );
        }
        coded
    }

    /// Random words with `bits` significant bits at most (`bits` = 0 to 64).
    fn random_words<T: Word>(rng: &mut SmallRng, n: usize, bits: u32) -> Vec<T> {
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        (0..n)
            .map(|_| T::from_u64(rng.gen::<u64>() & mask))
            .collect()
    }

    /// Runs `f` for each word type.
    macro_rules! for_each_word {
        ($f:ident) => {
            $f::<u8>();
            $f::<u16>();
            $f::<u32>();
            $f::<u64>();
        };
    }

    #[test]
    fn empty_input_is_empty_coding() {
        fn check<T: Word>() {
            assert!(round_trip::<T>(&[]).is_empty());
            assert_eq!(encoded_len::<T>(&[]), 0);
            let mut none: [T; 0] = [];
            assert!(decode(&[0], &mut none).is_err());
        }
        for_each_word!(check);
    }

    #[test]
    fn round_trips_lengths_1_to_200() {
        fn check<T: Word>() {
            let mut rng = SmallRng::seed_from_u64(1 + u64::from(T::BITS));
            for n in 1..=200 {
                let bits = rng.gen_range(0..=T::BITS);
                round_trip(&random_words::<T>(&mut rng, n, bits));
                round_trip(&random_words::<T>(&mut rng, n, T::BITS));
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn round_trips_all_zeros_and_all_ones() {
        fn check<T: Word>() {
            let g = T::BITS as usize;
            for n in [1, g - 1, g, g + 1, 10 * g, 10 * g + 3] {
                let zeros = vec![T::from_u64(0); n];
                let coded = round_trip(&zeros);
                assert_eq!(coded.len(), n.div_ceil(g) * T::BYTES);
                assert!(coded.iter().all(|&b| b == 0));
                let ones = vec![T::ONES; n];
                let coded = round_trip(&ones);
                assert_eq!(coded.len(), n.div_ceil(g) * (g + 1) * T::BYTES);
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn round_trips_random_values_of_each_bit_width() {
        fn check<T: Word>() {
            let mut rng = SmallRng::seed_from_u64(7 * u64::from(T::BITS));
            let g = T::BITS as usize;
            for bits in 0..=T::BITS {
                let values = random_words::<T>(&mut rng, 37 * g + 5, bits);
                let coded = round_trip(&values);
                // Random data of `bits` bits sets all of the low `bits` planes.
                let groups = values.len().div_ceil(g);
                assert!(coded.len() <= groups * (1 + bits as usize) * T::BYTES);
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn round_trips_mixed_groups() {
        fn check<T: Word>() {
            let mut rng = SmallRng::seed_from_u64(99 + u64::from(T::BITS));
            let g = T::BITS as usize;
            // Zero groups, sparse groups and dense groups next to each other.
            let mut values = Vec::new();
            for _ in 0..50 {
                let bits = [0, 1, T::BITS / 2, T::BITS][rng.gen_range(0..4)];
                values.extend(random_words::<T>(&mut rng, g, bits));
                if rng.gen_bool(0.3) {
                    let i = values.len() - 1 - rng.gen_range(0..g);
                    values[i] = T::from_u64(1 << rng.gen_range(0..T::BITS));
                }
            }
            for n in [values.len(), values.len() - 1, values.len() - g / 2] {
                round_trip(&values[..n]);
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn single_bit_patterns() {
        fn check<T: Word>() {
            let g = T::BITS as usize;
            let w = T::BYTES;
            for i in 0..g {
                for bit in 0..T::BITS {
                    let mut values = vec![T::from_u64(0); g];
                    values[i] = T::from_u64(1 << bit);
                    let coded = round_trip(&values);
                    let mut expected = vec![0u8; 2 * w];
                    T::from_u64(1 << bit).store(&mut expected);
                    T::from_u64(1 << i).store(&mut expected[w..]);
                    assert_eq!(coded, expected, "word {i}, bit {bit}");
                    // The same word as the last one of a short group.
                    assert_eq!(round_trip(&values[..=i]), expected);
                }
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn exact_sizes_and_bytes() {
        let mut out = Vec::new();
        encode(&[0u32; 32], &mut out);
        assert_eq!(out, [0, 0, 0, 0]);
        let mut one = [0u32; 32];
        one[0] = 1;
        assert_eq!(round_trip(&one), [1, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(encoded_len(&one), 8);
        assert_eq!(round_trip(&[1u32]), [1, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(round_trip(&[0u64; 64]), [0; 8]);
        assert_eq!(round_trip(&[0u64; 65]), [0; 16]);
        // Planes in increasing order: 3 = 0b11 (planes 0, 1), values 1, 2, 3.
        assert_eq!(round_trip(&[1u8, 2, 3]), [0b11, 0b101, 0b110]);
        assert_eq!(round_trip(&[0x8000u16, 0x0001]), [1, 0x80, 2, 0, 1, 0]);
        assert_eq!(encoded_len(&[u32::MAX; 33]), 2 * (1 + 32) * 4);
        // 12-bit values: 12 planes per group.
        let twelve = vec![0xfffu32; 64];
        assert_eq!(round_trip(&twelve).len(), 2 * 13 * 4);
    }

    /// The transposition of the `g x g` bit matrix with rows `rows`, bit by bit.
    fn naive_transpose(rows: &[u64], g: usize) -> Vec<u64> {
        (0..g)
            .map(|j| (0..g).fold(0, |acc, i| acc | ((rows[i] >> j) & 1) << i))
            .collect()
    }

    #[test]
    fn transpositions_are_transpositions() {
        fn check<L: Lane>(rng: &mut SmallRng) {
            let g = 8 * L::BYTES;
            for _ in 0..50 {
                for w in (0..=g.trailing_zeros()).map(|k| 1usize << k) {
                    let low = if w >= 64 { u64::MAX } else { (1 << w) - 1 };
                    // Encoder: columns `w..` zero, rows `0..w` of the result checked.
                    let mut a = L::ZERO_BLOCK;
                    a.as_mut()
                        .iter_mut()
                        .for_each(|x| *x = L::of_u64(rng.gen::<u64>() & low));
                    let rows: Vec<u64> = a.as_ref().iter().map(|x| x.as_u64()).collect();
                    let header = rows.iter().fold(0, |acc, x| acc | x);
                    transpose_encode::<L>(&mut a, header);
                    let got: Vec<u64> = a.as_ref().iter().map(|x| x.as_u64()).collect();
                    assert_eq!(got[..w], naive_transpose(&rows, g)[..w], "narrow {g} {w}");
                    // Decoder: rows `w..` zero, the whole result checked.
                    let mut a = L::ZERO_BLOCK;
                    a.as_mut()[..w]
                        .iter_mut()
                        .for_each(|x| *x = L::of_u64(rng.gen()));
                    let rows: Vec<u64> = a.as_ref().iter().map(|x| x.as_u64()).collect();
                    transpose_decode::<L>(&mut a, low);
                    let got: Vec<u64> = a.as_ref().iter().map(|x| x.as_u64()).collect();
                    assert_eq!(got, naive_transpose(&rows, g), "short {g} {w}");
                }
            }
        }
        let mut rng = SmallRng::seed_from_u64(3);
        check::<u8>(&mut rng);
        check::<u16>(&mut rng);
        check::<u32>(&mut rng);
        check::<u64>(&mut rng);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_transpositions_are_transpositions() {
        if !crate::isa::avx2_kernels() {
            return;
        }
        let mut rng = SmallRng::seed_from_u64(4);
        for _ in 0..100 {
            let mut a: [u32; 32] = rng.gen();
            let rows: Vec<u64> = a.iter().map(|&x| x.into()).collect();
            // SAFETY: AVX2 was detected above.
            unsafe { avx2::transpose32(&mut a) };
            let got: Vec<u64> = a.iter().map(|&x| x.into()).collect();
            assert_eq!(got, naive_transpose(&rows, 32));
            let mut a = [0u64; 64];
            a.iter_mut().for_each(|x| *x = rng.gen());
            let rows = a.to_vec();
            // SAFETY: AVX2 was detected above.
            unsafe { avx2::transpose64(&mut a) };
            assert_eq!(a.to_vec(), naive_transpose(&rows, 64));
        }
    }

    /// A few codings of each word type to corrupt.
    fn samples<T: Word>() -> Vec<(Vec<T>, Vec<u8>)> {
        let mut rng = SmallRng::seed_from_u64(11 * u64::from(T::BITS));
        let g = T::BITS as usize;
        [1, g - 1, g, g + 1, 3 * g + 2]
            .into_iter()
            .map(|n| {
                let mut values = random_words::<T>(&mut rng, n, T::BITS / 2 + 1);
                values[n / 2] = T::from_u64(0);
                let coded = round_trip(&values);
                (values, coded)
            })
            .collect()
    }

    #[test]
    fn every_truncation_is_an_error() {
        fn check<T: Word>() {
            for (values, coded) in samples::<T>() {
                for (name, _, dec) in paths::<T>() {
                    let mut out = vec![T::from_u64(0); values.len()];
                    for len in 0..coded.len() {
                        assert!(dec(&coded[..len], &mut out).is_err(), "{name}: {len}");
                    }
                }
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn trailing_bytes_are_an_error() {
        fn check<T: Word>() {
            for (values, mut coded) in samples::<T>() {
                coded.push(0);
                for (name, _, dec) in paths::<T>() {
                    let mut out = vec![T::from_u64(0); values.len()];
                    assert!(dec(&coded, &mut out).is_err(), "{name}");
                    // Asking for fewer values leaves bytes over, too.
                    let mut fewer = vec![T::from_u64(0); values.len() - 1];
                    assert!(
                        dec(&coded[..coded.len() - 1], &mut fewer).is_err(),
                        "{name}"
                    );
                }
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn non_canonical_codings_are_errors() {
        fn check<T: Word>() {
            let w = T::BYTES;
            for (name, _, dec) in paths::<T>() {
                // Header announces plane 0, whose word is zero.
                let mut coded = vec![0u8; 2 * w];
                coded[0] = 1;
                let mut out = vec![T::from_u64(0); T::BITS as usize];
                assert!(dec(&coded, &mut out).is_err(), "{name}: zero plane");
                // One value, but plane 0 has a bit set for the (padding) second word.
                coded[w] = 0b10;
                assert!(dec(&coded, &mut out[..1]).is_err(), "{name}: padding");
                assert!(dec(&coded, &mut out[..2]).is_ok(), "{name}: no padding");
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn random_byte_flips_never_panic() {
        fn check<T: Word>() {
            let mut rng = SmallRng::seed_from_u64(5 + u64::from(T::BITS));
            for (values, coded) in samples::<T>() {
                for (name, enc, dec) in paths::<T>() {
                    for _ in 0..300 {
                        let mut bad = coded.clone();
                        for _ in 0..rng.gen_range(1..4) {
                            let i = rng.gen_range(0..bad.len());
                            bad[i] ^= 1 << rng.gen_range(0..8);
                        }
                        let n = match rng.gen_range(0..4) {
                            0 => values.len() - 1,
                            1 => values.len() + 1,
                            _ => values.len(),
                        };
                        let mut out = vec![T::from_u64(0); n];
                        // Whatever decodes must be the unique coding of what it yields.
                        if dec(&bad, &mut out).is_ok() {
                            let mut again = Vec::new();
                            enc(&out, &mut again);
                            assert_eq!(again, bad, "{name}");
                        }
                    }
                }
            }
        }
        for_each_word!(check);
    }

    #[test]
    fn random_bytes_never_panic() {
        fn check<T: Word>() {
            let mut rng = SmallRng::seed_from_u64(17 + u64::from(T::BITS));
            for _ in 0..2000 {
                let len = rng.gen_range(0..4 * T::BITS as usize);
                let input: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                let mut out = vec![T::from_u64(0); rng.gen_range(0..3 * T::BITS as usize)];
                for (_, _, dec) in paths::<T>() {
                    let _ = dec(&input, &mut out);
                }
            }
        }
        for_each_word!(check);
    }
}
