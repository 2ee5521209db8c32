"""Walking HDF5 files: datasets, their chunks, and what karoo made of them."""

from __future__ import annotations

from dataclasses import dataclass, field

import h5py
import numpy as np

from ._array import decompress, describe
from ._hdf5 import FILTER_ID, pipeline
from ._lib import KarooError


def datasets(group: h5py.Group):
    """Every dataset under `group`, depth first, in name order."""
    found = []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            found.append(obj)

    group.visititems(visit)
    return found


def select(path: str):
    """Splits ``FILE[:DATASET]`` (the dataset part optional)."""
    if ":" in path:
        file, _, name = path.rpartition(":")
        if file and not file.endswith("\\"):
            return file, name
    return path, None


def chunk_offsets(dataset: h5py.Dataset):
    """Offsets of the chunks stored for `dataset` (HDF5 1.10.5+ chunk query API)."""
    dsid = dataset.id
    for index in range(dsid.get_num_chunks()):
        yield dsid.get_chunk_info(index).chunk_offset


def karoo_position(dataset: h5py.Dataset) -> int | None:
    """Index of karoo in the dataset's pipeline, or None."""
    for index, (filter_id, _, _) in enumerate(pipeline(dataset)):
        if filter_id == FILTER_ID:
            return index
    return None


@dataclass
class ChunkFailure:
    """A chunk that did not decode."""

    dataset: str
    offset: tuple[int, ...]
    message: str


@dataclass
class DatasetReport:
    """What `verify` or `inspect` found in one dataset."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    chunks: tuple[int, ...] | None
    filters: list[tuple[int, str, tuple[int, ...]]]
    raw_bytes: int
    stored_bytes: int
    karoo: bool
    nchunks: int = 0
    codings: dict[str, int] = field(default_factory=dict)
    axes: set[tuple[int, int]] = field(default_factory=set)
    modes: set[str] = field(default_factory=set)
    failures: list[ChunkFailure] = field(default_factory=list)


def report(dataset: h5py.Dataset, decode: bool, progress=None) -> DatasetReport:
    """Walks the chunks of `dataset`: describes each karoo chunk and, with `decode`, decodes
    it and checks its checksums. When karoo is the last filter of the pipeline the stored
    chunks are karoo chunks, read raw; otherwise each chunk is read through HDF5, which
    runs karoo's checks too."""
    rep = DatasetReport(
        name=dataset.name,
        shape=dataset.shape,
        dtype=str(dataset.dtype),
        chunks=dataset.chunks,
        filters=pipeline(dataset),
        raw_bytes=(dataset.size or 0) * dataset.dtype.itemsize,
        stored_bytes=dataset.id.get_storage_size(),
        karoo=karoo_position(dataset) is not None,
    )
    if not rep.karoo or dataset.chunks is None:
        return rep
    position = karoo_position(dataset)
    karoo_last = position == len(rep.filters) - 1
    for offset in chunk_offsets(dataset):
        rep.nchunks += 1
        try:
            if karoo_last:
                mask, data = dataset.id.read_direct_chunk(offset)
                if mask & (1 << position):  # karoo was skipped for this chunk
                    continue
                info = describe(data)
                name_counts = info["codings"] or {"stored verbatim": 1}
                for name, count in name_counts.items():
                    rep.codings[name] = rep.codings.get(name, 0) + count
                # Brief chunks (coded whole) record no mode and no axis.
                if info["mode"] is not None:
                    rep.axes.add((info["time_axis"], info["lag"]))
                rep.modes.add(info["mode"] or "brief")
                if decode:
                    decompress(data, out=np.empty(info["decoded_size"], np.uint8))
            elif decode:
                selection = tuple(slice(o, min(o + c, s)) for o, c, s in
                                  zip(offset, dataset.chunks, dataset.shape))
                dataset[selection]
        except (KarooError, OSError, ValueError) as error:
            rep.failures.append(ChunkFailure(dataset.name, tuple(offset), str(error).strip()))
        if progress is not None:
            progress.update(1)
    return rep
