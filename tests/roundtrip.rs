//! Round-trip, determinism and error-message tests of the core codec.

use karoo::{compress, compress_parts, decompress, decompress_with, Error, Mode, Params};
use proptest::prelude::*;
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// A smooth, noisy float32 time series stack of `shape` (time axis 0), as bytes.
fn smooth_f32(shape: &[usize], seed: u64) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let lag: usize = shape[1..].iter().product();
    let n: usize = shape.iter().product();
    let base: Vec<f32> = (0..lag).map(|_| rng.gen_range(-100.0..100.0)).collect();
    (0..n)
        .flat_map(|i| {
            let t = (i / lag) as f32;
            let v = base[i % lag] * (1.0 + 0.01 * (t * 0.1).sin()) + rng.gen_range(-0.01..0.01);
            v.to_le_bytes()
        })
        .collect()
}

fn round_trip(data: &[u8], params: &Params) -> Vec<u8> {
    let packed = compress(data, params).expect("compress");
    let back = decompress(&packed).expect("decompress");
    assert_eq!(back, data, "round trip of {params:?}");
    packed
}

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
fn output_does_not_depend_on_thread_count() {
    let data = smooth_f32(&[16, 40000], 5);
    let outputs: Vec<Vec<u8>> = [1usize, 2, 3, 8, 0]
        .iter()
        .map(|&threads| {
            compress(
                &data,
                &Params {
                    threads,
                    ..Params::new(4, &[16, 40000])
                },
            )
            .unwrap()
        })
        .collect();
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
    for threads in [1, 2, 8] {
        assert_eq!(
            decompress_with(&outputs[0], u64::MAX, threads).unwrap(),
            data
        );
    }
}

#[test]
fn a_chunk_in_parts_is_the_header_then_each_tile_in_order() {
    // 16 tiles of 128K words; a single tile; incompressible bytes (stored, one part).
    let mut rng = SmallRng::seed_from_u64(5);
    let noise: Vec<u8> = (0..40_000).map(|_| rng.gen()).collect();
    let cases = [
        (
            smooth_f32(&[64, 32768], 2),
            Params::new(4, &[64, 32768]),
            17,
        ),
        (smooth_f32(&[8, 64], 4), Params::new(4, &[8, 64]), 2),
        (noise, Params::new(4, &[10_000]), 1),
    ];
    for (data, params, count) in cases {
        let whole = compress(&data, &params).unwrap();
        let packed = compress_parts(&data, &params).unwrap();
        assert_eq!(packed.parts().count(), count);
        assert_eq!(packed.len(), whole.len());
        assert_eq!(packed.parts().collect::<Vec<_>>().concat(), whole);
        assert_eq!(packed.into_vec(), whole);
        // One thread codes the tiles straight into one buffer: the same bytes.
        let one = Params {
            threads: 1,
            ..params
        };
        assert_eq!(compress(&data, &one).unwrap(), whole);
    }
}

/// Archive mode tries other codings of a tile and keeps the smallest: coded into one
/// buffer one tile after another (one thread), a replaced coding leaves nothing behind.
#[test]
fn tiles_coded_into_one_buffer_equal_their_parts_whatever_coding_wins() {
    use karoo::Mode;
    let mut rng = SmallRng::seed_from_u64(12);
    let levels: Vec<f32> = (0..12).map(|i| i as f32 * 0.37 - 2.0).collect();
    // Rows of few levels (the dictionary wins) between smooth rows, in many tiles.
    let smooth = smooth_f32(&[64, 70_000], 3);
    let mixed: Vec<u8> = smooth
        .chunks(4)
        .enumerate()
        .flat_map(|(i, word)| {
            if (i % 70_000) / 9_000 % 2 == 1 {
                levels[rng.gen_range(0..12)].to_le_bytes().to_vec()
            } else {
                word.to_vec()
            }
        })
        .collect();
    for mode in [Mode::Fast, Mode::Archive] {
        let params = Params {
            mode,
            ..Params::new(4, &[64, 70_000])
        };
        let parts = compress_parts(&mixed, &params).unwrap();
        assert!(parts.parts().count() > 8, "{}", parts.parts().count());
        let joined = compress(
            &mixed,
            &Params {
                threads: 1,
                ..params
            },
        )
        .unwrap();
        assert_eq!(joined, parts.into_vec(), "{mode:?}");
        assert_eq!(decompress(&joined).unwrap(), mixed);
    }
}

#[test]
fn random_bytes_are_stored_verbatim_with_a_small_header() {
    let mut rng = SmallRng::seed_from_u64(11);
    let data: Vec<u8> = (0..100_000).map(|_| rng.gen()).collect();
    let packed = round_trip(&data, &Params::new(4, &[25_000]));
    assert_eq!(packed.len(), data.len() + 84 + 8 + 4);
}

#[test]
fn bad_parameters_give_clear_errors() {
    let data = vec![0u8; 24];
    let msg = |p: Params| compress(&data, &p).unwrap_err().to_string();
    assert_eq!(
        msg(Params::new(3, &[8])),
        "karoo: invalid parameters: word size 3 is not 1, 2, 4 or 8"
    );
    assert_eq!(
        msg(Params::new(4, &[5])),
        "karoo: invalid parameters: shape [5] holds 5 words but the buffer holds 6"
    );
    assert_eq!(
        msg(Params {
            time_axis: 2,
            ..Params::new(4, &[2, 3])
        }),
        "karoo: invalid parameters: time axis 2 is out of range for rank 2"
    );
    assert_eq!(
        msg(Params {
            threads: 1_000_000_000,
            ..Params::new(4, &[6])
        }),
        "karoo: invalid parameters: 1000000000 threads requested, at most 1024 allowed"
    );
}

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
        "karoo: unsupported chunk format version 9 (this build reads version 1)"
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
/// on smooth data, and seed 003's value dictionary for data with few distinct values.
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

/// Two tiles swapped, with a header rewritten to match (so its own checksum passes):
/// only the checksum of the decoded data can notice, and it must.
#[test]
fn swapped_tiles_with_a_consistent_header_are_rejected() {
    use karoo::format::Header;
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
    use karoo::format::Header;
    use karoo::Mode;
    let data = smooth_f32(&[8, 65536], 3);
    let params = Params {
        mode: Mode::Archive,
        ..Params::new(4, &[8, 65536])
    };
    let packed = compress(&data, &params).unwrap();
    let (mut header, len) = Header::parse(&packed, u64::MAX).unwrap();
    let tiles = header.tile_sizes.len();
    assert!(tiles >= 2, "the chunk must have several tiles");
    // One tile claiming the whole chunk, with every payload behind it.
    header.tiling.tile_cols *= tiles;
    header.tile_sizes = vec![header.tile_sizes.iter().sum()];
    let mut forged = Vec::new();
    header.write(&mut forged);
    forged.extend_from_slice(&packed[len..]);
    assert_eq!(
        decompress(&forged).unwrap_err().to_string(),
        format!(
            "karoo: corrupt chunk: tile dimensions 1x8x{} hold more than 131072 words",
            16384 * tiles
        )
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
    use karoo::format::{data_checksum, digest_rows};
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
