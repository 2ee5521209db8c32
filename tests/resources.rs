//! Resources: concurrent callers, and no memory or thread growth across many chunks.

use karoo::{compress, decompress_with, Params};

/// A small smooth float32 chunk of `rows` x `cols`, different per `seed`.
fn chunk(rows: usize, cols: usize, seed: u32) -> Vec<u8> {
    (0..rows * cols)
        .flat_map(|i| {
            let (t, c) = ((i / cols) as f32, (i % cols) as f32);
            ((c * 0.1 + seed as f32).sin() * (1.0 + t * 0.01)).to_le_bytes()
        })
        .collect()
}

/// Serialises the tests of this file: the leak test counts the process's threads and
/// resident memory, which a concurrent test would change.
static EXCLUSIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Reads a field (in kB or a count) of /proc/self/status, where there is one.
fn proc_status(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn many_threads_call_the_codec_at_once() {
    let _alone = EXCLUSIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    std::thread::scope(|scope| {
        for worker in 0..16u32 {
            scope.spawn(move || {
                for round in 0..20u32 {
                    let data = chunk(16, 700, worker * 100 + round);
                    let params = Params {
                        threads: (round % 3) as usize,
                        ..Params::new(4, &[16, 700])
                    };
                    let packed = compress(&data, &params).unwrap();
                    let single = compress(
                        &data,
                        &Params {
                            threads: 1,
                            ..params
                        },
                    )
                    .unwrap();
                    assert_eq!(packed, single, "output depends on the thread count");
                    assert_eq!(
                        decompress_with(&packed, u64::MAX, (round % 4) as usize).unwrap(),
                        data
                    );
                }
            });
        }
    });
}

#[test]
fn ten_thousand_chunks_leak_neither_memory_nor_threads() {
    let _alone = EXCLUSIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let run = |n: u32| {
        for i in 0..n {
            let data = chunk(8, 256, i);
            let packed = compress(
                &data,
                &Params {
                    threads: 2,
                    ..Params::new(4, &[8, 256])
                },
            )
            .unwrap();
            assert_eq!(decompress_with(&packed, u64::MAX, 2).unwrap(), data);
        }
    };
    run(500); // warm up: thread pools and allocator arenas
    let (rss0, threads0) = (proc_status("VmRSS:"), proc_status("Threads:"));
    run(10_000);
    let (rss1, threads1) = (proc_status("VmRSS:"), proc_status("Threads:"));
    if let (Some(a), Some(b)) = (rss0, rss1) {
        assert!(
            b < a + 8 * 1024,
            "resident memory grew from {a} kB to {b} kB over 10,000 chunks"
        );
    }
    assert_eq!(threads0, threads1, "thread count changed");
}

/// Asking for every thread count from 1 to 1024 (as datasets with odd cd_values could)
/// keeps at most a few pools of at most one thread per core alive.
#[test]
fn many_thread_counts_do_not_accumulate_threads() {
    let _alone = EXCLUSIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let data = chunk(8, 256, 7);
    let before = proc_status("Threads:");
    for threads in 1..=1024 {
        let params = Params {
            threads,
            ..Params::new(4, &[8, 256])
        };
        let packed = compress(&data, &params).unwrap();
        assert_eq!(decompress_with(&packed, u64::MAX, threads).unwrap(), data);
    }
    let Some(a) = before else { return };
    let bound = a + karoo::threads::MAX_POOLS as u64 * cores;
    // Threads of dropped pools exit asynchronously: give them a moment.
    let mut after = proc_status("Threads:").unwrap_or(0);
    for _ in 0..40 {
        if after <= bound {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        after = proc_status("Threads:").unwrap_or(0);
    }
    assert!(
        after <= bound,
        "{a} threads before, {after} after 1024 thread counts ({cores} cores)"
    );
}
