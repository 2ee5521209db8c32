//! Decompressing a chunk: validating its header and tile table before anything is
//! allocated, decoding its tiles in parallel, and checking the checksum.

use crate::buffers;
use crate::checksum;
use crate::element_type::ElementType;
use crate::error::{Error, Result};
use crate::format::{Header, VERSION_ONE_TILE};
use crate::generic::pipeline::{self, Pipeline};
use crate::layout::{Geometry, Spatial, Tile};
use crate::narrow;
use crate::planar;
use crate::pool::map_shared;
use crate::scaled::{self, Scales};
use crate::shift;
use crate::tile::{self, RowSegments, StridedRows, TileRows, TILE_HEADER_LEN};

/// Decompresses a chunk produced by [`compress`](fn@crate::compress).
pub fn decompress(input: &[u8]) -> Result<Vec<u8>> {
    decompress_with(input, u64::MAX, 0)
}

/// Decompresses a chunk, refusing one that declares more than `limit` decoded bytes,
/// on `threads` workers (0 = all cores). Every length and offset is validated before
/// use; the decoded bytes are checked against the header's checksum.
pub fn decompress_with(input: &[u8], limit: u64, threads: usize) -> Result<Vec<u8>> {
    let chunk = Chunk::parse(input, limit)?;
    let mut out = vec![0u8; chunk.decoded_len()];
    chunk.decode_into(&mut out, threads)?;
    Ok(out)
}

/// The decoded size a chunk declares, after validating its header and tile table; an
/// error if it exceeds `limit`. (To allocate and then decode, [`Chunk`] validates once.)
pub fn decoded_len(input: &[u8], limit: u64) -> Result<usize> {
    Chunk::parse(input, limit).map(|chunk| chunk.decoded_len())
}

/// Decompresses a chunk into `out`, which must be exactly [`decoded_len`] bytes long.
/// On error, `out` holds unspecified bytes.
pub fn decompress_into(input: &[u8], out: &mut [u8], threads: usize) -> Result<()> {
    Chunk::parse(input, out.len() as u64)?.decode_into(out, threads)
}

/// A chunk whose header, tile table and tile sizes have been validated: parse once,
/// allocate [`Chunk::decoded_len`] bytes, then [`Chunk::decode_into`] them.
pub struct Chunk<'a> {
    header: Header,
    body: Body<'a>,
}

