//! AVX2 kernels of patched packing for groups of 32 32-bit words. For the decoder:
//! unpacking 32 fixed-width fields, and expanding packed exception high parts to their
//! positions. For the encoder: choosing a group's layout (counting the values each width
//! leaves as exceptions and sizing every width at once), locating and gathering the
//! exceptions' high parts, and packing fields of 8 to 25 bits.
//!
//! Each produces exactly what the portable loops in [`super`] produce (tests
//! compare them); the coder uses them when the CPU has AVX2 (detected at run time: an
//! [`Avx2`] proves it) and the group is whole (for the decoder, with the input's slack
//! bytes available), inside [`Avx2::run`], which compiles the coder's loops around them
//! for AVX2 as well.

use super::group::{unpack_reads, GroupLayout, GROUP};

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

/// Two steps (fields 0-3 and 4-7 of an 8-field block) per width 1 to 32 (computed at
/// compile time, so a kernel reads them without an initialisation check).
static STEPS: [[Step; 2]; 33] = {
    let mut steps = [[Step {
        loads: [0; 2],
        shuffle: [0; 32],
        shifts: [0; 4],
    }; 2]; 33];
    let mut w = 0;
    while w <= 32 {
        let mut s = 0;
        while s < 2 {
            // Field `f` starts in byte `f * w / 8` of the block.
            let loads = [4 * s * w / 8, (4 * s + 2) * w / 8];
            let step = &mut steps[w][s];
            step.loads = loads;
            let mut lane = 0;
            while lane < 4 {
                let field = 4 * s + lane;
                let from = field * w / 8 - loads[lane / 2];
                let mut k = 0;
                while k < 8 {
                    // Lanes 0-1 read the low load (shuffle bytes 0-15), 2-3 the high.
                    step.shuffle[8 * lane + k] = (from + k) as u8;
                    k += 1;
                }
                step.shifts[lane] = (field * w % 8) as u64;
                lane += 1;
            }
            s += 1;
        }
        w += 1;
    }
    steps
};

/// Widths up to this one unpack (and from [`NARROWEST_PACKED`] pack) 8 fields at a
/// time, one in each 32-bit lane ([`NARROW`]): a field of at most 25 bits, shifted by
/// its bit offset (at most 7) in its first byte, lies within the 4 bytes from that byte.
const WIDEST_NARROW: usize = 25;

/// The narrowest width packed 8 fields at a time: from 8 bits on, no two even (or odd)
/// fields of a block share a byte, so two byte shuffles place every field.
const NARROWEST_PACKED: usize = 8;

/// How to move the 8 fields of an 8-field block of a narrow width between their packed
/// bytes (fields 0-3 from the block's first byte, 4-7 from byte `split`) and the 32-bit
/// lanes of a vector, each lane holding its field shifted left by the field's bit offset
/// in its first byte.
#[derive(Clone, Copy)]
struct Narrow {
    /// Byte offset (from the block's first byte) of fields 4-7's bytes: the byte where
    /// field 4 starts.
    split: usize,
    /// Each 32-bit lane's shift: its field's bit offset in its first byte.
    shifts: [u32; 8],
    /// Unpacking's `vpshufb` control: lane `l`'s 4 bytes from its half's 16 bytes.
    gather: [u8; 32],
    /// Packing's `vpshufb` controls: each packed byte from the even (`scatter[0]`) or
    /// odd (`scatter[1]`) field whose bytes cover it, if any (else zero).
    scatter: [[u8; 32]; 2],
    /// Packing's `vpshufb` control of the byte fields 3 and 4 may share: byte `split`
    /// of the first half moved to byte 0, zeros elsewhere.
    shared: [u8; 16],
}

