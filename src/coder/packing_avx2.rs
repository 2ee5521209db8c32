//! AVX2 kernels of the patched-packing decoder for 32-bit words: unpacking a group of 32
//! fixed-width fields, and expanding packed exception high parts to their positions.
//!
//! Both produce exactly what the portable loops in [`super::patched`] produce (tests
//! compare them for every width); the decoder uses them when the CPU has AVX2 (detected
//! at run time) and the group is whole, with the input's slack bytes available.

use once_cell::sync::Lazy;

/// Values per group.
const GROUP: usize = 32;

/// Bytes the unpacking may read: a group of 32 fields of `width` bits and 16 more.
pub fn unpack_reads(width: u32) -> usize {
    (GROUP * width as usize).div_ceil(8) + 16
}

/// Whether the CPU runs these kernels.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// How to pull 4 fields of one width out of 16 + 16 loaded bytes: each 64-bit lane
/// gathers the 8 bytes from its field's first byte, then shifts right by the field's
/// bit offset in that byte.
#[derive(Clone, Copy)]
struct Step {
    /// Byte offsets (from the 8-field block's first byte) of the two 16-byte loads.
    loads: [usize; 2],
    /// `vpshufb` control: lane `l`'s 8 bytes from its half's load.
    shuffle: [u8; 32],
    /// Right shift of each 64-bit lane.
    shifts: [u64; 4],
}

/// Two steps (fields 0-3 and 4-7 of an 8-field block) per width 1 to 32.
static STEPS: Lazy<Vec<[Step; 2]>> = Lazy::new(|| {
    (0..=32u32)
        .map(|w| {
            let step = |s: usize| {
                let start = |f: usize| f * w as usize / 8;
                let loads = [start(4 * s), start(4 * s + 2)];
                let mut shuffle = [0u8; 32];
                let mut shifts = [0u64; 4];
                for lane in 0..4 {
                    let field = 4 * s + lane;
                    let from = start(field) - loads[lane / 2];
                    for k in 0..8 {
                        // Lanes 0-1 read the low load (shuffle bytes 0-15), 2-3 the high.
                        shuffle[8 * lane + k] = (from + k) as u8;
                    }
                    shifts[lane] = (field * w as usize % 8) as u64;
                }
                Step {
                    loads,
                    shuffle,
                    shifts,
                }
            };
            [step(0), step(1)]
        })
        .collect()
});

/// For each 8-bit mask, the ranks of its set bits in lane order (a `vpermd` control
/// that moves the `j`-th packed value to the lane of the `j`-th set bit); lanes of
/// clear bits get 0 and are masked off.
static EXPAND: Lazy<Vec<[u32; 8]>> = Lazy::new(|| {
    (0..256u32)
        .map(|m| {
            let mut ranks = [0u32; 8];
            let mut next = 0;
            for (lane, rank) in ranks.iter_mut().enumerate() {
                if m >> lane & 1 == 1 {
                    *rank = next;
                    next += 1;
                }
            }
            ranks
        })
        .collect()
});

/// Unpacks 32 fields of `width` (1 to 32) bits from `src`, which holds at least
/// [`unpack_reads`]`(width)` bytes. Call only when [`available`].
///
/// # Panics
///
/// If `src` is shorter or `width` is out of range.
pub fn unpack(src: &[u8], width: u32, out: &mut [u32; GROUP]) {
    assert!((1..=32).contains(&width) && src.len() >= unpack_reads(width));
    assert!(available());
    // SAFETY: AVX2 is present (asserted above) and `src` holds every byte the kernel
    // reads (asserted above; see `x86::unpack`).
    #[cfg(target_arch = "x86_64")]
    unsafe {
        x86::unpack(src, width, out)
    }
}