enum Body<'a> {
    Stored(&'a [u8]),
    /// A brief chunk coded whole by a general-purpose pipeline.
    Whole(Pipeline, &'a [u8]),
    Tiled {
        geometry: Geometry,
        tiles: Vec<Tile>,
        payloads: Vec<&'a [u8]>,
        /// The scale section of a chunk of scaled integers.
        scales: Option<Scales>,
    },
}

impl<'a> Chunk<'a> {
    /// Validates everything that can be checked before decoding, refusing a chunk that
    /// declares more than `limit` decoded bytes: afterwards the decoded size is bounded by
    /// a fixed multiple of the input size, so allocating it is safe.
    pub fn parse(input: &'a [u8], limit: u64) -> Result<Chunk<'a>> {
        let (header, header_len) = Header::parse(input, limit)?;
        let payload = &input[header_len..];
        let body = if header.is_stored() {
            if payload.len() as u64 != header.coded_size() {
                return Err(Error::Truncated(format!(
                    "stored payload of {} bytes, header declares {}",
                    payload.len(),
                    header.coded_size()
                )));
            }
            Body::Stored(payload)
        } else if let Some(pipeline) = header.whole_pipeline() {
            Body::Whole(pipeline, payload)
        } else {
            let geometry = header.geometry()?;
            let tiles = geometry.tiles();
            let (scales, payload) = if header.is_scaled() {
                let words = header.decoded_size / u64::from(header.word_size);
                let (scales, len) = Scales::parse(payload, words)?;
                (Some(scales), &payload[len..])
            } else {
                (None, payload)
            };
            let payloads = split_payloads(payload, &header.tile_sizes_in(payload.len())?)?;
            let one_tile = header.version == VERSION_ONE_TILE;
            let w = header.coded_word_size();
            check_tile_sizes(&geometry, &tiles, &payloads, w, one_tile)?;
            Body::Tiled {
                geometry,
                tiles,
                payloads,
                scales,
            }
        };
        Ok(Chunk { header, body })
    }

    /// The shape the chunk decodes to, in words, slowest first (a component axis last).
    pub fn decoded_shape(&self) -> Vec<u64> {
        self.header.decoded_shape()
    }

    /// What the elements are, as the chunk records it (unknown before format version 3).
    pub fn element_type(&self) -> ElementType {
        self.header.element
    }

    /// Bytes per decoded word.
    pub fn word_size(&self) -> usize {
        usize::from(self.header.word_size)
    }

    /// Bytes the chunk decodes to.
    pub fn decoded_len(&self) -> usize {
        self.header.decoded_size as usize
    }

    /// Decodes the chunk into `out` (exactly [`Self::decoded_len`] bytes) on `threads`
    /// workers (0 = all cores) and checks the decoded bytes against the checksum. On
    /// error, `out` holds unspecified bytes.
    pub fn decode_into(&self, out: &mut [u8], threads: usize) -> Result<()> {
        self.decode_into_regions(out, threads, |region| region)
    }

    /// [`Self::decode_into`] for an output of any byte-sized element `B`, such as a
    /// foreign buffer of `MaybeUninit<u8>` not yet initialised: `init` turns each region
    /// of `out` into its initialised bytes (zero-filling it, say) on the thread about to
    /// decode into it, just before it does, so the fill is shared between threads and
    /// leaves the region in cache for the decoder. Every byte of `out` goes through
    /// `init` exactly once when decoding succeeds; on error, some may not.
    pub fn decode_into_regions<B: Send>(
        &self,
        out: &mut [B],
        threads: usize,
        init: impl Fn(&mut [B]) -> &mut [u8] + Sync,
    ) -> Result<()> {
        let header = &self.header;
        if header.decoded_size != out.len() as u64 {
            return Err(Error::InvalidParams(format!(
                "output buffer of {} bytes for a chunk of {} bytes",
                out.len(),
                header.decoded_size
            )));
        }
        let (geometry, tiles, payloads, scales) = match &self.body {
            Body::Stored(payload) => {
                header.verify(checksum::data_checksum(payload))?;
                widen_or_copy(header, payload, init(out));
                return Ok(());
            }
            Body::Whole(pipeline, payload) => {
                let out = init(out);
                pipeline::decode(payload, header.coded_word_size(), *pipeline, out).map_err(
                    |e| Error::CorruptBlock {
                        index: 0,
                        reason: e.to_string(),
                    },
                )?;
                return header.verify(checksum::data_checksum(out));
            }
            Body::Tiled {
                geometry,
                tiles,
                payloads,
                scales,
            } => (geometry, tiles, payloads, scales),
        };
        let decoder = TileDecoder {
            geometry,
            word_size: header.coded_word_size(),
            spatial: header.spatial,
        };
        let transformed = header.is_narrowed() || header.is_shifted() || scales.is_some();
        if !header.is_planar() {
            // Each tile decoded in its place in the output (or, narrowed, in a buffer of
            // its own, then widened into its place), and scaled or shifted words turned
            // into floats there as soon as the tile is decoded, while in cache. The
            // checksum is of the coded words, hashed as they are decoded.
            let w = decoder.word_size;
            let finish = |first_word: usize, coded: &mut [u8]| {
                if let Some(scales) = scales {
                    scaled::dequantise_piece(coded, w, first_word, scales.group, &scales.scales);
                }
                if header.is_shifted() {
                    shift::shift_up(coded, w, u32::from(header.shift));
                }
            };
            let finish = if header.is_narrowed() {
                Finish::Widened(&finish)
            } else {
                Finish::InPlace(&finish)
            };
            let digests = decode_tiles(decoder, tiles, payloads, out, threads, &init, finish)?;
            return header.verify(checksum::combine_digests(&digests));
        }
        // Planes: of words as they are, a slab of tiles at a time where the tiles allow;
        // else decoded and checked as coded, joined, then turned into floats, then handed
        // to the caller's buffer.
        let m = header.shape[0] as usize;
        if !transformed {
            if let Some(slabs) = Slabs::of(geometry, tiles, m, threads) {
                let digests = slabs.decode(decoder, tiles, payloads, out, threads, &init)?;
                return header.verify(checksum::combine_digests(&digests));
            }
        }
        let mut coded = scratch(header.coded_size() as usize);
        let digests = decode_tiles(
            decoder,
            tiles,
            payloads,
            &mut coded,
            threads,
            &as_bytes,
            Finish::InPlace(&|_: usize, _: &mut [u8]| {}),
        )?;
        header.verify(checksum::combine_digests(&digests))?;
        let w = decoder.word_size;
        if !transformed {
            join_planes(&coded, w, m, out, threads, &init);
            buffers::give(coded);
            return Ok(());
        }
        let mut joined = scratch(coded.len());
        join_planes(&coded, w, m, &mut joined, threads, &as_bytes);
        buffers::give(std::mem::replace(&mut coded, joined));
        // Piece by piece, on every thread: the words of a piece hold whole groups of
        // scales.
        let group = scales.as_ref().map_or(1, |s| s.group.max(1));
        let words = ((JOIN_PIECE_BYTES / w).div_ceil(group))
            .saturating_mul(group)
            .min(coded.len() / w)
            .max(1);
        let widened = if header.is_narrowed() { 2 } else { 1 };
        let pieces = (coded.chunks_mut(words * w))
            .zip(out.chunks_mut(words * w * widened))
            .enumerate()
            .collect();
        map_shared(threads, pieces, |(i, (coded, out))| {
            if let Some(scales) = scales {
                let first = (i * words / group).min(scales.scales.len());
                let scales_from = &scales.scales[first..];
                if !header.is_shifted() && !header.is_narrowed() {
                    // Straight into the output: no copy after.
                    scaled::dequantise_bytes_into(coded, init(out), w, scales.group, scales_from);
                    return;
                }
                scaled::dequantise_bytes(coded, w, scales.group, scales_from);
            }
            if header.is_shifted() {
                shift::shift_up(coded, w, u32::from(header.shift));
            }
            widen_or_copy(header, coded, init(out));
        });
        buffers::give(coded);
        Ok(())
    }
}

/// The planes in `coded` (of `w`-byte words, `m` components) joined into `out`, piece by
/// piece on `threads` threads, each piece through `init` just before it is written,
/// while it is in cache.
fn join_planes<B: Send>(
    coded: &[u8],
    w: usize,
    m: usize,
    out: &mut [B],
    threads: usize,
    init: &(impl Fn(&mut [B]) -> &mut [u8] + Sync),
) {
    // (A hostile chunk may declare no components: then nothing moves.)
    let element = (w * m).max(1);
    let elements = (JOIN_PIECE_BYTES / element).max(1);
    let pieces = out.chunks_mut(elements * element).enumerate().collect();
    map_shared(threads, pieces, |(i, out)| {
        planar::join_part_into(coded, w, m, i * elements, init(out));
    });
}

/// The tiles of a planar chunk grouped into slabs: slab `j` is tile `j` of every
/// component's planes, all covering the same elements, so that a slab's tiles are
/// decoded into buffers of their own and joined into the output while in cache.
struct Slabs {
    /// Tiles per component.
    per_component: usize,
    /// Components.
    m: usize,
}

impl Slabs {
    /// The slabs of a chunk of `m` components coded as `tiles`, when
    /// every component is tiled alike and there are at least as many slabs as threads
    /// to decode them on (fewer would leave threads idle).
    fn of(g: &Geometry, tiles: &[Tile], m: usize, threads: usize) -> Option<Slabs> {
        if m < 2 || !tiles.len().is_multiple_of(m) || !g.planes.is_multiple_of(m) {
            return None;
        }
        let per = tiles.len() / m;
        if per < crate::pool::effective_threads(threads) {
            return None;
        }
        let planes = g.planes / m;
        let alike = tiles.iter().enumerate().all(|(index, tile)| {
            let (c, first) = (index / per, &tiles[index % per]);
            *tile
                == Tile {
                    plane0: first.plane0 + c * planes,
                    plane1: first.plane1 + c * planes,
                    ..*first
                }
        });
        alike.then_some(Slabs {
            per_component: per,
            m,
        })
    }

    /// Decodes the tiles slab by slab on `threads` threads, each tile into a buffer of
    /// its own, and joins each slab into its elements of `out` (through `init` just
    /// before) as soon as its tiles are decoded; the tiles' digests in tile order.
    fn decode<B: Send>(
        &self,
        d: TileDecoder,
        tiles: &[Tile],
        slices: &[&[u8]],
        out: &mut [B],
        threads: usize,
        init: &(impl Fn(&mut [B]) -> &mut [u8] + Sync),
    ) -> Result<Vec<u64>> {
        let (per, w) = (self.per_component, d.word_size);
        // The first component's tiles say where each slab's elements lie in `out`.
        let regions = tile_regions(d.geometry, &tiles[..per], out, self.m * w);
        let jobs = regions.into_iter().enumerate().collect();
        let decoded = map_shared(threads, jobs, |(j, rows)| {
            let mut planes = Vec::with_capacity(self.m);
            let mut digests = Vec::with_capacity(self.m);
            for index in (j..tiles.len()).step_by(per) {
                let (buf, digest) = decode_compact(d, (index, &tiles[index]), slices[index]);
                planes.push(buf);
                match digest {
                    Ok(digest) => digests.push((index, digest)),
                    Err(error) => {
                        planes.into_iter().for_each(buffers::give);
                        return Err(error);
                    }
                }
            }
            // The slab's pieces of rows of `out` in order, as the tiles' words run.
            let mut at = 0;
            for (_, row) in rows {
                let row = init(row);
                let len = row.len() / self.m;
                let parts: Vec<&[u8]> = planes.iter().map(|p| &p[at..at + len]).collect();
                planar::join_slices_into(&parts, w, row);
                at += len;
            }
            planes.into_iter().for_each(buffers::give);
            Ok(digests)
        });
        let mut digests = vec![0; tiles.len()];
        for slab in decoded {
            for (index, digest) in slab? {
                digests[index] = digest;
            }
        }
        Ok(digests)
    }
}

/// Decodes a tile into a buffer of its own words in row order (from the pool); the
/// buffer, and the tile's digest or the error.
fn decode_compact(d: TileDecoder, tile: (usize, &Tile), payload: &[u8]) -> (Vec<u8>, Result<u64>) {
    let (g, w) = (d.geometry, d.word_size);
    let mut buf = scratch(g.tile_words(tile.1) * w);
    let pieces = if g.tiles_are_contiguous() {
        vec![&mut buf[..]]
    } else {
        // The tile's rows one after another.
        let mut rest = &mut buf[..];
        (tile.1.row0..tile.1.row1)
            .map(|r| {
                let (head, tail) =
                    std::mem::take(&mut rest).split_at_mut(g.tile_row_width(tile.1, r) * w);
                rest = tail;
                head
            })
            .collect()
    };
    let digest = d.decode_into(payload, tile, pieces);
    (buf, digest)
}

/// About the bytes of output a planar chunk's join, and the other transformations of
/// decoded words, write at a time.
const JOIN_PIECE_BYTES: usize = 64 << 10;

/// `len` bytes of unspecified values in a buffer from the pool, every one of them to be
/// written before it is read: reused memory, no page faults, no zeroing.
fn scratch(len: usize) -> Vec<u8> {
    buffers::take_filled(len)
}

/// The coded words of a chunk into `out`: widened when narrowed, else as they are.
fn widen_or_copy(header: &Header, coded: &[u8], out: &mut [u8]) {
    if header.is_narrowed() {
        narrow::widen_into(coded, out);
    } else {
        out.copy_from_slice(coded);
    }
}

/// The region itself: for decoding into a buffer of initialised bytes.
fn as_bytes(region: &mut [u8]) -> &mut [u8] {
    region
}

/// How a chunk's tiles are decoded: geometry, word size, Lorenzo neighbour.
#[derive(Clone, Copy)]
struct TileDecoder<'a> {
    geometry: &'a Geometry,
    word_size: usize,
    spatial: Spatial,
}

impl TileDecoder<'_> {
    /// Decodes a tile into its region as [`tile_regions`] gives it: one contiguous piece
    /// when the tiles span whole rows, else the pieces of its rows in order.
    fn decode_into(
        &self,
        payload: &[u8],
        tile: (usize, &Tile),
        mut region: Vec<&mut [u8]>,
    ) -> Result<u64> {
        let (g, w) = (self.geometry, self.word_size);
        if g.tiles_are_contiguous() {
            let mut rows = StridedRows {
                buf: region.swap_remove(0),
                row_stride: g.lag * w,
                plane_stride: g.plane_len * w,
            };
            return self.decode(payload, tile, &mut rows);
        }
        self.decode(payload, tile, &mut RowSegments { rows: region })
    }

    fn decode(
        &self,
        payload: &[u8],
        (index, tile): (usize, &Tile),
        rows: &mut impl TileRows,
    ) -> Result<u64> {
        let (g, s) = (self.geometry, self.spatial);
        match self.word_size {
            1 => tile::decode_tile::<u8>(payload, g, tile, index, rows, s),
            2 => tile::decode_tile::<u16>(payload, g, tile, index, rows, s),
            4 => tile::decode_tile::<u32>(payload, g, tile, index, rows, s),
            _ => tile::decode_tile::<u64>(payload, g, tile, index, rows, s),
        }
    }
}

