//! The paths that make karoo compress data of any shape: prediction along whichever
//! axis is smoothest, scaled integers, the general-purpose coders. Each test checks the
//! path is taken (from the chunk's own header) and that the chunk round-trips exactly.

mod common;

use common::{noise_u32, round_trip, widened};
use karoo::internals::Header;
use karoo::{compress, decompress, Coder, ElementKind, ElementType, Mode, Params, TypeKind};

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// The chunk's header and its length (the scale section, if any, follows it).
fn header(chunk: &[u8]) -> (Header, usize) {
    Header::parse(chunk, u64::MAX).unwrap()
}

/// The flags (less `PLANAR`) and the shift a chunk's header records, in any version.
fn flags_and_shift(chunk: &[u8]) -> (u8, u8) {
    let (header, _) = header(chunk);
    (header.flags & !PLANAR, header.shift)
}

/// (time axis, flags, coder byte of every tile) a chunk's header records.
fn recorded(chunk: &[u8]) -> (u8, u8, Vec<u8>) {
    let (header, mut at) = header(chunk);
    if header.flags & 2 != 0 {
        // Scale section: 16 fixed bytes, the coded scales, an 8-byte checksum.
        at += 16 + u32_at(chunk, at + 12) as usize + 8;
    }
    let mut coders = Vec::new();
    for size in &header.tile_sizes {
        coders.push(chunk[at + 1] & 15);
        at += *size as usize;
    }
    (header.time_axis, header.flags, coders)
}

/// Header flag: the components are coded as planes.
const PLANAR: u8 = 16;

fn params(word: usize, shape: &[usize], mode: Mode) -> Params {
    let mut p = Params::new(word, shape);
    p.mode = mode;
    p
}

