//! Shifted words: floats whose low mantissa bits are zero in every word (bit-rounded
//! data, values of few significant bits) are coded without those bits, the top bit (the
//! sign) kept in place (header flag bit 3, see docs/format.md).

/// Words inspected between checks for a set lowest bit, which ends the scan of most
/// float data after a few words.
const SCAN_BLOCK: usize = 64;

/// The number of low bits that are zero in every `word_size`-byte word of `data`,
/// counting the bits below the top bit only; `None` when it is 0, or when no word has a
/// bit set below its top bit (all zeros and signed zeros: nothing to shift).
pub fn zero_low_bits(data: &[u8], word_size: usize) -> Option<u32> {
    let below_top = below_top_bit(word_size);
    let mut seen = 0u64;
    for block in data.chunks(SCAN_BLOCK * word_size) {
        seen |= crate::isa::vectorised(
            #[inline(always)]
            || match word_size {
                4 => or_words::<4>(block),
                8 => or_words::<8>(block),
                2 => or_words::<2>(block),
                _ => or_words::<1>(block),
            },
        ) & below_top;
        if seen & 1 != 0 {
            return None;
        }
    }
    (seen != 0).then(|| seen.trailing_zeros())
}

/// The OR of the `N`-byte little-endian words of `bytes`.
#[inline(always)]
fn or_words<const N: usize>(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(N)
        .fold(0, |seen, word| seen | load_n::<N>(word))
}

/// The words of `data` with the `z` low bits below their top bit dropped.
pub fn shift_down(data: &[u8], word_size: usize, z: u32) -> Vec<u8> {
    let below_top = below_top_bit(word_size);
    let f = |x: u64| (x & !below_top) | ((x & below_top) >> z);
    let mut out = vec![0u8; data.len()];
    crate::isa::vectorised(
        #[inline(always)]
        || match word_size {
            4 => map_n::<4>(data, &mut out, f),
            8 => map_n::<8>(data, &mut out, f),
            2 => map_n::<2>(data, &mut out, f),
            _ => map_n::<1>(data, &mut out, f),
        },
    );
    out
}

/// Inverse of [`shift_down`], in place: the bits below each word's top bit move up by
/// `z`, filling zeros.
pub fn shift_up(bytes: &mut [u8], word_size: usize, z: u32) {
    let below_top = below_top_bit(word_size);
    let f = |y: u64| (y & !below_top) | ((y << z) & below_top);
    crate::isa::vectorised(
        #[inline(always)]
        || match word_size {
            4 => map_in_place_n::<4>(bytes, f),
            8 => map_in_place_n::<8>(bytes, f),
            2 => map_in_place_n::<2>(bytes, f),
            _ => map_in_place_n::<1>(bytes, f),
        },
    );
}

/// Each `N`-byte word of `from` mapped by `f` into `to` (as long).
#[inline(always)]
fn map_n<const N: usize>(from: &[u8], to: &mut [u8], f: impl Fn(u64) -> u64) {
    for (x, y) in from.chunks_exact(N).zip(to.chunks_exact_mut(N)) {
        y.copy_from_slice(&f(load_n::<N>(x)).to_le_bytes()[..N]);
    }
}

/// Each `N`-byte word of `bytes` mapped by `f`, in place.
#[inline(always)]
fn map_in_place_n<const N: usize>(bytes: &mut [u8], f: impl Fn(u64) -> u64) {
    for y in bytes.chunks_exact_mut(N) {
        let x = load_n::<N>(y);
        y.copy_from_slice(&f(x).to_le_bytes()[..N]);
    }
}

/// A little-endian word of `N` bytes (1, 2, 4 or 8).
#[inline(always)]
fn load_n<const N: usize>(word: &[u8]) -> u64 {
    match N {
        8 => u64::from_le_bytes(word.try_into().expect("8 bytes")),
        4 => u64::from(u32::from_le_bytes(word.try_into().expect("4 bytes"))),
        2 => u64::from(u16::from_le_bytes(word.try_into().expect("2 bytes"))),
        _ => u64::from(word[0]),
    }
}

/// Mask of the bits of a `word_size`-byte word below its top bit.
fn below_top_bit(word_size: usize) -> u64 {
    u64::MAX >> (65 - 8 * word_size as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_words(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn counts_the_zero_bits_below_the_sign_of_every_word() {
        // 1.5 = 0x3fc00000 (22 zero bits), -2.0 = 0xc0000000 (the sign does not count).
        assert_eq!(
            zero_low_bits(&f32_words(&[0x3fc0_0000, 0xc000_0000]), 4),
            Some(22)
        );
        assert_eq!(
            zero_low_bits(&f32_words(&[0x3fc0_0000, 0x3f80_0100]), 4),
            Some(8)
        );
        assert_eq!(
            zero_low_bits(&f32_words(&[0x3fc0_0000, 0x3f80_0001]), 4),
            None
        );
        assert_eq!(zero_low_bits(&f32_words(&[0, 0x8000_0000]), 4), None);
        assert_eq!(zero_low_bits(&1.25f64.to_le_bytes(), 8), Some(50));
    }

    #[test]
    fn shifting_down_and_up_gives_the_words_back() {
        for word_size in [1usize, 2, 4, 8] {
            let data: Vec<u8> = (0..64u64)
                .flat_map(|i| {
                    let w = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 3) << 3;
                    w.to_le_bytes()[..word_size].to_vec()
                })
                .collect();
            let z = zero_low_bits(&data, word_size).expect("three zero bits at least");
            assert!(z >= 3);
            let mut back = shift_down(&data, word_size, z);
            assert_ne!(back, data);
            shift_up(&mut back, word_size, z);
            assert_eq!(back, data, "{word_size}-byte words");
        }
    }

    #[test]
    fn the_sign_stays_and_the_rest_moves_down() {
        let down = shift_down(&f32_words(&[0xc0a0_0000]), 4, 21);
        assert_eq!(down, f32_words(&[0x8000_0000 | (0x40a0_0000 >> 21)]));
    }
}
