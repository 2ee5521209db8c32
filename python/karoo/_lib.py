"""The plugin library (libh5karoo.so) loaded with ctypes, and its small C ABI.

ctypes releases the GIL for the length of every foreign call, so compression and
decompression from several Python threads run in parallel.
"""

from __future__ import annotations

import ctypes
import os
import sys

PLUGIN_PATH: str = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
"""Directory holding libh5karoo.so: give it to C tools and netCDF-C as HDF5_PLUGIN_PATH."""

_LIB_NAME = {"darwin": "libh5karoo.dylib", "win32": "h5karoo.dll"}.get(sys.platform, "libh5karoo.so")
LIBRARY_PATH: str = os.path.join(PLUGIN_PATH, _LIB_NAME)
"""Full path of the plugin library."""

_ERR_LEN = 1024
MAX_RANK = 64
"""Most dimensions a chunk's shape has (HDF5's 32, plus one for components, fit)."""


class KarooError(ValueError):
    """A chunk that does not decode, or parameters the codec refuses (message from karoo)."""


_FIELD_TYPES = {"u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "ptr": ctypes.POINTER(ctypes.c_uint64)}


def _params_structure(lib: ctypes.CDLL) -> type:
    """The ctypes structure of the library's `KarooParams`, built from the layout the
    library reports (`karoo_params_layout`) and checked field by field against it."""
    lib.karoo_params_layout.argtypes = []
    lib.karoo_params_layout.restype = ctypes.c_char_p
    size, *fields = lib.karoo_params_layout().decode().splitlines()
    fields = [line.split() for line in fields]
    structure = type("_Params", (ctypes.Structure,), {
        "__doc__": "What karoo_compress is told about the data (the library's KarooParams).",
        "_fields_": [(name, _FIELD_TYPES[kind]) for name, kind, _ in fields],
    })
    laid_out = [getattr(structure, name).offset == int(offset) for name, _, offset in fields]
    if not all(laid_out) or ctypes.sizeof(structure) != int(size):
        raise ImportError(f"karoo: {LIBRARY_PATH} lays out its parameters in a way ctypes does not")
    return structure


_Params: type = ctypes.Structure
"""The library's parameter structure (set when the library is loaded)."""


def _load() -> ctypes.CDLL:
    if not os.path.exists(LIBRARY_PATH):
        raise ImportError(
            f"karoo: {LIBRARY_PATH} is missing; install the package with pip (it builds the "
            "plugin with cargo)"
        )
    lib = ctypes.CDLL(LIBRARY_PATH)
    global _Params
    _Params = _params_structure(lib)
    buf = ctypes.c_void_p
    err = (ctypes.c_char_p, ctypes.c_size_t)
    lib.karoo_compress.argtypes = [buf, ctypes.c_size_t, ctypes.POINTER(_Params), ctypes.POINTER(buf), *err]
    lib.karoo_compress.restype = ctypes.c_int
    lib.karoo_buffer_copy.argtypes = [buf, buf, ctypes.c_size_t, *err]
    lib.karoo_buffer_copy.restype = ctypes.c_int
    lib.karoo_buffer_len.argtypes = [buf]
    lib.karoo_buffer_len.restype = ctypes.c_size_t
    lib.karoo_buffer_free.argtypes = [buf]
    lib.karoo_buffer_free.restype = None
    lib.karoo_decoded_len.argtypes = [buf, ctypes.c_size_t, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64), *err]
    lib.karoo_decoded_len.restype = ctypes.c_int
    lib.karoo_decoded_shape.argtypes = [buf, ctypes.c_size_t, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64),
                                         ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                         ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                                         ctypes.POINTER(ctypes.c_uint64), *err]
    lib.karoo_decoded_shape.restype = ctypes.c_int
    lib.karoo_decompress_into.argtypes = [buf, ctypes.c_size_t, buf, ctypes.c_size_t, ctypes.c_uint32, *err]
    lib.karoo_decompress_into.restype = ctypes.c_int
    lib.karoo_describe.argtypes = [buf, ctypes.c_size_t, ctypes.POINTER(buf), *err]
    lib.karoo_describe.restype = ctypes.c_int
    lib.karoo_version.argtypes = []
    lib.karoo_version.restype = ctypes.c_char_p
    lib.karoo_kernels.argtypes = []
    lib.karoo_kernels.restype = ctypes.c_char_p
    lib.karoo_names.argtypes = [ctypes.c_int]
    lib.karoo_names.restype = ctypes.c_char_p
    lib.karoo_filter_id.argtypes = []
    lib.karoo_filter_id.restype = ctypes.c_int
    lib.karoo_init_filter.argtypes = [ctypes.c_char_p]
    lib.karoo_init_filter.restype = ctypes.c_int
    lib.karoo_hdf5_path.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.karoo_hdf5_path.restype = ctypes.c_int
    lib.H5PLget_plugin_info.argtypes = []
    lib.H5PLget_plugin_info.restype = buf
    return lib


