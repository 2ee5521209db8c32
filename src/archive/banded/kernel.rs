//! The vector kernel of banded decoding: the 16 residuals of one turn decoded at once,
//! one band per 32-bit lane of an AVX-512 register. Contexts come from two 16-byte loads
//! of the classes one row and `left` turns earlier, table entries from gathers, and the
//! renormalisation words from one load expanded into the lanes that need them (in band
//! order, as the stream holds them). The portable decoder of [`super::Lookup`] is the
//! reference: both give the same tokens, classes and stream position.

use super::super::band_rans;
use super::super::rans::DecodeTable;
use super::Lookup;

/// Bands one register decodes at once: 16 lanes of 32 bits.
pub(super) const LANES: usize = 16;

/// Decodes the tokens of the first turns of 16 or 32 bands into `tokens` and `classes`
/// (in band order) with the vector kernel, when this CPU has one and the stream has 16
/// or 32 bands; returns the position it stopped at (a multiple of the band count, 0
/// when it did not run), from which the portable decoder goes on.
pub(super) fn decode_tokens(
    dec: &mut band_rans::Decoder<'_>,
    tables: &[DecodeTable],
    lookup: &Lookup,
    tokens: &mut [u8],
    classes: &mut [u8],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() == crate::isa::Level::Avx512 {
        match dec.bands() {
            // SAFETY: the CPU has AVX-512 F, BW, DQ and VL (the level's features).
            16 => return unsafe { x86::decode_turns::<1>(dec, tables, lookup, tokens, classes) },
            // SAFETY: as above.
            32 => return unsafe { x86::decode_turns::<2>(dec, tables, lookup, tokens, classes) },
            _ => {}
        }
    }
    let _ = (dec, tables, lookup, tokens, classes);
    0
}

