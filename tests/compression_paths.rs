//! The paths that make karoo compress data of any shape: prediction along whichever
//! axis is smoothest, scaled integers, the general-purpose coders. Each test checks the
//! path is taken (from the chunk's own header) and that the chunk round-trips exactly.

use karoo::{compress, decompress, ElementKind, Mode, Params};

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// (time axis, flags, coder byte of every tile) a chunk's header records.
fn recorded(chunk: &[u8]) -> (u8, u8, Vec<u8>) {
    let rank = chunk[11] as usize;
    let tiles = u32_at(chunk, 80) as usize;
    let table = 84 + 8 * rank;
    let mut at = table + 4 * tiles + 4;
    if chunk[6] & 2 != 0 {
        // Scale section: 16 fixed bytes, the coded scales, an 8-byte checksum.
        at += 16 + u32_at(chunk, at + 12) as usize + 8;
    }
    let mut coders = Vec::new();
    for t in 0..tiles {
        coders.push(chunk[at + 1] & 15);
        at += u32_at(chunk, table + 4 * t) as usize;
    }
    (chunk[12], chunk[6], coders)
}

fn params(word: usize, shape: &[usize], mode: Mode) -> Params {
    let mut p = Params::new(word, shape);
    p.mode = mode;
    p
}

fn round_trip(data: &[u8], p: &Params) -> Vec<u8> {
    let chunk = compress(data, p).unwrap();
    assert!(decompress(&chunk).unwrap() == data, "{p:?}");
    chunk
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
        assert_eq!(
            (axis, flags & 1),
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
    let shape = [16, 8, 256];
    let data = scaled_spectra(16, 8, 256);
    for mode in [Mode::Fast, Mode::Archive] {
        let plain = {
            let mut p = params(4, &shape, mode);
            p.element = ElementKind::Other;
            compress(&data, &p).unwrap()
        };
        let chunk = round_trip(&data, &params(4, &shape, mode));
        let (_, flags, _) = recorded(&chunk);
        assert_eq!(flags, 2, "{mode:?}: scaled integers");
        // 16-bit integers with ~9 bits of noise: well under the float coding.
        assert!(
            chunk.len() * 10 < plain.len() * 8,
            "{mode:?}: {} bytes against {} as plain words",
            chunk.len(),
            plain.len()
        );
    }
}

#[test]
fn scaled_float64_round_trips() {
    let data: Vec<u8> = (0..4096)
        .flat_map(|i| (f64::from((i * 37 % 1000) - 500) * 0.0625).to_le_bytes())
        .collect();
    let chunk = round_trip(&data, &params(8, &[16, 256], Mode::Archive));
    assert_eq!(recorded(&chunk).1, 2);
}

#[test]
fn a_corrupt_scale_section_is_an_error_not_wrong_data() {
    let shape = [16, 8, 256];
    let data = scaled_spectra(16, 8, 256);
    let chunk = compress(&data, &params(4, &shape, Mode::Fast)).unwrap();
    let at = 84 + 8 * 3 + 4 * u32_at(&chunk, 80) as usize + 4;
    for offset in [0, 8, 12, 16, 20] {
        let mut bad = chunk.clone();
        bad[at + offset] ^= 1;
        let err = decompress(&bad).unwrap_err().to_string();
        assert!(err.starts_with("karoo: corrupt chunk"), "{offset}: {err}");
    }
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
        let (_, _, coders) = recorded(&chunk);
        assert!(coders.contains(&coder), "{mode:?}: coders {coders:?}");
        assert!(
            chunk.len() * 20 < data.len(),
            "{mode:?}: {} bytes",
            chunk.len()
        );
    }
}
