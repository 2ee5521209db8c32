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


def _chunks_error(message):
    return click.BadParameter(message, param_hint="'--chunks'")


def _parse_shape(text):
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise _chunks_error(f"expected comma-separated integers or 'auto', got {text!r}") from None
    if any(n < 1 for n in shape):
        raise _chunks_error(f"every chunk dimension must be at least 1, got {text!r}")
    return shape


def _parse_chunks(values):
    """``--chunks`` values: ``[DATASET=]SHAPE`` or ``[DATASET=]auto``. Returns (by dataset
    name, by rank, default) where a shape is a tuple or "auto"."""
    by_name, by_rank, default = {}, {}, None
    for text in values:
        name, sep, value = text.rpartition("=")
        layout = "auto" if value.strip() == "auto" else _parse_shape(value)
        if sep:
            by_name["/" + name.strip().strip("/")] = layout
        elif layout == "auto":
            default = "auto"
        else:
            by_rank[len(layout)] = layout
    return by_name, by_rank, default


def _chunks_for(dataset, rules):
    """The chunk layout `rules` give `dataset`: a shape of its rank, "auto", or None (its
    own)."""
    by_name, by_rank, default = rules
    name = "/" + dataset.name.strip("/")
    if name in by_name:
        layout = by_name[name]
        if layout != "auto" and len(layout) != dataset.ndim:
            raise _chunks_error(f"{name}={','.join(map(str, layout))} has {len(layout)} "
                                f"dimensions, {name} has {dataset.ndim}")
        return layout
    return by_rank.get(dataset.ndim, default)


def _compressible(dataset):
    dt = dataset.dtype
    return dataset.shape and dataset.size > 0 and not dt.hasobject and dt.kind in "iufcV" and \
        h5py.check_vlen_dtype(dt) is None and (dt.kind != "V" or dt.fields is not None)


def _nbytes(dataset):
    return (dataset.size or 0) * dataset.dtype.itemsize


def _copy_attrs(src, dst):
    for key, value in src.attrs.items():
        dst.attrs[key] = value


def _unreadable_filters(dataset):
    """(id, name) of the filters of `dataset` this process has no decoder for, when its
    chunks need one (h5py marks third-party filters optional, and HDF5 stores a chunk
    unfiltered where an optional filter failed, so such a dataset may still read)."""
    plist = dataset.id.get_create_plist()
    missing = []
    for index in range(plist.get_nfilters()):
        filter_id, _, _, name = plist.get_filter(index)
        if not h5py.h5z.filter_avail(filter_id):
            missing.append((filter_id, name.decode(errors="replace") or "unnamed"))
    if missing and dataset.size:
        try:
            dataset[(0,) * dataset.ndim]
        except OSError:
            return missing
    return []


def _register_hdf5plugin():
    """Registers hdf5plugin's filters (Blosc, Blosc2, Bitshuffle, LZ4, Zstd, ...) where it is
    installed, so that datasets written with them can be read; whether it is."""
    try:
        import hdf5plugin  # noqa: F401
    except ImportError:
        return False
    return True


def _check_readable(fin, have_hdf5plugin):
    problems = []
    for dataset in _files.datasets(fin):
        missing = _unreadable_filters(dataset)
        if missing:
            names = ", ".join(f"filter {filter_id} ({name})" for filter_id, name in missing)
            problems.append(f"{dataset.name}: {names}")
    if problems:
        hint = "" if have_hdf5plugin else "; pip install hdf5plugin provides the common ones"
        raise click.ClickException("karoo: cannot read these datasets, their filters are not "
                                   "available: " + "; ".join(problems) + hint)


def _write_repacked(fin, fout, rules, mode, predictor, time_axis, lag, min_size, quiet):
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
        layout = _chunks_for(obj, rules)
        axis = time_axis if time_axis < obj.ndim else 0
        series_lag = lag
        if layout == "auto":
            file_axis, file_lag = _time_axis_and_lag(fin, obj)
            axis = file_axis
            layout, suggested_lag, _ = _suggestion(obj.shape, obj.dtype, obj.chunks or obj.shape,
                                                   file_axis, file_lag)
            series_lag = lag or suggested_lag
        elif layout is None:
            layout = obj.chunks or suggest_chunks(obj.shape, obj.dtype, axis)
        layout = tuple(max(1, min(c, s)) for c, s in zip(layout, obj.shape))
        plane = int(np.prod(layout[axis:]))
        options = Karoo(mode=mode, predictor=predictor, time_axis=axis,
                        lag=series_lag if series_lag <= plane else 0)
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


@main.command()
@click.argument("src", type=click.Path(exists=True, dir_okay=False))
@click.argument("dst", type=click.Path(dir_okay=False))
@click.option("--archive", is_flag=True, help="Archive mode: smaller, several times slower.")
@click.option("--chunks", multiple=True, metavar="[DATASET=]SHAPE|auto",
              help="Chunk shape, e.g. 64,1,1024,4: for one dataset (Data/visdata=64,1,1024,4), "
              "for every dataset of its rank (a bare SHAPE), or 'auto' for the layout "
              "'karoo bench' suggests. Repeatable. Default: each dataset's own chunks, or "
              "about 4 MiB along axis 0.")
@click.option("--predictor", type=click.Choice(list(PREDICTORS)), default="auto", show_default=True)
@click.option("--time-axis", type=int, default=0, show_default=True)
@click.option("--lag", type=int, default=0, show_default=True,
              help="Elements between successive samples of a series (0 derives it).")
@click.option("--min-size", type=int, default=1024, show_default=True,
              help="Datasets smaller than this many bytes are copied as they are.")
