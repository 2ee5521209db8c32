//! Chunk-level compress and decompress: tiling, parallel tile coding, header, checksum
//! and the verbatim fallback for incompressible data.

use crate::axis::{self, Axis};
use crate::buffers;
use crate::error::{Error, Result};
use crate::format::{self, Header, FLAG_STORED};
use crate::layout::{Geometry, Tile};
use crate::params::{spatial, Candidates, ElementKind, Params};
use crate::pool::{self, map_shared};
use crate::residual::ResidualMap;
use crate::tile::{self, RowSegments, Spatial, StridedRows, TileRows, TILE_HEADER_LEN};

/// Compresses one chunk of `data` described by `params`.
///
/// The output is self-describing and never more than a header larger than `data`:
/// chunks that do not compress are stored verbatim. The bytes do not depend on
/// `params.threads`.
pub fn compress(data: &[u8], params: &Params) -> Result<Vec<u8>> {
    let plan = Plan::new(data, params)?;
    if data.len() >= JOINED_MIN_BYTES && !pool::runs_in_parallel(params.threads, plan.tiles.len()) {
        return Ok(plan.compress_joined(data));
    }
    Ok(plan.compress_parts(data).into_vec())
}

/// Smallest chunk [`compress`] codes one tile after another straight into the buffer it
/// returns. Below it, tile buffers from the pool and a copy cost less than a fresh
/// buffer with room for the whole chunk: measured on a 576 KiB chunk, the single
/// buffer was 7-21% slower (glibc maps a fresh one on every call, and each page faults
/// in), while chunks of 1.4, 2.2 and 4 MiB were 7-15% faster without the copy.
const JOINED_MIN_BYTES: usize = 1 << 20;

/// A compressed chunk as [`compress_parts`] leaves it: the header and each tile's
/// payload in separate buffers, the chunk being their concatenation. Copy the parts
/// straight to where the chunk goes instead of concatenating them first; dropping it
/// hands its buffers back for reuse.
#[derive(Debug)]
pub struct Packed {
    parts: Vec<Vec<u8>>,
}

impl Packed {
    /// Bytes of the whole chunk.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    /// Whether the chunk is empty (never: it always has a header).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunk's parts, in order.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        self.parts.iter().map(Vec::as_slice)
    }

    /// The whole chunk in one buffer (the first part's, when it is the only one).
    pub fn into_vec(mut self) -> Vec<u8> {
        let mut parts = std::mem::take(&mut self.parts).into_iter();
        let mut out = parts.next().unwrap_or_default();
        out.reserve(parts.as_slice().iter().map(Vec::len).sum());
        for part in parts {
            out.extend_from_slice(&part);
            buffers::give(part);
        }
        out
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        self.parts.drain(..).for_each(buffers::give);
    }
}

/// [`compress`], leaving the chunk in parts (see [`Packed`]).
pub fn compress_parts(data: &[u8], params: &Params) -> Result<Packed> {
    Ok(Plan::new(data, params)?.compress_parts(data))
}

/// What compressing a chunk needs before its tiles are coded: the header so far, the
/// tiles and the candidate codings.
struct Plan {
    header: Header,
    geometry: Geometry,
    tiles: Vec<Tile>,
    candidates: Candidates,
    spatial: Spatial,
    word_size: usize,
    threads: usize,
}

