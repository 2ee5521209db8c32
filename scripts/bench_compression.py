"""Compression ratio of karoo against the filters and codecs users have, on every shared
UVH5 file and on generated workloads, chunked along time as writers chunk: the table of
docs/compression.md.

    .venv/bin/python scripts/bench_compression.py                      # ratios, markdown to stdout
    .venv/bin/python scripts/bench_compression.py --speed --out docs/compression.md
    .venv/bin/python scripts/bench_compression.py --level 9 --quick      # karoo at effort level 9

Cases: every UVH5 file under --data (default ../shared/data), its blt axis sorted by
/Header/time_array (stable) into (time, baseline, ...), visibilities as users store them
(complex64/complex128, the raw correlators' {r, i} int32 compound as that compound), and
every HDF5 file there already sorted to a time axis (dataset `visibilities`); a
generated MeerKAT-like observation, also as complex128 holding its float32 values (as
readers of float32 formats hand data over) and bit-rounded to 8 mantissa bits (as lossy
pre-filters such as numcodecs' BitRound leave it); spectra of 16-bit integers times a per-spectrum float32
scale (amplitudes as float32, cross-spectra as complex64); a snapshot of one integration with
four polarisations and flagged channels. Each is chunked with 1, 2, 4, 16 and all time steps
per chunk (sizes beyond the time count dropped), every other axis whole; each real file also
in chunks of one baseline's spectrum (one time step, one baseline).

Codecs: karoo fast (compression=52033) and archive (compression_opts=(1,)), at --level (0,
each mode's default; the level is cd_values[0]'s bits 8-15), Bitshuffle+LZ4,
Bitshuffle+Zstd, Blosc2 shuffle+Zstd 5, gzip 6 + shuffle, Zstd 19 and bzip2 9 through h5py
(stored/raw = the dataset's storage size over its raw bytes; HDF5 pads edge chunks);
pcodec level 8, xz -9 and Blosc2 shuffle+bytedelta+Zstd 9 standalone, chunk by chunk with
each chunk's series laid along time (components apart: real parts then imaginary parts,
each transposed so time varies fastest) and no padding. Every codec's output is checked to
decode bit-exactly. --speed adds the h5py throughput table of the targets: the 64 MiB
observation at 1 and 16 time steps per chunk, files in /dev/shm, chunk cache off, each filter
timed in a Python process of its own (see h5_timing.py).
"""

import argparse
import datetime
import itertools
import lzma
import math
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import bench_doc  # noqa: E402
import datasets  # noqa: E402
import h5_timing  # noqa: E402

KAROO = 52033
STEPS = (1, 2, 4, 16)
# karoo's effort level in every karoo codec of the run (--level; 0: each mode's default).
LEVEL = 0
FAST, ARCHIVE, BSLZ4 = "karoo fast", "karoo archive", "bitshuffle+lz4"


def parse_args():
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plugin", default=str(REPO / "target" / "release"),
                        help="folder holding libh5karoo.so (default: this checkout's target/release)")
    parser.add_argument("--data", help="folder of real files, UVH5 and sorted HDF5 (default: ../shared/data of this checkout, "
                        "or of the main checkout when this is a git worktree)")
    parser.add_argument("--quick", action="store_true", help="smaller generated workloads (and a 16 MiB speed observation)")
    parser.add_argument("--speed", action="store_true", help="add the h5py speed table of the targets")
    parser.add_argument("--no-ratios", action="store_true", help="skip the ratio table (with --speed: speed only)")
    parser.add_argument("--repeats", type=int, default=3, help="speed: best of this many runs")
    parser.add_argument("--level", type=int, default=0, choices=range(10),
                        help="karoo's effort level in both modes (0: each mode's default)")
    parser.add_argument("--only", metavar="TEXT", help="only the cases whose name contains TEXT")
    parser.add_argument("--out", help="also write the markdown to this file, labelled with date, commit, machine, command")
    return parser.parse_args()


class Report:
    """Markdown lines printed as they come and kept for --out."""

    def __init__(self):
        self.lines = []

    def __call__(self, line=""):
        print(line, flush=True)
        self.lines.append(line)


