//! The self-describing chunk format: header layout, writing and validated parsing. The
//! format is specified in docs/format.md ("Chunk header", "Brief chunks", "Versions");
//! encoders write versions 3.0, 4.0, 4.1 and 4.2, decoders read [`READ_VERSIONS`].
//!
//! The tile payloads follow the header (and the scale section), in tile order; each
//! starts with the predictor, residual map and coder it was coded with (see `tile`).

use twox_hash::XxHash3_64;

use crate::coder::Coder;
use crate::element_type::{ElementType, TypeKind};
use crate::error::{Error, Result};
use crate::generic::pipeline::{self, Compressor, Pipeline};
use crate::layout::{Geometry, Spatial, Tiling, MAX_TILE_WORDS};
use crate::predict::residual::ResidualMap;
use crate::predict::Predictor;

/// Magic bytes that open every karoo chunk.
pub const MAGIC: [u8; 4] = *b"KARO";
/// The major format version of the tiled chunks this build writes.
pub const VERSION: u8 = 3;
/// The format version with the compact header whose checksum covers the decoded words
/// only, still read.
pub const VERSION_COMPACT: u8 = 2;
/// Major format version of brief chunks: stored, or coded whole by a general-purpose
/// pipeline (docs/format.md, "Brief chunks").
pub const VERSION_BRIEF: u8 = 4;
/// Bit 3 of a brief chunk's pipeline byte: no rank byte follows, the header records the
/// decoded size instead of the shape (version 4.1).
pub const BRIEF_UNSHAPED: u8 = 8;
/// The minor version of [`VERSION_BRIEF`] that adds [`BRIEF_UNSHAPED`].
pub const MINOR_UNSHAPED: u8 = 1;
/// The minor version of [`VERSION_BRIEF`] that adds compressor 6, byte delta + Zstandard.
pub const MINOR_BYTE_DELTA: u8 = 2;
/// Major format version of tiled chunks of one tile, whose header leaves out the tiling
/// and the tile table (docs/format.md, "One-tile chunks").
pub const VERSION_ONE_TILE: u8 = 5;
/// Bit 2 of byte 7 of a one-tile chunk: archive mode (informational).
const ONE_TILE_ARCHIVE: u8 = 4;
/// Every major format version this build reads, with the newest minor version of it that
/// it reads (docs/format.md, "Versions").
pub const READ_VERSIONS: [(u8, u8); 5] = [
    (VERSION_FIXED, 0),
    (VERSION_COMPACT, 0),
    (VERSION, 0),
    (VERSION_BRIEF, MINOR_BYTE_DELTA),
    (VERSION_ONE_TILE, 0),
];

/// The version byte of major version `major` and minor version `minor`.
pub const fn version_byte(major: u8, minor: u8) -> u8 {
    major | minor << 4
}

/// The major version of a version byte, after checking that this build reads the
/// version it gives; [`Error::UnsupportedVersion`] otherwise.
fn read_version(byte: u8) -> Result<u8> {
    let (major, minor) = (byte & 15, byte >> 4);
    match READ_VERSIONS.iter().find(|&&(m, _)| m == major) {
        Some(&(_, newest)) if minor <= newest => Ok(major),
        _ => Err(Error::UnsupportedVersion { major, minor }),
    }
}
/// The format version with the fixed-width header, still read.
pub const VERSION_FIXED: u8 = 1;
/// Flag: the payload is the decoded bytes, stored verbatim.
pub const FLAG_STORED: u8 = 1;
/// Flag: the tiles code integers, turned into floats by the scale section that follows
/// the header (see `scaled`).
pub const FLAG_SCALED: u8 = 2;
/// Flag: float64 words coded as the float32 words they equal (see `narrow`): the stored
/// payload, scale section and tiles hold 4-byte words.
pub const FLAG_NARROWED: u8 = 4;
/// Flag: the coded words lack the zero low bits that every word has below its top bit
/// (see `shift`); their count is [`Header::shift`].
pub const FLAG_SHIFTED: u8 = 8;
/// Flag: the tiles code the components of each element as separate planes (see
/// `planar`): the shape and geometry describe that coded array, components first.
pub const FLAG_PLANAR: u8 = 16;
/// Bytes every header version starts with (magic to the shift count).
const COMMON_LEN: usize = 14;
/// Bytes of a one-tile chunk's header before its optional shift byte and its varints.
const ONE_TILE_FIXED_LEN: usize = 10;
/// Largest rank of a chunk shape (HDF5 allows 32, plus one for components).
pub const MAX_RANK: usize = 64;

