//! Fixed-width bit packing of small codes (1, 2 or 3 bits each), eight codes at a time.
//!
//! Eight `b`-bit codes fill exactly `b` bytes; code `i` of a group sits at bit `b * i`
//! of the group's little-endian integer. A final partial group is zero-padded.

/// Bytes needed to pack `n` codes of `bits` bits.
pub fn packed_len(n: usize, bits: u32) -> usize {
    (n * bits as usize).div_ceil(8)
}

/// Packs `codes` (each below `1 << bits`) into `out`, which holds `packed_len` bytes.
pub fn pack(codes: &[u8], bits: u32, out: &mut [u8]) {
    let group_bytes = bits as usize;
    for (group, dst) in codes.chunks(8).zip(out.chunks_mut(group_bytes)) {
        let acc = group.iter().enumerate().fold(0u32, |acc, (i, &c)| {
            acc | (u32::from(c) << (bits * i as u32))
        });
        let bytes = acc.to_le_bytes();
        dst.copy_from_slice(&bytes[..dst.len()]);
    }
}

/// Unpacks `n` codes of `bits` bits from `packed` (of `packed_len` bytes) into `out`.
pub fn unpack(packed: &[u8], bits: u32, n: usize, out: &mut Vec<u8>) {
    out.clear();
    out.reserve(n);
    let mask = (1u32 << bits) - 1;
    for (g, src) in packed.chunks(bits as usize).enumerate() {
        let mut bytes = [0u8; 4];
        bytes[..src.len()].copy_from_slice(src);
        let acc = u32::from_le_bytes(bytes);
        let in_group = (n - g * 8).min(8);
        out.extend((0..in_group as u32).map(|i| ((acc >> (bits * i)) & mask) as u8));
    }
}

/// True when the bits after the last of `n` packed codes are all zero.
pub fn padding_is_zero(packed: &[u8], bits: u32, n: usize) -> bool {
    let used = n * bits as usize;
    match packed.last() {
        Some(&last) if !used.is_multiple_of(8) => last >> (used % 8) == 0,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_width_and_length() {
        for bits in 1..=3u32 {
            for n in 0..40usize {
                let codes: Vec<u8> = (0..n).map(|i| ((i * 7 + 3) % (1 << bits)) as u8).collect();
                let mut packed = vec![0u8; packed_len(n, bits)];
                pack(&codes, bits, &mut packed);
                let mut back = Vec::new();
                unpack(&packed, bits, n, &mut back);
                assert_eq!(back, codes, "bits {bits} n {n}");
            }
        }
    }

    #[test]
    fn two_bit_layout_is_lsb_first() {
        let mut packed = [0u8; 1];
        pack(&[1, 2, 3, 0], 2, &mut packed);
        assert_eq!(packed, [0b00_11_10_01]);
    }
}
