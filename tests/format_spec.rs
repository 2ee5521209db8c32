//! docs/format.md against the code: the id tables, the header layout and flags, the brief
//! chunks' pipelines, the element kinds, the versions and the limits the specification
//! states are those the codec defines, so a decoder written from the specification
//! accepts every chunk the encoder writes.

use karoo::internals::{
    Compressor, Pipeline, Transform, BRIEF_UNSHAPED, FLAG_NARROWED, FLAG_PLANAR, FLAG_SCALED,
    FLAG_SHIFTED, FLAG_STORED, MAGIC, READ_VERSIONS, VERSION, VERSION_BRIEF, VERSION_FIXED,
    VERSION_ONE_TILE,
};
use karoo::{Coder, ElementType, Predictor, ResidualMap, MAX_RANK};
use std::collections::BTreeSet;

fn spec() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/format.md");
    std::fs::read_to_string(path).expect("docs/format.md")
}

/// The spec with every run of white space (line breaks included) as one space.
fn spec_text() -> String {
    spec().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The rows of the table whose header line is `header`, as cells.
fn table(header: &str) -> Vec<Vec<String>> {
    table_in(&spec(), header)
}

/// The rows of the first table of `text` whose header line is `header`, as cells.
fn table_in(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| l.trim() != header);
    assert!(
        lines.next().is_some(),
        "docs/format.md has no table {header:?}"
    );
    lines
        .skip(1) // the |---| line
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn ids_in_column(rows: &[Vec<String>], column: usize) -> BTreeSet<u32> {
    rows.iter()
        .filter(|r| !r[column].is_empty())
        .map(|r| {
            r[column]
                .parse()
                .unwrap_or_else(|_| panic!("id {:?}", r[column]))
        })
        .collect()
}

fn predictor_ids() -> BTreeSet<u32> {
    (0..=255)
        .filter(|&id| Predictor::from_id(id).is_some())
        .collect()
}

fn map_ids() -> BTreeSet<u32> {
    ResidualMap::ALL.iter().map(|m| u32::from(m.id())).collect()
}

fn coder_ids() -> BTreeSet<u32> {
    Coder::ALL.iter().map(|c| u32::from(c.id())).collect()
}

#[test]
fn the_tile_payload_table_lists_every_id_the_codec_defines() {
    let rows = table("| id | predictor | | id | map | | id | coder |");
    assert_eq!(ids_in_column(&rows, 0), predictor_ids(), "predictor ids");
    assert_eq!(ids_in_column(&rows, 3), map_ids(), "residual map ids");
    assert_eq!(ids_in_column(&rows, 6), coder_ids(), "coder ids");
    assert!(
        (0..=255).all(|id| (Coder::from_id(id).is_some()) == coder_ids().contains(&id)),
        "from_id accepts exactly the listed coder ids"
    );
}

#[test]
fn every_coder_has_a_section_named_by_its_id() {
    let spec = spec();
    let contents: String = spec
        .lines()
        .skip_while(|l| *l != "## Contents")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    for coder in Coder::ALL {
        let id = coder.id();
        let named = spec.lines().any(|l| {
            l.starts_with("### Coder")
                && (l.starts_with(&format!("### Coder {id}:"))
                    || l.contains(&format!(", coder {id}:")))
        });
        assert!(named, "docs/format.md has no section for coder {id}");
        assert!(
            contents.contains(&format!("coder-{id}-")),
            "the contents list omits coder {id}"
        );
    }
}

/// The id ranges stated in prose and in the header tables.
#[test]
fn the_stated_id_ranges_are_the_codecs() {
    let text = spec_text();
    let max_coder = coder_ids().last().copied().unwrap();
    let max_map = map_ids().last().copied().unwrap();
    let listed: Vec<u32> = predictor_ids().into_iter().collect();
    let (run, extra): (Vec<u32>, Vec<u32>) = listed.iter().partition(|&&id| id <= 11);
    assert_eq!(run, (1..=11).collect::<Vec<_>>());
    assert_eq!(extra, vec![u32::from(Predictor::ZERO_ID)]);
    for stated in [
        format!("The predictor id must be 1 to 11 or {}", Predictor::ZERO_ID),
        format!("the map id 1 to {max_map} and the coder id 1 to {max_coder}:"),
        format!("requested coder id, 1 to {max_coder} (informational)"),
        format!("the requested coder a coder id (1 to {max_coder})"),
        format!("a predictor id (1 to 11, {})", Predictor::ZERO_ID),
        format!("or a map id (1 to {max_map})"),
    ] {
        assert!(
            text.contains(&stated),
            "docs/format.md does not say {stated:?}"
        );
    }
}

/// The cell of the first row of `rows` whose column `key` is `value`, column `column`.
fn cell<'a>(rows: &'a [Vec<String>], key: usize, value: &str, column: usize) -> &'a str {
    let row = rows
        .iter()
        .find(|r| r[key] == value)
        .unwrap_or_else(|| panic!("no row {value:?}"));
    &row[column]
}

