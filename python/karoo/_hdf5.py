"""The HDF5 side: registering the filter with h5py's HDF5, and the `Karoo` filter class."""

from __future__ import annotations

import warnings

import h5py

from . import _lib
from ._options import Options

FILTER_ID = _lib.FILTER_ID

SHUFFLE_IDS = {2: "shuffle", 32008: "bitshuffle"}
"""Filters that move each value's bytes or bits apart, so karoo no longer sees numbers."""

_registered = False


def register(force: bool = False) -> bool:
    """Registers karoo with the HDF5 library h5py uses (no HDF5_PLUGIN_PATH needed).

    The plugin is first bound to h5py's libhdf5 (found through h5py's ``h5z`` extension
    module, as hdf5plugin does), so this works whichever other HDF5 copies the process
    holds (netCDF4 imported first, say). Done once on ``import karoo``; ``force=True``
    registers again (after another library replaced the filter, say). Returns True, or
    raises RuntimeError saying what failed.
    """
    global _registered
    if _registered and not force:
        return True
    status = _lib.lib.karoo_init_filter(h5py.h5z.__file__.encode())
    if status != 0:
        reasons = {-1: "cannot load", -2: "no HDF5 API found through", -3: "too many HDF5 libraries for"}
        raise RuntimeError(f"karoo: {reasons.get(status, 'cannot bind to')} {h5py.h5z.__file__}")
    info = _lib.lib.H5PLget_plugin_info()
    if not info:
        raise RuntimeError("karoo: the plugin returned no filter class")
    if hasattr(h5py.h5z, "register_filter"):
        h5py.h5z.register_filter(info)
    else:  # h5py before 3.8: H5Zregister through the extension's libhdf5
        import ctypes

        h5zregister = ctypes.CDLL(h5py.h5z.__file__).H5Zregister
        h5zregister.argtypes, h5zregister.restype = [ctypes.c_void_p], ctypes.c_int
        if h5zregister(info) < 0:
            raise RuntimeError("karoo: H5Zregister failed")
    _registered = True
    return True


def is_registered() -> bool:
    """True when h5py's HDF5 has filter 52033 available (registered or found on the plugin path)."""
    return bool(h5py.h5z.filter_avail(FILTER_ID))


class Karoo(h5py.filters.FilterRefBase):
    """karoo's options for h5py: ``compression=Karoo(...)`` or ``**Karoo(...)``.

    Also accepted by pyuvdata's ``data_compression=`` and by xarray/h5netcdf encodings
    (``encoding={"vis": {**karoo.Karoo()}}``).

    :param mode: ``"fast"`` (predictive packing) or ``"archive"`` (entropy coded: smaller,
        several times slower).
    :param predictor: ``"auto"`` (per tile), ``"previous"``, ``"parallelogram"``,
        ``"lagrange3"``, ``"lagrange4"``, ``"mean2"``, ``"mean4"``, ``"mean8"``,
        ``"median3"``, ``"median5"``, ``"holt"``, ``"lorenzo"`` or ``"none"``.
    :param residual_map: ``"auto"``, ``"xor"``, ``"rotate-subtract"`` or ``"subtract"``.
    :param coder: ``"auto"``, ``"patched"``, ``"rice"``, ``"lzbytes"``, ``"bitplane"``,
        ``"ctx-ans"``, ``"ctx-huffman"``, ``"dictionary"``, ``"shuffled-lz4"``,
        ``"shuffled-zstd"``, ``"float-fields"``, ``"banded-ans"``, ``"bitshuffled-lz4"``,
        ``"bitshuffled-zstd"`` or ``"ctx-bitplanes"``.
    :param threads: worker threads per chunk, 0 for all cores (never changes the bytes).
    :param time_axis: the dataset axis along which successive samples of a series lie.
    :param lag: elements between successive samples of one series along the flattened
        chunk; 0 derives it (the product of the chunk dimensions after the time axis).

    Do not combine with ``shuffle=True``: a byte shuffle before karoo scatters each value's
    bytes and destroys the prediction along time (the data stays lossless, it just hardly
    compresses).
    """

    filter_id = FILTER_ID

    def __init__(self, mode="fast", predictor="auto", residual_map="auto", coder="auto",
                 threads=0, time_axis=0, lag=0, level=0):
        self.options = Options.make(mode, predictor, residual_map, coder, threads, time_axis, lag, level)
        self.filter_options = self.options.cd_values()

    @classmethod
    def from_cd_values(cls, values) -> "Karoo":
        """The options stored in a dataset's karoo cd_values (the values set_local appends
        are ignored)."""
        return cls(**Options.from_cd_values(values).as_dict())

    @classmethod
    def from_dataset(cls, dataset: h5py.Dataset) -> "Karoo":
        """The karoo options `dataset` was written with; ValueError if it has no karoo filter."""
        plist = dataset.id.get_create_plist()
        for index in range(plist.get_nfilters()):
            filter_id, _, values, _ = plist.get_filter(index)
            if filter_id == FILTER_ID:
                return cls.from_cd_values(values)
        raise ValueError(f"karoo: dataset {dataset.name} does not use the karoo filter")

    def get_config(self) -> dict:
        """The options by name."""
        return self.options.as_dict()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"karoo.Karoo({args})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Karoo) and self.filter_options == other.filter_options

    def __hash__(self) -> int:
        return hash(self.filter_options)


def pipeline(dataset: h5py.Dataset) -> list[tuple[int, str, tuple[int, ...]]]:
    """The dataset's filters in pipeline order (write order): (id, name, cd_values)."""
    plist = dataset.id.get_create_plist()
    out = []
    for index in range(plist.get_nfilters()):
        filter_id, _, values, name = plist.get_filter(index)
        out.append((int(filter_id), name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name),
                    tuple(int(v) for v in values)))
    return out


def shuffle_warning(filter_ids) -> str | None:
    """The guard-rail message when a byte or bit shuffle runs before karoo, else None."""
    ids = list(filter_ids)
    if FILTER_ID not in ids:
        return None
    before = [SHUFFLE_IDS[i] for i in ids[: ids.index(FILTER_ID)] if i in SHUFFLE_IDS]
    if not before:
        return None
    return (
        f"karoo: a {before[0]} filter runs before karoo; it scatters each value's bytes, which "
        "destroys karoo's prediction along time (the data stays lossless but hardly compresses). "
        "Drop shuffle=True (netCDF4 and h5netcdf enable it by default)."
    )


def check_dataset(dataset: h5py.Dataset) -> None:
    """Warns (karoo.ShuffleWarning) when a shuffle precedes karoo in the dataset's pipeline."""
    message = shuffle_warning(f[0] for f in pipeline(dataset))
    if message:
        warnings.warn(message, ShuffleWarning, stacklevel=2)


class ShuffleWarning(UserWarning):
    """A byte or bit shuffle runs before karoo and spoils its compression."""
