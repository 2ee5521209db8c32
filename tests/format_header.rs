//! The chunk header, byte for byte, at the offsets docs/format.md documents: a third
//! party's decoder is written from that document, so the bytes must match it exactly.

use karoo::{compress, Coder, ElementKind, Mode, Params, Predictor, ResidualMap};
use twox_hash::XxHash3_64;

/// Little-endian fields at fixed offsets of a chunk.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&self, at: usize) -> u8 {
        self.0[at]
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.0[at..at + 4].try_into().unwrap())
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.0[at..at + 8].try_into().unwrap())
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

/// Checks the fixed part of a header (offsets 0 to 83) against the expected values.
#[allow(clippy::too_many_arguments)]
fn check_fixed(
    chunk: &[u8],
    mode_predictor_map_coder: [u8; 4],
    flags: u8,
    word_size: u8,
    rank: u8,
    time_axis: u8,
    decoded_size: u64,
    lag: u64,
    tiling: [u64; 3],
    spatial: [u64; 2],
) {
    let b = Bytes(chunk);
    let [mode, predictor, map, coder] = mode_predictor_map_coder;
    assert_eq!(&chunk[0..4], b"KARO", "magic");
    assert_eq!(b.u8(4), 1, "format version");
    assert_eq!(b.u8(5), mode, "mode");
    assert_eq!(b.u8(6), flags, "flags");
    assert_eq!(b.u8(7), predictor, "requested predictor");
    assert_eq!(b.u8(8), map, "requested residual map");
    assert_eq!(b.u8(9), coder, "requested coder");
    assert_eq!(b.u8(10), word_size, "word size");
    assert_eq!(b.u8(11), rank, "rank");
    assert_eq!(b.u8(12), time_axis, "time axis");
    assert_eq!(&chunk[13..16], &[0, 0, 0], "reserved");
    assert_eq!(b.u64(16), decoded_size, "decoded size");
    assert_eq!(b.u64(24), lag, "lag");
    assert_eq!(b.u64(32), tiling[0], "planes per tile");
    assert_eq!(b.u64(40), tiling[1], "rows per tile");
    assert_eq!(b.u64(48), tiling[2], "columns per tile");
    assert_eq!(b.u64(56), spatial[0], "Lorenzo stride");
    assert_eq!(b.u64(64), spatial[1], "Lorenzo run");
}

/// Checks the variable part after offset 80 (tile count, shape, tile sizes, header
/// checksum); returns the tile sizes and where the payloads start.
fn check_tables(chunk: &[u8], shape: &[u64], tiles: usize) -> (Vec<u32>, usize) {
    let b = Bytes(chunk);
    assert_eq!(b.u32(80), tiles as u32, "tile count");
    for (i, &d) in shape.iter().enumerate() {
        assert_eq!(b.u64(84 + 8 * i), d, "shape[{i}]");
    }
    let table = 84 + 8 * shape.len();
    let sizes: Vec<u32> = (0..tiles).map(|i| b.u32(table + 4 * i)).collect();
    let end = table + 4 * tiles;
    let sum = XxHash3_64::oneshot(&chunk[..end]) as u32;
    assert_eq!(b.u32(end), sum, "header checksum: low 32 bits of XXH3-64");
    let payloads = end + 4;
    // A stored chunk (no tiles) holds the data instead, checked by its test.
    let total: usize = sizes.iter().map(|&s| s as usize).sum();
    if tiles > 0 {
        assert_eq!(
            chunk.len(),
            payloads + total,
            "tile sizes add up to the payload"
        );
    }
    (sizes, payloads)
}