/// The [`Narrow`] tables of each width 0 to [`WIDEST_NARROW`] (computed at compile
/// time; the packing controls from [`NARROWEST_PACKED`] on).
static NARROW: [Narrow; WIDEST_NARROW + 1] = {
    // `vpshufb` zeroes a byte whose control has its top bit set.
    const ZERO: u8 = 0x80;
    let mut steps = [Narrow {
        split: 0,
        shifts: [0; 8],
        gather: [0; 32],
        scatter: [[ZERO; 32]; 2],
        shared: [ZERO; 16],
    }; WIDEST_NARROW + 1];
    let mut w = 0;
    while w <= WIDEST_NARROW {
        let split = 4 * w / 8;
        let step = &mut steps[w];
        step.split = split;
        step.shared[0] = split as u8;
        let mut field = 0;
        while field < 8 {
            // Field `f` starts in byte `f * w / 8` of the block, at bit `f * w % 8`;
            // fields 0-3 are in the vector's first 128-bit half, 4-7 in its second.
            let (half, lane) = (field / 4, field % 4);
            let from = field * w / 8 - half * split;
            let shift = field * w % 8;
            step.shifts[field] = shift as u32;
            let mut k = 0;
            while k < 4 {
                step.gather[4 * field + k] = (from + k) as u8;
                k += 1;
            }
            let mut k = 0;
            while w >= NARROWEST_PACKED && k < (shift + w).div_ceil(8) {
                step.scatter[field % 2][16 * half + from + k] = (4 * lane + k) as u8;
                k += 1;
            }
            field += 1;
        }
        w += 1;
    }
    steps
};

/// Proof that the CPU runs these kernels (AVX2 and POPCNT, detected at run time): only
/// [`Avx2::detect`] makes one, so the kernels, its methods, need not check again on
/// every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx2(());

impl Avx2 {
    /// The proof, on a CPU that has the features.
    pub fn detect() -> Option<Avx2> {
        crate::isa::avx2_kernels().then_some(Avx2(()))
    }

    /// Unpacks 32 fields of `width` (1 to 32) bits from `src`, which holds at least
    /// `unpack_reads(width)` bytes.
    ///
    /// # Panics
    ///
    /// If `src` is shorter or `width` is out of range.
    #[inline]
    pub fn unpack(self, src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        assert!((1..=32).contains(&width) && src.len() >= unpack_reads(width));
        // SAFETY: AVX2 is present (`self` proves it) and `src` holds every byte the
        // kernel reads (asserted above; see `x86::unpack`).
        unsafe { x86::unpack(src, width, out) }
    }

    /// Whether [`Avx2::pack`] packs fields of `width` bits (8 to 25).
    #[inline]
    pub fn packs(self, width: u32) -> bool {
        (NARROWEST_PACKED..=WIDEST_NARROW).contains(&(width as usize))
    }

    /// Writes the low `width` bits of each of `values` to the start of `buf`, packed as
    /// the portable loop packs them; the bytes they take, `4 width`. Up to 16 bytes after
    /// them may be overwritten.
    ///
    /// # Panics
    ///
    /// If [`Avx2::packs`] does not take `width`, or `buf` holds fewer than `4 width + 16`
    /// bytes.
    #[inline]
    pub fn pack(self, values: &[u32; GROUP], width: u32, buf: &mut [u8]) -> usize {
        assert!(self.packs(width) && buf.len() >= 4 * width as usize + 16);
        // SAFETY: AVX2 is present (`self` proves it), `width` is in the kernel's range
        // and `buf` holds more than the `3 width + width / 2 + 16` bytes it writes.
        unsafe { x86::pack(values, width, buf) }
    }

    /// ORs `high[j] << shift` into `out[i]` for the `j`-th set bit `i` of `bitmap`, for
    /// the first `bitmap.count_ones()` values of `high` (the rest are ignored); the OR
    /// of those values and whether one of them is zero.
    #[inline]
    pub fn expand_or(
        self,
        high: &[u32; GROUP],
        bitmap: u32,
        shift: u32,
        out: &mut [u32; GROUP],
    ) -> (u32, bool) {
        assert!(shift < 32);
        // SAFETY: AVX2 is present (`self` proves it); the kernel reads `high` and `out`
        // only within their 32 values (see `x86::expand_or`).
        unsafe { x86::expand_or(high, bitmap, shift, out) }
    }

