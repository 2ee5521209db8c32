//! Bit-level I/O shared by the coders: LSB-first bit streams, fixed-width packing and
//! the bit-plane coders' plane mask.

pub mod io;
pub mod pack;
pub mod plane_mask;