/// One integration of a complex64 spectrum (time 1, channel, polarisation, component),
/// smooth along channels.
fn one_dump(channels: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for ch in 0..channels {
        for pol in 0..4 {
            for part in 0..2 {
                let v = (ch as f32 * 0.003 + pol as f32).sin() * 50.0
                    + part as f32 * 3.0
                    + ((ch * 7 + pol) % 13) as f32 * 1e-4;
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    out
}

#[test]
fn one_time_step_chunks_are_predicted_along_frequency() {
    let data = one_dump(4096);
    let shape = [1, 4096, 4, 2];
    for mode in [Mode::Fast, Mode::Archive] {
        let mut p = params(4, &shape, mode);
        p.components = 2;
        let chunk = round_trip(&data, &p);
        let (axis, flags, _) = recorded(&chunk);
        // Planes record the axis in the coded array, whose first axis is the components'.
        let planar = flags & PLANAR != 0;
        assert_eq!(
            (axis - u8::from(planar), flags & 1),
            (1, 0),
            "{mode:?}: frequency axis, not stored"
        );
        assert!(
            chunk.len() < data.len() / 2,
            "{mode:?}: {} bytes",
            chunk.len()
        );
    }
}

/// Spectra of 16-bit integers times one float32 scale per spectrum, as spectrometers
/// write them: (time, baseline, channel).
fn scaled_spectra(times: usize, baselines: usize, channels: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for t in 0..times {
        for b in 0..baselines {
            let scale = 1.0e-3 * (1.0 + ((t * 31 + b * 17) % 97) as f32 / 97.0);
            for c in 0..channels {
                let shape = ((c as f32 / channels as f32) * 6.0).sin() * 12_000.0;
                let q = (shape + ((t * 131 + b * 71 + c * 29) % 401) as f32 - 200.0) as i16;
                out.extend_from_slice(&(f32::from(q) * scale).to_le_bytes());
            }
        }
    }
    out
}

#[test]
fn scaled_integer_spectra_are_coded_as_integers() {
    // 128 KiB, coded both ways whole; 512 KiB, which fast mode first codes both ways on
    // its first eighth.
    for times in [16, 64] {
        let shape = [times, 8, 256];
        let data = scaled_spectra(times, 8, 256);
        check_scaled_spectra(&shape, &data);
    }
}

#[test]
fn scaled_spectra_with_flagged_band_edges_are_coded_as_integers() {
    // The first and last 80 of 256 channels flagged (zero): every group, and every probe
    // of the chunk, begins with a run of zeros, which are a multiple of any scale.
    for times in [16, 64] {
        let shape = [times, 8, 256];
        let mut data = scaled_spectra(times, 8, 256);
        for (k, word) in data.chunks_exact_mut(4).enumerate() {
            if !(80..176).contains(&(k % 256)) {
                word.fill(0);
            }
        }
        check_scaled_spectra(&shape, &data);
    }
}

/// Checks that `data` of `shape` is coded as scaled integers in both modes, as words of
/// no recorded type and as complex numbers (pairs of words: the element type's bits in a
/// one-tile chunk's header are not flags).
fn check_scaled_spectra(shape: &[usize], data: &[u8]) {
    let mut pairs = shape.to_vec();
    *pairs.last_mut().unwrap() /= 2;
    pairs.push(2);
    for mode in [Mode::Fast, Mode::Archive] {
        let plain = {
            let mut p = params(4, shape, mode);
            p.element = ElementKind::Other;
            compress(data, &p).unwrap()
        };
        let mut complex = params(4, &pairs, mode);
        complex.components = 2;
        complex.element_type = ElementType::of(TypeKind::Complex);
        let chunk = round_trip(data, &complex);
        assert_eq!(
            recorded(&chunk).1 & !PLANAR,
            2,
            "{mode:?} {pairs:?}: complex scaled integers"
        );
        let chunk = round_trip(data, &params(4, shape, mode));
        let (_, flags, _) = recorded(&chunk);
        assert_eq!(flags, 2, "{mode:?} {shape:?}: scaled integers");
        // 16-bit integers with ~9 bits of noise: well under the float coding.
        assert!(
            chunk.len() * 10 < plain.len() * 8,
            "{mode:?} {shape:?}: {} bytes against {} as plain words",
            chunk.len(),
            plain.len()
        );
    }
}

#[test]
fn scaled_tiles_that_start_inside_a_scale_group_round_trip() {
    // Tiles that start inside a group of words under one scale: one scale for the whole
    // chunk of rows of 1024 words, in tiles of whole rows; and one scale per row of rows
    // too long for one tile, cut into tiles of columns. As float32 words, and as float64
    // words, which are narrowed to float32 first (decoded a tile at a time, then
    // widened).
    for (shape, scales) in [
        ([256, 1024], [0.012_3_f32; 2]),
        ([2, 300_000], [0.012_3, 0.045_6]),
    ] {
        let data: Vec<u8> = (0..shape[0] * shape[1])
            .flat_map(|k| {
                let q = ((k * 37) % 2001) as f32 - 1000.0;
                (q * scales[k / shape[1] % 2]).to_le_bytes()
            })
            .collect();
        let group = if scales[0] == scales[1] {
            data.len() / 4
        } else {
            shape[1]
        };
        for (word, data, flags) in [(4, data.clone(), 2), (8, widened(&data), 4 | 2)] {
            for mode in [Mode::Fast, Mode::Archive] {
                for threads in [1, 3] {
                    let mut p = params(word, &shape, mode);
                    p.threads = threads;
                    let chunk = round_trip(&data, &p);
                    let (header, at) = header(&chunk);
                    let recorded_group = u64::from_le_bytes(chunk[at..at + 8].try_into().unwrap());
                    let what = format!("{mode:?} {shape:?} {word}-byte words");
                    assert_eq!(header.flags, flags, "{what}: scaled integers");
                    assert_eq!(recorded_group, group as u64, "{what}");
                    assert!(
                        header.tile_sizes.len() > 1,
                        "{what}: {} tiles",
                        header.tile_sizes.len()
                    );
                }
            }
        }
    }
}

#[test]
fn scaled_float64_round_trips() {
    // Multiples of 0.1 computed in float64: not float32 values, so not narrowed.
    let data: Vec<u8> = (0..4096)
        .flat_map(|i| (f64::from((i * 37 % 1000) - 500) * 0.1).to_le_bytes())
        .collect();
    let chunk = round_trip(&data, &params(8, &[16, 256], Mode::Archive));
    assert_eq!(recorded(&chunk).1, 2);
}

/// Header length of a chunk.
fn header_len(chunk: &[u8]) -> usize {
    header(chunk).1
}

#[test]
fn float32_values_in_float64_words_are_coded_as_float32() {
    // A complex64 dump widened to complex128, with quiet NaNs, -0.0, infinities and
    // float32 subnormals among the values.
    let mut narrow = one_dump(4096);
    for (k, special) in [
        0x7fc0_0000u32,
        0x8000_0000,
        0xff80_0000,
        0x0000_0003,
        0x807f_ffff,
    ]
    .into_iter()
    .enumerate()
    {
        narrow[4 * (k * 997)..4 * (k * 997) + 4].copy_from_slice(&special.to_le_bytes());
    }
    let wide = widened(&narrow);
    let shape = [1, 4096, 4, 2];
    for mode in [Mode::Fast, Mode::Archive] {
        let mut p = params(8, &shape, mode);
        p.components = 2;
        p.threads = 1;
        let chunk = round_trip(&wide, &p);
        assert_eq!(flags_and_shift(&chunk).0, 4, "{mode:?}: narrowed");
        assert_eq!(
            header(&chunk).0.word_size,
            8,
            "{mode:?}: the header describes float64 words"
        );
        // The tiles are exactly those of the same values stored as complex64.
        let mut p32 = params(4, &shape, mode);
        p32.components = 2;
        p32.threads = 1;
        let as_f32 = compress(&narrow, &p32).unwrap();
        assert_eq!(chunk.len(), as_f32.len(), "{mode:?}");
        assert!(
            chunk[header_len(&chunk)..] == as_f32[header_len(&as_f32)..],
            "{mode:?}: the tiles of the complex64 chunk"
        );
        // One word that is not a float32 value keeps the chunk in float64.
        let mut other = wide.clone();
        other[8 * 100..8 * 101].copy_from_slice(&0.1f64.to_le_bytes());
        assert_eq!(
            flags_and_shift(&round_trip(&other, &p)).0 & 4,
            0,
            "{mode:?}: 0.1 is not a float32 value"
        );
    }
}

#[test]
fn incompressible_narrowed_words_are_stored_as_float32() {
    // Random float32 bit patterns (NaN payloads, signalling ones included, among them),
    // widened bit by bit as docs/format.md specifies.
    let bits = noise_u32(2048, 0x2545_f491_4f6c_dd1d);
    let wide = widened(&bits);
    let chunk = round_trip(&wide, &params(8, &[2048], Mode::Archive));
    assert_eq!(chunk[6], 1 | 4, "stored, narrowed");
    assert_eq!(chunk.len(), header_len(&chunk) + wide.len() / 2);
}

#[test]
fn a_corrupt_scale_section_is_an_error_not_wrong_data() {
    let shape = [16, 8, 256];
    let data = scaled_spectra(16, 8, 256);
    let chunk = compress(&data, &params(4, &shape, Mode::Fast)).unwrap();
    let at = header_len(&chunk);
    for offset in [0, 8, 12, 16, 20] {
        let mut bad = chunk.clone();
        bad[at + offset] ^= 1;
        let err = decompress(&bad).unwrap_err().to_string();
        assert!(err.starts_with("karoo: corrupt chunk"), "{offset}: {err}");
    }
}

/// `steps` time steps of (channel, polarisation, component) float32 words of large
/// magnitude, smooth along time, then `fill` steps of the word `fill_word`: an edge chunk
/// as HDF5 pads it with the dataset's fill value.
fn padded_steps(steps: usize, fill: usize, fill_word: f32) -> Vec<u8> {
    let per_step = 128 * 4 * 2;
    let mut out: Vec<u8> = (0..steps * per_step)
        .flat_map(|i| {
            let (t, w) = (i / per_step, i % per_step);
            let v = 1.0e4 * (1.0 + (w as f32 * 0.37).sin()) + t as f32 * 0.25;
            v.to_le_bytes()
        })
        .collect();
    for _ in 0..fill * per_step {
        out.extend_from_slice(&fill_word.to_le_bytes());
    }
    out
}

#[test]
fn fill_after_the_data_costs_almost_nothing() {
    // The step from the data to the fill would cost a row of large residuals; the fill's
    // rows are coded as tiles of their own instead.
    for mode in [Mode::Fast, Mode::Archive] {
        for fill_word in [0.0, f32::NAN, -9999.0] {
            let mut p = params(4, &[12, 128, 4, 2], mode);
            p.components = 2;
            let data_only = round_trip(&padded_steps(12, 0, fill_word), &p);
            let mut p = params(4, &[16, 128, 4, 2], mode);
            p.components = 2;
            let padded = round_trip(&padded_steps(12, 4, fill_word), &p);
            let (h, _) = header(&padded);
            assert_eq!(h.time_axis, 0, "{mode:?} {fill_word}");
            assert!(
                padded.len() <= data_only.len() + 200,
                "{mode:?} {fill_word}: {} bytes padded, {} without the fill",
                padded.len(),
                data_only.len()
            );
            // With a requested lag of half a time step: rows of half a step, the fill's
            // from row 24.
            let halves = |steps: usize, fill: usize| {
                let mut p = params(4, &[steps + fill, 128, 4, 2], mode);
                p.components = 2;
                p.lag = 512;
                round_trip(&padded_steps(steps, fill, fill_word), &p).len()
            };
            let (padded, data_only) = (halves(12, 4), halves(12, 0));
            assert!(
                padded <= data_only + 200,
                "{mode:?} {fill_word}: rows of half a step, {padded} bytes, {data_only}"
            );
        }
    }
}

/// `steps` time steps of three baselines of 1024 channels, complex64: two
/// autocorrelations (large, positive, smooth; imaginary parts zero) around a
/// cross-correlation (small noisy values).
fn autos_and_a_cross(steps: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut out = Vec::new();
    for t in 0..steps {
        for baseline in 0..3 {
            for ch in 0..1024 {
                let (re, im) = if baseline == 1 {
                    (noise() * 3.0, noise() * 3.0)
                } else {
                    let band = 1.0 + (ch as f32 / 1024.0 * 3.0).sin().abs();
                    (5.0e4 * band + t as f32 + noise(), 0.0)
                };
                out.extend_from_slice(&re.to_le_bytes());
                out.extend_from_slice(&im.to_le_bytes());
            }
        }
    }
    out
}

#[test]
fn archive_tiles_of_a_few_baselines_are_cut_per_baseline() {
    // The autocorrelations and the cross-correlation code better each in its own tile
    // than in one tile whose tables they share.
    let data = autos_and_a_cross(16);
    let mut p = params(4, &[16, 3, 1024, 2], Mode::Archive);
    p.components = 2;
    let chunk = round_trip(&data, &p);
    let (h, _) = header(&chunk);
    // One baseline's words: 1024 channels of one component as planes, of two interleaved.
    let baseline = if h.flags & PLANAR != 0 { 1024 } else { 2048 };
    assert_eq!(h.tiling.tile_cols, baseline, "{h:?}");
    assert_eq!(h.tile_sizes.len(), if baseline == 1024 { 6 } else { 3 });
}

#[test]
fn flagged_runs_of_zeros_cost_almost_nothing() {
    // Smooth series with every other block of 512 series flagged to zero.
    let shape = [64, 4096];
    let data: Vec<u8> = (0..64 * 4096)
        .flat_map(|i| {
            let (t, c) = (i / 4096, i % 4096);
            let v = if (c / 512) % 2 == 1 {
                0.0
            } else {
                (c as f32 * 0.01).sin() * 100.0 + t as f32 * 1e-3
            };
            v.to_le_bytes()
        })
        .collect();
    let zeros = vec![0u8; data.len()];
    // LZ4 codes at most about 255 bytes of a run per byte; Zstandard far more.
    for (mode, least) in [(Mode::Fast, 200), (Mode::Archive, 1000)] {
        let chunk = round_trip(&zeros, &params(4, &shape, mode));
        assert!(
            chunk.len() * least < zeros.len(),
            "{mode:?}: all zeros in {} bytes",
            chunk.len()
        );
        round_trip(&data, &params(4, &shape, mode));
    }
}

#[test]
fn repeated_patterns_take_the_general_purpose_coder() {
    // A short random pattern repeated: nothing to predict, everything to match.
    let pattern: Vec<u32> = (0..97u32)
        .map(|i| i.wrapping_mul(2_654_435_761).rotate_left(7))
        .collect();
    let data: Vec<u8> = (0..64 * 1024)
        .flat_map(|i| pattern[i % 97].to_le_bytes())
        .collect();
    for (mode, coder) in [(Mode::Fast, 8u8), (Mode::Archive, 9)] {
        let mut p = params(4, &[64, 1024], mode);
        p.element = ElementKind::Integer;
        let chunk = round_trip(&data, &p);
        // The general-purpose coder in the tiles, or the chunk coded whole by a
        // general-purpose pipeline (a brief chunk, format version 4).
        if chunk[4] & 15 != 4 {
            let (_, _, coders) = recorded(&chunk);
            assert!(coders.contains(&coder), "{mode:?}: coders {coders:?}");
        }
        assert!(
            chunk.len() * 20 < data.len(),
            "{mode:?}: {} bytes",
            chunk.len()
        );
    }
}

#[test]
fn archive_mode_finds_repeated_series_away_from_its_sample() {
    // 48 series of 1536 integers (random walks along axis 1); series 1, 3 and 5 repeat
    // series 0, 2 and 4 and series 41, 43 and 45 repeat 40, 42 and 44 (as the real
    // parts of the cross-hands XY and YX of autocorrelations do), away from the middle
    // of each of the chunk's two tiles (24 series each), where the general-purpose
    // coder's sample is taken.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut series: Vec<Vec<u32>> = (0..48)
        .map(|_| {
            let mut level = 0i32;
            (0..1536)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    level += (state % 4001) as i32 - 2000;
                    level as u32
                })
                .collect()
        })
        .collect();
    for k in [0, 2, 4, 40, 42, 44] {
        series[k + 1] = series[k].clone();
    }
    let data: Vec<u8> = series
        .iter()
        .flatten()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let mut p = params(4, &[48, 1536], Mode::Archive);
    p.element = ElementKind::Integer;
    p.time_axis = 1;
    let chunk = round_trip(&data, &p);
    let (time_axis, _, coders) = recorded(&chunk);
    assert_eq!((time_axis, coders), (1, vec![9, 9]));
    p.coder = Some(Coder::ContextAns);
    let context = compress(&data, &p).unwrap();
    // Six of 48 series cost almost nothing, more than the general-purpose coder loses
    // on the others.
    assert!(
        chunk.len() < context.len(),
        "{} bytes against {} context-coded",
        chunk.len(),
        context.len()
    );
}

/// `data`'s float32 words rounded to `keep` mantissa bits (bit rounding: ties away).
fn bit_rounded(data: &[u8], keep: u32) -> Vec<u8> {
    let drop = 23 - keep;
    data.chunks_exact(4)
        .flat_map(|w| {
            let x = u32::from_le_bytes(w.try_into().unwrap());
            let rounded = (x + (1 << (drop - 1))) >> drop << drop;
            rounded.to_le_bytes()
        })
        .collect()
}

#[test]
fn bit_rounded_floats_are_coded_without_their_zero_bits() {
    let data = bit_rounded(&one_dump(4096), 10);
    let shape = [1, 4096, 4, 2];
    for mode in [Mode::Fast, Mode::Archive] {
        let mut p = params(4, &shape, mode);
        p.components = 2;
        let chunk = round_trip(&data, &p);
        assert_eq!(
            flags_and_shift(&chunk),
            (8, 13),
            "{mode:?}: shifted by 13 bits"
        );
        // One word with its lowest bit set keeps every word whole, and costs more.
        let mut whole = data.clone();
        whole[4 * 77] |= 1;
        let unshifted = round_trip(&whole, &p);
        // Tiled without the shift, or coded whole (a brief chunk, which never shifts).
        if unshifted[4] & 15 != 4 {
            assert_eq!(flags_and_shift(&unshifted), (0, 0), "{mode:?}");
        }
        assert!(
            chunk.len() * 10 < unshifted.len() * 9,
            "{mode:?}: {} against {}",
            chunk.len(),
            unshifted.len()
        );
        // Widened to complex128, the same words are narrowed, then shifted.
        let mut p64 = params(8, &shape, mode);
        p64.components = 2;
        let wide = round_trip(&widened(&data), &p64);
        assert_eq!(
            flags_and_shift(&wide),
            (4 | 8, 13),
            "{mode:?}: narrowed and shifted"
        );
    }
}

#[test]
fn a_shifted_chunk_that_does_not_compress_is_stored_unshifted() {
    let data = 1.5f32.to_le_bytes();
    let chunk = round_trip(&data, &params(4, &[1], Mode::Fast));
    // A brief chunk: version 4, stored 4-byte words (pipeline byte 0x80), rank 1.
    assert_eq!(
        (chunk[4], chunk[6], chunk[7]),
        (4, 0x80, 1),
        "stored, not shifted"
    );
    assert_eq!(chunk.len(), 13 + 4);
    assert_eq!(&chunk[chunk.len() - 4..], &data);
}

/// Complex spectra whose imaginary parts are near zero and real parts large (the
/// autocorrelations of a correlator), time by channel by component.
fn autocorrelations(times: usize, channels: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for t in 0..times {
        for c in 0..channels {
            let noise = ((t * 131 + c * 29) % 401) as f32 - 200.0;
            let real = 4.0e4 + (c as f32 * 0.01).sin() * 3.0e3 + noise;
            let imag = noise * 1e-3;
            out.extend_from_slice(&real.to_le_bytes());
            out.extend_from_slice(&imag.to_le_bytes());
        }
    }
    out
}

#[test]
fn components_are_coded_as_planes_in_archive_mode() {
    // One time step along 1536 channels: real parts large, imaginary parts tiny; 12 KiB,
    // coded both ways whole.
    let shape = [1, 1536, 2];
    let data = autocorrelations(1, 1536);
    let mut p = params(4, &shape, Mode::Archive);
    p.components = 2;
    let chunk = round_trip(&data, &p);
    let (h, _) = header(&chunk);
    assert_eq!(
        h.flags, PLANAR,
        "archive mode codes the components as planes"
    );
    assert_eq!(h.shape, vec![2, 1, 1536], "the planes' shape");
    assert_eq!(h.decoded_shape(), vec![1, 1536, 2]);
    // Fast mode keeps them interleaved, and so does a requested lag of half an element.
    p.mode = Mode::Fast;
    assert_eq!(header(&round_trip(&data, &p)).0.flags & PLANAR, 0, "fast");
    p.mode = Mode::Archive;
    p.lag = 1025;
    assert_eq!(
        header(&round_trip(&data, &p)).0.flags & PLANAR,
        0,
        "half elements"
    );
    // A time axis on the components themselves (found by fuzzing): interleaved.
    p.lag = 0;
    p.time_axis = 2;
    assert_eq!(
        header(&round_trip(&data, &p)).0.flags & PLANAR,
        0,
        "component axis"
    );
    // 384 KiB: decided on the first eighth along time, coded both ways.
    let shape = [32, 1536, 2];
    let data = autocorrelations(32, 1536);
    let mut p = params(4, &shape, Mode::Archive);
    p.components = 2;
    let chunk = round_trip(&data, &p);
    assert_eq!(header(&chunk).0.flags, PLANAR, "sampled");
    // Incompressible complex words are stored in their own order, with no planes.
    let noise = noise_u32(4096, 0x9e37_79b9_7f4a_7c15);
    let mut p = params(4, &[2048, 2], Mode::Archive);
    p.components = 2;
    let chunk = round_trip(&noise, &p);
    let (h, len) = header(&chunk);
    assert_eq!((h.flags, h.shape.clone()), (1, vec![2048, 2]), "stored");
    assert_eq!(&chunk[len..], &noise[..], "stored verbatim");
}

/// Gaussian noise of standard deviation `sigma` (Box-Muller on xorshift), one value in
/// `flagged` set to zero.
fn gaussian_noise(n: usize, sigma: f64, flagged: usize) -> Vec<f64> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut unit = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|i| {
            let (u, v) = (unit(), unit());
            let x = sigma * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            if i % flagged == 0 {
                0.0
            } else {
                x
            }
        })
        .collect()
}

