//! AVX-512 kernels of patched packing for groups of 32 32-bit words. For the decoder:
//! unpacking 32 fixed-width fields with two byte permutations and a funnel shift per 16
//! fields, and moving packed exception high parts to their positions with `vpexpandd`.
//! For the encoder: choosing a group's layout from the exception counts of all 32
//! widths at once (a bit-matrix transposition and popcounts), and gathering the
//! exceptions' high parts with `vpcompressd`; for groups of 64-bit words, their
//! exception counts at all 64 widths by the same transposition ([`Avx512::survey_wide`]).
//!
//! They produce exactly what the portable loops in [`super`] and the AVX2
//! kernels produce (tests compare them); the coder runs them for whole groups when
//! the CPU has the AVX-512 subsets they use (detected at run time: an [`Avx512`]
//! proves it), inside [`Avx512::run`], which compiles the coder's loops for AVX-512 as
//! well. Other CPUs keep the AVX2 kernels or the portable loops.

// `unpack_reads`: the AVX2 kernel's requirement is this one's too, so the decoder's
// windows serve both (this kernel reads only the fields).
use super::group::{unpack_reads, GroupLayout, GROUP, PACK_MAX_WIDTH, PACK_MIN_WIDTH};

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

/// How to pack 32 fields of one width: pairs of fields joined in 16 64-bit pieces (piece
/// `j` starts at bit `2 j w`), each shifted left by its start's offset in its first
/// byte; then each output byte gathers its byte of the last piece starting at or
/// before it (`first`) and of the piece before (`second`), where that reaches it.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Packing {
    /// `vpermi2b` control of each output byte's byte of its last piece.
    first: [u8; 128],
    /// `vpermi2b` control of each output byte's byte of the piece before.
    second: [u8; 128],
    /// Left shift of each piece.
    shifts: [u64; 16],
    /// The output bytes with a `first` byte (those of the fields), per 64.
    first_mask: [u64; 2],
    /// The output bytes with a `second` byte, per 64.
    second_mask: [u64; 2],
}

/// The byte where piece `j` (fields `2 j` and `2 j + 1`) of width `w` starts.
const fn piece_start(j: usize, w: usize) -> usize {
    2 * j * w / 8
}

/// Packings of widths [`PACK_MIN_WIDTH`] to [`PACK_MAX_WIDTH`] (others unused).
static PACKINGS: [Packing; 33] = {
    let mut packings = [Packing {
        first: [0; 128],
        second: [0; 128],
        shifts: [0; 16],
        first_mask: [0; 2],
        second_mask: [0; 2],
    }; 33];
    let mut w = PACK_MIN_WIDTH as usize;
    while w <= PACK_MAX_WIDTH as usize {
        let p = &mut packings[w];
        let mut j = 0;
        while j < 16 {
            p.shifts[j] = (2 * j * w % 8) as u64;
            j += 1;
        }
        let mut k = 0;
        while k < 4 * w {
            // The last piece starting at or before byte `k`: it reaches byte `k`.
            let mut last = 0;
            while last + 1 < 16 && piece_start(last + 1, w) <= k {
                last += 1;
            }
            p.first[k] = (8 * last + k - piece_start(last, w)) as u8;
            p.first_mask[k / 64] |= 1 << (k % 64);
            if last > 0 && k - piece_start(last - 1, w) < 8 {
                p.second[k] = (8 * (last - 1) + k - piece_start(last - 1, w)) as u8;
                p.second_mask[k / 64] |= 1 << (k % 64);
            }
            k += 1;
        }
        w += 1;
    }
    packings
};

/// `vpermi2b` controls gathering the thermometer codes' bytes into 8 x 8 bit blocks for
/// [`Avx512::choose`]: qword `q` of vector `h` is block `(R, C) = (q % 4, 2 h + q / 4)`,
/// byte `C` of values `8 R .. 8 R + 8` (value `8 R + 7 - s` in byte `s`: the affine
/// transform that transposes a block reverses its rows).
static BLOCKS: [[u8; 64]; 2] = {
    let mut blocks = [[0u8; 64]; 2];
    let mut h = 0;
    while h < 2 {
        let mut q = 0;
        while q < 8 {
            let (r, c) = (q % 4, 2 * h + q / 4);
            let mut s = 0;
            while s < 8 {
                blocks[h][8 * q + s] = (4 * (8 * r + 7 - s) + c) as u8;
                s += 1;
            }
            q += 1;
        }
        h += 1;
    }
    blocks
};

