//! The self-describing chunk format: header layout, writing and validated parsing. The
//! format is specified in docs/format.md; this table summarises the header.
//!
//! All integers are little-endian. Layout of format version 1:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `KARO` |
//! | 4 | 1 | format version (1) |
//! | 5 | 1 | mode (0 fast, 1 archive) |
//! | 6 | 1 | flags (bit 0: payload stored verbatim; bit 1: scaled integers, a scale section follows the header) |
//! | 7 | 1 | requested predictor id (0 auto; each tile records the one it used) |
//! | 8 | 1 | requested residual map id (0 auto) |
//! | 9 | 1 | requested residual coder id |
//! | 10 | 1 | word size in bytes |
//! | 11 | 1 | rank |
//! | 12 | 1 | time axis |
//! | 13 | 3 | reserved, zero |
//! | 16 | 8 | decoded size in bytes |
//! | 24 | 8 | lag in words |
//! | 32 | 8 | planes per tile |
//! | 40 | 8 | rows per tile |
//! | 48 | 8 | columns per tile |
//! | 56 | 8 | Lorenzo stride in words (0: no spatial neighbour) |
//! | 64 | 8 | Lorenzo run in words |
//! | 72 | 8 | checksum of the decoded bytes: XXH3-64 of the little-endian XXH3-64 digests of each tile's decoded words (in tile order, rows in order); for a stored chunk, XXH3-64 of the bytes |
//! | 80 | 4 | tile count `n` |
//! | 84 | 8 x rank | shape in words |
//! | .. | 4 x n | encoded size of each tile |
//! | .. | 4 | low 32 bits of the XXH3-64 of every header byte before it |
//!
//! The tile payloads follow the header, in tile order; each starts with the predictor,
//! residual map and coder it was coded with (see `tile`).

use twox_hash::XxHash3_64;

use crate::coder::Coder;
use crate::error::{Error, Result};
use crate::layout::{Geometry, Spatial, Tiling};
use crate::predict::residual::ResidualMap;
use crate::predict::Predictor;

/// Magic bytes that open every karoo chunk.
pub const MAGIC: [u8; 4] = *b"KARO";
/// The chunk format version this build writes and reads.
pub const VERSION: u8 = 1;
/// Flag: the payload is the decoded bytes, stored verbatim.
pub const FLAG_STORED: u8 = 1;
/// Flag: the tiles code integers, turned into floats by the scale section that follows
/// the header (see `scaled`).
pub const FLAG_SCALED: u8 = 2;
const FIXED_LEN: usize = 84;
/// Largest rank of a chunk shape (HDF5 allows 32, plus one for components).
pub const MAX_RANK: usize = 64;

/// Everything the header of a chunk records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Mode id.
    pub mode: u8,
    /// Flag bits.
    pub flags: u8,
    /// Requested predictor id (0: auto).
    pub predictor: u8,
    /// Requested residual map id (0: auto).
    pub residual_map: u8,
    /// Requested residual coder id.
    pub coder: u8,
    /// Bytes per word.
    pub word_size: u8,
    /// Index of the time axis in `shape`.
    pub time_axis: u8,
    /// Size of the decoded chunk in bytes.
    pub decoded_size: u64,
    /// Words between successive samples of a series.
    pub lag: u64,
    /// Tile dimensions.
    pub tiling: Tiling,
    /// Lorenzo's neighbour along the innermost element axis.
    pub spatial: Spatial,
    /// Checksum of the decoded bytes.
    pub checksum: u64,
    /// Shape in words.
    pub shape: Vec<u64>,
    /// Encoded size of each tile.
    pub tile_sizes: Vec<u32>,
}

impl Header {
    /// Bytes the header occupies.
    pub fn encoded_len(&self) -> usize {
        FIXED_LEN + 8 * self.shape.len() + 4 * self.tile_sizes.len() + 4
    }

