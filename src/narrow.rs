//! Narrowed float64: float64 words that all equal float32 values (a float32 correlator's
//! output stored as complex128) are coded as those float32 words and widened back on
//! decoding (header flag bit 2, see docs/format.md). Widening is IEEE 754's exact
//! conversion, defined on bits so that NaN payloads, signalling ones included, survive.

/// The float64 word equal to the float32 word `f`, NaN payloads kept bit for bit.
pub fn widen(f: u32) -> u64 {
    if f & 0x7f80_0000 == 0x7f80_0000 {
        // Infinity or NaN: the conversion instruction would quiet a signalling NaN.
        let sign = u64::from(f >> 31) << 63;
        return sign | 0x7ff0_0000_0000_0000 | u64::from(f & 0x007f_ffff) << 29;
    }
    // Exact for zeros, subnormals and normal values.
    f64::from(f32::from_bits(f)).to_bits()
}

/// The float32 word `x` equals, if there is one ([`widen`] of it gives `x` back).
pub fn narrow(x: u64) -> Option<u32> {
    let value = f64::from_bits(x);
    let f = if value.is_nan() {
        let sign = ((x >> 63) as u32) << 31;
        sign | 0x7f80_0000 | ((x >> 29) as u32 & 0x007f_ffff)
    } else {
        // Rounds when `x` is not a float32 value; the check below then fails.
        (value as f32).to_bits()
    };
    (widen(f) == x).then_some(f)
}

/// The float32 words of `data` (little-endian float64 words) as little-endian bytes, if
/// every word equals a float32 value. Most float64 data fails on its first word.
pub fn narrowed(data: &[u8]) -> Option<Vec<u8>> {
    let load = |word: &[u8]| u64::from_le_bytes(word.try_into().expect("8-byte chunk"));
    let mut words = data.chunks_exact(8);
    // The first word decides most chunks: allocate only once it narrows.
    let first = match words.next() {
        Some(word) => narrow(load(word))?,
        None => return Some(Vec::new()),
    };
    let mut out = Vec::with_capacity(data.len() / 2);
    out.extend_from_slice(&first.to_le_bytes());
    for word in words {
        out.extend_from_slice(&narrow(load(word))?.to_le_bytes());
    }
    Some(out)
}

/// Widens the little-endian float32 words of `narrow` into `out`, twice as long.
pub fn widen_into(narrow: &[u8], out: &mut [u8]) {
    debug_assert_eq!(narrow.len() * 2, out.len());
    for (f, x) in narrow.chunks_exact(4).zip(out.chunks_exact_mut(8)) {
        let f = u32::from_le_bytes(f.try_into().expect("4-byte chunk"));
        x.copy_from_slice(&widen(f).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bit-level conversion of docs/format.md, written out case by case.
    fn widen_by_the_table(f: u32) -> u64 {
        let s = u64::from(f >> 31) << 63;
        let e = u64::from((f >> 23) & 255);
        let m = u64::from(f & 0x7f_ffff);
        match (e, m) {
            (255, _) => s | 2047 << 52 | m << 29,
            (0, 0) => s,
            (0, _) => {
                let p = 63 - u64::from(m.leading_zeros());
                s | (p + 874) << 52 | (m - (1 << p)) << (52 - p)
            }
            _ => s | (e + 896) << 52 | m << 29,
        }
    }

    fn samples() -> Vec<u32> {
        let mut words = vec![
            0,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0040_0000,
            0x0080_0000,
            0x3f80_0000,
            0xbf80_0001,
            0x7f7f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            0xffbf_ffff,
            0x7fc1_2345,
        ];
        let mut x = 0x9e37_79b9u32;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            words.push(x);
        }
        words
    }

    #[test]
    fn widening_is_the_specified_bit_conversion() {
        for f in samples() {
            assert_eq!(widen(f), widen_by_the_table(f), "{f:#010x}");
        }
    }

    #[test]
    fn every_float32_word_narrows_back_to_itself() {
        for f in samples() {
            assert_eq!(narrow(widen(f)), Some(f), "{f:#010x}");
        }
    }

    #[test]
    fn float64_values_without_a_float32_equal_do_not_narrow() {
        for x in [
            0.1f64.to_bits(),
            1e300f64.to_bits(),
            1e-300f64.to_bits(),
            f64::MIN_POSITIVE.to_bits(),
            // Neighbours of float32 values: one unit in the last place apart.
            1.0f64.to_bits() + 1,
            widen(1) + 1,
            // A NaN whose payload lies in the low 29 bits only, and one with both.
            0x7ff0_0000_0000_0001,
            0x7ff8_0000_0000_0001,
            0xfff0_0000_1000_0000,
        ] {
            assert_eq!(narrow(x), None, "{x:#018x}");
        }
    }

    #[test]
    fn a_chunk_narrows_only_when_every_word_does() {
        let subnormal = f64::from(f32::from_bits(0x0003_8000));
        let words = [1.5f64, -0.0, f64::INFINITY, subnormal];
        let mut data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let narrow = narrowed(&data).expect("float32 values");
        let mut back = vec![0u8; data.len()];
        widen_into(&narrow, &mut back);
        assert_eq!(back, data);
        data.extend_from_slice(&0.1f64.to_le_bytes());
        assert_eq!(narrowed(&data), None);
    }
}