/// Everything the header of a chunk records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version the header was read with (the version written for a header to write).
    pub version: u8,
    /// What the elements are (recorded from version 3 on; unknown before).
    pub element: ElementType,
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
    /// Zero low bits dropped from every coded word (with flag bit 3, `SHIFTED`), else 0.
    pub shift: u8,
    /// Size of the decoded chunk in bytes.
    pub decoded_size: u64,
    /// Words between successive samples of a series.
    pub lag: u64,
    /// Tile dimensions.
    pub tiling: Tiling,
    /// Lorenzo's neighbour along the innermost element axis.
    pub spatial: Spatial,
    /// Checksum of the decoded bytes: to write, the content checksum (sealed with the
    /// layout by [`Header::write`]); as read, the field as stored (see [`Header::verify`]).
    pub checksum: u64,
    /// XXH3-64 of the header bytes before the data checksum field, as read (version 3
    /// seals it into the stored checksum); 0 in a header to write.
    pub layout_digest: u64,
    /// Shape in words.
    pub shape: Vec<u64>,
    /// Encoded size of each tile.
    pub tile_sizes: Vec<u32>,
    /// A brief chunk's (version 4) pipeline byte; 0 in other versions.
    pub pipeline: u8,
}

impl Header {
    /// Bytes the header occupies (it depends on the tile count, not the tile sizes).
    pub fn encoded_len(&self) -> usize {
        let shape: usize = self.shape.iter().map(|&d| varint_len(d)).sum();
        if self.is_one_tile() {
            let varints: usize = self.one_tile_varints().iter().map(|&v| varint_len(v)).sum();
            let shift = usize::from(self.is_shifted());
            return ONE_TILE_FIXED_LEN + shift + varints + shape + 4;
        }
        let varints: usize = self.varint_fields().iter().map(|&v| varint_len(v)).sum();
        COMMON_LEN + 1 + varints + shape + 4 * self.tile_sizes.len() + 8 + 4
    }

    /// True when the header is written as a one-tile chunk's (version 5): a tiled chunk,
    /// not stored, of exactly one tile.
    fn is_one_tile(&self) -> bool {
        !self.is_stored() && self.tile_sizes.len() == 1
    }

    /// The size of each tile payload of a chunk whose tiles (after the scale section)
    /// take `payload_len` bytes: the tile table, or for a one-tile chunk (version 5),
    /// which has none, `payload_len` itself.
    pub fn tile_sizes_in(&self, payload_len: usize) -> Result<Vec<u32>> {
        if self.version != VERSION_ONE_TILE {
            return Ok(self.tile_sizes.clone());
        }
        let size = u32::try_from(payload_len).map_err(|_| {
            Error::CorruptHeader(format!(
                "a tile payload of {payload_len} bytes (at most 2^32 - 1)"
            ))
        })?;
        Ok(vec![size])
    }

    /// The fields a one-tile chunk (version 5) writes as varints before the shape, in
    /// order: the lag, the spatial stride and run.
    fn one_tile_varints(&self) -> [u64; 3] {
        [
            self.lag,
            self.spatial.stride as u64,
            self.spatial.run as u64,
        ]
    }

    /// The fields written as varints before the shape, in order.
    fn varint_fields(&self) -> [u64; 7] {
        [
            self.lag,
            self.tiling.planes_per_tile as u64,
            self.tiling.tile_rows as u64,
            self.tiling.tile_cols as u64,
            self.spatial.stride as u64,
            self.spatial.run as u64,
            self.tile_sizes.len() as u64,
        ]
    }