    /// Appends the header to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&[
            VERSION,
            self.mode,
            self.flags,
            self.predictor,
            self.residual_map,
            self.coder,
            self.word_size,
            self.shape.len() as u8,
            self.time_axis,
            0,
            0,
            0,
        ]);
        for v in [
            self.decoded_size,
            self.lag,
            self.tiling.planes_per_tile as u64,
            self.tiling.tile_rows as u64,
            self.tiling.tile_cols as u64,
            self.spatial.stride as u64,
            self.spatial.run as u64,
            self.checksum,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.tile_sizes.len() as u32).to_le_bytes());
        for d in &self.shape {
            out.extend_from_slice(&d.to_le_bytes());
        }
        for s in &self.tile_sizes {
            out.extend_from_slice(&s.to_le_bytes());
        }
        let sum = XxHash3_64::oneshot(&out[start..]) as u32;
        out.extend_from_slice(&sum.to_le_bytes());
    }

    /// Parses and validates the header at the start of `input`. `limit` caps the decoded
    /// size the caller is prepared to allocate. Returns the header and its length.
    pub fn parse(input: &[u8], limit: u64) -> Result<(Header, usize)> {
        if input.len() < MAGIC.len() {
            return Err(Error::Truncated(format!(
                "{} bytes, no header",
                input.len()
            )));
        }
        if input[..4] != MAGIC {
            return Err(Error::BadMagic);
        }
        let mut r = Reader { buf: input, pos: 4 };
        let version = r.u8()?;
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version, VERSION));
        }
        let mode = r.u8()?;
        let flags = r.u8()?;
        let predictor = r.u8()?;
        let residual_map = r.u8()?;
        let coder = r.u8()?;
        let word_size = r.u8()?;
        let rank = r.u8()? as usize;
        let time_axis = r.u8()?;
        let reserved = [r.u8()?, r.u8()?, r.u8()?];
        let decoded_size = r.u64()?;
        let lag = r.u64()?;
        let planes_per_tile = r.u64()?;
        let tile_rows = r.u64()?;
        let tile_cols = r.u64()?;
        let stride = r.u64()?;
        let run = r.u64()?;
        let checksum = r.u64()?;
        let count = r.u32()? as usize;
        if rank > MAX_RANK {
            return Err(Error::CorruptHeader(format!(
                "rank {rank} exceeds {MAX_RANK}"
            )));
        }
        let table_len = 8 * rank + 4 * count + 4;
        if input.len() - r.pos < table_len {
            return Err(Error::Truncated(format!(
                "{} bytes, header of rank {rank} with {count} tiles needs {}",
                input.len(),
                r.pos + table_len
            )));
        }
        let shape: Vec<u64> = (0..rank).map(|_| r.u64()).collect::<Result<_>>()?;
        let tile_sizes: Vec<u32> = (0..count).map(|_| r.u32()).collect::<Result<_>>()?;
        let header_end = r.pos;
        let stored_sum = r.u32()?;
        if XxHash3_64::oneshot(&input[..header_end]) as u32 != stored_sum {
            return Err(Error::HeaderChecksum);
        }
        let header = Header {
            mode,
            flags,
            predictor,
            residual_map,
            coder,
            word_size,
            time_axis,
            decoded_size,
            lag,
            tiling: Tiling {
                planes_per_tile: to_usize(planes_per_tile)?,
                tile_rows: to_usize(tile_rows)?,
                tile_cols: to_usize(tile_cols)?,
            },
            spatial: Spatial {
                stride: to_usize(stride)?,
                run: to_usize(run)?,
            },
            checksum,
            shape,
            tile_sizes,
        };
        if reserved != [0; 3] {
            return Err(Error::CorruptHeader("reserved bytes are not zero".into()));
        }
        if decoded_size > limit {
            return Err(Error::TooLarge {
                declared: decoded_size,
                limit,
            });
        }
        header.check_fields()?;
        Ok((header, r.pos))
    }

    /// True when the payload is the decoded bytes verbatim.
    pub fn is_stored(&self) -> bool {
        self.flags & FLAG_STORED != 0
    }

    /// True when the tiles code scaled integers and a scale section follows the header.
    pub fn is_scaled(&self) -> bool {
        self.flags & FLAG_SCALED != 0
    }

    /// Checks the field values that do not depend on the geometry.
    fn check_fields(&self) -> Result<()> {
        let bad = |what: String| Err(Error::CorruptHeader(what));
        if self.mode > 1 {
            return bad(format!("unknown mode {}", self.mode));
        }
        if self.flags & !(FLAG_STORED | FLAG_SCALED) != 0 {
            return bad(format!("unknown flags {:#04x}", self.flags));
        }
        if self.is_scaled() && (self.is_stored() || !matches!(self.word_size, 4 | 8)) {
            return bad(format!(
                "scaled integers in a {} chunk of {}-byte words",
                if self.is_stored() { "stored" } else { "tiled" },
                self.word_size
            ));
        }
        if self.predictor != 0 && Predictor::from_id(self.predictor.into()).is_none() {
            return bad(format!("unknown predictor {}", self.predictor));
        }
        if self.residual_map != 0 && ResidualMap::from_id(self.residual_map.into()).is_none() {
            return bad(format!("unknown residual map {}", self.residual_map));
        }
        if Coder::from_id(self.coder.into()).is_none() {
            return bad(format!("unknown residual coder {}", self.coder));
        }
        if self.spatial.stride > 0 && self.spatial.run < self.spatial.stride {
            return bad(format!(
                "Lorenzo run {} shorter than its stride {}",
                self.spatial.run, self.spatial.stride
            ));
        }
        if !matches!(self.word_size, 1 | 2 | 4 | 8) {
            return bad(format!("word size {} is not 1, 2, 4 or 8", self.word_size));
        }
        if self.shape.is_empty() || self.time_axis as usize >= self.shape.len() {
            return bad(format!(
                "time axis {} out of range for rank {}",
                self.time_axis,
                self.shape.len()
            ));
        }
        let words = self
            .shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .and_then(|w| w.checked_mul(u64::from(self.word_size)));
        if words != Some(self.decoded_size) {
            return bad(format!(
                "shape {:?} of {}-byte words does not hold the declared {} bytes",
                self.shape, self.word_size, self.decoded_size
            ));
        }
        if self.is_stored() && !self.tile_sizes.is_empty() {
            return bad("stored chunk with a tile table".into());
        }
        Ok(())
    }

    /// Rebuilds and validates the chunk geometry the header describes.
    pub fn geometry(&self) -> Result<Geometry> {
        let shape: Vec<usize> = self
            .shape
            .iter()
            .map(|&d| to_usize(d))
            .collect::<Result<_>>()?;
        let lag = to_usize(self.lag)?;
        if lag == 0 {
            return Err(Error::CorruptHeader("lag is zero".into()));
        }
        let g = Geometry::from_shape(&shape, self.time_axis as usize, lag)
            .map_err(|e| Error::CorruptHeader(e.to_string()))?;
        // Any tiling within the format's limits is accepted, not only the one today's
        // encoder chooses: the limit on words per tile is what bounds the decoded size.
        let g = g
            .with_recorded_tiling(self.tiling)
            .map_err(|e| Error::CorruptHeader(e.to_string()))?;
        if g.tile_count() != Some(self.tile_sizes.len()) {
            return Err(Error::CorruptHeader(format!(
                "tile table has {} entries, the geometry {} tiles",
                self.tile_sizes.len(),
                g.tile_count()
                    .map_or("overflowing".into(), |n| n.to_string())
            )));
        }
        Ok(g)
    }
}

fn to_usize(v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::CorruptHeader(format!("value {v} too large")))
}

/// Bounds-checked little-endian reader over the header bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.buf.get(self.pos..self.pos + N).ok_or_else(|| {
            Error::Truncated(format!("{} bytes, header cut short", self.buf.len()))
        })?;
        self.pos += N;
        Ok(bytes.try_into().expect("slice of length N"))
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take()?))
    }
}
