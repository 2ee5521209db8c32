//! docs/format.md against the code: the id tables and the id ranges the specification
//! states are those the codec defines, so a decoder written from the specification
//! accepts every chunk the encoder writes.

use karoo::{Coder, Predictor, ResidualMap};
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
    let spec = spec();
    let mut lines = spec.lines().skip_while(|l| l.trim() != header);
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
