//! The chunk header, byte for byte, as docs/format.md lays out versions 3 (several
//! tiles) and 5 (one tile): a third party's decoder is written from that document, so
//! the bytes must match it exactly. (Version-1 and -2 headers are read back from the
//! golden chunks in compatibility.rs.)

mod common;

use common::varint;
use karoo::{compress, Coder, ElementKind, Mode, Params, Predictor, ResidualMap};
use twox_hash::XxHash3_64;

/// The fields of a version-3 or version-5 header, read as docs/format.md lays them out.
#[derive(Debug)]
struct Fields {
    /// Version 3: bytes 4 to 13: version, mode, flags, predictor, map, coder, word size,
    /// rank, time axis, shift. Version 5: the version, the mode (bit 2 of byte 7), the
    /// flags, three zeros (no requested ids), the word size, rank, time axis and shift.
    common: [u8; 10],
    /// Byte 14 (version 3) or 6 (version 5): the element type.
    element: u8,
    lag: u64,
    /// Planes, rows and columns per tile (version 3; none recorded in version 5).
    tiling: [u64; 3],
    spatial: [u64; 2],
    shape: Vec<u64>,
    tile_sizes: Vec<u32>,
    /// The data checksum field: the seal of the decoded bytes' checksum (see [`sealed`]);
    /// in version 5, its low 32 bits.
    checksum: u64,
    /// XXH3-64 of the header bytes before the data checksum field.
    layout: u64,
    /// Where the payloads start.
    len: usize,
}

