"""Archive mode with each residual coder under the same model and predictor choice, through
h5py, one thread: stored/raw, write and read MB/s (best of 3) on the generated
observation (4 MiB chunks of 8 time steps) and the shared HERA files. Every file is read
back bit-exactly.

    .venv/bin/python scripts/research/archive_coders.py [--doc]

Single runs on a shared machine: compare rows of one run only. --doc also writes the
table, labelled with date, commit, machine and command, into the "archive-coders"
section of docs/benchmarks.md.
"""

import os
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("HDF5_PLUGIN_PATH", str(REPO / "target" / "release"))
sys.path.insert(0, str(REPO / "scripts"))

import h5py  # noqa: E402

import bench_doc  # noqa: E402
import datasets  # noqa: E402

KAROO = 52033
CODERS = {4: "context rANS (default)", 5: "context Huffman", 6: "value dictionary", 3: "Rice", 2: "bit planes"}


def measure(path, data, chunks, opts, repeats=3):
    """(stored/raw, write MB/s, read MB/s), each time the best of `repeats`."""
    write_s = read_s = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        with h5py.File(path, "w", rdcc_nbytes=0) as f:
            f.create_dataset("d", data=data, chunks=chunks, compression=KAROO, compression_opts=opts)
        write_s = min(write_s, time.perf_counter() - start)
    for _ in range(repeats):
        start = time.perf_counter()
        with h5py.File(path, "r", rdcc_nbytes=0) as f:
            back = f["d"][...]
            stored = f["d"].id.get_storage_size()
        read_s = min(read_s, time.perf_counter() - start)
    if back.tobytes() != data.tobytes():
        raise SystemExit(f"{opts}: round trip is not bit-exact")
    return stored / data.nbytes, data.nbytes / write_s / 1e6, data.nbytes / read_s / 1e6


def main():
    obs = datasets.meerkat_like()
    loads = [("MeerKAT-like 64 MiB, 8-step chunks", obs, (8,) + obs.shape[1:])]
    for p in datasets.hera_files():
        time_major, _, _ = datasets.load_hera(p)
        loads.append((p.name.split(".HH")[0].split(".sum")[0], time_major, time_major.shape))
    shm = pathlib.Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        path = pathlib.Path(tmp) / "coders.h5"
        command = "scripts/research/archive_coders.py"
        with bench_doc.capture("archive-coders", command, enabled="--doc" in sys.argv[1:]):
            table(path, loads)


def table(path, loads):
    """Prints the table: one row per coder, one column per workload."""
    print("| coder | " + " | ".join(name for name, _, _ in loads) + " |")
    print("|---|" + "---|" * len(loads))
    for coder, name in CODERS.items():
        cells = []
        for _, data, chunks in loads:
            ratio, write, read = measure(path, data, chunks, (1, coder << 16, 1))
            cells.append(f"{ratio:.4f} ({write:.0f} / {read:.0f} MB/s)")
        print(f"| {coder} {name} | " + " | ".join(cells) + " |", flush=True)

if __name__ == "__main__":
    main()
