//! Fast mode's residual coders: patched packing (the default, with its AVX2 and AVX-512
//! kernels), leading-zero bytes, bit planes and Rice codes. Each codes a slice of
//! residual words on its own, with no model of their neighbours.

pub mod bitplane;
pub mod leading_zero_bytes;
pub mod patched;
pub mod rice;
