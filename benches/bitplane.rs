//! Throughput of the bit-plane residual coder against `memcpy`.
//!
//! Data are generated here, deterministically (fixed seed): Laplace-like residuals,
//! i.e. zigzag-folded integers whose magnitude is exponentially distributed, as a good
//! predictor leaves them:
//!
//! * `bitplane_u32`: 1M `u32` residuals with about 12 significant bits (Laplace scale
//!   2^8.5, so a group of 32 needs about 12 planes);
//! * `bitplane_u64`: 1M `u64` residuals with about 36 significant bits (Laplace scale
//!   2^32.5).
//!
//! Each group has three lines: `memcpy` (`copy_from_slice` of the raw values into a
//! preallocated buffer, the baseline measured in the same run), `encode` (into a
//! reused, cleared `Vec`) and `decode` (into a preallocated slice). Every line reports
//! throughput in bytes of raw values per second, so dividing a coder line by the
//! `memcpy` line gives its speed as a fraction of a plain memory copy. The size of each
//! coding is printed to stderr before the groups run.
//!
//! Run with `cargo bench --bench bitplane` (add `-- --quick` for a rough pass).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use karoo::internals::bitplane::{decode, encode};
use karoo::internals::Word;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const N: usize = 1 << 20;

/// `N` zigzag-folded Laplace-distributed integers with scale `2^log2_scale`.
fn laplace<T: Word>(log2_scale: f64, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let scale = log2_scale.exp2();
    (0..N)
        .map(|_| {
            let magnitude = -scale * (1.0 - rng.gen::<f64>()).ln();
            let signed = if rng.gen::<bool>() {
                magnitude
            } else {
                -magnitude - 1.0
            };
            T::from_u64(signed.round() as i64 as u64).zigzag()
        })
        .collect()
}

fn bench_words<T: Word>(c: &mut Criterion, name: &str, values: &[T]) {
    let raw_bytes = std::mem::size_of_val(values);
    let mut coded = Vec::new();
    encode(values, &mut coded);
    let mut back = vec![T::from_u64(0); values.len()];
    decode(&coded, &mut back).expect("decode");
    assert!(back == values, "round trip");
    eprintln!(
        "{name}: {} values, {raw_bytes} raw bytes -> {} coded, ratio {:.4}, {:.2} planes/group",
        values.len(),
        coded.len(),
        coded.len() as f64 / raw_bytes as f64,
        (coded.len() / T::BYTES) as f64 / values.len().div_ceil(T::BITS as usize) as f64 - 1.0
    );

    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(raw_bytes as u64));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));

    let mut dst = vec![T::from_u64(0); values.len()];
    group.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(values));
            black_box(&mut dst);
        })
    });
    let mut out = Vec::with_capacity(2 * raw_bytes);
    group.bench_function("encode", |b| {
        b.iter(|| {
            out.clear();
            encode(black_box(values), &mut out);
            black_box(&mut out);
        })
    });
    group.bench_function("decode", |b| {
        b.iter(|| {
            decode(black_box(&coded), &mut back).expect("decode");
            black_box(&mut back);
        })
    });
    group.finish();
}

fn bitplane(c: &mut Criterion) {
    bench_words(
        c,
        "bitplane_u32",
        &laplace::<u32>(8.5, 0x6269_7470_6c61_6e33),
    );
    bench_words(
        c,
        "bitplane_u64",
        &laplace::<u64>(32.5, 0x6269_7470_6c61_6e36),
    );
}

criterion_group!(benches, bitplane);
criterion_main!(benches);
