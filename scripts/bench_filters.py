"""Compare karoo with the filters radio astronomy uses, through h5py, on the shared HERA
files and the generated MeerKAT-like observation: ratio, write and read throughput.

    .venv/bin/python scripts/bench_filters.py            # peers table + Pareto plot
    .venv/bin/python scripts/bench_filters.py --matrix   # every karoo predictor x map x coder

Files live in /dev/shm when it exists, the chunk cache is off, each figure is the best of
`--repeats` runs. Throughputs are of raw bytes; compare rows of one run only (the
machine is shared and noisy). pcodec has no HDF5 filter: it is timed standalone on the
same arrays with each series laid out along time (level 8), which flatters it (no HDF5
overhead). Prints markdown tables; saves bench-out/pareto.png.
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("HDF5_PLUGIN_PATH", str(REPO / "target" / "release"))
sys.path.insert(0, str(REPO / "scripts"))

import h5py  # noqa: E402
import hdf5plugin  # noqa: E402

import datasets  # noqa: E402

KAROO = 52033
PREDICTORS = {1: "previous", 2: "parallelogram", 3: "lagrange3", 4: "lagrange4", 5: "mean2", 6: "mean4",
              7: "mean8", 8: "median3", 9: "median5", 10: "holt", 11: "lorenzo", 12: "auto"}
MAPS = {1: "xor", 2: "rotsub", 3: "sub"}
CODERS = {1: "lzbytes", 2: "bitplane", 3: "rice"}


def karoo(predictor=0, residual_map=0, coder=0, threads=0):
    """create_dataset arguments for karoo fast mode with the given choices."""
    return {"compression": KAROO, "compression_opts": (0, predictor | residual_map << 8 | coder << 16, threads)}


def peers():
    """The filters compared, by name."""
    bs = hdf5plugin.Blosc2
    return {
        "none": {},
        "bitshuffle+lz4": dict(hdf5plugin.Bitshuffle(cname="lz4")),
        "bitshuffle+zstd": dict(hdf5plugin.Bitshuffle(cname="zstd")),
        "blosc2 lz4 shuffle": dict(bs(cname="lz4", filters=bs.SHUFFLE)),
        "blosc2 lz4 bitshuffle": dict(bs(cname="lz4", filters=bs.BITSHUFFLE)),
        "blosc2 zstd shuffle": dict(bs(cname="zstd", filters=bs.SHUFFLE)),
        "blosc2 zstd bitshuffle": dict(bs(cname="zstd", filters=bs.BITSHUFFLE)),
        "zstd": dict(hdf5plugin.Zstd()),
        "gzip+shuffle": {"compression": "gzip", "shuffle": True},
        "karoo fast (default)": karoo(),
        "karoo bitplane": karoo(coder=2),
        "karoo lzbytes": karoo(coder=1),
        "karoo seed000 (previous, xor, lzbytes)": karoo(1, 1, 1),
    }


def best_of(repeats, action):
    """Shortest wall time of `repeats` runs of `action`."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def measure_h5(directory, data, chunks, kwargs, repeats):
    """(stored/raw, write MB/s, read MB/s) of `data` written with one filter."""
    path = directory / "bench.h5"

    def write():
        with h5py.File(path, "w", rdcc_nbytes=0) as f:
            f.create_dataset("d", data=data, chunks=chunks, **kwargs)

    def read():
        with h5py.File(path, "r", rdcc_nbytes=0) as f:
            return f["d"][...]

    write_s = best_of(repeats, write)
    read_s = best_of(repeats, read)
    if read().tobytes() != data.tobytes():
        raise SystemExit(f"{kwargs}: round trip is not bit-exact")
    with h5py.File(path, "r") as f:
        stored = f["d"].id.get_storage_size()
    return stored / data.nbytes, data.nbytes / write_s / 1e6, data.nbytes / read_s / 1e6


def measure_pcodec(data, repeats):
    """(ratio, compress MB/s, decompress MB/s) of pcodec level 8 on the series along time."""
    from pcodec import ChunkConfig, standalone

    flat = np.ascontiguousarray(data)
    if flat.dtype.names:
        parts = [flat[name] for name in flat.dtype.names]
    elif flat.dtype.kind == "c":
        parts = [flat.real, flat.imag]
    else:
        parts = [flat]
    series = [np.ascontiguousarray(p.reshape(p.shape[0], -1).T).ravel() for p in parts]
    config = ChunkConfig(compression_level=8)
    packed = []
    write_s = best_of(repeats, lambda: packed.__setitem__(slice(None), [standalone.simple_compress(s, config) for s in series]))
    read_s = best_of(repeats, lambda: [standalone.simple_decompress(b) for b in packed])
    for s, b in zip(series, packed):
        assert standalone.simple_decompress(b).tobytes() == s.tobytes()
    return sum(len(b) for b in packed) / data.nbytes, data.nbytes / write_s / 1e6, data.nbytes / read_s / 1e6


