//! Corrupt, truncated and forged chunks are refused with a clear error, never decoded
//! to wrong data; the checksums are the ones chunks already written store.

mod common;

use common::smooth_f32;
use karoo::{compress, decompress, decompress_with, Error, Params};

#[test]
fn corrupt_input_is_rejected_not_misdecoded() {
    let data = smooth_f32(&[64, 512], 9);
    let packed = compress(&data, &Params::new(4, &[64, 512])).unwrap();
    assert_eq!(
        decompress(b"KAR").unwrap_err(),
        Error::Truncated("3 bytes, no header".into())
    );
    assert_eq!(decompress(b"NOPE and more").unwrap_err(), Error::BadMagic);
    let mut wrong_version = packed.clone();
    wrong_version[4] = 9;
    assert_eq!(
        decompress(&wrong_version).unwrap_err().to_string(),
        "karoo: unsupported chunk format version 9.0 (this build reads 1.0, 2.0, 3.0, 4.2, 5.0; \
         written by a later karoo?)"
    );
    // Every single-bit flip and every truncation is an error, never wrong data or a panic.
    for bit in (0..packed.len() * 8).step_by(13) {
        let mut bad = packed.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        assert!(
            decompress(&bad).is_err(),
            "flip of bit {bit} went unnoticed"
        );
    }
    for len in (0..packed.len()).step_by(7) {
        assert!(decompress(&packed[..len]).is_err(), "truncation to {len}");
    }
    let mut extended = packed.clone();
    extended.push(0);
    assert!(decompress(&extended).is_err());
    assert_eq!(
        decompress_with(&packed, 1000, 1).unwrap_err().to_string(),
        format!(
            "karoo: chunk declares {} decoded bytes, more than the 1000 expected",
            data.len()
        )
    );
}

/// Two tiles swapped, with a header rewritten to match (so its own checksum passes):
/// only the checksum of the decoded data can notice, and it must.
#[test]
fn swapped_tiles_with_a_consistent_header_are_rejected() {
    use karoo::internals::Header;
    let data = smooth_f32(&[8, 65536], 13);
    let packed = compress(&data, &Params::new(4, &[8, 65536])).unwrap();
    let (mut header, len) = Header::parse(&packed, u64::MAX).unwrap();
    assert!(
        header.tile_sizes.len() >= 2,
        "the chunk must have several tiles"
    );
    let (a, b) = (header.tile_sizes[0] as usize, header.tile_sizes[1] as usize);
    let body = &packed[len..];
    let mut swapped = Vec::new();
    header.tile_sizes.swap(0, 1);
    header.write(&mut swapped);
    swapped.extend_from_slice(&body[a..a + b]);
    swapped.extend_from_slice(&body[..a]);
    swapped.extend_from_slice(&body[a + b..]);
    let err = decompress(&swapped).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ChecksumMismatch { .. } | Error::CorruptBlock { .. }
        ),
        "{err}"
    );
    // The untouched chunk still decodes.
    assert_eq!(decompress(&packed).unwrap(), data);
}

