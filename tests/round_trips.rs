//! Round trips of the core codec: every word size, shape, predictor, residual map,
//! coder and mode decodes bit-exactly to its input.

mod common;

use common::{round_trip, smooth_f32};
use karoo::{compress, decompress, Mode, Params};
use proptest::prelude::*;
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[test]
fn smooth_float32_compresses_and_round_trips() {
    let data = smooth_f32(&[64, 32, 16, 2], 1);
    let packed = round_trip(&data, &Params::new(4, &[64, 32, 16, 2]));
    assert!(
        packed.len() < data.len() * 9 / 10,
        "{} of {}",
        packed.len(),
        data.len()
    );
}

#[test]
fn special_float_bit_patterns_round_trip() {
    let specials: Vec<u32> = vec![
        0x0000_0000,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x7fc0_1234,
        0xffbf_ffff,
        0x7f80_0001,
        0x0000_0001,
        0x807f_ffff,
        0x3f80_0000,
        0xffff_ffff,
    ];
    let data: Vec<u8> = (0..specials.len() * 37)
        .flat_map(|i| specials[(i * 7 + i / 5) % specials.len()].to_le_bytes())
        .collect();
    round_trip(&data, &Params::new(4, &[37, specials.len()]));
    let doubles: Vec<u8> = [
        0.0f64,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::MIN_POSITIVE / 3.0,
        -1e300,
    ]
    .iter()
    .cycle()
    .take(6 * 11)
    .flat_map(|v| v.to_le_bytes())
    .chain(0x7ff8_dead_beef_0001u64.to_le_bytes())
    .collect();
    round_trip(&doubles, &Params::new(8, &[67]));
}

#[test]
fn every_word_size_round_trips() {
    let mut rng = SmallRng::seed_from_u64(7);
    for w in [1usize, 2, 4, 8] {
        for n in [0usize, 1, 2, 3, 17, 1000] {
            let data: Vec<u8> = (0..n * w)
                .map(|i| (i / 3) as u8 ^ rng.gen_range(0..4))
                .collect();
            round_trip(&data, &Params::new(w, &[n]));
        }
    }
}

/// Regression (found by the roundtrip fuzzer): a zero-length innermost dimension made
/// the encoder record a Lorenzo run of 0, which the decoder rejects.
#[test]
fn empty_chunks_of_any_shape_round_trip() {
    for shape in [
        vec![3, 0],
        vec![0, 5],
        vec![2, 0, 2],
        vec![0],
        vec![4, 1, 0],
    ] {
        for time_axis in 0..shape.len() {
            let params = Params {
                time_axis,
                ..Params::new(4, &shape)
            };
            round_trip(&[], &params);
        }
    }
}

#[test]
fn large_chunks_use_row_and_column_tiles() {
    // Narrow rows (row tiles), wide rows (column tiles), many tiny planes, ragged lag.
    let cases: Vec<(Vec<usize>, usize, usize)> = vec![
        (vec![4096, 64], 0, 0),
        (vec![8, 65536], 0, 0),
        (vec![300, 2000], 0, 0),
        (vec![50_000, 3], 1, 0),
        (vec![700, 1000], 0, 3000),
    ];
    for (shape, time_axis, lag) in cases {
        let data = smooth_f32(&shape, 3);
        let params = Params {
            time_axis,
            lag,
            ..Params::new(4, &shape)
        };
        round_trip(&data, &params);
    }
}

