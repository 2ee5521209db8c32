//! The strided prefix sum that restores additive residuals predicted from the value a
//! fixed stride back, in blocks of a vector register's words.

use crate::word::Word;

/// Values per block of [`strided_prefix_sum`]: a 512-bit register of 32-bit words.
pub const SCAN_LANES: usize = 16;

/// Adds `seg[i - S]` to each `seg[i]` from `S` on, in order (wrapping): each value
/// becomes the sum of itself and every `S`-th value before it. Blocks of [`SCAN_LANES`]
/// values are summed in registers by doubling shifts, then the sums of the blocks before
/// (the carry) are added. `S` divides the lanes.
#[inline(always)]
pub fn strided_prefix_sum<T: Word, const S: usize>(seg: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<u32>() {
        use crate::isa::{level, Level};
        // SAFETY: `T` is `u32` (the same type id), so the slice is one of `u32`s.
        let words =
            unsafe { std::slice::from_raw_parts_mut(seg.as_mut_ptr().cast::<u32>(), seg.len()) };
        match level() {
            // SAFETY: the CPU has AVX-512 F (the level's features).
            Level::Avx512 => return unsafe { x86::strided_prefix_sum::<S>(words) },
            // SAFETY: the CPU has AVX2 (the level's features).
            Level::Avx2 => return unsafe { x86::strided_prefix_sum_avx2::<S>(words) },
            Level::Portable => {}
        }
    }
    // The sums of the last block's final `S` values, repeated across the lanes.
    let mut carry = [T::default(); SCAN_LANES];
    let mut blocks = seg.chunks_exact_mut(SCAN_LANES);
    for block in &mut blocks {
        let mut x: [T; SCAN_LANES] = std::array::from_fn(|i| block[i]);
        let mut shift = S;
        while shift < SCAN_LANES {
            let before = x;
            for i in shift..SCAN_LANES {
                x[i] = x[i].wrapping_add(before[i - shift]);
            }
            shift *= 2;
        }
        // The block's own sums, repeated: computed before the carry is added, so the
        // only wait from one block to the next is the carry's one addition.
        let totals: [T; SCAN_LANES] = std::array::from_fn(|i| x[SCAN_LANES - S + i % S]);
        for (v, &c) in x.iter_mut().zip(&carry) {
            *v = v.wrapping_add(c);
        }
        block.copy_from_slice(&x);
        for (c, &t) in carry.iter_mut().zip(&totals) {
            *c = c.wrapping_add(t);
        }
    }
    sum_tail::<T, S>(blocks.into_remainder(), &carry);
}

