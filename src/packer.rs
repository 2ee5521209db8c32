//! Seed 000's predictive packer for one tile: XOR each word with the same series'
//! previous time sample, count the residual's leading zero bytes (capped), store the
//! counts as a bit-packed prefix stream and the remaining low bytes in a byte stream.
//!
//! Tile payload layout:
//! `[first row of each plane, raw] [packed prefix codes] [residual bytes] [WORD zero pad]`.
//! The pad lets the decoder load whole words without a bounds branch per word.

use crate::bitpack;
use crate::error::{Error, Result};
use crate::layout::{Geometry, Tile};
use crate::word::Word;

/// Bits per prefix code for a word of `bytes` bytes.
pub fn code_bits(bytes: usize) -> u32 {
    match bytes {
        8 => 3,
        4 => 2,
        _ => 1,
    }
}

/// Largest leading-zero-byte count a prefix code records for `bytes`-byte words.
pub fn code_cap(bytes: usize) -> u32 {
    ((1u32 << code_bits(bytes)) - 1).min(bytes as u32)
}

/// Mutable access to the rows of one tile being decoded, wherever they lie in memory.
pub trait TileRows {
    /// The first `len` bytes of the first row of the tile's plane `k`.
    fn first_row(&mut self, k: usize, len: usize) -> &mut [u8];
    /// Row `j - 1` and row `j` (both cut to `len` bytes) of the tile's plane `k`.
    fn row_pair(&mut self, k: usize, j: usize, len: usize) -> (&[u8], &mut [u8]);
}

/// Tile rows at fixed strides in one buffer (tiles that span whole rows).
pub struct StridedRows<'a> {
    /// The buffer, starting at the tile's first byte.
    pub buf: &'a mut [u8],
    /// Bytes from one row to the next.
    pub row_stride: usize,
    /// Bytes from one plane to the next.
    pub plane_stride: usize,
}

impl TileRows for StridedRows<'_> {
    fn first_row(&mut self, k: usize, len: usize) -> &mut [u8] {
        let at = k * self.plane_stride;
        &mut self.buf[at..at + len]
    }
    fn row_pair(&mut self, k: usize, j: usize, len: usize) -> (&[u8], &mut [u8]) {
        let cur = k * self.plane_stride + j * self.row_stride;
        let (before, after) = self.buf.split_at_mut(cur);
        let prev = cur - self.row_stride;
        (&before[prev..prev + len], &mut after[..len])
    }
}

/// Tile rows as separate disjoint slices (tiles that split rows by columns), one plane.
pub struct RowSegments<'a> {
    /// The tile's rows in order.
    pub rows: Vec<&'a mut [u8]>,
}

impl TileRows for RowSegments<'_> {
    fn first_row(&mut self, _k: usize, len: usize) -> &mut [u8] {
        &mut self.rows[0][..len]
    }
    fn row_pair(&mut self, _k: usize, j: usize, len: usize) -> (&[u8], &mut [u8]) {
        let (before, after) = self.rows.split_at_mut(j);
        (&before[j - 1][..len], &mut after[0][..len])
    }
}

/// Counts of raw words (first rows) and predicted words in a tile.
fn split_counts(g: &Geometry, tile: &Tile) -> (usize, usize) {
    let planes = tile.plane1 - tile.plane0;
    let first = g.tile_row_width(tile, tile.row0) * planes;
    (first, g.tile_words(tile) - first)
}

