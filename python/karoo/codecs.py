"""numcodecs codec ``karoo`` (entry point group ``numcodecs.codecs``).

``numcodecs.get_codec({"id": "karoo", "mode": "archive"})`` gives a :class:`KarooCodec`.
As every numcodecs codec, it codes a buffer as it lies in memory: an array in Fortran order
is coded as such (its transpose, which the chunk records), so Zarr's ``order="F"`` and
``decode(..., out=)`` into a Fortran-order array get back exactly the bytes written. A
plain bytes buffer is coded as bytes.

Decoding needs only the bytes: with ``out`` it fills ``out`` (a chunk that decodes to more
bytes than ``out`` holds is refused before anything is decoded); without, it returns the
array it was given (dtype, shape and order, 0-d included) for chunks that record their
type, and flat bytes (uint8) for a chunk of bytes.
"""

from __future__ import annotations

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray_like, ensure_ndarray_like

from ._array import compress_array, decode
from ._options import Options


class KarooCodec(Codec):
    """karoo as a numcodecs codec; the options are those of :class:`karoo.Karoo`."""

    codec_id = "karoo"

    def __init__(self, mode="fast", predictor="auto", residual_map="auto", coder="auto", threads=0,
                 time_axis=0, lag=0, level=0):
        options = Options.make(mode, predictor, residual_map, coder, threads, time_axis, lag, level)
        self._options = options
        for key, value in options.as_dict().items():
            setattr(self, key, value)

    def encode(self, buf):
        array = ensure_ndarray_like(buf)
        if array.dtype.hasobject:
            raise TypeError("karoo: cannot encode arrays of Python objects")
        options = self._options
        if array.ndim <= options.time_axis:
            options = Options.make(**{**options.as_dict(), "time_axis": 0})
        return compress_array(np.asarray(array), options, memory_order=True)

    def decode(self, buf, out=None):
        data = ensure_contiguous_ndarray_like(buf).view(np.uint8).reshape(-1)
        if out is not None:
            if isinstance(out, np.ndarray) and out.dtype.hasobject:
                raise TypeError("karoo: cannot decode into an array of Python objects")
            target = ensure_contiguous_ndarray_like(out).view(np.uint8).reshape(-1)
            decode(data, out=target, threads=self._options.threads)
            return out
        # A chunk of bytes (no recorded type, no Chunk's dtype) comes back as bytes.
        return decode(data, threads=self._options.threads, source=buf, untyped=np.uint8)

    def get_config(self):
        return {"id": self.codec_id, **self._options.as_dict()}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._options.as_dict().items())
        return f"{type(self).__name__}({args})"
