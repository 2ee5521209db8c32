//! The plane mask that opens the bit-plane coders' output (coders 12, 13 and 14): bit
//! `j` set when bit plane `j` of the tile's words is stored, `w` bytes for `w`-byte
//! words, little-endian.

use crate::word::Word;

/// The plane mask of `values`: the bits set in any of them.
pub fn of<T: Word>(values: &[T]) -> u64 {
    values.iter().fold(0, |mask, v| mask | v.to_u64())
}

/// Appends the plane mask `mask` of `T` words to `out`.
pub fn write<T: Word>(mask: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&mask.to_le_bytes()[..T::BYTES]);
}

/// The plane mask of `T` words at the start of `input` and the bytes after it, or
/// `None` when `input` is shorter than the mask.
pub fn read<T: Word>(input: &[u8]) -> Option<(u64, &[u8])> {
    let (mask, rest) = input.split_at_checked(T::BYTES)?;
    let mut bytes = [0u8; 8];
    bytes[..T::BYTES].copy_from_slice(mask);
    Some((u64::from_le_bytes(bytes), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_take_a_word_little_endian() {
        let mut out = Vec::new();
        write::<u16>(0x0201, &mut out);
        assert_eq!(out, [1, 2]);
        out.push(9);
        assert_eq!(read::<u16>(&out), Some((0x0201, &[9u8][..])));
        assert_eq!(read::<u32>(&out), None);
        assert_eq!(of(&[0x0100u16, 0x0003, 0]), 0x0103);
    }
}