/// Encodes the words of `tile` from the chunk `src`.
pub fn encode_tile<T: Word>(src: &[u8], g: &Geometry, tile: &Tile) -> Vec<u8> {
    let w = T::BYTES;
    let bits = code_bits(w);
    let cap = code_cap(w);
    let (n_raw, n_pred) = split_counts(g, tile);
    let raw_len = n_raw * w;
    let codes_len = bitpack::packed_len(n_pred, bits);
    let res_start = raw_len + codes_len;
    let mut out = vec![0u8; res_start + n_pred * w + w];
    let mut codes = Vec::with_capacity(n_pred);
    let mut raw_pos = 0;
    let mut pos = res_start;
    for plane in tile.plane0..tile.plane1 {
        let width = g.tile_row_width(tile, tile.row0);
        let first = g.offset(plane, tile.row0, tile.col0) * w;
        out[raw_pos..raw_pos + width * w].copy_from_slice(&src[first..first + width * w]);
        raw_pos += width * w;
        for row in tile.row0 + 1..tile.row1 {
            let width = g.tile_row_width(tile, row);
            if width == 0 {
                break; // only a plane's last, short row can miss the tile
            }
            let cur = g.offset(plane, row, tile.col0) * w;
            let prev = g.offset(plane, row - 1, tile.col0) * w;
            let cur = &src[cur..cur + width * w];
            let prev = &src[prev..prev + width * w];
            for (x, p) in cur.chunks_exact(w).zip(prev.chunks_exact(w)) {
                let residual = T::load(x) ^ T::load(p);
                let zeros = residual.leading_zero_bytes().min(cap);
                codes.push(zeros as u8);
                residual.store(&mut out[pos..]);
                pos += w - zeros as usize;
            }
        }
    }
    out[pos..pos + w].fill(0);
    out.truncate(pos + w);
    bitpack::pack(&codes, bits, &mut out[raw_len..res_start]);
    out
}

/// Decodes tile number `index` from `payload` into `rows`.
pub fn decode_tile<T: Word>(
    payload: &[u8],
    g: &Geometry,
    tile: &Tile,
    index: usize,
    rows: &mut impl TileRows,
) -> Result<()> {
    let w = T::BYTES;
    let bits = code_bits(w);
    let cap = code_cap(w);
    let corrupt = |reason: String| Error::CorruptBlock { index, reason };
    let (n_raw, n_pred) = split_counts(g, tile);
    let raw_len = n_raw * w;
    let codes_len = bitpack::packed_len(n_pred, bits);
    let res_start = raw_len + codes_len;
    if payload.len() < res_start + w {
        return Err(corrupt(format!(
            "{} bytes, fewer than the {} its raw row and prefix codes need",
            payload.len(),
            res_start + w
        )));
    }
    let mut codes = Vec::new();
    let packed_codes = &payload[raw_len..res_start];
    bitpack::unpack(packed_codes, bits, n_pred, &mut codes);
    if !bitpack::padding_is_zero(packed_codes, bits, n_pred) {
        return Err(corrupt("prefix stream padding is not zero".into()));
    }
    if codes.iter().any(|&c| u32::from(c) > cap) {
        return Err(corrupt("prefix code out of range".into()));
    }
    let residual_bytes: usize = codes.iter().map(|&c| w - c as usize).sum::<usize>() + w;
    let residuals = &payload[res_start..];
    if residuals.len() != residual_bytes {
        return Err(corrupt(format!(
            "residual stream holds {} bytes, its prefix codes describe {residual_bytes}",
            residuals.len()
        )));
    }
    if residuals[residual_bytes - w..].iter().any(|&b| b != 0) {
        return Err(corrupt("residual stream padding is not zero".into()));
    }
    let masks: Vec<T> = (0..=cap).map(|z| T::ONES.shr_or_zero(8 * z)).collect();
    let mut codes = codes.iter();
    let mut raw = &payload[..raw_len];
    let mut pos = 0;
    for k in 0..tile.plane1 - tile.plane0 {
        let width = g.tile_row_width(tile, tile.row0) * w;
        rows.first_row(k, width).copy_from_slice(&raw[..width]);
        raw = &raw[width..];
        for j in 1..tile.row1 - tile.row0 {
            let width = g.tile_row_width(tile, tile.row0 + j) * w;
            if width == 0 {
                break;
            }
            let (prev, cur) = rows.row_pair(k, j, width);
            for ((out, p), &code) in cur
                .chunks_exact_mut(w)
                .zip(prev.chunks_exact(w))
                .zip(&mut codes)
            {
                let residual = T::load(&residuals[pos..]) & masks[code as usize];
                (residual ^ T::load(p)).store(out);
                pos += w - code as usize;
            }
        }
    }
    Ok(())
}
