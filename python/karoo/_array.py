"""`karoo.compress` and `karoo.decompress`: numpy arrays to karoo chunks and back.

A chunk is exactly what the HDF5 filter stores, so `compress` output can be written with
h5py's ``write_direct_chunk`` and ``read_direct_chunk`` bytes decoded here. The chunk
records its shape and word size but not the element type: `compress` returns a
:class:`Chunk` (a ``bytes`` that remembers the dtype), and `decompress` takes the dtype
from it, from ``dtype=``, or from ``out=``.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

from . import _lib
from ._lib import KarooError
from ._options import MAX_THREADS, Options, _count


class Chunk(bytes):
    """A karoo chunk (``bytes``) that remembers the dtype it was compressed from."""

    dtype: np.dtype | None = None

    def __reduce__(self):
        return (_with_dtype, (bytes(self), self.dtype))


def layout(dtype: np.dtype) -> tuple[int, int, int]:
    """(word size, words per element, element class) for `dtype`, as the plugin's set_local
    chooses them: numbers of 1, 2, 4 or 8 bytes are words, complex numbers and records of
    equal numeric fields are several words, anything else is bytes. Classes: 0 other,
    1 integer, 2 float."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iub" and dtype.itemsize in (1, 2, 4, 8):
        return dtype.itemsize, 1, 1
    if dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
        return dtype.itemsize, 1, 2
    if dtype.kind == "c" and dtype.itemsize in (8, 16):
        return dtype.itemsize // 2, 2, 2
    if dtype.fields:
        fields = [dtype.fields[name] for name in dtype.names]
        first = fields[0][0]
        if (first.kind in "iuf" and first.itemsize in (2, 4, 8)
                and all(f[0].kind in "iu" if first.kind in "iu" else f[0].kind == "f" for f in fields)
                and all(f[0].itemsize == first.itemsize and f[1] == i * first.itemsize
                        for i, f in enumerate(fields))
                and len(fields) * first.itemsize == dtype.itemsize):
            return first.itemsize, len(fields), 2 if first.kind == "f" else 1
    if dtype.subdtype is not None:
        base, _ = dtype.subdtype
        if base.kind in "iuf" and base.itemsize in (2, 4, 8):
            return base.itemsize, dtype.itemsize // base.itemsize, 2 if base.kind == "f" else 1
    return 1, dtype.itemsize, 0


def _address(buffer):
    """The byte length of any buffer-protocol object and what the library's calls take as
    the address of its first byte: ``bytes`` (a :class:`Chunk` too) as they are, which
    ctypes passes as a pointer to their bytes without a copy; else the address of a uint8
    view."""
    if isinstance(buffer, bytes):
        return len(buffer), buffer
    view = np.frombuffer(buffer, dtype=np.uint8) if not isinstance(buffer, np.ndarray) else buffer
    if not view.flags.c_contiguous:
        raise ValueError("karoo: the chunk buffer must be contiguous")
    view = view.reshape(-1).view(np.uint8)
    return view.nbytes, view.ctypes.data


def compress(array, mode="fast", predictor="auto", residual_map="auto", coder="auto", threads=0,
             time_axis=0, lag=0, level=0) -> Chunk:
    """Compresses a numpy array (any shape; the time axis is `time_axis`) into one karoo chunk
    of the array's bytes in C order, as HDF5 stores a chunk.

    The options are those of :class:`karoo.Karoo`. The GIL is released while the chunk is coded.
    """
    options = Options.make(mode, predictor, residual_map, coder, threads, time_axis, lag, level)
    return compress_array(np.asarray(array), options, memory_order=False)


# Element type kinds (docs/format.md, "Element type"): bits 0-3 of the byte, by numpy kind.
_KINDS = {"b": 1, "u": 2, "i": 3, "f": 4, "c": 5}
_NUMPY_KINDS = {kind: code for code, kind in _KINDS.items()}
_FORTRAN, _SCALAR, _BIG_ENDIAN = 0x10, 0x40, 0x80


