//! Codec throughput on MeerKAT-like visibility chunks, against `memcpy`.
//!
//! The data are generated here, deterministically (fixed seed, no files): one chunk of
//! shape (time = 64, channels = 1024, correlation products = 16, re/im = 2), i.e. a
//! complex visibility per (time, channel, product). Each visibility is a fixed complex
//! gain per (channel, product) times a slowly varying complex time term (a slow phase
//! drift and a small amplitude ripple), plus Gaussian-like noise of about 1% of the
//! gain's amplitude. The same values are benched as float32 (8 MiB chunk, 4-byte
//! words) and as float64 (16 MiB chunk, 8-byte words), with time axis 0.
//!
//! For each word size there is one criterion group (`f32`, `f64`) with:
//!
//! * `memcpy`: `copy_from_slice` of the raw chunk into a preallocated buffer, the
//!   baseline measured in the same run, on the same machine;
//! * for each predictor x map x coder variant (`auto+auto+default` is karoo's default;
//!   then every predictor with Rice, the bit-plane coder, and the MeerKAT predictive
//!   packer's `previous+xor+lzbytes`; `KAROO_BENCH_ALL=1` runs every predictor with every coder):
//!   `<variant>/compress/1thread`, `.../compress/allcores` (`Params::threads` = 1 and 0),
//!   `.../decompress/1thread`, `.../decompress/allcores` (`decompress_with`; the
//!   checksum verification is included).
//!
//! Every line reports throughput in bytes of *raw* (uncompressed) data per second, so
//! the lines compare directly: divide a codec line's throughput by the `memcpy`
//! line's to get the codec's speed as a fraction of a plain memory copy. The
//! compression ratio (compressed / raw) of each variant is printed to stderr.
//!
//! Run with `cargo bench --bench codec` (add `-- --quick` for a rough, faster pass).

use std::f64::consts::TAU;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const TIMES: usize = 64;
const CHANNELS: usize = 1024;
const PRODUCTS: usize = 16;
const SHAPE: [usize; 4] = [TIMES, CHANNELS, PRODUCTS, 2];

/// Relative amplitude of the noise (standard deviation as a fraction of |gain|).
const NOISE: f64 = 0.01;

/// Standard-normal-like sample: the sum of 12 uniforms on [0, 1) minus 6 (Irwin-Hall),
/// good enough for benchmark data and needs nothing beyond `rand`.
fn gaussian(rng: &mut SmallRng) -> f64 {
    (0..12).map(|_| rng.gen::<f64>()).sum::<f64>() - 6.0
}

/// The visibilities as (re, im) pairs in C order over (time, channel, product).
fn visibilities() -> Vec<f64> {
    let mut rng = SmallRng::seed_from_u64(0x6b61_726f_6f00_0001);
    // Per-(channel, product) complex gain: amplitude spread over two decades, random
    // phase; autocorrelation-like products (every fifth) are real and larger.
    let gains: Vec<(f64, f64)> = (0..CHANNELS * PRODUCTS)
        .map(|i| {
            let product = i % PRODUCTS;
            if product.is_multiple_of(5) {
                (rng.gen_range(50.0..200.0), 0.0)
            } else {
                let amp = 10f64.powf(rng.gen_range(-1.0..1.0));
                let phase = rng.gen_range(0.0..TAU);
                (amp * phase.cos(), amp * phase.sin())
            }
        })
        .collect();
    // Slowly varying time term: a phase drift of a few degrees per dump and a 0.5%
    // amplitude ripple, both smooth over the 64 dumps.
    let drift: Vec<(f64, f64)> = (0..TIMES)
        .map(|t| {
            let t = t as f64;
            let amp = 1.0 + 0.005 * (TAU * t / 40.0).sin();
            let phase = 0.05 * t;
            (amp * phase.cos(), amp * phase.sin())
        })
        .collect();
    let mut out = Vec::with_capacity(TIMES * CHANNELS * PRODUCTS * 2);
    for &(dr, di) in &drift {
        for &(gr, gi) in &gains {
            let sigma = NOISE * gr.hypot(gi);
            let re = gr * dr - gi * di + sigma * gaussian(&mut rng);
            let im = gr * di + gi * dr + sigma * gaussian(&mut rng);
            out.push(re);
            out.push(im);
        }
    }
    out
}