@click.option("--force", is_flag=True, help="Overwrite DST if it exists.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def repack(src, dst, archive, chunks, predictor, time_axis, lag, min_size, force, quiet):
    """Rewrite SRC to DST with every numeric dataset compressed by karoo (other filters,
    shuffle included, are dropped; attributes and groups are kept). DST is written under
    a temporary name and renamed only when complete."""
    rules = _parse_chunks(chunks)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise click.BadParameter("DST must differ from SRC")
    if os.path.exists(dst) and not force:
        raise click.ClickException(f"karoo: {dst} exists; pass --force to overwrite it")
    mode = "archive" if archive else "fast"
    have_hdf5plugin = _register_hdf5plugin()
    folder = os.path.dirname(os.path.abspath(dst))
    handle, partial = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(dst)}.", suffix=".partial")
    os.close(handle)
    try:
        with h5py.File(src, "r") as fin:
            _check_readable(fin, have_hdf5plugin)
            with h5py.File(partial, "w") as fout:
                _write_repacked(fin, fout, rules, mode, predictor, time_axis, lag, min_size, quiet)
        os.replace(partial, dst)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise
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


def _suggestion(shape, dtype, chunks, time_axis, lag):
    """The chunk layout bench suggests for a dataset of `shape` and `dtype` stored in
    `chunks` (with `lag`, the UVH5 time-major lag for those chunks, or 0): (chunks, the
    lag for them, the advice as text)."""
    suggested = suggest_chunks(shape, dtype, time_axis)
    if not lag:
        return suggested, 0, "lag=0 (successive rows are successive times)"
    row = int(np.prod(suggested[1:]))
    nbls = lag // int(np.prod(chunks[1:]))
    steps = max(1, suggested[0] // nbls)
    suggested = (min(shape[0], steps * nbls),) + tuple(suggested[1:])
    advice = f"lag={nbls * row} (Nbls={nbls} rows of {row} elements: UVH5 time-major blt axis)"
    return suggested, nbls * row, advice


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
    table; suggests a chunk shape and lag, and times karoo in that layout too (apply it
    with 'karoo repack --chunks auto'). A file with no dataset of 64 KiB or more is
    benched whole."""
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
                if name is None:
                    numeric = [d for d in chosen if _compressible(d)]
                    large = [d for d in numeric if _nbytes(d) >= 64 << 10]
                    chosen = large or numeric  # a small file: bench what it has
                for dataset in chosen:
                    if not isinstance(dataset, h5py.Dataset):
                        raise click.BadParameter(f"{target} is not a dataset", param_hint="TARGETS")
                    nbytes = _nbytes(dataset)
                    if nbytes > max_bytes or not _compressible(dataset):
                        click.echo(f"skipping {file}:{dataset.name} ({nbytes} bytes, {dataset.dtype})", err=True)
                        continue
                    jobs.append((file, dataset.name, dataset[...], dataset.chunks, _time_axis_and_lag(fin, dataset)))
        if not jobs:
            raise click.ClickException("no numeric datasets to bench (name one as FILE:DATASET)")
        plans = []
        for file, name, data, chunks, (time_axis, lag) in jobs:
            chunks = chunks or suggest_chunks(data.shape, data.dtype, time_axis)
            suggested, suggested_lag, advice = _suggestion(data.shape, data.dtype, chunks, time_axis, lag)
            runs = [(label, kw, chunks, lag) for label, kw in filters]
            if tuple(suggested) != tuple(chunks):
                runs += [(f"{label} (suggested chunks)", kw, suggested, suggested_lag)
                         for label, kw in filters if label.startswith("karoo")]
            label_of = f"{os.path.basename(file)}:{name}"
            plans.append((label_of, data, runs))
            suggestions.append((label_of, suggested, time_axis, advice))
        with tqdm(total=sum(len(plan[-1]) for plan in plans), desc="bench", disable=quiet or None,
                  leave=False, file=sys.stderr) as bar:
            for label_of, data, runs in plans:
                mib = data.nbytes / 2**20
                for label, kw, layout, series_lag in runs:
                    if label.startswith("karoo") and series_lag:
                        kw = {"compression": Karoo(mode=kw["compression"].options.mode, lag=series_lag)}
                    stored, write, read = _bench_one(data, layout, kw, os.path.join(tmp, "b.h5"), repeats)
                    rows.append((label_of, label, stored / data.nbytes, mib / write, mib / read))
                    bar.update(1)
    click.echo("| dataset | filter | stored/raw | write MiB/s | read MiB/s |")
    click.echo("|---|---|---:|---:|---:|")
    for dataset, label, ratio, write, read in rows:
        click.echo(f"| {dataset} | {label} | {ratio:.4f} | {write:.0f} | {read:.0f} |")
    click.echo("")
    for dataset, suggested, time_axis, advice in suggestions:
        click.echo(f"{dataset}: suggested chunks={suggested}, time_axis={time_axis}, {advice}")
    if plot:
        _plot(rows, plot)
        click.echo(f"plot written to {plot}")


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    labels = list(dict.fromkeys(r[1] for r in rows))
    for ax, column, what in ((axes[0], 3, "write"), (axes[1], 4, "read")):
        for label in labels:
            points = [(r[column], r[2]) for r in rows if r[1] == label]
            ax.scatter([p[0] for p in points], [p[1] for p in points], label=label)
        ax.set_xscale("log")
        ax.set_xlabel(f"{what} speed (MiB/s, through h5py)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("stored / raw (lower is better)")
    axes[1].legend(fontsize="small")
    datasets = list(dict.fromkeys(r[0] for r in rows))
    shown = ", ".join(datasets[:3]) + (f" and {len(datasets) - 3} more" if len(datasets) > 3 else "")
    fig.suptitle(f"karoo bench: {shown}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
