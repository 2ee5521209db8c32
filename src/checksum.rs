//! The chunk checksum: XXH3-64 of each tile's decoded words (computed per tile, in
//! parallel), combined into one XXH3-64; for a stored chunk, XXH3-64 of its bytes.

use std::hash::Hasher;

use twox_hash::XxHash3_64;

use crate::layout::{Geometry, Tile};

/// Checksum of the decoded bytes of a stored (verbatim) chunk.
pub fn data_checksum(bytes: &[u8]) -> u64 {
    XxHash3_64::oneshot(bytes)
}

/// XXH3-64 of the words of `tile` in `chunk`, row by row: computed per tile so the
/// checksum of a chunk is computed in parallel, and still covers every decoded byte.
pub fn tile_digest(chunk: &[u8], g: &Geometry, tile: &Tile, w: usize) -> u64 {
    digest_rows(
        g.tile_row_ranges(tile)
            .map(|words| &chunk[words.start * w..words.end * w]),
    )
}

/// XXH3-64 of the concatenation of `rows` (a tile's rows, in order).
pub fn digest_rows<'a>(rows: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut digest = RowDigest::new();
    for row in rows {
        digest.update(row);
    }
    digest.finish()
}

/// A tile digest built up row by row as the rows are decoded, while each is still in
/// cache: the same value as [`digest_rows`] of the same rows.
pub struct RowDigest(XxHash3_64);

impl RowDigest {
    /// The digest of no rows yet.
    pub fn new() -> Self {
        RowDigest(XxHash3_64::new())
    }

    /// Adds the next row.
    pub fn update(&mut self, row: &[u8]) {
        self.0.write(row);
    }

    /// The digest of the rows added.
    pub fn finish(&self) -> u64 {
        self.0.finish()
    }
}

impl Default for RowDigest {
    fn default() -> Self {
        Self::new()
    }
}

/// The chunk checksum of per-tile digests.
pub fn combine_digests(digests: &[u64]) -> u64 {
    let bytes: Vec<u8> = digests.iter().flat_map(|d| d.to_le_bytes()).collect();
    XxHash3_64::oneshot(&bytes)
}