/// Reads the raw bits of the first turns of 16 of `tokens` (in band order, of words of
/// at most 32 bits) from `raw`, starting at bit `*bit`, and writes each value
/// (its token's top bits above its raw bits) to `ordered` in band order, with the
/// vector kernel when this CPU has one; advances `*bit` and returns the position it
/// stopped at (a multiple of 16, 0 when it did not run).
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
    let _ = (tokens, values, raw, bit, ordered);
    0
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::super::super::band_rans::{self, BAND_L};
    use super::super::super::rans::{
        DecodeTable, CLASS_SHIFT, CUM_SHIFT, PROB_BITS, RANGES_OFFSET, SYMBOLS_OFFSET,
    };
    use super::{Lookup, LANES};

    /// See [`super::decode_tokens`]: `V` registers of 16 bands each (16 or 32 bands).
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt")]
    pub(super) fn decode_turns<const V: usize>(
        dec: &mut band_rans::Decoder<'_>,
        tables: &[DecodeTable],
        lookup: &Lookup,
        tokens: &mut [u8],
        classes: &mut [u8],
    ) -> usize {
        let bands = V * LANES;
        let n = tokens.len().min(classes.len());
        let turns = n / bands;
        let cfg = lookup.cfg;
        let (width, left) = (lookup.width, lookup.left);
        debug_assert!(width.is_multiple_of(bands) && left.is_multiple_of(bands));
        let table_bytes = std::mem::size_of::<DecodeTable>() as i32;
        let tables_base = tables.as_ptr().cast::<u8>();

        // Contexts: class 0 for up = 0, else up - base + 1 clamped to [min(1, last),
        // last]; times the split, plus the refinement by the sign of left - up.
        let last = i32::from(cfg.buckets) - 1;
        let class_floor = _mm512_set1_epi32(1.min(last));
        let class_last = _mm512_set1_epi32(last);
        let class_shift = _mm512_set1_epi32(i32::from(cfg.base) - 1);
        let split3 = cfg.split == 3;
        let split = _mm512_set1_epi32(i32::from(cfg.split) * table_bytes);
        let table_size = _mm512_set1_epi32(table_bytes);
        let symbols_at = _mm512_set1_epi32(SYMBOLS_OFFSET as i32);
        let ranges_at = _mm512_set1_epi32(RANGES_OFFSET as i32);
        let byte = _mm512_set1_epi32(0xff);
        let slot_mask = _mm512_set1_epi32((1 << PROB_BITS) - 1);
        let freq_mask = _mm512_set1_epi32((1 << CUM_SHIFT) - 1);
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
            for (v, x) in x.iter_mut().enumerate() {
                let at = turn * bands + v * LANES;
                let load_classes = |back: usize| {
                    // SAFETY: `back <= at`, so the 16 bytes lie in `classes[..at]`.
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
                // SAFETY: `table` is a context's table (below `buckets * split`, the
                // tables read) times its size, and the 4 bytes at a slot lie within its
                // table (`DecodeTable` is `repr(C)`, the symbols first).
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
                let renormalise = _mm512_cmplt_epu32_mask(state, bound);
                // SAFETY: `pos + 32 <= input.len()` (the loop's condition: this
                // register's words start at most `(V - 1) * 32` bytes further).
                let words = unsafe {
                    _mm512_cvtepu16_epi32(_mm256_loadu_si256(input.as_ptr().add(pos).cast()))
                };
                let words = _mm512_maskz_expand_epi32(renormalise, words);
                *x =
                    _mm512_mask_or_epi32(state, renormalise, _mm512_slli_epi32::<16>(state), words);
                pos += 2 * renormalise.count_ones() as usize;

                // SAFETY: positions `at..at + 16` lie in both buffers (`turn < n / bands`).
                unsafe {
                    _mm_storeu_si128(
                        tokens.as_mut_ptr().add(at).cast(),
                        _mm512_cvtepi32_epi8(symbol),
                    );
                    _mm_storeu_si128(
                        classes.as_mut_ptr().add(at).cast(),
                        _mm512_cvtepi32_epi8(_mm512_srli_epi32::<CLASS_SHIFT>(range)),
                    );
                }
            }
            turn += 1;
        }
        for (v, x) in x.iter().enumerate() {
            // SAFETY: `V * 16` states of 4 bytes each (at most 32), unaligned.
            unsafe { _mm512_storeu_si512(dec.states.as_mut_ptr().add(v * LANES).cast(), *x) };
        }
        dec.pos = pos;
        turn * bands
    }

    /// See [`super::restore_values`].
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512 F, BW, DQ, VL and VBMI.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx2,popcnt")]
    pub(super) unsafe fn restore_values(
        tokens: &[u8],
        values: &[u32; 256],
        raw: &[u8],
        bit: &mut u64,
        ordered: &mut [u32],
    ) -> usize {
        let turns = tokens.len().min(ordered.len()) / LANES;
        let byte = _mm512_set1_epi32(0xff);
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
        // A turn reads at most 16 fields of at most 32 bits from the 128 bytes from
        // the byte of its first bit (its fields end within the first 67).
        while turn < turns && (at >> 3) as usize + 128 <= raw.len() {
            let p = turn * LANES;
            // SAFETY: positions `p..p + 16` lie in `tokens` (`turn < turns`).
            let token =
                unsafe { _mm512_cvtepu8_epi32(_mm_loadu_si128(tokens.as_ptr().add(p).cast())) };
            // SAFETY: a token is below 256, the length of `values`.
            let value = unsafe { _mm512_i32gather_epi32::<4>(token, values.as_ptr().cast()) };
            let n = _mm512_and_si512(_mm512_srli_epi32::<8>(value), byte);
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
            // SAFETY: the 128 bytes lie within `raw` (the loop's condition).
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
            let high =
                _mm512_permutex2var_epi8(window_lo, _mm512_add_epi32(index, next_four), window_hi);
            let shift = _mm512_and_si512(start, seven);
            let fields = _mm512_or_si512(
                _mm512_srlv_epi32(low, shift),
                _mm512_sllv_epi32(high, _mm512_sub_epi32(thirty_two, shift)),
            );
            let mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, n), one);
            let top = _mm512_sllv_epi32(_mm512_srli_epi32::<16>(value), n);
            let out = _mm512_or_si512(top, _mm512_and_si512(fields, mask));
            // SAFETY: positions `p..p + 16` lie in `ordered` (`turn < turns`).
            unsafe { _mm512_storeu_si512(ordered.as_mut_ptr().add(p).cast(), out) };
            let total = _mm512_cvtsi512_si32(_mm512_permutexvar_epi32(last_lane, sum));
            at += total as u64;
            turn += 1;
        }
        *bit = at;
        turn * LANES
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::context::ContextConfig;
    use super::super::super::context_ans::token_values;
    use super::super::super::rans::{normalize, DecodeTables};
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// On arbitrary raw bits and token meanings (fields of 0 to 31 bits), the raw-bit
    /// kernel gives the portable reader's values and bit position.
    #[test]
    fn the_raw_bit_kernel_reads_as_the_portable_reader() {
        let mut rng = SmallRng::seed_from_u64(37);
        for case in 0..40 {
            let values: [u32; 256] = std::array::from_fn(|_| {
                let n = rng.gen_range(0..32u32);
                let top = rng.gen_range(0..1u32 << (32 - n).min(16));
                rng.gen_range(0..65u32) | n << 8 | top << 16
            });
            let n = 16 * rng.gen_range(0..200);
            let tokens: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            let raw: Vec<u8> = (0..rng.gen_range(0..5 * n + 200))
                .map(|_| rng.gen())
                .collect();
            let first_bit = rng.gen_range(0..8);
            let mut expected = vec![0u32; n];
            let mut bits = crate::bits::io::BitCursor::at(&raw, first_bit);
            for (o, &t) in expected.iter_mut().zip(&tokens) {
                *o = super::super::value::<u32>(t, &values, &mut bits);
            }
            let mut got = vec![0u32; n];
            let mut bit = first_bit;
            let done = restore_values(&tokens, &values, &raw, &mut bit, &mut got);
            let mut rest = crate::bits::io::BitCursor::at(&raw, bit);
            for (o, &t) in got[done..].iter_mut().zip(&tokens[done..]) {
                *o = super::super::value::<u32>(t, &values, &mut rest);
            }
            assert_eq!(got, expected, "case {case}");
            assert_eq!(rest.finish("raw"), bits.finish("raw"));
            if crate::isa::avx512_kernels() && raw.len() >= 200 + 4 * n && n > 0 {
                assert!(done > 0, "the kernel ran");
            }
        }
    }

    /// On arbitrary streams and tables (whatever they decode to), the kernel gives the
    /// portable decoder's tokens, classes, states and stream position, for every
    /// context layout and for neighbours in the first row and turns.
    #[test]
    fn the_kernel_decodes_as_the_portable_decoder() {
        let mut rng = SmallRng::seed_from_u64(31);
        for case in 0..60 {
            let (buckets, split) = [(1u8, 1u8), (6, 1), (16, 3), (3, 3)][case % 4];
            let cfg = ContextConfig {
                buckets,
                split,
                base: rng.gen_range(1..6),
                token_bits: rng.gen_range(1..=2),
                fields: None,
            };
            let lookup_classes = token_values::<u32>(cfg).map(|value| value as u8);
            let mut tables = DecodeTables::new();
            for _ in 0..cfg.contexts() {
                let alphabet = cfg.alphabet::<u32>();
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
            let bands = [16, 32][case / 4 % 2];
            let width = bands * [1usize, 2, 8, 64][case % 4];
            let left = bands * rng.gen_range(1..4);
            let n = width * rng.gen_range(1..40);
            let lookup = Lookup::new::<u32>(cfg, left, width);
            let mut stream: Vec<u8> = (0..rng.gen_range(128..128 + 4 * n))
                .map(|_| rng.gen())
                .collect();
            for state in stream[..4 * bands].chunks_exact_mut(4) {
                state[2] |= 1;
            }
            let decoders = || band_rans::Decoder::new(&stream[..stream.len() & !1], bands).unwrap();
            let (mut reference, mut fast) = (decoders(), decoders());
            let mut expected = (vec![0u8; n], vec![0u8; n]);
            lookup.decode_tokens(
                &mut reference,
                tables.as_slice(),
                &mut expected.0,
                &mut expected.1,
                0,
            );
            let mut got = (vec![0u8; n], vec![0u8; n]);
            let done = decode_tokens(
                &mut fast,
                tables.as_slice(),
                &lookup,
                &mut got.0,
                &mut got.1,
            );
            lookup.decode_tokens(&mut fast, tables.as_slice(), &mut got.0, &mut got.1, done);
            assert_eq!(got, expected, "case {case}");
            assert_eq!((fast.states, fast.pos), (reference.states, reference.pos));
            if crate::isa::level() == crate::isa::Level::Avx512 && stream.len() >= 4 * bands + 64 {
                assert!(done > 0, "the kernel ran");
            }
        }
    }
}
