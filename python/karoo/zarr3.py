"""Zarr 3 codecs (entry point group ``zarr.codecs``).

- ``karoo`` (:class:`KarooCodec`): an array-to-bytes codec (a *serializer*) that sees each
  chunk's shape and dtype: ``zarr.create_array(..., serializer=KarooCodec())``.
- ``karoo.bytes`` (:class:`KarooBytesCodec`): a bytes-to-bytes codec (a *compressor*) for
  where only compressors can be given; it takes shape and dtype from the chunk spec, after
  the default ``bytes`` serializer.

Both take the options of :class:`karoo.Karoo`; decoding needs only the stored bytes and the
array's metadata.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

import numpy as np
from zarr.abc.codec import ArrayBytesCodec, BytesBytesCodec
from zarr.core.common import parse_named_configuration

from ._array import chunk_shape, compress, decompress, layout
from ._options import Options


def _check(shape, dtype, options: Options, name: str) -> None:
    native = dtype.to_native_dtype()
    if native.hasobject or native.kind in "OUSTV" and not native.fields:
        raise ValueError(f"karoo: the {name} codec needs fixed-size numeric data, not {native}")
    if len(shape) and options.time_axis >= len(shape):
        raise ValueError(
            f"karoo: time_axis {options.time_axis} is out of range for an array of rank {len(shape)}"
        )


class _Options:
    """The shared option fields, their parsing and their JSON form."""

    codec_name = "karoo"

    def __init__(self, *, mode="fast", predictor="auto", residual_map="auto", coder="auto",
                 threads=0, time_axis=0, lag=0, level=0) -> None:
        options = Options.make(mode, predictor, residual_map, coder, threads, time_axis, lag, level)
        for key, value in options.as_dict().items():
            object.__setattr__(self, key, value)

    @property
    def options(self) -> Options:
        return Options.make(self.mode, self.predictor, self.residual_map, self.coder, self.threads,
                            self.time_axis, self.lag, self.level)

    @classmethod
    def from_dict(cls, data):
        _, configuration = parse_named_configuration(data, cls.codec_name, require_configuration=False)
        return cls(**(configuration or {}))

    def to_dict(self):
        return {"name": self.codec_name, "configuration": self.options.as_dict()}

    def compute_encoded_size(self, input_byte_length, chunk_spec):
        raise NotImplementedError("karoo's output size depends on the data")


@dataclass(frozen=True, init=False)
class KarooCodec(_Options, ArrayBytesCodec):
    """karoo as a Zarr 3 array-to-bytes codec (``serializer=``)."""

    is_fixed_size = False
    codec_name = "karoo"

    mode: str
    predictor: str
    residual_map: str
    coder: str
    threads: int
    time_axis: int
    lag: int
    level: int

    __init__ = _Options.__init__

    def validate(self, *, shape, dtype, chunk_grid):
        _check(shape, dtype, self.options, self.codec_name)

    def _encode_sync(self, chunk_array, chunk_spec):
        array = chunk_array.as_numpy_array()
        options = self.options.as_dict()
        if array.ndim <= options["time_axis"]:
            options["time_axis"] = 0
        return chunk_spec.prototype.buffer.from_bytes(compress(array, **options))

    def _decode_sync(self, chunk_bytes, chunk_spec):
        # Decoded straight into an array of the chunk spec: a chunk that declares any other
        # size is refused before it is decoded.
        out = np.empty(chunk_spec.shape, dtype=chunk_spec.dtype.to_native_dtype())
        decompress(chunk_bytes.as_numpy_array(), out=out, threads=self.threads)
        return chunk_spec.prototype.nd_buffer.from_numpy_array(out)

    async def _encode_single(self, chunk_array, chunk_spec):
        return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)

    async def _decode_single(self, chunk_bytes, chunk_spec):
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)


@dataclass(frozen=True, init=False)
class KarooBytesCodec(_Options, BytesBytesCodec):
    """karoo as a Zarr 3 bytes-to-bytes codec (``compressors=``), for the bytes of a chunk
    serialized by the ``bytes`` codec (shape and dtype come from the chunk spec; bytes of any
    other length are coded as plain bytes)."""

    is_fixed_size = False
    codec_name = "karoo.bytes"

    mode: str
    predictor: str
    residual_map: str
    coder: str
    threads: int
    time_axis: int
    lag: int
    level: int

    __init__ = _Options.__init__

    def validate(self, *, shape, dtype, chunk_grid):
        _check(shape, dtype, self.options, self.codec_name)

    def _encode_sync(self, chunk_bytes, chunk_spec):
        raw = chunk_bytes.as_numpy_array().view(np.uint8).reshape(-1)
        dtype = chunk_spec.dtype.to_native_dtype()
        options = self.options.as_dict()
        if raw.nbytes == int(np.prod(chunk_spec.shape)) * dtype.itemsize and layout(dtype)[0] > 1:
            array = raw.view(dtype).reshape(chunk_spec.shape)
            if array.ndim <= options["time_axis"]:
                options["time_axis"] = 0
        else:
            array, options["time_axis"], options["lag"] = raw, 0, 0
        return chunk_spec.prototype.buffer.from_bytes(compress(array, **options))

    def _decode_sync(self, chunk_bytes, chunk_spec):
        data = chunk_bytes.as_numpy_array()
        # The chunk's bytes, or what a codec before karoo made of them (a checksum adds a
        # few bytes): a chunk that declares more is refused before anything is allocated.
        expected = math.prod(chunk_spec.shape) * chunk_spec.dtype.to_native_dtype().itemsize
        _, _, nbytes = chunk_shape(data, max_size=expected + expected // 16 + (1 << 16))
        out = np.empty(nbytes, np.uint8)
        decompress(data, out=out, threads=self.threads)
        return chunk_spec.prototype.buffer.from_array_like(out)

    async def _encode_single(self, chunk_bytes, chunk_spec):
        return await asyncio.to_thread(self._encode_sync, chunk_bytes, chunk_spec)

    async def _decode_single(self, chunk_bytes, chunk_spec):
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)
