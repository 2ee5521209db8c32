"""The ``karoo`` command-line tool: bench, inspect, verify, repack."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings

import click
import h5py
import numpy as np
from tqdm import tqdm

from . import _files
from ._hdf5 import FILTER_ID, SHUFFLE_IDS, Karoo, shuffle_warning
from ._options import PREDICTORS

_TARGET_CHUNK_BYTES = 4 << 20


def _bar(total, desc, quiet):
    return tqdm(total=total, desc=desc, unit="chunk", disable=quiet or None, leave=False, file=sys.stderr)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="karoo")
def main():
    """karoo: lossless compression of visibilities and float time series in HDF5."""


# --------------------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------------------


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-q", "--quiet", is_flag=True, help="No progress bar; print only failures.")
def verify(files, quiet):
    """Decode every karoo chunk of FILES and check its checksums.

    Exits with status 1 and names each chunk that fails (file, dataset, chunk offset).
    """
    failures = 0
    for path in files:
        with h5py.File(path, "r") as f:
            found = [d for d in _files.datasets(f) if _files.karoo_position(d) is not None]
            total = sum(d.id.get_num_chunks() for d in found)
            checked = 0
            with _bar(total, os.path.basename(path), quiet) as bar:
                for dataset in found:
                    rep = _files.report(dataset, decode=True, progress=bar)
                    checked += rep.nchunks
                    for fail in rep.failures:
                        failures += 1
                        click.echo(f"{path}: {fail.dataset} chunk {list(fail.offset)}: {fail.message}",
                                   err=True)
        if not quiet:
            click.echo(f"{path}: {checked} karoo chunks in {len(found)} datasets checked")
    if failures:
        click.echo(f"karoo verify: {failures} chunks failed", err=True)
        sys.exit(1)


# --------------------------------------------------------------------------------------
# inspect
# --------------------------------------------------------------------------------------


def _filter_text(filter_id, name, values):
    if filter_id == FILTER_ID:
        try:
            options = Karoo.from_cd_values(values).get_config()
        except ValueError as error:
            return f"karoo (unreadable options: {error})"
        shown = {k: v for k, v in options.items() if v not in ("auto", 0) or k == "mode"}
        return "karoo(" + ", ".join(f"{k}={v}" for k, v in shown.items()) + ")"
    known = {1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset"}
    label = name or known.get(filter_id) or SHUFFLE_IDS.get(filter_id) or "filter"
    return f"{label}[{filter_id}]"


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def inspect(file, quiet):
    """Per dataset: filter pipeline and options, stored/raw size, and the predictors,
    time axes, lags and coders its karoo chunks use (read from the chunk headers)."""
    with h5py.File(file, "r") as f:
        found = _files.datasets(f)
        total = sum(d.id.get_num_chunks() for d in found if _files.karoo_position(d) is not None)
        with _bar(total, os.path.basename(file), quiet) as bar:
            reports = [_files.report(d, decode=False, progress=bar) for d in found]
    for rep in reports:
        ratio = rep.stored_bytes / rep.raw_bytes if rep.raw_bytes else float("nan")
        pipeline = " -> ".join(_filter_text(*flt) for flt in rep.filters) or "no filters"
        shape = list(rep.shape) if rep.shape is not None else "null"
        click.echo(f"{rep.name}  {rep.dtype} {shape} chunks {list(rep.chunks) if rep.chunks else None}")
        click.echo(f"  pipeline: {pipeline}")
        click.echo(f"  stored/raw: {rep.stored_bytes}/{rep.raw_bytes} = {ratio:.4f}")
        message = shuffle_warning(flt[0] for flt in rep.filters)
        if message:
            click.echo(f"  warning: {message}")
        if rep.karoo and rep.nchunks and not rep.modes:
            click.echo(f"  karoo chunks: {rep.nchunks} (not the last filter: read through HDF5)")
        elif rep.karoo and rep.nchunks:
            axes = ", ".join(f"time axis {t}, lag {lag} words" for t, lag in sorted(rep.axes))
            click.echo(f"  karoo chunks: {rep.nchunks} ({', '.join(sorted(rep.modes))}); {axes}")
            for name, count in sorted(rep.codings.items(), key=lambda kv: -kv[1]):
                click.echo(f"    {count:6d} tiles  {name}")
        for fail in rep.failures:
            click.echo(f"  chunk {list(fail.offset)}: {fail.message}")


# --------------------------------------------------------------------------------------
# repack
# --------------------------------------------------------------------------------------


def _parse_chunks(text):
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None


def _compressible(dataset):
    dt = dataset.dtype
    return dataset.shape and dataset.size > 0 and not dt.hasobject and dt.kind in "iufcV" and \
        h5py.check_vlen_dtype(dt) is None and (dt.kind != "V" or dt.fields is not None)


def _nbytes(dataset):
    return (dataset.size or 0) * dataset.dtype.itemsize


def _copy_attrs(src, dst):
    for key, value in src.attrs.items():
        dst.attrs[key] = value


@main.command()
@click.argument("src", type=click.Path(exists=True, dir_okay=False))
@click.argument("dst", type=click.Path(dir_okay=False))
@click.option("--archive", is_flag=True, help="Archive mode: smaller, several times slower.")
@click.option("--chunks", help="Chunk shape for every rewritten dataset, e.g. 64,1,1024,4 "
              "(default: each dataset's own chunks, or about 4 MiB along axis 0).")
@click.option("--predictor", type=click.Choice(list(PREDICTORS)), default="auto", show_default=True)
@click.option("--time-axis", type=int, default=0, show_default=True)
@click.option("--lag", type=int, default=0, show_default=True,
              help="Elements between successive samples of a series (0 derives it).")
@click.option("--min-size", type=int, default=1024, show_default=True,
              help="Datasets smaller than this many bytes are copied as they are.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def repack(src, dst, archive, chunks, predictor, time_axis, lag, min_size, quiet):
    """Rewrite SRC to DST with every numeric dataset compressed by karoo (other filters,
    shuffle included, are dropped; attributes and groups are kept)."""
    chunk_shape = _parse_chunks(chunks)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise click.BadParameter("DST must differ from SRC")
    mode = "archive" if archive else "fast"
    with h5py.File(src, "r") as fin, h5py.File(dst, "w") as fout:
        _copy_attrs(fin, fout)
        found = _files.datasets(fin)
        total_bytes = sum(_nbytes(d) for d in found)
        bar = tqdm(total=total_bytes, desc="repack", unit="B", unit_scale=True, disable=quiet or None,
                   leave=False, file=sys.stderr)

        def visit(name, obj):
            if isinstance(obj, h5py.Group):
                _copy_attrs(obj, fout.require_group(name))
                return
            parent = fout.require_group(os.path.dirname(name) or "/")
            if _nbytes(obj) < min_size or not _compressible(obj):
                fin.copy(obj, parent, name=os.path.basename(name))
                bar.update(_nbytes(obj))
                return
            layout = chunk_shape or obj.chunks or suggest_chunks(obj.shape, obj.dtype, time_axis)
            if len(layout) != obj.ndim:
                raise click.BadParameter(f"--chunks has {len(layout)} dimensions, {name} has {obj.ndim}")
            layout = tuple(max(1, min(c, s)) for c, s in zip(layout, obj.shape))
            axis = time_axis if time_axis < obj.ndim else 0
            plane = int(np.prod(layout[axis:]))
            options = Karoo(mode=mode, predictor=predictor, time_axis=axis,
                            lag=lag if lag <= plane else 0)
            out = fout.create_dataset(name, shape=obj.shape, dtype=obj.dtype, chunks=layout,
                                      maxshape=obj.maxshape, compression=options,
                                      fillvalue=obj.fillvalue)
            _copy_attrs(obj, out)
            step = layout[0]
            for start in range(0, obj.shape[0], step):
                block = obj[start:start + step]
                out[start:start + step] = block
                bar.update(block.nbytes)

        fin.visititems(visit)
        bar.close()
    if not quiet:
        click.echo(f"{src} ({os.path.getsize(src)} bytes) -> {dst} ({os.path.getsize(dst)} bytes)")


def suggest_chunks(shape, dtype, time_axis=0, target=_TARGET_CHUNK_BYTES):
    """A chunk shape of about `target` bytes: whole dimensions after the time axis, as many
    steps along it as fit (at least 8 when the data has them)."""
    shape = tuple(int(s) for s in shape)
    inner = int(np.prod(shape[time_axis + 1:])) * np.dtype(dtype).itemsize
    steps = max(min(shape[time_axis], 8), min(shape[time_axis], target // max(inner, 1)))
    return tuple(s if i > time_axis else (steps if i == time_axis else 1) for i, s in enumerate(shape))


# --------------------------------------------------------------------------------------
# bench
# --------------------------------------------------------------------------------------


def _filters():
    """(name, create_dataset keywords) of the filters compared."""
    out = [("karoo fast", {"compression": Karoo()}), ("karoo archive", {"compression": Karoo(mode="archive")})]
    try:
        import hdf5plugin
    except ImportError:
        warnings.warn("karoo bench: hdf5plugin not installed, comparing with no-filter only", stacklevel=2)
    else:
        out += [
            ("bitshuffle+lz4", dict(hdf5plugin.Bitshuffle(cname="lz4"))),
            ("zstd", dict(hdf5plugin.Zstd(clevel=3))),
            ("blosc2 zstd", dict(hdf5plugin.Blosc2(cname="zstd", clevel=5,
                                                    filters=hdf5plugin.Blosc2.BITSHUFFLE))),
        ]
    out.append(("none", {}))
    return out


def _time_axis_and_lag(fin, dataset):
    """UVH5: the folded blt axis, time-major, needs lag Nbls rows to predict along time."""
    header = fin.get("Header")
    if header is None or "Nbls" not in header or dataset.ndim < 2:
        return 0, 0
    nbls = int(header["Nbls"][()])
    times = header["time_array"][:] if "time_array" in header else None
    chunks = dataset.chunks or dataset.shape
    if chunks[0] <= nbls:  # a chunk holds no two samples of one baseline
        return 0, 0
    row = int(np.prod(chunks[1:]))
    if times is not None and len(times) > nbls and times[0] == times[nbls - 1] and times[0] != times[nbls]:
        return 0, nbls * row  # time-major: the same baseline comes back every Nbls rows
    return 0, 0


def _bench_one(data, chunks, kw, path, repeats):
    writes, reads = [], []
    for _ in range(repeats):
        if os.path.exists(path):
            os.remove(path)
        start = time.perf_counter()
        with h5py.File(path, "w") as f:
            f.create_dataset("d", data=data, chunks=chunks, **kw)
        writes.append(time.perf_counter() - start)
        with h5py.File(path, "r") as f:
            start = time.perf_counter()
            back = f["d"][...]
            reads.append(time.perf_counter() - start)
            stored = f["d"].id.get_storage_size()
        if back.tobytes() != np.ascontiguousarray(data).tobytes():
            raise click.ClickException("a filter did not round-trip the data bit for bit")
    return stored, min(writes), min(reads)


@main.command()
@click.argument("targets", nargs=-1, required=True)
@click.option("--repeats", type=int, default=3, show_default=True, help="Best of this many runs.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Write ratio against speed to this PNG.")
@click.option("--max-bytes", type=int, default=256 << 20, show_default=True,
              help="Skip datasets larger than this.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def bench(targets, repeats, plot, max_bytes, quiet):
    """Time TARGETS (FILE or FILE:DATASET) through karoo fast and archive, Bitshuffle+LZ4,
    Zstd, Blosc2 and no filter: ratio (stored/raw), write and read speed, as a markdown
    table; suggests a chunk shape and lag."""
    rows, suggestions = [], []
    filters = _filters()
    with tempfile.TemporaryDirectory(prefix="karoo-bench-") as tmp:
        jobs = []
        for target in targets:
            file, name = _files.select(target)
            if not os.path.exists(file):
                raise click.BadParameter(f"{file} does not exist", param_hint="TARGETS")
            with h5py.File(file, "r") as fin:
                chosen = [fin[name]] if name else _files.datasets(fin)
                for dataset in chosen:
                    if not isinstance(dataset, h5py.Dataset):
                        raise click.BadParameter(f"{target} is not a dataset", param_hint="TARGETS")
                    nbytes = _nbytes(dataset)
                    if name is None and (nbytes < 64 << 10 or not _compressible(dataset)):
                        continue
                    if nbytes > max_bytes or not _compressible(dataset):
                        click.echo(f"skipping {file}:{dataset.name} ({nbytes} bytes, {dataset.dtype})", err=True)
                        continue
                    jobs.append((file, dataset.name, dataset[...], dataset.chunks, _time_axis_and_lag(fin, dataset)))
        if not jobs:
            raise click.ClickException("no numeric datasets of 64 KiB or more to bench (name one as FILE:DATASET)")
        with tqdm(total=len(jobs) * len(filters), desc="bench", disable=quiet or None, leave=False,
                  file=sys.stderr) as bar:
            for file, name, data, chunks, (time_axis, lag) in jobs:
                chunks = chunks or suggest_chunks(data.shape, data.dtype, time_axis)
                mib = data.nbytes / 2**20
                for label, kw in filters:
                    if label.startswith("karoo") and lag:
                        kw = {"compression": Karoo(mode=kw["compression"].options.mode, lag=lag)}
                    stored, write, read = _bench_one(data, chunks, kw, os.path.join(tmp, "b.h5"), repeats)
                    rows.append((f"{os.path.basename(file)}:{name}", label, stored / data.nbytes,
                                 mib / write, mib / read))
                    bar.update(1)
                suggestions.append((f"{os.path.basename(file)}:{name}", data.shape, data.dtype, chunks,
                                    time_axis, lag))
    click.echo("| dataset | filter | stored/raw | write MiB/s | read MiB/s |")
    click.echo("|---|---|---:|---:|---:|")
    for dataset, label, ratio, write, read in rows:
        click.echo(f"| {dataset} | {label} | {ratio:.4f} | {write:.0f} | {read:.0f} |")
    click.echo("")
    for dataset, shape, dtype, chunks, time_axis, lag in suggestions:
        suggested = suggest_chunks(shape, dtype, time_axis)
        if lag:
            row = int(np.prod(suggested[1:]))
            nbls = lag // int(np.prod(chunks[1:]))
            steps = max(1, suggested[0] // nbls)
            suggested = (min(shape[0], steps * nbls),) + tuple(suggested[1:])
            advice = f"lag={nbls * row} (Nbls={nbls} rows of {row} elements: UVH5 time-major blt axis)"
        else:
            advice = "lag=0 (successive rows are successive times)"
        click.echo(f"{dataset}: suggested chunks={suggested}, time_axis={time_axis}, {advice}")
    if plot:
        _plot(rows, plot)
        click.echo(f"plot written to {plot}")


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = sorted({r[1] for r in rows})
    for label in labels:
        points = [(r[4], r[2]) for r in rows if r[1] == label]
        ax.scatter([p[0] for p in points], [p[1] for p in points], label=label)
    ax.set_xscale("log")
    ax.set_xlabel("read speed (MiB/s)")
    ax.set_ylabel("stored / raw (lower is better)")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)



if __name__ == "__main__":
    main()