/// The data checksum field docs/format.md gives for a decoded-bytes checksum `content`:
/// XXH3-64 of the layout digest and `content`, 8 little-endian bytes each.
fn sealed(f: &Fields, content: u64) -> u64 {
    let mut bytes = f.layout.to_le_bytes().to_vec();
    bytes.extend_from_slice(&content.to_le_bytes());
    XxHash3_64::oneshot(&bytes)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Parses a version-3 or version-5 header, checking its magic and (version 3) its
/// header checksum.
fn fields(chunk: &[u8]) -> Fields {
    assert_eq!(&chunk[0..4], b"KARO", "magic");
    if chunk[4] == 5 {
        return fields_one_tile(chunk);
    }
    assert_eq!(chunk[4], 3, "format version");
    let mut at = 15;
    let v: Vec<u64> = (0..7).map(|_| varint(chunk, &mut at)).collect();
    let shape: Vec<u64> = (0..chunk[11]).map(|_| varint(chunk, &mut at)).collect();
    let tile_sizes: Vec<u32> = (0..v[6] as usize)
        .map(|t| u32_at(chunk, at + 4 * t))
        .collect();
    at += 4 * tile_sizes.len();
    let layout = XxHash3_64::oneshot(&chunk[..at]);
    let checksum = u64::from_le_bytes(chunk[at..at + 8].try_into().unwrap());
    at += 8;
    let sum = XxHash3_64::oneshot(&chunk[..at]) as u32;
    assert_eq!(
        u32_at(chunk, at),
        sum,
        "header checksum: low 32 bits of XXH3-64"
    );
    Fields {
        common: chunk[4..14].try_into().unwrap(),
        element: chunk[14],
        lag: v[0],
        tiling: [v[1], v[2], v[3]],
        spatial: [v[4], v[5]],
        shape,
        tile_sizes,
        checksum,
        layout,
        len: at + 4,
    }
}

/// Parses a version-5 header (one tile, the rest of the chunk its payload).
fn fields_one_tile(chunk: &[u8]) -> Fields {
    let (flags, element, words, rank, time_axis) =
        (chunk[5], chunk[6], chunk[7], chunk[8], chunk[9]);
    assert_eq!(words & !7, 0, "bits 3-7 of byte 7");
    let shift = if flags & 8 != 0 { chunk[10] } else { 0 };
    let mut at = 10 + usize::from(flags & 8 != 0);
    let v: Vec<u64> = (0..3).map(|_| varint(chunk, &mut at)).collect();
    let shape: Vec<u64> = (0..rank).map(|_| varint(chunk, &mut at)).collect();
    let layout = XxHash3_64::oneshot(&chunk[..at]);
    let checksum = u64::from(u32_at(chunk, at));
    Fields {
        common: [
            5,
            (words >> 2) & 1,
            flags,
            0,
            0,
            0,
            1 << (words & 3),
            rank,
            time_axis,
            shift,
        ],
        element,
        lag: v[0],
        tiling: [0; 3],
        spatial: [v[1], v[2]],
        shape,
        tile_sizes: vec![(chunk.len() - at - 4) as u32],
        checksum,
        layout,
        len: at + 4,
    }
}

/// Float32 words of series that change slowly along time (axis 0), with noise in the
/// low bits (not integers times a scale, which the encoder would code as such).
fn ramp(shape: &[usize]) -> Vec<u8> {
    let lag: usize = shape[1..].iter().product();
    let n: usize = shape.iter().product();
    (0..n)
        .flat_map(|i| {
            // Unrelated levels across series, slow drift along time: time is the axis.
            let series = ((i % lag) as u32).wrapping_mul(2_654_435_761) as f32 * 1e-6;
            (series + (i / lag) as f32 * 1.001).to_le_bytes()
        })
        .collect()
}

#[test]
fn a_small_complex_chunk_has_the_documented_header() {
    // 16 time steps x 3 elements x 2 components (complex64 as float32 pairs): enough
    // that the tiles code smaller than the chunk stored (a brief chunk).
    let shape = [16usize, 3, 2];
    let data = ramp(&shape);
    let params = Params {
        predictor: Some(Predictor::Lagrange(1)),
        residual_map: Some(ResidualMap::Subtract),
        coder: Some(Coder::Patched),
        components: 2,
        threads: 1,
        ..Params::new(4, &shape)
    };
    let chunk = compress(&data, &params).unwrap();
    // One tile: version 5, no flags, no element type, 4-byte words (log2 2) in fast mode
    // (bit 2 clear), rank 3, time axis 0; then the lag 6 (one row per time step of 3 x 2
    // words), Lorenzo's neighbour one element (2 words) back within runs of 6, the shape.
    assert_eq!(&chunk[4..10], &[5, 0, 0, 2, 3, 0]);
    assert_eq!(&chunk[10..16], &[6, 2, 6, 16, 3, 2]);
    let f = fields(&chunk);
    assert_eq!(f.common, [5, 0, 0, 0, 0, 0, 4, 3, 0, 0]);
    assert_eq!(
        (f.lag, f.spatial, f.shape.as_slice()),
        (6, [2, 6], &[16, 3, 2][..])
    );
    // 10 bytes, 3 of varint fields, 3 of shape, the checksum: no tiling, no tile size.
    assert_eq!(f.len, 10 + 3 + 3 + 4, "header length");
    // One tile covering the chunk: its digest is XXH3-64 of the whole chunk's bytes,
    // the checksum XXH3-64 of that digest's 8 little-endian bytes, sealed with the header
    // bytes before the field, its low 32 bits stored.
    let digest = XxHash3_64::oneshot(&data);
    let checksum = XxHash3_64::oneshot(&digest.to_le_bytes());
    assert_eq!(
        f.checksum,
        sealed(&f, checksum) & 0xffff_ffff,
        "checksum of the decoded bytes"
    );
    assert_eq!(f.element, 0, "no element type given");
    // The tile header: predictor 1 (no spatial head), then map 3 << 4 | coder 7.
    assert_eq!(&chunk[f.len..f.len + 2], &[1, 3 << 4 | 7]);
    assert_eq!(karoo::decompress(&chunk).unwrap(), data);
}

#[test]
fn archive_mode_records_mode_and_default_coder() {
    let shape = [16usize, 64];
    let data = ramp(&shape);
    let params = Params {
        mode: Mode::Archive,
        threads: 1,
        ..Params::new(4, &shape)
    };
    let chunk = compress(&data, &params).unwrap();
    let f = fields(&chunk);
    // One tile (version 5): archive mode in bit 2 of byte 7, no requested ids recorded;
    // single words are the elements, so the spatial neighbour is one word back within
    // runs of the last axis's 64 words.
    assert_eq!(chunk[7], 2 | 4, "4-byte words, archive mode");
    assert_eq!(f.common, [5, 1, 0, 0, 0, 0, 4, 2, 0, 0]);
    assert_eq!(f.lag, 64);
    assert_eq!(f.spatial, [1, 64]);
    assert_eq!(f.shape, [16, 64]);
    assert_eq!(chunk.len(), f.len + f.tile_sizes[0] as usize);
    // Whatever the tile chose, its header names a valid predictor, map and coder.
    let (p, mc) = (chunk[f.len], chunk[f.len + 1]);
    assert!(Predictor::from_id(u32::from(p & 0x7f)).is_some(), "{p}");
    assert!(ResidualMap::from_id(u32::from(mc >> 4)).is_some(), "{mc}");
    assert!(Coder::from_id(u32::from(mc & 15)).is_some(), "{mc}");
}

#[test]
fn incompressible_data_is_stored_after_a_brief_header() {
    // xorshift64* bytes: no predictor or coder finds structure in them.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<u8> = (0..4096)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect();
    let params = Params {
        element: ElementKind::Other,
        threads: 1,
        ..Params::new(1, &[4096])
    };
    let chunk = compress(&data, &params).unwrap();
    // A brief chunk (version 4): no element type recorded, the stored pipeline of 1-byte
    // words, rank 1, the shape 4096 as a varint, then the checksum.
    assert_eq!(&chunk[..10], b"KARO\x04\x00\x00\x01\x80\x20");
    let mut sealed = XxHash3_64::oneshot(&chunk[..10]).to_le_bytes().to_vec();
    sealed.extend_from_slice(&XxHash3_64::oneshot(&data).to_le_bytes());
    assert_eq!(
        chunk[10..14],
        (XxHash3_64::oneshot(&sealed) as u32).to_le_bytes(),
        "the low 32 bits of the seal of the header and the data"
    );
    assert_eq!(&chunk[14..], &data[..], "stored verbatim");
}

#[test]
fn the_encoder_tiles_by_the_documented_rule() {
    // (shape, mode, expected planes / rows / columns per tile, tile count).
    let cases: [(&[usize], Mode, [u64; 3], usize); 6] = [
        // A plane of at most 2^17 words: whole planes per tile (one tile).
        (&[4, 3, 2], Mode::Fast, [(1 << 17) / 24, 4, 6], 1),
        // Rows of 1000 words (64 of them fit 2^17): tiles of 131 whole rows.
        (&[1000, 1000], Mode::Fast, [1, 131, 1000], 8),
        // Rows of 40000 words: 8 rows by 16384 columns, three column blocks...
        (&[8, 40_000], Mode::Archive, [1, 8, 16_384], 3),
        // ... in fast mode a quarter of the chunk, 80000 words: 8 rows by 10000 columns.
        (&[8, 40_000], Mode::Fast, [1, 8, 10_000], 4),
        // Two time steps of 2^16 words: four tiles of 2^15 words in fast mode (2 rows by
        // 16384 columns), two tiles of half the chunk in archive mode.
        (&[2, 1 << 16], Mode::Fast, [1, 2, 1 << 14], 4),
        (&[2, 1 << 16], Mode::Archive, [1, 2, 1 << 15], 2),
    ];
    for (shape, mode, tiling, tiles) in cases {
        let data = ramp(shape);
        let params = Params {
            threads: 1,
            mode,
            ..Params::new(4, shape)
        };
        let chunk = compress(&data, &params).unwrap();
        let f = fields(&chunk);
        // One tile: version 5, which records no tiling; several: version 3.
        let (version, tiling) = if tiles == 1 { (5, [0; 3]) } else { (3, tiling) };
        assert_eq!(f.common[0], version, "{shape:?}: format version");
        assert_eq!(f.tiling, tiling, "{shape:?}: tile dimensions");
        let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        assert_eq!(f.shape, dims);
        assert_eq!(f.tile_sizes.len(), tiles, "{shape:?}: tile count");
        let payload: usize = f.tile_sizes.iter().map(|&s| s as usize).sum();
        assert_eq!(
            chunk.len(),
            f.len + payload,
            "tile sizes add up to the payload"
        );
    }
}

/// Complex64 words of a chunk of `times` time steps, 64 channels and 4 polarisation
/// products whose magnitudes differ a thousandfold (parallel hands near 1e4, cross-hands
/// near 10), each smooth along frequency with a fixed ripple, drifting slowly along time.
fn polarisations(times: usize) -> Vec<u8> {
    let scale = [1e4f32, -10.0, 10.0, 7e3];
    let mut out = Vec::new();
    for t in 0..times {
        for ch in 0..64 {
            for (p, s) in scale.iter().enumerate() {
                for c in 0..2 {
                    let smooth = 1.0 + 0.3 * (ch as f32 * 0.2 + (p + c) as f32).sin();
                    let hash = ((ch * 131 + p * 17 + c) as u32).wrapping_mul(2_654_435_761);
                    let ripple = (hash >> 8) as f32 / (1 << 24) as f32 * 1e-3;
                    let drift = t as f32 * 1e-5;
                    out.extend_from_slice(&(s * (smooth + ripple + drift)).to_le_bytes());
                }
            }
        }
    }
    out
}

#[test]
fn few_time_steps_take_the_neighbouring_channel_as_spatial_neighbour() {
    // Along the innermost element axis (polarisation) a word's neighbour is a thousand
    // times larger or smaller; the neighbouring channel of the same product is close.
    // With 4 rows, the first row (predicted from the neighbour) weighs a quarter.
    let shape = [4usize, 64, 4, 2];
    let data = polarisations(4);
    for mode in [Mode::Fast, Mode::Archive] {
        let params = Params {
            mode,
            components: 2,
            threads: 1,
            ..Params::new(4, &shape)
        };
        let chunk = compress(&data, &params).unwrap();
        let f = fields(&chunk);
        assert_eq!(
            f.spatial,
            [8, 512],
            "{mode:?}: a channel (4 x 2 words) back, runs of 64 channels"
        );
        assert_eq!(karoo::decompress(&chunk).unwrap(), data, "{mode:?}");
    }
    // Elements of one product only: the innermost axis is the channels' already.
    let one = [4usize, 64, 1, 2];
    let data: Vec<u8> = polarisations(4)
        .chunks(8)
        .step_by(4)
        .flatten()
        .copied()
        .collect();
    let chunk = compress(
        &data,
        &Params {
            components: 2,
            threads: 1,
            ..Params::new(4, &one)
        },
    )
    .unwrap();
    assert_eq!(fields(&chunk).spatial, [2, 128]);
    assert_eq!(karoo::decompress(&chunk).unwrap(), data);
}
