"""Compare karoo with the filters radio astronomy uses, through h5py, on the shared HERA
files and the generated MeerKAT-like observation: ratio, write and read throughput.

    .venv/bin/python scripts/bench_filters.py            # peers table + Pareto plot
    .venv/bin/python scripts/bench_filters.py --matrix   # every karoo predictor x map x coder
    .venv/bin/python scripts/bench_filters.py --archive  # archive mode vs cold-storage peers

Files live in /dev/shm when it exists, the chunk cache is off, each figure is the best of
`--repeats` runs. Throughputs are of raw bytes; compare rows of one run only (the
machine is shared and noisy). With --doc the tables also go, labelled with date, commit,
machine and command, into their section of docs/benchmarks.md. pcodec has no HDF5 filter: it is timed standalone on the
same arrays with each series laid out along time (level 8), which flatters it (no HDF5
overhead). Prints markdown tables; saves bench-out/pareto.png.

--archive compares karoo's archive mode (compression_opts (1, 0, threads)) with the
strong general-purpose compressors used for cold storage: zstd -19, bzip2 -9 and Blosc2
shuffle+zstd through h5py, xz -9 and pcodec L8 standalone on the raw bytes; speeds there
are relative to bzip2 -9, and the plot goes to bench-out/pareto-archive.png. Threads:
karoo's 0 (default) uses every core, "1 thread" pins it to one; bzip2, zstd and xz run
on one core, Blosc2 uses its own thread setting (BLOSC_NTHREADS). A row that fails
(e.g. archive mode not built into the plugin) prints "error: ..." and the run goes on.
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

import bench_doc  # noqa: E402
import datasets  # noqa: E402

KAROO = 52033
PREDICTORS = {1: "previous", 2: "parallelogram", 3: "lagrange3", 4: "lagrange4", 5: "mean2", 6: "mean4",
              7: "mean8", 8: "median3", 9: "median5", 10: "holt", 11: "lorenzo", 12: "auto"}
MAPS = {1: "xor", 2: "rotsub", 3: "sub"}
CODERS = {1: "lzbytes", 2: "bitplane", 3: "rice", 7: "patched"}


def karoo(predictor=0, residual_map=0, coder=0, threads=0):
    """create_dataset arguments for karoo fast mode with the given choices."""
    return {"compression": KAROO, "compression_opts": (0, predictor | residual_map << 8 | coder << 16, threads)}


def archive(predictor=0, residual_map=0, coder=0, threads=0):
    """create_dataset arguments for karoo archive mode (cd_values[0] = 1)."""
    return {"compression": KAROO, "compression_opts": (1, predictor | residual_map << 8 | coder << 16, threads)}


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
        "karoo rice": karoo(coder=3),
        "karoo bitplane": karoo(coder=2),
        "karoo lzbytes": karoo(coder=1),
        "karoo previous+xor+lzbytes": karoo(1, 1, 1),
    }


def archive_peers():
    """The HDF5 filters of the --archive comparison, by name (standalone rows are added apart)."""
    bs = hdf5plugin.Blosc2
    fast = peers()
    return {
        "karoo archive": archive(),
        "karoo archive, 1 thread": archive(threads=1),
        "karoo fast (default)": fast["karoo fast (default)"],
        "bitshuffle+lz4": fast["bitshuffle+lz4"],
        "zstd -19": dict(hdf5plugin.Zstd(clevel=19)),
        "bzip2 -9": dict(hdf5plugin.BZip2(blocksize=9)),
        "blosc2 zstd shuffle": fast["blosc2 zstd shuffle"],
        "blosc2 zstd shuffle L9": dict(bs(cname="zstd", clevel=9, filters=bs.SHUFFLE)),
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


def measure_xz(data, repeats):
    """(ratio, compress MB/s, decompress MB/s, preset name) of xz standalone on the bytes as stored.

    Tries preset 9 and 9|PRESET_EXTREME on data.tobytes() (one stream each) and keeps the
    smaller; only the kept preset is timed again up to `repeats` runs.
    """
    import lzma

    raw = np.ascontiguousarray(data).tobytes()
    candidates = []
    for name, preset in (("-9", 9), ("-9e", 9 | lzma.PRESET_EXTREME)):
        start = time.perf_counter()
        packed = lzma.compress(raw, format=lzma.FORMAT_XZ, preset=preset)
        candidates.append((len(packed), time.perf_counter() - start, name, preset, packed))
    size, first_s, name, preset, packed = min(candidates, key=lambda c: c[0])
    write_s = min(first_s, best_of(repeats - 1, lambda: lzma.compress(raw, format=lzma.FORMAT_XZ, preset=preset)))
    read_s = best_of(repeats, lambda: lzma.decompress(packed))
    if lzma.decompress(packed) != raw:
        raise SystemExit(f"xz {name}: round trip is not bit-exact")
    return size / data.nbytes, data.nbytes / write_s / 1e6, data.nbytes / read_s / 1e6, name


def try_row(name, measure):
    """(name, ratio, write, read), or (name, "error: <first line>") when `measure` fails."""
    try:
        return (name, *measure())
    except (Exception, SystemExit) as exc:  # SystemExit: a round trip that is not bit-exact
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return (name, f"error: {first}".replace("|", "/"))


def workloads(quick, archive=False):
    """(name, array, chunks): the generated observation and the HERA files, time-major.

    The archive comparison adds the observation in 4 MiB chunks that hold its whole time
    axis (ntime x 256 channels x 16 products), the chunking an archive should use."""
    ntime = 16 if quick else 128
    obs = datasets.meerkat_like(ntime=ntime)
    out = [(f"MeerKAT-like {obs.nbytes >> 20} MiB", obs, (8, obs.shape[1], obs.shape[2]))]
    if archive:
        channels = max(1, (4 << 20) // (ntime * obs.shape[2] * obs.itemsize))
        out.append((f"MeerKAT-like {obs.nbytes >> 20} MiB, whole-time chunks", obs, (ntime, channels, obs.shape[2])))
    for path in datasets.hera_files():
        time_major, _, _ = datasets.load_hera(path)
        out.append((path.name.split(".HH")[0].split(".sum")[0], time_major, time_major.shape))
    return out


def table(title, rows, ref_name="bitshuffle+lz4"):
    """Prints one markdown table of (name, ratio, write, read) rows; (name, "error: ...") rows
    print the error in place of the figures."""
    ref = next((r for r in rows if r[0] == ref_name and len(r) == 4), None)
    print(f"\n### {title}\n")
    print(f"| filter | stored/raw | write MB/s | read MB/s | write vs {ref_name} | read vs {ref_name} |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        if len(row) != 4:
            print(f"| {row[0]} | {row[1]} | - | - | - | - |")
            continue
        name, ratio, write, read = row
        rel = f"{write / ref[2]:.2f}x | {read / ref[3]:.2f}x" if ref else "- | -"
        print(f"| {name} | {ratio:.3f} | {write:.0f} | {read:.0f} | {rel} |")


def plot(results, path):
    """Ratio against read throughput per workload (a Pareto view)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(2, len(results))
    nrows = -(-len(results) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(7 * cols, 5 * nrows), squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.remove()
    for ax, (title, rows) in zip(axes.flat, results):
        for name, ratio, write, read in (r for r in rows if len(r) == 4):
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
            if cells[1].startswith("error"):
                continue
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


def peer_tables(directory, loads, repeats):
    """The default comparison: one table per workload against bitshuffle+lz4; the plotted rows."""
    results = []
    for title, data, chunks in loads:
        rows = [(name, *measure_h5(directory, data, chunks, kwargs, repeats)) for name, kwargs in peers().items()]
        rows.append(("pcodec L8 (standalone, no HDF5)", *measure_pcodec(data, repeats)))
        title = f"{title}: {data.shape} {data.dtype}, chunks {chunks}"
        table(title, rows)
        results.append((title, rows))
    return results


def archive_tables(directory, loads, repeats):
    """The --archive comparison: one table per workload, the summary lines, the plotted rows."""
    results, speedup = [], None
    for title, data, chunks in loads:
        rows = [try_row(name, lambda kw=kwargs: measure_h5(directory, data, chunks, kw, repeats))
                for name, kwargs in archive_peers().items()]
        xz = try_row("xz -9 (standalone, no HDF5)", lambda: measure_xz(data, repeats))
        preset = xz[-1] if len(xz) == 5 else None
        rows.append(xz[:4] if preset else xz)
        rows.append(try_row("pcodec L8 (standalone, no HDF5)", lambda: measure_pcodec(data, repeats)))
        full_title = f"{title}: {data.shape} {data.dtype}, chunks {chunks}"
        table(full_title, rows, ref_name="bzip2 -9")
        if preset:
            print(f"\nxz: preset {preset} was the smaller of -9 and -9e (PRESET_EXTREME)")
        ok = {r[0]: r for r in rows if len(r) == 4}
        others = [r for r in ok.values() if not r[0].startswith("karoo")]
        best = min(others, key=lambda r: r[1]) if others else None
        mine = f"{ok['karoo archive'][1]:.3f}" if "karoo archive" in ok else "n/a (error, see the table)"
        peer = f"{best[0]} {best[1]:.3f}" if best else "none"
        print(f"karoo archive vs best peer: {mine} vs {peer}")
        if speedup is None and title.startswith("MeerKAT"):  # the generated observation
            if "karoo archive" in ok and "bzip2 -9" in ok:
                speedup = (title, f"{ok['karoo archive'][2] / ok['bzip2 -9'][2]:.2f}x")
            else:
                speedup = (title, "n/a (" + ("karoo archive" if "karoo archive" not in ok else "bzip2 -9") + " failed)")
        results.append((full_title, rows))
    if speedup:
        print(f"\ncompress speed karoo archive / bzip2 -9 on {speedup[0]}: {speedup[1]}")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="an 8 MiB observation instead of 64 MiB")
    parser.add_argument("--matrix", action="store_true", help="every predictor x map x coder instead of peers")
    parser.add_argument("--archive", action="store_true",
                        help="archive mode vs zstd -19, bzip2 -9, Blosc2, xz -9, pcodec (plot: pareto-archive.png)")
    parser.add_argument("--out", default=str(REPO / "bench-out"))
    parser.add_argument("--replot", metavar="TABLES.md", help="only re-plot the tables a previous run printed")
    parser.add_argument("--doc", action="store_true",
                        help="also write the tables, labelled, into their section of docs/benchmarks.md")
    args = parser.parse_args()
    png = "pareto-archive.png" if args.archive else "pareto.png"
    if args.replot:
        pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
        plot(parse_tables(pathlib.Path(args.replot).read_text()), pathlib.Path(args.out) / png)
        return
    shm = pathlib.Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    loads = workloads(args.quick, archive=args.archive)
    section = "archive" if args.archive else "matrix" if args.matrix else "peers"
    command = " ".join(["scripts/bench_filters.py", *(a for a in sys.argv[1:] if a != "--doc")])
    results = None
    with bench_doc.capture(section, command, enabled=args.doc):
        print(f"h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}, "
              f"files in {base or 'a temp dir'}, chunk cache off, best of {1 if args.matrix else args.repeats}")
        with tempfile.TemporaryDirectory(dir=base) as tmp:
            tmp = pathlib.Path(tmp)
            if args.matrix:
                matrix(tmp, loads, 1)
            elif args.archive:
                results = archive_tables(tmp, loads, args.repeats)
            else:
                results = peer_tables(tmp, loads, args.repeats)
    if results:
        out = pathlib.Path(args.out)
        out.mkdir(exist_ok=True)
        plot(results, out / png)

if __name__ == "__main__":
    main()