impl Plan {
    fn new(data: &[u8], params: &Params) -> Result<Plan> {
        let shape = params.validate(data.len())?;
        let axis = choose_axis(data, &shape, params);
        let geometry = Geometry::from_shape(&shape, axis.time_axis, axis.lag)?;
        let spatial = spatial(&shape, axis.time_axis, params.components);
        let candidates = params.candidates(spatial.stride > 0);
        let header = Header {
            mode: params.mode.id(),
            flags: 0,
            predictor: params.predictor.map_or(0, |p| p.id()),
            residual_map: params.residual_map.map_or(0, |m| m.id()),
            coder: candidates.coder.id(),
            word_size: params.word_size as u8,
            time_axis: axis.time_axis as u8,
            decoded_size: data.len() as u64,
            lag: geometry.lag as u64,
            tiling: geometry.tiling,
            spatial,
            checksum: 0,
            shape: shape.iter().map(|&d| d as u64).collect(),
            tile_sizes: Vec::new(),
        };
        Ok(Plan {
            header,
            tiles: geometry.tiles(),
            geometry,
            candidates,
            spatial,
            word_size: params.word_size,
            threads: params.threads,
        })
    }

    /// The tiles coded in parallel, each into its own buffer.
    fn compress_parts(mut self, data: &[u8]) -> Packed {
        let (payloads, digests): (Vec<Vec<u8>>, Vec<u64>) =
            map_shared(self.threads, self.tiles.iter().collect(), |tile| {
                let mut payload = buffers::take(self.max_payload_len(tile));
                self.encode_tile_into(data, tile, &mut payload);
                (payload, self.digest(data, tile))
            })
            .into_iter()
            .unzip();
        let sizes: Vec<usize> = payloads.iter().map(Vec::len).collect();
        if !self.finish_header(data, &sizes, &digests) {
            payloads.into_iter().for_each(buffers::give);
            return Packed {
                parts: vec![self.stored(data)],
            };
        }
        // The header's buffer has room for the payloads: `into_vec` appends them there.
        let mut head = buffers::take(self.header.encoded_len() + sizes.iter().sum::<usize>());
        self.header.write(&mut head);
        let mut parts = Vec::with_capacity(1 + payloads.len());
        parts.push(head);
        parts.extend(payloads);
        Packed { parts }
    }

    /// The tiles coded one after another straight into the chunk's buffer, after room
    /// for the header (written last, when the tile sizes are known): no copy of the
    /// payloads.
    fn compress_joined(mut self, data: &[u8]) -> Vec<u8> {
        // The header's length depends on the tile count only.
        self.header.tile_sizes = vec![0; self.tiles.len()];
        let header_len = self.header.encoded_len();
        let room: usize = self.tiles.iter().map(|t| self.max_payload_len(t)).sum();
        let mut out = buffers::take(header_len + room);
        out.resize(header_len, 0);
        let mut sizes = Vec::with_capacity(self.tiles.len());
        let mut digests = Vec::with_capacity(self.tiles.len());
        for tile in &self.tiles {
            let start = out.len();
            self.encode_tile_into(data, tile, &mut out);
            sizes.push(out.len() - start);
            digests.push(self.digest(data, tile));
        }
        if !self.finish_header(data, &sizes, &digests) {
            buffers::give(out);
            return self.stored(data);
        }
        let mut head = Vec::with_capacity(header_len);
        self.header.write(&mut head);
        out[..header_len].copy_from_slice(&head);
        out
    }

    /// Appends `tile`'s payload to `out`.
    fn encode_tile_into(&self, data: &[u8], tile: &Tile, out: &mut Vec<u8>) {
        let (g, c, s) = (&self.geometry, &self.candidates, self.spatial);
        match self.word_size {
            1 => tile::encode_tile_into::<u8>(data, g, tile, c, s, out),
            2 => tile::encode_tile_into::<u16>(data, g, tile, c, s, out),
            4 => tile::encode_tile_into::<u32>(data, g, tile, c, s, out),
            _ => tile::encode_tile_into::<u64>(data, g, tile, c, s, out),
        }
    }

    /// Room for `tile`'s payload whatever the coder.
    fn max_payload_len(&self, tile: &Tile) -> usize {
        let words = self.geometry.tile_words(tile);
        match self.word_size {
            1 => tile::max_payload_len::<u8>(words),
            2 => tile::max_payload_len::<u16>(words),
            4 => tile::max_payload_len::<u32>(words),
            _ => tile::max_payload_len::<u64>(words),
        }
    }