#[test]
fn noise_that_no_predictor_helps_is_coded_by_its_float_fields() {
    // One integration of 4096 baselines, four polarisations, complex: noise with one
    // value in 16 flagged, as float32 and float64. Archive mode codes every tile by its
    // float fields, at least 2% smaller than context rANS of bit lengths does.
    let noise = gaussian_noise(4096 * 4 * 2, 300.0, 16);
    let f32s: Vec<u8> = noise
        .iter()
        .flat_map(|&x| (x as f32).to_le_bytes())
        .collect();
    let f64s: Vec<u8> = noise.iter().flat_map(|&x| x.to_le_bytes()).collect();
    for (word, data) in [(4, f32s), (8, f64s)] {
        let mut p = params(word, &[1, 4096, 4, 2], Mode::Archive);
        p.components = 2;
        p.element = ElementKind::Float;
        let chunk = round_trip(&data, &p);
        let (_, _, coders) = recorded(&chunk);
        // Coder 10, or its banded form (coder 11) where the rows allow bands.
        assert!(
            coders.iter().all(|&c| c == 10 || c == 11),
            "{word}: {coders:?}"
        );
        p.coder = Some(Coder::ContextAns);
        let bit_lengths = round_trip(&data, &p);
        assert!(
            chunk.len() * 100 < bit_lengths.len() * 98,
            "{word}: {} against {}",
            chunk.len(),
            bit_lengths.len()
        );
    }
}

