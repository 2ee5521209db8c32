"""Peak resident memory of writing and of reading a 64 MiB float32 dataset through h5py,
per chunk size, with karoo and with no filter; each case runs in its own process and its
peak RSS comes from getrusage. The difference to the unfiltered run is what the filter
costs. Usage: .venv/bin/python scripts/peak_memory.py [--archive] [--doc]  (karoo fast
mode, or archive mode with --archive; --doc also writes the table, labelled with date,
commit, machine and command, into docs/reliability.md)

With --scratch [MiB] (default 256) it prints instead the scratch memory of one chunk of
that size, in both modes, through karoo.compress / karoo.decompress and through h5py:
the peak resident memory of the call beyond what was resident before it (the input
array, and for reads the array read into) and beyond the input and the output of the
codec itself: the chunk it is given and the chunk it makes (through h5py, the chunk
buffer HDF5 hands the filter and the chunk the filter hands back, even where the filter
writes it over the buffer it was given). Each case runs in its own process; the peak
comes from the kernel's high-water mark, reset just before the call."""

import os
import pathlib
import resource
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import bench_doc  # noqa: E402

CASE = """
import sys, h5py, numpy as np
mode, path, chunk_mib, filt, karoo_mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
cols = 1 << 16
rows = chunk_mib * (1 << 20) // (4 * cols)
kw = {"compression": 52033, "compression_opts": (karoo_mode,)} if filt == "karoo" else {}
if mode == "write":
    rng = np.random.default_rng(0)
    base = np.sin(np.arange(cols, dtype=np.float32) * np.float32(1e-3))
    data = np.empty((256, cols), dtype=np.float32)
    for t in range(256):
        data[t] = base + np.float32(1e-3) * rng.standard_normal(cols, dtype=np.float32)
    with h5py.File(path, "w", rdcc_nbytes=0) as f:
        f.create_dataset("d", data=data, chunks=(rows, cols), **kw)
else:
    with h5py.File(path, "r", rdcc_nbytes=0) as f:
        d = f["d"]
        for i in range(0, d.shape[0], rows):
            d[i:i + rows]
"""


SCRATCH_CASE = """
import sys, h5py, numpy as np, karoo
op, mode, mib, threads, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
cols = 1 << 14
rows = mib * (1 << 20) // (4 * cols)
rng = np.random.default_rng(0)
base = np.sin(np.arange(cols, dtype=np.float32) * np.float32(1e-3))
data = np.empty((rows, cols), dtype=np.float32)
for t in range(rows):
    data[t] = base + np.float32(1e-3) * rng.standard_normal(cols, dtype=np.float32)
kw = {"compression": 52033, "compression_opts": (0 if mode == "fast" else 1, 0, threads)}

def status(field):
    return int(open("/proc/self/status").read().split(field + ":")[1].split()[0]) * 1024

def start():
    open("/proc/self/clear_refs", "w").write("5")  # resets the high-water mark
    return status("VmRSS")

if op == "compress":
    before = start()
    out = karoo.compress(data, mode=mode, threads=threads)
    codec = len(out)
elif op == "decompress":
    chunk = karoo.compress(data, mode=mode, threads=threads)
    del data
    before = start()
    out = karoo.decompress(chunk, threads=threads)
    codec = len(chunk) + out.nbytes
elif op == "write":
    with h5py.File(path, "w", rdcc_nbytes=0) as f:
        d = f.create_dataset("d", shape=data.shape, dtype=data.dtype, chunks=data.shape, **kw)
        before = start()
        d[...] = data
        stored = d.id.get_chunk_info(0).size
    codec = data.nbytes + stored  # the chunk HDF5 hands the filter, and the coded chunk
else:
    with h5py.File(path, "w", rdcc_nbytes=0) as f:
        f.create_dataset("d", data=data, chunks=data.shape, **kw)
    with h5py.File(path, "r", rdcc_nbytes=0) as f:
        d = f["d"]
        stored = d.id.get_chunk_info(0).size
        data[...] = 0
        before = start()
        d.read_direct(data)
    codec = stored + data.nbytes  # the chunk read, and the filter's output
print(status("VmHWM") - before - codec)
"""


def scratch_table(mib):
    """Prints the scratch memory table for chunks of `mib` MiB."""
    print(f"One float32 chunk of {mib} MiB (smooth data and noise), default level, all cores "
          "(threads 0) and one thread; scratch in MiB and in chunks.")
    print()
    print("| mode | threads | karoo.compress | karoo.decompress | h5py write | h5py read |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("fast", "archive"):
            for threads in (0, 1):
                cells = []
                for op in ("compress", "decompress", "write", "read"):
                    out = subprocess.run(
                        [sys.executable, "-c", SCRATCH_CASE, op, mode, str(mib), str(threads),
                         str(pathlib.Path(tmp) / "scratch.h5")],
                        check=True, capture_output=True, text=True,
                        env={**os.environ, "HDF5_PLUGIN_PATH": str(REPO / "target" / "release")})
                    extra = max(int(out.stdout.split()[-1]), 0) / 2**20
                    cells.append(f"{extra:.0f} ({extra / mib:.2f})")
                print(f"| {mode} | {threads or 'all'} | " + " | ".join(cells) + " |")


def main():
    args = sys.argv[1:]
    if "--scratch" in args:
        at = args.index("--scratch")
        mib = int(args[at + 1]) if at + 1 < len(args) and args[at + 1].isdigit() else 256
        with bench_doc.capture("scratch-memory", f"scripts/peak_memory.py --scratch {mib}",
                               bench_doc.RELIABILITY, enabled="--doc" in args):
            scratch_table(mib)
        return
    karoo_mode = "1" if "--archive" in sys.argv[1:] else "0"
    section = "peak-memory-archive" if karoo_mode == "1" else "peak-memory"
    command = "scripts/peak_memory.py" + (" --archive" if karoo_mode == "1" else "")
    with bench_doc.capture(section, command, bench_doc.RELIABILITY, enabled="--doc" in sys.argv[1:]):
        table(karoo_mode)


def table(karoo_mode):
    """Prints the table: one row per chunk size."""
    print("| chunk | no filter write | karoo write | no filter read | karoo read | karoo overhead (write / read) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for chunk_mib in (1, 4, 16, 64):
            cells = {}
            for filt in ("none", "karoo"):
                path = str(pathlib.Path(tmp) / f"{filt}.h5")
                # Each case runs in a fresh interpreter that reports its own peak.
                for mode in ("write", "read"):
                    out = subprocess.run(
                        [sys.executable, "-c", CASE + "\nimport resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
                         mode, path, str(chunk_mib), filt, karoo_mode],
                        check=True, capture_output=True, text=True,
                        env={**os.environ, "HDF5_PLUGIN_PATH": str(REPO / "target" / "release")})
                    cells[(filt, mode)] = int(out.stdout.split()[-1]) / 1024
            w = cells[("karoo", "write")] - cells[("none", "write")]
            r = cells[("karoo", "read")] - cells[("none", "read")]
            print(f"| {chunk_mib} MiB | {cells[('none', 'write')]:.0f} MiB | {cells[('karoo', 'write')]:.0f} MiB | "
                  f"{cells[('none', 'read')]:.0f} MiB | {cells[('karoo', 'read')]:.0f} MiB | "
                  f"{w:+.0f} / {r:+.0f} MiB ({w / chunk_mib:.1f} / {r / chunk_mib:.1f} chunks) |")


if __name__ == "__main__":
    main()
