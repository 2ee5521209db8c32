//! Running a chunk's tiles in parallel: on the calling thread and the workers of a rayon
//! pool, one pool per thread count, built once and reused. A request for more threads
//! than the machine has cores gets one per core (the output never depends on the
//! count), and at most [`MAX_POOLS`] pools are kept, so no pattern of requests can make
//! the process accumulate threads.
//!
//! The environment variable [`THREADS_VARIABLE`] overrides every request. The pools, the
//! core count and the override are per process: a child forked after the parent used
//! its pools builds its own (the parent's workers do not exist in the child).

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::params::MAX_THREADS;
use crate::process_local::ProcessLocal;

/// Most pools kept at once; building a new one beyond this drops the others (jobs
/// running on them keep them alive until they finish).
pub const MAX_POOLS: usize = 4;

/// Environment variable whose value, a whole number of threads from 1 to
/// [`MAX_THREADS`], replaces the thread count of every compression and decompression
/// (0 or unset: the count asked for). Read once per process, at the first chunk coded.
pub const THREADS_VARIABLE: &str = "KAROO_NUM_THREADS";

/// This process's pools, by worker count.
static POOLS: ProcessLocal<Mutex<HashMap<usize, Arc<ThreadPool>>>> =
    ProcessLocal::new(Default::default);

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

/// `a()` and `b()` on `threads` threads (0 = all cores), as [`map_shared`] runs two items:
/// the caller starts on the first, a pool worker takes the second, and whichever is free
/// first takes what is left; both on the caller when there is one thread.
pub fn join<A: Send, B: Send>(
    threads: usize,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    /// One of the two calls, or its result.
    enum Either<A, B> {
        First(A),
        Second(B),
    }
    let calls = vec![Either::First(a), Either::Second(b)];
    // A call runs once: map_shared hands each item to one thread.
    let done = map_shared(threads, calls, |call| match call {
        Either::First(a) => Either::First(a()),
        Either::Second(b) => Either::Second(b()),
    });
    let mut done = done.into_iter();
    match (done.next(), done.next()) {
        (Some(Either::First(a)), Some(Either::Second(b))) => (a, b),
        _ => unreachable!("map_shared returns one result per item, in item order"),
    }
}

/// The mutex's value, even if a thread panicked holding it (the panic reaches the caller
/// through the scope anyway).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What bounds the thread count in this process, found once.
struct Limits {
    /// The cores this process may use: the query reads the process's affinity and cgroup
    /// quota files (about 25 microseconds, 21 system calls, measured), too slow to repeat
    /// for every chunk.
    cores: usize,
    /// [`THREADS_VARIABLE`]'s count, if it is set to one.
    forced: Option<usize>,
}

static LIMITS: ProcessLocal<Limits> = ProcessLocal::new(|| Limits {
    cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
    forced: forced_threads(),
});

/// [`THREADS_VARIABLE`]'s thread count; a value that is not one is ignored, with a
/// warning on stderr.
fn forced_threads() -> Option<usize> {
    let value = std::env::var_os(THREADS_VARIABLE)?;
    parse_forced(&value.to_string_lossy()).unwrap_or_else(|warning| {
        // Nothing to do if stderr is gone.
        let _ = writeln!(std::io::stderr(), "{warning}");
        None
    })
}

/// The thread count in a value of [`THREADS_VARIABLE`]: `None` for 0 or an empty value,
/// a warning for anything but a whole number from 0 to [`MAX_THREADS`].
fn parse_forced(value: &str) -> Result<Option<usize>, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    match trimmed.parse::<usize>() {
        Ok(0) => Ok(None),
        Ok(n) if n <= MAX_THREADS => Ok(Some(n)),
        _ => Err(format!(
            "karoo: ignoring {THREADS_VARIABLE}={value:?}: expected a whole number of threads \
             from 0 to {MAX_THREADS} (0 = the count asked for)"
        )),
    }
}

/// Threads a request for `threads` gets: [`THREADS_VARIABLE`]'s count when set, else
/// `threads` (0 = all cores); at most one per core.
fn participants(threads: usize) -> usize {
    let limits = LIMITS.get();
    match limits.forced.unwrap_or(threads) {
        0 => limits.cores,
        n => n.min(limits.cores),
    }
}

/// The most threads that coding or decoding a chunk with `threads` (as in
/// [`Params::threads`](crate::Params::threads) or [`decompress_with`](crate::decompress_with))
/// uses in this process: the count in the environment variable `KAROO_NUM_THREADS` when
/// it is set to 1 to [`MAX_THREADS`], else `threads` (0 = all cores); never more than the
/// cores the process may use. A chunk with fewer tiles uses fewer.
pub fn effective_threads(threads: usize) -> usize {
    participants(threads)
}

/// Whether [`map_shared`] with `threads` would share `count` items between threads (if
/// it can build its pool); otherwise the caller does all the work.
pub fn runs_in_parallel(threads: usize, count: usize) -> bool {
    participants(threads).min(count) > 1
}

/// The pool of `threads` workers, built on first use.
fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    let mut pools = lock(POOLS.get());
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
    fn join_returns_both_results_in_order() {
        for threads in [0, 1, 2, 64] {
            let (a, b) = join(threads, || vec![1u8, 2], || "second");
            assert_eq!((a, b), (vec![1u8, 2], "second"), "{threads} threads");
        }
    }

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
