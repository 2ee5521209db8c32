//! Checks shared by the entropy coders' unit tests: round trips over word sizes and row
//! widths, truncations, extensions and random bytes.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::Coder;
use crate::layout::Dims;
use crate::word::Word;

/// Groups of 32 words for the SIMD kernels' tests: zeros, all ones, the top bit alone,
/// and for every shift, each bit length 0 to 32 in every lane and mixed lengths with one
/// bit set at the shift.
#[cfg(target_arch = "x86_64")]
pub fn kernel_groups() -> Vec<[u32; 32]> {
    let mut groups = vec![[0u32; 32], [u32::MAX; 32], [0x8000_0000; 32]];
    for shift in 0..33u32 {
        groups.push(std::array::from_fn(|i| {
            let v = (i as u32 + 7).wrapping_mul(0x9E37_79B9).rotate_left(shift);
            v.checked_shr(i as u32 % 33).unwrap_or(0) | u32::from(i == 5) << (shift % 32)
        }));
        groups.push(std::array::from_fn(|i| {
            u32::MAX
                .checked_shr(32 - ((i as u32 + shift) % 33))
                .unwrap_or(0)
        }));
    }
    groups
}

/// A layout of rows of `width` words whose `left` neighbour distance varies with it
/// (and exceeds the width when the width is 1).
pub fn dims(width: usize) -> Dims {
    Dims {
        width,
        left: 1 + width % 3 + usize::from(width == 1),
    }
}

/// `n` values whose bit lengths are uniform in `0..=bits`: a geometric-like source.
pub fn laplace<T: Word>(rng: &mut SmallRng, n: usize, bits: u32) -> Vec<T> {
    (0..n)
        .map(|_| {
            let b = rng.gen_range(0..=bits.min(T::BITS));
            let v: u64 = rng.gen();
            T::from_u64(if b == 0 { 0 } else { v >> (64 - b) })
        })
        .collect()
}

/// Codes `values` in rows of `width`, asserts they decode exactly, returns the coding.
pub fn round_trip<T: Word>(coder: Coder, values: &[T], width: usize) -> Vec<u8> {
    let mut out = Vec::new();
    coder.encode(values, dims(width), &mut out);
    // Decoders must write every value: the tile decoder hands them a reused buffer.
    let mut back = vec![T::ONES; values.len()];
    coder.decode(&out, dims(width), &mut back).unwrap();
    assert_eq!(back, values);
    out
}

/// Every word size, length and row width round-trips, extremes included.
pub fn assert_every_shape_round_trips(coder: Coder) {
    let mut rng = SmallRng::seed_from_u64(3);
    for n in [0usize, 1, 2, 5, 100, 2047, 2048, 5000, 16384, 40_000] {
        for width in [1usize, 3, 64, 1000] {
            round_trip::<u8>(coder, &laplace(&mut rng, n, 8), width);
            round_trip::<u16>(coder, &laplace(&mut rng, n, 16), width);
            round_trip::<u32>(coder, &laplace(&mut rng, n, 20), width);
            round_trip::<u64>(coder, &laplace(&mut rng, n, 64), width);
        }
    }
    round_trip::<u32>(coder, &[u32::MAX, 0, 1, 2, u32::MAX], 2);
    round_trip::<u64>(coder, &[u64::MAX, 0, 1, 1 << 63], 1);
    round_trip::<u32>(coder, &vec![0; 100_000], 100);
}

/// Every truncation of a coding and a coding with one byte more are errors.
pub fn assert_truncations_and_extensions_fail(coder: Coder) {
    let mut rng = SmallRng::seed_from_u64(9);
    let values: Vec<u32> = laplace(&mut rng, 3000, 12);
    let out = round_trip(coder, &values, 30);
    let mut back = vec![0u32; values.len()];
    for cut in 0..out.len() {
        assert!(
            coder.decode(&out[..cut], dims(30), &mut back).is_err(),
            "cut {cut}"
        );
    }
    let mut longer = out.clone();
    longer.push(0);
    assert!(coder.decode(&longer, dims(30), &mut back).is_err());
}

/// Random bytes (with a plausible context configuration in front) never panic.
pub fn assert_random_bytes_never_panic(coder: Coder) {
    let mut rng = SmallRng::seed_from_u64(11);
    let mut back = vec![0u32; 500];
    for _ in 0..20_000 {
        let len = rng.gen_range(0..200);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if bytes.len() >= 4 {
            bytes[0] = rng.gen_range(1..=16);
            bytes[1] = if rng.gen() { 1 } else { 3 };
            bytes[3] = rng.gen_range(1..=2);
        }
        let _ = coder.decode(&bytes, dims(25), &mut back);
    }
}

/// (coded bytes, estimated bytes) of 100,000 geometric-like 18-bit values in rows of 500:
/// the estimate of the model the coders build (its layout chosen by estimate).
pub fn size_and_estimate(coder: Coder) -> (u64, u64) {
    let mut rng = SmallRng::seed_from_u64(5);
    let values: Vec<u32> = laplace(&mut rng, 100_000, 18);
    let out = round_trip(coder, &values, 500);
    let estimate =
        crate::archive::context::Model::build_best(&values, dims(500)).estimated_bits / 8;
    (out.len() as u64, estimate)
}

/// The shared checks as `#[test]` functions for `$coder`, in the calling test module.
macro_rules! shared_coder_tests {
    ($coder:expr) => {
        #[test]
        fn every_word_size_and_shape_round_trips() {
            $crate::coder::testing::assert_every_shape_round_trips($coder);
        }

        #[test]
        fn every_truncation_and_extension_is_an_error() {
            $crate::coder::testing::assert_truncations_and_extensions_fail($coder);
        }

        #[test]
        fn random_bytes_never_panic() {
            $crate::coder::testing::assert_random_bytes_never_panic($coder);
        }
    };
}
pub(crate) use shared_coder_tests;

/// `len` bytes with runs and repeats, so that a general-purpose compressor's frames hold
/// matches.
pub fn matchable_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if i % 7 < 3 {
                (i / 97) as u8
            } else {
                (x >> 59) as u8
            }
        })
        .collect()
}