fn f32_bytes(values: &[f64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| (v as f32).to_le_bytes())
        .collect()
}

fn f64_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|&v| v.to_le_bytes()).collect()
}

/// A predictor x map x coder combination, by name (`None` fields: auto / default).
struct Variant {
    name: String,
    predictor: Option<karoo::Predictor>,
    map: Option<karoo::ResidualMap>,
    coder: Option<karoo::Coder>,
}

/// The combinations measured: the default, every predictor with the default coder
/// (patched packing), auto with Rice, the bit-plane coder, and the MeerKAT predictive
/// packer's original scheme. `KAROO_BENCH_ALL=1` measures every predictor with every coder
/// instead.
fn variants() -> Vec<Variant> {
    use karoo::{Coder, Predictor, ResidualMap};
    let named =
        |predictor: Option<Predictor>, map: Option<ResidualMap>, coder: Option<Coder>| Variant {
            name: format!(
                "{}+{}+{}",
                predictor.map_or("auto".into(), |p| p.name()),
                map.map_or("auto", |m| match m {
                    ResidualMap::Xor => "xor",
                    ResidualMap::RotateSubtract => "rotsub",
                    ResidualMap::Subtract => "sub",
                    _ => "other",
                }),
                coder.map_or("default", Coder::name)
            ),
            predictor,
            map,
            coder,
        };
    let mut out = vec![named(None, None, None)];
    let coders: Vec<Coder> = if std::env::var_os("KAROO_BENCH_ALL").is_some() {
        Coder::ALL.to_vec()
    } else {
        vec![Coder::Patched]
    };
    for coder in &coders {
        for predictor in Predictor::ALL {
            out.push(named(Some(predictor), None, Some(*coder)));
        }
    }
    if coders.len() == 1 {
        out.push(named(None, None, Some(Coder::Rice)));
        out.push(named(Some(Predictor::PREVIOUS), None, Some(Coder::Rice)));
        out.push(named(None, None, Some(Coder::Bitplane)));
        out.push(named(
            Some(Predictor::PREVIOUS),
            None,
            Some(Coder::Bitplane),
        ));
        out.push(named(
            Some(Predictor::PREVIOUS),
            Some(ResidualMap::Xor),
            Some(Coder::LeadingZeroBytes),
        ));
    }
    out
}

fn params(word_size: usize, threads: usize, variant: &Variant) -> karoo::Params {
    karoo::Params {
        threads,
        components: 2,
        predictor: variant.predictor,
        residual_map: variant.map,
        coder: variant.coder,
        ..karoo::Params::new(word_size, &SHAPE)
    }
}

fn bench_dataset(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    raw: &[u8],
    word_size: usize,
) {
    group.throughput(Throughput::Bytes(raw.len() as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(1));

    let mut dst = vec![0u8; raw.len()];
    group.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(raw));
            black_box(&mut dst);
        })
    });
    for variant in variants() {
        let packed = karoo::compress(raw, &params(word_size, 0, &variant)).expect("compress");
        assert_eq!(
            karoo::decompress(&packed).expect("decompress"),
            raw,
            "round trip"
        );
        eprintln!(
            "{} bytes/word {word_size}: ratio {:.4}",
            variant.name,
            packed.len() as f64 / raw.len() as f64
        );
        for (threads_name, threads) in [("1thread", 1), ("allcores", 0)] {
            let p = params(word_size, threads, &variant);
            group.bench_function(format!("{}/compress/{threads_name}", variant.name), |b| {
                b.iter(|| karoo::compress(black_box(raw), &p).expect("compress"))
            });
            group.bench_function(format!("{}/decompress/{threads_name}", variant.name), |b| {
                b.iter(|| {
                    karoo::decompress_with(black_box(&packed), u64::MAX, threads)
                        .expect("decompress")
                })
            });
        }
    }
}

fn codec(c: &mut Criterion) {
    let values = visibilities();
    let datasets = [
        ("f32", f32_bytes(&values), 4),
        ("f64", f64_bytes(&values), 8),
    ];
    for (name, raw, word_size) in &datasets {
        let mut group = c.benchmark_group(*name);
        bench_dataset(&mut group, raw, *word_size);
        group.finish();
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
