//! Compatibility: every chunk format ever written keeps decoding, byte for byte.
//!
//! `tests/golden/chunks/` holds chunks written by released encoders (one `.karoo` file
//! each) beside the bytes they decode to (`.raw`), and `manifest.txt` names them with the
//! format path each one pins: the codings its tiles record (`predictor.map.coder`, the
//! predictor id with 128 added for a spatially predicted first row; coder 11's band
//! count and token kind after a slash), its tile count,
//! tile dimensions and flags, read from the chunk's own header. The test decodes every
//! fixture, compares the bytes, and re-reads the header fields and tile codings from the
//! file, so a fixture cannot silently stop covering the path it was made for.
//!
//! The fixtures are written once and never rewritten: `write_missing_golden_chunks`
//! (ignored; run it by hand) adds the fixtures of new cases and refuses to touch existing
//! files. To see whether the encoder still writes today's bytes (not a promise, a check
//! for refactors), point it at an empty directory and compare:
//! `KAROO_GOLDEN_OUT=/tmp/golden cargo test --release --test compatibility -- --ignored`
//! then `diff -r /tmp/golden tests/golden/chunks`.

mod common;

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use common::{varint, widened};
use karoo::internals::{brief_chunk, Compressor, Pipeline, Transform};
use karoo::{
    compress, decompress, Coder, ElementKind, ElementType, Mode, Params, Predictor, ResidualMap,
    TypeKind,
};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/chunks")
}

/// The fields of a chunk header this test pins, read at the offsets docs/format.md gives.
#[derive(Debug, PartialEq, Eq)]
struct Pinned {
    /// The version byte: the major version in bits 0-3, the minor in bits 4-7.
    version: u8,
    mode: u8,
    flags: u8,
    word_size: u8,
    rank: u8,
    time_axis: u8,
    shift: u8,
    /// The element type byte (version 3), else 0.
    element: u8,
    tiling: [u64; 3],
    shape: Vec<u64>,
    codings: Vec<String>,
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Reads the pinned fields of a brief chunk (format version 4): its pipeline byte in
/// `mode`'s place (with the unshaped bit), its shape (empty when it records the decoded
/// size instead: rank 0, or no rank byte with the unshaped bit).
fn pinned_brief(chunk: &[u8]) -> Pinned {
    let unshaped = chunk[6] & 8 != 0;
    let rank = if unshaped { 0 } else { chunk[7] };
    let mut at = if unshaped { 7 } else { 8 };
    let shape: Vec<u64> = (0..rank).map(|_| varint(chunk, &mut at)).collect();
    if rank == 0 {
        varint(chunk, &mut at);
    }
    Pinned {
        version: chunk[4],
        mode: chunk[6],
        flags: 0,
        word_size: 1 << (chunk[6] >> 6),
        rank,
        time_axis: 0,
        shift: 0,
        element: chunk[5],
        tiling: [0; 3],
        shape,
        codings: Vec::new(),
    }
}

/// Reads the pinned fields of a one-tile chunk (format version 5): the mode from bit 2
/// of byte 7, no tiling (one tile of the whole chunk), the tile the rest of the chunk.
fn pinned_one_tile(chunk: &[u8]) -> Pinned {
    let (flags, element, words, rank, time_axis) =
        (chunk[5], chunk[6], chunk[7], chunk[8], chunk[9]);
    let shifted = flags & 8 != 0;
    let shift = if shifted { chunk[10] } else { 0 };
    let mut at = if shifted { 11 } else { 10 };
    // Lag, stride, run; the shape; the checksum.
    (0..3).for_each(|_| {
        varint(chunk, &mut at);
    });
    let shape: Vec<u64> = (0..rank).map(|_| varint(chunk, &mut at)).collect();
    Pinned {
        version: chunk[4],
        mode: (words >> 2) & 1,
        flags,
        word_size: 1 << (words & 3),
        rank,
        time_axis,
        shift,
        element,
        tiling: [0; 3],
        shape,
        codings: tile_codings(chunk, flags, at + 4, None),
    }
}

/// The coding each tile records (`predictor.map.coder`; coder 11's band count and token
/// kind after a slash), the tiles starting at `at` (after the scale section, with flag
/// bit 1 in `flags`): `sizes` bytes each, or one tile to the end of the chunk.
fn tile_codings(chunk: &[u8], flags: u8, mut at: usize, sizes: Option<Vec<usize>>) -> Vec<String> {
    if flags & 2 != 0 {
        // Scaled integers: 16 fixed bytes, the coded scales, an 8-byte checksum.
        at += 16 + u32_at(chunk, at + 12) as usize + 8;
    }
    let sizes = sizes.unwrap_or_else(|| vec![chunk.len() - at]);
    let mut codings = Vec::new();
    for size in sizes {
        let (predictor, packed) = (chunk[at], chunk[at + 1]);
        let mut coding = format!("{predictor}.{}.{}", packed >> 4, packed & 15);
        if packed & 15 == 11 {
            // Banded context rANS: its band count and token kind.
            write!(coding, "/{}.{}", chunk[at + 2], chunk[at + 3]).unwrap();
        }
        codings.push(coding);
        at += size;
    }
    if flags & 1 == 0 {
        assert_eq!(at, chunk.len(), "the tiles cover the chunk");
    }
    codings
}

/// Reads the pinned fields of a chunk of format version 1, 2, 3, 4 or 5.
fn pinned(chunk: &[u8]) -> Pinned {
    assert_eq!(&chunk[..4], b"KARO", "magic");
    if chunk[4] & 15 == 4 {
        return pinned_brief(chunk);
    }
    if chunk[4] == 5 {
        return pinned_one_tile(chunk);
    }
    let rank = chunk[11];
    let (tiling, shape, sizes, at) = match chunk[4] {
        1 => {
            let tiles = u32_at(chunk, 80) as usize;
            let shape: Vec<u64> = (0..rank as usize)
                .map(|d| u64_at(chunk, 84 + 8 * d))
                .collect();
            let table = 84 + 8 * rank as usize;
            let sizes: Vec<usize> = (0..tiles)
                .map(|t| u32_at(chunk, table + 4 * t) as usize)
                .collect();
            let tiling = [u64_at(chunk, 32), u64_at(chunk, 40), u64_at(chunk, 48)];
            (tiling, shape, sizes, table + 4 * tiles + 4)
        }
        2 | 3 => {
            // (Version 3: the element type byte.) Lag, planes / rows / columns per tile,
            // stride, run, tile count; the shape.
            let mut at = if chunk[4] == 3 { 15 } else { 14 };
            let fields: Vec<u64> = (0..7).map(|_| varint(chunk, &mut at)).collect();
            let shape: Vec<u64> = (0..rank).map(|_| varint(chunk, &mut at)).collect();
            let sizes: Vec<usize> = (0..fields[6] as usize)
                .map(|t| u32_at(chunk, at + 4 * t) as usize)
                .collect();
            let end = at + 4 * sizes.len() + 8 + 4;
            ([fields[1], fields[2], fields[3]], shape, sizes, end)
        }
        v => panic!("unknown format version {v}"),
    };
    let codings = tile_codings(chunk, chunk[6], at, Some(sizes));
    Pinned {
        version: chunk[4],
        mode: chunk[5],
        flags: chunk[6],
        word_size: chunk[10],
        rank,
        time_axis: chunk[12],
        shift: chunk[13],
        element: if chunk[4] == 3 { chunk[14] } else { 0 },
        tiling,
        shape,
        codings,
    }
}

/// One manifest line: the fixture's name and what its header and tiles record.
fn manifest_line(name: &str, p: &Pinned) -> String {
    let shape: Vec<String> = p.shape.iter().map(u64::to_string).collect();
    let tiling: Vec<String> = p.tiling.iter().map(u64::to_string).collect();
    let codings = if p.codings.is_empty() {
        "-".to_string()
    } else {
        p.codings.join(",")
    };
    // Byte 13 is zero but in shifted chunks: named only there; the element type only
    // in version 3.
    let shift = if p.shift == 0 {
        String::new()
    } else {
        format!(" shift={}", p.shift)
    };
    let shift = if p.version >= 3 {
        format!("{shift} element={:#04x}", p.element)
    } else {
        shift
    };
    if p.version & 15 == 4 {
        // Version 4.0 as "v4", later minor versions as "v4.1".
        let minor = match p.version >> 4 {
            0 => String::new(),
            minor => format!(".{minor}"),
        };
        return format!(
            "{name} v4{minor} pipeline={:#04x} word={} rank={} element={:#04x} shape={}",
            p.mode,
            p.word_size,
            p.rank,
            p.element,
            shape.join("x"),
        );
    }
    // Version 5 (one tile of the whole chunk) records no tiling.
    let tiling = if p.version == 5 {
        String::new()
    } else {
        format!(" tiling={}", tiling.join("x"))
    };
    format!(
        "{name} v{} mode={} flags={} word={} rank={} time_axis={}{shift} shape={}{tiling} tiles={}",
        p.version,
        p.mode,
        p.flags,
        p.word_size,
        p.rank,
        p.time_axis,
        shape.join("x"),
        codings
    )
}

#[test]
fn every_golden_chunk_decodes_to_its_bytes() {
    let dir = golden_dir();
    let manifest = fs::read_to_string(dir.join("manifest.txt")).expect("golden manifest");
    let mut checked = 0;
    for line in manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split(' ').next().unwrap();
        let chunk = fs::read(dir.join(format!("{name}.karoo"))).expect(name);
        let raw = fs::read(dir.join(format!("{name}.raw"))).expect(name);
        let decoded = decompress(&chunk).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            decoded == raw,
            "{name}: decoded bytes differ from {name}.raw"
        );
        assert_eq!(manifest_line(name, &pinned(&chunk)), line, "{name}: header");
        checked += 1;
    }
    // Every fixture file is in the manifest, and the manifest is not empty.
    let files = fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            let path = e.as_ref().unwrap().path();
            path.extension().is_some_and(|x| x == "karoo")
        })
        .count();
    assert_eq!(files, checked, "every .karoo fixture is in manifest.txt");
    assert!(checked >= 60, "only {checked} golden chunks");
}

