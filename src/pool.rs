//! Rayon thread pools, one per thread count, built once and reused. A request for more
//! threads than the machine has cores gets one per core (the output never depends on the
//! count), and at most [`MAX_POOLS`] pools are kept, so no pattern of requests can make
//! the process accumulate threads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use once_cell::sync::Lazy;
use rayon::{ThreadPool, ThreadPoolBuilder};

/// Most pools kept at once; building a new one beyond this drops the others (jobs
/// running on them keep them alive until they finish).
pub const MAX_POOLS: usize = 4;

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
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if threads == 0 {
        cores
    } else {
        threads.min(cores)
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
    if pools.len() >= MAX_POOLS {
        pools.clear();
    }
    pools.insert(threads, pool.clone());
    Some(pool)
}