/// Cuts the payload into per-tile slices, checking the table adds up exactly.
fn split_payloads<'a>(payload: &'a [u8], sizes: &[u32]) -> Result<Vec<&'a [u8]>> {
    let total: u64 = sizes.iter().map(|&s| u64::from(s)).sum();
    if total != payload.len() as u64 {
        return Err(Error::Truncated(format!(
            "tile table adds up to {total} payload bytes, the chunk holds {}",
            payload.len()
        )));
    }
    let mut rest = payload;
    Ok(sizes
        .iter()
        .map(|&s| {
            let (head, tail) = rest.split_at(s as usize);
            rest = tail;
            head
        })
        .collect())
}

/// Rejects tiles too short to hold their words before any output is allocated, which
/// bounds the decoded size by a fixed multiple of the input size. The one tile of a
/// chunk without a tile table (`one_tile`, format version 5) is the rest of the chunk:
/// too short, the chunk is truncated.
fn check_tile_sizes(
    g: &Geometry,
    tiles: &[Tile],
    slices: &[&[u8]],
    w: usize,
    one_tile: bool,
) -> Result<()> {
    for (index, (tile, slice)) in tiles.iter().zip(slices).enumerate() {
        let coding =
            tile::parse_coding(slice).map_err(|reason| Error::corrupt_block(index, reason))?;
        let words = g.tile_words(tile);
        let least = TILE_HEADER_LEN + coding.coder.min_encoded_len(words, w);
        if slice.len() < least {
            let reason = format!("{} bytes cannot hold its {words} words", slice.len());
            return Err(if one_tile {
                Error::Truncated(format!("a tile of {reason}"))
            } else {
                Error::CorruptBlock { index, reason }
            });
        }
    }
    Ok(())
}

