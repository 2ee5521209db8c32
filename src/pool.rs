//! Rayon thread pools, one per requested thread count, built once and reused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use once_cell::sync::Lazy;
use rayon::{ThreadPool, ThreadPoolBuilder};

static POOLS: Lazy<Mutex<HashMap<usize, Arc<ThreadPool>>>> = Lazy::new(Default::default);

/// Runs `job` on a pool of `threads` workers (0 = all cores). If no pool can be built
/// (the system refuses threads), the job runs on the calling thread instead.
pub fn run_with_threads<R: Send>(threads: usize, job: impl FnOnce() -> R + Send) -> R {
    match pool(threads) {
        Some(pool) => pool.install(job),
        None => job(),
    }
}

fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    let mut pools = POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(pool) = pools.get(&threads) {
        return Some(pool.clone());
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("karoo-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    pools.insert(threads, pool.clone());
    Some(pool)
}