lib = _load()


def _check(status: int, err: ctypes.Array) -> None:
    if status != 0:
        raise KarooError(err.value.decode("utf-8", "replace"))


def _take_buffer(handle: ctypes.c_void_p, into=bytes):
    """The bytes of a plugin-owned buffer as a new `into` (``bytes`` or a subclass); the
    buffer is released.

    The plugin writes its parts straight into the new object, which nothing else refers
    to yet: the chunk is held twice at most (the plugin's parts and the object), never
    joined in a third buffer. A plain ``bytes`` object of zeros is calloc'd, so its
    pages are only mapped as they are written."""
    try:
        size = lib.karoo_buffer_len(handle)
        if size == 0:
            return into()
        out = into(size)
        err = ctypes.create_string_buffer(_ERR_LEN)
        _check(lib.karoo_buffer_copy(handle, out, size, err, _ERR_LEN), err)
        return out
    finally:
        lib.karoo_buffer_free(handle)


def compress_raw(data, nbytes: int, word_size: int, shape, components: int, element_class: int,
                 mode: int, predictor: int, residual_map: int, coder: int, threads: int,
                 time_axis: int, lag: int, element_type: int = 0, level: int = 0, into=bytes):
    """Compresses `nbytes` bytes at the address `data` (see karoo_compress) into a new
    `into` (``bytes`` or a subclass); `element_type` is the header byte the chunk records
    (docs/format.md, "Element type")."""
    dims = (ctypes.c_uint64 * len(shape))(*shape)
    params = _Params(word_size=word_size, components=components, element_class=element_class, mode=mode,
                     predictor=predictor, residual_map=residual_map, coder=coder, threads=threads,
                     time_axis=time_axis, rank=len(shape), lag=lag, shape=dims, element_type=element_type,
                     level=level)
    handle = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_ERR_LEN)
    _check(lib.karoo_compress(data, nbytes, ctypes.byref(params), ctypes.byref(handle), err, _ERR_LEN), err)
    return _take_buffer(handle, into)


def decoded_len(data, nbytes: int, limit: int = 2**64 - 1) -> int:
    """The decoded size a chunk declares (header and tile table validated)."""
    out = ctypes.c_uint64()
    err = ctypes.create_string_buffer(_ERR_LEN)
    _check(lib.karoo_decoded_len(data, nbytes, limit, ctypes.byref(out), err, _ERR_LEN), err)
    return out.value


def decoded_shape(data, nbytes: int, limit: int = 2**64 - 1) -> tuple[tuple[int, ...], int, int, int]:
    """(shape in words, word size, element type byte, decoded bytes) of a chunk (header and
    tile table validated; a chunk declaring more than `limit` bytes is refused)."""
    dims = (ctypes.c_uint64 * MAX_RANK)()
    rank, word, element, size = ctypes.c_size_t(), ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint64()
    err = ctypes.create_string_buffer(_ERR_LEN)
    _check(lib.karoo_decoded_shape(data, nbytes, limit, dims, MAX_RANK, ctypes.byref(rank), ctypes.byref(word),
                                   ctypes.byref(element), ctypes.byref(size), err, _ERR_LEN), err)
    return tuple(dims[: rank.value]), word.value, element.value, size.value


def decompress_raw(data, nbytes: int, out, out_len: int, threads: int) -> None:
    """Decodes a chunk into `out_len` bytes at the address `out`."""
    err = ctypes.create_string_buffer(_ERR_LEN)
    _check(lib.karoo_decompress_into(data, nbytes, out, out_len, threads, err, _ERR_LEN), err)


def describe_raw(data, nbytes: int) -> str:
    """The JSON description of a chunk (header fields, tile codings)."""
    handle = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_ERR_LEN)
    _check(lib.karoo_describe(data, nbytes, ctypes.byref(handle), err, _ERR_LEN), err)
    return _take_buffer(handle).decode()


def version() -> str:
    """Version of the karoo codec inside the plugin."""
    return lib.karoo_version().decode()


def names(kind: str) -> dict[str, int]:
    """The ids of the codec's ``"predictors"``, ``"maps"`` or ``"coders"`` by name, as the
    library defines them."""
    table = lib.karoo_names(("predictors", "maps", "coders").index(kind)).decode()
    return {name: int(number) for number, name in (line.split(" ", 1) for line in table.splitlines())}


FILTER_ID = lib.karoo_filter_id()
"""karoo's registered HDF5 filter id (52033), as the plugin defines it."""


def kernels() -> str:
    """The vector kernels the codec runs: ``avx512``, ``avx2`` or ``portable``."""
    return lib.karoo_kernels().decode()


def hdf5_path() -> str | None:
    """Path of the libhdf5 the plugin is bound to, when known."""
    size = lib.karoo_hdf5_path(None, 0)
    if size < 0:
        return None
    out = ctypes.create_string_buffer(size + 1)
    lib.karoo_hdf5_path(out, size + 1)
    return out.value.decode("utf-8", "replace")