    /// Appends the header to `out`: format version 5 for a chunk of one tile, else
    /// version 3. Its data checksum field is [`Self::checksum`] sealed with the header
    /// bytes before it (see [`seal`]).
    pub fn write(&self, out: &mut Vec<u8>) {
        if self.is_one_tile() {
            return self.write_one_tile(out);
        }
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
            self.shift,
            self.element.to_byte(),
        ]);
        for v in self
            .varint_fields()
            .into_iter()
            .chain(self.shape.iter().copied())
        {
            write_varint(v, out);
        }
        for s in &self.tile_sizes {
            out.extend_from_slice(&s.to_le_bytes());
        }
        let layout = XxHash3_64::oneshot(&out[start..]);
        out.extend_from_slice(&seal(layout, self.checksum).to_le_bytes());
        let sum = XxHash3_64::oneshot(&out[start..]) as u32;
        out.extend_from_slice(&sum.to_le_bytes());
    }

    /// Appends the header of a one-tile chunk (format version 5) to `out`.
    fn write_one_tile(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let mode = if self.mode == 1 { ONE_TILE_ARCHIVE } else { 0 };
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&[
            version_byte(VERSION_ONE_TILE, 0),
            self.flags,
            self.element.to_byte(),
            self.word_size.trailing_zeros() as u8 | mode,
            self.shape.len() as u8,
            self.time_axis,
        ]);
        if self.is_shifted() {
            out.push(self.shift);
        }
        for v in self
            .one_tile_varints()
            .into_iter()
            .chain(self.shape.iter().copied())
        {
            write_varint(v, out);
        }
        let layout = XxHash3_64::oneshot(&out[start..]);
        out.extend_from_slice(&(seal(layout, self.checksum) as u32).to_le_bytes());
    }

    /// Parses and validates the header (any format version this build reads) at the
    /// start of `input`. `limit` caps the decoded size the caller is prepared to allocate.
    /// Returns the header and its length.
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
        let version = read_version(r.u8()?)?;
        if version == VERSION_BRIEF {
            return Header::parse_brief(input, limit);
        }
        if version == VERSION_ONE_TILE {
            return Header::parse_one_tile(input, limit);
        }
        let mut header = Header {
            version,
            element: ElementType::default(),
            mode: r.u8()?,
            flags: r.u8()?,
            predictor: r.u8()?,
            residual_map: r.u8()?,
            coder: r.u8()?,
            word_size: r.u8()?,
            time_axis: 0,
            shift: 0,
            decoded_size: 0,
            lag: 0,
            tiling: Tiling {
                planes_per_tile: 0,
                tile_rows: 0,
                tile_cols: 0,
            },
            spatial: Spatial { stride: 0, run: 0 },
            checksum: 0,
            layout_digest: 0,
            shape: Vec::new(),
            tile_sizes: Vec::new(),
            pipeline: 0,
        };
        let rank = r.u8()? as usize;
        header.time_axis = r.u8()?;
        header.shift = r.u8()?;
        let reserved_clear = match version {
            VERSION => {
                let byte = r.u8()?;
                header.element = ElementType::from_byte(byte).ok_or_else(|| {
                    Error::CorruptHeader(format!("unknown element type {byte:#04x}"))
                })?;
                header.parse_compact(&mut r, rank).map(|()| true)?
            }
            VERSION_COMPACT => header.parse_compact(&mut r, rank).map(|()| true)?,
            VERSION_FIXED => header.parse_fixed(&mut r, rank)?,
            _ => {
                return Err(Error::UnsupportedVersion {
                    major: version,
                    minor: 0,
                })
            }
        };
        let header_end = r.pos;
        let stored_sum = r.u32()?;
        if XxHash3_64::oneshot(&input[..header_end]) as u32 != stored_sum {
            return Err(Error::HeaderChecksum);
        }
        if !reserved_clear {
            return Err(Error::CorruptHeader("reserved bytes are not zero".into()));
        }
        if header.decoded_size > limit {
            return Err(Error::TooLarge {
                declared: header.decoded_size,
                limit,
            });
        }
        header.check_fields()?;
        Ok((header, r.pos))
    }

    /// Reads and checks the header of a brief chunk (version 4), up to and including its
    /// checksum field.
    fn parse_brief(input: &[u8], limit: u64) -> Result<(Header, usize)> {
        let bad = |what: String| Error::CorruptHeader(what);
        let mut r = Reader { buf: input, pos: 5 };
        let byte = r.u8()?;
        let element = ElementType::from_byte(byte)
            .ok_or_else(|| bad(format!("unknown element type {byte:#04x}")))?;
        let byte6 = r.u8()?;
        let pipeline = byte6 & !BRIEF_UNSHAPED;
        let (whole, w) = Pipeline::from_byte(pipeline).map_err(bad)?;
        let minor = input[4] >> 4;
        if whole.minor_version() > minor {
            return Err(bad(format!(
                "{} in a version {VERSION_BRIEF}.{minor} chunk (added in version {VERSION_BRIEF}.{})",
                whole.name(),
                whole.minor_version()
            )));
        }
        let rank = if byte6 & BRIEF_UNSHAPED != 0 {
            0
        } else {
            usize::from(r.u8()?)
        };
        check_rank(rank)?;
        let (shape, decoded_size) = if rank == 0 {
            let size = r.varint()?;
            let complex = element.kind == TypeKind::Complex;
            let element_bytes = w as u64 * if complex { 2 } else { 1 };
            if !size.is_multiple_of(element_bytes) || element.fortran || element.scalar {
                return Err(bad(format!(
                    "{size} bytes recorded without a shape, as elements of {element_bytes} bytes \
                     of element type {byte:#04x}"
                )));
            }
            let shape = if complex {
                vec![size / element_bytes, 2]
            } else {
                vec![size / element_bytes]
            };
            (shape, size)
        } else {
            let shape: Vec<u64> = (0..rank).map(|_| r.varint()).collect::<Result<_>>()?;
            let size = shape
                .iter()
                .try_fold(w as u64, |acc, &d| acc.checked_mul(d))
                .ok_or_else(|| {
                    bad(format!(
                        "shape {shape:?} of {w}-byte words holds more than 2^64 bytes"
                    ))
                })?;
            (shape, size)
        };
        if !whole.fits_size(decoded_size, w) {
            return Err(bad(format!(
                "{decoded_size} bytes are not whole elements of two {w}-byte words"
            )));
        }
        let layout_digest = XxHash3_64::oneshot(&input[..r.pos]);
        let checksum = u64::from(r.u32()?);
        if decoded_size > limit {
            return Err(Error::TooLarge {
                declared: decoded_size,
                limit,
            });
        }
        let payload = input.len() - r.pos;
        if whole.compressor != Compressor::None
            && decoded_size > pipeline::max_decoded_len(whole.compressor, payload)
        {
            return Err(bad(format!(
                "a payload of {payload} bytes cannot decode to {decoded_size} bytes"
            )));
        }
        let header = Header {
            version: VERSION_BRIEF,
            element,
            mode: 0,
            flags: if whole.compressor == Compressor::None {
                FLAG_STORED
            } else {
                0
            },
            predictor: 0,
            residual_map: 0,
            coder: 0,
            word_size: w as u8,
            time_axis: 0,
            shift: 0,
            decoded_size,
            lag: 0,
            tiling: Tiling {
                planes_per_tile: 0,
                tile_rows: 0,
                tile_cols: 0,
            },
            spatial: Spatial { stride: 0, run: 0 },
            checksum,
            layout_digest,
            shape,
            tile_sizes: Vec::new(),
            pipeline,
        };
        header.check_element_type()?;
        Ok((header, r.pos))
    }

    /// Reads and checks the header of a one-tile chunk (version 5), up to and including
    /// its checksum field. Its tile size is the rest of the payload
    /// ([`Self::tile_sizes_in`]); its tiling, one tile of the whole chunk, is set by
    /// [`Self::geometry`].
    fn parse_one_tile(input: &[u8], limit: u64) -> Result<(Header, usize)> {
        let bad = |what: String| Error::CorruptHeader(what);
        let mut r = Reader { buf: input, pos: 5 };
        let flags = r.u8()?;
        if flags & FLAG_STORED != 0 {
            return Err(bad("a stored chunk in a one-tile header".into()));
        }
        let byte = r.u8()?;
        let element = ElementType::from_byte(byte)
            .ok_or_else(|| bad(format!("unknown element type {byte:#04x}")))?;
        let words = r.u8()?;
        if words & !(3 | ONE_TILE_ARCHIVE) != 0 {
            return Err(bad(format!("unknown bits in word byte {words:#04x}")));
        }
        let rank = usize::from(r.u8()?);
        let time_axis = r.u8()?;
        let shift = if flags & FLAG_SHIFTED != 0 {
            r.u8()?
        } else {
            0
        };
        let lag = r.varint()?;
        let (stride, run) = (r.varint()?, r.varint()?);
        check_rank(rank)?;
        let shape: Vec<u64> = (0..rank).map(|_| r.varint()).collect::<Result<_>>()?;
        let word_size = 1u8 << (words & 3);
        let decoded_size = shape
            .iter()
            .try_fold(u64::from(word_size), |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| {
                bad(format!(
                    "shape {shape:?} of {word_size}-byte words holds more than 2^64 bytes"
                ))
            })?;
        let layout_digest = XxHash3_64::oneshot(&input[..r.pos]);
        let checksum = u64::from(r.u32()?);
        let mut header = Header {
            version: VERSION_ONE_TILE,
            element,
            mode: u8::from(words & ONE_TILE_ARCHIVE != 0),
            flags,
            predictor: 0,
            residual_map: 0,
            coder: 0,
            word_size,
            time_axis,
            shift,
            decoded_size,
            lag,
            tiling: Tiling {
                planes_per_tile: 1,
                tile_rows: 1,
                tile_cols: 1,
            },
            spatial: Spatial {
                stride: to_usize(stride)?,
                run: to_usize(run)?,
            },
            checksum,
            layout_digest,
            shape,
            tile_sizes: vec![0],
            pipeline: 0,
        };
        let words = decoded_size / u64::from(word_size);
        if !(1..=MAX_TILE_WORDS as u64).contains(&words) {
            return Err(bad(format!(
                "a one-tile chunk of {words} words (1 to {MAX_TILE_WORDS})"
            )));
        }
        if decoded_size > limit {
            return Err(Error::TooLarge {
                declared: decoded_size,
                limit,
            });
        }
        header.check_fields()?;
        header.tiling = header.geometry_untiled()?.whole_tile();
        Ok((header, r.pos))
    }

    /// The pipeline and word size of a brief chunk (version 4); `None` for other versions.
    pub fn whole_pipeline(&self) -> Option<Pipeline> {
        (self.version == VERSION_BRIEF)
            .then(|| Pipeline::from_byte(self.pipeline).ok().map(|(p, _)| p))
            .flatten()
    }

    /// Sets the tiling and the Lorenzo neighbour from the header's fields, in header order:
    /// planes, rows and columns per tile, stride, run.
    fn set_tiling_and_spatial(
        &mut self,
        [planes, rows, cols, stride, run]: [u64; 5],
    ) -> Result<()> {
        self.tiling = Tiling {
            planes_per_tile: to_usize(planes)?,
            tile_rows: to_usize(rows)?,
            tile_cols: to_usize(cols)?,
        };
        self.spatial = Spatial {
            stride: to_usize(stride)?,
            run: to_usize(run)?,
        };
        Ok(())
    }

    /// Reads the rest of a version-2 header up to its checksum (the reader after byte 13).
    fn parse_compact(&mut self, r: &mut Reader<'_>, rank: usize) -> Result<()> {
        self.lag = r.varint()?;
        self.set_tiling_and_spatial([
            r.varint()?,
            r.varint()?,
            r.varint()?,
            r.varint()?,
            r.varint()?,
        ])?;
        let count = r.varint()?;
        check_rank(rank)?;
        self.shape = (0..rank).map(|_| r.varint()).collect::<Result<_>>()?;
        let table_len = count
            .checked_mul(4)
            .and_then(|t| t.checked_add(8 + 4))
            .filter(|&t| t <= (r.buf.len() - r.pos) as u64);
        if table_len.is_none() {
            return Err(Error::Truncated(format!(
                "{} bytes, header with {count} tiles cut short",
                r.buf.len()
            )));
        }
        self.tile_sizes = (0..count).map(|_| r.u32()).collect::<Result<_>>()?;
        self.layout_digest = XxHash3_64::oneshot(&r.buf[..r.pos]);
        self.checksum = r.u64()?;
        self.decoded_size = self
            .shape
            .iter()
            .try_fold(u64::from(self.word_size), |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| {
                Error::CorruptHeader(format!(
                    "shape {:?} of {}-byte words holds more than 2^64 bytes",
                    self.shape, self.word_size
                ))
            })?;
        Ok(())
    }

    /// Reads the rest of a version-1 header up to its checksum (the reader after byte 13);
    /// true when its reserved bytes are zero.
    fn parse_fixed(&mut self, r: &mut Reader<'_>, rank: usize) -> Result<bool> {
        let reserved = [r.u8()?, r.u8()?];
        self.decoded_size = r.u64()?;
        self.lag = r.u64()?;
        self.set_tiling_and_spatial([r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?])?;
        self.checksum = r.u64()?;
        let count = r.u32()? as usize;
        check_rank(rank)?;
        let table_len = 8 * rank + 4 * count + 4;
        if r.buf.len() - r.pos < table_len {
            return Err(Error::Truncated(format!(
                "{} bytes, header of rank {rank} with {count} tiles needs {}",
                r.buf.len(),
                r.pos + table_len
            )));
        }
        self.shape = (0..rank).map(|_| r.u64()).collect::<Result<_>>()?;
        self.tile_sizes = (0..count).map(|_| r.u32()).collect::<Result<_>>()?;
        Ok(reserved == [0; 2])
    }

    /// Checks `content`, the checksum of the decoded words as version 2 defines it (see
    /// `checksum`), against the header's data checksum: from version 3 on, sealed with
    /// the header bytes before it, so that a changed layout field fails too.
    pub fn verify(&self, content: u64) -> Result<()> {
        let actual = if matches!(self.version, VERSION_BRIEF | VERSION_ONE_TILE) {
            seal(self.layout_digest, content) & 0xffff_ffff
        } else if self.version >= VERSION {
            seal(self.layout_digest, content)
        } else {
            content
        };
        if actual != self.checksum {
            return Err(Error::ChecksumMismatch {
                stored: self.checksum,
                actual,
            });
        }
        Ok(())
    }

    /// True when the payload is the decoded bytes verbatim.
    pub fn is_stored(&self) -> bool {
        self.flags & FLAG_STORED != 0
    }

    /// True when the tiles code scaled integers and a scale section follows the header.
    pub fn is_scaled(&self) -> bool {
        self.flags & FLAG_SCALED != 0
    }

    /// True when float64 words are coded as float32 words.
    pub fn is_narrowed(&self) -> bool {
        self.flags & FLAG_NARROWED != 0
    }

    /// True when the coded words lack [`Self::shift`] zero low bits.
    pub fn is_shifted(&self) -> bool {
        self.flags & FLAG_SHIFTED != 0
    }

    /// True when the tiles code each component of the elements as its own plane.
    pub fn is_planar(&self) -> bool {
        self.flags & FLAG_PLANAR != 0
    }

    /// The decoded array's shape: the recorded shape, with its first axis (the
    /// components) moved last when planar.
    pub fn decoded_shape(&self) -> Vec<u64> {
        let mut shape = self.shape.clone();
        if self.is_planar() && !shape.is_empty() {
            shape.rotate_left(1);
        }
        shape
    }

    /// Bytes per word of what the payload codes: 4 when narrowed, else the word size.
    pub fn coded_word_size(&self) -> usize {
        if self.is_narrowed() {
            4
        } else {
            usize::from(self.word_size)
        }
    }

    /// Bytes the payload codes: the decoded size, halved when narrowed.
    pub fn coded_size(&self) -> u64 {
        if self.is_narrowed() {
            self.decoded_size / 2
        } else {
            self.decoded_size
        }
    }

    /// Checks the field values that do not depend on the geometry.
    fn check_fields(&self) -> Result<()> {
        let bad = |what: String| Err(Error::CorruptHeader(what));
        if self.mode > 1 {
            return bad(format!("unknown mode {}", self.mode));
        }
        let known = FLAG_STORED | FLAG_SCALED | FLAG_NARROWED | FLAG_SHIFTED | FLAG_PLANAR;
        if self.flags & !known != 0 {
            return bad(format!("unknown flags {:#04x}", self.flags));
        }
        if self.is_planar() && self.is_stored() {
            return bad("planar components in a stored chunk".into());
        }
        if self.is_scaled() && (self.is_stored() || !matches!(self.word_size, 4 | 8)) {
            return bad(format!(
                "scaled integers in a {} chunk of {}-byte words",
                if self.is_stored() { "stored" } else { "tiled" },
                self.word_size
            ));
        }
        if self.is_narrowed() && self.word_size != 8 {
            return bad(format!(
                "float64 narrowed to float32 in a chunk of {}-byte words",
                self.word_size
            ));
        }
        if self.is_shifted() {
            let bits = 8 * self.coded_word_size();
            if self.is_stored()
                || self.is_scaled()
                || !(1..=bits.saturating_sub(2)).contains(&usize::from(self.shift))
            {
                return bad(format!(
                    "{} low bits shifted out of a {} chunk of {bits}-bit words",
                    self.shift,
                    if self.is_stored() {
                        "stored"
                    } else if self.is_scaled() {
                        "scaled"
                    } else {
                        "tiled"
                    },
                ));
            }
        } else if self.shift != 0 {
            return bad("reserved bytes are not zero".into());
        }
        if self.predictor != 0 && Predictor::from_id(self.predictor.into()).is_none() {
            return bad(format!("unknown predictor {}", self.predictor));
        }
        if self.residual_map != 0 && ResidualMap::from_id(self.residual_map.into()).is_none() {
            return bad(format!("unknown residual map {}", self.residual_map));
        }
        // A one-tile chunk (version 5) records no requested coder.
        if self.version != VERSION_ONE_TILE && Coder::from_id(self.coder.into()).is_none() {
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
        self.check_element_type()
    }

    /// Checks that the recorded element type fits the words and the decoded shape.
    fn check_element_type(&self) -> Result<()> {
        let shape = self.decoded_shape();
        let components = match self.element.kind {
            TypeKind::Complex => 2,
            _ => 1,
        };
        let last = shape.last().copied().unwrap_or(0);
        let mut why = self
            .element
            .mismatch(usize::from(self.word_size), components);
        if why.is_none() && components > 1 && last != components as u64 {
            why = Some(format!(
                "complex elements in a shape {shape:?} whose last axis is not 2"
            ));
        }
        let words: u64 = shape.iter().product();
        if why.is_none() && self.element.scalar && words != components as u64 {
            why = Some(format!("a 0-d array of shape {shape:?}"));
        }
        match why {
            Some(why) => Err(Error::CorruptHeader(why)),
            None => Ok(()),
        }
    }

    /// The chunk geometry of the header's shape, time axis and lag, before its tiling.
    fn geometry_untiled(&self) -> Result<Geometry> {
        let shape: Vec<usize> = self
            .shape
            .iter()
            .map(|&d| to_usize(d))
            .collect::<Result<_>>()?;
        let lag = to_usize(self.lag)?;
        if lag == 0 {
            return Err(Error::CorruptHeader("lag is zero".into()));
        }
        Geometry::from_shape(&shape, self.time_axis as usize, lag)
            .map_err(|e| Error::CorruptHeader(e.to_string()))
    }

    /// Rebuilds and validates the chunk geometry the header describes.
    pub fn geometry(&self) -> Result<Geometry> {
        let g = self.geometry_untiled()?;
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

/// The data checksum field of a version-3 header: XXH3-64 of the 16 bytes
/// `layout` (XXH3-64 of the header bytes before the field) and `content` (the checksum
/// of the decoded words), both little-endian.
pub fn seal(layout: u64, content: u64) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&layout.to_le_bytes());
    bytes[8..].copy_from_slice(&content.to_le_bytes());
    XxHash3_64::oneshot(&bytes)
}