#[test]
fn a_small_complex_chunk_has_the_documented_header() {
    // 4 time steps x 3 elements x 2 components (complex64 as float32 pairs).
    let shape = [4usize, 3, 2];
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
    // Whole planes per tile: 2^17 / 24 words; one row per time step of 3 x 2 words;
    // Lorenzo's neighbour is one element (2 words) back within runs of 3 elements.
    check_fixed(
        &chunk,
        [0, 1, 3, 7],
        0,
        4,
        3,
        0,
        96,
        6,
        [(1 << 17) / 24, 4, 6],
        [2, 6],
    );
    let (sizes, payloads) = check_tables(&chunk, &[4, 3, 2], 1);
    assert_eq!(
        payloads,
        84 + 8 * 3 + 4 + 4,
        "header length 88 + 8 per dimension"
    );
    // One tile covering the chunk: its digest is XXH3-64 of the whole chunk's bytes,
    // the checksum XXH3-64 of that digest's 8 little-endian bytes.
    let digest = XxHash3_64::oneshot(&data);
    let checksum = XxHash3_64::oneshot(&digest.to_le_bytes());
    assert_eq!(
        Bytes(&chunk).u64(72),
        checksum,
        "checksum of the decoded bytes"
    );
    // The tile header: predictor 1 (no spatial head), then map 3 << 4 | coder 7.
    assert!(sizes[0] >= 2);
    assert_eq!(&chunk[payloads..payloads + 2], &[1, 3 << 4 | 7]);
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
    // Auto predictor and map are recorded as 0, the coder as context rANS (4); single
    // words are the elements, so the spatial neighbour is one word back within runs of
    // the last axis's 64 words.
    check_fixed(
        &chunk,
        [1, 0, 0, 4],
        0,
        4,
        2,
        0,
        16 * 64 * 4,
        64,
        [(1 << 17) / 1024, 16, 64],
        [1, 64],
    );
    let (_, payloads) = check_tables(&chunk, &[16, 64], 1);
    // Whatever the tile chose, its header names a valid predictor, map and coder.
    let (p, mc) = (chunk[payloads], chunk[payloads + 1]);
    assert!(Predictor::from_id(u32::from(p & 0x7f)).is_some(), "{p}");
    assert!(ResidualMap::from_id(u32::from(mc >> 4)).is_some(), "{mc}");
    assert!(Coder::from_id(u32::from(mc & 15)).is_some(), "{mc}");
}

#[test]
fn incompressible_data_is_stored_after_a_header_without_tiles() {
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
    check_fixed(
        &chunk,
        [0, 0, 0, 7],
        1,
        1,
        1,
        0,
        4096,
        1,
        [(1 << 17) / 4096, 4096, 1],
        [0, 0],
    );
    assert_eq!(
        Bytes(&chunk).u64(72),
        XxHash3_64::oneshot(&data),
        "a stored chunk's checksum is XXH3-64 of its bytes"
    );
    let (_, payloads) = check_tables(&chunk, &[4096], 0);
    assert_eq!(&chunk[payloads..], &data[..], "stored verbatim");
}

#[test]
fn the_encoder_tiles_by_the_documented_rule() {
    // (shape, expected planes / rows / columns per tile, tile count).
    let cases: [(&[usize], [u64; 3], usize); 3] = [
        // A plane of at most 2^17 words: whole planes per tile.
        (&[4, 3, 2], [(1 << 17) / 24, 4, 6], 1),
        // Rows of 1000 words (64 of them fit 2^17): tiles of 131 whole rows.
        (&[1000, 1000], [1, 131, 1000], 8),
        // Rows of 40000 words: 8 rows by 16384 columns, three column blocks.
        (&[8, 40_000], [1, 8, 16_384], 3),
    ];
    for (shape, tiling, tiles) in cases {
        let data = ramp(shape);
        let params = Params {
            threads: 1,
            ..Params::new(4, shape)
        };
        let chunk = compress(&data, &params).unwrap();
        let b = Bytes(&chunk);
        assert_eq!(
            [b.u64(32), b.u64(40), b.u64(48)],
            tiling,
            "{shape:?}: tile dimensions"
        );
        let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        check_tables(&chunk, &dims, tiles);
    }
}
