"""Shared set-up for the tests through real HDF5: the plugin path and helpers."""

import os
import pathlib
import shutil

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# The plugin under test: HDF5_PLUGIN_PATH when set (scripts/test.sh sets it to the tests'
# build), else this checkout's release build.
PLUGIN_DIR = pathlib.Path(os.environ.get("HDF5_PLUGIN_PATH") or REPO / "target" / "release")
HERA_DIR = REPO.parent / "shared" / "data" / "hera"
KAROO = 52033

# HDF5 reads HDF5_PLUGIN_PATH when it first looks for a plugin: set it before h5py loads.
os.environ["HDF5_PLUGIN_PATH"] = str(PLUGIN_DIR)

import h5py  # noqa: E402


def pytest_configure(config):
    if not (PLUGIN_DIR / "libh5karoo.so").exists():
        raise pytest.UsageError(f"{PLUGIN_DIR}/libh5karoo.so missing: run cargo build --release -p h5karoo "
                                "(or set HDF5_PLUGIN_PATH to the folder holding it)")


def same_bits(a, b):
    """True when two arrays hold exactly the same bytes (NaN payloads and -0.0 included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def smooth_series(real, shape, seed):
    """A slowly varying float time series along axis 0 with ~0.1% noise."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(1,) + tuple(shape[1:]))
    t = np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1))
    return (base * (1 + 0.01 * np.sin(t / 7)) + 1e-3 * rng.normal(size=shape)).astype(real)


def with_specials(x, seed):
    """`x` with NaN payloads, signed zeros, infinities and denormals written into it."""
    real = x.dtype
    flat = x.reshape(-1)
    rng = np.random.default_rng(seed)
    tiny = np.finfo(real).smallest_subnormal
    specials = np.array([np.nan, -0.0, np.inf, -np.inf, tiny, -3 * tiny], dtype=real)
    idx = rng.choice(flat.size, size=min(flat.size, 64), replace=False)
    flat[idx] = specials[np.arange(idx.size) % specials.size]
    uint = np.uint32 if real.itemsize == 4 else np.uint64
    payload = 0x7FC01234 if real.itemsize == 4 else 0x7FF8DEADBEEF0001
    flat[idx[:2]] = np.array([payload, payload | 1], dtype=uint).view(real)
    return x


def special_floats(dtype, shape, seed=0):
    """Smooth data of `dtype` (float or complex) with special values mixed in."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        real = np.float32 if dtype.itemsize == 8 else np.float64
        re = with_specials(smooth_series(real, shape, seed), seed)
        im = with_specials(smooth_series(real, shape, seed + 1), seed + 1)
        out = np.empty(shape, dtype=dtype)
        out.real, out.imag = re, im
        return out
    return with_specials(smooth_series(dtype, shape, seed), seed)


@pytest.fixture
def h5file(tmp_path):
    """A fresh HDF5 file path in a temporary directory."""
    return tmp_path / "test.h5"


def tool(name):
    """Path of an HDF5 command-line tool, or skip the test if it is missing."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (apt install hdf5-tools)")
    return path