/// ORs `high[j] << shift` into `out[i]` for the `j`-th set bit `i` of `bitmap`, for the
/// first `bitmap.count_ones()` values of `high` (the rest are ignored). Call only when
/// [`available`].
pub fn expand_or(high: &[u32; GROUP], bitmap: u32, shift: u32, out: &mut [u32; GROUP]) {
    assert!(shift < 32);
    assert!(available());
    // SAFETY: AVX2 is present (asserted above); the kernel reads `high` and `out` only
    // within their 32 values (see `x86::expand_or`).
    #[cfg(target_arch = "x86_64")]
    unsafe {
        x86::expand_or(high, bitmap, shift, out)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{EXPAND, GROUP, STEPS};

    /// # Safety
    ///
    /// AVX2 must be present and `src` must hold `ceil(32 * width / 8) + 16` bytes: the
    /// loads of block `u` start at `u * width + loads[s]` bytes, at most
    /// `3 * width + 6 * width / 8`, and read 16 bytes.
    #[target_feature(enable = "avx2")]
    pub unsafe fn unpack(src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        let steps = &STEPS[width as usize];
        let mask = _mm256_set1_epi64x(((1u64 << width) - 1) as i64);
        let pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        for block in 0..GROUP / 8 {
            let base = block * width as usize;
            let mut halves = [_mm_setzero_si128(); 2];
            for (s, step) in steps.iter().enumerate() {
                // SAFETY: see the function's contract: both loads lie within `src`.
                let (low, high) = unsafe {
                    let p = src.as_ptr().add(base);
                    (
                        _mm_loadu_si128(p.add(step.loads[0]).cast()),
                        _mm_loadu_si128(p.add(step.loads[1]).cast()),
                    )
                };
                let bytes = _mm256_set_m128i(high, low);
                // SAFETY: `shuffle` and `shifts` are 32-byte arrays.
                let (control, shifts) = unsafe {
                    (
                        _mm256_loadu_si256(step.shuffle.as_ptr().cast()),
                        _mm256_loadu_si256(step.shifts.as_ptr().cast()),
                    )
                };
                let fields = _mm256_and_si256(
                    _mm256_srlv_epi64(_mm256_shuffle_epi8(bytes, control), shifts),
                    mask,
                );
                halves[s] = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(fields, pick));
            }
            let eight = _mm256_set_m128i(halves[1], halves[0]);
            // SAFETY: `out` holds 32 values; block `block` writes values 8 * block..+8.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(8 * block).cast(), eight) };
        }
    }

    /// # Safety
    ///
    /// AVX2 must be present. Reads `high[..32]` (only the first `popcount(bitmap)` values
    /// matter; a load that would start past them is clamped to index 24) and `out[..32]`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn expand_or(high: &[u32; GROUP], bitmap: u32, shift: u32, out: &mut [u32; GROUP]) {
        let lanes = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let count = _mm_cvtsi32_si128(shift as i32);
        let mut next = 0usize;
        for chunk in 0..GROUP / 8 {
            let m = (bitmap >> (8 * chunk)) & 0xff;
            if m == 0 {
                continue;
            }
            // The packed values of this chunk start at `next`; a load of 8 from there
            // stays within `high` unless `next > 24`, then it starts at 24 and the ranks
            // are offset.
            let start = next.min(GROUP - 8);
            let ranks = EXPAND[m as usize].map(|r| r + (next - start) as u32);
            // SAFETY: `start + 8 <= 32`; `ranks` and `out[8 * chunk..]` hold 8 values.
            unsafe {
                let values = _mm256_loadu_si256(high.as_ptr().add(start).cast());
                let control = _mm256_loadu_si256(ranks.as_ptr().cast());
                let moved = _mm256_permutevar8x32_epi32(values, control);
                let active =
                    _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(m as i32), lanes), lanes);
                let patch = _mm256_sll_epi32(_mm256_and_si256(moved, active), count);
                let at = out.as_mut_ptr().add(8 * chunk).cast::<__m256i>();
                _mm256_storeu_si256(at, _mm256_or_si256(_mm256_loadu_si256(at), patch));
            }
            next += m.count_ones() as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields of `width` bits packed LSB first, as the patched encoder writes them.
    fn packed(fields: &[u32], width: u32) -> Vec<u8> {
        let mut bits = vec![false; fields.len() * width as usize];
        for (i, &f) in fields.iter().enumerate() {
            for b in 0..width as usize {
                bits[i * width as usize + b] = f >> b & 1 == 1;
            }
        }
        let mut out = vec![0u8; bits.len().div_ceil(8) + 16];
        for (i, &bit) in bits.iter().enumerate() {
            out[i / 8] |= u8::from(bit) << (i % 8);
        }
        out
    }

    #[test]
    fn unpacks_every_width_like_the_portable_loop() {
        if !available() {
            return;
        }
        for width in 1..=32u32 {
            let mask = u32::MAX >> (32 - width);
            let fields: [u32; GROUP] = std::array::from_fn(|i| {
                (i as u32 + 1).wrapping_mul(0x9E37_79B9).rotate_left(width) & mask
            });
            let mut src = packed(&fields, width);
            // Garbage after the fields must not leak in.
            let end = (GROUP * width as usize).div_ceil(8);
            src[end..].fill(0xff);
            if (GROUP * width as usize) % 8 != 0 {
                src[end - 1] |= 0xff << ((GROUP * width as usize) % 8);
            }
            let mut out = [0u32; GROUP];
            unpack(&src, width, &mut out);
            assert_eq!(out, fields, "width {width}");
        }
    }

    #[test]
    fn expands_to_the_bitmap_positions() {
        if !available() {
            return;
        }
        for (bitmap, shift) in [
            (0u32, 3),
            (1, 0),
            (u32::MAX, 1),
            (0x8000_0001, 31),
            (0xf0f0_1234, 7),
        ] {
            let high: [u32; GROUP] = std::array::from_fn(|j| j as u32 + 1);
            let mut out: [u32; GROUP] = std::array::from_fn(|i| i as u32 * 3);
            let mut expected = out;
            let mut next = 0;
            for (i, v) in expected.iter_mut().enumerate() {
                if bitmap >> i & 1 == 1 {
                    *v |= high[next] << shift;
                    next += 1;
                }
            }
            expand_or(&high, bitmap, shift, &mut out);
            assert_eq!(out, expected, "bitmap {bitmap:#x}");
        }
    }
}