/// What becomes of a tile's decoded words, given the index of a region's first word and
/// the region's coded words: transformed in their place in the output, or (narrowed
/// words) in a buffer of the tile's own, then widened into the output.
#[derive(Clone, Copy)]
enum Finish<F> {
    /// The words as they are decoded into the output.
    InPlace(F),
    /// The narrowed words of a tile's own buffer, then widened into the output.
    Widened(F),
}

/// Decodes every tile into `out` on `threads` threads and returns each tile's digest
/// (see [`checksum::tile_digest`]), hashed row by row as the tile is decoded. Each tile's
/// job passes its regions of `out` through `init` before writing them (before the tile
/// decodes into them; widened, each just before its words are widened into it), and
/// once the tile is decoded, its words through `finish`.
fn decode_tiles<B: Send, F: Fn(usize, &mut [u8]) + Sync>(
    d: TileDecoder,
    tiles: &[Tile],
    slices: &[&[u8]],
    out: &mut [B],
    threads: usize,
    init: &(impl Fn(&mut [B]) -> &mut [u8] + Sync),
    finish: Finish<&F>,
) -> Result<Vec<u64>> {
    let element = match finish {
        Finish::InPlace(_) => d.word_size,
        Finish::Widened(_) => 2 * d.word_size,
    };
    let regions = tile_regions(d.geometry, tiles, out, element);
    let jobs = regions
        .into_iter()
        .zip(tiles.iter().enumerate())
        .zip(slices);
    map_shared(threads, jobs.collect(), |((region, tile), payload)| {
        let pieces = region.into_iter().map(|(at, piece)| (at / element, piece));
        match finish {
            Finish::InPlace(finish) => {
                // The tile decodes into its regions: each goes through `init` first.
                let mut pieces: Vec<(usize, &mut [u8])> = pieces
                    .map(|(first_word, piece)| (first_word, init(piece)))
                    .collect();
                let regions = pieces.iter_mut().map(|(_, p)| &mut **p).collect();
                let digest = d.decode_into(payload, tile, regions)?;
                for (first_word, piece) in pieces {
                    finish(first_word, piece);
                }
                Ok(digest)
            }
            Finish::Widened(finish) => {
                let (mut coded, digest) = decode_compact(d, tile, payload);
                if digest.is_ok() {
                    // The tile's words run through its regions in order, each region
                    // through `init` just before it is written, while in cache.
                    let mut rest = &mut coded[..];
                    for (first_word, piece) in pieces {
                        let piece = init(piece);
                        let (words, tail) = std::mem::take(&mut rest).split_at_mut(piece.len() / 2);
                        finish(first_word, words);
                        narrow::widen_into(words, piece);
                        rest = tail;
                    }
                }
                buffers::give(coded);
                digest
            }
        }
    })
    .into_iter()
    .collect()
}