    /// The smallest patched layout of a whole group of 32-bit words: the width `b` of
    /// its low bits minimising the group's coded size in bits, `16 + 32 b +
    /// 8 positions(k) + 8 ceil(k (widest - b) / 8)` with `k` the values longer than `b`
    /// bits and `positions(k) = min(ceil((3 + 5 k) / 8), 4)` (a list or a bitmap), or
    /// `8 + 32 widest` with no exceptions at `b = widest`; the widest such `b` among
    /// equals. The same choice as the encoder's portable search (tests compare them).
    #[inline]
    pub fn choose(self, values: &[u32; GROUP]) -> GroupLayout {
        // SAFETY: AVX2 and POPCNT are present (`self` proves it); the kernel reads
        // `values` and its own arrays within their lengths.
        unsafe { x86::choose(values) }
    }

    /// The bitmap of `values` longer than `b < 32` bits (bit `i` for value `i`), and
    /// their high parts `value >> b` in position order at the start of `high`, followed
    /// by zeros (where `high` held zeros: pass a zeroed array to get zeros throughout).
    pub fn gather_longer(self, values: &[u32; GROUP], b: u32, high: &mut [u32; GROUP]) -> u32 {
        assert!(b < 32);
        // SAFETY: AVX2 and POPCNT are present (`self` proves it); the kernel reads
        // `values` and writes `high` within their 32 values (see `x86::gather_longer`).
        unsafe { x86::gather_longer(values, b, high) }
    }

    /// `f()`, compiled with AVX2 and POPCNT enabled where it is inlined into the call, so
    /// the kernels inline into it too. Pass an `#[inline(always)]` closure and keep what
    /// it runs `#[inline(always)]`: a plain closure around a large loop is not inlined,
    /// and then runs without AVX2 and calls every kernel out of line (measured: the
    /// coder's loops had no AVX instruction until the closures were marked).
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        // SAFETY: AVX2 and POPCNT are present (`self` proves it).
        unsafe { x86::with_avx2(f) }
    }
}

/// For each 8-bit mask, the lanes of its set bits in order, then a lane of a clear bit
/// (if any): the `vpermd` control that packs a vector's selected lanes to its front,
/// followed by copies of an unselected lane (zero in `gather_longer`).
static COMPACT: [[u32; 8]; 256] = {
    let mut table = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let mut clear = 0;
        while clear < 8 && m >> clear & 1 == 1 {
            clear += 1;
        }
        let clear = if clear == 8 { 0 } else { clear as u32 };
        let mut slot = 0;
        let mut lane = 0;
        while lane < 8 {
            if m >> lane & 1 == 1 {
                table[m][slot] = lane as u32;
                slot += 1;
            }
            lane += 1;
        }
        while slot < 8 {
            table[m][slot] = clear;
            slot += 1;
        }
        m += 1;
    }
    table
};

mod x86 {
    use std::arch::x86_64::*;

    use super::{GroupLayout, COMPACT, GROUP, NARROW, NARROWEST_PACKED, STEPS, WIDEST_NARROW};
    use crate::bits::ranks::EXPAND;

