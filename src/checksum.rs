//! The chunk checksum: XXH3-64 of each tile's decoded words (computed per tile, in
//! parallel), combined into one XXH3-64; for a stored chunk, XXH3-64 of its bytes.

use std::hash::Hasher;
use std::ops::Range;

use twox_hash::XxHash3_64;

use crate::layout::{Geometry, Tile};

/// Checksum of the decoded bytes of a stored (verbatim) chunk.
pub fn data_checksum(bytes: &[u8]) -> u64 {
    XxHash3_64::oneshot(bytes)
}

/// XXH3-64 of the words of `tile` in `chunk`, row by row: computed per tile so the
/// checksum of a chunk is computed in parallel, and still covers every decoded byte.
pub fn tile_digest(chunk: &[u8], g: &Geometry, tile: &Tile, w: usize) -> u64 {
    digest_rows(joined(g.tile_spans(tile)).map(|words| &chunk[words.start * w..words.end * w]))
}

/// `ranges` with each run of ranges that follow one another in memory joined into one:
/// a tile's planes, when it covers them whole, hashed as one piece. The digest is of the
/// same bytes either way.
fn joined(ranges: impl Iterator<Item = Range<usize>>) -> impl Iterator<Item = Range<usize>> {
    let mut ranges = ranges.peekable();
    std::iter::from_fn(move || {
        let mut run = ranges.next()?;
        while let Some(next) = ranges.next_if(|next| next.start == run.end) {
            run.end = next.end;
        }
        Some(run)
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_that_follow_one_another_are_joined() {
        let ranges = [0..2, 2..4, 4..5, 7..9, 9..10, 12..12, 12..13];
        let joined: Vec<Range<usize>> = joined(ranges.into_iter()).collect();
        assert_eq!(joined, [0..5, 7..10, 12..13]);
    }

    #[test]
    fn a_tile_of_narrow_rows_digests_as_its_rows_one_by_one() {
        let g = Geometry::from_shape(&[3, 40, 2], 1, 0).unwrap();
        let chunk: Vec<u8> = (0..240u32 * 4).map(|i| (i * 7 % 251) as u8).collect();
        for tile in g.tiles() {
            let rows: Vec<&[u8]> = (g.tile_row_ranges(&tile))
                .map(|r| &chunk[r.start * 4..r.end * 4])
                .collect();
            assert!(rows.len() > 1);
            assert_eq!(tile_digest(&chunk, &g, &tile, 4), digest_rows(rows));
        }
    }
}
