//! Effort levels: every level round-trips bit for bit in both modes; level 0 is the
//! default level; archive mode's default levels are never larger than Zstandard 3 on the
//! whole chunk; level 9, which codes every general-purpose coder in full on each tile, is
//! never larger than the default level, nor than a tile coded by one of those coders on
//! the words as they are.

mod common;

use common::{noise_u32, smooth_f32};
use karoo::{
    compress, decompress, Coder, ElementType, Mode, Params, Predictor, ResidualMap, TypeKind,
    DEFAULT_LEVEL, MAX_LEVEL,
};

/// Chunks of the kinds the levels choose between: smooth series (prediction wins), noise
/// (nothing wins: stored), repeated blocks and duplicated values (general-purpose coders
/// on the words win), flags (bit shuffles win).
fn workloads() -> Vec<(&'static str, Vec<u8>, Vec<usize>)> {
    let smooth = smooth_f32(&[32, 64, 2], 3);
    let noise = noise_u32(32 * 128, 7);
    let repeats: Vec<u8> = noise[..1024].repeat(16);
    let duplicated: Vec<u8> = smooth
        .chunks_exact(8)
        .flat_map(|pair| [&pair[..4], &pair[..4]].concat())
        .collect();
    let flags: Vec<u8> = (0..4096u32)
        .flat_map(|i| f32::from(u8::from(i % 97 < 3)).to_le_bytes())
        .collect();
    vec![
        ("smooth", smooth, vec![32, 64, 2]),
        ("noise", noise, vec![32, 128]),
        ("repeats", repeats, vec![32, 128]),
        ("duplicated", duplicated, vec![32, 64, 2]),
        ("flags", flags, vec![64, 64]),
    ]
}

/// Whether a workload of `shape` holds complex numbers (a last axis of 2), and its
/// element type: complex, else float.
fn element_of(shape: &[usize]) -> (bool, ElementType) {
    let complex = shape.last() == Some(&2);
    let kind = if complex {
        TypeKind::Complex
    } else {
        TypeKind::Float
    };
    (
        complex,
        ElementType {
            kind,
            ..ElementType::default()
        },
    )
}

fn at_level(mode: Mode, level: u8, shape: &[usize]) -> Params {
    Params {
        mode,
        level,
        threads: 1,
        ..Params::new(4, shape)
    }
}

#[test]
fn every_level_round_trips_in_both_modes() {
    for (name, data, shape) in workloads() {
        for mode in Mode::ALL {
            for level in 0..=MAX_LEVEL {
                let chunk = compress(&data, &at_level(mode, level, &shape)).unwrap();
                assert_eq!(decompress(&chunk).unwrap(), data, "{name} {mode:?} {level}");
                assert!(chunk.len() <= data.len() + 64, "{name} {mode:?} {level}");
            }
        }
    }
}

#[test]
fn level_0_is_the_default_level() {
    for (name, data, shape) in workloads() {
        for mode in Mode::ALL {
            assert_eq!(
                compress(&data, &at_level(mode, 0, &shape)).unwrap(),
                compress(&data, &at_level(mode, DEFAULT_LEVEL, &shape)).unwrap(),
                "{name} {mode:?}"
            );
        }
    }
}

/// The bytes of `data` in `unit`-byte units, byte shuffled: byte `b` of unit `i` at
/// offset `b n + i`.
fn byte_shuffled(data: &[u8], unit: usize) -> Vec<u8> {
    (0..unit)
        .flat_map(|b| data.chunks_exact(unit).map(move |u| u[b]))
        .collect()
}

/// Archive mode's default levels code a chunk of up to 128 KiB (its own sample) with
/// Zstandard 3 after no shuffle and after each byte shuffle, and keep the smallest of
/// those when it is smaller than the rest: no chunk is larger than the brief chunk of
/// any of them.
#[test]
fn archive_default_levels_are_never_larger_than_zstandard_3_on_the_whole_chunk() {
    use karoo::internals::{brief_chunk, Compressor, Pipeline, Transform};
    for (name, data, shape) in workloads() {
        let (complex, element) = element_of(&shape);
        let words: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let mut transforms = vec![(Transform::None, 1), (Transform::Words, 4)];
        if complex {
            transforms.push((Transform::Elements, 8));
        }
        let zstd3 = transforms
            .into_iter()
            .map(|(transform, unit)| {
                let frame = zstd::bulk::compress(&byte_shuffled(&data, unit), 3).unwrap();
                let pipeline = Pipeline {
                    transform,
                    compressor: Compressor::Zstd,
                };
                brief_chunk(&data, 4, &words, element, pipeline, Some(frame))
                    .expect("a brief chunk")
                    .len()
            })
            .min()
            .unwrap();
        for level in [0, 4, 5, 6] {
            let params = Params {
                components: if complex { 2 } else { 1 },
                element_type: element,
                ..at_level(Mode::Archive, level, &shape)
            };
            let chunk = compress(&data, &params).unwrap();
            assert!(
                chunk.len() <= zstd3,
                "{name} level {level}: {} > Zstandard 3's {zstd3}",
                chunk.len()
            );
        }
    }
}

