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


DATA_DIR = REPO.parent / "shared" / "data"


def uvh5_files(data_dir=DATA_DIR):
    """Paths of every UVH5 file under `data_dir` (default ../shared/data), sorted by path;
    an empty list when the folder is absent."""
    data_dir = pathlib.Path(data_dir)
    return sorted(data_dir.rglob("*.uvh5")) if data_dir.is_dir() else []


def sorted_files(data_dir=DATA_DIR):
    """Paths of every HDF5 file under `data_dir` that holds an array already sorted to a
    time axis (one dataset `visibilities`, time on axis 0), sorted by path; an empty list
    when the folder is absent."""
    data_dir = pathlib.Path(data_dir)
    return sorted(data_dir.rglob("*.h5")) if data_dir.is_dir() else []


def load_sorted(path):
    """The `visibilities` array of a file of `sorted_files`, time on axis 0."""
    import h5py

    with h5py.File(path, "r") as f:
        return f["visibilities"][...]


def real_files(data_dir=DATA_DIR):
    """(name, array with time on axis 0) of every real file under `data_dir`: the UVH5
    files sorted by time, then the files already sorted to a time axis."""
    out = []
    for path in uvh5_files(data_dir):
        out.append((path.name.removesuffix(".uvh5"), load_hera(path)[0]))
    for path in sorted_files(data_dir):
        out.append((path.name.removesuffix(".h5"), load_sorted(path)))
    return out


def scaled_int16_spectra(ntime=32, nbl=28, nchan=1024, complex_=True, flagged=False, seed=2027):
    """Spectrometer output stored as 16-bit integers times a per-spectrum scale, as the SMA
    and other digital spectrometers write it: (time, baseline, channel).

    Each spectrum of a MeerKAT-like cube (complex cross-spectra, or their amplitudes when
    `complex_` is false) is scaled so its largest component fills int16, rounded to
    integers, and stored as float32 integer * float32 scale[time, baseline]: floats that
    carry about 16 bits of information and repeat values. With `flagged`, the band edges
    (a twentieth of the channels at each end) and 2% of the spectra are stored as zeros,
    as flagged data is.
    """
    vis = meerkat_like(ntime=ntime, nchan=nchan, ncorr=nbl, seed=seed).transpose(0, 2, 1)
    values = vis if complex_ else np.abs(vis)
    parts = [values.real, values.imag] if complex_ else [values]
    peak = np.max([np.abs(p).max(axis=-1) for p in parts], axis=0)
    scale = (np.where(peak > 0, peak, 1) / 32767).astype(np.float32)[..., None]
    quantised = [np.round(p / scale).astype(np.int16).astype(np.float32) * scale for p in parts]
    if complex_:
        out = np.empty(vis.shape, dtype=np.complex64)
        out.real, out.imag = quantised
    else:
        out = np.ascontiguousarray(quantised[0])
    if flagged:
        edge = max(1, nchan // 20)
        out[..., :edge] = 0
        out[..., -edge:] = 0
        out[np.random.default_rng(seed).random(out.shape[:-1]) < 0.02] = 0
    return out


def snapshot(nbl=351, nchan=256, seed=2028):
    """One integration of (1, baseline, channel, polarisation) complex64 visibilities with
    four polarisation products XX, XY, YX, YY: parallel hands carry a bandpass and fringe,
    the cross-hands 1% leakage, all thermal noise; band edges, three RFI channel ranges
    and 2% of the baselines are flagged and stored as zeros."""
    rng = np.random.default_rng(seed)
    chan = np.linspace(-1, 1, nchan, dtype=np.float32)[None, :]
    amp = rng.uniform(0.5, 2.0, size=(nbl, 1)).astype(np.float32) * (1 - 0.5 * chan**2)
    phase = rng.normal(0, 3, size=(nbl, 1)).astype(np.float32) * chan * np.pi
    signal = amp * np.exp(1j * phase)
    gain = rng.uniform(0.8, 1.2, size=(nbl, 1))
    leak = 0.01 * rng.standard_normal((nbl, 1)) * np.exp(1j * rng.uniform(0, 2 * np.pi, (nbl, 1)))
    pols = np.stack([signal, leak * signal, np.conj(leak) * signal, gain * signal], axis=-1)
    noise = 0.05 * (rng.standard_normal(pols.shape) + 1j * rng.standard_normal(pols.shape))
    vis = (pols + noise).astype(np.complex64)
    edge = max(1, nchan // 20)
    vis[:, :edge] = 0
    vis[:, -edge:] = 0
    for start in rng.integers(edge, nchan - edge - 8, size=3):
        vis[:, start:start + rng.integers(2, 9)] = 0
    vis[rng.random(nbl) < 0.02] = 0
    return vis[None]


def flags_and_weights(ntime=32, nbl=351, nchan=256, npol=4, seed=2029):
    """The flags (uint8, 1 where flagged) and weights (float32: the integration's 8 s,
    0 where flagged) that accompany (time, baseline, channel, polarisation) visibilities:
    band edges and an RFI channel range flagged throughout, a few baselines flagged in
    some time steps, and 1% of the samples at random."""
    rng = np.random.default_rng(seed)
    flags = rng.random((ntime, nbl, nchan, npol)) < 0.01
    edge = max(1, nchan // 20)
    flags[:, :, :edge] = True
    flags[:, :, -edge:] = True
    start = int(rng.integers(edge, nchan - edge - 8))
    flags[:, :, start:start + 6] = True
    for b in rng.choice(nbl, size=max(1, nbl // 50), replace=False):
        t0 = int(rng.integers(0, ntime))
        flags[t0:t0 + int(rng.integers(1, ntime + 1)), b] = True
    weights = np.where(flags, np.float32(0), np.float32(8))
    return flags.astype(np.uint8), weights


def bit_rounded(array, keep):
    """`array` (float32 or complex64) with every float rounded to `keep` mantissa bits, ties
    away from zero, as bit-rounding pre-filters leave data."""
    words = np.ascontiguousarray(array).view(np.uint32).astype(np.uint64)
    drop = 23 - keep
    rounded = ((words + (1 << (drop - 1))) >> drop << drop).astype(np.uint32)
    return rounded.view(array.dtype).reshape(array.shape)