/// The coverage the fixture set promises: each path appears in some fixture's header.
#[test]
fn golden_chunks_cover_every_coding_path() {
    let manifest = fs::read_to_string(golden_dir().join("manifest.txt")).unwrap();
    let lines: Vec<&str> = manifest.lines().filter(|l| !l.starts_with('#')).collect();
    let has = |pred: &dyn Fn(&str) -> bool| lines.iter().any(|l| pred(l));
    let tile_codings = || {
        lines
            .iter()
            .flat_map(|l| l.rsplit("tiles=").next().unwrap().split(','))
    };
    for coder in 1..=14u8 {
        assert!(
            tile_codings().any(|c| c.split('/').next().unwrap().ends_with(&format!(".{coder}"))),
            "coder {coder}"
        );
    }
    // Coder 11 in 8, 16, 20 and 32 bands (half of one register of the vector kernel,
    // one, one and part of another, two), with both token kinds.
    for bands_and_kind in ["/8.0", "/8.1", "/16.0", "/16.1", "/20.0", "/20.1", "/32.0"] {
        assert!(
            tile_codings().any(|c| c.ends_with(bands_and_kind)),
            "coder 11 {bands_and_kind}"
        );
    }
    // 12 asks for the automatic choice: tiles record the predictor chosen.
    for predictor in (1..=11u8).chain([13]) {
        assert!(
            tile_codings().any(|c| c.split('.').next() == Some(&predictor.to_string())),
            "predictor {predictor}"
        );
    }
    for map in 1..=3u8 {
        assert!(
            tile_codings().any(|c| c.split('.').nth(1) == Some(&map.to_string())),
            "map {map}"
        );
    }
    assert!(
        tile_codings().any(|c| c.split('.').next().and_then(|p| p.parse::<u8>().ok()) >= Some(128)),
        "spatially predicted first row"
    );
    for word in [1, 2, 4, 8] {
        assert!(
            has(&|l| l.contains(&format!(" word={word} "))),
            "word {word}"
        );
    }
    assert!(has(&|l| l.contains(" flags=1 ")), "stored verbatim");
    assert!(has(&|l| l.contains(" flags=2 ")), "scaled integers");
    assert!(
        has(&|l| l.contains(" flags=2 ") && l.contains(" word=8 ")),
        "scaled float64 integers"
    );
    assert!(has(&|l| l.contains(" flags=4 ")), "narrowed float64");
    assert!(has(&|l| l.contains(" flags=5 ")), "narrowed float64 stored");
    assert!(has(&|l| l.contains(" flags=6 ")), "narrowed float64 scaled");
    assert!(has(&|l| l.contains(" flags=8 ")), "shifted words");
    assert!(has(&|l| l.contains(" flags=12 ")), "narrowed and shifted");
    assert!(has(&|l| l.contains(" flags=16 ")), "planar components");
    assert!(
        has(&|l| l.contains(" flags=16 ") && l.contains(" mode=1 ")),
        "planar components, archive mode"
    );
    assert!(has(&|l| l.contains(" flags=18 ")), "planar scaled integers");
    assert!(
        has(&|l| l.contains(" flags=28 ")),
        "planar, narrowed and shifted"
    );
    for (flags, what) in [(0, "tiled"), (1, "stored"), (2, "scaled"), (4, "narrowed")] {
        assert!(
            has(&|l| l.contains(" v2 ") && l.contains(&format!(" flags={flags} "))),
            "version 2, {what}"
        );
    }
    assert!(
        has(&|l| l.contains(" v2 ") && l.contains(" shift=")),
        "version 2, shifted"
    );
    // Each of `flags` in some fixture of `version`.
    let has_flags = |version: &str, flags: &[(u8, &str)]| {
        for (flags, what) in flags {
            let fields = [format!(" {version} "), format!(" flags={flags} ")];
            assert!(
                has(&|l| fields.iter().all(|f| l.contains(f.as_str()))),
                "{version}, {what}"
            );
        }
    };
    has_flags(
        "v3",
        &[
            (0, "tiled"),
            (1, "stored"),
            (2, "scaled"),
            (4, "narrowed"),
            (6, "narrowed and scaled"),
            (16, "planar"),
        ],
    );
    assert!(
        has(&|l| l.contains(" v3 ") && l.contains(" shift=")),
        "version 3, shifted"
    );
    // One-tile chunks: each flag a chunk of one tile takes (the encoder codes planes in
    // tiles of their own), both modes.
    has_flags(
        "v5",
        &[
            (0, "tiled"),
            (2, "scaled"),
            (4, "narrowed"),
            (6, "narrowed and scaled"),
            (8, "shifted"),
        ],
    );
    for mode in [0, 1] {
        assert!(
            has(&|l| l.contains(" v5 ") && l.contains(&format!(" mode={mode} "))),
            "version 5, mode {mode}"
        );
    }
    assert!(
        lines
            .iter()
            .filter(|l| l.starts_with("v5_"))
            .all(|l| l.contains(" v5 ")),
        "the v5_ fixtures are one-tile chunks"
    );
    // Every element type kind, and each of its bits.
    let element = |l: &&str| {
        l.split(" element=")
            .nth(1)
            .map(|e| u8::from_str_radix(&e[2..4], 16).unwrap())
    };
    let elements: Vec<u8> = lines.iter().filter_map(element).collect();
    for kind in 0..=5u8 {
        assert!(
            elements.iter().any(|e| e & 15 == kind),
            "element kind {kind}"
        );
    }
    for (bit, what) in [
        (0x10, "Fortran order"),
        (0x40, "scalar"),
        (0x80, "big-endian"),
    ] {
        assert!(elements.iter().any(|e| e & bit != 0), "element {what}");
    }
    // Brief chunks: every compressor, every transform each takes, a shape recorded and
    // the decoded size recorded instead.
    let pipelines: Vec<u8> = lines
        .iter()
        .filter_map(|l| l.split(" pipeline=").nth(1))
        .map(|p| u8::from_str_radix(&p[2..4], 16).unwrap())
        .collect();
    for (compressor, transforms) in [
        (0, 0..1),
        (1, 0..4),
        (2, 0..4),
        (3, 0..3),
        (4, 0..3),
        (5, 1..3),
        (6, 0..3),
    ] {
        for transform in transforms {
            assert!(
                pipelines
                    .iter()
                    .any(|p| p & 7 == compressor && p >> 4 & 3 == transform),
                "brief compressor {compressor}, transform {transform}"
            );
        }
    }
    assert!(
        pipelines.iter().any(|p| p & 8 == 0)
            && has(&|l| l.contains(" v4 ") && l.contains(" rank=0 ")),
        "brief, no shape, rank byte 0"
    );
    assert!(
        has(&|l| l.contains(" v4 ") && l.contains("unshaped_stored")),
        "brief, the unshaped bit in version 4.0"
    );
    assert!(
        pipelines.iter().any(|p| p & 8 != 0) && has(&|l| l.contains(" v4.1 ")),
        "brief, the unshaped bit (version 4.1)"
    );
    assert!(
        has(&|l| l.contains(" v4 ") && !l.contains(" rank=0 ")),
        "brief, shaped"
    );
    for (unshaped, what) in [(false, "shaped"), (true, "unshaped")] {
        assert!(
            pipelines
                .iter()
                .any(|&p| p & 7 == 6 && (p & 8 != 0) == unshaped)
                && lines
                    .iter()
                    .filter(|l| l.contains(" v4.2 "))
                    .any(|l| l.contains(" rank=0 ") == unshaped),
            "brief, byte delta + Zstandard (version 4.2), {what}"
        );
    }
    assert!(has(&|l| l.contains(" mode=1 ")), "archive mode");
    // Column-split tiles: fewer columns per tile than the row holds.
    assert!(has(&|l| l.contains("column_tiles")), "column-split tiles");
    assert!(
        has(&|l| l.contains("multi_plane")),
        "tiles of several planes"
    );
}