/// Flags of (time, baseline, channel) and the matching float32 weights (8.0, or 0.0 where
/// flagged): a band of channels and one baseline in 16 flagged throughout, and about one
/// sample in 64 at random.
fn flags_and_weights(shape: [usize; 3]) -> (Vec<u8>, Vec<u8>) {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let flags: Vec<u8> = (0..shape.iter().product::<usize>())
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (baseline, channel) = (i / shape[2] % shape[1], i % shape[2]);
            let flagged = (40..46).contains(&channel) || baseline % 16 == 3;
            u8::from(flagged || state.is_multiple_of(64))
        })
        .collect();
    let weights = flags
        .iter()
        .flat_map(|&f| if f == 1 { 0f32 } else { 8f32 }.to_le_bytes())
        .collect();
    (flags, weights)
}

#[test]
fn sparse_flags_and_weights_take_the_bit_plane_coders() {
    let shape = [16, 64, 256];
    let (flags, weights) = flags_and_weights(shape);
    let mut p = params(1, &shape, Mode::Fast);
    p.element = ElementKind::Integer;
    let packed = round_trip(&flags, &p);
    let (_, _, coders) = recorded(&packed);
    assert!(
        coders.iter().all(|&c| c == Coder::BitshuffledLz4.id()),
        "{coders:?}"
    );
    // Below a byte-shuffled coding of the flags as they are.
    p.predictor = Some(karoo::Predictor::Zero);
    p.coder = Some(Coder::ShuffledLz4);
    let bytes = round_trip(&flags, &p);
    assert!(
        packed.len() * 4 < bytes.len() * 3,
        "{} vs {}",
        packed.len(),
        bytes.len()
    );

    let mut p = params(4, &shape, Mode::Fast);
    p.element = ElementKind::Float;
    let packed = round_trip(&weights, &p);
    let (header, mut at) = header(&packed);
    if header.flags & 2 != 0 {
        at += 16 + u32_at(&packed, at + 12) as usize + 8;
    }
    assert!(!header.tile_sizes.is_empty());
    for size in &header.tile_sizes {
        // The words as they are: predictor none (13), map XOR (1), coder 12.
        assert_eq!((packed[at], packed[at + 1]), (13, 1 << 4 | 12));
        at += *size as usize;
    }
    // Archive mode: coder 14 for the flags of one time step of many baselines, every
    // tile, on the words as they are, well below coder 13's bit-shuffled Zstandard.
    let one_step = [1, 351, 1024];
    let (flags, _) = flags_and_weights(one_step);
    let mut archive = params(1, &one_step, Mode::Archive);
    archive.element = ElementKind::Integer;
    let modelled = round_trip(&flags, &archive);
    let (_, _, coders) = recorded(&modelled);
    assert!(
        coders.iter().all(|&c| c == Coder::ContextBitplanes.id()),
        "{coders:?}"
    );
    archive.predictor = Some(karoo::Predictor::Zero);
    archive.coder = Some(Coder::BitshuffledZstd);
    let zstd = round_trip(&flags, &archive);
    assert!(
        modelled.len() * 6 < zstd.len() * 5,
        "{} vs {}",
        modelled.len(),
        zstd.len()
    );
    // A requested predictor keeps the predicted coding.
    p.predictor = Some(karoo::Predictor::Lagrange(1));
    let (_, _, coders) = recorded(&round_trip(&weights, &p));
    assert!(!coders.contains(&Coder::BitshuffledLz4.id()), "{coders:?}");
}