/// The `bit N `NAME`` pairs of a cell, as (bit, name).
fn named_bits(text: &str) -> Vec<(u32, String)> {
    text.split("bit ")
        .skip(1)
        .filter_map(|part| {
            let (bit, rest) = part.split_once(' ')?;
            let name = rest.strip_prefix('`')?.split('`').next()?;
            Some((bit.trim_end_matches(':').parse().ok()?, name.to_string()))
        })
        .collect()
}

#[test]
fn the_common_header_table_is_the_codecs_layout() {
    let rows = table("| offset | size | field |");
    let mut offset = 0;
    for row in &rows {
        assert_eq!(
            row[0],
            offset.to_string(),
            "field {:?} starts where the last ends",
            row[2]
        );
        offset += row[1].parse::<usize>().unwrap();
    }
    assert_eq!(offset, 14, "the common header is 14 bytes");
    assert!(cell(&rows, 0, "0", 2).contains("`K A R O` (`4B 41 52 4F`)"));
    assert_eq!(&MAGIC, b"KARO");
    assert!(cell(&rows, 0, "4", 2).starts_with(&format!(
        "format version: major version in bits 0-3, {VERSION} "
    )));
    assert!(cell(&rows, 0, "11", 2).contains(&format!("rank, 1 to {MAX_RANK}")));
    let flags = named_bits(cell(&rows, 0, "6", 2));
    let code = [
        (FLAG_STORED, "STORED"),
        (FLAG_SCALED, "SCALED"),
        (FLAG_NARROWED, "NARROWED"),
        (FLAG_SHIFTED, "SHIFTED"),
        (FLAG_PLANAR, "PLANAR"),
    ]
    .map(|(flag, name)| (flag.trailing_zeros(), name.to_string()));
    assert_eq!(flags, code, "flag bits");
    let unused = code.len();
    assert!(cell(&rows, 0, "6", 2).ends_with(&format!("bits {unused}-7 zero")));
}

#[test]
fn the_brief_chunk_tables_are_the_pipelines() {
    // The brief header's pipeline byte, in its own table.
    let spec = spec();
    let line = spec[spec.find("## Brief chunks").unwrap()..]
        .lines()
        .find(|l| l.starts_with("| 6 | 1 |"))
        .unwrap();
    assert!(
        line.contains(&format!("bit {}: `u`", BRIEF_UNSHAPED.trailing_zeros())),
        "{line}"
    );
    assert!(line.contains("bits 0-2: compressor `c`"), "{line}");
    let transforms = table("| t | transform |");
    let code_transforms = Transform::ALL;
    assert_eq!(
        ids_in_column(&transforms, 0),
        (0..code_transforms.len() as u32).collect(),
        "transforms"
    );
    let compressors = table("| c | compressor | payload |");
    let names = [
        "none",
        "LZ4",
        "Zstandard",
        "LZMA",
        "bzip2",
        "Bitshuffle",
        "byte delta + Zstandard",
    ];
    let code_compressors = Compressor::ALL;
    assert_eq!(compressors.len(), names.len());
    assert_eq!(code_compressors.len(), names.len());
    for (c, row) in compressors.iter().enumerate() {
        assert_eq!(row[0], c.to_string());
        assert_eq!(row[1], names[c]);
        // The compressor decodes with some transform, and the byte names it.
        let taken: Vec<Transform> = (0..4u8)
            .filter_map(|t| Pipeline::from_byte(c as u8 | t << 4).ok())
            .map(|(p, _)| {
                assert_eq!(p.compressor, code_compressors[c]);
                p.transform
            })
            .collect();
        assert!(!taken.is_empty(), "compressor {c} takes a transform");
        assert!(taken.iter().all(|t| code_transforms.contains(t)));
    }
    let known = names.len() as u8;
    assert!((known..8).all(|c| Pipeline::from_byte(c).is_err()));
    assert!(spec_text().contains(&format!("a compressor above {}", known - 1)));
}

