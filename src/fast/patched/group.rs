//! What patched packing's SIMD kernels share with its portable loops: the layout of a
//! group of 32 values, the bytes the unpacking kernels may read, and the widths the
//! AVX-512 packing kernel handles.

/// Values per group.
pub const GROUP: usize = 32;

/// Bytes the unpacking may read: a group of 32 fields of `width` bits and 16 more.
pub fn unpack_reads(width: u32) -> usize {
    (GROUP * width as usize).div_ceil(8) + 16
}

/// A group's layout as the kernels' `choose` picks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLayout {
    /// Bit length of the widest value (0 for a group of zeros).
    pub widest: u32,
    /// Width of the packed low bits.
    pub width: u32,
    /// Values longer than `width` bits (exceptions).
    pub exceptions: u32,
    /// The group's coded size in bits.
    pub bits: u32,
}

/// Narrowest width the AVX-512 packing kernel packs: from 4 bits a pair of fields fills
/// a byte, so each output byte takes bits from at most two pairs.
pub const PACK_MIN_WIDTH: u32 = 4;
/// Widest width the AVX-512 packing kernel packs: a pair of fields shifted by its bit
/// offset in its first byte still fits 64 bits.
pub const PACK_MAX_WIDTH: u32 = 28;