// ---------------------------------------------------------------------------------------
// Writing new fixtures (by hand, never over existing files)
// ---------------------------------------------------------------------------------------

/// A small deterministic generator (SplitMix64), so the cases do not depend on a crate's
/// random stream.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A standard normal deviate (Box-Muller, from two uniform deviates).
    fn gauss(&mut self) -> f64 {
        let (u, v) = (self.unit().max(1e-300), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// Series along axis 0 of `shape` (time first): random walks around per-series levels,
/// with noise in the low bits, as visibilities look.
fn series(shape: &[usize], seed: u64) -> Vec<f64> {
    let mut rng = SplitMix(seed);
    let lag: usize = shape[1..].iter().product();
    let n: usize = shape.iter().product();
    let mut level: Vec<f64> = (0..lag).map(|_| (rng.unit() - 0.5) * 200.0).collect();
    (0..n)
        .map(|i| {
            let l = &mut level[i % lag];
            *l += (rng.unit() - 0.5) * 0.5;
            *l + (rng.unit() - 0.5) * 1e-3
        })
        .collect()
}

/// `n` elements of two components: a smooth real part of about 1e4 with noise, a small
/// imaginary part of whole halves; the real part whole too when `integral`.
fn lopsided(n: usize, seed: u64, integral: bool) -> Vec<f64> {
    let mut rng = SplitMix(seed);
    (0..n)
        .flat_map(|c| {
            let wave = 1e4 * (c as f64 * 0.01).sin();
            let wave = if integral { wave.round() } else { wave };
            let real = wave + (rng.unit() * 400.0).floor() - 200.0;
            let imag = ((rng.unit() * 6.0).floor() - 3.0) * 0.5;
            [real, imag]
        })
        .collect()
}

fn f32_bytes(values: &[f64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| (v as f32).to_le_bytes())
        .collect()
}

fn f64_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// float32 series with special bit patterns sprinkled in: NaN payloads, -0.0, infinities,
/// denormals.
fn f32_with_specials(shape: &[usize], seed: u64) -> Vec<u8> {
    let specials: [u32; 8] = [
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_1234,
        0xffbf_ffff,
        0x0000_0001,
        0x807f_ffff,
        0x7f80_0001,
    ];
    let mut bytes = f32_bytes(&series(shape, seed));
    for (k, at) in (0..bytes.len() / 4).step_by(37).enumerate() {
        bytes[4 * at..4 * at + 4].copy_from_slice(&specials[k % specials.len()].to_le_bytes());
    }
    bytes
}

fn int_bytes(values: &[f64], word: usize, scale: f64) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| {
            let i = (v * scale) as i64;
            i.to_le_bytes()[..word].to_vec()
        })
        .collect()
}

