//! `KAROO_NUM_THREADS` replaces the thread count of every compression and decompression.
//! The variable is read once per process, so each case runs this test binary again as a
//! child process with the variable set, and the child reports what it saw.

use std::path::Path;
use std::process::Command;

use karoo::threads::{effective_threads, THREADS_VARIABLE};
use karoo::{compress, decompress_with, Params};

/// Set (to a report file's path) in the child process only.
const CHILD: &str = "KAROO_TEST_THREAD_VARIABLE_REPORT";

/// A smooth float32 chunk of several tiles.
fn chunk() -> (Vec<u8>, Params) {
    let (rows, cols) = (64, 8192);
    let data = (0..rows * cols)
        .flat_map(|i| {
            let (t, c) = ((i / cols) as f32, (i % cols) as f32);
            ((c * 0.1).sin() * (1.0 + t * 0.01)).to_le_bytes()
        })
        .collect();
    (data, Params::new(4, &[rows, cols]))
}

/// Threads of this process named like karoo's pool workers.
fn karoo_workers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("karoo-"))
        .count()
}

/// The child's side (does nothing in a normal test run): codes the chunk asking for
/// `KAROO_TEST_ASK` threads and writes what it saw to the report file, the compressed
/// chunk next to it.
#[test]
fn child_reports_its_thread_counts() {
    let Some(report) = std::env::var_os(CHILD) else {
        return;
    };
    let ask: usize = std::env::var("KAROO_TEST_ASK").unwrap().parse().unwrap();
    let (data, params) = chunk();
    let params = Params {
        threads: ask,
        ..params
    };
    let packed = compress(&data, &params).unwrap();
    assert_eq!(decompress_with(&packed, u64::MAX, ask).unwrap(), data);
    let line = format!(
        "{} {} {} {}",
        effective_threads(0),
        effective_threads(1),
        effective_threads(8),
        karoo_workers()
    );
    std::fs::write(Path::new(&report).with_extension("chunk"), packed).unwrap();
    std::fs::write(report, line).unwrap();
}

/// What a child with `KAROO_NUM_THREADS` = `value` (`None`: unset) asking for `ask`
/// threads reports: its effective counts for requests of 0, 1 and 8 threads, its pool
/// workers after coding, and its stderr.
fn run_child(value: Option<&str>, ask: usize) -> ([usize; 4], String) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.txt");
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "child_reports_its_thread_counts",
            "--test-threads=1",
        ])
        .env(CHILD, &report)
        .env("KAROO_TEST_ASK", ask.to_string());
    match value {
        Some(value) => command.env(THREADS_VARIABLE, value),
        None => command.env_remove(THREADS_VARIABLE),
    };
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "child failed: {stderr}");
    let text = std::fs::read_to_string(&report).unwrap();
    let counts: Vec<usize> = text.split(' ').map(|n| n.parse().unwrap()).collect();
    let (data, params) = chunk();
    let expected = compress(
        &data,
        &Params {
            threads: 1,
            ..params
        },
    )
    .unwrap();
    let packed = std::fs::read(report.with_extension("chunk")).unwrap();
    assert!(packed == expected, "{value:?}: the child's chunk differs");
    (counts.try_into().unwrap(), stderr)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn unset_or_zero_keeps_the_count_asked_for() {
    let cores = cores();
    for value in [None, Some("0"), Some(""), Some(" 0 ")] {
        let (counts, stderr) = run_child(value, 8);
        assert_eq!(
            counts,
            [cores, 1, 8.min(cores), 8.min(cores) - 1],
            "{value:?}"
        );
        assert!(!stderr.contains("karoo"), "{value:?}: {stderr}");
    }
}

#[test]
fn a_count_replaces_the_count_asked_for() {
    let cores = cores();
    let (counts, _) = run_child(Some("1"), 8);
    assert_eq!(counts, [1, 1, 1, 0], "1 thread: no pool at all");
    let two = 2.min(cores);
    let (counts, _) = run_child(Some("2"), 1);
    assert_eq!(counts, [two, two, two, two - 1], "a request for 1 gets 2");
    let (counts, _) = run_child(Some("1024"), 1);
    assert_eq!(
        counts,
        [cores, cores, cores, cores - 1],
        "capped at the cores"
    );
}

#[test]
fn an_invalid_value_is_ignored_with_one_warning() {
    let cores = cores();
    for value in ["two", "-1", "1025", "1.5"] {
        let (counts, stderr) = run_child(Some(value), 8);
        assert_eq!(
            counts,
            [cores, 1, 8.min(cores), 8.min(cores) - 1],
            "{value:?}"
        );
        let warning = format!(
            "karoo: ignoring KAROO_NUM_THREADS={value:?}: expected a whole number of threads \
             from 0 to 1024 (0 = the count asked for)\n"
        );
        assert_eq!(stderr.matches(&warning).count(), 1, "{value:?}: {stderr}");
    }
}
