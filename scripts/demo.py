"""karoo demo: write a generated MeerKAT-like observation through h5py with karoo (fast and
archive mode), with Bitshuffle+LZ4 and with no filter; read each back, check it bit-exact, and print ratio and
throughput side by side (measured in this run, so the ratios between rows are what count)."""

import argparse
import os
import pathlib
import sys
import tempfile


REPO = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("HDF5_PLUGIN_PATH", str(REPO / "target" / "release"))
sys.path.insert(0, str(REPO / "scripts"))

import h5py  # noqa: E402
import hdf5plugin  # noqa: E402

import datasets  # noqa: E402
from bench_filters import measure_h5  # noqa: E402

KAROO = 52033


def filters():
    """The filters compared: name -> create_dataset keyword arguments."""
    return {
        "none": {},
        "bitshuffle+lz4": dict(hdf5plugin.Bitshuffle(cname="lz4")),
        "karoo fast": {"compression": KAROO},
        "karoo archive": {"compression": KAROO, "compression_opts": (1,)},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ntime", type=int, default=128, help="time dumps (default 128: 64 MiB)")
    parser.add_argument("--nchan", type=int, default=4096, help="channels")
    parser.add_argument("--ncorr", type=int, default=16, help="correlation products")
    parser.add_argument("--chunk-time", type=int, default=8, help="dumps per chunk (8: 4 MiB chunks)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement, best kept")
    args = parser.parse_args()

    data = datasets.meerkat_like(args.ntime, args.nchan, args.ncorr)
    chunks = (min(args.chunk_time, args.ntime), args.nchan, args.ncorr)
    shm = pathlib.Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    mib = data.nbytes / 2**20
    print(f"MeerKAT-like observation: {data.shape} complex64 (time, channel, product), "
          f"{mib:.0f} MiB, chunks {chunks} ({data.nbytes / data.shape[0] * chunks[0] / 2**20:.1f} MiB)")
    print(f"h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}, files in {base or 'a temp dir'}, "
          f"chunk cache off, best of {args.repeats}\n")
    rows = []
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        for name, kwargs in filters().items():
            rows.append((name, *measure_h5(pathlib.Path(tmp), data, chunks, kwargs, args.repeats)))
    ref = next(r for r in rows if r[0] == "bitshuffle+lz4")
    print("| filter | stored/raw | write MB/s | read MB/s | write vs bitshuffle | read vs bitshuffle |")
    print("|---|---|---|---|---|---|")
    for name, ratio, write, read in rows:
        print(f"| {name} | {ratio:.3f} | {write:.0f} | {read:.0f} | {write / ref[2]:.2f}x | {read / ref[3]:.2f}x |")
    print("\nall filters round-tripped bit-exactly")


if __name__ == "__main__":
    main()