def workloads(quick):
    """(name, array, chunks): the generated observation and the HERA files, time-major."""
    ntime = 16 if quick else 128
    obs = datasets.meerkat_like(ntime=ntime)
    out = [(f"MeerKAT-like {obs.nbytes >> 20} MiB", obs, (8, obs.shape[1], obs.shape[2]))]
    for path in datasets.hera_files():
        time_major, _, _ = datasets.load_hera(path)
        out.append((path.name.split(".HH")[0].split(".sum")[0], time_major, time_major.shape))
    return out


def table(title, rows, ref_name="bitshuffle+lz4"):
    """Prints one markdown table of (name, ratio, write, read) rows."""
    ref = next((r for r in rows if r[0] == ref_name), None)
    print(f"\n### {title}\n")
    print("| filter | stored/raw | write MB/s | read MB/s | write vs bitshuffle+lz4 | read vs bitshuffle+lz4 |")
    print("|---|---|---|---|---|---|")
    for name, ratio, write, read in rows:
        rel = f"{write / ref[2]:.2f}x | {read / ref[3]:.2f}x" if ref else "- | -"
        print(f"| {name} | {ratio:.3f} | {write:.0f} | {read:.0f} | {rel} |")


def plot(results, path):
    """Ratio against read throughput per workload: seed 001's Pareto view."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(2, len(results))
    nrows = -(-len(results) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(7 * cols, 5 * nrows), squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.remove()
    for ax, (title, rows) in zip(axes.flat, results):
        for name, ratio, write, read in rows:
            marker = "*" if name.startswith("karoo") else "o"
            ax.scatter(read, ratio, marker=marker, s=80 if marker == "*" else 30)
            ax.annotate(name, (read, ratio), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel("read MB/s (h5py, log)")
        ax.set_ylabel("stored / raw (lower is better)")
        ax.set_title(title.split(":")[0], fontsize=10)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"\nplot saved to {path}")


def parse_tables(text):
    """(title, rows) of every table a previous run printed (to re-plot it)."""
    results, rows, title = [], None, None
    for line in text.splitlines():
        if line.startswith("### "):
            title, rows = line[4:], []
            results.append((title, rows))
        elif rows is not None and line.startswith("| ") and not line.startswith("| filter"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows.append((cells[0], float(cells[1]), float(cells[2]), float(cells[3])))
    return results


def matrix(directory, loads, repeats):
    """Ratio of every predictor x map x coder on every workload."""
    print("\n### karoo fast mode: every predictor x residual map x coder (stored/raw)\n")
    names = [n for n, _, _ in loads]
    print("| predictor | map | coder | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for p, pname in PREDICTORS.items():
        for m, mname in MAPS.items():
            for c, cname in CODERS.items():
                cells = []
                for _, data, chunks in loads:
                    ratio, _, _ = measure_h5(directory, data, chunks, karoo(p, m, c), repeats)
                    cells.append(f"{ratio:.3f}")
                print(f"| {pname} | {mname} | {cname} | " + " | ".join(cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="an 8 MiB observation instead of 64 MiB")
    parser.add_argument("--matrix", action="store_true", help="every predictor x map x coder instead of peers")
    parser.add_argument("--out", default=str(REPO / "bench-out"))
    parser.add_argument("--replot", metavar="TABLES.md", help="only re-plot the tables a previous run printed")
    args = parser.parse_args()
    if args.replot:
        plot(parse_tables(pathlib.Path(args.replot).read_text()), pathlib.Path(args.out) / "pareto.png")
        return
    shm = pathlib.Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    loads = workloads(args.quick)
    print(f"h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}, "
          f"files in {base or 'a temp dir'}, chunk cache off, best of {args.repeats}")
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        tmp = pathlib.Path(tmp)
        if args.matrix:
            matrix(tmp, loads, 1)
            return
        results = []
        for title, data, chunks in loads:
            rows = [(name, *measure_h5(tmp, data, chunks, kwargs, args.repeats)) for name, kwargs in peers().items()]
            rows.append(("pcodec L8 (standalone, no HDF5)", *measure_pcodec(data, args.repeats)))
            title = f"{title}: {data.shape} {data.dtype}, chunks {chunks}"
            table(title, rows)
            results.append((title, rows))
    out = pathlib.Path(args.out)
    out.mkdir(exist_ok=True)
    plot(results, out / "pareto.png")


if __name__ == "__main__":
    main()