/// A header whose tiles hold more than the format's 2^17 words is refused before
/// anything is allocated: the limit bounds what an entropy-coded chunk (no per-word
/// floor) can make the decoder allocate.
#[test]
fn tiles_larger_than_the_format_limit_are_refused() {
    use karoo::internals::Header;
    use karoo::Mode;
    let data = smooth_f32(&[8, 65536], 3);
    let params = Params {
        mode: Mode::Archive,
        ..Params::new(4, &[8, 65536])
    };
    let packed = compress(&data, &params).unwrap();
    let (mut header, len) = Header::parse(&packed, u64::MAX).unwrap();
    let tiles = header.tile_sizes.len();
    assert!(
        tiles >= 4 && tiles % 2 == 0,
        "the chunk must have pairs of tiles"
    );
    let sizes = header.tile_sizes.clone();
    // Version 3: two tiles, each claiming half the chunk, with the payloads behind them.
    header.tiling.tile_cols *= tiles / 2;
    let half = tiles / 2;
    header.tile_sizes = vec![sizes[..half].iter().sum(), sizes[half..].iter().sum()];
    let mut forged = Vec::new();
    header.write(&mut forged);
    forged.extend_from_slice(&packed[len..]);
    assert_eq!(forged[4], 3, "version 3");
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        format!(
            "karoo: corrupt chunk: tile dimensions 1x8x{} hold more than 131072 words",
            16384 * half
        )
    );
    // Version 5: one tile of the whole chunk, with every payload behind it.
    header.tile_sizes = vec![sizes.iter().sum()];
    let mut forged = Vec::new();
    header.write(&mut forged);
    forged.extend_from_slice(&packed[len..]);
    assert_eq!(forged[4], 5, "version 5");
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        "karoo: corrupt chunk: a one-tile chunk of 524288 words (1 to 131072)"
    );
}

/// Deterministic bytes for the known answers below.
fn pattern(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect()
}

#[test]
fn digests_are_xxh3_64_as_chunks_already_written_store_them() {
    use karoo::internals::{data_checksum, digest_rows};
    // Known answers of XXH3-64 (seed 0) from xxhash-rust, which wrote the chunks of
    // earlier versions: every input-length branch (empty, 1-16, 17-128, 129-240, above
    // 240, long with whole stripes) and a digest built row by row.
    let known: [(usize, u64); 7] = [
        (0, 0x2d06_8005_38d3_94c2),
        (5, 0xaec5_73e0_64c1_8474),
        (100, 0x0045_b15f_9bb2_d435),
        (240, 0x8aa7_f1fc_572d_11d6),
        (241, 0xddb1_2824_1a3b_606b),
        (1000, 0x5b57_5629_3157_81b8),
        (1 << 20, 0x8f85_eea5_1538_8aa3),
    ];
    for (n, digest) in known {
        assert_eq!(data_checksum(&pattern(n)), digest, "{n} bytes");
    }
    let data = pattern(1 << 20);
    assert_eq!(digest_rows(data.chunks(4103)), 0x8f85_eea5_1538_8aa3);
}

/// The narrowed flag (float64 coded as float32) on a chunk of other than 8-byte words is
/// a corrupt header, even with a header checksum that matches.
#[test]
fn narrowed_flag_on_other_word_sizes_is_refused() {
    use karoo::internals::Header;
    let data = smooth_f32(&[16, 64], 5);
    let packed = compress(&data, &Params::new(4, &[16, 64])).unwrap();
    let (mut header, len) = Header::parse(&packed, u64::MAX).unwrap();
    header.flags |= 4;
    let mut forged = Vec::new();
    header.write(&mut forged);
    forged.extend_from_slice(&packed[len..]);
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        "karoo: corrupt chunk: float64 narrowed to float32 in a chunk of 4-byte words"
    );
}

