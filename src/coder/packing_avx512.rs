//! AVX-512 kernels of the patched decoder for groups of 32 32-bit words: unpacking 32
//! fixed-width fields with two byte permutations and a funnel shift per 16 fields, and
//! moving packed exception high parts to their positions with `vpexpandd`.
//!
//! They produce exactly what the portable loops in [`super::patched`] and the AVX2
//! kernels produce (tests compare them); the decoder runs them for whole groups when
//! the CPU has AVX-512 F, BW, VBMI and VBMI2 (detected at run time: an [`Avx512`]
//! proves it), inside [`Avx512::run`], which compiles the decoder's loop for AVX-512
//! as well. Other CPUs keep the AVX2 kernels or the portable loops.

/// Values per group.
const GROUP: usize = 32;

/// Bytes [`Avx512::unpack`] requires after a group's first: its fields and 16 more (as
/// the AVX2 kernel, so the decoder's windows serve both; it reads only the fields).
pub fn unpack_reads(width: u32) -> usize {
    (GROUP * width as usize).div_ceil(8) + 16
}

/// Whether the CPU runs these kernels.
fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vbmi")
            && std::is_x86_feature_detected!("avx512vbmi2")
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// How to pull 16 fields of one width (fields `16 h ..`) out of a group's bytes: lane
/// `j`'s low and high 32 bits gather the 8 bytes from its field's first byte (indices
/// into the group's first 128 bytes, wrapped: a wrapped byte is never one of the
/// field's), then a funnel shift right by the field's bit offset in its first byte.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Half {
    /// `vpermi2b` control of the low 32 bits of each lane.
    low: [u8; 64],
    /// `vpermi2b` control of the high 32 bits of each lane.
    high: [u8; 64],
    /// Right shift of each lane's 64 bits.
    shifts: [u32; 16],
}

/// Two halves per width 0 to 32 (computed at compile time).
static HALVES: [[Half; 2]; 33] = {
    let mut halves = [[Half {
        low: [0; 64],
        high: [0; 64],
        shifts: [0; 16],
    }; 2]; 33];
    let mut w = 0;
    while w <= 32 {
        let mut h = 0;
        while h < 2 {
            let mut lane = 0;
            while lane < 16 {
                let bit = (16 * h + lane) * w;
                let first = bit / 8;
                let mut k = 0;
                while k < 4 {
                    halves[w][h].low[4 * lane + k] = ((first + k) % 128) as u8;
                    halves[w][h].high[4 * lane + k] = ((first + 4 + k) % 128) as u8;
                    k += 1;
                }
                halves[w][h].shifts[lane] = (bit % 8) as u32;
                lane += 1;
            }
            h += 1;
        }
        w += 1;
    }
    halves
};

/// Proof that the CPU runs these kernels (AVX-512 F, BW, VBMI and VBMI2, and AVX2 and
/// POPCNT, detected at run time): only [`Avx512::detect`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx512(());

impl Avx512 {
    /// The proof, on a CPU that has the features.
    pub fn detect() -> Option<Avx512> {
        available().then_some(Avx512(()))
    }

