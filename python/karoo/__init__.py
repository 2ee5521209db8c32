"""karoo: lossless compression of radio-telescope visibilities and other float time series.

``import karoo`` registers the karoo HDF5 filter (id 52033) with the HDF5 library h5py
uses; no HDF5_PLUGIN_PATH is needed. Then::

    f.create_dataset("vis", data=vis, chunks=(64, 128, 4), compression=karoo.Karoo())

Also here: :func:`compress` / :func:`decompress` for single chunks, the numcodecs codec
``karoo`` (:class:`karoo.codecs.KarooCodec`), the Zarr 3 codecs in :mod:`karoo.zarr3`, and
the ``karoo`` command-line tool.
"""

import warnings as _warnings
from collections import namedtuple as _namedtuple

from ._array import Chunk, compress, decompress, describe
from ._lib import FILTER_ID, LIBRARY_PATH, PLUGIN_PATH, KarooError
from ._lib import version as _codec_version
from ._options import CODERS, MODES, PREDICTORS, RESIDUAL_MAPS

__version__ = _codec_version()


__all__ = [
    "CODERS",
    "Chunk",
    "Config",
    "FILTER_ID",
    "Karoo",
    "KarooCodec",
    "KarooError",
    "LIBRARY_PATH",
    "MODES",
    "PLUGIN_PATH",
    "PREDICTORS",
    "RESIDUAL_MAPS",
    "ShuffleWarning",
    "check_dataset",
    "compress",
    "decompress",
    "describe",
    "get_config",
    "register",
]

try:
    import h5py as _h5py  # noqa: F401
except ImportError:  # karoo's codec and the Zarr codecs work without h5py
    _h5py_error: "Exception | None" = ImportError("karoo: h5py is not installed")
else:
    _h5py_error = None
    from ._hdf5 import Karoo, ShuffleWarning, check_dataset, register

    try:
        register()
    except Exception as error:  # never break the import: say why, h5py still works
        _h5py_error = error
        _warnings.warn(f"karoo: could not register the HDF5 filter with h5py: {error}", stacklevel=2)


def __getattr__(name):
    # The numcodecs codec, imported on first use: numcodecs is not needed for the rest.
    if name == "KarooCodec":
        from .codecs import KarooCodec

        return KarooCodec
    raise AttributeError(f"module 'karoo' has no attribute {name!r}")


Config = _namedtuple(
    "Config",
    ("version", "filter_id", "plugin_path", "library", "registered", "hdf5_library", "hdf5_version",
     "kernels"),
)
Config.__doc__ = """karoo's build and environment: see :func:`get_config`."""


def get_config() -> Config:
    """Where the plugin is, whether h5py's HDF5 has the filter, which libhdf5 it uses, and
    which vector kernels the codec runs (``avx512``, ``avx2`` or ``portable``; the
    ``KAROO_ISA`` environment variable caps them)."""
    from . import _lib

    registered, hdf5_version = False, None
    if _h5py_error is None or not isinstance(_h5py_error, ImportError):
        import h5py

        from ._hdf5 import is_registered

        registered = is_registered()
        hdf5_version = h5py.version.hdf5_version
    return Config(__version__, FILTER_ID, PLUGIN_PATH, LIBRARY_PATH, registered, _lib.hdf5_path(),
                  hdf5_version, _lib.kernels())
