"""Data for karoo's demo, tests and benchmarks: a generated MeerKAT-like observation and
the shared HERA files (read from ../shared/data, never copied into the repository)."""

import pathlib

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
HERA_DIR = REPO.parent / "shared" / "data" / "hera"


def meerkat_like(ntime=128, nchan=4096, ncorr=16, seed=2026):
    """A MeerKAT-like visibility cube (time, channel, correlation product), complex64.

    Each product has a smooth bandpass amplitude, a slowly drifting fringe phase, and
    thermal noise at ~5% of the signal, so the low mantissa bits are as noisy as in
    real correlator output. 128 x 4096 x 16 is 64 MiB.
    """
    rng = np.random.default_rng(seed)
    chan = np.linspace(-1, 1, nchan, dtype=np.float32)[None, :, None]
    bandpass = (1 - 0.6 * chan**2) * rng.uniform(0.5, 2.0, size=(1, 1, ncorr)).astype(np.float32)
    autos = np.zeros(ncorr, dtype=bool)
    autos[:: max(1, int(np.sqrt(ncorr)) + 1)] = True  # products on the "diagonal" are autocorrelations
    scale = np.where(autos, 50.0, 1.0).astype(np.float32)[None, None, :]
    delay = rng.normal(0, 3, size=(1, 1, ncorr)).astype(np.float32)
    rate = rng.normal(0, 0.01, size=(1, 1, ncorr)).astype(np.float32)
    t = np.arange(ntime, dtype=np.float32)[:, None, None]
    phase = np.where(autos, 0, delay * chan * np.pi + rate * t)
    amp = bandpass * scale
    vis = np.empty((ntime, nchan, ncorr), dtype=np.complex64)
    noise = 0.05 * amp
    vis.real = amp * np.cos(phase) + noise * rng.standard_normal((ntime, nchan, ncorr), dtype=np.float32)
    vis.imag = np.where(autos, 0, amp * np.sin(phase) + noise * rng.standard_normal((ntime, nchan, ncorr), dtype=np.float32))
    return vis


def hera_files():
    """Paths of the shared HERA files, or an empty list when ../shared/data is absent."""
    return sorted(HERA_DIR.glob("*.uvh5")) if HERA_DIR.is_dir() else []


def load_hera(path):
    """(time-major array, raw blt-ordered array, baselines per time) of a HERA UVH5 file.

    UVH5 folds time and baseline into one blt axis; a stable sort by time_array and a
    reshape give (Ntimes, Nbls, ...) with time on axis 0.
    """
    import h5py

    with h5py.File(path, "r") as f:
        vis = f["Data/visdata"][...]
        # One downsampled file carries a longer time_array than its blt axis.
        times = f["Header/time_array"][: vis.shape[0]]
    ntimes = np.unique(times).size
    order = np.argsort(times, kind="stable")
    time_major = vis[order].reshape((ntimes, -1) + vis.shape[1:])
    return time_major, vis, time_major.shape[1]