def progress(message):
    """A progress line on stderr (kept out of the report)."""
    print(f"[bench_compression] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- workloads


def default_data_dir():
    """../shared/data of this checkout, else of the main checkout this git worktree belongs to."""
    if datasets.DATA_DIR.is_dir():
        return datasets.DATA_DIR
    common = git(REPO, "rev-parse", "--path-format=absolute", "--git-common-dir")
    main_data = pathlib.Path(common).parent.parent / "shared" / "data" if common else None
    return main_data if main_data and main_data.is_dir() else datasets.DATA_DIR


def workloads(data_dir, quick):
    """(name, array with time on axis 0) of every case family."""
    out = list(datasets.real_files(data_dir))
    ntime, nchan = (16, 1024) if quick else (32, 2048)
    observation = datasets.meerkat_like(ntime=ntime, nchan=nchan)
    out.append(("generated MeerKAT-like observation", observation))
    out.append(("generated observation, float32 values as complex128", observation.astype(np.complex128)))
    out.append(("generated observation, bit-rounded to 8 mantissa bits", datasets.bit_rounded(observation, 8)))
    sma = dict(ntime=16, nbl=28, nchan=512) if quick else dict(ntime=32, nbl=28, nchan=1024)
    out.append(("generated int16 x scale spectra, float32", datasets.scaled_int16_spectra(complex_=False, **sma)))
    out.append(("generated int16 x scale cross-spectra, complex64", datasets.scaled_int16_spectra(**sma)))
    out.append(("generated int16 x scale cross-spectra, flagged band edges", datasets.scaled_int16_spectra(flagged=True, **sma)))
    out.append(("generated snapshot, 4 pols, flagged channels", datasets.snapshot(nchan=64 if quick else 256)))
    flags, weights = datasets.flags_and_weights(ntime=16 if quick else 32, nchan=64 if quick else 256)
    out.append(("generated flags, uint8", flags))
    out.append(("generated weights, float32 (8 or 0 where flagged)", weights))
    return out


def steps_for(ntime):
    """Time steps per chunk: 1, 2, 4, 16 and all, those beyond `ntime` dropped, deduplicated."""
    return sorted({s for s in STEPS if s <= ntime} | {ntime})


def layouts(name, shape):
    """(label, chunk shape) of each chunking of a case: 1, 2, 4, 16 and all time steps with
    every other axis whole; for real files with more than one baseline, also one baseline's
    spectrum (one time step, one baseline, every channel and polarisation)."""
    out = [(str(step), (step,) + shape[1:]) for step in steps_for(shape[0])]
    if not name.startswith("generated") and len(shape) >= 3 and shape[1] > 1:
        out.append(("1, one baseline", (1, 1) + shape[2:]))
    return out


def components(chunk):
    """The chunk's scalar components: compound fields, or real and imaginary parts."""
    if chunk.dtype.names:
        return [chunk[name] for name in chunk.dtype.names]
    if chunk.dtype.kind == "c":
        return [chunk.real, chunk.imag]
    return [chunk]


def series_along_time(chunk):
    """One flat array of the chunk's series with time varying fastest, component after component."""
    return np.concatenate([np.ascontiguousarray(p.reshape(p.shape[0], -1).T).ravel() for p in components(chunk)])


# ---------------------------------------------------------------- codecs


def h5_codecs():
    """create_dataset arguments of the codecs measured through h5py, by name."""
    import hdf5plugin

    bs = hdf5plugin.Blosc2
    codecs = {
        FAST: {"compression": KAROO, "compression_opts": (256 * LEVEL,)},
        ARCHIVE: {"compression": KAROO, "compression_opts": (1 + 256 * LEVEL,)},
        BSLZ4: dict(hdf5plugin.Bitshuffle(cname="lz4")),
        "bitshuffle+zstd": dict(hdf5plugin.Bitshuffle(cname="zstd")),
        "blosc2 shuffle+zstd 5": dict(bs(cname="zstd", clevel=5, filters=bs.SHUFFLE)),
        "gzip 6+shuffle": {"compression": "gzip", "compression_opts": 6, "shuffle": True},
        "zstd 19": dict(hdf5plugin.Zstd(clevel=19)),
    }
    if hasattr(hdf5plugin, "BZip2"):
        codecs["bzip2 9"] = dict(hdf5plugin.BZip2(blocksize=9))
    return codecs


def pcodec_size(series):
    """Bytes of pcodec level 8 (standalone) on one chunk's series."""
    from pcodec import ChunkConfig, standalone

    if series.dtype.itemsize == 1:
        series = series.astype(np.uint16)  # pcodec codes numbers of 16 bits and more
    packed = standalone.simple_compress(series, ChunkConfig(compression_level=8))
    if standalone.simple_decompress(packed).tobytes() != series.tobytes():
        raise RuntimeError("pcodec round trip is not bit-exact")
    return len(packed)


def xz_size(series):
    """Bytes of xz -9 (an .xz stream, preset 9) on one chunk's series.

    The dictionary is cut to the input's size (at least 4 KiB): the same stream as preset
    9's 64 MiB dictionary, which never fills on a chunk, without allocating it per chunk.
    """
    raw = series.tobytes()
    dict_size = min(64 << 20, max(4096, 1 << (len(raw) - 1).bit_length()))
    packed = lzma.compress(raw, filters=[{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": dict_size}])
    if lzma.decompress(packed) != raw:
        raise RuntimeError("xz round trip is not bit-exact")
    return len(packed)


def blosc2_bytedelta_size(series):
    """Bytes of Blosc2 shuffle + bytedelta + Zstd 9 (python-blosc2 compress2) on one chunk's series."""
    import blosc2

    packed = blosc2.compress2(series, codec=blosc2.Codec.ZSTD, clevel=9, typesize=series.itemsize,
                              filters=[blosc2.Filter.SHUFFLE, blosc2.Filter.BYTEDELTA], filters_meta=[0, series.itemsize])
    if blosc2.decompress2(packed) != series.tobytes():
        raise RuntimeError("blosc2 round trip is not bit-exact")
    return len(packed)


STANDALONE = {
    "pcodec 8": pcodec_size,
    "xz -9": xz_size,
    "blosc2 shuffle+bytedelta+zstd 9": blosc2_bytedelta_size,
}


def h5_ratio(path, data, chunks, kwargs):
    """stored/raw of `data` written through h5py with one filter; checked bit-exact on read."""
    import h5py

    with h5py.File(path, "w", rdcc_nbytes=0) as f:
        f.create_dataset("d", data=data, chunks=chunks, **kwargs)
    with h5py.File(path, "r", rdcc_nbytes=0) as f:
        dset = f["d"]
        if dset[...].tobytes() != data.tobytes():
            raise RuntimeError("round trip is not bit-exact")
        return dset.id.get_storage_size() / data.nbytes


def chunk_slices(shape, chunks):
    """The index of every chunk of a dataset of `shape` in `chunks`, in storage order."""
    starts = itertools.product(*(range(0, n, c) for n, c in zip(shape, chunks)))
    return [tuple(slice(s, s + c) for s, c in zip(start, chunks)) for start in starts]


def standalone_ratio(data, chunks, size_of):
    """Sum of one standalone codec's bytes over the chunks of shape `chunks`, over raw bytes."""
    total = sum(size_of(series_along_time(data[index])) for index in chunk_slices(data.shape, chunks))
    return total / data.nbytes


def attempt(measure):
    """The measure's value, or the error's first line (a case that fails does not stop the run)."""
    try:
        return measure()
    except Exception as exc:  # an unbuilt filter or a failed round trip is a result, not a crash
        return "error: " + ((str(exc).strip().splitlines() or [type(exc).__name__])[0]).replace("|", "/")


# ---------------------------------------------------------------- ratio table


def measure_ratios(directory, loads):
    """Rows (case name, shape, dtype, steps, chunk bytes, {codec: ratio or error})."""
    rows = []
    for name, data in loads:
        for label, chunks in layouts(name, data.shape):
            started = time.perf_counter()
            ratios = {codec: attempt(lambda kw=kwargs: h5_ratio(directory / "case.h5", data, chunks, kw))
                      for codec, kwargs in h5_codecs().items()}
            ratios.update({codec: attempt(lambda f=size_of: standalone_ratio(data, chunks, f))
                           for codec, size_of in STANDALONE.items()})
            chunk_bytes = data.dtype.itemsize * math.prod(chunks)
            rows.append((name, data.shape, data.dtype, label, chunk_bytes, ratios))
            progress(f"{name}, {label} per chunk: {time.perf_counter() - started:.1f} s")
    return rows


def geomean(values):
    """Geometric mean of positive numbers (nan when empty)."""
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def dtype_name(dtype):
    """numpy dtype as a short label: complex64, or {r,i} int32 for the correlator compound."""
    if dtype.names:
        return "{" + ",".join(dtype.names) + "} " + str(dtype[0])
    return str(dtype)


def kib(nbytes):
    """A byte count as KiB with sensible precision."""
    return f"{nbytes / 1024:.1f}" if nbytes < 10240 else f"{nbytes // 1024}"


def best_peer(ratios):
    """(name, ratio) of the smallest non-karoo codec of a case, or None when none succeeded."""
    peers = [(c, r) for c, r in ratios.items() if not c.startswith("karoo") and isinstance(r, float)]
    return min(peers, key=lambda p: p[1]) if peers else None


def margin(mine, ref):
    """karoo/peer as a signed percentage ('+4.6%' is 4.6% larger than the peer)."""
    if not isinstance(mine, float) or ref is None:
        return "-"
    return f"{(mine / ref - 1) * 100:+.1f}%"


def ratio_report(emit, rows):
    """The per-case table, the geometric means and the losing cases."""
    codecs = list(rows[0][5])
    emit("## Stored/raw per case (lower is better)")
    emit()
    emit("Margins are karoo's size against the peer's: +4.6% means karoo is 4.6% larger. "
         "Best peer: the smallest of all non-karoo codecs of the case.")
    emit()
    emit("| case | shape, dtype | steps/chunk | chunk KiB | " + " | ".join(codecs)
         + " | best peer | fast vs bitshuffle+lz4 | fast vs best | archive vs best |")
    emit("|---|---|---|---|" + "---|" * len(codecs) + "---|---|---|---|")
    for name, shape, dtype, step, chunk_bytes, ratios in rows:
        cells = [f"{r:.3f}" if isinstance(r, float) else r for r in ratios.values()]
        best = best_peer(ratios)
        bs = ratios.get(BSLZ4)
        emit(f"| {name} | {shape} {dtype_name(dtype)} | {step} | {kib(chunk_bytes)} | " + " | ".join(cells)
             + f" | {best[0] if best else '-'} | {margin(ratios[FAST], bs if isinstance(bs, float) else None)}"
             + f" | {margin(ratios[FAST], best and best[1])} | {margin(ratios[ARCHIVE], best and best[1])} |")
    emit()
    summary(emit, rows, codecs)


def summary(emit, rows, codecs):
    """Geometric means over the cases every codec completed, then the karoo losses."""
    complete = [r for r in rows if all(isinstance(v, float) for v in r[5].values())]
    real = [r for r in complete if not r[0].startswith("generated")]
    generated = [r for r in complete if r[0].startswith("generated")]
    groups = (("all", complete), ("real files", real), ("generated", generated))
    emit(f"## Geometric mean over the {len(complete)} cases every codec completed (of {len(rows)})")
    emit()
    emit("| codec | " + " | ".join(f"{g} ({len(rs)})" for g, rs in groups) + " | all vs karoo archive |")
    emit("|---|" + "---|" * len(groups) + "---|")
    means = {c: [geomean([r[5][c] for r in rs]) for _, rs in groups] for c in codecs}
    means["best peer per case"] = [geomean([best_peer(r[5])[1] for r in rs]) for _, rs in groups]
    for codec in sorted(means, key=lambda c: means[c][0]):
        emit(f"| {codec} | " + " | ".join(f"{m:.4f}" for m in means[codec])
             + f" | {means[codec][0] / means[ARCHIVE][0]:.3f} |")
    emit()
    failed = [f"{r[0]} at {r[3]}: {c} {v}" for r in rows for c, v in r[5].items() if not isinstance(v, float)]
    if failed:
        emit("Failed: " + "; ".join(failed))
        emit()
    fast_bs = [(r[5][FAST] / r[5][BSLZ4], r) for r in complete]
    fast_best = [(r[5][FAST] / best_peer(r[5])[1], r) for r in complete]
    arch_best = [(r[5][ARCHIVE] / best_peer(r[5])[1], r) for r in complete]
    emit("## Targets")
    emit()
    for label, pairs in (("karoo fast vs bitshuffle+lz4 (target: never larger)", fast_bs),
                         ("karoo fast vs best peer", fast_best),
                         ("karoo archive vs best peer (target: never larger, geomean <= -3%)", arch_best)):
        losses = [p for p in pairs if p[0] > 1]
        worst = max(pairs, key=lambda p: p[0]) if pairs else None
        real_pairs = [p[0] for p in pairs if not p[1][0].startswith("generated")]
        emit(f"- {label}: larger in {len(losses)} of {len(pairs)} cases"
             + (f", worst {(worst[0] - 1) * 100:+.1f}% ({worst[1][0]}, {worst[1][3]}/chunk)" if losses else "")
             + f"; geomean of karoo/peer {(geomean([p[0] for p in pairs]) - 1) * 100:+.1f}%"
             + f" (real files {(geomean(real_pairs) - 1) * 100:+.1f}%)")
    emit()
    losing_table(emit, "karoo fast larger than bitshuffle+lz4", fast_bs, lambda r: (BSLZ4, r[5][BSLZ4]), FAST)
    losing_table(emit, "karoo archive larger than the best peer", arch_best, lambda r: best_peer(r[5]), ARCHIVE)


def losing_table(emit, title, pairs, peer_of, mine):
    """The cases where karoo loses, worst first."""
    losses = sorted((p for p in pairs if p[0] > 1), key=lambda p: -p[0])
    emit(f"### Cases where {title} ({len(losses)})")
    emit()
    if not losses:
        emit("None.")
        emit()
        return
    emit(f"| case | steps/chunk | {mine} | peer | peer's | margin |")
    emit("|---|---|---|---|---|---|")
    for ratio, row in losses:
        peer, value = peer_of(row)
        emit(f"| {row[0]} | {row[3]} | {row[5][mine]:.3f} | {peer} | {value:.3f} | {(ratio - 1) * 100:+.1f}% |")
    emit()


# ---------------------------------------------------------------- speed table


def speed_report(emit, directory, quick, repeats):
    """Write and read MB/s of karoo and its reference peers on the observation at 1 and 16 steps,
    each filter timed in a process of its own (see h5_timing)."""
    codecs = h5_codecs()
    rows = {FAST: codecs[FAST], ARCHIVE: codecs[ARCHIVE],
            "karoo archive, 1 thread": {"compression": KAROO, "compression_opts": (1, 0, 1)},
            BSLZ4: codecs[BSLZ4]}
    if "bzip2 9" in codecs:
        rows["bzip2 9"] = codecs["bzip2 9"]
    obs = datasets.meerkat_like(ntime=32 if quick else 128)
    data_path = directory / "speed_observation.npy"
    np.save(data_path, obs)
    emit(f"## Speed through h5py: generated observation {obs.shape} {obs.dtype}, {obs.nbytes >> 20} MiB")
    emit()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    emit(f"Files in {directory.parent}, chunk cache off, best of {repeats}, each filter in a Python process "
         "of its own (glibc's allocator adapts to what a process allocated before; see "
         "scripts/h5_timing.py); MB/s of raw bytes. karoo's default threads use every core; "
         "'1 thread' pins archive mode to one. "
         f"Load average before this table: {load} (on a shared machine, compare rows of one table only).")
    for step in (1, 16):
        chunks = (step,) + obs.shape[1:]
        results = {}
        for name, kwargs in rows.items():
            results[name] = attempt(
                lambda kw=kwargs: h5_timing.time_filter(data_path, chunks, kw, repeats, directory))
            progress(f"speed, {step} per chunk: {name}")
        emit()
        emit(f"### {step} time step(s) per chunk, chunks {chunks}")
        emit()
        emit("| filter | stored/raw | write MB/s | read MB/s | write vs bitshuffle+lz4 | read vs bitshuffle+lz4 |")
        emit("|---|---|---|---|---|---|")
        ref = results.get(BSLZ4)
        ref = ref if isinstance(ref, tuple) else None
        for name, value in results.items():
            if not isinstance(value, tuple):
                emit(f"| {name} | {value} | - | - | - | - |")
                continue
            ratio, write, read = value
            rel = f"{write / ref[1]:.2f}x | {read / ref[2]:.2f}x" if ref else "- | -"
            emit(f"| {name} | {ratio:.3f} | {write:.0f} | {read:.0f} | {rel} |")
        emit()
        emit("Targets: " + speed_targets(results))
    data_path.unlink()


def speed_targets(results):
    """One line: each speed target of the issue against this table."""
    ok = {k: v for k, v in results.items() if isinstance(v, tuple)}
    parts = []
    if FAST in ok and BSLZ4 in ok:
        parts.append(f"fast write {ok[FAST][1] / ok[BSLZ4][1]:.2f}x bitshuffle+lz4 (>= 1.5x), "
                     f"read {ok[FAST][2] / ok[BSLZ4][2]:.2f}x (>= 1.2x)")
    if ARCHIVE in ok and "bzip2 9" in ok:
        parts.append(f"archive write {ok[ARCHIVE][1] / ok['bzip2 9'][1]:.1f}x bzip2 9 (>= 10x)")
    if "karoo archive, 1 thread" in ok:
        parts.append(f"archive read on 1 thread {ok['karoo archive, 1 thread'][2]:.0f} MB/s (>= 150 MB/s per core)")
    return "; ".join(parts) or "n/a (a filter failed)"


# ---------------------------------------------------------------- labels


def git(plugin_dir, *args):
    """Output of a git command in the repository that holds the plugin build, or '' outside one."""
    try:
        return subprocess.run(["git", "-C", str(plugin_dir), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine():
    """CPU model, cores and vector instructions (bench_doc's label), with the load average now."""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return f"{bench_doc.machine()} (load average at start {load})"


def header(emit, args, plugin_dir, base):
    """Title and the labels that make the run reproducible."""
    import h5py
    import hdf5plugin

    commit = git(plugin_dir, "rev-parse", "HEAD") or "not in a git checkout"
    if git(plugin_dir, "status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    versions = [f"h5py {h5py.version.version}", f"HDF5 {h5py.version.hdf5_version}", f"hdf5plugin {hdf5plugin.version}",
                f"numpy {np.__version__}"]
    for module in ("pcodec", "blosc2"):
        try:
            versions.append(f"{module} {__import__(module).__version__}")
        except (ImportError, AttributeError):
            versions.append(f"{module} (version unknown)")
    command = "python scripts/bench_compression.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    emit("# karoo compression against peers")
    emit()
    emit(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    # Relative to the checkout when inside it: no machine's absolute paths in the report.
    shown = plugin_dir.relative_to(REPO) if plugin_dir.is_relative_to(REPO) else plugin_dir
    emit(f"- plugin: {shown}/libh5karoo.so, commit {commit}")
    emit(f"- machine: {machine()}")
    emit(f"- command: `{command}`")
    emit(f"- software: {', '.join(versions)}; files in {base or 'a temp dir'}")
    emit()
    emit("Real files: UVH5 files with the blt axis sorted by /Header/time_array into (time, baseline, ...), "
         "and files already sorted to a time axis (dataset `visibilities`), stored as "
         "their writers store them (complex64/complex128; the {r,i} int32 compound as that compound). "
         "Chunks hold 1, 2, 4, 16 and all time steps (every other axis whole), and for real files "
         "one baseline's spectrum (1 time step, 1 baseline). HDF5 filters through h5py "
         "(storage size / raw bytes; HDF5 pads edge chunks with the fill value); pcodec 8, xz -9 and "
         "blosc2 shuffle+bytedelta+zstd 9 standalone per chunk on the chunk's series laid along time "
         "(real parts then imaginary parts, each transposed so time varies fastest; no padding). "
         "Every codec's output is checked to decode bit-exactly.")
    emit()


def main():
    global LEVEL
    args = parse_args()
    LEVEL = args.level
    plugin_dir = pathlib.Path(args.plugin).resolve()
    if not (plugin_dir / "libh5karoo.so").is_file():
        raise SystemExit(f"bench_compression: no libh5karoo.so in {plugin_dir} (build: cargo build --release -p h5karoo)")
    os.environ["HDF5_PLUGIN_PATH"] = str(plugin_dir)  # before h5py loads HDF5
    shm = pathlib.Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    emit = Report()
    header(emit, args, plugin_dir, base)
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        tmp = pathlib.Path(tmp)
        if not args.no_ratios:
            data_dir = pathlib.Path(args.data) if args.data else default_data_dir()
            emit(f"Real files from {data_dir}: {len(datasets.uvh5_files(data_dir))} UVH5, "
                 f"{len(datasets.sorted_files(data_dir))} sorted to a time axis.")
            emit()
            loads = [w for w in workloads(data_dir, args.quick) if not args.only or args.only in w[0]]
            ratio_report(emit, measure_ratios(tmp, loads))
        if args.speed:
            speed_report(emit, tmp, args.quick, args.repeats)
    if args.out:
        out = pathlib.Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(emit.lines) + "\n")
        progress(f"wrote {out}")


if __name__ == "__main__":
    main()
