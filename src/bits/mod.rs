//! Bit-level I/O shared by the coders: LSB-first bit streams and fixed-width packing.

pub mod io;
pub mod pack;