#[test]
fn integer_noise_is_coded_unpredicted_in_fast_mode() {
    // Correlator-like int32 samples of Gaussian noise (standard deviation 300; the
    // first sample zero): a prediction only adds the noise of the samples it is made of.
    let shape = [8, 64, 256];
    let data: Vec<u8> = gaussian_noise(shape.iter().product(), 300.0, usize::MAX)
        .into_iter()
        .flat_map(|x| (x.round() as i32).to_le_bytes())
        .collect();
    let mut p = params(4, &shape, Mode::Fast);
    p.element = ElementKind::Integer;
    let auto = round_trip(&data, &p);
    let (_, _, coders) = recorded(&auto);
    let (h, mut at) = header(&auto);
    for size in &h.tile_sizes {
        assert_eq!(auto[at], 13, "predictor none in every tile");
        at += *size as usize;
    }
    assert!(
        coders.iter().all(|&c| c == Coder::Patched.id()),
        "{coders:?}"
    );
    p.predictor = Some(karoo::Predictor::Lagrange(1));
    let previous = round_trip(&data, &p);
    assert!(
        auto.len() * 100 < previous.len() * 98,
        "{} vs {}",
        auto.len(),
        previous.len()
    );
}

#[test]
fn archive_tiles_from_16384_words_in_rows_of_8_are_banded() {
    // Eight time steps of 1024 complex64 channels of noisy visibilities: one tile of
    // 16384 words in rows of 2048. Archive mode writes coder 11 (banded context rANS) in
    // 32 bands, which costs at most its 30 extra rANS states (120 bytes) over coder 4,
    // and keeps coder 4 for half as many words. Rows of 2056 words (a multiple of 8, not
    // of 16) are banded too, and so are rows of 2052 (27 bands of 38 complex numbers);
    // rows of 2062 (2 x 1031) are not.
    for (channels, banded) in [
        (1024, true),
        (512, false),
        (1028, true),
        (1026, true),
        (1031, false),
    ] {
        let noise = gaussian_noise(8 * channels * 2, 30.0, usize::MAX);
        let data: Vec<u8> = noise
            .iter()
            .enumerate()
            .flat_map(|(i, &x)| {
                let channel = i / 2 % channels;
                (((channel as f64) * 0.01).sin() as f32 * 1000.0 + x as f32).to_le_bytes()
            })
            .collect();
        let mut p = params(4, &[8, channels, 2], Mode::Archive);
        p.components = 2;
        p.element = ElementKind::Float;
        let chunk = round_trip(&data, &p);
        let (_, _, coders) = recorded(&chunk);
        let expected = if banded { 11 } else { 4 };
        assert!(
            coders.iter().all(|&c| c == expected),
            "{channels}: {coders:?}"
        );
        p.coder = Some(Coder::ContextAns);
        let plain = round_trip(&data, &p);
        assert!(
            chunk.len() <= plain.len() + 120 * coders.len(),
            "{channels}: {} against {}",
            chunk.len(),
            plain.len()
        );
    }
}