    /// Unpacks 32 fields of `width` (1 to 32) bits from `src`, which holds at least
    /// [`unpack_reads`]`(width)` bytes.
    ///
    /// # Panics
    ///
    /// If `src` is shorter or `width` is out of range.
    #[inline]
    pub fn unpack(self, src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        assert!((1..=32).contains(&width) && src.len() >= unpack_reads(width));
        // SAFETY: the features are present (`self` proves it); the kernel's masked loads
        // touch only `src`'s first `min(len, 128)` bytes.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            x86::unpack(src, width, out)
        }
    }

    /// ORs `high[j] << shift` into `out[i]` for the `j`-th set bit `i` of `bitmap`, for
    /// the first `k = bitmap.count_ones()` values of `high` (the rest are ignored);
    /// whether those `k` values are all nonzero and the widest is exactly `width` bits
    /// long (1 to 32; they are expected to fit in `width` bits).
    #[inline]
    pub fn expand_checked(
        self,
        high: &[u32; GROUP],
        bitmap: u32,
        shift: u32,
        width: u32,
        out: &mut [u32; GROUP],
    ) -> bool {
        assert!(shift < 32 && (1..=32).contains(&width));
        // SAFETY: the features are present (`self` proves it); the kernel reads `high`
        // and `out` and writes `out` within their 32 values.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            x86::expand_checked(high, bitmap, shift, width, out)
        }
    }

    /// `f()`, compiled with the features enabled where it is inlined into the call, so
    /// the kernels inline into it too. As with `Avx2::run`, pass an `#[inline(always)]`
    /// closure and keep what it runs `#[inline(always)]`.
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        // SAFETY: the features are present (`self` proves it).
        #[cfg(target_arch = "x86_64")]
        unsafe {
            x86::with_avx512(f)
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("no `Avx512` exists off x86_64")
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{GROUP, HALVES};

    /// # Safety
    ///
    /// The features [`super::available`] checks must be present.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,avx2,popcnt")]
    pub unsafe fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// A mask of the first `n` (at most 64) bytes.
    #[inline(always)]
    fn first_bytes(n: usize) -> u64 {
        u64::MAX.checked_shr(64 - n as u32).unwrap_or(0)
    }

    /// # Safety
    ///
    /// AVX-512 F, BW, VBMI and VBMI2 must be present and `width` 1 to 32. Reads only the
    /// first `min(src.len(), 128)` bytes of `src` (masked loads); the fields need its
    /// first `4 * width <= 128`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
    #[inline]
    pub unsafe fn unpack(src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        let n = src.len().min(128);
        let p = src.as_ptr();
        // SAFETY: the masks select bytes `0..min(n, 64)` and `64..n` of `src`, all
        // within it; masked-off bytes are not accessed.
        let (low, high) = unsafe {
            (
                _mm512_maskz_loadu_epi8(first_bytes(n.min(64)), p.cast()),
                _mm512_maskz_loadu_epi8(first_bytes(n.saturating_sub(64)), p.add(64).cast()),
            )
        };
        let mask = _mm512_set1_epi32((u64::MAX >> (64 - width)) as i32);
        for (h, half) in HALVES[width as usize].iter().enumerate() {
            // SAFETY: the controls are 64-byte arrays; `out` holds 32 values and half
            // `h` writes values `16 h..16 h + 16`.
            unsafe {
                let lows = _mm512_permutex2var_epi8(
                    low,
                    _mm512_loadu_si512(half.low.as_ptr().cast()),
                    high,
                );
                let highs = _mm512_permutex2var_epi8(
                    low,
                    _mm512_loadu_si512(half.high.as_ptr().cast()),
                    high,
                );
                let shifts = _mm512_loadu_si512(half.shifts.as_ptr().cast());
                let fields = _mm512_and_si512(_mm512_shrdv_epi32(lows, highs, shifts), mask);
                _mm512_storeu_si512(out.as_mut_ptr().add(16 * h).cast(), fields);
            }
        }
    }

    /// See [`super::Avx512::expand_checked`].
    ///
    /// # Safety
    ///
    /// AVX-512 F must be present, `shift < 32` and `width` 1 to 32.
    #[target_feature(enable = "avx512f,popcnt")]
    #[inline]
    pub unsafe fn expand_checked(
        high: &[u32; GROUP],
        bitmap: u32,
        shift: u32,
        width: u32,
        out: &mut [u32; GROUP],
    ) -> bool {
        let (p, o) = (high.as_ptr(), out.as_mut_ptr());
        // SAFETY: `high` and `out` hold 32 values: two vectors of 16 each.
        let (first, second, out0, out1) = unsafe {
            (
                _mm512_loadu_si512(p.cast()),
                _mm512_loadu_si512(p.add(16).cast()),
                _mm512_loadu_si512(o.cast()),
                _mm512_loadu_si512(o.add(16).cast()),
            )
        };
        let (m0, m1) = (bitmap as u16, (bitmap >> 16) as u16);
        // The values of the upper 16 positions start after the lower positions' ones.
        let taken = _mm512_set1_epi32(m0.count_ones() as i32);
        let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let rest = _mm512_permutex2var_epi32(first, _mm512_add_epi32(lanes, taken), second);
        let count = _mm_cvtsi32_si128(shift as i32);
        let patch0 = _mm512_sll_epi32(_mm512_maskz_expand_epi32(m0, first), count);
        let patch1 = _mm512_sll_epi32(_mm512_maskz_expand_epi32(m1, rest), count);
        // SAFETY: as the loads.
        unsafe {
            _mm512_storeu_si512(o.cast(), _mm512_or_si512(out0, patch0));
            _mm512_storeu_si512(o.add(16).cast(), _mm512_or_si512(out1, patch1));
        }
        // The first `k` high parts: none zero, one with bit `width - 1` set.
        let used = u32::MAX.checked_shr(32 - bitmap.count_ones()).unwrap_or(0);
        let (u0, u1) = (used as u16, (used >> 16) as u16);
        let zero = _mm512_mask_testn_epi32_mask(u0, first, first)
            | _mm512_mask_testn_epi32_mask(u1, second, second);
        let top = _mm512_set1_epi32((1u32 << (width - 1)) as i32);
        let widest = _mm512_mask_test_epi32_mask(u0, first, top)
            | _mm512_mask_test_epi32_mask(u1, second, top);
        zero == 0 && widest != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coder::packing_avx2::Avx2;

    /// Fields of `width` bits packed LSB first, as the patched encoder writes them,
    /// followed by 16 bytes of `0xff` (and ones in the last byte's padding bits), which
    /// must not leak into the fields.
    fn packed(fields: &[u32], width: u32) -> Vec<u8> {
        let bits = fields.len() * width as usize;
        let mut out = vec![0u8; bits.div_ceil(8) + 16];
        for (i, &f) in fields.iter().enumerate() {
            for b in 0..width as usize {
                out[(i * width as usize + b) / 8] |=
                    ((f >> b & 1) as u8) << ((i * width as usize + b) % 8);
            }
        }
        for bit in bits..out.len() * 8 {
            out[bit / 8] |= 1 << (bit % 8);
        }
        out
    }

    #[test]
    fn unpacks_every_width_from_exactly_the_bytes_required() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        for width in 1..=32u32 {
            let mask = u32::MAX >> (32 - width);
            for seed in [1u32, 77, 0xdead] {
                let fields: [u32; GROUP] = std::array::from_fn(|i| {
                    (i as u32 + seed)
                        .wrapping_mul(0x9E37_79B9)
                        .rotate_left(width)
                        & mask
                });
                let src = packed(&fields, width);
                // Exactly the bytes required, so a read past them would be caught by
                // tools watching the heap (the test suite runs under valgrind).
                let src = src[..unpack_reads(width)].to_vec();
                let mut out = [7u32; GROUP];
                avx512.unpack(&src, width, &mut out);
                assert_eq!(out, fields, "width {width}");
                if let Some(avx2) = Avx2::detect() {
                    let mut by_avx2 = [0u32; GROUP];
                    avx2.unpack(&src, width, &mut by_avx2);
                    assert_eq!(by_avx2, fields, "width {width}");
                }
            }
        }
    }

    #[test]
    fn expands_to_the_bitmap_positions_and_checks_the_widest() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        for (bitmap, shift) in [
            (1u32, 0),
            (u32::MAX, 1),
            (0xffff, 4),
            (0xffff_0000, 5),
            (0x8000_0001, 31),
            (0xf0f0_1234, 7),
            (0x0001_ffff, 2),
        ] {
            let k = bitmap.count_ones() as usize;
            for width in [1u32, 5, 17, 32] {
                let top = u32::MAX >> (32 - width);
                // Valid high parts (one of exactly `width` bits), then with a zero among
                // them, then all narrower; garbage after the first `k` must not count.
                for case in 0..3 {
                    let mut high: [u32; GROUP] = std::array::from_fn(|j| {
                        if j < k {
                            (((j as u32 + 1) * 0x9E37_79B9) >> 7 & top >> 1).max(1)
                        } else {
                            [0, top, 1 << (width - 1)][j % 3]
                        }
                    });
                    match case {
                        0 => high[k / 2] = top,
                        1 => {
                            high[k / 2] = top;
                            high[k - 1] = 0;
                        }
                        _ if width == 1 => high[k - 1] = 0,
                        _ => {}
                    }
                    let expected_valid = high[..k].iter().all(|&h| h != 0)
                        && high[..k].iter().fold(0, |a, &h| a | h).leading_zeros() == 32 - width;
                    assert_eq!(expected_valid, case == 0, "the test's own cases");
                    let mut out: [u32; GROUP] = std::array::from_fn(|i| i as u32 * 3);
                    let mut expected = out;
                    let mut next = 0;
                    for (i, v) in expected.iter_mut().enumerate() {
                        if bitmap >> i & 1 == 1 {
                            *v |= high[next] << shift;
                            next += 1;
                        }
                    }
                    let valid = avx512.expand_checked(&high, bitmap, shift, width, &mut out);
                    assert_eq!(
                        valid, expected_valid,
                        "bitmap {bitmap:#x} width {width} case {case}"
                    );
                    assert_eq!(
                        out, expected,
                        "bitmap {bitmap:#x} width {width} case {case}"
                    );
                }
            }
        }
    }
}