/// `vpermb` control gathering transposed blocks into rows for [`Avx512::choose`]: byte
/// `R` of dword `u` (row `16 h + u` of vector `h`) is byte `u % 8` of block
/// `(R, 2 h + u / 8)`.
static ROWS: [u8; 64] = {
    let mut rows = [0u8; 64];
    let mut u = 0;
    while u < 16 {
        let mut r = 0;
        while r < 4 {
            rows[4 * u + r] = (8 * (r + 4 * (u / 8)) + u % 8) as u8;
            r += 1;
        }
        u += 1;
    }
    rows
};

/// `vpermb` control gathering byte `k` of 8 64-bit words into qword `k`: byte `8 k + v`
/// of the result is byte `k` of word `v`, for [`Avx512::survey_wide`].
static WORD_BYTES: [u8; 64] = {
    let mut control = [0u8; 64];
    let mut k = 0;
    while k < 8 {
        let mut v = 0;
        while v < 8 {
            control[8 * k + v] = (8 * v + k) as u8;
            v += 1;
        }
        k += 1;
    }
    control
};

/// How to pull 8 fields of one width (1 to 64 bits) of 64-bit words out of their bytes
/// (`width` bytes: 8 fields fill whole bytes): lane `j`'s low and high 64 bits gather
/// the 16 bytes from its field's first (indices past the 64 loaded wrap, and land only
/// on bits past the field), then a funnel shift right by the field's bit offset in its
/// first byte.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct WideFields {
    /// `vpermb` control of the low 64 bits of each lane.
    low: [u8; 64],
    /// `vpermb` control of the high 64 bits of each lane.
    high: [u8; 64],
    /// Right shift of each lane's 128 bits.
    shifts: [u64; 8],
}

/// The fields of 64-bit words, per width 0 to 64 (computed at compile time; width 0
/// unused).
static WIDE_FIELDS: [WideFields; 65] = {
    let mut tables = [WideFields {
        low: [0; 64],
        high: [0; 64],
        shifts: [0; 8],
    }; 65];
    let mut w = 1;
    while w <= 64 {
        let mut lane = 0;
        while lane < 8 {
            let bit = lane * w;
            let first = bit / 8;
            let mut k = 0;
            while k < 8 {
                tables[w].low[8 * lane + k] = ((first + k) % 64) as u8;
                tables[w].high[8 * lane + k] = ((first + 8 + k) % 64) as u8;
                k += 1;
            }
            tables[w].shifts[lane] = (bit % 8) as u64;
            lane += 1;
        }
        w += 1;
    }
    tables
};

/// Proof that the CPU runs these kernels (AVX-512 F, BW, CD, VBMI, VBMI2 and
/// VPOPCNTDQ, GFNI, AVX2 and POPCNT, detected at run time): only [`Avx512::detect`]
/// makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avx512(());

impl Avx512 {
    /// The proof, on a CPU that has the features.
    pub fn detect() -> Option<Avx512> {
        crate::isa::avx512_kernels().then_some(Avx512(()))
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
        // SAFETY: the features are present (`self` proves it); the kernel's masked loads
        // touch only `src`'s first `min(len, 128)` bytes.
        unsafe { x86::unpack(src, width, out) }
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
        unsafe { x86::expand_checked(high, bitmap, shift, width, out) }
    }

    /// The smallest patched layout of a whole group, exactly as `Avx2::choose` picks it
    /// (see there), from all 32 widths' exception counts at once: the values' thermometer
    /// codes (bit `b` set when the value is longer than `b` bits) transposed as a 32 x 32
    /// bit matrix, whose rows' popcounts are the counts.
    #[inline]
    pub fn choose(self, values: &[u32; GROUP]) -> GroupLayout {
        // SAFETY: the features are present (`self` proves it); the kernel reads `values`
        // and its own arrays within their lengths.
        unsafe { x86::choose(values) }
    }