def _element_type(dtype: np.dtype, ndim: int, fortran: bool) -> int:
    """The element type byte a chunk of `dtype` records (0: a type it has no kind for, such
    as records and the long double types)."""
    kind = _KINDS.get(dtype.kind, 0) if not dtype.fields and dtype.subdtype is None else 0
    if (kind == 4 and dtype.itemsize not in (2, 4, 8)) or (kind == 5 and dtype.itemsize not in (8, 16)):
        kind = 0
    if kind == 0:
        return 0
    big = dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big")
    return kind | (_FORTRAN if fortran else 0) | (_SCALAR if ndim == 0 else 0) | (_BIG_ENDIAN if big else 0)


def _recorded_dtype(element_type: int, word: int) -> np.dtype | None:
    """The numpy dtype a chunk's element type byte and word size name, if any."""
    kind = element_type & 0x0F
    order = ">" if element_type & _BIG_ENDIAN else "<"
    code = _NUMPY_KINDS.get(kind)
    if code is None:
        return None
    return np.dtype("?" if kind == 1 else f"{order}{code}{word * (2 if kind == 5 else 1)}")


def compress_array(array: np.ndarray, options: Options, memory_order: bool) -> Chunk:
    """:func:`compress` with validated `options`; with `memory_order`, an array in Fortran
    order is coded as it lies in memory (its transpose, recorded as such), as numcodecs
    codecs code a buffer, instead of being copied to C order."""
    if array.dtype.hasobject:
        raise TypeError("karoo: cannot compress arrays of Python objects")
    time_axis, fortran = options.time_axis, False
    if array.ndim and options.time_axis >= array.ndim:
        raise ValueError(
            f"karoo: time_axis {options.time_axis} is out of range for an array of rank {array.ndim}"
        )
    if memory_order and array.ndim > 1 and array.flags.f_contiguous and not array.flags.c_contiguous:
        array, time_axis, fortran = array.T, array.ndim - 1 - options.time_axis, True
    elif not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    word, components, element = layout(array.dtype)
    shape = list(array.shape) or [1]
    plane = math.prod(shape[time_axis:])
    if options.lag > plane:
        raise ValueError(
            f"karoo: lag {options.lag} exceeds the {plane} elements of one step along the time axis"
        )
    if components > 1:
        shape.append(components)
    mode_id, predictor_id, map_id, coder_id = options.ids
    raw = array.reshape(-1).view(np.uint8) if array.size else np.zeros(0, np.uint8)
    data = _lib.compress_raw(raw.ctypes.data, raw.nbytes, word, shape, components, element,
                             mode_id, predictor_id, map_id, coder_id, options.threads,
                             time_axis, options.lag, _element_type(array.dtype, array.ndim, fortran),
                             options.level, into=Chunk)
    data.dtype = array.dtype
    return data


def _with_dtype(data: bytes, dtype: np.dtype) -> Chunk:
    out = Chunk(data)
    out.dtype = dtype
    return out


def chunk_shape(data, max_size: int | None = None) -> tuple[tuple[int, ...], int, int]:
    """(shape in words, word size, decoded bytes) of a chunk, its header validated (the
    library reads every header version); a chunk declaring more than `max_size` bytes is
    refused."""
    nbytes, address = _address(data)
    words, word, _, size = _lib.decoded_shape(address, nbytes, _limit(max_size))
    return words, word, size


def _limit(max_size: int | None) -> int:
    if max_size is None:
        return 2**64 - 1
    if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or max_size < 0:
        raise ValueError(f"karoo: max_size must be a byte count of 0 or more, not {max_size!r}")
    return int(max_size)


