"""numcodecs codec ``karoo`` (entry point group ``numcodecs.codecs``).

``numcodecs.get_codec({"id": "karoo", "mode": "archive"})`` gives a :class:`KarooCodec`.
Encoding uses the array's dtype and shape (zarr v2 hands the codec the chunk as an array;
a plain bytes buffer is coded as bytes). Decoding needs only the bytes: with ``out`` it
fills ``out``; without, it returns the decoded bytes as a flat uint8 array (or the typed
array when given the :class:`karoo.Chunk` that encode returned).
"""

from __future__ import annotations

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray_like, ensure_ndarray_like

from ._array import Chunk, chunk_shape, compress, decompress
from ._options import Options


class KarooCodec(Codec):
    """karoo as a numcodecs codec; the options are those of :class:`karoo.Karoo`."""

    codec_id = "karoo"

    def __init__(self, mode="fast", predictor="auto", residual_map="auto", coder="auto", threads=0,
                 time_axis=0, lag=0):
        options = Options.make(mode, predictor, residual_map, coder, threads, time_axis, lag)
        self._options = options
        for key, value in options.as_dict().items():
            setattr(self, key, value)

    def encode(self, buf):
        array = ensure_ndarray_like(buf)
        if array.dtype.hasobject:
            raise TypeError("karoo: cannot encode arrays of Python objects")
        options = self._options.as_dict()
        if array.ndim <= options["time_axis"]:
            options["time_axis"] = 0
        return compress(np.ascontiguousarray(array), **options)

    def decode(self, buf, out=None):
        data = ensure_contiguous_ndarray_like(buf).view(np.uint8).reshape(-1)
        if out is not None:
            target = ensure_contiguous_ndarray_like(out).view(np.uint8).reshape(-1)
            decompress(data, out=target, threads=self._options.threads)
            return out
        if isinstance(buf, Chunk) and buf.dtype is not None:
            return decompress(buf, threads=self._options.threads)
        _, _, nbytes = chunk_shape(data)
        return decompress(data, out=np.empty(nbytes, np.uint8), threads=self._options.threads)

    def get_config(self):
        return {"id": self.codec_id, **self._options.as_dict()}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._options.as_dict().items())
        return f"KarooCodec({args})"
