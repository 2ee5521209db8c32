"""Chunks near HDF5's 4 GiB chunk-size limit, through h5py (run by hand: needs ~20 GiB of
memory and a few minutes):

    .venv/bin/python scripts/big_chunk.py [fast|archive] [smooth|noise] [rows]

Writes one float32 chunk of `rows` (default 1023) rows of 1 Mi values, 4 GiB - 4 MiB by
default (HDF5 refuses chunks of 4 GiB and more), with karoo, reads it back and checks it
bit-exactly; prints sizes, timings and peak RSS. `noise` makes the chunk incompressible,
so karoo stores it verbatim plus its header (about 100 bytes).

    .venv/bin/python scripts/big_chunk.py edge

An incompressible chunk of 4 GiB - 32 bytes in a `libver="latest"` file (which lets HDF5
write filtered chunks over 4 GiB but read them back truncated): karoo refuses to code it
(its stored form would pass 4 GiB), so HDF5, for which h5py marks the filter optional,
stores the chunk unfiltered; the script checks it reads back bit-exactly.
"""

import os
import pathlib
import resource
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("HDF5_PLUGIN_PATH", str(REPO / "target" / "release"))

import h5py  # noqa: E402

KAROO = 52033


def edge():
    """The chunk whose verbatim form would pass 4 GiB (see the module documentation)."""
    data = np.random.default_rng(1).integers(0, 2**32, size=(2**32 - 32) // 4, dtype=np.uint32).view(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "edge.h5"
        with h5py.File(path, "w", libver="latest") as f:
            f.create_dataset("d", data=data, chunks=data.shape, compression=KAROO)
        with h5py.File(path, "r") as f:
            stored = f["d"].id.get_storage_size()
            same = f["d"][...].view(np.uint32).tobytes() == data.view(np.uint32).tobytes()
    print(f"chunk of {data.nbytes} bytes stored as {stored} bytes, bit-exact {same}")
    if not same:
        raise SystemExit("round trip is not bit-exact")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "edge":
        edge()
        return
    mode = {"fast": 0, "archive": 1}[sys.argv[1] if len(sys.argv) > 1 else "fast"]
    kind = sys.argv[2] if len(sys.argv) > 2 else "smooth"
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 1023
    cols = 1 << 20
    start = time.perf_counter()
    if kind == "noise":
        data = np.random.default_rng(1).integers(0, 2**32, size=(rows, cols), dtype=np.uint32).view(np.float32)
    else:
        data = np.empty((rows, cols), dtype=np.float32)
        base = np.sin(np.arange(cols, dtype=np.float32) * np.float32(1e-3))
        noise = np.random.default_rng(1).standard_normal(cols, dtype=np.float32) * np.float32(1e-3)
        for t in range(rows):
            data[t] = base * np.float32(1 + 1e-3 * t) + np.roll(noise, t)
    print(f"chunk {data.shape} float32 = {data.nbytes} bytes ({data.nbytes / 2**30:.3f} GiB), "
          f"{kind}, mode {mode}; generated in {time.perf_counter() - start:.0f} s", flush=True)
    base_dir = None  # on disk: a file in /dev/shm would take memory too
    with tempfile.TemporaryDirectory(dir=base_dir) as tmp:
        path = pathlib.Path(tmp) / "big.h5"
        start = time.perf_counter()
        try:
            with h5py.File(path, "w", rdcc_nbytes=0) as f:
                f.create_dataset("d", data=data, chunks=data.shape, compression=KAROO, compression_opts=(mode,))
        except Exception as err:  # noqa: BLE001 - report whatever HDF5 raised
            print(f"write failed after {time.perf_counter() - start:.0f} s: {type(err).__name__}: {err}")
            return
        write_s = time.perf_counter() - start
        with h5py.File(path, "r", rdcc_nbytes=0) as f:
            stored = f["d"].id.get_storage_size()
            start = time.perf_counter()
            back = f["d"][...]
            read_s = time.perf_counter() - start
        same = back.view(np.uint32).tobytes() == data.view(np.uint32).tobytes()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"stored {stored} bytes (ratio {stored / data.nbytes:.3f}), write {write_s:.0f} s, "
          f"read {read_s:.0f} s, bit-exact {same}, peak RSS {peak:.1f} GiB")
    if not same:
        raise SystemExit("round trip is not bit-exact")


if __name__ == "__main__":
    main()
