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

/// Compresses and decompresses `data`, asserting the round trip is bit-exact; the chunk.
pub fn round_trip(data: &[u8], params: &Params) -> Vec<u8> {
    let packed = compress(data, params).expect("compress");
    let back = decompress(&packed).expect("decompress");
    assert_eq!(back, data, "round trip of {params:?}");
    packed
}