#[test]
fn level_9_is_never_larger_than_the_default_or_a_generic_coding_of_the_words() {
    for (name, data, shape) in workloads() {
        for (mode, generic) in [
            (Mode::Fast, [Coder::ShuffledLz4, Coder::BitshuffledLz4]),
            (Mode::Archive, [Coder::ShuffledZstd, Coder::BitshuffledZstd]),
        ] {
            let smallest = compress(&data, &at_level(mode, MAX_LEVEL, &shape))
                .unwrap()
                .len();
            let default = compress(&data, &at_level(mode, 0, &shape)).unwrap().len();
            assert!(
                smallest <= default,
                "{name} {mode:?}: level 9 {smallest} > default {default}"
            );
            for coder in generic {
                // The words as they are: no prediction, XOR with nothing.
                let words = Params {
                    predictor: Some(Predictor::Zero),
                    residual_map: Some(ResidualMap::Xor),
                    coder: Some(coder),
                    ..at_level(mode, 0, &shape)
                };
                let generic_len = compress(&data, &words).unwrap().len();
                assert!(
                    smallest <= generic_len,
                    "{name} {mode:?}: level 9 {smallest} > {coder:?} on the words {generic_len}"
                );
            }
        }
    }
}

#[test]
fn low_levels_skip_the_general_purpose_trials() {
    // Repeated blocks of noise: only a general-purpose coder finds the repeats.
    let (_, data, shape) = workloads().swap_remove(2);
    let lean = compress(&data, &at_level(Mode::Archive, 1, &shape)).unwrap();
    let default = compress(&data, &at_level(Mode::Archive, 0, &shape)).unwrap();
    assert!(
        default.len() * 4 < lean.len(),
        "default {} lean {}",
        default.len(),
        lean.len()
    );
}

/// The Bitshuffle filter's coding is a candidate of every default and higher level in
/// both modes, coded whole on chunks that are their own sample (below 32 KiB in fast mode,
/// up to 128 KiB in archive mode; every workload here is 16 KiB): no such chunk
/// is larger than the brief chunk of that coding (of elements for complex data, as the
/// filter sees them, else of words).
#[test]
fn default_levels_are_never_larger_than_the_bitshuffle_coding() {
    use karoo::internals::{brief_chunk, Compressor, Pipeline, Transform};
    for (name, data, shape) in workloads() {
        let (complex, element) = element_of(&shape);
        let pipeline = Pipeline {
            transform: if complex {
                Transform::Elements
            } else {
                Transform::Words
            },
            compressor: Compressor::Bitshuffle,
        };
        let words: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let bitshuffle = brief_chunk(&data, 4, &words, element, pipeline, None)
            .expect("a Bitshuffle chunk")
            .len();
        for mode in Mode::ALL {
            for level in [0, 4, 6, 8, MAX_LEVEL] {
                let params = Params {
                    components: if complex { 2 } else { 1 },
                    element_type: element,
                    ..at_level(mode, level, &shape)
                };
                let chunk = compress(&data, &params).unwrap();
                assert!(
                    chunk.len() <= bitshuffle,
                    "{name} {mode:?} {level}: {} > Bitshuffle's {bitshuffle}",
                    chunk.len()
                );
            }
        }
    }
}

/// Archive mode's level 9 codes every whole-chunk pipeline of the mode in full, so it is
/// never larger than any of them: Zstandard, byte delta + Zstandard, LZMA and bzip2 after
/// no shuffle and after each byte shuffle (of words, and of complex elements).
#[test]
fn archive_level_9_is_never_larger_than_any_whole_chunk_pipeline() {
    use karoo::internals::{brief_chunk, Compressor, Pipeline, Transform};
    for (name, data, shape) in workloads() {
        let (complex, element) = element_of(&shape);
        let params = Params {
            components: if complex { 2 } else { 1 },
            element_type: element,
            ..at_level(Mode::Archive, MAX_LEVEL, &shape)
        };
        let smallest = compress(&data, &params).unwrap().len();
        let words: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let transforms: &[Transform] = if complex {
            &[Transform::None, Transform::Words, Transform::Elements]
        } else {
            &[Transform::None, Transform::Words]
        };
        for compressor in [
            Compressor::Zstd,
            Compressor::ByteDeltaZstd,
            Compressor::Lzma,
            Compressor::Bzip2,
        ] {
            for &transform in transforms {
                let pipeline = Pipeline {
                    transform,
                    compressor,
                };
                let whole = brief_chunk(&data, 4, &words, element, pipeline, None)
                    .expect("a brief chunk")
                    .len();
                assert!(
                    smallest <= whole,
                    "{name}: level 9 {smallest} > {} {whole}",
                    pipeline.name()
                );
            }
        }
    }
}
