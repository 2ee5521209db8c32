//! Coding one tile: predictor along time, residual map, residual coder.
//!
//! Tile payload: `[predictor id] [map id << 4 | coder id] [coder output]`. The residuals
//! of every word of the tile, in row order (plane by plane), are computed first and
//! handed to the coder as one slice. With `auto`, the combination is chosen per tile
//! from an estimate on a sample of the tile's columns, and recorded in the payload.

mod decode;
mod encode;
mod header;
mod repeats;
mod residuals;
mod scan;
mod search;
mod spatial;

pub use decode::{decode_tile, RowSegments, StridedRows, TileRows};
pub use encode::{encode_tile_into, max_payload_len};
pub use header::{parse_coding, TILE_HEADER_LEN};
pub use search::Candidates;