struct Case {
    name: String,
    data: Vec<u8>,
    params: Params,
}

fn params(word: usize, shape: &[usize], mode: Mode) -> Params {
    let mut p = Params::new(word, shape);
    p.mode = mode;
    p.threads = 1;
    p
}

/// Archive-mode parameters for complex64 floats of `shape` (ending in the 2 components).
fn complex64_archive(shape: &[usize]) -> Params {
    let mut p = params(4, shape, Mode::Archive);
    p.components = 2;
    p.element = ElementKind::Float;
    p
}

fn with_coding(mut p: Params, predictor: u32, map: u32, coder: u32) -> Params {
    p.predictor = Predictor::from_id(predictor);
    p.residual_map = ResidualMap::from_id(map);
    p.coder = Coder::from_id(coder);
    p
}

/// The cases: every coder, predictor, map and word size, and the special paths (named
/// `v1_` for the fixtures written with the fixed-width header), and a selection again
/// with the compact header of version 2 (`v2_`).
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut add =
        |name: String, data: Vec<u8>, params: Params| out.push(Case { name, data, params });
    let shape = [24usize, 16, 2];
    let floats = f32_with_specials(&shape, 1);
    // Every predictor with patched packing, rotate-subtract; every map with the previous
    // sample; every coder with the previous sample and with each mode's auto choice.
    for predictor in 1..=13u32 {
        let p = with_coding(params(4, &shape, Mode::Fast), predictor, 2, 7);
        add(format!("v1_f32_predictor{predictor}"), floats.clone(), p);
    }
    for map in 1..=3u32 {
        let p = with_coding(params(4, &shape, Mode::Fast), 1, map, 7);
        add(format!("v1_f32_map{map}"), floats.clone(), p);
    }
    for coder in 1..=7u32 {
        for (mode, label) in [(Mode::Fast, "fast"), (Mode::Archive, "archive")] {
            let p = with_coding(params(4, &shape, mode), 1, 2, coder);
            add(format!("v1_f32_coder{coder}_{label}"), floats.clone(), p);
            let p = with_coding(params(4, &shape, mode), 0, 0, coder);
            add(
                format!("v1_f32_coder{coder}_{label}_auto"),
                floats.clone(),
                p,
            );
        }
    }
    // Defaults of both modes at every word size and element kind.
    let values = series(&[32, 24], 2);
    let words: [(usize, Vec<u8>, ElementKind, &str); 6] = [
        (1, int_bytes(&values, 1, 0.5), ElementKind::Other, "u8"),
        (2, int_bytes(&values, 2, 100.0), ElementKind::Integer, "i16"),
        (4, f32_bytes(&values), ElementKind::Float, "f32"),
        (4, int_bytes(&values, 4, 1e4), ElementKind::Integer, "i32"),
        (8, f64_bytes(&values), ElementKind::Float, "f64"),
        (8, int_bytes(&values, 8, 1e9), ElementKind::Integer, "i64"),
    ];
    for (word, data, element, label) in words {
        for (mode, m) in [(Mode::Fast, "fast"), (Mode::Archive, "archive")] {
            let mut p = params(word, &[32, 24], mode);
            p.element = element;
            add(format!("v1_{label}_{m}_default"), data.clone(), p);
        }
    }
    // Complex numbers: components as their own series, innermost axis for Lorenzo and the
    // spatially predicted first row (archive mode with few time steps).
    for (rows, label) in [(2usize, "snapshot"), (16, "series")] {
        let shape = [rows, 8, 12, 2];
        let data = f32_bytes(&series(&shape, 3));
        for (mode, m) in [(Mode::Fast, "fast"), (Mode::Archive, "archive")] {
            let mut p = params(4, &shape, mode);
            p.components = 2;
            add(format!("v1_complex64_{label}_{m}"), data.clone(), p.clone());
            p.predictor = Some(Predictor::Lorenzo);
            add(format!("v1_complex64_{label}_{m}_lorenzo"), data.clone(), p);
        }
        let data = f64_bytes(&series(&shape, 4));
        let mut p = params(8, &shape, Mode::Archive);
        p.components = 2;
        add(format!("v1_complex128_{label}_archive"), data, p);
    }
    // Stored verbatim: noise.
    let mut rng = SplitMix(5);
    let noise: Vec<u8> = (0..4096).map(|_| rng.next() as u8).collect();
    add(
        "v1_noise_stored_fast".into(),
        noise.clone(),
        params(4, &[1024], Mode::Fast),
    );
    add(
        "v1_noise_stored_archive".into(),
        noise,
        params(4, &[1024], Mode::Archive),
    );
    // Few distinct values: the value dictionary (and more than 256 distinct values
    // under the dictionary coder, which falls back to context rANS).
    let levels: Vec<f64> = series(&[40, 32], 6)
        .iter()
        .map(|v| (v / 8.0).round() * 0.125)
        .collect();
    add(
        "v1_f32_few_values_archive".into(),
        f32_bytes(&levels),
        params(4, &[40, 32], Mode::Archive),
    );
    add(
        "v1_f32_dictionary_many_values".into(),
        f32_bytes(&series(&[40, 32], 7)),
        with_coding(params(4, &[40, 32], Mode::Archive), 13, 0, 6),
    );
    // No prediction (small integers), and the value dictionary proper (few values).
    let small: Vec<u8> = (0..40 * 32u32)
        .flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 26).to_le_bytes())
        .collect();
    let mut p = with_coding(params(4, &[40, 32], Mode::Fast), 13, 3, 7);
    p.element = ElementKind::Integer;
    add("v1_i32_no_prediction".into(), small, p);
    add(
        "v1_f32_few_values_dictionary".into(),
        f32_bytes(&levels),
        with_coding(params(4, &[40, 32], Mode::Archive), 13, 1, 6),
    );
    // Tiles of several planes (time axis 1), an explicit ragged lag, a plane with a short
    // last row, a single word, an empty chunk.
    let shape = [6usize, 20, 16];
    let mut p = params(4, &shape, Mode::Fast);
    p.time_axis = 1;
    add(
        "v1_f32_multi_plane_fast".into(),
        f32_bytes(&series(&shape, 8)),
        p.clone(),
    );
    p.mode = Mode::Archive;
    add(
        "v1_f32_multi_plane_archive".into(),
        f32_bytes(&series(&shape, 8)),
        p,
    );
    let mut p = params(8, &[700], Mode::Fast);
    p.lag = 48;
    add(
        "v1_f64_ragged_lag_fast".into(),
        f64_bytes(&series(&[700], 9)),
        p.clone(),
    );
    p.mode = Mode::Archive;
    add(
        "v1_f64_ragged_lag_archive".into(),
        f64_bytes(&series(&[700], 9)),
        p,
    );
    add(
        "v1_f32_one_word".into(),
        1.5f32.to_le_bytes().to_vec(),
        params(4, &[1], Mode::Fast),
    );
    add(
        "v1_empty".into(),
        Vec::new(),
        params(4, &[0, 8], Mode::Fast),
    );
    // Column-split tiles: planes of more than 2^17 words in rows too long for 64 of them.
    let shape = [40usize, 4096];
    let wide = series(&shape, 10);
    add(
        "v1_u8_column_tiles_fast".into(),
        int_bytes(&wide, 1, 1.0),
        params(1, &shape, Mode::Fast),
    );
    let mut p = params(2, &shape, Mode::Archive);
    p.element = ElementKind::Integer;
    add(
        "v1_i16_column_tiles_archive".into(),
        int_bytes(&wide, 2, 50.0),
        p,
    );
    // The general-purpose coders: byte-shuffled residuals through LZ4 and Zstandard.
    for coder in [8u32, 9] {
        let p = with_coding(params(4, &[24, 16, 2], Mode::Fast), 1, 2, coder);
        add(format!("v1_f32_coder{coder}"), floats.clone(), p);
        let mut p = with_coding(params(8, &[32, 24], Mode::Archive), 1, 3, coder);
        p.element = ElementKind::Integer;
        add(
            format!("v1_i64_coder{coder}"),
            int_bytes(&values, 8, 1e9),
            p,
        );
    }
    // Scaled integers: spectra of integers times one scale per spectrum (float32, one
    // spectrum kept as it is for its NaN), and float64 multiples of a constant.
    let mut scaled = Vec::new();
    for t in 0..8usize {
        for b in 0..4usize {
            let scale = 1.0e-3f32 * (1.0 + ((t * 31 + b * 17) % 97) as f32 / 97.0);
            for c in 0..64usize {
                let wave = (c as f32 * 0.1).sin() * 3000.0;
                let q = (wave + ((t * 131 + b * 71 + c * 29) % 401) as f32 - 200.0) as i16;
                scaled.push(f32::from(q) * scale);
            }
        }
    }
    let scaled_bytes: Vec<u8> = scaled.iter().flat_map(|v| v.to_le_bytes()).collect();
    for (mode, m) in [(Mode::Fast, "fast"), (Mode::Archive, "archive")] {
        add(
            format!("v1_f32_scaled_{m}"),
            scaled_bytes.clone(),
            params(4, &[8, 4, 64], mode),
        );
    }
    let mut with_nan = scaled.clone();
    with_nan[70] = f32::NAN;
    add(
        "v1_f32_scaled_one_group_unscaled".into(),
        with_nan.iter().flat_map(|v| v.to_le_bytes()).collect(),
        params(4, &[8, 4, 64], Mode::Fast),
    );
    let multiples: Vec<u8> = (0..32 * 24i32)
        .flat_map(|i| (f64::from(i * 37 % 1000 - 500) * 0.1).to_le_bytes())
        .collect();
    add(
        "v1_f64_scaled_archive".into(),
        multiples,
        params(8, &[32, 24], Mode::Archive),
    );
    // Narrowed float64: complex128 holding float32 values (with special bit patterns),
    // stored (incompressible float32 bits) and scaled (integers times a scale).
    for (mode, m) in [(Mode::Fast, "fast"), (Mode::Archive, "archive")] {
        let mut p = params(8, &[16, 12, 2], mode);
        p.components = 2;
        add(
            format!("v1_complex128_narrowed_{m}"),
            widened(&f32_with_specials(&[16, 12, 2], 12)),
            p,
        );
    }
    let mut rng = SplitMix(13);
    let noise: Vec<u8> = (0..256).flat_map(|_| rng.next().to_le_bytes()).collect();
    add(
        "v1_f64_narrowed_stored".into(),
        widened(&noise),
        params(8, &[512], Mode::Fast),
    );
    add(
        "v1_f64_narrowed_scaled_fast".into(),
        widened(&scaled_bytes),
        params(8, &[8, 4, 64], Mode::Fast),
    );
    // Shifted words: float32 series rounded to 10 mantissa bits, and the same widened to
    // float64 (narrowed, then shifted).
    let rounded: Vec<u8> = f32_bytes(&series(&[24, 16, 2], 14))
        .chunks_exact(4)
        .flat_map(|w| (u32::from_le_bytes(w.try_into().unwrap()) >> 13 << 13).to_le_bytes())
        .collect();
    for (mode, m) in [(Mode::Fast, "fast"), (Mode::Archive, "archive")] {
        let mut p = params(4, &[24, 16, 2], mode);
        p.components = 2;
        add(format!("v1_complex64_shifted_{m}"), rounded.clone(), p);
    }
    let mut p = params(8, &[24, 16, 2], Mode::Archive);
    p.components = 2;
    add(
        "v1_complex128_narrowed_shifted_archive".into(),
        widened(&rounded),
        p,
    );
    // Holt, medians and means through archive mode's context Huffman and Rice too.
    for (predictor, coder) in [(10u32, 5u32), (8, 3), (9, 4), (7, 2), (6, 1)] {
        let p = with_coding(params(4, &[48, 20], Mode::Archive), predictor, 3, coder);
        add(
            format!("v1_f32_p{predictor}_c{coder}_archive"),
            f32_bytes(&series(&[48, 20], 11)),
            p,
        );
    }
    // Planar components (flag bit 4, version 2 only; archive mode, which codes them when
    // smaller): one time step along 1536 channels with large real parts and small
    // imaginary parts, as floats, as scaled integers (multiples of 0.5), as float64 of
    // float32 values rounded to 10 mantissa bits (narrowed, then shifted), and as
    // records of two int32 fields.
    let shape = [2usize, 1536, 2];
    let mut p = params(4, &shape, Mode::Archive);
    p.components = 2;
    add(
        "v2_complex64_planar_archive".into(),
        f32_bytes(&lopsided(1536 * 2, 15, false)),
        p.clone(),
    );
    // The same waves in 64ths.
    let steps: Vec<f64> = lopsided(1536 * 2, 15, false)
        .iter()
        .map(|v| (v * 64.0).round() / 64.0)
        .collect();
    add(
        "v2_complex64_planar_scaled_archive".into(),
        f32_bytes(&steps),
        p.clone(),
    );
    let rounded_lopsided: Vec<u8> = f32_bytes(&lopsided(1536 * 2, 17, false))
        .chunks_exact(4)
        .flat_map(|w| (u32::from_le_bytes(w.try_into().unwrap()) >> 13 << 13).to_le_bytes())
        .collect();
    let mut p_wide = params(8, &shape, Mode::Archive);
    p_wide.components = 2;
    add(
        "v2_complex128_planar_narrowed_shifted_archive".into(),
        widened(&rounded_lopsided),
        p_wide,
    );
    let twice = lopsided(1536, 18, false);
    let mut p_records = p.clone();
    p_records.element = ElementKind::Integer;
    add(
        "v2_int32_records_planar_archive".into(),
        int_bytes(&[&twice[..], &twice[..]].concat(), 4, 2.0),
        p_records,
    );
    // Format version 2 (the compact header) for the header's shapes: one tile and
    // several, column-split tiles, several planes per tile, stored, empty, ranks 1 to 4,
    // and each flag.
    for name in [
        "f32_predictor11",
        "f32_coder4_archive",
        "f32_coder9",
        "f32_few_values_archive",
        "complex64_snapshot_archive",
        "complex128_series_archive",
        "f32_multi_plane_fast",
        "f64_ragged_lag_fast",
        "u8_column_tiles_fast",
        "noise_stored_fast",
        "f32_one_word",
        "empty",
        "f32_scaled_archive",
        "complex128_narrowed_fast",
        "f64_narrowed_stored",
        "f64_narrowed_scaled_fast",
        "complex64_shifted_archive",
        "complex128_narrowed_shifted_archive",
    ] {
        let case = out
            .iter()
            .find(|c| c.name == format!("v1_{name}"))
            .unwrap_or_else(|| panic!("no case v1_{name}"));
        let (data, params) = (case.data.clone(), case.params.clone());
        out.push(Case {
            name: format!("v2_{name}"),
            data,
            params,
        });
    }
    // Coder 10, float fields: complex64 noise with flagged zeros in archive mode (the
    // automatic choice for noise), and float64 residuals of the previous sample under it
    // (every token kind: zero, escapes, the window).
    let mut rng = SplitMix(23);
    let noise: Vec<f64> = (0..4096)
        .map(|i| {
            let gauss = rng.gauss();
            if i % 16 < 2 {
                0.0
            } else {
                300.0 * gauss
            }
        })
        .collect();
    out.push(Case {
        name: "v2_complex64_noise_flagged_archive".into(),
        data: f32_bytes(&noise),
        params: complex64_archive(&[1, 512, 4, 2]),
    });
    let mut spiky = noise[..1024].to_vec();
    spiky[100] = f64::INFINITY;
    spiky[200] = -1e300;
    spiky[300] = f64::from_bits(1);
    spiky[400] = -0.0;
    let mut p = with_coding(params(8, &[32, 32], Mode::Archive), 1, 2, 10);
    p.element = ElementKind::Float;
    out.push(Case {
        name: "v2_f64_coder10_archive".into(),
        data: f64_bytes(&spiky),
        params: p,
    });
    // Coder 11 (banded context rANS) as archive mode writes it for tiles of at least
    // 16384 words in rows of a multiple of 16: bit-length tokens on a series of complex64
    // (one tile of 8 rows of 4096 words), float-field tokens on noise of as many words.
    out.push(Case {
        name: "v2_complex64_banded_archive".into(),
        data: f32_bytes(&series(&[8, 2048, 2], 29)),
        params: complex64_archive(&[8, 2048, 2]),
    });
    let mut rng = SplitMix(31);
    let noise: Vec<f64> = (0..32768).map(|_| 30.0 * rng.gauss()).collect();
    out.push(Case {
        name: "v2_complex64_banded_fields_archive".into(),
        data: f32_bytes(&noise),
        params: complex64_archive(&[1, 1024, 16, 2]),
    });
    // Coder 11 in 32 bands, two registers of the vector kernel: a tile of 65536 words
    // in rows of 8192.
    out.push(Case {
        name: "v2_complex64_banded32_archive".into(),
        data: f32_bytes(&series(&[8, 4096, 2], 37)),
        params: complex64_archive(&[8, 4096, 2]),
    });
    // Coder 11 in 8 bands (the low half of the vector kernel's register), as archive
    // mode writes it for rows of a multiple of 8 words but not of 16: complex128 in rows
    // of 1640 words (one tile of 11 rows), a series and noise (float-field tokens).
    let mut p = params(8, &[11, 820, 2], Mode::Archive);
    p.components = 2;
    p.element = ElementKind::Float;
    out.push(Case {
        name: "v2_complex128_banded8_archive".into(),
        data: f64_bytes(&series(&[11, 820, 2], 53)),
        params: p.clone(),
    });
    let mut rng = SplitMix(59);
    let noise: Vec<f64> = (0..11 * 1640).map(|_| 30.0 * rng.gauss()).collect();
    out.push(Case {
        name: "v2_complex128_banded8_fields_archive".into(),
        data: f64_bytes(&noise),
        params: p,
    });
    // Coder 11 in 20 bands (one register and 4 lanes of another), as archive mode
    // writes it for such rows since it takes band counts other than powers of two.
    let mut p = params(8, &[11, 820, 2], Mode::Archive);
    p.components = 2;
    p.element = ElementKind::Float;
    out.push(Case {
        name: "v2_complex128_banded20_archive".into(),
        data: f64_bytes(&series(&[11, 820, 2], 61)),
        params: p.clone(),
    });
    let mut rng = SplitMix(67);
    let noise: Vec<f64> = (0..11 * 1640).map(|_| 30.0 * rng.gauss()).collect();
    out.push(Case {
        name: "v2_complex128_banded20_fields_archive".into(),
        data: f64_bytes(&noise),
        params: p,
    });
    // Coder 12 (bit-shuffled LZ4), chosen by fast mode for sparse flags (one byte each,
    // about one in 64 set, and a flagged band), coded as the words are.
    let mut rng = SplitMix(12);
    let flags: Vec<u8> = (0..64 * 1024)
        .map(|i| u8::from(i % 1024 / 16 == 40 || rng.next().is_multiple_of(64)))
        .collect();
    let mut p = params(1, &[64, 1024], Mode::Fast);
    p.element = ElementKind::Integer;
    out.push(Case {
        name: "v2_u8_flags_bitshuffled_fast".into(),
        data: flags.clone(),
        params: p,
    });
    // Coder 14 (context-modelled bit planes), chosen by archive mode for the flags.
    let mut p = params(1, &[64, 1024], Mode::Archive);
    p.element = ElementKind::Integer;
    out.push(Case {
        name: "v2_u8_flags_context_bitplanes_archive".into(),
        data: flags,
        params: p,
    });
    // Coder 12 requested on 16-bit counts: residuals whose high planes are absent.
    let counts: Vec<u8> = (0..16 * 512)
        .flat_map(|i: u32| ((i / 512 * 3 + i % 7) as u16).to_le_bytes())
        .collect();
    let mut p = with_coding(params(2, &[16, 512], Mode::Fast), 1, 3, 12);
    p.element = ElementKind::Integer;
    out.push(Case {
        name: "v2_u16_counts_coder12_fast".into(),
        data: counts.clone(),
        params: p,
    });
    // Coder 13 (bit-shuffled Zstandard) requested on the counts.
    let mut p = with_coding(params(2, &[16, 512], Mode::Archive), 1, 3, 13);
    p.element = ElementKind::Integer;
    out.push(Case {
        name: "v2_u16_counts_coder13_archive".into(),
        data: counts.clone(),
        params: p,
    });
    // Coder 14 requested on the counts' residuals: several planes, each after the others.
    let mut p = with_coding(params(2, &[16, 512], Mode::Archive), 1, 3, 14);
    p.element = ElementKind::Integer;
    out.push(Case {
        name: "v2_u16_counts_coder14_archive".into(),
        data: counts,
        params: p,
    });
    // Format version 3 (the element type byte, the sealed checksum) for each kind of
    // chunk (tiled, stored, planar, scaled, narrowed, shifted, empty) and each element
    // type: every kind, Fortran order, a 0-d array, big-endian words.
    let typed = |kind, big_endian, scalar, fortran| ElementType {
        kind,
        big_endian,
        scalar,
        fortran,
    };
    let float = typed(TypeKind::Float, false, false, false);
    let complex = typed(TypeKind::Complex, false, false, false);
    for (name, element_type) in [
        ("f32_predictor11", float),
        ("f32_coder4_archive", float),
        ("complex64_snapshot_archive", complex),
        (
            "noise_stored_fast",
            typed(TypeKind::Unsigned, false, false, false),
        ),
        ("empty", float),
        ("f32_scaled_archive", float),
        ("complex128_narrowed_fast", complex),
        ("f64_narrowed_scaled_fast", float),
        ("complex64_shifted_archive", complex),
    ] {
        let case = out
            .iter()
            .find(|c| c.name == format!("v1_{name}"))
            .unwrap_or_else(|| panic!("no case v1_{name}"));
        let (data, mut params) = (case.data.clone(), case.params.clone());
        params.element_type = element_type;
        out.push(Case {
            name: format!("v3_{name}"),
            data,
            params,
        });
    }
    let planar = out
        .iter()
        .find(|c| c.name == "v2_complex64_planar_archive")
        .expect("the planar case");
    let (data, mut p) = (planar.data.clone(), planar.params.clone());
    p.element_type = complex;
    out.push(Case {
        name: "v3_complex64_planar_archive".into(),
        data,
        params: p,
    });
    one_tile_cases(&mut out);
    let values = series(&[32, 24], 31);
    let mut p = params(2, &[24, 32], Mode::Fast);
    p.element = ElementKind::Integer;
    p.time_axis = 1;
    p.element_type = typed(TypeKind::Signed, false, false, true);
    out.push(Case {
        name: "v3_i16_fortran_fast".into(),
        data: int_bytes(&values, 2, 50.0),
        params: p,
    });
    let mut p = params(2, &[32, 24], Mode::Archive);
    p.element = ElementKind::Integer;
    p.element_type = typed(TypeKind::Unsigned, true, false, false);
    out.push(Case {
        name: "v3_u16_big_endian_archive".into(),
        data: int_bytes(&values, 2, 50.0)
            .chunks_exact(2)
            .flat_map(|w| [w[1], w[0]])
            .collect(),
        params: p,
    });
    let mut p = params(8, &[1], Mode::Fast);
    p.element_type = typed(TypeKind::Float, false, true, false);
    out.push(Case {
        name: "v3_f64_scalar".into(),
        data: 2.5f64.to_le_bytes().to_vec(),
        params: p,
    });
    let mut p = params(1, &[16, 64], Mode::Archive);
    p.element = ElementKind::Integer;
    p.element_type = typed(TypeKind::Bool, false, false, false);
    out.push(Case {
        name: "v3_bool_archive".into(),
        data: (0..1024u32).map(|i| u8::from(i % 64 < 5)).collect(),
        params: p,
    });
    let mut p = params(1, &[24, 40], Mode::Fast);
    p.element = ElementKind::Other;
    out.push(Case {
        name: "v3_bytes_untyped_fast".into(),
        data: f32_bytes(&series(&[24, 10], 32)),
        params: p,
    });
    out
}

