//! Determinism: the bytes of a chunk do not depend on the thread count or on how
//! the chunk is assembled.

mod common;

use common::{smooth_f32, widened};
use karoo::{compress, compress_parts, decompress, decompress_with, Params};
use rand::{rngs::SmallRng, Rng, SeedableRng};

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

/// Archive mode decides between codings by coding a chunk (or a part of it) several
/// ways, in parallel when it has threads: as planes or interleaved, as scaled integers or
/// floats, as a tile per baseline or one tile. Whatever the thread count, the same bytes.
#[test]
fn archive_output_does_not_depend_on_thread_count() {
    use karoo::Mode;
    // Spectra of integers times a scale per spectrum (scaled integers win).
    let scaled: Vec<u8> = (0..16 * 8 * 256)
        .flat_map(|i: usize| {
            let scale = 1.0e-3 * (1 + i / 256 % 7) as f32;
            let q = ((i % 256) as f32 * 0.05).sin() * 9000.0 + (i * 37 % 101) as f32;
            ((q as i16) as f32 * scale).to_le_bytes()
        })
        .collect();
    // Real parts smooth, imaginary parts small noise: coded smaller as planes.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let unlike: Vec<u8> = (0..16 * 512)
        .flat_map(|i: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let re = 1000.0 + (i as f32 * 0.01).sin() * 50.0;
            let im = (state % 1000) as f32 * 1.0e-6;
            [re.to_le_bytes(), im.to_le_bytes()].concat()
        })
        .collect();
    let cases = [
        (unlike, vec![16, 512, 2], 2, 4),
        // Sampled: the planes are tried on a part of the chunk.
        (smooth_f32(&[1, 4096, 16, 2], 7), vec![1, 4096, 16, 2], 2, 4),
        // Small: both layouts coded whole.
        (smooth_f32(&[4, 64, 2], 8), vec![4, 64, 2], 2, 4),
        // Three baselines: a tile each or one tile, tried on the middle tile.
        (smooth_f32(&[16, 3, 1024, 2], 9), vec![16, 3, 1024, 2], 2, 4),
        (scaled, vec![16, 8, 256], 1, 4),
        // float64 words that hold float32 values: narrowed.
        (
            widened(&smooth_f32(&[8, 4096, 2], 10)),
            vec![8, 4096, 2],
            2,
            8,
        ),
    ];
    let mut flags_seen = 0;
    for (data, shape, components, word) in cases {
        let outputs: Vec<Vec<u8>> = [1usize, 2, 3, 0]
            .iter()
            .map(|&threads| {
                let params = Params {
                    threads,
                    components,
                    mode: Mode::Archive,
                    ..Params::new(word, &shape)
                };
                compress(&data, &params).unwrap()
            })
            .collect();
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{shape:?}");
        flags_seen |= karoo::internals::Header::parse(&outputs[0], u64::MAX)
            .unwrap()
            .0
            .flags;
        // Decoded (planes joined piece by piece) on any number of threads.
        for threads in [1, 2, 3] {
            let decoded = decompress_with(&outputs[0], u64::MAX, threads).unwrap();
            assert_eq!(decoded, data, "{shape:?}, {threads} threads");
        }
    }
    // The cases cover planes (flag 16), scaled integers (2) and narrowed words (4).
    assert_eq!(flags_seen & (16 | 4 | 2), 16 | 4 | 2, "{flags_seen:#x}");
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
    // One thread codes a chunk of 1 MiB or more straight into one buffer: one part.
    let parallel = karoo::threads::effective_threads(0) > 1;
    for (data, params, count) in cases {
        let whole = compress(&data, &params).unwrap();
        let packed = compress_parts(&data, &params).unwrap();
        let count = if parallel || data.len() < 1 << 20 {
            count
        } else {
            1
        };
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

/// Complex values of `times` rows of `channels`, whose real parts are smooth along time
/// (and unrelated from channel to channel) and imaginary parts small noise: coded
/// smaller as planes, along time.
fn smooth_real_noisy_imaginary(times: usize, channels: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..times * channels)
        .flat_map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (t, channel) = (i / channels, i % channels);
            let level = (channel as u32).wrapping_mul(2_654_435_761) as f32 * 1e-6;
            let re = level * (1.0 + t as f32 * 1e-3);
            let im = (state % 1000) as f32 * 1.0e-6;
            [re.to_le_bytes(), im.to_le_bytes()].concat()
        })
        .collect()
}

/// A chunk coded as planes decodes the same on any thread count, whether its tiles span
/// whole rows or split them by columns (the decoder joins each tile's planes as soon as
/// they are decoded), and a corrupted tile is an error whatever the thread count.
#[test]
fn planar_chunks_decode_alike_on_any_thread_count() {
    use karoo::Mode;
    // (shape, whether the tiles span whole rows)
    for (shape, whole_rows) in [(vec![2048, 256, 2], true), (vec![16, 16384, 2], false)] {
        let data = smooth_real_noisy_imaginary(shape[0], shape[1]);
        let params = Params {
            components: 2,
            mode: Mode::Archive,
            ..Params::new(4, &shape)
        };
        let packed = compress(&data, &params).unwrap();
        let header = karoo::internals::Header::parse(&packed, u64::MAX)
            .unwrap()
            .0;
        assert!(header.is_planar(), "{shape:?} coded as planes");
        assert!(
            header.tile_sizes.len() >= 4,
            "{shape:?}: several tiles per plane"
        );
        assert_eq!(
            header.tiling.tile_cols as u64 >= header.lag,
            whole_rows,
            "{shape:?}: {:?}, lag {}",
            header.tiling,
            header.lag
        );
        let mut corrupt = packed.clone();
        let at = corrupt.len() - 40;
        corrupt[at] ^= 0x5a;
        for threads in [1, 2, 3] {
            let decoded = decompress_with(&packed, u64::MAX, threads).unwrap();
            assert!(decoded == data, "{shape:?} on {threads} threads");
            assert!(
                decompress_with(&corrupt, u64::MAX, threads).is_err(),
                "{shape:?} corrupted, on {threads} threads"
            );
        }
    }
}
