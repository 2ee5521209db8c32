//! A child forked after the parent coded chunks on several threads codes chunks on
//! several threads too: the parent's pool workers do not exist in the child, so the
//! child must build its own pools instead of handing tiles to them and waiting forever.

#![cfg(unix)]

use std::time::{Duration, Instant};

use karoo::internals::Header;
use karoo::{compress, decompress_with, Params};

/// A smooth float32 chunk of `rows` x `cols`.
fn chunk(rows: usize, cols: usize) -> Vec<u8> {
    (0..rows * cols)
        .flat_map(|i| {
            let (t, c) = ((i / cols) as f32, (i % cols) as f32);
            ((c * 0.1).sin() * (1.0 + t * 0.01)).to_le_bytes()
        })
        .collect()
}

/// How long the child may take before it counts as hung (it needs milliseconds).
const CHILD_DEADLINE: Duration = Duration::from_secs(60);

/// Waits for child `pid` at most `deadline`; kills it on time-out. Its exit status, or
/// `None` if it timed out.
fn wait_for(pid: libc::pid_t, deadline: Duration) -> Option<libc::c_int> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: plain system call on our own child, `status` is a valid out-pointer.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(done >= 0, "waitpid failed");
        if done == pid {
            return Some(status);
        }
        if start.elapsed() > deadline {
            // SAFETY: as above; the child is ours and has not been reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_child_forked_after_multithreaded_coding_codes_on_several_threads() {
    let threads = 4;
    if karoo::threads::effective_threads(threads) < 2 {
        eprintln!("one core only: no thread pool to inherit, nothing to test");
        return;
    }
    let data = chunk(64, 8192);
    let params = Params {
        threads,
        ..Params::new(4, &[64, 8192])
    };
    // The parent builds its pools and fills its buffer pool.
    let packed = compress(&data, &params).unwrap();
    let (header, _) = Header::parse(&packed, u64::MAX).unwrap();
    assert!(header.tile_sizes.len() >= 4, "a chunk of several tiles");
    assert_eq!(decompress_with(&packed, u64::MAX, threads).unwrap(), data);

    // SAFETY: the child only runs the codec (which builds its own threads) and leaves
    // with `_exit`, never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let worked = std::panic::catch_unwind(|| {
            for _ in 0..3 {
                assert_eq!(compress(&data, &params).unwrap(), packed);
                assert_eq!(decompress_with(&packed, u64::MAX, threads).unwrap(), data);
            }
            // The child's pool has live workers: tiles ran on more than one thread.
            let names = std::fs::read_dir("/proc/self/task")
                .map(|tasks| {
                    tasks
                        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                        .filter(|name| name.starts_with("karoo-"))
                        .count()
                })
                .unwrap_or(1);
            assert!(names >= 1, "no karoo worker thread in the child");
        })
        .is_ok();
        // SAFETY: ends the child at once, without running the parent's exit handlers.
        unsafe { libc::_exit(if worked { 0 } else { 1 }) };
    }
    let status = wait_for(pid, CHILD_DEADLINE)
        .unwrap_or_else(|| panic!("the forked child hung for {CHILD_DEADLINE:?} and was killed"));
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked child failed (wait status {status:#x})"
    );
    // The parent's pools still work.
    assert_eq!(decompress_with(&packed, u64::MAX, threads).unwrap(), data);
}
