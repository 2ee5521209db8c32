//! The ranks of the set bits of every 8-bit mask: the control of an AVX2 `vpermd` that
//! moves consecutive values to the lanes a mask selects (AVX2 has no expand).

/// For each 8-bit mask, the ranks of its set bits in lane order: lane `i` holds the
/// count of set bits below bit `i`, so a `vpermd` by it moves the `j`-th packed value to
/// the lane of the `j`-th set bit; lanes of clear bits get 0 (the caller masks them off).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub static EXPAND: [[u32; 8]; 256] = {
    let mut table = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let mut next = 0;
        let mut lane = 0;
        while lane < 8 {
            if m >> lane & 1 == 1 {
                table[m][lane] = next;
                next += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_set_bit_gets_the_count_of_set_bits_below_it() {
        assert_eq!(EXPAND[0b1011_0100], [0, 0, 0, 0, 1, 2, 0, 3]);
        assert_eq!(EXPAND[0xff], [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(EXPAND[0], [0; 8]);
    }
}
