//! Rice and patched-packing coder throughput on typical sign-folded residuals, against
//! `memcpy`.
//!
//! The data are generated here, deterministically (fixed seed): 1M (2^20) residuals
//! drawn from a Laplace distribution and zigzag-folded, as a predictor leaves them:
//!
//! * `u32`: scale 2^11, so the folded values have about 12 significant bits (4 MiB);
//! * `u64`: scale 2^43, about 44 significant bits, like the residuals of float64 data
//!   whose noise is a few tenths of a percent of the values (8 MiB).
//!
//! Each coder and word size has one criterion group (`rice_u32`, `patched_u32`, ...)
//! with three lines: `memcpy` (copy of the raw values' bytes into a preallocated buffer,
//! the baseline measured in the same run), `encode` (into a reused `Vec`) and `decode`
//! (into a preallocated slice). Every line
//! reports throughput in bytes of *raw* values per second, so dividing a coder line by
//! the `memcpy` line gives its speed as a fraction of a plain memory copy. The coded
//! size of each data set is printed once to stderr.
//!
//! Run with `cargo bench --bench coders` (add `-- --quick` for a rough, faster pass).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use karoo::internals::{patched, rice};
use karoo::internals::{StreamError, Word};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Number of residuals per data set.
const N: usize = 1 << 20;

/// `N` zigzag-folded Laplace residuals of scale `2^log_scale`.
fn residuals<T: Word>(log_scale: i32, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let scale = 2f64.powi(log_scale);
    (0..N)
        .map(|_| {
            let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
            let magnitude = (-u.ln() * scale) as u64;
            // Fold the sign: +m -> 2m, -m -> 2m - 1 (never below zero).
            let folded = if rng.gen::<bool>() {
                2 * magnitude
            } else {
                (2 * magnitude).saturating_sub(1)
            };
            T::from_u64(folded)
        })
        .collect()
}

/// A coder's encode and decode functions for one word type.
struct Coder<T> {
    name: &'static str,
    encode: fn(&[T], &mut Vec<u8>),
    decode: fn(&[u8], &mut [T]) -> Result<(), StreamError>,
}

fn coders<T: Word>() -> [Coder<T>; 2] {
    [
        Coder {
            name: "rice",
            encode: rice::encode::<T>,
            decode: rice::decode::<T>,
        },
        Coder {
            name: "patched",
            encode: patched::encode::<T>,
            decode: patched::decode::<T>,
        },
    ]
}

fn bench_word<T: Word>(c: &mut Criterion, word: &str, values: &[T]) {
    for coder in coders::<T>() {
        bench_coder(c, &format!("{}_{word}", coder.name), &coder, values);
    }
}

fn bench_coder<T: Word>(c: &mut Criterion, name: &str, coder: &Coder<T>, values: &[T]) {
    let (encode, decode) = (coder.encode, coder.decode);
    let raw: Vec<u8> = values
        .iter()
        .flat_map(|v| v.to_u64().to_le_bytes().into_iter().take(T::BYTES))
        .collect();
    let mut encoded = Vec::new();
    encode(values, &mut encoded);
    let mut back = vec![T::default(); values.len()];
    decode(&encoded, &mut back).expect("round trip");
    assert!(back == values, "round trip");
    eprintln!(
        "{name}: {} values, {} raw bytes -> {} coded bytes ({:.3} of raw, {:.2} bits/value)",
        values.len(),
        raw.len(),
        encoded.len(),
        encoded.len() as f64 / raw.len() as f64,
        encoded.len() as f64 * 8.0 / values.len() as f64
    );

    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(raw.len() as u64));
    let mut copy = vec![0u8; raw.len()];
    group.bench_function("memcpy", |b| {
        b.iter(|| {
            copy.copy_from_slice(black_box(&raw));
            black_box(&copy);
        })
    });
    let mut out = Vec::with_capacity(encoded.len() * 2);
    group.bench_function("encode", |b| {
        b.iter(|| {
            out.clear();
            encode(black_box(values), &mut out);
            black_box(&out);
        })
    });
    group.bench_function("decode", |b| {
        b.iter(|| {
            decode(black_box(&encoded), &mut back).unwrap();
            black_box(&back);
        })
    });
    group.finish();
}

fn all(c: &mut Criterion) {
    bench_word::<u32>(c, "u32", &residuals::<u32>(11, 0x7269_6365_0032));
    bench_word::<u64>(c, "u64", &residuals::<u64>(43, 0x7269_6365_0064));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = all
}
criterion_main!(benches);
