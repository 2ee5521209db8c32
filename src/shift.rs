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
        for word in block.chunks_exact(word_size) {
            seen |= load(word) & below_top;
        }
        if seen & 1 != 0 {
            return None;
        }
    }
    (seen != 0).then(|| seen.trailing_zeros())
}

/// The words of `data` with the `z` low bits below their top bit dropped.
pub fn shift_down(data: &[u8], word_size: usize, z: u32) -> Vec<u8> {
    let below_top = below_top_bit(word_size);
    let mut out = Vec::with_capacity(data.len());
    for word in data.chunks_exact(word_size) {
        let x = load(word);
        let y = (x & !below_top) | ((x & below_top) >> z);
        out.extend_from_slice(&y.to_le_bytes()[..word_size]);
    }
    out
}

/// Inverse of [`shift_down`], in place: the bits below each word's top bit move up by
/// `z`, filling zeros.
pub fn shift_up(bytes: &mut [u8], word_size: usize, z: u32) {
    let below_top = below_top_bit(word_size);
    for word in bytes.chunks_exact_mut(word_size) {
        let y = load(word);
        let x = (y & !below_top) | ((y << z) & below_top);
        word.copy_from_slice(&x.to_le_bytes()[..word_size]);
    }
}

/// Mask of the bits of a `word_size`-byte word below its top bit.
fn below_top_bit(word_size: usize) -> u64 {
    u64::MAX >> (65 - 8 * word_size as u32)
}

/// A little-endian word of 1 to 8 bytes.
fn load(word: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes[..word.len()].copy_from_slice(word);
    u64::from_le_bytes(bytes)
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
