#!/usr/bin/env python3
"""Write and read throughput of one HDF5 filter through h5py, measured in a Python process of
its own.

Why a process of its own: glibc's malloc adapts to what a process has allocated before. A
freed block above its mmap threshold raises the threshold, and the heap is trimmed above
twice that, so whether a filter's chunk buffers come from fresh, page-faulting memory
depends on the allocations made earlier in the same process. Timed one after another in one
process, a filter inherits the state the previous one left: Bitshuffle+LZ4 writes the 64 MiB
generated observation at 1 time step per chunk at about 510 MB/s in a process of its own and
at about 930 MB/s right after one karoo write in the same process. Each measurement here runs
in a new process, as a program using only that filter would.

`pinned=True` runs the process with glibc's thresholds fixed (`MALLOC_MMAP_THRESHOLD_` 32 MiB,
`MALLOC_TRIM_THRESHOLD_` 64 MiB): no chunk buffer is then mmapped or trimmed away, which
takes the allocator out of the comparison and leaves the filters' own work and HDF5's.

    from h5_timing import time_filter
    ratio, write_mbs, read_mbs = time_filter("obs.npy", (16, 4096, 16), {"compression": 52033},
                                             repeats=3, folder="/dev/shm")

The child process imports hdf5plugin (its filters). It finds karoo through
HDF5_PLUGIN_PATH, which it inherits, where that is set (so the library timed is the one
named there, not the installed package's, which may be another build); otherwise it
imports the installed karoo package.
"""

import json
import os
import pathlib
import subprocess
import sys
import time

# glibc's allocator settings of a pinned measurement.
PINNED_ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def time_filter(data_path, chunks, kwargs, repeats, folder, pinned=False):
    """(stored/raw, write MB/s, read MB/s) of writing the array saved at `data_path` (.npy)
    with `chunks` and the create_dataset arguments `kwargs` (JSON-serialisable), best of
    `repeats` writes and reads, in a new process; the file goes to `folder`. Raises
    RuntimeError when the child fails (its last stderr line) or the round trip is not
    bit-exact."""
    request = {"data": str(data_path), "chunks": list(chunks), "kwargs": kwargs,
               "repeats": repeats, "folder": str(folder)}
    env = dict(os.environ)
    if pinned:
        env.update(PINNED_ALLOCATOR)
    done = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), json.dumps(request)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise RuntimeError(lines[-1])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["ratio"], result["write"], result["read"]


def _measure(request):
    """The child's measurement of `request` (see time_filter), as a dict."""
    import h5py
    import hdf5plugin  # noqa: F401  (registers its filters)
    import numpy as np

    # With HDF5_PLUGIN_PATH set, HDF5 loads the plugin named there: that is the library
    # timed (importing karoo would register the installed package's library instead,
    # which may be another build).
    if not os.environ.get("HDF5_PLUGIN_PATH"):
        try:
            import karoo  # noqa: F401  (registers the filter with h5py's HDF5)
        except ImportError:
            pass
    data = np.load(request["data"])
    chunks = tuple(request["chunks"])
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in request["kwargs"].items()}
    path = pathlib.Path(request["folder"]) / f"h5_timing_{os.getpid()}.h5"
    write_s = read_s = float("inf")
    try:
        for _ in range(request["repeats"]):
            start = time.perf_counter()
            with h5py.File(path, "w", rdcc_nbytes=0) as f:
                f.create_dataset("d", data=data, chunks=chunks, **kwargs)
            mid = time.perf_counter()
            with h5py.File(path, "r", rdcc_nbytes=0) as f:
                back = f["d"][...]
            end = time.perf_counter()
            write_s, read_s = min(write_s, mid - start), min(read_s, end - mid)
            if back.tobytes() != data.tobytes():
                raise RuntimeError("round trip is not bit-exact")
        with h5py.File(path, "r") as f:
            stored = f["d"].id.get_storage_size()
    finally:
        path.unlink(missing_ok=True)
    return {"ratio": stored / data.nbytes, "write": data.nbytes / write_s / 1e6,
            "read": data.nbytes / read_s / 1e6}


if __name__ == "__main__":
    print(json.dumps(_measure(json.loads(sys.argv[1]))))
