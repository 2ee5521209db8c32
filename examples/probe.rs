//! Times the core codec on one chunk of complex64 words, one thread by default: the probe that
//! `scripts/research/probes.py` builds against two revisions and runs interleaved.
//!
//! Usage: `probe FILE ROWS REPEATS [archive]`. FILE holds the chunk's raw little-endian
//! float32 words (complex64 pairs), ROWS time rows of equal length (or the shape in
//! `KAROO_PROBE_SHAPE`). `KAROO_PROBE_WORD` sets the word size in bytes (default 4) and
//! `KAROO_PROBE_INTEGER=1` codes the words as integers; `KAROO_PROBE_ONLY=compress` (or
//! `decompress`) runs the other direction once, for profiles of one;
//! `KAROO_PROBE_THREADS` codes on that many threads (default 1); `KAROO_PROBE_LEVEL` sets
//! the effort level (default 0, the mode's default); `KAROO_PROBE_OUT` names
//! a file the compressed chunk is written to; `KAROO_PROBE_GAP_US` spins that long before
//! each run, as HDF5 works between chunks while the pool's workers fall asleep. Compresses and decompresses into one
//! buffer each, reused, as the HDF5 filter's buffers are.
//! Prints the ratio and the best compress and decompress throughputs in MB/s of REPEATS
//! runs each.

use std::time::Instant;

use karoo::{compress_parts, decompress_into, ElementKind, Mode, Params};

/// The chunk's shape: `KAROO_PROBE_SHAPE` (comma-separated, slowest first, ending in the
/// 2 components) when set, else (ROWS, elements per row, 2).
fn shape(rows: usize, elements: usize) -> Vec<usize> {
    match std::env::var("KAROO_PROBE_SHAPE") {
        Ok(text) => text
            .split(',')
            .map(|d| d.trim().parse().expect("KAROO_PROBE_SHAPE: numbers"))
            .collect(),
        Err(_) => vec![rows, elements, 2],
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: probe FILE ROWS REPEATS [archive]");
        std::process::exit(2);
    }
    let data = std::fs::read(&args[1]).expect("readable probe file");
    let rows: usize = args[2].parse().expect("ROWS is a number");
    let repeats: usize = args[3].parse().expect("REPEATS is a number");
    let word: usize = std::env::var("KAROO_PROBE_WORD")
        .map(|w| w.parse().expect("KAROO_PROBE_WORD: a number"))
        .unwrap_or(4);
    let elements = data.len() / (2 * word) / rows;
    assert_eq!(
        elements * 2 * word * rows,
        data.len(),
        "rows of whole complex elements"
    );
    let element = if std::env::var("KAROO_PROBE_INTEGER").is_ok_and(|v| v == "1") {
        ElementKind::Integer
    } else {
        ElementKind::Float
    };
    let params = Params {
        components: 2,
        threads: std::env::var("KAROO_PROBE_THREADS")
            .map_or(1, |t| t.parse().expect("KAROO_PROBE_THREADS: a number")),
        mode: if args.get(4).is_some_and(|m| m == "archive") {
            Mode::Archive
        } else {
            Mode::Fast
        },
        element,
        level: std::env::var("KAROO_PROBE_LEVEL")
            .map_or(0, |l| l.parse().expect("KAROO_PROBE_LEVEL: 0 to 9")),
        ..Params::new(word, &shape(rows, elements))
    };
    let only = std::env::var("KAROO_PROBE_ONLY").unwrap_or_default();
    let repeats_of = |skipped: &str| if only == skipped { 1 } else { repeats };
    // Busy time between runs, as HDF5 spends between chunks (reading, writing, copying),
    // during which the pool's workers go back to sleep.
    let gap = std::time::Duration::from_micros(
        std::env::var("KAROO_PROBE_GAP_US")
            .map_or(0, |g| g.parse().expect("KAROO_PROBE_GAP_US: a number")),
    );
    // Bytes written before each run, as HDF5 reads the next chunk and copies the last
    // one out between chunks: the caches hold other data when the codec starts.
    let mut evict = vec![
        0u8;
        std::env::var("KAROO_PROBE_EVICT_KB").map_or(0, |k| k
            .parse::<usize>()
            .expect("KAROO_PROBE_EVICT_KB: a number"))
            << 10
    ];
    let mut best = |repeats: usize, work: &mut dyn FnMut()| {
        (0..repeats.max(1))
            .map(|round| {
                evict.fill(round as u8);
                std::hint::black_box(&mut evict);
                let idle = Instant::now();
                while idle.elapsed() < gap {
                    std::hint::spin_loop();
                }
                let start = Instant::now();
                work();
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    // As the filter does: the chunk's parts are copied into one output buffer (HDF5's
    // there, one reused here) and their memory goes back to the pool for the next chunk.
    let mut packed = Vec::with_capacity(data.len() + 4096);
    let compress_s = best(repeats_of("decompress"), &mut || {
        let parts = compress_parts(&data, &params).expect("compresses");
        packed.clear();
        parts
            .parts()
            .for_each(|part| packed.extend_from_slice(part));
    });
    if let Ok(path) = std::env::var("KAROO_PROBE_OUT") {
        std::fs::write(path, &packed).expect("writable probe output");
    }
    // Into one buffer, as a reader's chunk cache or HDF5's filter buffer reuses memory:
    // the timings leave out the allocator's page faults and zero fills.
    let mut back = vec![0; data.len()];
    if std::env::var("KAROO_PROBE_ALTERNATE").is_ok_and(|v| v == "1") {
        // As a benchmark calling compress then decompress does: each decompression
        // right after a compression, into a fresh output (as numpy's `empty` or HDF5's
        // filter buffer), so the allocator's state is the host's.
        let (mut compress_best, mut decompress_best) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..repeats.max(1) {
            let start = Instant::now();
            let parts = compress_parts(&data, &params).expect("compresses");
            let packed: Vec<u8> = parts.parts().flatten().copied().collect();
            drop(parts);
            let mid = Instant::now();
            let mut fresh = vec![0; data.len()];
            decompress_into(&packed, &mut fresh, params.threads).expect("decompresses");
            let end = Instant::now();
            assert!(fresh == data, "round trip is bit-exact");
            compress_best = compress_best.min((mid - start).as_secs_f64());
            decompress_best = decompress_best.min((end - mid).as_secs_f64());
        }
        report(
            data.len(),
            packed.len(),
            compress_best,
            decompress_best,
            " (alternating)",
        );
        return;
    }
    let decompress_s = best(repeats_of("compress"), &mut || {
        decompress_into(&packed, &mut back, params.threads).expect("decompresses");
    });
    assert!(back == data, "round trip is bit-exact");
    report(data.len(), packed.len(), compress_s, decompress_s, "");
}

/// Prints the ratio of `packed` to `raw` bytes and the throughputs in MB/s of raw bytes
/// of the best compression and decompression times, then `note`.
fn report(raw: usize, packed: usize, compress_s: f64, decompress_s: f64, note: &str) {
    let mb = raw as f64 / 1e6;
    println!(
        "ratio {:.4} compress {:.1} decompress {:.1}{note}",
        packed as f64 / raw as f64,
        mb / compress_s,
        mb / decompress_s
    );
}