#[test]
fn regions_pass_through_init_once_each_before_they_are_decoded_into() {
    use std::sync::Mutex;
    // Row tiles, column tiles (row pieces), a ragged lag, a stored (random) chunk.
    let mut random = vec![0u8; 40_000];
    SmallRng::seed_from_u64(9).fill(&mut random[..]);
    let cases: Vec<(Vec<u8>, Params)> = vec![
        (smooth_f32(&[4096, 64], 3), Params::new(4, &[4096, 64])),
        (smooth_f32(&[8, 65536], 3), Params::new(4, &[8, 65536])),
        (
            smooth_f32(&[700, 1000], 3),
            Params {
                lag: 3000,
                ..Params::new(4, &[700, 1000])
            },
        ),
        (random.clone(), Params::new(4, &[10_000])),
    ];
    for (data, params) in cases {
        let packed = compress(&data, &params).unwrap();
        let chunk = karoo::Chunk::parse(&packed, u64::MAX).unwrap();
        for threads in [1, 2] {
            // Bytes not yet through `init` hold a marker the decoder must never see.
            let mut out = vec![0xA5u8; data.len()];
            let seen = Mutex::new(Vec::new());
            chunk
                .decode_into_regions(&mut out, threads, |region: &mut [u8]| {
                    assert!(
                        region.iter().all(|&b| b == 0xA5),
                        "a region went through init twice"
                    );
                    let start = region.as_ptr() as usize;
                    seen.lock().unwrap().push((start, region.len()));
                    region.fill(0);
                    region
                })
                .unwrap();
            assert_eq!(out, data);
            let mut seen = seen.into_inner().unwrap();
            seen.sort_unstable();
            let base = out.as_ptr() as usize;
            let mut next = base;
            for (start, len) in seen {
                assert_eq!(start, next, "regions are disjoint and cover the output");
                next = start + len;
            }
            assert_eq!(next, base + out.len());
        }
    }
}

#[test]
fn random_bytes_are_stored_verbatim_with_a_small_header() {
    let mut rng = SmallRng::seed_from_u64(11);
    let data: Vec<u8> = (0..100_000).map(|_| rng.gen()).collect();
    let packed = round_trip(&data, &Params::new(4, &[25_000]));
    // A brief chunk: magic, version, element type, pipeline, rank (8 bytes), the shape
    // 25000 (3 bytes), the checksum (4): 15 bytes.
    assert_eq!(packed.len(), data.len() + 15);
    assert_eq!(&packed[..8], b"KARO\x04\x00\x80\x01");
    assert_eq!(&packed[15..], &data[..]);
}

#[test]
fn a_tiny_chunk_is_stored_behind_twelve_bytes() {
    let mut rng = SmallRng::seed_from_u64(12);
    let data: Vec<u8> = (0..32).map(|_| rng.gen()).collect();
    // The shape's 5 varints take more bytes than the decoded size's one: the header
    // records the size behind the unshaped bit, with no rank byte: magic, version 4.1,
    // element type, pipeline (8-byte words, stored, unshaped), the size 32, the checksum.
    let packed = round_trip(&data, &Params::new(8, &[1, 1, 1, 2, 2]));
    assert_eq!(packed.len(), data.len() + 12);
    assert_eq!(&packed[..8], b"KARO\x14\x00\xc8\x20");
    assert_eq!(&packed[12..], &data[..]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_words_any_geometry_round_trip(
        word in prop::sample::select(vec![1usize, 2, 4, 8]),
        dims in prop::collection::vec(1usize..9, 1..5),
        axis_seed in 0usize..8,
        lag_seed in 0usize..64,
        archive in any::<bool>(),
        bytes in prop::collection::vec(any::<u8>(), 0..4096),
    ) {
        let words: usize = dims.iter().product();
        let data: Vec<u8> = bytes.iter().cycle().take(words * word).copied().collect();
        let time_axis = axis_seed % dims.len();
        let plane: usize = dims[time_axis..].iter().product();
        let lag = if lag_seed % 3 == 0 { 0 } else { 1 + lag_seed % plane };
        let mode = if archive { Mode::Archive } else { Mode::Fast };
        let params = Params { time_axis, lag, mode, ..Params::new(word, &dims) };
        let data = if bytes.is_empty() { vec![0; words * word] } else { data };
        let packed = compress(&data, &params).unwrap();
        prop_assert_eq!(decompress(&packed).unwrap(), data);
    }
}

/// Every predictor, residual map and coder, on float32, float64 and int16 data with
/// special values, complex components, a time axis other than 0 and a ragged lag.
#[test]
fn every_predictor_map_and_coder_round_trips() {
    use karoo::{Coder, Predictor, ResidualMap};
    let coders: Vec<Coder> = match std::env::var("KAROO_TEST_CODERS") {
        Ok(ids) => ids
            .split(',')
            .filter_map(|id| Coder::from_id(id.parse().ok()?))
            .collect(),
        Err(_) => Coder::ALL.to_vec(),
    };
    let mut f32s = smooth_f32(&[40, 6, 5, 2], 21);
    for (i, special) in [0x7fc0_1234u32, 0x8000_0000, 0x7f80_0000, 1]
        .iter()
        .enumerate()
    {
        f32s[i * 97 * 4..i * 97 * 4 + 4].copy_from_slice(&special.to_le_bytes());
    }
    let f64s: Vec<u8> = f32s
        .chunks_exact(4)
        .flat_map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())).to_le_bytes())
        .collect();
    let i16s: Vec<u8> = (0..40 * 60)
        .flat_map(|i: i32| ((i % 60) * 100 + i / 60 - 3000).to_le_bytes()[..2].to_vec())
        .collect();
    let cases: Vec<(&[u8], Params)> = vec![
        (
            &f32s,
            Params {
                components: 2,
                ..Params::new(4, &[40, 6, 5, 2])
            },
        ),
        (
            &f32s,
            Params {
                time_axis: 1,
                ..Params::new(4, &[40, 6, 5, 2])
            },
        ),
        (
            &f64s,
            Params {
                lag: 7,
                ..Params::new(8, &[40, 6, 5, 2])
            },
        ),
        (&i16s, Params::new(2, &[40, 60])),
    ];
    let predictors = Predictor::ALL.into_iter().chain([Predictor::Zero]);
    for (data, base) in &cases {
        for predictor in predictors.clone() {
            for map in ResidualMap::ALL {
                for &coder in &coders {
                    let params = Params {
                        predictor: Some(predictor),
                        residual_map: Some(map),
                        coder: Some(coder),
                        ..base.clone()
                    };
                    let packed = compress(data, &params).unwrap();
                    let back = decompress(&packed).unwrap_or_else(|e| panic!("{params:?}: {e}"));
                    assert!(back == *data, "{params:?}");
                }
            }
        }
    }
}