/// Bytes of a brief chunk's header (version 4) of `shape` (in words) and `decoded`
/// bytes: 12 and the shape's varints, or 11 and `decoded`'s varint where the shape's
/// take more than 4 bytes and more than it (at most 16 bytes below 256 MiB).
pub fn brief_header_len(shape: &[u64], decoded: u64) -> usize {
    brief_shape_len(shape, decoded).map_or_else(|| 11 + varint_len(decoded), |len| 12 + len)
}

/// Bytes of the shape's varints when a brief header records the shape (see
/// [`brief_header_len`]).
fn brief_shape_len(shape: &[u64], decoded: u64) -> Option<usize> {
    let len: usize = shape.iter().map(|&d| varint_len(d)).sum();
    (!shape.is_empty() && shape.len() <= MAX_RANK && (len <= 4 || len <= varint_len(decoded)))
        .then_some(len)
}

/// Appends the header of a brief chunk (version 4) to `out`: the element type, the
/// `pipeline` byte (whose bits 6-7 give the word size), the shape (in words) or, where
/// that is longer (see [`brief_header_len`]), the unshaped bit and the decoded size, and the checksum sealing
/// `content` (XXH3-64 of the decoded bytes) with the bytes before it. Without the shape,
/// the element type's Fortran-order and scalar bits are cleared. The version is the
/// lowest minor version of 4 that the pipeline and the unshaped bit need.
pub fn write_brief(
    element: ElementType,
    pipeline: u8,
    shape: &[u64],
    content: u64,
    out: &mut Vec<u8>,
) {
    let word_size = 1u64 << (pipeline >> 6);
    let decoded = shape.iter().product::<u64>() * word_size;
    let needs = Pipeline::from_byte(pipeline).map_or(0, |(p, _)| p.minor_version());
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    match brief_shape_len(shape, decoded) {
        Some(_) => {
            out.push(version_byte(VERSION_BRIEF, needs));
            out.extend_from_slice(&[element.to_byte(), pipeline, shape.len() as u8]);
            shape.iter().for_each(|&d| write_varint(d, out));
        }
        None => {
            let flat = ElementType {
                fortran: false,
                scalar: false,
                ..element
            };
            out.push(version_byte(VERSION_BRIEF, needs.max(MINOR_UNSHAPED)));
            out.extend_from_slice(&[flat.to_byte(), pipeline | BRIEF_UNSHAPED]);
            write_varint(decoded, out);
        }
    }
    let layout = XxHash3_64::oneshot(&out[start..]);
    out.extend_from_slice(&(seal(layout, content) as u32).to_le_bytes());
}

/// Refuses a rank above [`MAX_RANK`].
fn check_rank(rank: usize) -> Result<()> {
    if rank > MAX_RANK {
        return Err(Error::CorruptHeader(format!(
            "rank {rank} exceeds {MAX_RANK}"
        )));
    }
    Ok(())
}

/// Bytes of `v` as an unsigned LEB128 varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends `v` as an unsigned LEB128 varint (7 bits per byte, low group first).
fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
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
    /// A minimal unsigned LEB128 varint below 2^64.
    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if i == 9 && byte > 1 {
                return Err(Error::CorruptHeader("varint exceeds 64 bits".into()));
            }
            value |= bits << (7 * i);
            if byte & 0x80 == 0 {
                if byte == 0 && i > 0 {
                    return Err(Error::CorruptHeader("varint not minimal".into()));
                }
                return Ok(value);
            }
        }
        Err(Error::CorruptHeader("varint exceeds 64 bits".into()))
    }
}
