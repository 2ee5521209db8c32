//! Helpers shared by the integration tests.

// Each test file uses some of these.
#![allow(dead_code)]

use karoo::{compress, decompress, Params};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// A smooth, noisy float32 time series stack of `shape` (time axis 0), as bytes.
pub fn smooth_f32(shape: &[usize], seed: u64) -> Vec<u8> {
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

/// `words` random 32-bit words (xorshift from `seed`, nonzero) as little-endian bytes:
/// incompressible data, NaN payloads among them when read as floats.
pub fn noise_u32(words: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..words)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 32) as u32).to_le_bytes()
        })
        .collect()
}

/// Compresses and decompresses `data`, asserting the round trip is bit-exact; the chunk.
pub fn round_trip(data: &[u8], params: &Params) -> Vec<u8> {
    let packed = compress(data, params).expect("compress");
    let back = decompress(&packed).expect("decompress");
    assert_eq!(back, data, "round trip of {params:?}");
    packed
}

/// Little-endian float32 words widened to the float64 words they equal, bit by bit as
/// docs/format.md's table for narrowed chunks gives (NaN payloads kept, signalling ones
/// included): the tests' own reading of the spec, apart from the codec's.
pub fn widened(f32_words: &[u8]) -> Vec<u8> {
    f32_words
        .chunks_exact(4)
        .flat_map(|w| {
            let f = u32::from_le_bytes(w.try_into().unwrap());
            let (s, e, m) = (
                u64::from(f >> 31) << 63,
                u64::from((f >> 23) & 255),
                u64::from(f & 0x7f_ffff),
            );
            let x = match (e, m) {
                (255, _) => s | 2047 << 52 | m << 29,
                (0, 0) => s,
                (0, _) => {
                    let p = 63 - u64::from(m.leading_zeros());
                    s | (p + 874) << 52 | (m - (1 << p)) << (52 - p)
                }
                _ => s | (e + 896) << 52 | m << 29,
            };
            x.to_le_bytes()
        })
        .collect()
}

/// Reads the unsigned LEB128 varint of a version-2 header at `*at` and moves past it,
/// asserting it is minimal and at most 10 bytes long.
pub fn varint(bytes: &[u8], at: &mut usize) -> u64 {
    let start = *at;
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = bytes[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            assert!(
                byte != 0 || *at == start + 1,
                "varint at {start} not minimal"
            );
            return value;
        }
    }
    panic!("varint at {start} longer than 10 bytes");
}
