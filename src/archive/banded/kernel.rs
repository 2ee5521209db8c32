//! The vector kernels of banded decoding: the residuals of one turn decoded at once,
//! one band per 32-bit lane of one or two AVX-512 registers, or of one to four AVX2
//! registers (8 to 32 bands, the lanes past the last band idle). Contexts come from the
//! classes one row and `left` turns earlier, table entries from gathers (one a state
//! where each slot's entry is built first, two where the symbol and then its range are
//! looked up), and the renormalisation words from one load expanded into the lanes that
//! need them (in band order, as the stream holds them): by AVX-512's expand, or by
//! AVX2's permutation of the words with the indices the lanes' mask looks up. The
//! portable decoder of [`super::Lookup`] is the reference: all give the same tokens,
//! classes and stream position.

use super::super::band_rans;
use super::super::rans::DecodeTable;
#[cfg(target_arch = "x86_64")]
use super::super::rans::{range_freq, PROB_SCALE};
use super::Lookup;

/// Bands one register decodes at once: 16 lanes of 32 bits.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) const LANES: usize = 16;

/// Decodes the tokens of the first turns into `tokens` and `classes` (in band order)
/// with the vector kernel, when this CPU has one (AVX-512 or AVX2) and the stream at
/// least 8 bands; returns the position it stopped at (a multiple of the band count, 0
/// when it did not run), from which the portable decoder goes on.
/// `slots` is scratch for the kernel's [`slot_entries`].
pub(super) fn decode_tokens(
    dec: &mut band_rans::Decoder<'_>,
    tables: &[DecodeTable],
    slots: &mut Vec<u32>,
    lookup: &Lookup,
    tokens: &mut [u8],
    classes: &mut [u8],
) -> usize {
    decode_tokens_by(true, dec, tables, slots, lookup, tokens, classes)
}

/// [`decode_tokens`], by the kernel that looks a state up in its slot's entry
/// ([`slot_entries`]) when `with_slots` and this CPU has it, else by the one that looks
/// up the slot's symbol and then its range.
fn decode_tokens_by(
    with_slots: bool,
    dec: &mut band_rans::Decoder<'_>,
    tables: &[DecodeTable],
    slots: &mut Vec<u32>,
    lookup: &Lookup,
    tokens: &mut [u8],
    classes: &mut [u8],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() == crate::isa::Level::Avx512 {
        // One register for 8 to 16 bands, two for 17 to 32.
        let bands = dec.bands();
        let registers = if bands >= 8 { bands.div_ceil(LANES) } else { 0 };
        if with_slots && crate::isa::avx512_kernels() && registers > 0 {
            crate::isa::vectorised(
                #[inline(always)]
                || slot_entries(tables, slots),
            );
            let class_of: [u8; 256] = std::array::from_fn(|t| lookup.values[t] as u8);
            let entries = x86::Entries::Slots(slots, &class_of);
            // SAFETY: the CPU has AVX-512 F, BW, DQ, VL and VBMI (the kernels').
            return unsafe {
                match bands {
                    16 => x86::decode_turns_vbmi::<1, false>(dec, entries, lookup, tokens, classes),
                    32 => x86::decode_turns_vbmi::<2, false>(dec, entries, lookup, tokens, classes),
                    _ if registers == 1 => {
                        x86::decode_turns_vbmi::<1, true>(dec, entries, lookup, tokens, classes)
                    }
                    _ => x86::decode_turns_vbmi::<2, true>(dec, entries, lookup, tokens, classes),
                }
            };
        }
        let entries = x86::Entries::Tables(tables);
        // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (the level's features).
        unsafe {
            match (bands, registers) {
                (16, _) => {
                    return x86::decode_turns::<1, false>(dec, entries, lookup, tokens, classes)
                }
                (32, _) => {
                    return x86::decode_turns::<2, false>(dec, entries, lookup, tokens, classes)
                }
                (_, 1) => {
                    return x86::decode_turns::<1, true>(dec, entries, lookup, tokens, classes)
                }
                (_, 2) => {
                    return x86::decode_turns::<2, true>(dec, entries, lookup, tokens, classes)
                }
                _ => {}
            }
        }
    }
    // Else AVX2's, where the CPU has it (it checks).
    #[cfg(target_arch = "x86_64")]
    return decode_tokens_avx2(with_slots, dec, tables, slots, lookup, tokens, classes);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (with_slots, dec, tables, slots, lookup, tokens, classes);
        0
    }
}

/// [`decode_tokens`] by the AVX2 kernel (8 bands to a register), when this CPU has AVX2
/// and the stream at least 8 bands; the position it stopped at (0 when it did not run).
/// The kernel looks a state up in its slot's entry ([`slot_entries`], built in `slots`)
/// and computes its token's class ([`x86::ClassFormula`]) when `with_slots` and the
/// configuration's classes have such a formula, else it looks up the slot's symbol and
/// then its range.
#[cfg(target_arch = "x86_64")]
fn decode_tokens_avx2(
    with_slots: bool,
    dec: &mut band_rans::Decoder<'_>,
    tables: &[DecodeTable],
    slots: &mut Vec<u32>,
    lookup: &Lookup,
    tokens: &mut [u8],
    classes: &mut [u8],
) -> usize {
    if !crate::isa::avx2_kernels() {
        return 0;
    }
    // One register of 8 lanes for every 8 bands or fewer.
    let registers = if dec.bands() >= 8 {
        dec.bands().div_ceil(x86::AVX2_LANES)
    } else {
        0
    };
    let entries = match x86::ClassFormula::fit(lookup) {
        Some(formula) if with_slots && registers > 0 => {
            crate::isa::vectorised(
                #[inline(always)]
                || slot_entries(tables, slots),
            );
            x86::Avx2Entries::Slots(slots, formula)
        }
        _ => x86::Avx2Entries::Tables(tables),
    };
    let (d, l) = (dec, lookup);
    // SAFETY: the CPU has AVX2 and POPCNT (the kernels').
    unsafe {
        let whole = d.bands().is_multiple_of(x86::AVX2_LANES);
        match (registers, whole) {
            (1, true) => x86::decode_turns_avx2::<1, false>(d, entries, l, tokens, classes),
            (2, true) => x86::decode_turns_avx2::<2, false>(d, entries, l, tokens, classes),
            (3, true) => x86::decode_turns_avx2::<3, false>(d, entries, l, tokens, classes),
            (4, true) => x86::decode_turns_avx2::<4, false>(d, entries, l, tokens, classes),
            (1, false) => x86::decode_turns_avx2::<1, true>(d, entries, l, tokens, classes),
            (2, false) => x86::decode_turns_avx2::<2, true>(d, entries, l, tokens, classes),
            (3, false) => x86::decode_turns_avx2::<3, true>(d, entries, l, tokens, classes),
            (4, false) => x86::decode_turns_avx2::<4, true>(d, entries, l, tokens, classes),
            _ => 0,
        }
    }
}

/// The entry of every slot of every table, table after table ([`PROB_SCALE`] each):
/// the slot's symbol (bits 0 to 7), the symbol's frequency less one (bits 8 to 19) and
/// the slot's offset from the symbol's cumulative frequency (from bit 20), so that one
/// lookup gives a state's symbol and its next state. Written into `slots`, followed by
/// 16 more words (scratch of the fill).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn slot_entries(tables: &[DecodeTable], slots: &mut Vec<u32>) {
    let scale = PROB_SCALE as usize;
    slots.resize(tables.len() * scale + LANES, 0);
    for (t, table) in tables.iter().enumerate() {
        let mut cum = t * scale;
        for (symbol, &range) in table.ranges().iter().enumerate() {
            let freq = range_freq(range) as usize;
            if freq == 0 {
                continue;
            }
            let entry = symbol as u32 | (freq as u32 - 1) << 8;
            // Whole runs of 16: the words past the range are the next range's (or
            // the next table's, or the 16 after the last), written afterwards.
            for start in (0..freq).step_by(LANES) {
                let run = &mut slots[cum + start..cum + start + LANES];
                for (offset, slot) in (start..).zip(run) {
                    *slot = entry | (offset as u32) << SLOT_OFFSET_SHIFT;
                }
            }
            cum += freq;
            if cum == (t + 1) * scale {
                break;
            }
        }
    }
}

/// Where a slot entry of [`slot_entries`] holds the slot's offset in its symbol's range.
#[cfg(target_arch = "x86_64")]
const SLOT_OFFSET_SHIFT: u32 = 20;

