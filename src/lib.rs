//! karoo: lossless predictive compression of floating-point time series.
//!
//! The codec behind the karoo HDF5 filter, with no HDF5 inside. A chunk is a
//! multi-dimensional array of fixed-size words with one time axis; fast mode predicts
//! each word from the same series at earlier time steps, maps the residual to a small
//! unsigned integer and packs it (patched packing by default), in independent tiles
//! coded in parallel; archive mode entropy-codes the residuals. Every chunk is
//! self-describing and checksummed.
//!
//! ```
//! let data: Vec<u8> = (0..4096u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
//! let params = karoo::Params::new(4, &[64, 64]);
//! let packed = karoo::compress(&data, &params).unwrap();
//! assert_eq!(karoo::decompress(&packed).unwrap(), data);
//! ```

mod archive;
mod axis;
mod bits;
mod buffers;
mod checksum;
mod coder;
mod compress;
mod decompress;
mod element_type;
mod error;
mod fast;
mod fill;
mod format;
mod generic;
mod isa;
mod layout;
mod narrow;
mod params;
mod planar;
mod pool;
mod predict;
mod process_local;
mod scaled;
mod shift;
mod stream_error;
mod tile;
mod word;

pub use coder::Coder;
pub use compress::{compress, compress_parts, recycle, Packed};
pub use decompress::{decoded_len, decompress, decompress_into, decompress_with, Chunk};
pub use element_type::{ElementType, TypeKind};
pub use error::{Error, Result};
pub use format::MAX_RANK;
pub use params::{ElementKind, Mode, Params, DEFAULT_LEVEL, MAX_LEVEL, MAX_THREADS};
pub use predict::residual::ResidualMap;
pub use predict::Predictor;

/// The vector kernels this process runs: `"avx512"` (AVX-512 packing kernels, loops
/// compiled for AVX-512), `"avx2"` or `"portable"` (the target's baseline), as detected
/// at first use and capped by the `KAROO_ISA` environment variable. Every choice writes
/// the same bytes; only the speed differs.
pub fn kernels() -> &'static str {
    match (isa::avx512_kernels(), isa::level()) {
        (true, _) | (_, isa::Level::Avx512) => "avx512",
        (_, isa::Level::Avx2) => "avx2",
        (_, isa::Level::Portable) if isa::avx2_kernels() => "avx2",
        _ => "portable",
    }
}

/// The codec's worker threads: how many a call uses, the environment variable that caps
/// them, and the most thread pools a process keeps.
pub mod threads {
    pub use crate::pool::{effective_threads, MAX_POOLS, THREADS_VARIABLE};
}

/// The codec's inner parts, for its own benches, fuzz targets and tests (the
/// `internals` feature): the coders' kernels and their error type, the word trait, the
/// chunk header and the checksum. Not part of the stable API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::checksum::{data_checksum, digest_rows};
    pub use crate::fast::{bitplane, patched, rice};
    pub use crate::format::{
        Header, BRIEF_UNSHAPED, FLAG_NARROWED, FLAG_PLANAR, FLAG_SCALED, FLAG_SHIFTED, FLAG_STORED,
        MAGIC, READ_VERSIONS, VERSION, VERSION_BRIEF, VERSION_FIXED, VERSION_ONE_TILE,
    };
    pub use crate::generic::brief_chunk;
    pub use crate::generic::pipeline::{Compressor, Pipeline, Transform};
    pub use crate::scaled::{dequantise_bytes, Scales};
    pub use crate::stream_error::{StreamError, TilingFault};
    pub use crate::word::Word;
}