/// The values after the last whole block, summed one after another: the first `S` take
/// `carry`'s sums of everything before them.
#[inline(always)]
fn sum_tail<T: Word, const S: usize>(tail: &mut [T], carry: &[T; SCAN_LANES]) {
    for i in 0..tail.len() {
        let left = if i >= S { tail[i - S] } else { carry[i] };
        tail[i] = tail[i].wrapping_add(left);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::SCAN_LANES;

    /// [`super::strided_prefix_sum`] of 32-bit words, a register of 16 at a time: the
    /// lane shifts and the carry's broadcast are explicit, so the block stays in one
    /// register (the portable loop's array goes through the stack and waits on it).
    #[target_feature(enable = "avx512f")]
    pub(super) fn strided_prefix_sum<const S: usize>(seg: &mut [u32]) {
        let zero = _mm512_setzero_si512();
        // Lane `i` takes the block's lane `16 - S + i % S`: its last `S` sums, repeated.
        let last: [i32; SCAN_LANES] = std::array::from_fn(|i| (SCAN_LANES - S + i % S) as i32);
        // SAFETY: 16 words of 4 bytes, unaligned.
        let last = unsafe { _mm512_loadu_si512(last.as_ptr().cast()) };
        let mut carry = zero;
        let mut blocks = seg.chunks_exact_mut(SCAN_LANES);
        for block in &mut blocks {
            // SAFETY: the block's 16 words.
            let mut x = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
            // Each lane plus the lane `shift` before it (zero below lane `shift`).
            let mut shift = S;
            while shift < SCAN_LANES {
                x = _mm512_add_epi32(x, shifted_up(x, shift));
                shift *= 2;
            }
            let totals = _mm512_permutexvar_epi32(last, x);
            // SAFETY: as the load.
            unsafe { _mm512_storeu_si512(block.as_mut_ptr().cast(), _mm512_add_epi32(x, carry)) };
            carry = _mm512_add_epi32(carry, totals);
        }
        let mut carry_words = [0u32; SCAN_LANES];
        // SAFETY: 16 words of 4 bytes, unaligned.
        unsafe { _mm512_storeu_si512(carry_words.as_mut_ptr().cast(), carry) };
        super::sum_tail::<u32, S>(blocks.into_remainder(), &carry_words);
    }

    /// [`super::strided_prefix_sum`] of 32-bit words with AVX2: a block is two registers
    /// of 8, each summed by doubling shifts, the second then taking the first's last `S`
    /// sums; for `S = 16` each lane of the block is its own series, and the registers
    /// are summed apart.
    #[target_feature(enable = "avx2")]
    pub(super) fn strided_prefix_sum_avx2<const S: usize>(seg: &mut [u32]) {
        const HALF: usize = SCAN_LANES / 2;
        let zero = _mm256_setzero_si256();
        // Lane `i` takes a register's lane `8 - S + i % S`: its last `S` sums, repeated
        // (`S` up to 8; unused for 16).
        let stride = S.min(HALF);
        let last: [i32; HALF] = std::array::from_fn(|i| (HALF - stride + i % stride) as i32);
        // SAFETY: 8 words of 4 bytes, unaligned.
        let last = unsafe { _mm256_loadu_si256(last.as_ptr().cast()) };
        // The carries of the block's two registers (the same for `S` up to 8).
        let (mut carry_low, mut carry_high) = (zero, zero);
        let mut blocks = seg.chunks_exact_mut(SCAN_LANES);
        for block in &mut blocks {
            let (p_low, p_high) = (block.as_mut_ptr(), block[HALF..].as_mut_ptr());
            // SAFETY: the block's two halves of 8 words each.
            let (mut low, mut high) = unsafe {
                (
                    _mm256_loadu_si256(p_low.cast()),
                    _mm256_loadu_si256(p_high.cast()),
                )
            };
            if S >= SCAN_LANES {
                low = _mm256_add_epi32(low, carry_low);
                high = _mm256_add_epi32(high, carry_high);
                (carry_low, carry_high) = (low, high);
            } else {
                let mut shift = S;
                while shift < HALF {
                    low = _mm256_add_epi32(low, shifted_up_avx2(low, shift));
                    high = _mm256_add_epi32(high, shifted_up_avx2(high, shift));
                    shift *= 2;
                }
                high = _mm256_add_epi32(high, _mm256_permutevar8x32_epi32(low, last));
                let totals = _mm256_permutevar8x32_epi32(high, last);
                low = _mm256_add_epi32(low, carry_low);
                high = _mm256_add_epi32(high, carry_low);
                carry_low = _mm256_add_epi32(carry_low, totals);
                carry_high = carry_low;
            }
            // SAFETY: as the loads.
            unsafe {
                _mm256_storeu_si256(p_low.cast(), low);
                _mm256_storeu_si256(p_high.cast(), high);
            }
        }
        let mut carry_words = [0u32; SCAN_LANES];
        // SAFETY: two stores of 8 words of 4 bytes within the 16, unaligned.
        unsafe {
            _mm256_storeu_si256(carry_words.as_mut_ptr().cast(), carry_low);
            _mm256_storeu_si256(carry_words[HALF..].as_mut_ptr().cast(), carry_high);
        }
        super::sum_tail::<u32, S>(blocks.into_remainder(), &carry_words);
    }

    /// `x` with its 32-bit lanes moved `k` lanes up (1, 2 or 4), zeros below.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn shifted_up_avx2(x: __m256i, k: usize) -> __m256i {
        // The low half zero, the high half `x`'s low half: what moves in from below.
        let below = _mm256_permute2x128_si256::<0x08>(x, x);
        match k {
            1 => _mm256_alignr_epi8::<12>(x, below),
            2 => _mm256_alignr_epi8::<8>(x, below),
            _ => below,
        }
    }

    /// `x` with its lanes moved `k` lanes up (1, 2, 4 or 8), zeros below.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn shifted_up(x: __m512i, k: usize) -> __m512i {
        let zero = _mm512_setzero_si512();
        match k {
            1 => _mm512_alignr_epi32::<15>(x, zero),
            2 => _mm512_alignr_epi32::<14>(x, zero),
            4 => _mm512_alignr_epi32::<12>(x, zero),
            _ => _mm512_alignr_epi32::<8>(x, zero),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds `seg[i - s]` to `seg[i]` one value after another.
    fn by_value<T: Word>(seg: &mut [T], s: usize) {
        for i in s..seg.len() {
            seg[i] = seg[i].wrapping_add(seg[i - s]);
        }
    }

    fn check<T: Word>() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in [0, 1, 15, 16, 17, 31, 32, 100, 257] {
            let seg: Vec<T> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    T::from_u64(state)
                })
                .collect();
            for s in [1, 2, 4, 8, 16] {
                let mut want = seg.clone();
                by_value(&mut want, s);
                let mut got = seg.clone();
                match s {
                    1 => strided_prefix_sum::<T, 1>(&mut got),
                    2 => strided_prefix_sum::<T, 2>(&mut got),
                    4 => strided_prefix_sum::<T, 4>(&mut got),
                    8 => strided_prefix_sum::<T, 8>(&mut got),
                    _ => strided_prefix_sum::<T, 16>(&mut got),
                }
                assert_eq!(got, want, "{} bits, stride {s}, {len} values", T::BITS);
            }
        }
    }

    /// Every stride, on lengths of whole and partial blocks, wrapping: the sums of one
    /// value after another (the vector kernel's for 32-bit words where the CPU has it).
    #[test]
    fn the_block_sums_are_the_sums_value_by_value() {
        check::<u32>();
        check::<u64>();
        check::<u16>();
    }
}