    /// `tile`'s digest (see [`format::tile_digest`]).
    fn digest(&self, data: &[u8], tile: &Tile) -> u64 {
        format::tile_digest(data, &self.geometry, tile, self.word_size)
    }

    /// Completes the header for tiles of `sizes` bytes and `digests`; false when the
    /// chunk is to be stored instead (the payloads are no smaller than the data, or a
    /// tile's size does not fit the table).
    fn finish_header(&mut self, data: &[u8], sizes: &[usize], digests: &[u64]) -> bool {
        let payload_len: usize = sizes.iter().sum();
        let fits_table = sizes.iter().all(|&size| u32::try_from(size).is_ok());
        if payload_len >= data.len() || !fits_table {
            return false;
        }
        self.header.checksum = format::combine_digests(digests);
        self.header.tile_sizes = sizes.iter().map(|&size| size as u32).collect();
        true
    }

    /// The chunk stored verbatim after its header.
    fn stored(mut self, data: &[u8]) -> Vec<u8> {
        self.header.flags = FLAG_STORED;
        self.header.checksum = format::data_checksum(data);
        self.header.tile_sizes = Vec::new();
        let mut out = buffers::take(self.header.encoded_len() + data.len());
        self.header.write(&mut out);
        out.extend_from_slice(data);
        out
    }
}

/// The axis the chunk's series run along: the caller's time axis and lag, unless a
/// sample shows another axis predicts clearly better (see [`axis::choose`]).
fn choose_axis(data: &[u8], shape: &[usize], params: &Params) -> Axis {
    let hint = Axis {
        time_axis: params.time_axis,
        lag: params.lag,
    };
    let map = params.residual_map.unwrap_or(match params.element {
        ElementKind::Float => ResidualMap::RotateSubtract,
        ElementKind::Integer => ResidualMap::Subtract,
        ElementKind::Other => ResidualMap::Xor,
    });
    let c = params.components;
    match params.word_size {
        1 => axis::choose::<u8>(data, shape, c, hint, map),
        2 => axis::choose::<u16>(data, shape, c, hint, map),
        4 => axis::choose::<u32>(data, shape, c, hint, map),
        _ => axis::choose::<u64>(data, shape, c, hint, map),
    }
}

/// Hands a buffer [`compress`] returned back for reuse by later calls, once its bytes
/// have been copied elsewhere (optional: dropping it is fine too, but reusing it keeps
/// its memory from going back to the system and faulting in again for the next chunk).
pub fn recycle(buffer: Vec<u8>) {
    buffers::give(buffer);
}

/// Decompresses a chunk produced by [`compress`].
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
    Tiled {
        geometry: Geometry,
        tiles: Vec<Tile>,
        payloads: Vec<&'a [u8]>,
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
            if payload.len() as u64 != header.decoded_size {
                return Err(Error::Truncated(format!(
                    "stored payload of {} bytes, header declares {}",
                    payload.len(),
                    header.decoded_size
                )));
            }
            Body::Stored(payload)
        } else {
            let geometry = header.geometry()?;
            let tiles = geometry.tiles();
            let payloads = split_payloads(payload, &header.tile_sizes)?;
            check_tile_sizes(&geometry, &tiles, &payloads, header.word_size as usize)?;
            Body::Tiled {
                geometry,
                tiles,
                payloads,
            }
        };
        Ok(Chunk { header, body })
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
        let actual = match &self.body {
            Body::Stored(payload) => {
                let out = init(out);
                out.copy_from_slice(payload);
                format::data_checksum(out)
            }
            Body::Tiled {
                geometry,
                tiles,
                payloads,
            } => {
                let decoder = TileDecoder {
                    geometry,
                    word_size: header.word_size as usize,
                    spatial: header.spatial,
                };
                let digests = decode_tiles(decoder, tiles, payloads, out, threads, &init)?;
                format::combine_digests(&digests)
            }
        };
        if actual != header.checksum {
            return Err(Error::ChecksumMismatch {
                stored: header.checksum,
                actual,
            });
        }
        Ok(())
    }
}