/// Archive mode: bit-exact on special values in every tile shape, smaller than fast mode
/// on smooth data, and the value dictionary for data with few distinct values.
#[test]
fn archive_mode_round_trips_and_uses_the_dictionary_for_few_values() {
    use karoo::{Coder, Mode};
    let archive = |p: Params| Params {
        mode: Mode::Archive,
        ..p
    };
    let mut smooth = smooth_f32(&[64, 1000, 2], 5);
    for (i, special) in [0x7fc0_1234u32, 0x8000_0000, 0x7f80_0000, 1, 0xff80_0000]
        .iter()
        .enumerate()
    {
        smooth[i * 4001 * 4..i * 4001 * 4 + 4].copy_from_slice(&special.to_le_bytes());
    }
    let complex = Params {
        components: 2,
        ..Params::new(4, &[64, 1000, 2])
    };
    for threads in [1, 2] {
        let params = archive(Params {
            threads,
            ..complex.clone()
        });
        let packed = compress(&smooth, &params).unwrap();
        assert_eq!(decompress(&packed).unwrap(), smooth);
        let fast = compress(&smooth, &complex).unwrap();
        assert!(
            packed.len() < fast.len(),
            "{} vs {}",
            packed.len(),
            fast.len()
        );
    }
    // 12 levels of a quantised signal, in random order: no time correlation at all.
    let mut rng = SmallRng::seed_from_u64(8);
    let levels: Vec<f32> = (0..12).map(|i| i as f32 * 0.37 - 2.0).collect();
    let few: Vec<u8> = (0..64 * 1000)
        .flat_map(|_| levels[rng.gen_range(0..12)].to_le_bytes())
        .collect();
    let plain = archive(Params::new(4, &[64, 1000]));
    let packed = compress(&few, &plain).unwrap();
    assert_eq!(decompress(&packed).unwrap(), few);
    let without = compress(
        &few,
        &Params {
            coder: Some(Coder::ContextAns),
            ..plain.clone()
        },
    )
    .unwrap();
    // log2(12) = 3.58 bits per value: Huffman on 12 symbols needs ~3.6.
    assert!(packed.len() * 8 < 64 * 1000 * 37 / 10, "{}", packed.len());
    assert!(
        packed.len() * 3 < without.len() * 2,
        "{} vs {}",
        packed.len(),
        without.len()
    );
}