/// Reads the raw bits of the first turns of 16 (with AVX-512) or 8 (with AVX2) of
/// `tokens` (in band order, of words of at most 32 bits) from `raw`, starting at bit
/// `*bit`, and writes each value (its token's top bits above its raw bits) to `ordered`
/// in band order, with the vector kernel when this CPU has one; advances `*bit` and
/// returns the position it stopped at (a multiple of 8, 0 when it did not run).
pub(super) fn restore_values(
    tokens: &[u8],
    values: &[u32; 256],
    raw: &[u8],
    bit: &mut u64,
    ordered: &mut [u32],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() == crate::isa::Level::Avx512 && crate::isa::avx512_kernels() {
        // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (the level's features) and
        // VBMI (the kernels').
        return unsafe { x86::restore_values(tokens, values, raw, bit, ordered) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx2_kernels() {
        // SAFETY: the CPU has AVX2 and POPCNT (the kernels').
        return unsafe { x86::restore_values_avx2(tokens, values, raw, bit, ordered) };
    }
    let _ = (tokens, values, raw, bit, ordered);
    0
}

/// [`restore_values`] for words of up to 64 bits: reads the raw bits of the first turns
/// of 16 (with AVX-512) or 4 (with AVX2) of `tokens` from `raw`, starting at bit `*bit`,
/// and writes each value to `ordered` in band order, with the vector kernel when this
/// CPU has one; advances `*bit` and returns the position it stopped at (a multiple of 4,
/// 0 when it did not run).
pub(super) fn restore_wide_values(
    tokens: &[u8],
    values: &[u32; 256],
    raw: &[u8],
    bit: &mut u64,
    ordered: &mut [u64],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() == crate::isa::Level::Avx512 && crate::isa::avx512_kernels() {
        // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (the level's features) and
        // VBMI (the kernels').
        return unsafe { x86::restore_wide_values(tokens, values, raw, bit, ordered) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx2_kernels() {
        // SAFETY: the CPU has AVX2 and POPCNT (the kernels').
        return unsafe { x86::restore_wide_values_avx2(tokens, values, raw, bit, ordered) };
    }
    let _ = (tokens, values, raw, bit, ordered);
    0
}

/// Writes the values of `ordered` (in band order of `bands` bands, whole rows of
/// `width`) to their places in `out` with the vector kernel, 16 turns of 16 bands (with
/// AVX-512; 8 of 8 with AVX2) at a time through a transpose in registers and the bands
/// past the last such block one by one, when this CPU has one, the words are of 32
/// bits and there are at least as many bands as the register's lanes; returns whether
/// it ran.
pub(super) fn unband<T: crate::word::Word>(
    ordered: &[u32],
    width: usize,
    bands: usize,
    out: &mut [T],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if width.is_multiple_of(bands) && std::any::TypeId::of::<T>() == std::any::TypeId::of::<u32>() {
        let by_avx512 = crate::isa::level() == crate::isa::Level::Avx512 && bands >= LANES;
        let by_avx2 = crate::isa::avx2_kernels() && bands >= x86::AVX2_LANES;
        if by_avx512 || by_avx2 {
            // SAFETY: `T` is `u32` (the same type id), so the slice is one of `u32`s.
            let out = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len()) };
            if by_avx512 {
                // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (the level's features).
                unsafe { x86::unband(ordered, width, bands, out) };
            } else {
                // SAFETY: the CPU has AVX2 and POPCNT (the kernels').
                unsafe { x86::unband_avx2(ordered, width, bands, out) };
            }
            return true;
        }
    }
    let _ = (ordered, width, bands, out);
    false
}

/// [`unband`] for 64-bit words: 8 turns of 8 bands (with AVX-512; 4 of 4 with AVX2) at a
/// time through a transpose in registers, when this CPU has the vector kernels and there
/// are at least 8 bands; returns whether it ran.
pub(super) fn unband_wide<T: crate::word::Word>(
    ordered: &[u64],
    width: usize,
    bands: usize,
    out: &mut [T],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if bands >= 8
        && width.is_multiple_of(bands)
        && std::any::TypeId::of::<T>() == std::any::TypeId::of::<u64>()
    {
        let by_avx512 = crate::isa::level() == crate::isa::Level::Avx512;
        if by_avx512 || crate::isa::avx2_kernels() {
            // SAFETY: `T` is `u64` (the same type id), so the slice is one of `u64`s.
            let out = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len()) };
            if by_avx512 {
                // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (the level's features).
                unsafe { x86::unband_wide(ordered, width, bands, out) };
            } else {
                // SAFETY: the CPU has AVX2 and POPCNT (the kernels').
                unsafe { x86::unband_wide_avx2(ordered, width, bands, out) };
            }
            return true;
        }
    }
    let _ = (ordered, width, bands, out);
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::super::super::band_rans::{self, BAND_L};
    use super::super::super::rans::PROB_SCALE;
    use super::super::super::rans::{
        DecodeTable, CLASS_SHIFT, CUM_SHIFT, PROB_BITS, RANGES_OFFSET, SYMBOLS_OFFSET,
    };
    use super::{Lookup, LANES, SLOT_OFFSET_SHIFT};
    use crate::bits::ranks::EXPAND;

    /// Where the kernel looks a state's symbol and range up.
    #[derive(Clone, Copy)]
    pub(super) enum Entries<'a> {
        /// The tables themselves: the slot's symbol, then the symbol's range.
        Tables(&'a [DecodeTable]),
        /// Every slot's entry (see [`super::slot_entries`]) and each token's class.
        Slots(&'a [u32], &'a [u8; 256]),
    }

    /// Defines a kernel of [`super::decode_tokens`] compiled for `$features`: the
    /// decoder's bands (8 to `16 V`; `16 V` unless `PARTIAL`) in `V` registers of 16
    /// lanes, band `g` in lane `g mod 16` of register `g / 16`, the lanes past the last
    /// band idle (masked off renormalisation, stores and the states written back), the
    /// states looked up in `entries`,
    /// the classes of tokens looked up by slot entry with `$class`. Two copies of one
    /// body, so that each inlines the intrinsics of its features.
    macro_rules! token_kernel {
        ($(#[$doc:meta])* $name:ident, $class:ident, $features:literal) => {
            $(#[$doc])*
            #[target_feature(enable = $features)]
            pub(super) fn $name<const V: usize, const PARTIAL: bool>(
                dec: &mut band_rans::Decoder<'_>,
                entries: Entries<'_>,
                lookup: &Lookup,
                tokens: &mut [u8],
                classes: &mut [u8],
            ) -> usize {
        // Constant unless the last register is `PARTIAL`ly used.
        let bands = if PARTIAL { dec.bands() } else { V * LANES };
        debug_assert!(bands == dec.bands());
        debug_assert!(bands >= 8 && (V - 1) * LANES < bands && bands <= V * LANES);
        // The lanes of each register that hold a band.
        let used: [__mmask16; V] = std::array::from_fn(|v| {
            let lanes = bands.saturating_sub(v * LANES).min(LANES);
            ((1u32 << lanes) - 1) as __mmask16
        });
        let n = tokens.len().min(classes.len());
        let turns = n / bands;
        let cfg = lookup.cfg;
        let (width, left) = (lookup.width, lookup.left);
        debug_assert!(width.is_multiple_of(bands) && left.is_multiple_of(bands));
        let (tables_base, slots, class_of) = match entries {
            Entries::Tables(tables) => {
                (tables.as_ptr().cast::<u8>(), None, [_mm512_setzero_si512(); 4])
            }
            Entries::Slots(slots, class_of) => {
                debug_assert!(
                    slots.len()
                        >= usize::from(cfg.buckets) * usize::from(cfg.split) * PROB_SCALE as usize
                );
                (std::ptr::null(), Some(slots.as_ptr()), registers_of(class_of))
            }
        };
        // A context's table, in bytes from the first table's, or in slot entries from
        // the first entry.
        let table_size = match slots {
            None => std::mem::size_of::<DecodeTable>() as i32,
            Some(_) => PROB_SCALE as i32,
        };

        // Contexts: class 0 for up = 0, else up - base + 1 clamped to [min(1, last),
        // last]; times the split, plus the refinement by the sign of left - up.
        let last = i32::from(cfg.buckets) - 1;
        let class_floor = _mm512_set1_epi32(1.min(last));
        let class_last = _mm512_set1_epi32(last);
        let class_shift = _mm512_set1_epi32(i32::from(cfg.base) - 1);
        let split3 = cfg.split == 3;
        let split = _mm512_set1_epi32(i32::from(cfg.split) * table_size);
        let table_size = _mm512_set1_epi32(table_size);
        let symbols_at = _mm512_set1_epi32(SYMBOLS_OFFSET as i32);
        let ranges_at = _mm512_set1_epi32(RANGES_OFFSET as i32);
        let byte = _mm512_set1_epi32(0xff);
        let slot_mask = _mm512_set1_epi32((1 << PROB_BITS) - 1);
        let freq_mask = _mm512_set1_epi32((1 << CUM_SHIFT) - 1);
        let entry_freq_mask = _mm512_set1_epi32((1 << (SLOT_OFFSET_SHIFT - 8)) - 1);
        let bound = _mm512_set1_epi32(BAND_L as i32);
        let zero = _mm512_setzero_si512();

        // SAFETY: `V * 16` states of 4 bytes each (at most 32), unaligned.
        let mut x: [__m512i; V] = std::array::from_fn(|v| unsafe {
            _mm512_loadu_si512(dec.states.as_ptr().add(v * LANES).cast())
        });
        let input = dec.input;
        let mut pos = dec.pos;
        let mut turn = 0;
        // Each register's renormalisation loads the 32 bytes at `pos`: the turns stop
        // where fewer than `V * 32` are left.
        while turn < turns && pos + V * 32 <= input.len() {
            for (v, (x, &used)) in x.iter_mut().zip(&used).enumerate() {
                let at = turn * bands + v * LANES;
                let load_classes = |back: usize| {
                    // SAFETY: `back <= at` and a multiple of the band count, so the 16
                    // bytes end at `at - back + 16 <= (turn + 1) bands + 16 (v + 1) -
                    // 2 bands`, within this turn (at least 8 bands, 16 for `v = 1`) and
                    // so below `n`.
                    unsafe {
                        let p = classes.as_ptr().add(at - back);
                        _mm512_cvtepu8_epi32(_mm_loadu_si128(p.cast()))
                    }
                };
                let left_classes = if at >= left { load_classes(left) } else { zero };
                let up = if at >= width {
                    load_classes(width)
                } else {
                    left_classes
                };
                let class = _mm512_min_epi32(
                    _mm512_max_epi32(_mm512_sub_epi32(up, class_shift), class_floor),
                    class_last,
                );
                let class = _mm512_maskz_mov_epi32(_mm512_cmpneq_epi32_mask(up, zero), class);
                let mut table = _mm512_mullo_epi32(class, split);
                if split3 {
                    // left > up adds 2 tables, left == up 1.
                    let greater = _mm512_cmpgt_epi32_mask(left_classes, up);
                    let not_less = _mm512_cmpge_epi32_mask(left_classes, up);
                    table = _mm512_mask_add_epi32(table, greater, table, table_size);
                    table = _mm512_mask_add_epi32(table, not_less, table, table_size);
                }

                let slot = _mm512_and_si512(*x, slot_mask);
                let (symbol, class, state) = if let Some(slots) = slots {
                    // SAFETY: `table` is a context's first entry (below `buckets *
                    // split` tables of 4096 entries, the entries built) and `slot`
                    // one of its 4096.
                    let entry = unsafe {
                        _mm512_i32gather_epi32::<4>(_mm512_add_epi32(table, slot), slots.cast())
                    };
                    let symbol = _mm512_and_si512(entry, byte);
                    let freq = _mm512_and_si512(_mm512_srli_epi32::<8>(entry), entry_freq_mask);
                    let quotient = _mm512_srli_epi32::<PROB_BITS>(*x);
                    let state = _mm512_add_epi32(
                        _mm512_add_epi32(_mm512_mullo_epi32(freq, quotient), quotient),
                        _mm512_srli_epi32::<SLOT_OFFSET_SHIFT>(entry),
                    );
                    (symbol, $class(symbol, &class_of), state)
                } else {
                    // SAFETY: `table` is a context's table (below `buckets * split`, the
                    // tables read) times its size, and the 4 bytes at a slot lie within
                    // its table (`DecodeTable` is `repr(C)`, the symbols first).
                    let symbol = unsafe {
                        let at = _mm512_add_epi32(_mm512_add_epi32(table, symbols_at), slot);
                        _mm512_and_si512(_mm512_i32gather_epi32::<1>(at, tables_base.cast()), byte)
                    };
                    // SAFETY: a symbol's range in its table, 4-byte aligned.
                    let range = unsafe {
                        let at = _mm512_add_epi32(
                            _mm512_add_epi32(table, ranges_at),
                            _mm512_slli_epi32::<2>(symbol),
                        );
                        _mm512_i32gather_epi32::<1>(at, tables_base.cast())
                    };
                    let state = _mm512_sub_epi32(
                        _mm512_add_epi32(
                            _mm512_mullo_epi32(
                                _mm512_and_si512(range, freq_mask),
                                _mm512_srli_epi32::<PROB_BITS>(*x),
                            ),
                            slot,
                        ),
                        _mm512_and_si512(_mm512_srli_epi32::<CUM_SHIFT>(range), slot_mask),
                    );
                    (symbol, _mm512_srli_epi32::<CLASS_SHIFT>(range), state)
                };
                let renormalise = _mm512_cmplt_epu32_mask(state, bound) & used;
                // SAFETY: `pos + 32 <= input.len()` (the loop's condition: this
                // register's words start at most `(V - 1) * 32` bytes further).
                let words = unsafe {
                    _mm512_cvtepu16_epi32(_mm256_loadu_si256(input.as_ptr().add(pos).cast()))
                };
                let words = _mm512_maskz_expand_epi32(renormalise, words);
                *x =
                    _mm512_mask_or_epi32(state, renormalise, _mm512_slli_epi32::<16>(state), words);
                pos += 2 * renormalise.count_ones() as usize;

                if used != 0xffff {
                    // SAFETY: the positions `at..` of the used lanes lie in both buffers
                    // (`turn < n / bands`); the others are not written.
                    unsafe {
                        _mm_mask_storeu_epi8(
                            tokens.as_mut_ptr().add(at).cast(),
                            used,
                            _mm512_cvtepi32_epi8(symbol),
                        );
                        _mm_mask_storeu_epi8(
                            classes.as_mut_ptr().add(at).cast(),
                            used,
                            _mm512_cvtepi32_epi8(class),
                        );
                    }
                } else {
                    // SAFETY: positions `at..at + 16` lie in both buffers (`turn < n /
                    // bands`).
                    unsafe {
                        _mm_storeu_si128(
                            tokens.as_mut_ptr().add(at).cast(),
                            _mm512_cvtepi32_epi8(symbol),
                        );
                        _mm_storeu_si128(
                            classes.as_mut_ptr().add(at).cast(),
                            _mm512_cvtepi32_epi8(class),
                        );
                    }
                }
            }
            turn += 1;
        }
        for (v, (x, &used)) in x.iter().zip(&used).enumerate() {
            // SAFETY: `V * 16` states of 4 bytes each (at most 32), unaligned; the
            // bands' own only.
            unsafe {
                _mm512_mask_storeu_epi32(dec.states.as_mut_ptr().add(v * LANES).cast(), used, *x)
            };
        }
        dec.pos = pos;
        turn * bands
    }
        };
    }

    token_kernel!(
        /// The kernel by symbol and range ([`Entries::Tables`]).
        decode_turns,
        no_class_lookup,
        "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt"
    );
    token_kernel!(
        /// The kernel by slot entry ([`Entries::Slots`]), whose classes come from VBMI's
        /// byte shuffles.
        decode_turns_vbmi,
        class_lookup,
        "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx2,popcnt"
    );

    /// Bands one AVX2 register decodes at once: 8 lanes of 32 bits.
    pub(super) const AVX2_LANES: usize = 8;

    /// Where the AVX2 kernel looks a state's symbol and range up.
    #[derive(Clone, Copy)]
    pub(super) enum Avx2Entries<'a> {
        /// The tables themselves: the slot's symbol, then the symbol's range (and so
        /// its token's class).
        Tables(&'a [DecodeTable]),
        /// Every slot's entry (see [`super::slot_entries`]), the classes of tokens
        /// computed by the formula.
        Slots(&'a [u32], ClassFormula),
    }

    /// The class of each token in a few vector operations, as
    /// [`ContextConfig::class_of`](super::super::super::context::ContextConfig::class_of)
    /// gives it: tokens below `direct` look theirs up in a 16-entry table, the others
    /// are `((t - start) >> shift) + base`.
    #[derive(Clone, Copy)]
    pub(super) struct ClassFormula {
        /// The classes of tokens 0 to 15 (those below `direct` used).
        small: [u8; 16],
        /// The first token of the formula (at most 16).
        direct: i32,
        start: i32,
        shift: i32,
        base: i32,
    }

    impl ClassFormula {
        /// The formula of `lookup`'s configuration, when it gives the class of every
        /// token of its [`alphabet`] (checked against the lookup's classes).
        pub(super) fn fit(lookup: &Lookup) -> Option<ClassFormula> {
            let cfg = lookup.cfg;
            let k = i32::from(cfg.token_bits);
            // Bit lengths, or with float fields a zero, two signs and then the
            // exponents' tokens, `2^(k + 1)` apiece.
            let (direct, start, shift, base) = match cfg.fields {
                None => (2 << k, 0, k, k),
                Some(_) => (3, 3, k + 1, 2),
            };
            let class = |t: usize| lookup.values[t] as u8;
            let formula = ClassFormula {
                small: std::array::from_fn(class),
                direct,
                start,
                shift,
                base,
            };
            let fits = direct <= 16
                && alphabet(&lookup.values)
                    .all(|(t, _)| formula.class_of(t as i32) == i32::from(class(t)));
            fits.then_some(formula)
        }

        /// The class of token `t`, one at a time.
        fn class_of(&self, t: i32) -> i32 {
            if t < self.direct {
                i32::from(self.small[t as usize])
            } else {
                ((t - self.start) >> self.shift) + self.base
            }
        }

        /// The classes of the 8 tokens of `tokens` (below 256, one a lane), each in its
        /// lane's low byte (the kernel stores those).
        #[target_feature(enable = "avx2")]
        pub(super) fn classes(&self, tokens: __m256i) -> __m256i {
            // SAFETY: 16 bytes, unaligned.
            let small = unsafe { _mm_loadu_si128(self.small.as_ptr().cast()) };
            // Tokens of 128 and more look up 0, and those of 16 and more an entry of
            // their low 4 bits: the formula's.
            let looked_up = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(small), tokens);
            let computed = _mm256_add_epi32(
                _mm256_srl_epi32(
                    _mm256_sub_epi32(tokens, _mm256_set1_epi32(self.start)),
                    _mm_cvtsi32_si128(self.shift),
                ),
                _mm256_set1_epi32(self.base),
            );
            let by_formula = _mm256_cmpgt_epi32(tokens, _mm256_set1_epi32(self.direct - 1));
            _mm256_blendv_epi8(looked_up, computed, by_formula)
        }
    }

    /// The low bytes of the 8 lanes of `v` as one 64-bit word, lane 0 lowest.
    #[target_feature(enable = "avx2")]
    fn low_bytes(v: __m256i) -> i64 {
        let low_byte_of_each = _mm256_setr_epi8(
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1,
            -1, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        let bytes = _mm256_shuffle_epi8(v, low_byte_of_each);
        let joined = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
        _mm_cvtsi128_si64(_mm256_castsi256_si128(joined))
    }

    /// The kernel of [`super::decode_tokens`] for CPUs with AVX2: `V` registers of 8
    /// bands each (8 to 32 bands), each state's slot entry gathered and its token's
    /// class computed ([`Avx2Entries::Slots`]), or its symbol and then its range
    /// gathered from the tables of the lanes' contexts ([`Avx2Entries::Tables`]); the
    /// renormalisation words loaded at once and moved to the lanes that take them by a
    /// permutation of [`EXPAND`] (the lanes' mask's ranks).
    ///
    /// # Safety
    ///
    /// AVX2 and POPCNT must be present.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn decode_turns_avx2<const V: usize, const PARTIAL: bool>(
        dec: &mut band_rans::Decoder<'_>,
        entries: Avx2Entries<'_>,
        lookup: &Lookup,
        tokens: &mut [u8],
        classes: &mut [u8],
    ) -> usize {
        // Constant unless the last register is `PARTIAL`ly used.
        let bands = if PARTIAL { dec.bands() } else { V * AVX2_LANES };
        debug_assert!(bands == dec.bands());
        debug_assert!(bands >= 8 && (V - 1) * AVX2_LANES < bands && bands <= V * AVX2_LANES);
        // The lanes of each register that hold a band.
        let lanes: [usize; V] =
            std::array::from_fn(|v| bands.saturating_sub(v * AVX2_LANES).min(AVX2_LANES));
        let n = tokens.len().min(classes.len());
        let turns = n / bands;
        let cfg = lookup.cfg;
        let (width, left) = (lookup.width, lookup.left);
        debug_assert!(width.is_multiple_of(bands) && left.is_multiple_of(bands));
        let (tables_base, slots) = match entries {
            Avx2Entries::Tables(tables) => (tables.as_ptr().cast::<i32>(), None),
            Avx2Entries::Slots(slots, formula) => {
                debug_assert!(
                    slots.len()
                        >= usize::from(cfg.buckets) * usize::from(cfg.split) * PROB_SCALE as usize
                );
                (
                    std::ptr::null(),
                    Some((slots.as_ptr().cast::<i32>(), formula)),
                )
            }
        };
        // A context's table, in bytes from the first table's, or in slot entries from
        // the first entry.
        let table_size = match slots {
            None => std::mem::size_of::<DecodeTable>() as i32,
            Some(_) => PROB_SCALE as i32,
        };

        // Contexts as the AVX-512 kernel computes them.
        let last = i32::from(cfg.buckets) - 1;
        let class_floor = _mm256_set1_epi32(1.min(last));
        let class_last = _mm256_set1_epi32(last);
        let class_shift = _mm256_set1_epi32(i32::from(cfg.base) - 1);
        let split3 = cfg.split == 3;
        let split = _mm256_set1_epi32(i32::from(cfg.split) * table_size);
        let table_size = _mm256_set1_epi32(table_size);
        let symbols_at = _mm256_set1_epi32(SYMBOLS_OFFSET as i32);
        let ranges_at = _mm256_set1_epi32(RANGES_OFFSET as i32);
        let byte = _mm256_set1_epi32(0xff);
        let slot_mask = _mm256_set1_epi32((1 << PROB_BITS) - 1);
        let freq_mask = _mm256_set1_epi32((1 << CUM_SHIFT) - 1);
        let entry_freq_mask = _mm256_set1_epi32((1 << (SLOT_OFFSET_SHIFT - 8)) - 1);
        let zero = _mm256_setzero_si256();

        // SAFETY: `V * 8` states of 4 bytes each (at most 32), unaligned.
        let mut x: [__m256i; V] = std::array::from_fn(|v| unsafe {
            _mm256_loadu_si256(dec.states.as_ptr().add(v * AVX2_LANES).cast())
        });
        let input = dec.input;
        let mut pos = dec.pos;
        let mut turn = 0;
        // Each register's renormalisation loads the 16 bytes at `pos`: the turns stop
        // where fewer than `V * 16` are left.
        while turn < turns && pos + V * 16 <= input.len() {
            for (v, (x, &lanes)) in x.iter_mut().zip(&lanes).enumerate() {
                let at = turn * bands + v * AVX2_LANES;
                let load_classes = |back: usize| {
                    // SAFETY: `back <= at` and a multiple of the band count, so the 8
                    // bytes end within this turn (as in the AVX-512 kernel) and so
                    // below `n`.
                    unsafe {
                        let p = classes.as_ptr().add(at - back);
                        _mm256_cvtepu8_epi32(_mm_loadl_epi64(p.cast()))
                    }
                };
                let left_classes = if at >= left { load_classes(left) } else { zero };
                let up = if at >= width {
                    load_classes(width)
                } else {
                    left_classes
                };
                let class = _mm256_min_epi32(
                    _mm256_max_epi32(_mm256_sub_epi32(up, class_shift), class_floor),
                    class_last,
                );
                let class = _mm256_andnot_si256(_mm256_cmpeq_epi32(up, zero), class);
                let mut table = _mm256_mullo_epi32(class, split);
                if split3 {
                    // left > up adds 2 tables, left == up 1.
                    let greater = _mm256_cmpgt_epi32(left_classes, up);
                    let less = _mm256_cmpgt_epi32(up, left_classes);
                    table = _mm256_add_epi32(table, _mm256_and_si256(greater, table_size));
                    table = _mm256_add_epi32(table, _mm256_andnot_si256(less, table_size));
                }

                let slot = _mm256_and_si256(*x, slot_mask);
                let (symbol, class, state) = if let Some((slots, formula)) = slots {
                    // SAFETY: `table` is a context's first entry (below `buckets *
                    // split` tables of 4096 entries, the entries built) and `slot` one
                    // of its 4096.
                    let entry = unsafe {
                        _mm256_i32gather_epi32::<4>(slots, _mm256_add_epi32(table, slot))
                    };
                    let symbol = _mm256_and_si256(entry, byte);
                    let freq = _mm256_and_si256(_mm256_srli_epi32::<8>(entry), entry_freq_mask);
                    let quotient = _mm256_srli_epi32::<{ PROB_BITS as i32 }>(*x);
                    let state = _mm256_add_epi32(
                        _mm256_add_epi32(_mm256_mullo_epi32(freq, quotient), quotient),
                        _mm256_srli_epi32::<{ SLOT_OFFSET_SHIFT as i32 }>(entry),
                    );
                    (symbol, formula.classes(symbol), state)
                } else {
                    // SAFETY: `table` is a context's table (below `buckets * split`,
                    // the tables read) times its size, and the 4 bytes at a slot lie
                    // within its table (`DecodeTable` is `repr(C)`, the symbols first).
                    let symbol = unsafe {
                        let at = _mm256_add_epi32(_mm256_add_epi32(table, symbols_at), slot);
                        _mm256_and_si256(_mm256_i32gather_epi32::<1>(tables_base, at), byte)
                    };
                    // SAFETY: a symbol's range in its table, 4-byte aligned.
                    let range = unsafe {
                        let at = _mm256_add_epi32(
                            _mm256_add_epi32(table, ranges_at),
                            _mm256_slli_epi32::<2>(symbol),
                        );
                        _mm256_i32gather_epi32::<1>(tables_base, at)
                    };
                    let state = _mm256_sub_epi32(
                        _mm256_add_epi32(
                            _mm256_mullo_epi32(
                                _mm256_and_si256(range, freq_mask),
                                _mm256_srli_epi32::<{ PROB_BITS as i32 }>(*x),
                            ),
                            slot,
                        ),
                        _mm256_and_si256(
                            _mm256_srli_epi32::<{ CUM_SHIFT as i32 }>(range),
                            slot_mask,
                        ),
                    );
                    (
                        symbol,
                        _mm256_srli_epi32::<{ CLASS_SHIFT as i32 }>(range),
                        state,
                    )
                };
                // Below `BAND_L` = 2^16: nothing above the low 16 bits.
                let renormalise = _mm256_cmpeq_epi32(_mm256_srli_epi32::<16>(state), zero);
                let mask = _mm256_movemask_ps(_mm256_castsi256_ps(renormalise)) as usize
                    & ((1 << lanes) - 1);
                // SAFETY: `pos + 16 <= input.len()` (the loop's condition: this
                // register's words start at most `(V - 1) * 16` bytes further), and
                // `EXPAND`'s rows hold 8 indices.
                let words = unsafe {
                    let words =
                        _mm256_cvtepu16_epi32(_mm_loadu_si128(input.as_ptr().add(pos).cast()));
                    let to_lanes = _mm256_loadu_si256(EXPAND[mask].as_ptr().cast());
                    _mm256_permutevar8x32_epi32(words, to_lanes)
                };
                let renormalised = _mm256_or_si256(_mm256_slli_epi32::<16>(state), words);
                *x = _mm256_blendv_epi8(state, renormalised, renormalise);
                pos += 2 * mask.count_ones() as usize;

                let class = low_bytes(class);
                if lanes == AVX2_LANES {
                    // SAFETY: positions `at..at + 8` lie in both buffers (`turn < n /
                    // bands`).
                    unsafe {
                        tokens
                            .as_mut_ptr()
                            .add(at)
                            .cast::<i64>()
                            .write_unaligned(low_bytes(symbol));
                        classes
                            .as_mut_ptr()
                            .add(at)
                            .cast::<i64>()
                            .write_unaligned(class);
                    }
                } else {
                    tokens[at..at + lanes]
                        .copy_from_slice(&low_bytes(symbol).to_le_bytes()[..lanes]);
                    classes[at..at + lanes].copy_from_slice(&class.to_le_bytes()[..lanes]);
                }
            }
            turn += 1;
        }
        for (v, (x, &lanes)) in x.iter().zip(&lanes).enumerate() {
            let mut states = [0u32; AVX2_LANES];
            // SAFETY: 8 states of 4 bytes, unaligned.
            unsafe { _mm256_storeu_si256(states.as_mut_ptr().cast(), *x) };
            // The bands' own only.
            dec.states[v * AVX2_LANES..v * AVX2_LANES + lanes].copy_from_slice(&states[..lanes]);
        }
        dec.pos = pos;
        turn * bands
    }

    /// See [`super::restore_values`]. The meaning of each token (its raw bit count and
    /// top bits) comes from byte shuffles of 64 tokens at a time.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx2,popcnt")]
    pub(super) fn restore_values(
        tokens: &[u8],
        values: &[u32; 256],
        raw: &[u8],
        bit: &mut u64,
        ordered: &mut [u32],
    ) -> usize {
        let turns = tokens.len().min(ordered.len()) / LANES;
        // Each token's raw bit count, and its top bits' low and high bytes.
        let byte_table =
            |shift: u32| registers_of(&std::array::from_fn(|t| (values[t] >> shift) as u8));
        let (counts_of, top_low_of, top_high_of) = (byte_table(8), byte_table(16), byte_table(24));
        let one = _mm512_set1_epi32(1);
        let seven = _mm512_set1_epi32(7);
        let thirty_two = _mm512_set1_epi32(32);
        let spread = _mm512_set1_epi32(0x0101_0101);
        let byte_order = _mm512_set1_epi32(0x0302_0100);
        let next_four = _mm512_set1_epi32(0x0404_0404);
        let last_lane = _mm512_set1_epi32(LANES as i32 - 1);
        let zero = _mm512_setzero_si512();
        let mut at = *bit;
        let mut turn = 0;
        'blocks: while turn < turns {
            // The meanings of the next 4 turns' tokens (of those there are).
            let p = turn * LANES;
            let left = (tokens.len() - p).min(64);
            // SAFETY: the bytes loaded lie in `tokens` (`p + left <= tokens.len()`); the
            // others are masked off.
            let block = unsafe {
                _mm512_maskz_loadu_epi8(u64::MAX >> (64 - left), tokens.as_ptr().add(p).cast())
            };
            let counts = byte_lookup(block, &counts_of);
            let top_low = byte_lookup(block, &top_low_of);
            let top_high = byte_lookup(block, &top_high_of);
            for g in 0..4 {
                // A turn reads at most 16 fields of at most 32 bits from the 128 bytes
                // from the byte of its first bit (its fields end within the first 67).
                if turn >= turns || (at >> 3) as usize + 128 > raw.len() {
                    break 'blocks;
                }
                let quarter = |v: __m512i| {
                    _mm512_cvtepu8_epi32(match g {
                        0 => _mm512_castsi512_si128(v),
                        1 => _mm512_extracti32x4_epi32::<1>(v),
                        2 => _mm512_extracti32x4_epi32::<2>(v),
                        _ => _mm512_extracti32x4_epi32::<3>(v),
                    })
                };
                let n = quarter(counts);
                let top =
                    _mm512_or_si512(quarter(top_low), _mm512_slli_epi32::<8>(quarter(top_high)));
                // Inclusive prefix sums of the field widths across the lanes.
                let mut sum = n;
                sum = _mm512_add_epi32(sum, _mm512_alignr_epi32::<15>(sum, zero));
                sum = _mm512_add_epi32(sum, _mm512_alignr_epi32::<14>(sum, zero));
                sum = _mm512_add_epi32(sum, _mm512_alignr_epi32::<12>(sum, zero));
                sum = _mm512_add_epi32(sum, _mm512_alignr_epi32::<8>(sum, zero));
                let start =
                    _mm512_add_epi32(_mm512_sub_epi32(sum, n), _mm512_set1_epi32((at & 7) as i32));
                // Each field's 8 bytes from the byte of its first bit, picked from the
                // window: bytes `from..from + 4` and `from + 4..from + 8` of each lane.
                // SAFETY: the 128 bytes lie within `raw` (checked above).
                let (window_lo, window_hi) = unsafe {
                    let base = raw.as_ptr().add((at >> 3) as usize);
                    (
                        _mm512_loadu_si512(base.cast()),
                        _mm512_loadu_si512(base.add(64).cast()),
                    )
                };
                let from = _mm512_srli_epi32::<3>(start);
                let index = _mm512_add_epi32(_mm512_mullo_epi32(from, spread), byte_order);
                let low = _mm512_permutex2var_epi8(window_lo, index, window_hi);
                let high = _mm512_permutex2var_epi8(
                    window_lo,
                    _mm512_add_epi32(index, next_four),
                    window_hi,
                );
                let shift = _mm512_and_si512(start, seven);
                let fields = _mm512_or_si512(
                    _mm512_srlv_epi32(low, shift),
                    _mm512_sllv_epi32(high, _mm512_sub_epi32(thirty_two, shift)),
                );
                let mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, n), one);
                let out =
                    _mm512_or_si512(_mm512_sllv_epi32(top, n), _mm512_and_si512(fields, mask));
                // SAFETY: positions `turn * 16..turn * 16 + 16` lie in `ordered`
                // (`turn < turns`).
                unsafe { _mm512_storeu_si512(ordered.as_mut_ptr().add(turn * LANES).cast(), out) };
                let total = _mm512_cvtsi512_si32(_mm512_permutexvar_epi32(last_lane, sum));
                at += total as u64;
                turn += 1;
            }
        }
        *bit = at;
        turn * LANES
    }

    /// The token width `k` of `values`, when they are the meanings of bit-length tokens
    /// (see [`ContextConfig::token_value`](super::super::super::context::ContextConfig::token_value)):
    /// token `t` then has `n = max((t >> k) - 1, 0)` raw bits and the top bits `t - (n
    /// << k)`, for every token of the [`alphabet`].
    pub(super) fn length_token_bits(values: &[u32; 256]) -> Option<i32> {
        (1..=2).find(|&k| {
            alphabet(values).all(|(t, value)| {
                let n = ((t >> k) as u32).saturating_sub(1);
                value >> 8 & 0xff == n && value >> 16 == t as u32 - (n << k)
            })
        })
    }

    /// The tokens of the alphabet whose meanings (see
    /// [`token_values`](super::super::super::context_ans::token_values)) are `values`,
    /// with their meanings: token 0 and every token of a meaning other than 0. A token
    /// past the alphabet has meaning 0 (it is never decoded); one within it past token
    /// 0 has a class of at least 1.
    fn alphabet(values: &[u32; 256]) -> impl Iterator<Item = (usize, u32)> + '_ {
        (values.iter().copied().enumerate()).filter(|&(t, value)| t == 0 || value != 0)
    }

    /// The meanings of float-field tokens (see
    /// [`ContextConfig::token_value`](super::super::super::context::ContextConfig::token_value)),
    /// as a formula: token 0 has no raw bits and top bits 0; tokens 1 and 2 have
    /// `sign_raw_bits` raw bits and top bits `t - 1`; token `t >= 3`, of `u = t - 3`
    /// (exponent step `u >> (k + 1)`, sign bit `s = u & (1 << k)`, `k` the token's
    /// mantissa bits), has `field_raw_bits` raw bits and top bits `u + (emin << k) -
    /// ((u >> (k + 1)) << k) + (s << exponent_bits) - s`: its sign above its exponent
    /// (the window's first plus the step) above its mantissa bits.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct FieldTokens {
        /// Mantissa bits a token carries (`k`).
        token_bits: u32,
        /// The window's first exponent field.
        emin: u32,
        /// Exponent bits of the word.
        exponent_bits: u32,
        /// Raw bits after tokens 1 and 2.
        sign_raw_bits: u32,
        /// Raw bits after the tokens from 3 on.
        field_raw_bits: u32,
    }

    impl FieldTokens {
        /// The raw-bit count and top bits of token `t` by the formula.
        fn meaning(self, t: u32) -> (u32, u32) {
            let k = self.token_bits;
            match t {
                0 => (0, 0),
                1 | 2 => (self.sign_raw_bits, t - 1),
                _ => {
                    let u = t - 3;
                    let sign = u & 1 << k;
                    let top = (u + (self.emin << k) - (u >> (k + 1) << k))
                        .wrapping_add((sign << self.exponent_bits).wrapping_sub(sign));
                    (self.field_raw_bits, top)
                }
            }
        }

        /// The formula that gives `values` for every token of the [`alphabet`], when
        /// they are float-field tokens' meanings: its parameters read from tokens 1, 3
        /// and `3 + 2^k` (the first of the negative sign), then checked on every token.
        pub(super) fn fit(values: &[u32; 256]) -> Option<FieldTokens> {
            let top = |t: usize| values[t] >> 16;
            let raw_bits = |t: usize| values[t] >> 8 & 0xff;
            (0..=super::super::super::context::MAX_FIELD_TOKEN_BITS as u32).find_map(|k| {
                // The sign's step: `1 << (exponent_bits + k)`.
                let step = top(3 + (1 << k)).checked_sub(top(3))?;
                if !step.is_power_of_two() || step.trailing_zeros() < k {
                    return None;
                }
                let fields = FieldTokens {
                    token_bits: k,
                    emin: top(3) >> k,
                    exponent_bits: step.trailing_zeros() - k,
                    sign_raw_bits: raw_bits(1),
                    field_raw_bits: raw_bits(3),
                };
                alphabet(values)
                    .all(|(t, value)| (value >> 8 & 0xff, value >> 16) == fields.meaning(t as u32))
                    .then_some(fields)
            })
        }
    }

    /// How a raw-bit kernel finds each token's raw-bit count and top bits: computed by a
    /// formula the meanings table was found to follow, or gathered from the table.
    #[derive(Clone, Copy)]
    enum Meanings {
        /// Bit-length tokens of this width (a shift count, see [`length_token_bits`]).
        Lengths(__m128i),
        /// Float-field tokens (see [`FieldTokens`]).
        Fields(FieldVectors),
        /// Neither: gathered from the table.
        Gathered,
    }

    /// [`FieldTokens`] as vector constants.
    #[derive(Clone, Copy)]
    struct FieldVectors {
        /// The raw-bit counts of tokens 0, 1, 2 and 3 (and on) in bytes 0 to 3 of each
        /// 128-bit lane, for a byte shuffle by `min(t, 3)`.
        raw_bits: __m256i,
        /// The top bits of tokens 0, 1 and 2 likewise.
        small_tops: __m256i,
        /// `k + 1` and `k`, shift counts.
        above_sign: __m128i,
        token_bits: __m128i,
        /// The exponent's bits, a shift count.
        exponent_bits: __m128i,
        /// The sign bit of `u` (`1 << k`) and the window's first exponent in place
        /// (`emin << k`), in every lane.
        sign: __m256i,
        emin: __m256i,
    }

    impl Meanings {
        /// How the kernels find the meanings `values`.
        #[target_feature(enable = "avx2")]
        fn of(values: &[u32; 256]) -> Meanings {
            if let Some(k) = length_token_bits(values) {
                return Meanings::Lengths(_mm_cvtsi32_si128(k));
            }
            let Some(f) = FieldTokens::fit(values) else {
                return Meanings::Gathered;
            };
            // Four bytes in place in each 128-bit lane, zeros after them.
            let small = |bytes: [u32; 4]| {
                let [a, b, c, d] = bytes.map(|v| v as i8);
                _mm256_setr_epi8(
                    a, b, c, d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, //
                    a, b, c, d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                )
            };
            let k = f.token_bits;
            Meanings::Fields(FieldVectors {
                raw_bits: small([0, 1, 2, 3].map(|t| f.meaning(t).0)),
                // Token 3's top bits need not be small: its lanes take the formula's.
                small_tops: small([f.meaning(0).1, f.meaning(1).1, f.meaning(2).1, 0]),
                above_sign: _mm_cvtsi32_si128(k as i32 + 1),
                token_bits: _mm_cvtsi32_si128(k as i32),
                exponent_bits: _mm_cvtsi32_si128(f.exponent_bits as i32),
                sign: _mm256_set1_epi32(1 << k),
                emin: _mm256_set1_epi32((f.emin << k) as i32),
            })
        }

        /// The raw-bit counts and top bits of the tokens `t` (in 32-bit lanes), when
        /// they are computed; `None` when they are to be gathered.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn computed(self, t: __m256i) -> Option<(__m256i, __m256i)> {
            let (one, three) = (_mm256_set1_epi32(1), _mm256_set1_epi32(3));
            match self {
                Meanings::Lengths(k) => {
                    // `n = max((t >> k) - 1, 0)` raw bits, `top = t - (n << k)`.
                    let n = _mm256_sub_epi32(_mm256_srl_epi32(t, k), one);
                    let n = _mm256_max_epi32(n, _mm256_setzero_si256());
                    Some((n, _mm256_sub_epi32(t, _mm256_sll_epi32(n, k))))
                }
                Meanings::Fields(f) => {
                    // Tokens 0 to 2 from the small tables (their lanes' upper bytes
                    // index entry 0, which is 0), the rest by the formula.
                    let small = _mm256_min_epu32(t, three);
                    let n = _mm256_shuffle_epi8(f.raw_bits, small);
                    let u = _mm256_sub_epi32(t, three);
                    let steps = _mm256_sll_epi32(_mm256_srl_epi32(u, f.above_sign), f.token_bits);
                    let sign = _mm256_and_si256(u, f.sign);
                    let top = _mm256_add_epi32(
                        _mm256_sub_epi32(_mm256_add_epi32(u, f.emin), steps),
                        _mm256_sub_epi32(_mm256_sll_epi32(sign, f.exponent_bits), sign),
                    );
                    let is_small = _mm256_cmpgt_epi32(three, t);
                    let top =
                        _mm256_blendv_epi8(top, _mm256_shuffle_epi8(f.small_tops, small), is_small);
                    Some((n, top))
                }
                Meanings::Gathered => None,
            }
        }
    }

    /// See [`super::restore_values`]: the AVX2 kernel, 8 tokens at a time. Each token's
    /// meaning is computed (bit-length and float-field tokens, see [`Meanings`]) or
    /// gathered from `values`; each field from the two 32-bit words of the turn's window
    /// that hold it, moved to its lane by two permutations (no gather, which costs a load
    /// a lane) and shifted into place.
    ///
    /// # Safety
    ///
    /// AVX2 must be present.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn restore_values_avx2(
        tokens: &[u8],
        values: &[u32; 256],
        raw: &[u8],
        bit: &mut u64,
        ordered: &mut [u32],
    ) -> usize {
        let turns = tokens.len().min(ordered.len()) / AVX2_LANES;
        let meanings = Meanings::of(values);
        let one = _mm256_set1_epi32(1);
        let thirty_one = _mm256_set1_epi32(31);
        let thirty_two = _mm256_set1_epi32(32);
        let byte = _mm256_set1_epi32(0xff);
        let last_of_low_half = _mm256_setr_epi32(0, 0, 0, 0, 3, 3, 3, 3);
        let zero = _mm256_setzero_si256();
        let mut at = *bit;
        let mut turn = 0;
        // A turn reads 8 fields of at most 32 bits from the 36 bytes from the byte of its
        // first bit (they start by bit 7 + 7 x 32 and end by bit 263).
        while turn < turns && (at >> 3) as usize + 36 <= raw.len() {
            let p = turn * AVX2_LANES;
            // SAFETY: positions `p..p + 8` lie in `tokens` (`turn < turns`).
            let t = unsafe { _mm256_cvtepu8_epi32(_mm_loadl_epi64(tokens.as_ptr().add(p).cast())) };
            let (n, top) = meanings.computed(t).unwrap_or_else(|| {
                // SAFETY: a token is below 256, an index of `values`.
                let meaning = unsafe { _mm256_i32gather_epi32::<4>(values.as_ptr().cast(), t) };
                let n = _mm256_and_si256(_mm256_srli_epi32::<8>(meaning), byte);
                (n, _mm256_srli_epi32::<16>(meaning))
            });
            // Inclusive prefix sums of the field widths across the lanes: within each
            // half, then the low half's total added to the high half.
            let mut sum = _mm256_add_epi32(n, _mm256_slli_si256::<4>(n));
            sum = _mm256_add_epi32(sum, _mm256_slli_si256::<8>(sum));
            let carry = _mm256_permutevar8x32_epi32(sum, last_of_low_half);
            sum = _mm256_add_epi32(sum, _mm256_blend_epi32::<0b1111_0000>(zero, carry));
            let start =
                _mm256_add_epi32(_mm256_sub_epi32(sum, n), _mm256_set1_epi32((at & 7) as i32));
            // Each field lies in the window's words `w` and `w + 1` (`w` at most 7).
            let word = _mm256_srli_epi32::<5>(start);
            let shift = _mm256_and_si256(start, thirty_one);
            // SAFETY: the 36 bytes from `base` lie within `raw` (checked above).
            let (words, next_words) = unsafe {
                let base = raw.as_ptr().add((at >> 3) as usize);
                (
                    _mm256_loadu_si256(base.cast()),
                    _mm256_loadu_si256(base.add(4).cast()),
                )
            };
            // A shift by 32 gives 0 with AVX2: a field starting on a word boundary takes
            // nothing from the next word, and a 32-bit field keeps every bit.
            let fields = _mm256_or_si256(
                _mm256_srlv_epi32(_mm256_permutevar8x32_epi32(words, word), shift),
                _mm256_sllv_epi32(
                    _mm256_permutevar8x32_epi32(next_words, word),
                    _mm256_sub_epi32(thirty_two, shift),
                ),
            );
            let mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, n), one);
            let out = _mm256_or_si256(_mm256_sllv_epi32(top, n), _mm256_and_si256(fields, mask));
            // SAFETY: positions `p..p + 8` lie in `ordered` (`turn < turns`).
            unsafe { _mm256_storeu_si256(ordered.as_mut_ptr().add(p).cast(), out) };
            at += _mm256_extract_epi32::<7>(sum) as u32 as u64;
            turn += 1;
        }
        *bit = at;
        turn * AVX2_LANES
    }

    /// See [`super::restore_wide_values`]: the AVX2 kernel, 4 tokens at a time. Each
    /// token's meaning is computed (bit-length and float-field tokens, see [`Meanings`])
    /// or gathered from `values`; each field from the two 64-bit words of the step's
    /// window that hold it, moved to its lane by two permutations and shifted into place.
    ///
    /// # Safety
    ///
    /// AVX2 must be present.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn restore_wide_values_avx2(
        tokens: &[u8],
        values: &[u32; 256],
        raw: &[u8],
        bit: &mut u64,
        ordered: &mut [u64],
    ) -> usize {
        const STEP: usize = 4;
        let steps = tokens.len().min(ordered.len()) / STEP;
        let meanings = Meanings::of(values);
        let one = _mm256_set1_epi64x(1);
        let sixty_three = _mm256_set1_epi64x(63);
        let sixty_four = _mm256_set1_epi64x(64);
        // The high 32-bit half of each 64-bit lane's permutation index: its low half's
        // plus one.
        let high_half = _mm256_set1_epi64x(1 << 32);
        let zero = _mm256_setzero_si256();
        let mut at = *bit;
        let mut step = 0;
        // A step reads 4 fields of at most 64 bits from the 40 bytes from the byte of its
        // first bit (they start by bit 7 + 3 x 64 and end by bit 263).
        while step < steps && (at >> 3) as usize + 40 <= raw.len() {
            let p = step * STEP;
            // SAFETY: positions `p..p + 4` lie in `tokens` (`step < steps`).
            let t = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(unsafe {
                tokens.as_ptr().add(p).cast::<i32>().read_unaligned()
            }));
            // The 4 tokens' meanings in the low half of the 8-lane computation.
            let computed = meanings.computed(_mm256_zextsi128_si256(t));
            let (n, top) = match computed {
                Some((n, top)) => (_mm256_castsi256_si128(n), _mm256_castsi256_si128(top)),
                None => {
                    // SAFETY: a token is below 256, an index of `values`.
                    let meaning = unsafe { _mm_i32gather_epi32::<4>(values.as_ptr().cast(), t) };
                    let n = _mm_and_si128(_mm_srli_epi32::<8>(meaning), _mm_set1_epi32(0xff));
                    (n, _mm_srli_epi32::<16>(meaning))
                }
            };
            let (n, top) = (_mm256_cvtepu32_epi64(n), _mm256_cvtepu32_epi64(top));
            // Inclusive prefix sums of the field widths across the lanes: within each
            // half, then the low half's total added to the high half.
            let mut sum = _mm256_add_epi64(n, _mm256_slli_si256::<8>(n));
            let carry = _mm256_permute4x64_epi64::<0b01_01_01_01>(sum);
            sum = _mm256_add_epi64(sum, _mm256_blend_epi32::<0b1111_0000>(zero, carry));
            let start = _mm256_add_epi64(
                _mm256_sub_epi64(sum, n),
                _mm256_set1_epi64x((at & 7) as i64),
            );
            // Each field lies in the window's 64-bit words `w` and `w + 1` (`w` at most
            // 3), each the 32-bit words `2 w` and `2 w + 1`.
            let twice = _mm256_slli_epi64::<1>(_mm256_srli_epi64::<6>(start));
            let word = _mm256_add_epi64(
                _mm256_or_si256(twice, _mm256_slli_epi64::<32>(twice)),
                high_half,
            );
            let shift = _mm256_and_si256(start, sixty_three);
            // SAFETY: the 40 bytes from `base` lie within `raw` (checked above).
            let (words, next_words) = unsafe {
                let base = raw.as_ptr().add((at >> 3) as usize);
                (
                    _mm256_loadu_si256(base.cast()),
                    _mm256_loadu_si256(base.add(8).cast()),
                )
            };
            // A shift by 64 gives 0 with AVX2: a field starting on a word boundary takes
            // nothing from the next word, `1 << 64` is 0 and the mask of a 64-bit field
            // all ones.
            let fields = _mm256_or_si256(
                _mm256_srlv_epi64(_mm256_permutevar8x32_epi32(words, word), shift),
                _mm256_sllv_epi64(
                    _mm256_permutevar8x32_epi32(next_words, word),
                    _mm256_sub_epi64(sixty_four, shift),
                ),
            );
            let mask = _mm256_sub_epi64(_mm256_sllv_epi64(one, n), one);
            let out = _mm256_or_si256(_mm256_sllv_epi64(top, n), _mm256_and_si256(fields, mask));
            // SAFETY: positions `p..p + 4` lie in `ordered` (`step < steps`).
            unsafe { _mm256_storeu_si256(ordered.as_mut_ptr().add(p).cast(), out) };
            at += _mm256_extract_epi64::<3>(sum) as u64;
            step += 1;
        }
        *bit = at;
        step * STEP
    }

    /// See [`super::restore_wide_values`]: [`restore_values`] with 8 fields of up to 64
    /// bits to a register, each turn in two halves.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx2,popcnt")]
    pub(super) fn restore_wide_values(
        tokens: &[u8],
        values: &[u32; 256],
        raw: &[u8],
        bit: &mut u64,
        ordered: &mut [u64],
    ) -> usize {
        const HALF: usize = LANES / 2;
        let halves = tokens.len().min(ordered.len()) / LANES * 2;
        let byte_table =
            |shift: u32| registers_of(&std::array::from_fn(|t| (values[t] >> shift) as u8));
        let (counts_of, top_low_of, top_high_of) = (byte_table(8), byte_table(16), byte_table(24));
        let one = _mm512_set1_epi64(1);
        let seven = _mm512_set1_epi64(7);
        let sixty_four = _mm512_set1_epi64(64);
        let spread = _mm512_set1_epi64(0x0101_0101_0101_0101);
        let byte_order = _mm512_set1_epi64(0x0706_0504_0302_0100);
        let next_eight = _mm512_set1_epi64(0x0808_0808_0808_0808);
        let last_lane = _mm512_set1_epi64(HALF as i64 - 1);
        let zero = _mm512_setzero_si512();
        let mut at = *bit;
        let mut half = 0;
        'blocks: while half < halves {
            // The meanings of the next 8 halves' tokens (of those there are).
            let p = half * HALF;
            let left = (tokens.len() - p).min(64);
            // SAFETY: the bytes loaded lie in `tokens` (`p + left <= tokens.len()`); the
            // others are masked off.
            let block = unsafe {
                _mm512_maskz_loadu_epi8(u64::MAX >> (64 - left), tokens.as_ptr().add(p).cast())
            };
            let meanings = [
                byte_lookup(block, &counts_of),
                byte_lookup(block, &top_low_of),
                byte_lookup(block, &top_high_of),
            ];
            // SAFETY: a register's 64 bytes as bytes.
            let meanings: [[u8; 64]; 3] = unsafe { std::mem::transmute(meanings) };
            for g in 0..8 {
                // A half reads at most 8 fields of at most 64 bits from the 128 bytes
                // from the byte of its first bit (its fields end within the first 73),
                // so a whole turn from the first 193 bytes of its first half's.
                if g % 2 == 0 && (half >= halves || (at >> 3) as usize + 200 > raw.len()) {
                    break 'blocks;
                }
                // SAFETY: 8 of the 64 bytes of each meaning (`g < 8`).
                let eighth = |m: &[u8; 64]| unsafe {
                    _mm512_cvtepu8_epi64(_mm_loadl_epi64(m.as_ptr().add(8 * g).cast()))
                };
                let n = eighth(&meanings[0]);
                let top = _mm512_or_si512(
                    eighth(&meanings[1]),
                    _mm512_slli_epi64::<8>(eighth(&meanings[2])),
                );
                // Inclusive prefix sums of the field widths across the lanes.
                let mut sum = n;
                sum = _mm512_add_epi64(sum, _mm512_alignr_epi64::<7>(sum, zero));
                sum = _mm512_add_epi64(sum, _mm512_alignr_epi64::<6>(sum, zero));
                sum = _mm512_add_epi64(sum, _mm512_alignr_epi64::<4>(sum, zero));
                let start =
                    _mm512_add_epi64(_mm512_sub_epi64(sum, n), _mm512_set1_epi64((at & 7) as i64));
                // SAFETY: the 128 bytes lie within `raw` (checked above).
                let (window_lo, window_hi) = unsafe {
                    let base = raw.as_ptr().add((at >> 3) as usize);
                    (
                        _mm512_loadu_si512(base.cast()),
                        _mm512_loadu_si512(base.add(64).cast()),
                    )
                };
                // Each field's bytes `from..from + 8` and `from + 8..from + 16`.
                let from = _mm512_srli_epi64::<3>(start);
                let index = _mm512_add_epi64(_mm512_mullo_epi64(from, spread), byte_order);
                let low = _mm512_permutex2var_epi8(window_lo, index, window_hi);
                let high = _mm512_permutex2var_epi8(
                    window_lo,
                    _mm512_add_epi64(index, next_eight),
                    window_hi,
                );
                let shift = _mm512_and_si512(start, seven);
                // A shift by 64 (of a field starting on a byte) gives 0.
                let fields = _mm512_or_si512(
                    _mm512_srlv_epi64(low, shift),
                    _mm512_sllv_epi64(high, _mm512_sub_epi64(sixty_four, shift)),
                );
                // For 64-bit fields, `1 << 64` is 0 and the mask all ones.
                let mask = _mm512_sub_epi64(_mm512_sllv_epi64(one, n), one);
                let out =
                    _mm512_or_si512(_mm512_sllv_epi64(top, n), _mm512_and_si512(fields, mask));
                // SAFETY: positions `half * 8..half * 8 + 8` lie in `ordered`
                // (`half < halves`).
                unsafe { _mm512_storeu_si512(ordered.as_mut_ptr().add(half * HALF).cast(), out) };
                let total = _mm512_cvtsi512_si32(_mm512_permutexvar_epi64(last_lane, sum));
                at += total as u64;
                half += 1;
            }
        }
        *bit = at;
        half * HALF
    }

    /// Each byte of `index` looked up in the 256 bytes of `table` (four registers).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn byte_lookup(index: __m512i, table: &[__m512i; 4]) -> __m512i {
        let low = _mm512_permutex2var_epi8(table[0], index, table[1]);
        let high = _mm512_permutex2var_epi8(table[2], index, table[3]);
        _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high)
    }

    /// Puts in place the values of one row (`from` in band order, `to` in place) that the
    /// blocks of a transpose left: those of the bands from `full` on in the turns below
    /// `whole`, then every band's in the turns from `whole` on.
    #[inline(always)]
    fn place_past_blocks<S: Copy>(
        from: &[S],
        to: &mut [S],
        bands: usize,
        whole: usize,
        full: usize,
    ) {
        let b = from.len() / bands;
        if full < bands {
            for c in 0..whole {
                for g in full..bands {
                    to[g * b + c] = from[c * bands + g];
                }
            }
        }
        for c in whole..b {
            for g in 0..bands {
                to[g * b + c] = from[c * bands + g];
            }
        }
    }

    /// See [`super::unband`]: `bands` dividing `width`, blocks of 16 of them.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt")]
    pub(super) fn unband(ordered: &[u32], width: usize, bands: usize, out: &mut [u32]) {
        let b = width / bands;
        let whole = b / LANES * LANES;
        let full = bands / LANES * LANES;
        for (from, to) in ordered.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
            for c0 in (0..whole).step_by(LANES) {
                for g0 in (0..full).step_by(LANES) {
                    // SAFETY: turn `c0 + i` of the row holds bands `g0..g0 + 16`
                    // (`c0 + 16 <= b`, `g0 + 16 <= bands`).
                    let turns: [__m512i; LANES] = std::array::from_fn(|i| unsafe {
                        _mm512_loadu_si512(from.as_ptr().add((c0 + i) * bands + g0).cast())
                    });
                    for (j, band) in transpose(turns).into_iter().enumerate() {
                        // SAFETY: band `g0 + j` holds positions `c0..c0 + 16`.
                        unsafe {
                            _mm512_storeu_si512(to.as_mut_ptr().add((g0 + j) * b + c0).cast(), band)
                        };
                    }
                }
            }
            place_past_blocks(from, to, bands, whole, full);
        }
    }

    /// See [`super::unband`]: the AVX2 kernel, 8 turns of 8 bands at a time; `bands`
    /// dividing `width`.
    ///
    /// # Safety
    ///
    /// AVX2 must be present.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn unband_avx2(ordered: &[u32], width: usize, bands: usize, out: &mut [u32]) {
        let b = width / bands;
        let whole = b / AVX2_LANES * AVX2_LANES;
        let full = bands / AVX2_LANES * AVX2_LANES;
        for (from, to) in ordered.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
            for c0 in (0..whole).step_by(AVX2_LANES) {
                for g0 in (0..full).step_by(AVX2_LANES) {
                    // SAFETY: turn `c0 + i` of the row holds bands `g0..g0 + 8`
                    // (`c0 + 8 <= b`, `g0 + 8 <= bands`).
                    let turns: [__m256i; AVX2_LANES] = std::array::from_fn(|i| unsafe {
                        _mm256_loadu_si256(from.as_ptr().add((c0 + i) * bands + g0).cast())
                    });
                    for (j, band) in transpose_avx2(turns).into_iter().enumerate() {
                        // SAFETY: band `g0 + j` holds positions `c0..c0 + 8`.
                        unsafe {
                            _mm256_storeu_si256(to.as_mut_ptr().add((g0 + j) * b + c0).cast(), band)
                        };
                    }
                }
            }
            place_past_blocks(from, to, bands, whole, full);
        }
    }

    /// The transpose of 8 rows of 8 words: lane `i` of row `j` is lane `j` of row `i`.
    #[target_feature(enable = "avx2")]
    fn transpose_avx2(r: [__m256i; AVX2_LANES]) -> [__m256i; AVX2_LANES] {
        // Pairs of words, then pairs of pairs, within each half; then the halves.
        let a: [__m256i; AVX2_LANES] = std::array::from_fn(|i| {
            let (x, y) = (r[i & !1], r[i | 1]);
            if i & 1 == 0 {
                _mm256_unpacklo_epi32(x, y)
            } else {
                _mm256_unpackhi_epi32(x, y)
            }
        });
        let q: [__m256i; AVX2_LANES] = std::array::from_fn(|i| {
            let pair = (i & 4) | (i >> 1 & 1);
            let (x, y) = (a[pair], a[pair | 2]);
            if i & 1 == 0 {
                _mm256_unpacklo_epi64(x, y)
            } else {
                _mm256_unpackhi_epi64(x, y)
            }
        });
        std::array::from_fn(|i| {
            let (x, y) = (q[i & 3], q[(i & 3) | 4]);
            if i & 4 == 0 {
                _mm256_permute2x128_si256::<0x20>(x, y)
            } else {
                _mm256_permute2x128_si256::<0x31>(x, y)
            }
        })
    }

    /// See [`super::unband_wide`]: `bands` dividing `width`, blocks of 8 of them.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt")]
    pub(super) fn unband_wide(ordered: &[u64], width: usize, bands: usize, out: &mut [u64]) {
        const W: usize = 8;
        let b = width / bands;
        let whole = b / W * W;
        let full = bands / W * W;
        for (from, to) in ordered.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
            for c0 in (0..whole).step_by(W) {
                for g0 in (0..full).step_by(W) {
                    // SAFETY: turn `c0 + i` of the row holds bands `g0..g0 + 8`
                    // (`c0 + 8 <= b`, `g0 + 8 <= bands`).
                    let turns: [__m512i; W] = std::array::from_fn(|i| unsafe {
                        _mm512_loadu_si512(from.as_ptr().add((c0 + i) * bands + g0).cast())
                    });
                    for (j, band) in transpose_wide(turns).into_iter().enumerate() {
                        // SAFETY: band `g0 + j` holds positions `c0..c0 + 8`.
                        unsafe {
                            _mm512_storeu_si512(to.as_mut_ptr().add((g0 + j) * b + c0).cast(), band)
                        };
                    }
                }
            }
            place_past_blocks(from, to, bands, whole, full);
        }
    }

    /// See [`super::unband_wide`]: the AVX2 kernel, `bands` dividing `width`, blocks of
    /// 4 turns of 4 bands.
    ///
    /// # Safety
    ///
    /// AVX2 must be present.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn unband_wide_avx2(
        ordered: &[u64],
        width: usize,
        bands: usize,
        out: &mut [u64],
    ) {
        const W: usize = 4;
        let b = width / bands;
        let whole = b / W * W;
        let full = bands / W * W;
        for (from, to) in ordered.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
            for c0 in (0..whole).step_by(W) {
                for g0 in (0..full).step_by(W) {
                    // SAFETY: turn `c0 + i` of the row holds bands `g0..g0 + 4`
                    // (`c0 + 4 <= b`, `g0 + 4 <= bands`).
                    let r: [__m256i; W] = std::array::from_fn(|i| unsafe {
                        _mm256_loadu_si256(from.as_ptr().add((c0 + i) * bands + g0).cast())
                    });
                    // Pairs of words within each half, then the halves.
                    let low = [
                        _mm256_unpacklo_epi64(r[0], r[1]),
                        _mm256_unpacklo_epi64(r[2], r[3]),
                    ];
                    let high = [
                        _mm256_unpackhi_epi64(r[0], r[1]),
                        _mm256_unpackhi_epi64(r[2], r[3]),
                    ];
                    let bands_of_block = [
                        _mm256_permute2x128_si256::<0x20>(low[0], low[1]),
                        _mm256_permute2x128_si256::<0x20>(high[0], high[1]),
                        _mm256_permute2x128_si256::<0x31>(low[0], low[1]),
                        _mm256_permute2x128_si256::<0x31>(high[0], high[1]),
                    ];
                    for (j, band) in bands_of_block.into_iter().enumerate() {
                        // SAFETY: band `g0 + j` holds positions `c0..c0 + 4`.
                        unsafe {
                            _mm256_storeu_si256(to.as_mut_ptr().add((g0 + j) * b + c0).cast(), band)
                        };
                    }
                }
            }
            place_past_blocks(from, to, bands, whole, full);
        }
    }

    /// The transpose of 8 rows of 8 64-bit words: lane `i` of row `j` is lane `j` of
    /// row `i`. Each step swaps bit `s` of the row with bit `s` of the lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn transpose_wide(mut r: [__m512i; 8]) -> [__m512i; 8] {
        for s in [1usize, 2, 4] {
            let pick = |own: bool| -> __m512i {
                let idx: [i64; 8] = std::array::from_fn(|j| {
                    let keep = (j & s == 0) == own;
                    match (keep, own) {
                        (true, true) => j as i64,
                        (true, false) => 8 + j as i64,
                        (false, true) => 8 + (j ^ s) as i64,
                        (false, false) => (j ^ s) as i64,
                    }
                });
                // SAFETY: 8 words read from an array of 8.
                unsafe { _mm512_loadu_si512(idx.as_ptr().cast()) }
            };
            let (first, second) = (pick(true), pick(false));
            for i in (0..8).filter(|i| i & s == 0) {
                let (x, y) = (r[i], r[i + s]);
                r[i] = _mm512_permutex2var_epi64(x, first, y);
                r[i + s] = _mm512_permutex2var_epi64(x, second, y);
            }
        }
        r
    }

    /// The 256 bytes of a lookup table in four registers (see [`byte_lookup`]).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn registers_of(table: &[u8; 256]) -> [__m512i; 4] {
        // SAFETY: 4 loads of 64 bytes within the 256 of `table`.
        std::array::from_fn(|q| unsafe { _mm512_loadu_si512(table.as_ptr().add(64 * q).cast()) })
    }

    /// For the kernel without VBMI, which takes no slot entries.
    fn no_class_lookup(_: __m512i, _: &[__m512i; 4]) -> __m512i {
        unreachable!("slot entries reach the VBMI kernel only")
    }

    /// The class of each lane's token (below 256) in `class_of`, its 256 bytes in four
    /// registers: the lane's low byte looked up, its other (zero) bytes dropped.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn class_lookup(token: __m512i, class_of: &[__m512i; 4]) -> __m512i {
        _mm512_and_si512(byte_lookup(token, class_of), _mm512_set1_epi32(0xff))
    }

    /// The transpose of 16 rows of 16 words: lane `i` of row `j` is lane `j` of row `i`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn transpose(r: [__m512i; LANES]) -> [__m512i; LANES] {
        // Pairs of words, then of pairs, then of 128-bit quarters, twice.
        let a: [__m512i; LANES] = std::array::from_fn(|i| {
            let (p, q) = (r[i & !1], r[i | 1]);
            if i & 1 == 0 {
                _mm512_unpacklo_epi32(p, q)
            } else {
                _mm512_unpackhi_epi32(p, q)
            }
        });
        let b: [__m512i; LANES] = std::array::from_fn(|i| {
            let base = i & !3;
            let half = i >> 1 & 1;
            let (p, q) = (a[base + half], a[base + 2 + half]);
            if i & 1 == 0 {
                _mm512_unpacklo_epi64(p, q)
            } else {
                _mm512_unpackhi_epi64(p, q)
            }
        });
        let c: [__m512i; LANES] = std::array::from_fn(|i| {
            let base = i & !7;
            let (p, q) = (b[base + (i & 3)], b[base + 4 + (i & 3)]);
            if i & 4 == 0 {
                _mm512_shuffle_i32x4::<0x88>(p, q)
            } else {
                _mm512_shuffle_i32x4::<0xdd>(p, q)
            }
        });
        std::array::from_fn(|i| {
            let (p, q) = (c[i & 7], c[8 + (i & 7)]);
            if i & 8 == 0 {
                _mm512_shuffle_i32x4::<0x88>(p, q)
            } else {
                _mm512_shuffle_i32x4::<0xdd>(p, q)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::context::{
        widest_window, ContextConfig, FloatFields, MAX_FIELD_TOKEN_BITS,
    };
    use super::super::super::context_ans::token_values;
    use super::super::super::rans::{normalize, DecodeTables};
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A raw-bit kernel of values of `S`: see [`restore_values`].
    type RawBitKernel<S> = fn(&[u8], &[u32; 256], &[u8], &mut u64, &mut [S]) -> usize;

    /// Checks that each of `kernels` (name, kernel, whether it runs on this CPU) reads
    /// `tokens` with the meanings `values` from `raw`, from bit `first_bit`, as the
    /// portable reader does: the same values and end position once the portable reader
    /// goes on where the kernel stopped (at a multiple of 4), and that a kernel that runs
    /// read some when `raw` holds `slack` bytes more than `bytes_per_token` a token.
    fn check_raw_bit_kernels<S: crate::word::Word>(
        case: usize,
        (tokens, values, raw, first_bit): (&[u8], &[u32; 256], &[u8], u64),
        kernels: Vec<(&str, RawBitKernel<S>, bool)>,
        (bytes_per_token, slack): (usize, usize),
    ) {
        let n = tokens.len();
        let mut expected = vec![S::default(); n];
        let mut bits = crate::bits::io::BitCursor::at(raw, first_bit);
        for (o, &t) in expected.iter_mut().zip(tokens) {
            *o = super::super::value::<S>(t, values, &mut bits);
        }
        let expected_end = bits.finish("raw");
        for (name, kernel, runs) in kernels {
            let mut got = vec![S::default(); n];
            let mut bit = first_bit;
            let done = kernel(tokens, values, raw, &mut bit, &mut got);
            assert_eq!(done % 4, 0, "case {case} {name}");
            let mut rest = crate::bits::io::BitCursor::at(raw, bit);
            for (o, &t) in got[done..].iter_mut().zip(&tokens[done..]) {
                *o = super::super::value::<S>(t, values, &mut rest);
            }
            assert_eq!(got, expected, "case {case} {name}");
            assert_eq!(&rest.finish("raw"), &expected_end);
            if runs && raw.len() >= slack + bytes_per_token * n && n >= 16 {
                assert!(done > 0, "the {name} kernel ran");
            }
        }
    }

    /// Arbitrary token meanings, fields of `narrowest` to `widest - 1` bits with top
    /// bits that fit a word of `word_bits`, and `n` tokens with `raw_bytes` of raw bits.
    fn arbitrary_raw_bits(
        rng: &mut SmallRng,
        (narrowest, widest, word_bits): (u32, u32, u32),
        n: usize,
        raw_bytes: usize,
    ) -> ([u32; 256], Vec<u8>, Vec<u8>, u64) {
        let values: [u32; 256] = std::array::from_fn(|_| {
            let n = rng.gen_range(narrowest..widest);
            let top = rng.gen_range(0..1u32 << (word_bits - n).min(16));
            rng.gen_range(0..65u32) | n << 8 | top << 16
        });
        let tokens: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        let raw: Vec<u8> = (0..rng.gen_range(0..raw_bytes))
            .map(|_| rng.gen())
            .collect();
        (values, tokens, raw, rng.gen_range(0..8))
    }

    /// The meanings of bit-length tokens are recognised, with their token width, for
    /// 32- and 64-bit words; those of float-field tokens are not.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn bit_length_token_meanings_are_recognised() {
        for token_bits in 1..=2 {
            let cfg = ContextConfig {
                token_bits,
                ..ContextConfig::single()
            };
            let k = Some(i32::from(token_bits));
            assert_eq!(x86::length_token_bits(&token_values::<u32>(cfg)), k);
            assert_eq!(x86::length_token_bits(&token_values::<u64>(cfg)), k);
            let fields = ContextConfig {
                fields: Some(FloatFields::of::<u32>(120, 8)),
                ..cfg
            };
            assert_eq!(x86::length_token_bits(&token_values::<u32>(fields)), None);
        }
    }

    /// The meanings of float-field tokens follow the formula the AVX2 kernels compute,
    /// for every token width and window (first, middle and last) of 32- and 64-bit
    /// words; bit-length tokens do not.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn float_field_token_meanings_are_recognised() {
        fn check<T: crate::word::Word>() {
            let exponents = 1u32 << FloatFields::of::<T>(0, 1).exponent_bits;
            for token_bits in 0..=MAX_FIELD_TOKEN_BITS {
                let widest = u32::from(widest_window(token_bits));
                for count in [1, 2, widest / 2, widest] {
                    for emin in [0, exponents / 2 - count / 2, exponents - count] {
                        let cfg = ContextConfig {
                            token_bits,
                            fields: Some(FloatFields::of::<T>(emin as u16, count as u8)),
                            ..ContextConfig::single()
                        };
                        let values = token_values::<T>(cfg);
                        let fit = x86::FieldTokens::fit(&values);
                        assert!(fit.is_some(), "{} bits, {cfg:?}", T::BITS);
                    }
                }
            }
            for token_bits in 1..=2 {
                let cfg = ContextConfig {
                    token_bits,
                    ..ContextConfig::single()
                };
                assert_eq!(x86::FieldTokens::fit(&token_values::<T>(cfg)), None);
            }
        }
        check::<u32>();
        check::<u64>();
    }

    /// The meanings of float-field tokens of a random window for words of type `T`
    /// (which the AVX2 kernels compute rather than look up), `tokens` redrawn from
    /// their alphabet.
    fn float_field_tokens<T: crate::word::Word>(
        rng: &mut SmallRng,
        tokens: &mut [u8],
    ) -> [u32; 256] {
        let token_bits = rng.gen_range(0..=MAX_FIELD_TOKEN_BITS);
        let exponents = 1u16 << FloatFields::of::<T>(0, 1).exponent_bits;
        let count = rng.gen_range(1..=widest_window(token_bits));
        let emin = rng.gen_range(0..=exponents - u16::from(count));
        let cfg = ContextConfig {
            token_bits,
            fields: Some(FloatFields::of::<T>(emin, count)),
            ..ContextConfig::single()
        };
        meanings_of::<T>(rng, cfg, tokens)
    }

    /// The meanings of bit-length tokens of `token_bits` for words of type `T` (which
    /// the AVX2 kernels compute rather than look up), `tokens` redrawn from their
    /// alphabet.
    fn bit_length_tokens<T: crate::word::Word>(
        rng: &mut SmallRng,
        token_bits: usize,
        tokens: &mut [u8],
    ) -> [u32; 256] {
        let cfg = ContextConfig {
            token_bits: token_bits as u8,
            ..ContextConfig::single()
        };
        meanings_of::<T>(rng, cfg, tokens)
    }

    /// The token meanings of `cfg` for words of type `T`, `tokens` redrawn from its
    /// alphabet.
    fn meanings_of<T: crate::word::Word>(
        rng: &mut SmallRng,
        cfg: ContextConfig,
        tokens: &mut [u8],
    ) -> [u32; 256] {
        let alphabet = cfg.alphabet::<T>();
        tokens
            .iter_mut()
            .for_each(|t| *t = rng.gen_range(0..alphabet) as u8);
        token_values::<T>(cfg)
    }

    /// On arbitrary raw bits and token meanings (fields of 0 to 31 bits), and on the
    /// meanings of bit-length and float-field tokens, the raw-bit kernels (the one this
    /// CPU runs, and the AVX2 one) give the portable reader's values and bit position.
    #[test]
    fn the_raw_bit_kernel_reads_as_the_portable_reader() {
        let mut rng = SmallRng::seed_from_u64(37);
        for case in 0..40 {
            let n = 16 * rng.gen_range(0..200);
            let (mut values, mut tokens, raw, first_bit) =
                arbitrary_raw_bits(&mut rng, (0, 32, 32), n, 5 * n + 200);
            if case % 3 == 1 {
                values = bit_length_tokens::<u32>(&mut rng, 1 + case % 2, &mut tokens);
            } else if case % 3 == 2 {
                values = float_field_tokens::<u32>(&mut rng, &mut tokens);
            }
            // The kernel this CPU runs, and the AVX2 kernel wherever the CPU has AVX2.
            #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
            let mut kernels: Vec<(&str, RawBitKernel<u32>, bool)> =
                vec![("chosen", restore_values, crate::isa::avx2_kernels())];
            #[cfg(target_arch = "x86_64")]
            if crate::isa::avx2_kernels() {
                // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
                let avx2: RawBitKernel<u32> =
                    |t, v, r, b, o| unsafe { x86::restore_values_avx2(t, v, r, b, o) };
                kernels.push(("AVX2", avx2, true));
            }
            let input = (&tokens[..], &values, &raw[..], first_bit);
            check_raw_bit_kernels(case, input, kernels, (4, 200));
        }
    }

    /// On arbitrary raw bits and token meanings (fields of 0 to 63 bits, the widths
    /// 56 to 63 that take two reads in the portable reader among them), and on the
    /// meanings of bit-length and float-field tokens, the 64-bit raw-bit kernels (the
    /// one this CPU runs, and the AVX2 one) give the portable reader's values and bit
    /// position.
    #[test]
    fn the_wide_raw_bit_kernel_reads_as_the_portable_reader() {
        let mut rng = SmallRng::seed_from_u64(43);
        for case in 0..60 {
            let narrowest = [0, 40, 56][case % 3];
            let n = 16 * rng.gen_range(0..200) + [0, 4, 12][case % 3];
            let (mut values, mut tokens, raw, first_bit) =
                arbitrary_raw_bits(&mut rng, (narrowest, 64, 64), n, 8 * n + 300);
            if case % 4 == 2 {
                values = bit_length_tokens::<u64>(&mut rng, 1 + case / 4 % 2, &mut tokens);
            } else if case % 4 == 3 {
                values = float_field_tokens::<u64>(&mut rng, &mut tokens);
            }
            // The kernel this CPU runs, and the AVX2 kernel wherever the CPU has AVX2.
            #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
            let mut kernels: Vec<(&str, RawBitKernel<u64>, bool)> =
                vec![("chosen", restore_wide_values, crate::isa::avx2_kernels())];
            #[cfg(target_arch = "x86_64")]
            if crate::isa::avx2_kernels() {
                // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
                let avx2: RawBitKernel<u64> =
                    |t, v, r, b, o| unsafe { x86::restore_wide_values_avx2(t, v, r, b, o) };
                kernels.push(("AVX2", avx2, true));
            }
            let input = (&tokens[..], &values, &raw[..], first_bit);
            check_raw_bit_kernels(case, input, kernels, (8, 300));
        }
    }

    /// The transposing kernels (AVX-512's and AVX2's) put every value where the portable
    /// loop does, for 8 to 32 bands (multiples of the lanes and others) of whole and
    /// partial runs of 16 and 8 turns.
    #[test]
    fn the_unband_kernel_places_values_as_the_portable_loop() {
        let mut rng = SmallRng::seed_from_u64(41);
        for (bands, b, rows) in [
            (16, 16, 1),
            (16, 1, 3),
            (32, 17, 2),
            (16, 40, 5),
            (32, 64, 2),
            (8, 8, 1),
            (8, 21, 3),
            // Bands past the last whole block of the register's lanes.
            (20, 17, 2),
            (12, 9, 3),
            (31, 16, 1),
            (24, 8, 2),
        ] {
            let width = bands * b;
            let ordered: Vec<u32> = (0..width * rows).map(|_| rng.gen()).collect();
            let mut expected = vec![0u32; ordered.len()];
            super::super::unband_by(&ordered, width, bands, &mut expected);
            let mut got = vec![0u32; ordered.len()];
            let ran = unband(&ordered, width, bands, &mut got);
            let by_avx512 = crate::isa::level() == crate::isa::Level::Avx512 && bands >= 16;
            let by_avx2 = cfg!(target_arch = "x86_64") && crate::isa::avx2_kernels();
            assert_eq!(ran, by_avx512 || by_avx2);
            if ran {
                assert_eq!(got, expected, "{bands} bands of {b}");
            }
            #[cfg(target_arch = "x86_64")]
            if crate::isa::avx2_kernels() {
                let mut got = vec![0u32; ordered.len()];
                // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
                unsafe { x86::unband_avx2(&ordered, width, bands, &mut got) };
                assert_eq!(got, expected, "AVX2, {bands} bands of {b}");
            }
        }
    }

    /// The 64-bit transposing kernels (AVX-512's and AVX2's) put every value where the
    /// portable loop does, for 8 to 32 bands (multiples of 8 and others) of whole and
    /// partial runs of 8 and 4 turns.
    #[test]
    fn the_wide_unband_kernel_places_values_as_the_portable_loop() {
        let mut rng = SmallRng::seed_from_u64(47);
        for (bands, b, rows) in [
            (8, 8, 1),
            (16, 1, 3),
            (16, 9, 2),
            (32, 17, 2),
            (8, 40, 5),
            (20, 41, 3),
            (12, 8, 2),
            (31, 9, 1),
        ] {
            let width = bands * b;
            let ordered: Vec<u64> = (0..width * rows).map(|_| rng.gen()).collect();
            let mut expected = vec![0u64; ordered.len()];
            super::super::unband_by(&ordered, width, bands, &mut expected);
            let mut got = vec![0u64; ordered.len()];
            let ran = unband_wide(&ordered, width, bands, &mut got);
            let by_avx512 = crate::isa::level() == crate::isa::Level::Avx512;
            let by_avx2 = cfg!(target_arch = "x86_64") && crate::isa::avx2_kernels();
            assert_eq!(ran, by_avx512 || by_avx2);
            if ran {
                assert_eq!(got, expected, "{bands} bands of {b}");
            }
            #[cfg(target_arch = "x86_64")]
            if crate::isa::avx2_kernels() {
                let mut got = vec![0u64; ordered.len()];
                // SAFETY: the CPU has AVX2 (checked just above).
                unsafe { x86::unband_wide_avx2(&ordered, width, bands, &mut got) };
                assert_eq!(got, expected, "AVX2, {bands} bands of {b}");
            }
        }
    }

    /// Every configuration's classes have a formula, and its vector form gives each
    /// token's class.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_class_formula_gives_every_tokens_class() {
        fn check<T: crate::word::Word>() {
            let mut configs: Vec<ContextConfig> = (1..=2)
                .map(|token_bits| ContextConfig {
                    buckets: 6,
                    split: 3,
                    base: 3,
                    token_bits,
                    fields: None,
                })
                .collect();
            for token_bits in 0..=4 {
                for count in 1..=widest_window(token_bits) {
                    configs.push(ContextConfig {
                        token_bits,
                        fields: Some(FloatFields::of::<T>(100, count)),
                        ..configs[0]
                    });
                }
            }
            for cfg in configs {
                let lookup = Lookup::new::<T>(cfg, 8, 8);
                let formula = x86::ClassFormula::fit(&lookup).expect("a formula");
                if !crate::isa::avx2_kernels() {
                    continue;
                }
                let alphabet = cfg.alphabet::<T>();
                for first in (0..alphabet).step_by(8) {
                    let tokens: [i32; 8] = std::array::from_fn(|i| (first + i) as i32);
                    let mut got = [0i32; 8];
                    // SAFETY: the CPU has AVX2; 8 words of 4 bytes each, unaligned.
                    unsafe {
                        use std::arch::x86_64::*;
                        let classes = formula.classes(_mm256_loadu_si256(tokens.as_ptr().cast()));
                        _mm256_storeu_si256(got.as_mut_ptr().cast(), classes);
                    }
                    for (&t, &class) in tokens.iter().zip(&got) {
                        if (t as usize) < alphabet {
                            assert_eq!(class & 0xff, lookup.values[t as usize] as i32 & 0xff);
                        }
                    }
                }
            }
        }
        check::<u32>();
        check::<u64>();
    }

    /// On arbitrary streams and tables (whatever they decode to), the kernel gives the
    /// portable decoder's tokens, classes, states and stream position, for every
    /// context layout and for neighbours in the first row and turns.
    #[test]
    fn the_kernel_decodes_as_the_portable_decoder() {
        // 32-bit words' alphabets reach 128 tokens, 64-bit words' 256.
        kernel_decodes_as_the_portable_decoder::<u32>(31);
        kernel_decodes_as_the_portable_decoder::<u64>(32);
    }

    fn kernel_decodes_as_the_portable_decoder<T: crate::word::Word>(seed: u64) {
        let mut rng = SmallRng::seed_from_u64(seed);
        for case in 0..80 {
            let (buckets, split) = [(1u8, 1u8), (6, 1), (16, 3), (3, 3)][case % 4];
            // Bit-length tokens, and every other time tokens of float fields.
            let cfg = if case % 8 < 4 {
                ContextConfig {
                    buckets,
                    split,
                    base: rng.gen_range(1..6),
                    token_bits: rng.gen_range(1..=2),
                    fields: None,
                }
            } else {
                let token_bits = rng.gen_range(0..=4);
                let count = rng.gen_range(1..=widest_window(token_bits));
                ContextConfig {
                    buckets,
                    split,
                    base: rng.gen_range(1..6),
                    token_bits,
                    fields: Some(FloatFields::of::<T>(rng.gen_range(0..200), count)),
                }
            };
            let lookup_classes = token_values::<T>(cfg).map(|value| value as u8);
            let mut tables = DecodeTables::new();
            for _ in 0..cfg.contexts() {
                let alphabet = cfg.alphabet::<T>();
                let weights: Vec<u64> = (0..alphabet)
                    .map(|_| {
                        if rng.gen_range(0..3) == 0 {
                            0
                        } else {
                            rng.gen_range(0..1000)
                        }
                    })
                    .collect();
                tables.push(&normalize(&weights), &lookup_classes);
            }
            // Whole registers, and the last one part used (one or two registers).
            let bands = [8, 16, 32, 9, 12, 15, 17, 20, 24, 31][case / 4 % 10];
            let width = bands * [1usize, 2, 8, 64][case % 4];
            let left = bands * rng.gen_range(1..4);
            let n = width * rng.gen_range(1..40);
            let lookup = Lookup::new::<T>(cfg, left, width);
            let mut stream: Vec<u8> = (0..rng.gen_range(128..128 + 4 * n))
                .map(|_| rng.gen())
                .collect();
            for state in stream[..4 * bands].chunks_exact_mut(4) {
                state[2] |= 1;
            }
            let decoders = || band_rans::Decoder::new(&stream[..stream.len() & !1], bands).unwrap();
            let mut reference = decoders();
            let mut expected = (vec![0u8; n], vec![0u8; n]);
            lookup.decode_tokens(
                &mut reference,
                tables.as_slice(),
                &mut expected.0,
                &mut expected.1,
                0,
            );
            // Both kernels: by slot entries, and by symbol and range.
            for with_slots in [true, false] {
                let mut fast = decoders();
                let mut got = (vec![0u8; n], vec![0u8; n]);
                let done = decode_tokens_by(
                    with_slots,
                    &mut fast,
                    tables.as_slice(),
                    &mut Vec::new(),
                    &lookup,
                    &mut got.0,
                    &mut got.1,
                );
                lookup.decode_tokens(&mut fast, tables.as_slice(), &mut got.0, &mut got.1, done);
                assert_eq!(
                    got, expected,
                    "case {case} bands {bands} slots {with_slots}"
                );
                assert_eq!((fast.states, fast.pos), (reference.states, reference.pos));
                let has_kernel =
                    crate::isa::level() == crate::isa::Level::Avx512 || crate::isa::avx2_kernels();
                if has_kernel && stream.len() >= 4 * bands + 64 {
                    assert!(done > 0, "the kernel ran");
                }
            }
            // AVX2's, by slot entries and by symbol and range, on any CPU with AVX2.
            #[cfg(target_arch = "x86_64")]
            for with_slots in [true, false] {
                let mut fast = decoders();
                let mut got = (vec![0u8; n], vec![0u8; n]);
                let done = decode_tokens_avx2(
                    with_slots,
                    &mut fast,
                    tables.as_slice(),
                    &mut Vec::new(),
                    &lookup,
                    &mut got.0,
                    &mut got.1,
                );
                lookup.decode_tokens(&mut fast, tables.as_slice(), &mut got.0, &mut got.1, done);
                assert_eq!(
                    got, expected,
                    "case {case} bands {bands} AVX2 slots {with_slots}"
                );
                assert_eq!((fast.states, fast.pos), (reference.states, reference.pos));
                if crate::isa::avx2_kernels() && stream.len() >= 4 * bands + 64 {
                    assert!(done > 0, "the AVX2 kernel ran");
                }
            }
        }
    }
}