/// One-tile chunks (format version 5): earlier cases of each flag, mode and word kind
/// again, which today's encoder writes as one tile (planar components never are: the
/// encoder codes each component's planes in tiles of their own).
fn one_tile_cases(out: &mut Vec<Case>) {
    for name in [
        "v3_f32_coder4_archive",
        "v3_complex64_snapshot_archive",
        "v3_f32_scaled_archive",
        "v3_complex128_narrowed_fast",
        "v3_f64_narrowed_scaled_fast",
        "v3_complex64_shifted_archive",
        "v1_f32_fast_default",
        "v1_i16_archive_default",
    ] {
        let case = out
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        let name = &name[3..];
        let (data, params) = (case.data.clone(), case.params.clone());
        out.push(Case {
            name: format!("v5_{name}"),
            data,
            params,
        });
    }
}

/// Writes the fixtures of cases that have none yet (to `KAROO_GOLDEN_OUT` if set), and
/// appends their manifest lines. Never overwrites a file.
#[test]
#[ignore = "writes golden fixtures; run by hand when adding a format case"]
fn write_missing_golden_chunks() {
    let dir = std::env::var_os("KAROO_GOLDEN_OUT").map_or_else(golden_dir, PathBuf::from);
    fs::create_dir_all(&dir).unwrap();
    let manifest_path = dir.join("manifest.txt");
    let mut manifest = fs::read_to_string(&manifest_path).unwrap_or_else(|_| {
        "# name version mode flags word rank time_axis shape tiling tiles(predictor.map.coder)\n"
            .to_string()
    });
    for (case, pipeline) in cases().into_iter().map(|c| (c, None)).chain(brief_cases()) {
        let chunk_path = dir.join(format!("{}.karoo", case.name));
        if chunk_path.exists() {
            continue;
        }
        let chunk = match pipeline {
            None => compress(&case.data, &case.params).expect(&case.name),
            Some(pipeline) => brief(&case, pipeline),
        };
        assert_eq!(decompress(&chunk).unwrap(), case.data, "{}", case.name);
        fs::write(dir.join(format!("{}.raw", case.name)), &case.data).unwrap();
        fs::write(&chunk_path, &chunk).unwrap();
        writeln!(manifest, "{}", manifest_line(&case.name, &pinned(&chunk))).unwrap();
    }
    fs::write(manifest_path, manifest).unwrap();
}