/// How a chunk's tiles are decoded: geometry, word size, Lorenzo neighbour.
#[derive(Clone, Copy)]
struct TileDecoder<'a> {
    geometry: &'a Geometry,
    word_size: usize,
    spatial: Spatial,
}

impl TileDecoder<'_> {
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
/// bounds the decoded size by a fixed multiple of the input size.
fn check_tile_sizes(g: &Geometry, tiles: &[Tile], slices: &[&[u8]], w: usize) -> Result<()> {
    for (index, (tile, slice)) in tiles.iter().zip(slices).enumerate() {
        let coding =
            tile::parse_coding(slice).map_err(|reason| Error::CorruptBlock { index, reason })?;
        let words = g.tile_words(tile);
        let least = TILE_HEADER_LEN + coding.coder.min_encoded_len(words, w);
        if slice.len() < least {
            return Err(Error::CorruptBlock {
                index,
                reason: format!("{} bytes cannot hold its {words} words", slice.len()),
            });
        }
    }
    Ok(())
}

/// Decodes every tile into `out` on `threads` threads and returns each tile's digest
/// (see [`format::tile_digest`]), hashed row by row as the tile is decoded. Each tile's
/// job passes its regions of `out` through `init` first.
fn decode_tiles<B: Send>(
    d: TileDecoder,
    tiles: &[Tile],
    slices: &[&[u8]],
    out: &mut [B],
    threads: usize,
    init: &(impl Fn(&mut [B]) -> &mut [u8] + Sync),
) -> Result<Vec<u64>> {
    let (g, w) = (d.geometry, d.word_size);
    if g.tiles_are_contiguous() {
        // Tiles span whole rows: each is one contiguous region of the output.
        let mut rest = &mut *out;
        let mut regions = Vec::with_capacity(tiles.len());
        for tile in tiles {
            let (head, tail) = rest.split_at_mut(g.tile_words(tile) * w);
            regions.push(head);
            rest = tail;
        }
        let jobs = regions
            .into_iter()
            .zip(tiles.iter().enumerate())
            .zip(slices);
        return map_shared(threads, jobs.collect(), |((region, tile), payload)| {
            let mut rows = StridedRows {
                buf: init(region),
                row_stride: g.lag * w,
                plane_stride: g.plane_len * w,
            };
            d.decode(payload, tile, &mut rows)
        })
        .into_iter()
        .collect();
    }
    // Column-split tiles (one plane each) interleave in memory: hand each tile the
    // disjoint pieces of the rows it covers.
    let mut pieces: Vec<Vec<&mut [B]>> = tiles.iter().map(|_| Vec::new()).collect();
    let col_tiles = g.lag.div_ceil(g.tiling.tile_cols);
    let tiles_per_plane = g.rows().div_ceil(g.tiling.tile_rows) * col_tiles;
    for (plane, plane_out) in out.chunks_mut(g.plane_len * w).enumerate() {
        for (row, row_out) in plane_out.chunks_mut(g.lag * w).enumerate() {
            let first = plane * tiles_per_plane + (row / g.tiling.tile_rows) * col_tiles;
            for (piece, tile_pieces) in row_out
                .chunks_mut(g.tiling.tile_cols * w)
                .zip(&mut pieces[first..])
            {
                tile_pieces.push(piece);
            }
        }
    }
    let jobs = pieces.into_iter().zip(tiles.iter().enumerate()).zip(slices);
    map_shared(threads, jobs.collect(), |((pieces, tile), payload)| {
        let mut rows = RowSegments {
            rows: pieces.into_iter().map(init).collect(),
        };
        d.decode(payload, tile, &mut rows)
    })
    .into_iter()
    .collect()
}