def _element_shape(words: tuple[int, ...], dtype: np.dtype, nbytes: int) -> tuple[int, ...]:
    count = nbytes // dtype.itemsize if dtype.itemsize else 0
    per = dtype.itemsize // max(layout(dtype)[0], 1)
    if nbytes % max(dtype.itemsize, 1):
        raise ValueError(f"karoo: a chunk of {nbytes} bytes is not a whole number of {dtype} elements")
    if per > 1 and len(words) > 1 and words[-1] == per:
        words = words[:-1]
    if math.prod(words) == count:
        return words
    return (count,)


def decompress(data, out=None, dtype=None, threads=0, max_size=None) -> np.ndarray:
    """Decodes one karoo chunk (from :func:`compress`, or an HDF5 chunk read with
    ``read_direct_chunk``) into a numpy array, checking its checksums.

    The shape comes from the chunk. The dtype comes from `out`, else `dtype`, else the
    chunk's own record of it (chunks of format version 3), else the :class:`Chunk` returned
    by `compress`. `out`, when given, must be a contiguous array of exactly the decoded
    size (C order, or Fortran order for a chunk coded from one); it is filled and returned.
    A chunk that declares more than `max_size` bytes (or than `out` holds) is refused
    before anything is allocated. The GIL is released while decoding.
    """
    return decode(data, out=out, dtype=dtype, threads=threads, max_size=max_size)


def decode(data, out=None, dtype=None, threads=0, max_size=None, source=None, untyped=None) -> np.ndarray:
    """:func:`decompress`, with the :class:`Chunk` whose dtype is the last resort looked for
    in `source` (default `data`: a codec hands over a view of the buffer it was given), and
    `untyped`, when given, the dtype of a chunk that records none (instead of an error)."""
    coded_len, address = _address(data)
    limit = _limit(max_size)
    if out is not None:
        if not isinstance(out, np.ndarray) or not out.flags.writeable:
            raise ValueError("karoo: out must be a writeable contiguous numpy array")
        limit = min(limit, out.nbytes)
    words, word, element, nbytes = _lib.decoded_shape(address, coded_len, limit)
    fortran = bool(element & _FORTRAN)
    if out is not None:
        contiguous = out.flags.f_contiguous if fortran else out.flags.c_contiguous
        if not contiguous:
            order = "Fortran" if fortran else "C"
            raise ValueError(f"karoo: out must be {order}-contiguous for this chunk, coded in {order} order")
        if out.nbytes != nbytes:
            raise ValueError(f"karoo: out holds {out.nbytes} bytes, the chunk decodes to {nbytes}")
        if dtype is not None and np.dtype(dtype) != out.dtype:
            raise ValueError(f"karoo: dtype {np.dtype(dtype)} does not match out's {out.dtype}")
        _lib.decompress_raw(address, coded_len, out.ctypes.data, nbytes, _threads(threads))
        return out
    recorded = _recorded_dtype(element, word)
    if dtype is None:
        dtype = recorded
    source = data if source is None else source
    if dtype is None:
        dtype = getattr(source, "dtype", None) if isinstance(source, Chunk) else None
    if dtype is None:
        dtype = untyped
    if dtype is None:
        raise TypeError(
            "karoo: the chunk does not record its dtype; pass dtype= (a dataset's dtype, say) or out="
        )
    dtype = np.dtype(dtype)
    shape = _element_shape(words, dtype, nbytes)
    try:
        result = np.empty(shape, dtype=dtype)
    except MemoryError:
        raise KarooError(f"karoo: cannot allocate the {nbytes} bytes the chunk decodes to") from None
    _lib.decompress_raw(address, coded_len, result.ctypes.data, nbytes, _threads(threads))
    if element & _SCALAR and result.size == 1:
        return result.reshape(())
    if fortran and len(shape) > 1:
        return result.T
    return result


def describe(data) -> dict:
    """The chunk's header fields and how many tiles use each predictor/map/coder, without
    decoding it."""
    nbytes, address = _address(data)
    return json.loads(_lib.describe_raw(address, nbytes))


def _threads(threads) -> int:
    return _count(threads, "threads", MAX_THREADS)