#[test]
fn the_element_kinds_and_versions_are_the_codecs() {
    let kinds = cell(&table("| bits | field |"), 0, "0-3", 1).to_string();
    let listed: Vec<u8> = (0..16u8)
        .filter(|k| kinds.starts_with(&format!("kind: {k} ")) || kinds.contains(&format!(", {k} ")))
        .collect();
    let accepted: Vec<u8> = (0..16u8)
        .filter(|&kind| ElementType::from_byte(kind).is_some())
        .collect();
    assert_eq!(listed, accepted, "element kinds: {kinds}");
    let above = accepted.last().unwrap();
    assert!(spec_text().contains(&format!("an element type with a kind above {above}")));
    let listed: Vec<String> = table("| format version | changes |")
        .iter()
        .map(|row| row[0].clone())
        .collect();
    let mut read: Vec<String> = READ_VERSIONS
        .iter()
        .flat_map(|&(major, newest)| (0..=newest).map(move |minor| format!("{major}.{minor}")))
        .collect();
    read.reverse();
    assert_eq!(listed, read, "the versions decoders read, newest first");
    assert_eq!(
        READ_VERSIONS.map(|(major, _)| major),
        [VERSION_FIXED, 2, VERSION, VERSION_BRIEF, VERSION_ONE_TILE]
    );
}

#[test]
fn the_one_tile_header_table_is_the_codecs_layout() {
    // The table of the one-tile section: its fixed fields are contiguous from 0 to 10.
    let spec = spec();
    let section = &spec[spec.find("## One-tile chunks").unwrap()..];
    let rows = table_in(section, "| offset | size | field |");
    let mut offset = 0;
    for row in rows.iter().take_while(|r| !r[0].is_empty()) {
        assert_eq!(
            row[0],
            offset.to_string(),
            "{:?} starts where the last ends",
            row[2]
        );
        offset += row[1].split(" ").last().unwrap().parse::<usize>().unwrap();
    }
    assert_eq!(offset, 11, "ten fixed bytes and the optional shift byte");
    let field = |at: &str| cell(&rows, 0, at, 2).to_string();
    assert!(field("4").contains(&format!("major version {VERSION_ONE_TILE} in bits 0-3")));
    let flags = named_bits(&field("5"));
    let code = [
        (FLAG_SCALED, "SCALED"),
        (FLAG_NARROWED, "NARROWED"),
        (FLAG_SHIFTED, "SHIFTED"),
        (FLAG_PLANAR, "PLANAR"),
    ]
    .map(|(flag, name)| (flag.trailing_zeros(), name.to_string()));
    assert_eq!(flags, code, "the flag bits of a tiled chunk");
    let tiled = code;
    assert!(field("5").contains(&format!(
        "bit 0 (`STORED`) and bits {}-7 zero",
        tiled.len() + 1
    )));
    assert!(field("7").starts_with("bits 0-1: `log2 W`"));
    assert!(field("7").contains("bit 2: mode (0 fast, 1 archive"));
    // A chunk of one tile written in archive mode: the bytes as the table gives them.
    let shape = [16usize, 64];
    // Series at unrelated levels drifting slowly along time: the tiles code them best.
    let data: Vec<u8> = (0..16 * 64u32)
        .flat_map(|i| {
            let level = (i % 64).wrapping_mul(2_654_435_761) as f32 * 1e-6;
            (level + (i / 64) as f32 * 1.001).to_le_bytes()
        })
        .collect();
    let params = karoo::Params {
        mode: karoo::Mode::Archive,
        ..karoo::Params::new(4, &shape)
    };
    let chunk = karoo::compress(&data, &params).unwrap();
    assert_eq!(chunk[4], VERSION_ONE_TILE);
    assert_eq!(
        (chunk[7], chunk[8], chunk[9]),
        (2 | 4, 2, 0),
        "word byte, rank, time axis"
    );
}