/// A chunk of the golden set (version 3 stored chunks, which encoders no longer write:
/// brief chunks are smaller).
fn golden_chunk(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/chunks")
        .join(format!("{name}.karoo"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The planar flag (components coded as planes) on a stored chunk is a corrupt header,
/// even with a header checksum that matches.
#[test]
fn planar_flag_on_stored_chunks_is_refused() {
    use karoo::internals::Header;
    let stored = golden_chunk("v3_noise_stored_fast");
    let (header, len) = Header::parse(&stored, u64::MAX).unwrap();
    assert_eq!(header.flags, 1, "noise is stored");
    let mut forged = Vec::new();
    Header {
        flags: 1 | 16,
        ..header
    }
    .write(&mut forged);
    forged.extend_from_slice(&stored[len..]);
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        "karoo: corrupt chunk: planar components in a stored chunk"
    );
}

/// A tiled planar chunk of no words whose shape declares 0 components decodes to
/// nothing, without dividing by its component count.
#[test]
fn a_planar_chunk_of_no_words_decodes_to_nothing() {
    use karoo::internals::{data_checksum, Header};
    let empty = golden_chunk("v3_empty");
    let (header, len) = Header::parse(&empty, u64::MAX).unwrap();
    assert_eq!((header.flags, len), (1, empty.len()), "stored, no payload");
    let mut forged = Vec::new();
    Header {
        flags: 16,
        checksum: data_checksum(&[]),
        shape: vec![0, 2],
        ..header
    }
    .write(&mut forged);
    assert_eq!(decompress(&forged).unwrap(), Vec::<u8>::new());
}

/// The shift count of a shifted chunk must leave the sign and one bit, and byte 13 must
/// be zero in chunks that are not shifted.
#[test]
fn shift_counts_outside_the_word_are_refused() {
    // One tile (version 5, whose shift byte is there only with the flag) and two
    // (version 3).
    for (shape, version) in [([16, 64], 5), ([1024, 64], 3)] {
        let data = smooth_f32(&shape, 6);
        let packed = compress(&data, &Params::new(4, &shape)).unwrap();
        assert_eq!(packed[4], version);
        shift_counts_are_refused(&packed);
    }
}

/// Checks that `packed` with its shift field forged out of range is refused.
fn shift_counts_are_refused(packed: &[u8]) {
    use karoo::internals::Header;
    let (header, len) = Header::parse(packed, u64::MAX).unwrap();
    let cases = [
        (
            8,
            31,
            "31 low bits shifted out of a tiled chunk of 32-bit words",
        ),
        (
            8,
            0,
            "0 low bits shifted out of a tiled chunk of 32-bit words",
        ),
        (0, 3, "reserved bytes are not zero"),
    ];
    let cases = if packed[4] == 5 {
        &cases[..2]
    } else {
        &cases[..]
    };
    for &(flags, shift, message) in cases {
        let mut forged = Vec::new();
        Header {
            flags: header.flags | flags,
            shift,
            ..header.clone()
        }
        .write(&mut forged);
        forged.extend_from_slice(&packed[len..]);
        assert_eq!(
            decompress(&forged).unwrap_err().to_string(),
            format!("karoo: corrupt chunk: {message}")
        );
    }
}

/// Version-2 headers: a varint that is not minimal, or longer than 64 bits, is a corrupt
/// header even under a matching header checksum.
#[test]
fn malformed_varints_are_refused() {
    use karoo::internals::Header;
    use twox_hash::XxHash3_64;
    // Two tiles: version 3.
    let data = smooth_f32(&[1024, 64], 7);
    let packed = compress(&data, &Params::new(4, &[1024, 64])).unwrap();
    let (_, len) = Header::parse(&packed, u64::MAX).unwrap();
    assert_eq!(packed[4], 3, "version 3");
    assert_eq!(packed[15], 64, "the lag, one varint byte");
    let resealed = |lag: &[u8]| {
        let mut forged = packed[..15].to_vec();
        forged.extend_from_slice(lag);
        forged.extend_from_slice(&packed[16..len - 4]);
        let sum = XxHash3_64::oneshot(&forged) as u32;
        forged.extend_from_slice(&sum.to_le_bytes());
        forged.extend_from_slice(&packed[len..]);
        forged
    };
    assert_eq!(
        decompress(&resealed(&[64])).unwrap(),
        data,
        "the reseal itself"
    );
    for (lag, message) in [
        (&[0xc0, 0x00][..], "varint not minimal"),
        (&[0xc0, 0x80, 0x80, 0x00][..], "varint not minimal"),
        (&[0xff; 10][..], "varint exceeds 64 bits"),
        (
            &[0xc0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02][..],
            "varint exceeds 64 bits",
        ),
    ] {
        assert_eq!(
            decompress(&resealed(lag)).unwrap_err().to_string(),
            format!("karoo: corrupt chunk: {message}"),
            "{lag:02x?}"
        );
    }
}

/// `chunk` (whose header is `len` bytes) with its header written anew from `header` but
/// its data checksum field kept (version 3: and the 32-bit header checksum recomputed;
/// version 5: its one checksum kept): what a forger, or a tool that rewrites headers,
/// makes of it.
fn relaid(chunk: &[u8], len: usize, header: &karoo::internals::Header) -> Vec<u8> {
    use twox_hash::XxHash3_64;
    let mut out = Vec::new();
    header.write(&mut out);
    let n = out.len();
    if out[4] == 5 {
        out[n - 4..].copy_from_slice(&chunk[len - 4..len]);
    } else {
        out[n - 12..n - 4].copy_from_slice(&chunk[len - 12..len - 4]);
        let sum = XxHash3_64::oneshot(&out[..n - 4]) as u32;
        out[n - 4..].copy_from_slice(&sum.to_le_bytes());
    }
    out.extend_from_slice(&chunk[len..]);
    out
}

/// The layout fields a decoder uses are covered by the data checksum (format versions 3
/// and 5): a header with the planar flag, the shift, the lag or the order of the shape
/// changed, its header checksum recomputed, decodes to an error, not to other data.
#[test]
fn layout_fields_changed_under_a_valid_header_checksum_are_refused() {
    // One tile (version 5) and several (version 3).
    for (times, version) in [(16, 5), (1024, 3)] {
        layout_fields_changed_are_refused(times, version);
    }
}

/// The checks of [`layout_fields_changed_under_a_valid_header_checksum_are_refused`] on
/// a chunk of `times` time steps of 8 x 8 complex words, written as `version`.
fn layout_fields_changed_are_refused(times: usize, version: u8) {
    use karoo::internals::Header;
    let shape = [times, 8, 8, 2];
    let data = smooth_f32(&shape, 11);
    let params = Params {
        components: 2,
        ..Params::new(4, &shape)
    };
    let packed = compress(&data, &params).unwrap();
    let (header, len) = Header::parse(&packed, u64::MAX).unwrap();
    assert_eq!(
        (header.version, header.flags),
        (version, 0),
        "a plain tiled chunk"
    );
    assert_eq!(decompress(&relaid(&packed, len, &header)).unwrap(), data);
    let planar = Header {
        flags: 16,
        shape: vec![2, times as u64, 8, 8],
        time_axis: 1,
        ..header.clone()
    };
    let shifted = Header {
        flags: 8,
        shift: 3,
        ..header.clone()
    };
    let transposed = Header {
        shape: vec![times as u64, 8, 8, 2].into_iter().rev().collect(),
        ..header.clone()
    };
    let inner_swapped = Header {
        shape: vec![times as u64, 8, 2, 8],
        ..header.clone()
    };
    let lag = Header {
        lag: header.lag / 2,
        ..header.clone()
    };
    for (what, forged) in [
        ("planar", planar),
        ("shifted", shifted),
        ("transposed", transposed),
        ("inner axes swapped", inner_swapped),
        ("lag", lag),
    ] {
        let err = decompress(&relaid(&packed, len, &forged)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::ChecksumMismatch { .. }
                    | Error::CorruptHeader(_)
                    | Error::CorruptBlock { .. }
            ),
            "{what}: {err}"
        );
    }
    // The same words under another shape of the same plane decode to the same bytes: only
    // the seal tells the shapes apart.
    let err = decompress(&relaid(
        &packed,
        len,
        &Header {
            shape: vec![times as u64, 8, 2, 8],
            ..header.clone()
        },
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("karoo: corrupt chunk: checksum mismatch (stored 0x"),
        "{err}"
    );
}

/// A chunk records the element type it was given, and refuses one that does not fit its
/// words.
#[test]
fn the_element_type_is_recorded_and_checked() {
    use karoo::internals::Header;
    use karoo::{ElementType, TypeKind};
    let shape = [4, 8, 2];
    let data = smooth_f32(&shape, 5);
    let complex = ElementType::of(TypeKind::Complex);
    let params = Params {
        components: 2,
        element_type: complex,
        ..Params::new(4, &shape)
    };
    let packed = compress(&data, &params).unwrap();
    let (header, len) = Header::parse(&packed, u64::MAX).unwrap();
    // One tile (version 5): the element type is byte 6.
    assert_eq!((packed[4], packed[6], header.element), (5, 5, complex));
    assert_eq!(
        karoo::Chunk::parse(&packed, u64::MAX)
            .unwrap()
            .element_type(),
        complex
    );
    let as_floats = Params {
        components: 1,
        ..params.clone()
    };
    assert_eq!(
        compress(&data, &as_floats).unwrap_err().to_string(),
        "karoo: invalid parameters: element type Complex does not fit 1 word(s) of 4 bytes per element"
    );
    let mut forged = Vec::new();
    Header {
        element: ElementType::of(TypeKind::Bool),
        ..header
    }
    .write(&mut forged);
    forged.extend_from_slice(&packed[len..]);
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        "karoo: corrupt chunk: element type Bool does not fit 1 word(s) of 4 bytes per element"
    );
    let mut unknown = packed.clone();
    unknown[6] = 0x25;
    assert_eq!(
        decompress(&unknown).unwrap_err().to_string(),
        "karoo: corrupt chunk: unknown element type 0x25"
    );
}

/// Brief chunks (format version 4) of every compressor: every single-bit flip is an
/// error or decodes to the very same bytes (a flipped LZ4 match offset may point at an
/// equal earlier run), never wrong data or a panic; every flip in the header and every
/// truncation is an error.
#[test]
fn corrupt_brief_chunks_are_rejected() {
    use karoo::internals::{brief_chunk, Compressor, Pipeline, Transform};
    use karoo::ElementType;
    let data = smooth_f32(&[8, 96], 5);
    for compressor in Compressor::ALL {
        let transform = match compressor {
            Compressor::None => Transform::None,
            _ => Transform::Words,
        };
        let pipeline = Pipeline {
            transform,
            compressor,
        };
        let chunk = brief_chunk(&data, 4, &[8, 96], ElementType::default(), pipeline, None)
            .expect("a brief chunk");
        assert_eq!(chunk[4] & 15, 4, "{compressor:?}: version 4");
        assert_eq!(decompress(&chunk).unwrap(), data, "{compressor:?}");
        let header_len = 8 + 3 + 4;
        let mut caught = 0;
        for bit in 0..chunk.len() * 8 {
            let mut bad = chunk.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            match decompress(&bad) {
                Err(_) => caught += 1,
                Ok(decoded) => {
                    assert!(bit >= 8 * header_len, "{compressor:?}: header bit {bit}");
                    assert_eq!(decoded, data, "{compressor:?}: flip of bit {bit}");
                }
            }
        }
        assert!(
            caught * 100 > chunk.len() * 8 * 99,
            "{compressor:?}: {caught} caught"
        );
        for len in 0..chunk.len() {
            assert!(
                decompress(&chunk[..len]).is_err(),
                "{compressor:?}: truncation to {len}"
            );
        }
        let mut extended = chunk.clone();
        extended.push(0);
        assert!(
            decompress(&extended).is_err(),
            "{compressor:?}: a byte more"
        );
        assert_eq!(
            decompress_with(&chunk, 1000, 1).unwrap_err().to_string(),
            "karoo: chunk declares 3072 decoded bytes, more than the 1000 expected"
        );
    }
}

/// A format version this build does not read is refused as unsupported, naming it (a
/// later minor version of a major version it reads too); a value this build does not
/// know in a chunk of a version it reads is corrupt, since a version promises every value
/// it may hold.
#[test]
fn a_later_version_is_unsupported_and_an_unknown_value_in_a_known_one_corrupt() {
    use karoo::internals::{brief_chunk, Compressor, Header, Pipeline, Transform};
    use karoo::ElementType;
    let data = smooth_f32(&[64, 512], 9);
    let packed = compress(&data, &Params::new(4, &[64, 512])).unwrap();
    assert_eq!(packed[4], 0x05, "version 5.0: one tile");
    for (byte, version) in [
        (0x13, "3.1"),
        (0x34, "4.3"),
        (0x15, "5.1"),
        (0x06, "6.0"),
        (0x00, "0.0"),
        (0xf2, "2.15"),
    ] {
        let mut later = packed.clone();
        later[4] = byte;
        let err = decompress(&later).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "karoo: unsupported chunk format version {version} (this build reads 1.0, 2.0, \
                 3.0, 4.2, 5.0; written by a later karoo?)"
            )
        );
        assert!(matches!(err, Error::UnsupportedVersion { .. }));
    }
    let (header, len) = Header::parse(&packed, u64::MAX).unwrap();
    let mut forged = Vec::new();
    Header {
        flags: header.flags | 0x20,
        ..header.clone()
    }
    .write(&mut forged);
    forged.extend_from_slice(&packed[len..]);
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        format!(
            "karoo: corrupt chunk: unknown flags {:#04x}",
            header.flags | 0x20
        )
    );
    let mut tile = packed.clone();
    tile[len + 1] = tile[len + 1] & 0xf0 | 15;
    assert_eq!(
        decompress(&tile).unwrap_err().to_string(),
        "karoo: corrupt chunk: block 0: unknown residual coder 15"
    );
    let mut map = packed.clone();
    map[len + 1] = map[len + 1] & 0x0f | 9 << 4;
    assert_eq!(
        decompress(&map).unwrap_err().to_string(),
        "karoo: corrupt chunk: block 0: unknown residual map 9"
    );
    // Brief chunks: version 4.0 with a shape, 4.1 with the unshaped bit.
    let stored = Pipeline {
        transform: Transform::None,
        compressor: Compressor::None,
    };
    let brief = brief_chunk(&data, 4, &[64, 512], ElementType::default(), stored, None).unwrap();
    assert_eq!(brief[4], 0x04, "version 4.0");
    let unshaped = brief_chunk(
        &data,
        4,
        &[1, 2, 1, 16384, 1],
        ElementType::default(),
        stored,
        None,
    )
    .unwrap();
    assert_eq!(
        (unshaped[4], unshaped[6] & 8),
        (0x14, 8),
        "version 4.1, the unshaped bit"
    );
    assert_eq!(decompress(&unshaped).unwrap(), data);
    let mut forged = brief.clone();
    forged[6] = forged[6] & !7 | 7;
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        "karoo: corrupt chunk: unknown whole-chunk compressor 7"
    );
    // Compressor 6 (byte delta + Zstandard) is written as version 4.2, and is corrupt in
    // a chunk of an earlier minor version, which could not hold it.
    let delta = Pipeline {
        transform: Transform::Words,
        compressor: Compressor::ByteDeltaZstd,
    };
    let brief_delta =
        brief_chunk(&data, 4, &[64, 512], ElementType::default(), delta, None).unwrap();
    assert_eq!(brief_delta[4], 0x24, "version 4.2");
    assert_eq!(decompress(&brief_delta).unwrap(), data);
    for (byte, version) in [(0x04, "4.0"), (0x14, "4.1")] {
        let mut forged = brief_delta.clone();
        forged[4] = byte;
        assert_eq!(
            decompress(&forged).unwrap_err().to_string(),
            format!(
                "karoo: corrupt chunk: shuffled-words/bytedelta-zstd in a version {version} \
                 chunk (added in version 4.2)"
            )
        );
    }
    // A known compressor with a transform it does not take is corrupt.
    let mut forged = brief.clone();
    forged[6] = forged[6] & 0xc8 | 0x35;
    assert!(
        matches!(decompress(&forged).unwrap_err(), Error::CorruptHeader(_)),
        "Bitshuffle after a bit shuffle"
    );
}
