#!/usr/bin/env python3
"""A/B timing of the core codec on probe chunks, for revisions of this repository.

Builds `examples/probe.rs` (from the working tree) against each revision, then runs the
builds interleaved, best of `--rounds` rounds each, each build in turn first and last
(machines are shared and noisy: only numbers from one run compare, and on the shared
2-core VM the order two builds ran in moved their timings by a fifth), on one thread:

- the generated observation's first 4 MiB chunk (8 time rows, scripts/datasets.py);
- each shared HERA file's visibilities (pairs of int32), time-major, as one chunk of
  pairs of 4-byte words (skipped when ../shared/data is absent).

Prints a markdown table of ratio and compress / decompress MB/s, with each revision's
change against the first: of the best rounds, and the median of the changes round by
round (each round's timings against the first revision's of the same round). On a noisy
machine the best of a few rounds can differ by a fifth or more between two runs of one
build; the paired median holds steadier, as a burst of load slows both sides of a pair.
A revision is anything `git rev-parse` takes, or `.` for the working tree; `--native`
adds the last one built with `-C target-cpu=native`. Other revisions are checked out as
git worktrees under target/probes (`git worktree prune` after deleting it). Example:
`scripts/research/probes.py HEAD~3 .`

`--counts` prints, instead of timings, what one compress and one decompress call of each
build execute, counted by Valgrind's Cachegrind with its branch simulation: instructions
and mispredicted branches (conditional and indirect). The counts are the same from run
to run whatever the machine's load, so they show changes of a few percent that the
timings of a shared machine hide. They are not times: a stall or a busy port costs no
instruction, and Cachegrind's branch predictor is simpler than a processor's (on the
AMD EPYC VM, two encoders with 30% fewer of its mispredictions in fast compress were not
faster). A change is kept on its timings; the counts help explain them.
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets  # noqa: E402

REPO = datasets.REPO
WORK = REPO / "target" / "probes"


def probe_chunks(out_dir):
    """[(name, path, rows)] of the probe chunks written as raw pairs of 4-byte words (the
    HERA files hold pairs of int32; the probe codes every chunk as complex64)."""
    chunks = [("observation", datasets.meerkat_like()[:8])]
    for path in datasets.hera_files():
        time_major = datasets.load_hera(path)[0]
        chunks.append((path.name.split(".")[1], time_major))
    written = []
    for name, array in chunks:
        path = pathlib.Path(out_dir) / f"{name}.bin"
        np.ascontiguousarray(array).tofile(path)
        written.append((name, path, array.shape[0]))
    return written


def build(rev, native=False):
    """Path of the probe binary built against `rev` (for this CPU alone if `native`)."""
    if rev == ".":
        src = REPO
    else:
        sha = subprocess.check_output(["git", "rev-parse", "--short", rev], cwd=REPO, text=True).strip()
        src = WORK / f"src-{sha}"
        if not src.exists():
            subprocess.check_call(["git", "worktree", "add", "--detach", "-f", str(src), sha], cwd=REPO)
        (src / "examples").mkdir(exist_ok=True)
        (src / "examples" / "probe.rs").write_text((REPO / "examples" / "probe.rs").read_text())
    target = WORK / "build" if rev != "." else REPO / "target"
    env = dict(os.environ)
    if native:
        target = WORK / "build-native"
        env["RUSTFLAGS"] = (env.get("RUSTFLAGS", "") + " -C target-cpu=native").strip()
    subprocess.check_call(
        ["cargo", "build", "--quiet", "--release", "-p", "karoo", "--example", "probe", "--target-dir", str(target)],
        cwd=src,
        env=env,
    )
    binary = WORK / f"probe-{rev.replace('/', '_')}{'-native' if native else ''}"
    binary.write_bytes((target / "release" / "examples" / "probe").read_bytes())
    binary.chmod(0o755)
    return binary


def cachegrind_counts(binary, path, rows, only, repeats):
    """(instructions, mispredicted branches) of a probe call that runs `only` (compress
    or decompress) `repeats` times and the other direction once, under Cachegrind."""
    env = dict(os.environ, KAROO_PROBE_ONLY=only)
    run = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--branch-sim=yes",
            "--cachegrind-out-file=/dev/null",
            str(binary),
            str(path),
            str(rows),
            str(repeats),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    counts = {}
    for key, label in (("instructions", r"I\s+refs:"), ("mispredicts", r"Mispredicts:")):
        found = re.search(label + r"\s+([\d,]+)", run.stderr)
        if found is None:
            sys.exit(f"no Cachegrind count '{key}' in the output of {binary}:\n{run.stderr}")
        counts[key] = int(found.group(1).replace(",", ""))
    return counts["instructions"], counts["mispredicts"]


def print_counts(binaries, chunks, base):
    """Instructions and mispredicted branches of one call each way: the counts of a
    probe run with three calls less those of a run with one, halved (the process's
    start, the file's reading and the other direction's one call cancel)."""
    if shutil.which("valgrind") is None:
        sys.exit("--counts needs valgrind (apt install valgrind)")
    print("| probe | direction | revision | instructions (M) | mispredicted branches (K) |")
    print("|---|---|---|---|---|")
    for name, path, rows in chunks:
        for direction in ("compress", "decompress"):
            per_call = {}
            for rev, binary in binaries.items():
                one = cachegrind_counts(binary, path, rows, direction, 1)
                three = cachegrind_counts(binary, path, rows, direction, 3)
                per_call[rev] = tuple((t - o) / 2 for t, o in zip(three, one))
            for rev, (instructions, mispredicts) in per_call.items():
                bi, bm = per_call[base]
                change = ("", "")
                if rev != base:
                    change = (f" ({instructions / bi - 1:+.1%})", f" ({mispredicts / bm - 1:+.1%})")
                print(
                    f"| {name} | {direction} | {rev} | {instructions / 1e6:.1f}{change[0]} "
                    f"| {mispredicts / 1e3:.1f}{change[1]} |"
                )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revs", nargs="+", help="revisions to compare (the first is the baseline)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (best kept)")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs inside each probe call")
    parser.add_argument(
        "--native", action="store_true", help="also the last revision built with -C target-cpu=native"
    )
    parser.add_argument(
        "--counts",
        action="store_true",
        help="instructions and mispredicted branches per call (Valgrind's Cachegrind) instead of timings",
    )
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    binaries = {rev: build(rev) for rev in args.revs}
    if args.native:
        binaries[args.revs[-1] + " native"] = build(args.revs[-1], native=True)
    ratio = {}
    # (probe, revision) -> (compress, decompress) MB/s of each round, in round order.
    rounds = {}
    with tempfile.TemporaryDirectory(dir="/dev/shm" if pathlib.Path("/dev/shm").is_dir() else None) as tmp:
        chunks = probe_chunks(tmp)
        if args.counts:
            print_counts(binaries, chunks, args.revs[0])
            return
        for round_number in range(args.rounds):
            # Each build first in one round, last in the next.
            order = list(binaries.items())
            if round_number % 2:
                order.reverse()
            for name, path, rows in chunks:
                for rev, binary in order:
                    out = subprocess.check_output([str(binary), str(path), str(rows), str(args.repeats)], text=True)
                    r, c, d = map(float, re.findall(r"[\d.]+", out))
                    ratio[name, rev] = r
                    rounds.setdefault((name, rev), []).append((c, d))
    base = args.revs[0]
    best = {key: tuple(map(max, zip(*speeds))) for key, speeds in rounds.items()}
    print("| probe | revision | ratio | compress MB/s | decompress MB/s | compress, paired | decompress, paired |")
    print("|---|---|---|---|---|---|---|")
    for name, _, _ in chunks:
        for rev in binaries:
            c, d = best[name, rev]
            bc, bd = best[name, base]
            if rev == base:
                change, paired = ("", ""), ("", "")
            else:
                change = f" ({c / bc - 1:+.0%})", f" ({d / bd - 1:+.0%})"
                paired = tuple(f"{paired_change(rounds[name, rev], rounds[name, base], k):+.0%}" for k in (0, 1))
            print(f"| {name} | {rev} | {ratio[name, rev]:.4f} | {c:.0f}{change[0]} | {d:.0f}{change[1]} "
                  f"| {paired[0]} | {paired[1]} |")


def paired_change(speeds, base_speeds, k):
    """Median over rounds of speed `k` (0 compress, 1 decompress) of one build against the
    baseline's in the same round, less 1."""
    return float(np.median([s[k] / b[k] for s, b in zip(speeds, base_speeds)])) - 1


if __name__ == "__main__":
    main()