    /// # Safety
    ///
    /// AVX2 and POPCNT must be present.
    #[target_feature(enable = "avx2,popcnt")]
    pub unsafe fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// The group's 32 values as four vectors.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn load_group(values: &[u32; GROUP]) -> [__m256i; 4] {
        let p = values.as_ptr();
        // SAFETY: `values` holds 32 values; vector `j` reads values 8 * j..+8.
        unsafe {
            [
                _mm256_loadu_si256(p.cast()),
                _mm256_loadu_si256(p.add(8).cast()),
                _mm256_loadu_si256(p.add(16).cast()),
                _mm256_loadu_si256(p.add(24).cast()),
            ]
        }
    }

    /// The bit length of each lane of `v` (0 to 32).
    ///
    /// Keeping only the set bits whose next higher bit is clear leaves the highest set
    /// bit and no two adjacent ones, a value that converts to a float without rounding
    /// up to the next power of two, so the float's exponent is the highest bit's index.
    /// Lanes with bit 31 set (negative as integers) are 32 by the final maximum.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn bit_lengths(v: __m256i) -> __m256i {
        let sparse = _mm256_andnot_si256(_mm256_srli_epi32(v, 1), v);
        let float = _mm256_castps_si256(_mm256_cvtepi32_ps(sparse));
        let exponent = _mm256_and_si256(_mm256_srli_epi32(float, 23), _mm256_set1_epi32(0xff));
        let length = _mm256_max_epi32(
            _mm256_sub_epi32(exponent, _mm256_set1_epi32(126)),
            _mm256_setzero_si256(),
        );
        _mm256_max_epi32(
            length,
            _mm256_and_si256(_mm256_srai_epi32(v, 31), _mm256_set1_epi32(32)),
        )
    }

    /// See [`super::Avx2::choose`].
    ///
    /// # Safety
    ///
    /// AVX2 and POPCNT must be present.
    #[target_feature(enable = "avx2,popcnt")]
    #[inline]
    pub unsafe fn choose(values: &[u32; GROUP]) -> GroupLayout {
        let v = load_group(values);
        let any = _mm256_or_si256(_mm256_or_si256(v[0], v[1]), _mm256_or_si256(v[2], v[3]));
        let widest = 32 - horizontal_or(any).leading_zeros();
        let plain = GroupLayout {
            widest,
            width: widest,
            exceptions: 0,
            bits: 8 + 32 * widest,
        };
        if widest == 0 {
            return plain;
        }
        // The 32 lengths as bytes (in an order of their own: only counts matter here).
        let lengths = _mm256_packs_epi16(
            _mm256_packs_epi32(bit_lengths(v[0]), bit_lengths(v[1])),
            _mm256_packs_epi32(bit_lengths(v[2]), bit_lengths(v[3])),
        );
        // Values longer than each width, counted one width at a time (the widths from
        // `widest` on have none).
        let mut count = [0u16; GROUP];
        let mut width = _mm256_setzero_si256();
        for c in count.iter_mut().take(widest as usize) {
            let longer = _mm256_movemask_epi8(_mm256_cmpgt_epi8(lengths, width)) as u32;
            *c = longer.count_ones() as u16;
            width = _mm256_add_epi8(width, _mm256_set1_epi8(1));
        }
        // SAFETY: `count` holds 32 16-bit values: two vectors.
        let counts = unsafe {
            [
                _mm256_loadu_si256(count.as_ptr().cast()),
                _mm256_loadu_si256(count.as_ptr().add(16).cast()),
            ]
        };
        // Each width's size and the width itself in one 16-bit key, `bits << 5 |
        // (31 - b)`, so the least key is the smallest size and the widest width among
        // equals (at most 16 + 32 * 32 + 32 = 1072 bits: the key fits). Widths from
        // `widest` on have no exceptions and cost 24 + 32 b bits there, more than
        // `plain`: they never win, so they need no mask.
        let widest16 = _mm256_set1_epi16(widest as i16);
        let key = |k: __m256i, b: __m256i| {
            let high = _mm256_srli_epi16(
                _mm256_add_epi16(
                    _mm256_mullo_epi16(k, _mm256_sub_epi16(widest16, b)),
                    _mm256_set1_epi16(7),
                ),
                3,
            );
            let five_k = _mm256_add_epi16(k, _mm256_slli_epi16(k, 2));
            let positions = _mm256_min_epu16(
                _mm256_srli_epi16(_mm256_add_epi16(five_k, _mm256_set1_epi16(10)), 3),
                _mm256_set1_epi16(4),
            );
            let lows = _mm256_add_epi16(_mm256_set1_epi16(16), _mm256_slli_epi16(b, 5));
            let bits = _mm256_add_epi16(
                lows,
                _mm256_slli_epi16(_mm256_add_epi16(positions, high), 3),
            );
            _mm256_or_si256(
                _mm256_slli_epi16(bits, 5),
                _mm256_sub_epi16(_mm256_set1_epi16(31), b),
            )
        };
        let low_widths = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let high_widths = _mm256_add_epi16(low_widths, _mm256_set1_epi16(16));
        let keys = _mm256_min_epu16(key(counts[0], low_widths), key(counts[1], high_widths));
        let keys = _mm_min_epu16(
            _mm256_castsi256_si128(keys),
            _mm256_extracti128_si256(keys, 1),
        );
        let least = _mm_cvtsi128_si32(_mm_minpos_epu16(keys)) as u32 & 0xffff;
        let bits = least >> 5;
        if bits >= plain.bits {
            return plain;
        }
        let width = 31 - (least & 31);
        GroupLayout {
            widest,
            width,
            exceptions: u32::from(count[width as usize]),
            bits,
        }
    }

    /// # Safety
    ///
    /// AVX2 and POPCNT must be present and `b < 32`. Reads `values[..32]`; the store of
    /// vector `j`'s high parts starts at the count of those before it (at most 24) and
    /// writes 8 values, within `high`.
    #[target_feature(enable = "avx2,popcnt")]
    pub unsafe fn gather_longer(values: &[u32; GROUP], b: u32, high: &mut [u32; GROUP]) -> u32 {
        let count = _mm_cvtsi32_si128(b as i32);
        let compact: &[[u32; 8]; 256] = &COMPACT;
        let mut bitmap = 0u32;
        let mut next = 0usize;
        for (j, v) in load_group(values).into_iter().enumerate() {
            let shifted = _mm256_srl_epi32(v, count);
            let zero = _mm256_cmpeq_epi32(shifted, _mm256_setzero_si256());
            let mask = !(_mm256_movemask_ps(_mm256_castsi256_ps(zero)) as u8);
            // SAFETY: `COMPACT` rows hold 8 lanes; `next` counts the set bits of the
            // masks of earlier vectors, at most 8 * j <= 24, so the store stays in `high`.
            unsafe {
                let control = _mm256_loadu_si256(compact[usize::from(mask)].as_ptr().cast());
                let packed = _mm256_permutevar8x32_epi32(shifted, control);
                _mm256_storeu_si256(high.as_mut_ptr().add(next).cast(), packed);
            }
            bitmap |= u32::from(mask) << (8 * j);
            next += mask.count_ones() as usize;
        }
        bitmap
    }

    /// # Safety
    ///
    /// AVX2 must be present and `src` must hold `ceil(32 * width / 8) + 16` bytes: the
    /// loads of block `u` start at `u * width + loads[s]` bytes, at most
    /// `3 * width + 6 * width / 8`, and read 16 bytes (narrow widths: see
    /// [`unpack_narrow`]).
    #[target_feature(enable = "avx2")]
    pub unsafe fn unpack(src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        if width as usize <= WIDEST_NARROW {
            // SAFETY: the same contract (its loads read less).
            return unsafe { unpack_narrow(src, width, out) };
        }
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

    /// [`unpack`] of a width up to [`WIDEST_NARROW`]: a block of 8 fields from one
    /// shuffle of two 16-byte loads, at `u * width` and `u * width + split` for block `u`
    /// (`split` at most `width / 2`).
    ///
    /// # Safety
    ///
    /// AVX2 must be present, `width` at most [`WIDEST_NARROW`] and `src` must hold
    /// `ceil(32 * width / 8) + 16` bytes.
    #[target_feature(enable = "avx2")]
    unsafe fn unpack_narrow(src: &[u8], width: u32, out: &mut [u32; GROUP]) {
        let step = &NARROW[width as usize];
        // SAFETY: `gather` and `shifts` are 32-byte arrays.
        let (control, shifts) = unsafe {
            (
                _mm256_loadu_si256(step.gather.as_ptr().cast()),
                _mm256_loadu_si256(step.shifts.as_ptr().cast()),
            )
        };
        let mask = _mm256_set1_epi32(((1u32 << width) - 1) as i32);
        for block in 0..GROUP / 8 {
            // SAFETY: the loads start at most `3 * width + width / 2` bytes into `src`
            // and read 16 bytes, within its `4 * width + 16`; block `block` writes values
            // 8 * block..+8 of `out`.
            unsafe {
                let p = src.as_ptr().add(block * width as usize);
                let bytes = _mm256_loadu2_m128i(p.add(step.split).cast(), p.cast());
                let fields = _mm256_and_si256(
                    _mm256_srlv_epi32(_mm256_shuffle_epi8(bytes, control), shifts),
                    mask,
                );
                _mm256_storeu_si256(out.as_mut_ptr().add(8 * block).cast(), fields);
            }
        }
    }

    /// # Safety
    ///
    /// AVX2 must be present, `width` from [`NARROWEST_PACKED`] to [`WIDEST_NARROW`],
    /// and `buf` must hold `3 * width + width / 2 + 16` bytes: block `u` stores 16 bytes
    /// at `u * width` and 16 at `u * width + split`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn pack(values: &[u32; GROUP], width: u32, buf: &mut [u8]) -> usize {
        debug_assert!((NARROWEST_PACKED..=WIDEST_NARROW).contains(&(width as usize)));
        let step = &NARROW[width as usize];
        // SAFETY: the controls and `shifts` are 32-byte arrays, `shared` 16 bytes.
        let (even, odd, shifts, shared) = unsafe {
            (
                _mm256_loadu_si256(step.scatter[0].as_ptr().cast()),
                _mm256_loadu_si256(step.scatter[1].as_ptr().cast()),
                _mm256_loadu_si256(step.shifts.as_ptr().cast()),
                _mm_loadu_si128(step.shared.as_ptr().cast()),
            )
        };
        let mask = _mm256_set1_epi32(((1u32 << width) - 1) as i32);
        for (block, values) in load_group(values).into_iter().enumerate() {
            let shifted = _mm256_sllv_epi32(_mm256_and_si256(values, mask), shifts);
            let bytes = _mm256_or_si256(
                _mm256_shuffle_epi8(shifted, even),
                _mm256_shuffle_epi8(shifted, odd),
            );
            // Fields 0-3's bytes, then 4-7's from byte `split` on, over them: the byte
            // they share (when field 4 starts mid-byte) takes field 3's bits as well.
            let low = _mm256_castsi256_si128(bytes);
            let high = _mm_or_si128(
                _mm256_extracti128_si256::<1>(bytes),
                _mm_shuffle_epi8(low, shared),
            );
            // SAFETY: both stores end by `3 * width + split + 16` bytes, within `buf`
            // (the function's contract).
            unsafe {
                let p = buf.as_mut_ptr().add(block * width as usize);
                _mm_storeu_si128(p.cast(), low);
                _mm_storeu_si128(p.add(step.split).cast(), high);
            }
        }
        4 * width as usize
    }

    /// # Safety
    ///
    /// AVX2 must be present. Reads `high[..32]` (only the first `popcount(bitmap)` values
    /// matter; a load that would start past them is clamped to index 24) and `out[..32]`.
    #[target_feature(enable = "avx2,popcnt")]
    pub unsafe fn expand_or(
        high: &[u32; GROUP],
        bitmap: u32,
        shift: u32,
        out: &mut [u32; GROUP],
    ) -> (u32, bool) {
        let lanes = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let count = _mm_cvtsi32_si128(shift as i32);
        let expand: &[[u32; 8]; 256] = &EXPAND;
        let mut next = 0usize;
        // Every chunk, even one without exceptions (no branch to mispredict: its patch
        // is all zeros).
        for chunk in 0..GROUP / 8 {
            let m = (bitmap >> (8 * chunk)) as u8;
            // The packed values of this chunk start at `next`; a load of 8 from there
            // stays within `high` unless `next > 24`, then it starts at 24 and the ranks
            // are offset.
            let start = next.min(GROUP - 8);
            let offset = _mm256_set1_epi32((next - start) as i32);
            // SAFETY: `start + 8 <= 32`; the table row and `out[8 * chunk..]` hold 8
            // values.
            unsafe {
                let values = _mm256_loadu_si256(high.as_ptr().add(start).cast());
                let ranks = _mm256_loadu_si256(expand[usize::from(m)].as_ptr().cast());
                let control = _mm256_add_epi32(ranks, offset);
                let moved = _mm256_permutevar8x32_epi32(values, control);
                let active = _mm256_cmpeq_epi32(
                    _mm256_and_si256(_mm256_set1_epi32(i32::from(m)), lanes),
                    lanes,
                );
                let patch = _mm256_sll_epi32(_mm256_and_si256(moved, active), count);
                let at = out.as_mut_ptr().add(8 * chunk).cast::<__m256i>();
                _mm256_storeu_si256(at, _mm256_or_si256(_mm256_loadu_si256(at), patch));
            }
            next += m.count_ones() as usize;
        }
        // The OR of the first `next` high parts, and whether one is zero.
        let count = _mm256_set1_epi32(next as i32);
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut all = _mm256_setzero_si256();
        let mut zero = _mm256_setzero_si256();
        for (j, values) in load_group(high).into_iter().enumerate() {
            let index = _mm256_add_epi32(lane, _mm256_set1_epi32(8 * j as i32));
            let used = _mm256_cmpgt_epi32(count, index);
            all = _mm256_or_si256(all, _mm256_and_si256(values, used));
            let empty = _mm256_cmpeq_epi32(values, _mm256_setzero_si256());
            zero = _mm256_or_si256(zero, _mm256_and_si256(empty, used));
        }
        (horizontal_or(all), _mm256_testz_si256(zero, zero) == 0)
    }

    /// The OR of the lanes of `v`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn horizontal_or(v: __m256i) -> u32 {
        let v = _mm_or_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        let v = _mm_or_si128(v, _mm_shuffle_epi32(v, 0b00_00_11_10));
        let v = _mm_or_si128(v, _mm_shuffle_epi32(v, 0b00_00_00_01));
        _mm_cvtsi128_si32(v) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coder::testing;

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
        let Some(avx2) = Avx2::detect() else {
            return;
        };
        for width in 1..=32u32 {
            let mask = u32::MAX >> (32 - width);
            let fields: [u32; GROUP] = std::array::from_fn(|i| {
                (i as u32 + 1).wrapping_mul(0x9E37_79B9).rotate_left(width) & mask
            });
            let mut src = packed(&fields, width);
            // Garbage after the fields must not leak in.
            let end = (GROUP * width as usize).div_ceil(8);
            src[end..].fill(0xff);
            if !(GROUP * width as usize).is_multiple_of(8) {
                src[end - 1] |= 0xff << ((GROUP * width as usize) % 8);
            }
            let mut out = [0u32; GROUP];
            avx2.unpack(&src, width, &mut out);
            assert_eq!(out, fields, "width {width}");
        }
    }

    #[test]
    fn packs_every_narrow_width_like_the_portable_loop() {
        let Some(avx2) = Avx2::detect() else {
            return;
        };
        let packed_widths: Vec<u32> = (1..=32).filter(|&w| avx2.packs(w)).collect();
        assert_eq!(packed_widths, (8..=25).collect::<Vec<u32>>());
        for width in packed_widths {
            // Bits above the width must be dropped.
            let values: [u32; GROUP] = std::array::from_fn(|i| {
                (i as u32 + 1).wrapping_mul(0x9E37_79B9).rotate_left(width) | 1 << 31
            });
            let mut buf = [0xAAu8; 4 * GROUP + 16];
            assert_eq!(avx2.pack(&values, width, &mut buf), 4 * width as usize);
            let bytes = 4 * width as usize;
            assert_eq!(
                buf[..bytes],
                packed(&values, width)[..bytes],
                "width {width}"
            );
        }
    }

    fn bit_length(v: u32) -> u32 {
        32 - v.leading_zeros()
    }

    /// The layout `Avx2::choose` documents, by trying every width.
    fn smallest_by_trial(values: &[u32; GROUP]) -> GroupLayout {
        let widest = values.iter().map(|&v| bit_length(v)).max().unwrap();
        let mut best = GroupLayout {
            widest,
            width: widest,
            exceptions: 0,
            bits: 8 + 32 * widest,
        };
        // Narrower widths from the widest down: a tie keeps the wider.
        for b in (0..widest).rev() {
            let k = values.iter().filter(|&&v| bit_length(v) > b).count() as u32;
            let positions = (3 + 5 * k).div_ceil(8).min(4);
            let bits = 16 + 32 * b + 8 * positions + 8 * (k * (widest - b)).div_ceil(8);
            if bits < best.bits {
                best = GroupLayout {
                    widest,
                    width: b,
                    exceptions: k,
                    bits,
                };
            }
        }
        best
    }

    #[test]
    fn chooses_the_smallest_layout_and_the_widest_among_equals() {
        let Some(avx2) = Avx2::detect() else {
            return;
        };
        let mut groups = testing::kernel_groups();
        // Groups of two lengths whose sizes tie at two or more widths (found by trying
        // every width): (length of the rest, length of `n` values, n).
        for (rest, length, n) in [
            (7, 32, 25),
            (4, 2, 21),
            (24, 14, 4),
            (6, 28, 30),
            (18, 5, 6),
        ] {
            let value = |bits: u32| u32::MAX.checked_shr(32 - bits).unwrap_or(0);
            groups.push(std::array::from_fn(|i| {
                value(if i < n { length } else { rest })
            }));
        }
        for values in groups {
            assert_eq!(
                avx2.choose(&values),
                smallest_by_trial(&values),
                "{values:x?}"
            );
        }
    }

    #[test]
    fn gathers_the_high_parts_of_longer_values_in_order() {
        let Some(avx2) = Avx2::detect() else {
            return;
        };
        for values in testing::kernel_groups() {
            for b in 0..32 {
                let mut high = [0u32; GROUP];
                let bitmap = avx2.gather_longer(&values, b, &mut high);
                let longer: Vec<usize> = (0..GROUP).filter(|&i| values[i] >> b != 0).collect();
                let expected = longer.iter().fold(0u32, |m, &i| m | 1 << i);
                assert_eq!(bitmap, expected, "width {b}");
                let mut highs: Vec<u32> = longer.iter().map(|&i| values[i] >> b).collect();
                highs.resize(GROUP, 0);
                assert_eq!(high, highs[..], "width {b}");
            }
        }
    }

    #[test]
    fn expands_to_the_bitmap_positions() {
        let Some(avx2) = Avx2::detect() else {
            return;
        };
        // Chosen bitmaps, then random ones of every density (a chunk's values start
        // anywhere in the packed high parts, and run on across their vectors).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let random = (0..400).map(|i| {
            let mut bits = u32::MAX;
            for _ in 0..i % 4 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bits &= state as u32 ^ (state >> 32) as u32;
            }
            (bits, i as u32 % 32)
        });
        let chosen = [
            (0u32, 3),
            (1, 0),
            (u32::MAX, 1),
            (0x8000_0001, 31),
            (0xf0f0_1234, 7),
            (0x00ff_ff00, 2),
            (0xff00_007f, 5),
        ];
        for (bitmap, shift) in chosen.into_iter().chain(random) {
            let k = bitmap.count_ones() as usize;
            // Nonzero high parts, then with a zero among them (the last or the 5th),
            // and zeros and a wide value after them, which must not count.
            for zero_at in [None, k.checked_sub(1), Some(4).filter(|&z| z < k)] {
                let mut high: [u32; GROUP] = std::array::from_fn(|j| {
                    if j < k {
                        (j as u32 + 1) << (j % 5)
                    } else {
                        u32::from(j % 2 == 0) << 30
                    }
                });
                if let Some(z) = zero_at {
                    high[z] = 0;
                }
                let mut out: [u32; GROUP] = std::array::from_fn(|i| i as u32 * 3);
                let mut expected = out;
                let mut next = 0;
                for (i, v) in expected.iter_mut().enumerate() {
                    if bitmap >> i & 1 == 1 {
                        *v |= high[next] << shift;
                        next += 1;
                    }
                }
                let all = high[..k].iter().fold(0, |a, &h| a | h);
                let empty = high[..k].contains(&0);
                assert_eq!(
                    avx2.expand_or(&high, bitmap, shift, &mut out),
                    (all, empty),
                    "bitmap {bitmap:#x}, zero at {zero_at:?}"
                );
                assert_eq!(out, expected, "bitmap {bitmap:#x}");
            }
        }
    }
}