/// The brief chunk (format version 4) of `case` through `pipeline`.
fn brief(case: &Case, pipeline: Pipeline) -> Vec<u8> {
    let p = &case.params;
    let words: Vec<u64> = p.shape.iter().map(|&d| d as u64).collect();
    brief_chunk(
        &case.data,
        p.word_size,
        &words,
        p.element_type,
        pipeline,
        None,
    )
    .unwrap_or_else(|| panic!("{}: no brief chunk", case.name))
}

/// Brief chunks (format version 4) of each pipeline, with the pipeline that codes them.
fn brief_cases() -> Vec<(Case, Option<Pipeline>)> {
    let complex = ElementType {
        kind: TypeKind::Complex,
        big_endian: false,
        scalar: false,
        fortran: false,
    };
    let values = series(&[16, 96], 41);
    let mut visibilities = complex64_archive(&[16, 48, 2]);
    visibilities.element_type = complex;
    let floats = f32_bytes(&values);
    let mut out = Vec::new();
    let transforms = [
        (Transform::None, "bytes"),
        (Transform::Words, "words"),
        (Transform::Elements, "elements"),
        (Transform::Bits, "bits"),
    ];
    for (compressor, name) in [
        (Compressor::Lz4, "lz4"),
        (Compressor::Zstd, "zstd"),
        (Compressor::Lzma, "lzma"),
        (Compressor::Bzip2, "bzip2"),
    ] {
        for (transform, shuffle) in transforms {
            let pipeline = Pipeline {
                transform,
                compressor,
            };
            if transform == Transform::Bits
                && matches!(compressor, Compressor::Lzma | Compressor::Bzip2)
            {
                continue;
            }
            out.push((
                Case {
                    name: format!("v4_complex64_{shuffle}_{name}"),
                    data: floats.clone(),
                    params: visibilities.clone(),
                },
                Some(pipeline),
            ));
        }
    }
    let stored = Pipeline {
        transform: Transform::None,
        compressor: Compressor::None,
    };
    out.push((
        Case {
            name: "v4_u16_stored".into(),
            data: int_bytes(&series(&[6, 5], 42), 2, 50.0),
            params: {
                let mut p = params(2, &[6, 5], Mode::Fast);
                p.element = ElementKind::Integer;
                p.element_type.kind = TypeKind::Signed;
                p
            },
        },
        Some(stored),
    ));
    // Bitshuffle: a whole block of 8 KiB, a shorter last block, the last values
    // (fewer than 8) verbatim; of words, and of complex elements.
    out.push((
        Case {
            name: "v4_f32_words_bitshuffle".into(),
            data: f32_bytes(&series(&[1, 2083], 44)),
            params: {
                let mut p = params(4, &[2083], Mode::Fast);
                p.element_type.kind = TypeKind::Float;
                p
            },
        },
        Some(Pipeline {
            transform: Transform::Words,
            compressor: Compressor::Bitshuffle,
        }),
    ));
    let mut odd_visibilities = complex64_archive(&[1043, 2]);
    odd_visibilities.mode = Mode::Fast;
    odd_visibilities.element_type = complex;
    out.push((
        Case {
            name: "v4_complex64_elements_bitshuffle".into(),
            data: f32_bytes(&series(&[7, 298], 45)),
            params: odd_visibilities,
        },
        Some(Pipeline {
            transform: Transform::Elements,
            compressor: Compressor::Bitshuffle,
        }),
    ));
    // Float chunks of `shape` in archive mode, brief through `pipeline`.
    let float_case = |name: &str, data: Vec<u8>, word: usize, shape: &[usize], pipeline| {
        let mut params = params(word, shape, Mode::Archive);
        params.element_type.kind = TypeKind::Float;
        let name = name.into();
        (Case { name, data, params }, Some(pipeline))
    };
    let words_zstd = Pipeline {
        transform: Transform::Words,
        compressor: Compressor::Zstd,
    };
    // A shape whose varints take more than 4 bytes: the decoded size instead (the fixture
    // holds the rank byte 0 of encoders before the unshaped bit).
    let data = f32_bytes(&series(&[2, 300], 43));
    out.push(float_case(
        "v4_f32_unshaped_zstd",
        data,
        4,
        &[1, 2, 1, 300, 1],
        words_zstd,
    ));
    // The unshaped bit: a stored chunk of fewer than 128 bytes behind a 12-byte header
    // (the fixture is of version 4.0, written before minor versions were recorded), and
    // the same in version 4.1, which encoders write with the unshaped bit.
    for (name, seed) in [
        ("v4_f64_unshaped_stored", 46),
        ("v4_1_f64_unshaped_stored", 47),
    ] {
        let data = f64_bytes(&series(&[1, 12], seed));
        out.push(float_case(name, data, 8, &[1, 1, 2, 1, 6], stored));
    }
    // Byte delta + Zstandard (version 4.2): after no shuffle and each byte shuffle, and
    // with the unshaped bit.
    for (transform, shuffle) in [
        (Transform::None, "bytes"),
        (Transform::Words, "words"),
        (Transform::Elements, "elements"),
    ] {
        out.push((
            Case {
                name: format!("v4_2_complex64_{shuffle}_bytedelta_zstd"),
                data: floats.clone(),
                params: visibilities.clone(),
            },
            Some(Pipeline {
                transform,
                compressor: Compressor::ByteDeltaZstd,
            }),
        ));
    }
    let delta_words = Pipeline {
        transform: Transform::Words,
        compressor: Compressor::ByteDeltaZstd,
    };
    let data = f32_bytes(&series(&[2, 300], 48));
    out.push(float_case(
        "v4_2_f32_unshaped_bytedelta_zstd",
        data,
        4,
        &[1, 2, 1, 300, 1],
        delta_words,
    ));
    out
}
