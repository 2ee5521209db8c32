"""Writes the golden HDF5 files of the karoo filter (run by hand; never overwrites).

Each file holds pairs of datasets: `<name>` written through the karoo filter and
`<name>_expected`, the same values stored without a filter. Readers (the h5py tests in
h5tests/python/test_golden.py and the Debian HDF5 tests in h5tests/tests/debian_hdf5.rs)
decode every filtered dataset and compare it byte for byte with its twin, so a file
written by any released karoo keeps reading the same values.

    HDF5_PLUGIN_PATH=target/release .venv/bin/python h5tests/golden/make_golden_files.py

writes `tests/golden/hdf5/karoo-v1-h5py.h5` through h5py's bundled HDF5 and
`karoo-v1-h5repack.h5` through the system's h5repack (HDF5 1.10's set_local path).
"""

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

KAROO = 52033
OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "hdf5"


def series(shape, seed, dtype=np.float64):
    """Random walks along axis 0 around per-series levels, with noise in the low bits."""
    rng = np.random.default_rng(seed)
    level = rng.uniform(-100, 100, size=shape[1:])
    steps = rng.normal(0, 0.25, size=shape).cumsum(axis=0)
    return (level + steps + rng.normal(0, 1e-3, size=shape)).astype(dtype)


def complex_series(shape, seed, dtype):
    return (series(shape, seed) + 1j * series(shape, seed + 100)).astype(dtype)


def with_specials(a):
    """float32 specials sprinkled in: NaN payloads, -0.0, infinities, denormals."""
    bits = a.view(np.uint32).reshape(-1)
    specials = np.array(
        [0x80000000, 0x7F800000, 0xFF800000, 0x7FC01234, 0xFFBFFFFF, 1, 0x807FFFFF],
        dtype=np.uint32,
    )
    bits[::29] = np.resize(specials, bits[::29].shape)
    return a


def cases():
    """(name, data, chunks, compression_opts) of every dataset."""
    compound = np.dtype([("r", "<i4"), ("i", "<i4")])
    raw = np.zeros((9, 30), dtype=compound)
    raw["r"] = (series((9, 30), 3) * 1000).astype(np.int32)
    raw["i"] = (series((9, 30), 4) * 1000).astype(np.int32)
    spectra = (np.round(series((24, 64), 9) * 50) / 50).astype(np.float32)
    uvh5_like = series((20 * 3, 16), 10, np.float32)  # 20 times x 3 baselines, time-major
    return [
        ("complex64_fast_edges", complex_series((13, 50, 4), 1, np.complex64), (4, 32, 4), None),
        ("complex128_archive", complex_series((10, 40, 2), 2, np.complex128), (10, 40, 2), (1,)),
        ("int32_compound_fast", raw, (4, 30), None),
        ("float32_bigendian", series((20, 33), 5, np.float32).astype(">f4"), (8, 16), None),
        ("float32_archive_edges", series((37, 21), 6, np.float32), (16, 8), (1,)),
        ("float32_specials", with_specials(series((16, 40), 7, np.float32)), (16, 40), None),
        ("float64_options", series((30, 20), 8), (30, 20), (0, 2 + 256 * 2 + 65536 * 7, 1, 0, 0)),
        ("int16_time_axis1", (series((8, 50), 11) * 30).astype(np.int16), (8, 50), (0, 0, 0, 1)),
        ("float32_scaled_spectra_archive", spectra, (24, 64), (1,)),
        ("float32_lag_archive", uvh5_like, (60, 16), (1, 0, 0, 0, 48)),
        ("float32_one_row_fast", series((1, 300), 12, np.float32), (1, 300), None),
    ]


def write_h5py(path):
    with h5py.File(path, "w", libver="earliest") as f:
        for name, data, chunks, opts in cases():
            f.create_dataset(name, data=data, chunks=chunks, compression=KAROO,
                             compression_opts=opts)
            f.create_dataset(name + "_expected", data=data)


def write_h5repack(path, tmp):
    with h5py.File(tmp, "w", libver="earliest") as f:
        for name, data, chunks, opts in cases():
            f.create_dataset(name, data=data, chunks=chunks)
            f.create_dataset(name + "_expected", data=data)
    args = ["h5repack"]
    for name, _, chunks, opts in cases():
        values = list(opts or (0,))
        spec = ",".join(str(v) for v in [KAROO, 0, len(values), *values])
        args += ["-f", f"{name}:UD={spec}"]
    subprocess.run(args + [str(tmp), str(path)], check=True)
    os.remove(tmp)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for path, write in [
        (OUT / "karoo-v1-h5py.h5", write_h5py),
        (OUT / "karoo-v1-h5repack.h5", lambda p: write_h5repack(p, OUT / "plain.tmp.h5")),
    ]:
        if path.exists():
            print(f"{path.name}: exists, left alone")
            continue
        write(path)
        with h5py.File(path) as f:
            for name, data, _, _ in cases():
                assert f[name].id.get_create_plist().get_filter(0)[0] == KAROO, name
                assert f[name][...].tobytes() == data.tobytes(), name
        print(f"{path.name}: written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
