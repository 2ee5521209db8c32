"""Peak resident memory of writing and of reading a 64 MiB float32 dataset through h5py,
per chunk size, with karoo and with no filter; each case runs in its own process and its
peak RSS comes from getrusage. The difference to the unfiltered run is what the filter
costs. Usage: .venv/bin/python scripts/peak_memory.py [--archive] [--doc]  (karoo fast
mode, or archive mode with --archive; --doc also writes the table, labelled with date,
commit, machine and command, into docs/reliability.md)"""

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


def main():
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
