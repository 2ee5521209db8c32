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

mod axis;
mod bitpack;
mod buffers;
mod codec;
pub mod coder;
pub mod error;
pub mod format;
mod isa;
pub mod layout;
pub mod params;
mod pool;
pub mod predict;
mod process_local;
pub mod residual;
pub mod tile;
pub mod word;

pub use codec::{
    compress, compress_parts, decoded_len, decompress, decompress_into, decompress_with, recycle,
    Chunk, Packed,
};
pub use coder::Coder;
pub use error::{Error, Result};
pub use params::{ElementKind, Mode, Params, MAX_THREADS};
pub use pool::{effective_threads, MAX_POOLS, THREADS_VARIABLE};
pub use predict::Predictor;
pub use residual::ResidualMap;