    /// The bit lengths of the narrowest and the widest of a whole group of 64-bit words,
    /// and in `above[b]`, for every width `b` (0 to 63), how many of them are longer than
    /// `b` bits: what the portable survey counts for the widths between the two, from
    /// the values' thermometer codes transposed as a 32 x 64 bit matrix, eight 8 x 8
    /// blocks at a time, whose columns' popcounts are the counts.
    #[inline]
    pub fn survey_wide(self, values: &[u64; GROUP], above: &mut [u32; 64]) -> (u32, u32) {
        // SAFETY: the features are present (`self` proves it); the kernel reads `values`
        // and its own table and writes `above` within their lengths.
        unsafe { x86::survey_wide(values, above) }
    }

    /// Unpacks 32 fields of `width` (1 to 64) bits of 64-bit words from `src`, which
    /// holds exactly their bytes (`4 width`), reading no other.
    ///
    /// # Panics
    ///
    /// If `width` is out of range or `src` is not the fields' length.
    #[inline]
    pub fn unpack_wide(self, src: &[u8], width: u32, out: &mut [u64; GROUP]) {
        assert!((1..=64).contains(&width) && src.len() == 4 * width as usize);
        // SAFETY: the features are present (`self` proves it); the kernel's masked loads
        // touch only `src`'s bytes, and it writes `out`'s 32 values.
        unsafe { x86::unpack_wide(src, width, out) }
    }

    /// The bitmap of `values` longer than `b < 64` bits (bit `i` for value `i`), and
    /// their high parts `value >> b` in position order at the start of `high`, followed
    /// by zeros (where `high` held zeros), as the portable loop gathers them.
    #[inline]
    pub fn gather_longer_wide(self, values: &[u64; GROUP], b: u32, high: &mut [u64; GROUP]) -> u32 {
        assert!(b < 64);
        // SAFETY: the features are present (`self` proves it); the kernel reads `values`
        // and writes `high` within their 32 values.
        unsafe { x86::gather_longer_wide(values, b, high) }
    }

    /// The bitmap of `values` longer than `b < 32` bits (bit `i` for value `i`), and
    /// their high parts `value >> b` in position order at the start of `high`, followed
    /// by zeros (where `high` held zeros), as `Avx2::gather_longer`.
    #[inline]
    pub fn gather_longer(self, values: &[u32; GROUP], b: u32, high: &mut [u32; GROUP]) -> u32 {
        assert!(b < 32);
        // SAFETY: the features are present (`self` proves it); the kernel reads `values`
        // and writes `high` within their 32 values.
        unsafe { x86::gather_longer(values, b, high) }
    }

    /// Packs the low `width` bits of each of `values` (`PACK_MIN_WIDTH` to
    /// `PACK_MAX_WIDTH` bits) LSB first into the start of `out`, as the portable
    /// packing does; the bytes they take, `4 * width`. Writes zeros to the rest of the
    /// first 64 bytes (up to 16 fields' widths) or 128 (wider).
    ///
    /// # Panics
    ///
    /// If `width` is out of range or `out` shorter than what is written.
    #[inline]
    pub fn pack(self, values: &[u32; GROUP], width: u32, out: &mut [u8]) -> usize {
        assert!((PACK_MIN_WIDTH..=PACK_MAX_WIDTH).contains(&width));
        assert!(out.len() >= if width <= 16 { 64 } else { 128 });
        // SAFETY: the features are present (`self` proves it); the kernel writes 64
        // bytes, or 128 above 16 bits, to `out` (asserted above) and reads `values`.
        unsafe { x86::pack(values, width, out) }
    }

    /// `f()`, compiled with the features enabled where it is inlined into the call, so
    /// the kernels inline into it too. As with `Avx2::run`, pass an `#[inline(always)]`
    /// closure and keep what it runs `#[inline(always)]`.
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        // SAFETY: the features are present (`self` proves it).
        unsafe { x86::with_avx512(f) }
    }
}

mod x86 {
    use std::arch::x86_64::*;

    use super::{GroupLayout, BLOCKS, GROUP, HALVES, PACKINGS, ROWS, WIDE_FIELDS, WORD_BYTES};