/// Where each of `tiles` lies in `out` (elements of `element` bytes laid out as the
/// geometry's words): when the tiles span whole rows, one contiguous region each; else
/// (column-split tiles, one plane each, interleaved in memory) the disjoint pieces of the
/// rows it covers, in row order. Each piece with the index in `out` it starts at.
fn tile_regions<'o, B>(
    g: &Geometry,
    tiles: &[Tile],
    out: &'o mut [B],
    element: usize,
) -> Vec<Vec<(usize, &'o mut [B])>> {
    let mut regions: Vec<Vec<(usize, &mut [B])>> = tiles.iter().map(|_| Vec::new()).collect();
    if g.tiles_are_contiguous() {
        let (mut rest, mut at) = (out, 0);
        for (tile, region) in tiles.iter().zip(&mut regions) {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(g.tile_words(tile) * element);
            let len = head.len();
            region.push((at, head));
            (rest, at) = (tail, at + len);
        }
        return regions;
    }
    let col_tiles = g.lag.div_ceil(g.tiling.tile_cols);
    let tiles_per_plane = g.rows().div_ceil(g.tiling.tile_rows) * col_tiles;
    let (plane_len, row_len) = (g.plane_len * element, g.lag * element);
    for (plane, plane_out) in out.chunks_mut(plane_len).enumerate() {
        for (row, row_out) in plane_out.chunks_mut(row_len).enumerate() {
            let first = plane * tiles_per_plane + (row / g.tiling.tile_rows) * col_tiles;
            let start = plane * plane_len + row * row_len;
            let pieces = row_out.chunks_mut(g.tiling.tile_cols * element);
            for (col, (piece, region)) in pieces.zip(&mut regions[first..]).enumerate() {
                region.push((start + col * g.tiling.tile_cols * element, piece));
            }
        }
    }
    regions
}
