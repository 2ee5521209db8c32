//! Running a chunk's tiles in parallel: on the calling thread and the workers of a rayon
//! pool, one pool per thread count, built once and reused. A request for more threads
//! than the machine has cores gets one per core (the output never depends on the
//! count), and at most [`MAX_POOLS`] pools are kept, so no pattern of requests can make
//! the process accumulate threads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::LazyLock;

/// Most pools kept at once; building a new one beyond this drops the others (jobs
/// running on them keep them alive until they finish).
pub const MAX_POOLS: usize = 4;

static POOLS: LazyLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = LazyLock::new(Default::default);

/// `work` applied to every item, in item order, on `threads` threads (0 = all cores):
/// the calling thread and `threads - 1` pool workers, each taking the next item as soon
/// as it is done with its last. The caller starts at once, and a worker that wakes late
/// (a sleeping thread takes tens of microseconds to wake, a tile's work a few hundred)
/// takes fewer items instead of leaving the others waiting for its share. If no pool
/// can be built (the system refuses threads), the caller does all the work.
pub fn map_shared<I: Send, R: Send>(
    threads: usize,
    items: Vec<I>,
    work: impl Fn(I) -> R + Sync,
) -> Vec<R> {
    let count = items.len();
    let helpers = participants(threads).min(count).saturating_sub(1);
    let Some(pool) = (helpers > 0).then(|| pool(helpers)).flatten() else {
        return items.into_iter().map(work).collect();
    };
    let queue = Mutex::new(items.into_iter().enumerate());
    let done = Mutex::new(Vec::with_capacity(count));
    let take_all = || {
        let mut mine = Vec::new();
        loop {
            let next = lock(&queue).next();
            let Some((index, item)) = next else { break };
            mine.push((index, work(item)));
        }
        lock(&done).extend(mine);
    };
    pool.in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| take_all());
        }
        take_all();
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    done.sort_unstable_by_key(|&(index, _)| index);
    done.into_iter().map(|(_, result)| result).collect()
}

/// The mutex's value, even if a thread panicked holding it (the panic reaches the caller
/// through the scope anyway).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The machine's cores, asked once: the query reads the process's affinity and cgroup
/// quota files (about 25 microseconds, 21 system calls, measured), too slow to repeat
/// for every chunk.
static CORES: LazyLock<usize> =
    LazyLock::new(|| std::thread::available_parallelism().map_or(1, |n| n.get()));

/// Threads a request for `threads` gets (0 = all cores; at most one per core).
fn participants(threads: usize) -> usize {
    if threads == 0 {
        *CORES
    } else {
        threads.min(*CORES)
    }
}

/// Whether [`map_shared`] with `threads` would share `count` items between threads (if
/// it can build its pool); otherwise the caller does all the work.
pub fn runs_in_parallel(threads: usize, count: usize) -> bool {
    participants(threads).min(count) > 1
}

/// The pool of `threads` workers, built on first use.
fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    let mut pools = lock(&POOLS);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_item_is_worked_once_and_results_keep_item_order() {
        for threads in [0, 1, 2, 3, 64] {
            for count in [0, 1, 2, 5, 100] {
                let calls = AtomicUsize::new(0);
                let items: Vec<usize> = (0..count).collect();
                let results = map_shared(threads, items, |i| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    i * i
                });
                assert_eq!(results, (0..count).map(|i| i * i).collect::<Vec<_>>());
                assert_eq!(calls.load(Ordering::Relaxed), count, "{threads} threads");
            }
        }
    }

    #[test]
    fn the_caller_and_the_workers_share_the_items() {
        let threads = Mutex::new(std::collections::HashSet::new());
        map_shared(2, (0..20).collect(), |_: usize| {
            lock(&threads).insert(std::thread::current().id());
            std::thread::sleep(std::time::Duration::from_millis(2));
        });
        let used = lock(&threads);
        assert!(used.contains(&std::thread::current().id()));
        assert_eq!(used.len(), participants(2));
    }

    #[test]
    fn a_panicking_item_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            map_shared(2, (0..50).collect(), |i: usize| {
                assert_ne!(i, 37, "item 37");
                i
            })
        });
        let message = caught.expect_err("the panic propagates");
        let text = message
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(text.contains("item 37"), "{text}");
        // The pool survives for later calls.
        assert_eq!(map_shared(2, vec![1, 2, 3], |i| i + 1), vec![2, 3, 4]);
    }
}