    /// # Safety
    ///
    /// The features [`super::Avx512::detect`] checks must be present.
    #[target_feature(
        enable = "avx512f,avx512bw,avx512cd,avx512vbmi,avx512vbmi2,avx512vpopcntdq,gfni,avx2,popcnt"
    )]
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

    /// See [`super::Avx512::choose`].
    ///
    /// # Safety
    ///
    /// AVX-512 F, BW, CD, VBMI and VPOPCNTDQ and GFNI must be present.
    #[target_feature(enable = "avx512f,avx512bw,avx512cd,avx512vbmi,avx512vpopcntdq,gfni")]
    #[inline]
    pub unsafe fn choose(values: &[u32; GROUP]) -> GroupLayout {
        let p = values.as_ptr();
        // SAFETY: `values` holds 32 values: two vectors of 16.
        let (v0, v1) = unsafe {
            (
                _mm512_loadu_si512(p.cast()),
                _mm512_loadu_si512(p.add(16).cast()),
            )
        };
        let widest = 32 - (_mm512_reduce_or_epi32(_mm512_or_si512(v0, v1)) as u32).leading_zeros();
        let plain = GroupLayout {
            widest,
            width: widest,
            exceptions: 0,
            bits: 8 + 32 * widest,
        };
        if widest == 0 {
            return plain;
        }
        // Thermometer codes: bit `b` set when the value is longer than `b` bits.
        let ones = _mm512_set1_epi32(-1);
        let t0 = _mm512_srlv_epi32(ones, _mm512_lzcnt_epi32(v0));
        let t1 = _mm512_srlv_epi32(ones, _mm512_lzcnt_epi32(v1));
        // Transposed in 8 x 8 blocks (the affine transform with the matrix a block and
        // the unit bytes as vectors makes byte `j` column `j` of the reversed rows),
        // then the blocks' bytes gathered into rows: bit `i` of row `b` is value `i`'s
        // bit `b`.
        let units = _mm512_set1_epi64(0x8040_2010_0804_0201_u64 as i64);
        // SAFETY: the tables are 64-byte arrays.
        let (blocks0, blocks1, rows) = unsafe {
            (
                _mm512_loadu_si512(BLOCKS[0].as_ptr().cast()),
                _mm512_loadu_si512(BLOCKS[1].as_ptr().cast()),
                _mm512_loadu_si512(ROWS.as_ptr().cast()),
            )
        };
        let transpose = |blocks| {
            let gathered = _mm512_permutex2var_epi8(t0, blocks, t1);
            let transposed = _mm512_gf2p8affine_epi64_epi8::<0>(units, gathered);
            _mm512_popcnt_epi32(_mm512_permutexvar_epi8(rows, transposed))
        };
        // Values longer than each width `b`, in 16-bit lane `b` (zero from `widest` on).
        let counts = _mm512_inserti64x4::<1>(
            _mm512_castsi256_si512(_mm512_cvtepi32_epi16(transpose(blocks0))),
            _mm512_cvtepi32_epi16(transpose(blocks1)),
        );
        // Each width's size and the width in one 16-bit key, as in `Avx2::choose`.
        let b = _mm512_set_epi16(
            31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10,
            9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
        );
        let high = _mm512_srli_epi16::<3>(_mm512_add_epi16(
            _mm512_mullo_epi16(
                counts,
                _mm512_sub_epi16(_mm512_set1_epi16(widest as i16), b),
            ),
            _mm512_set1_epi16(7),
        ));
        let five_k = _mm512_add_epi16(counts, _mm512_slli_epi16::<2>(counts));
        let positions = _mm512_min_epu16(
            _mm512_srli_epi16::<3>(_mm512_add_epi16(five_k, _mm512_set1_epi16(10))),
            _mm512_set1_epi16(4),
        );
        let lows = _mm512_add_epi16(_mm512_set1_epi16(16), _mm512_slli_epi16::<5>(b));
        let bits = _mm512_add_epi16(
            lows,
            _mm512_slli_epi16::<3>(_mm512_add_epi16(positions, high)),
        );
        let keys = _mm512_or_si512(
            _mm512_slli_epi16::<5>(bits),
            _mm512_sub_epi16(_mm512_set1_epi16(31), b),
        );
        let keys = _mm256_min_epu16(
            _mm512_castsi512_si256(keys),
            _mm512_extracti64x4_epi64::<1>(keys),
        );
        let keys = _mm_min_epu16(
            _mm256_castsi256_si128(keys),
            _mm256_extracti128_si256::<1>(keys),
        );
        let least = _mm_cvtsi128_si32(_mm_minpos_epu16(keys)) as u32 & 0xffff;
        let bits = least >> 5;
        if bits >= plain.bits {
            return plain;
        }
        let width = 31 - (least & 31);
        let mut count = [0u16; GROUP];
        // SAFETY: `count` holds 32 16-bit values: one vector.
        unsafe { _mm512_storeu_si512(count.as_mut_ptr().cast(), counts) };
        GroupLayout {
            widest,
            width,
            exceptions: u32::from(count[width as usize]),
            bits,
        }
    }

    /// See [`super::Avx512::pack`].
    ///
    /// # Safety
    ///
    /// AVX-512 F, BW and VBMI must be present, `width` 4 to 28, and `out` must hold 64
    /// bytes, or 128 for widths above 16.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    #[inline]
    pub unsafe fn pack(values: &[u32; GROUP], width: u32, out: &mut [u8]) -> usize {
        let packing = &PACKINGS[width as usize];
        let p = values.as_ptr();
        let mask = _mm512_set1_epi32((u32::MAX >> (32 - width)) as i32);
        // SAFETY: `values` holds 32 values: two vectors of 16.
        let (v0, v1) = unsafe {
            (
                _mm512_and_si512(_mm512_loadu_si512(p.cast()), mask),
                _mm512_and_si512(_mm512_loadu_si512(p.add(16).cast()), mask),
            )
        };
        // Pairs: the odd field moved down next to the even one.
        let count = _mm_cvtsi32_si128(width as i32);
        let low = _mm512_set1_epi64(0xffff_ffff);
        let pair = |v| {
            _mm512_or_si512(
                _mm512_and_si512(v, low),
                _mm512_sll_epi64(_mm512_srli_epi64::<32>(v), count),
            )
        };
        // SAFETY: `shifts` holds 16 values: two vectors of 8.
        let (pieces0, pieces1) = unsafe {
            let s = packing.shifts.as_ptr();
            (
                _mm512_sllv_epi64(pair(v0), _mm512_loadu_si512(s.cast())),
                _mm512_sllv_epi64(pair(v1), _mm512_loadu_si512(s.add(8).cast())),
            )
        };
        let halves = if width <= 16 { 1 } else { 2 };
        for h in 0..halves {
            // SAFETY: the controls hold 128 bytes (two vectors); `out` holds
            // `64 * halves` bytes (the caller's contract).
            unsafe {
                let first = _mm512_loadu_si512(packing.first.as_ptr().add(64 * h).cast());
                let second = _mm512_loadu_si512(packing.second.as_ptr().add(64 * h).cast());
                let bytes = _mm512_or_si512(
                    _mm512_maskz_permutex2var_epi8(packing.first_mask[h], pieces0, first, pieces1),
                    _mm512_maskz_permutex2var_epi8(
                        packing.second_mask[h],
                        pieces0,
                        second,
                        pieces1,
                    ),
                );
                _mm512_storeu_si512(out.as_mut_ptr().add(64 * h).cast(), bytes);
            }
        }
        4 * width as usize
    }

    /// See [`super::Avx512::survey_wide`].
    ///
    /// # Safety
    ///
    /// AVX-512 F, BW, CD and VBMI and GFNI must be present.
    #[target_feature(enable = "avx512f,avx512bw,avx512cd,avx512vbmi,gfni")]
    #[inline]
    pub unsafe fn survey_wide(values: &[u64; GROUP], above: &mut [u32; 64]) -> (u32, u32) {
        let p = values.as_ptr();
        // SAFETY: the table is a 64-byte array.
        let word_bytes = unsafe { _mm512_loadu_si512(WORD_BYTES.as_ptr().cast()) };
        let units = _mm512_set1_epi64(0x8040_2010_0804_0201_u64 as i64);
        // Popcounts of nibbles, for those of bytes.
        let nibble_counts = _mm512_broadcast_i32x4(_mm_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        ));
        let low_nibbles = _mm512_set1_epi8(0x0f);
        let ones = _mm512_set1_epi64(-1);
        // Byte `b` counts the values longer than `b` bits.
        let mut longer = _mm512_setzero_si512();
        for eighth in 0..GROUP / 8 {
            // SAFETY: `values` holds 32 words: four vectors of 8.
            let v = unsafe { _mm512_loadu_si512(p.add(8 * eighth).cast()) };
            // Thermometer codes: bit `b` set when the value is longer than `b` bits.
            let thermometers = _mm512_srlv_epi64(ones, _mm512_lzcnt_epi64(v));
            // Qword `k`: byte `k` of each of the 8 codes; transposed, its byte `j` holds
            // bit `8 k + j` of each (in reverse order, which a count ignores).
            let blocks = _mm512_permutexvar_epi8(word_bytes, thermometers);
            let columns = _mm512_gf2p8affine_epi64_epi8::<0>(units, blocks);
            let low = _mm512_shuffle_epi8(nibble_counts, _mm512_and_si512(columns, low_nibbles));
            let high = _mm512_shuffle_epi8(
                nibble_counts,
                _mm512_and_si512(_mm512_srli_epi16::<4>(columns), low_nibbles),
            );
            longer = _mm512_add_epi8(longer, _mm512_add_epi8(low, high));
        }
        // The counts only fall with the width: positive below the widest value's length,
        // all 32 below the narrowest's.
        let widest = _mm512_test_epi8_mask(longer, longer).count_ones();
        let narrowest = _mm512_cmpeq_epi8_mask(longer, _mm512_set1_epi8(GROUP as i8)).count_ones();
        let o = above.as_mut_ptr();
        let lanes = [
            _mm512_extracti32x4_epi32::<0>(longer),
            _mm512_extracti32x4_epi32::<1>(longer),
            _mm512_extracti32x4_epi32::<2>(longer),
            _mm512_extracti32x4_epi32::<3>(longer),
        ];
        for (quarter, lane) in lanes.into_iter().enumerate() {
            // SAFETY: `above` holds 64 counts: four vectors of 16.
            unsafe { _mm512_storeu_si512(o.add(16 * quarter).cast(), _mm512_cvtepu8_epi32(lane)) };
        }
        (narrowest, widest)
    }

    /// See [`super::Avx512::gather_longer`].
    ///
    /// # Safety
    ///
    /// AVX-512 F must be present and `b < 32`.
    #[target_feature(enable = "avx512f,popcnt")]
    #[inline]
    pub unsafe fn gather_longer(values: &[u32; GROUP], b: u32, high: &mut [u32; GROUP]) -> u32 {
        let (p, o) = (values.as_ptr(), high.as_mut_ptr());
        // SAFETY: `values` holds 32 values: two vectors of 16.
        let (v0, v1) = unsafe {
            (
                _mm512_loadu_si512(p.cast()),
                _mm512_loadu_si512(p.add(16).cast()),
            )
        };
        let count = _mm_cvtsi32_si128(b as i32);
        let (s0, s1) = (_mm512_srl_epi32(v0, count), _mm512_srl_epi32(v1, count));
        let (m0, m1) = (
            _mm512_test_epi32_mask(s0, s0),
            _mm512_test_epi32_mask(s1, s1),
        );
        // SAFETY: the second store starts at `m0`'s count, at most 16, and writes 16
        // values: within `high`'s 32.
        unsafe {
            _mm512_storeu_si512(o.cast(), _mm512_maskz_compress_epi32(m0, s0));
            _mm512_storeu_si512(
                o.add(m0.count_ones() as usize).cast(),
                _mm512_maskz_compress_epi32(m1, s1),
            );
        }
        u32::from(m0) | u32::from(m1) << 16
    }

    /// See [`super::Avx512::unpack_wide`].
    ///
    /// # Safety
    ///
    /// AVX-512 F, BW, VBMI and VBMI2 must be present, `width` 1 to 64 and `src` hold
    /// `4 width` bytes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
    #[inline]
    pub unsafe fn unpack_wide(src: &[u8], width: u32, out: &mut [u64; GROUP]) {
        let w = width as usize;
        let fields = &WIDE_FIELDS[w];
        // SAFETY: the table's arrays are 64 bytes each.
        let (low, high, shifts) = unsafe {
            (
                _mm512_loadu_si512(fields.low.as_ptr().cast()),
                _mm512_loadu_si512(fields.high.as_ptr().cast()),
                _mm512_loadu_si512(fields.shifts.as_ptr().cast()),
            )
        };
        let mask = _mm512_set1_epi64((u64::MAX >> (64 - width)) as i64);
        let o = out.as_mut_ptr();
        for eighth in 0..GROUP / 8 {
            // SAFETY: 8 fields take `w` whole bytes, at `w * eighth` in `src`'s `4 w`: the
            // masked load touches only those.
            let bytes = unsafe {
                _mm512_maskz_loadu_epi8(first_bytes(w), src.as_ptr().add(w * eighth).cast())
            };
            let fields = _mm512_and_si512(
                _mm512_shrdv_epi64(
                    _mm512_permutexvar_epi8(low, bytes),
                    _mm512_permutexvar_epi8(high, bytes),
                    shifts,
                ),
                mask,
            );
            // SAFETY: `out` holds 32 values: four vectors of 8.
            unsafe { _mm512_storeu_si512(o.add(8 * eighth).cast(), fields) };
        }
    }

    /// See [`super::Avx512::gather_longer_wide`].
    ///
    /// # Safety
    ///
    /// AVX-512 F must be present and `b < 64`.
    #[target_feature(enable = "avx512f,popcnt")]
    #[inline]
    pub unsafe fn gather_longer_wide(
        values: &[u64; GROUP],
        b: u32,
        high: &mut [u64; GROUP],
    ) -> u32 {
        let (p, o) = (values.as_ptr(), high.as_mut_ptr());
        let count = _mm_cvtsi32_si128(b as i32);
        let (mut bitmap, mut gathered) = (0u32, 0usize);
        for eighth in 0..GROUP / 8 {
            // SAFETY: `values` holds 32 words: four vectors of 8.
            let v = unsafe { _mm512_loadu_si512(p.add(8 * eighth).cast()) };
            let shifted = _mm512_srl_epi64(v, count);
            let longer = _mm512_test_epi64_mask(shifted, shifted);
            // SAFETY: at most `8 * eighth` parts were gathered before, so the store of 8
            // ends within `high`'s 32; its lanes past the gathered ones are zeros.
            unsafe {
                _mm512_storeu_si512(
                    o.add(gathered).cast(),
                    _mm512_maskz_compress_epi64(longer, shifted),
                );
            }
            gathered += longer.count_ones() as usize;
            bitmap |= u32::from(longer) << (8 * eighth);
        }
        bitmap
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
    use crate::coder::testing;
    use crate::fast::patched::avx2::Avx2;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

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
                            ((j as u32 + 1).wrapping_mul(0x9E37_79B9) >> 7 & top >> 1).max(1)
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

    /// The kernels' shared test groups (zeros, all ones, each bit length in every
    /// lane, ties between widths), and random mixes with a few outliers.
    fn encoder_groups() -> Vec<[u32; GROUP]> {
        let mut groups = testing::kernel_groups();
        let mut rng = SmallRng::seed_from_u64(5);
        for _ in 0..3000 {
            let base = rng.gen_range(0..=32u32);
            let outliers = rng.gen_range(0..8);
            groups.push(std::array::from_fn(|_| {
                let len = if rng.gen_range(0..32) < outliers {
                    rng.gen_range(0..=32)
                } else {
                    base.saturating_sub(rng.gen_range(0..4))
                };
                rng.gen::<u32>().checked_shr(32 - len).unwrap_or(0)
                    | u32::from(len > 0) << len.saturating_sub(1)
            }));
        }
        groups
    }

    #[test]
    fn chooses_the_layouts_the_avx2_kernel_chooses() {
        let (Some(avx512), Some(avx2)) = (Avx512::detect(), Avx2::detect()) else {
            return;
        };
        let mut with_exceptions = 0;
        for values in encoder_groups() {
            let layout = avx512.choose(&values);
            assert_eq!(layout, avx2.choose(&values), "{values:x?}");
            with_exceptions += usize::from(layout.exceptions > 0);
        }
        assert!(
            with_exceptions > 1000,
            "the groups test exceptions: {with_exceptions}"
        );
    }

    /// Groups of 64-bit words of every bit length, with zeros, and uniform groups.
    fn wide_groups() -> Vec<[u64; GROUP]> {
        let mut rng = SmallRng::seed_from_u64(41);
        let mut groups: Vec<[u64; GROUP]> = (0..4000)
            .map(|case| {
                // Some groups of close lengths (few exceptions), some of any.
                let spread = if case % 2 == 0 { 64 } else { 3 };
                let base = rng.gen_range(0..64);
                std::array::from_fn(|_| {
                    let shift = (base + rng.gen_range(0..spread)) % 64;
                    let v = rng.gen::<u64>() >> shift;
                    if rng.gen_ratio(1, 16) {
                        0
                    } else {
                        v
                    }
                })
            })
            .collect();
        groups.extend([[0; GROUP], [u64::MAX; GROUP], [1; GROUP]]);
        groups
    }

    #[test]
    fn surveys_64_bit_words_by_the_definition() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        for values in wide_groups() {
            let mut above = [u32::MAX; 64];
            let (narrowest, widest) = avx512.survey_wide(&values, &mut above);
            let lengths = values.map(|v| 64 - v.leading_zeros());
            let least = lengths.iter().min().copied().unwrap_or(0);
            let most = lengths.iter().max().copied().unwrap_or(0);
            assert_eq!((narrowest, widest), (least, most), "{values:x?}");
            for (b, &count) in above.iter().enumerate() {
                let longer = lengths.iter().filter(|&&n| n > b as u32).count() as u32;
                assert_eq!(count, longer, "width {b} of {values:x?}");
            }
        }
    }

    #[test]
    fn unpacks_64_bit_fields_of_every_width_from_exactly_their_bytes() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        let mut rng = SmallRng::seed_from_u64(47);
        for width in 1..=64u32 {
            let mask = u64::MAX >> (64 - width);
            for _ in 0..20 {
                let fields: [u64; GROUP] = std::array::from_fn(|_| rng.gen::<u64>() & mask);
                let mut bytes = vec![0u8; 4 * width as usize];
                for (i, &f) in fields.iter().enumerate() {
                    for b in 0..width as usize {
                        let bit = i * width as usize + b;
                        bytes[bit / 8] |= ((f >> b & 1) as u8) << (bit % 8);
                    }
                }
                let mut out = [u64::MAX; GROUP];
                avx512.unpack_wide(&bytes, width, &mut out);
                assert_eq!(out, fields, "width {width}");
            }
        }
    }

    #[test]
    fn gathers_the_high_parts_of_64_bit_words_in_order() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        for values in wide_groups() {
            for b in [0, 1, 17, 31, 32, 40, 63] {
                let mut high = [0u64; GROUP];
                let bitmap = avx512.gather_longer_wide(&values, b, &mut high);
                let longer: Vec<usize> = (0..GROUP).filter(|&i| values[i] >> b != 0).collect();
                let expected_bitmap = longer.iter().fold(0u32, |m, &i| m | 1 << i);
                assert_eq!(bitmap, expected_bitmap, "width {b} of {values:x?}");
                let mut expected = [0u64; GROUP];
                for (h, &i) in expected.iter_mut().zip(&longer) {
                    *h = values[i] >> b;
                }
                assert_eq!(high, expected, "width {b} of {values:x?}");
            }
        }
    }

    #[test]
    fn gathers_the_high_parts_the_avx2_kernel_gathers() {
        let (Some(avx512), Some(avx2)) = (Avx512::detect(), Avx2::detect()) else {
            return;
        };
        for values in encoder_groups().into_iter().step_by(7) {
            for b in 0..32 {
                let (mut by_avx512, mut by_avx2) = ([0u32; GROUP], [0u32; GROUP]);
                assert_eq!(
                    avx512.gather_longer(&values, b, &mut by_avx512),
                    avx2.gather_longer(&values, b, &mut by_avx2),
                    "width {b}"
                );
                assert_eq!(by_avx512, by_avx2, "width {b}");
            }
        }
    }

    #[test]
    fn packs_every_width_like_the_unpacking_reads_it() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        let mut rng = SmallRng::seed_from_u64(9);
        for width in PACK_MIN_WIDTH..=PACK_MAX_WIDTH {
            for _ in 0..50 {
                // Bits above the width must not leak into the packing.
                let values: [u32; GROUP] = std::array::from_fn(|_| rng.gen());
                let mask = u32::MAX >> (32 - width);
                let mut out = [0xa5u8; 160];
                assert_eq!(avx512.pack(&values, width, &mut out), 4 * width as usize);
                let fields: Vec<u32> = values.iter().map(|v| v & mask).collect();
                let expected = packed(&fields, width);
                let n = 4 * width as usize;
                assert_eq!(out[..n], expected[..n], "width {width}");
                let written = if width <= 16 { 64 } else { 128 };
                assert!(out[n..written].iter().all(|&b| b == 0), "width {width}");
                assert!(out[written..].iter().all(|&b| b == 0xa5), "width {width}");
            }
        }
    }
}
