"""Tests of the installed `karoo` package (pip install . first). HDF5_PLUGIN_PATH is
removed before h5py loads: the package must register the filter by itself."""

import os
import pathlib
import subprocess
import sys

os.environ.pop("HDF5_PLUGIN_PATH", None)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("KAROO_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_files():
    """The shared UVH5 files (../shared/data), or an empty list when absent."""
    if not SHARED.is_dir():
        return []
    return sorted(SHARED.glob("*/*.uvh5"))


needs_shared = pytest.mark.skipif(not shared_files(), reason=f"{SHARED} not present")


def same_bits(a, b):
    """True when two arrays hold the same dtype, shape and bytes (NaN payloads included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def visibilities(shape, dtype="c8", seed=0):
    """Smooth complex (or real) series along axis 0 with noise in the low bits."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    real = np.float32 if dtype.itemsize in (4, 8) else np.float64
    t = np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1))
    base = rng.normal(size=(1,) + tuple(shape[1:]))

    def series():
        return (base * (1 + 0.02 * np.sin(t / 9)) + 1e-3 * rng.normal(size=shape)).astype(real)

    if dtype.kind == "c":
        out = np.empty(shape, dtype)
        out.real, out.imag = series(), series()
        return out
    return series().astype(dtype)


def run_python(code, env=None, **kw):
    """Runs `code` in a fresh interpreter (no HDF5_PLUGIN_PATH); returns the completed process."""
    full = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full,
                          timeout=300, **kw)
