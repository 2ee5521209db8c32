//! Bit-level I/O shared by the coders: LSB-first bit streams, fixed-width packing, the
//! bit-plane coders' plane mask and the ranks of mask bits that AVX2 kernels expand by.

pub mod io;
pub mod pack;
pub mod plane_mask;
pub mod ranks;
