"""The numcodecs codec against numcodecs' own test helpers (numcodecs.tests.common), as
numcodecs tests its codecs: every dtype, memory order and shape round trips; the config
and repr; stored fixtures of every config decode forever. Zarr v2 (C and Fortran order)
and Zarr 3 round trips of the same arrays; decode paths bounded by what the caller holds."""

import pathlib

import numpy as np
import pytest

import karoo
from conftest import same_bits, visibilities

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")
common = pytest.importorskip("numcodecs.tests.common")

from karoo import KarooCodec  # noqa: E402

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

CODECS = [
    KarooCodec(),
    KarooCodec(mode="archive"),
    KarooCodec(predictor="previous", residual_map="xor", coder="rice"),
    KarooCodec(mode="archive", coder="banded-ans", time_axis=1),
    KarooCodec(coder="shuffled-zstd", lag=1),
    KarooCodec(mode="archive", level=9),
    KarooCodec(level=1),
]

DTYPES = ["f4", "f8", "c8", "i2", "i4", "u1", "<u2", ">f4", "?"]


def _values(dtype, n):
    """`n` values of `dtype`: smooth series with noise for numbers, a pattern for booleans."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return (np.arange(n) % 3 == 0)
    data = visibilities((n,), "c8" if dtype.kind == "c" else "f8", seed=n)
    if dtype.kind in "iu":
        data = np.abs(data) * 40 if dtype.kind == "u" else data * 900
    return data.astype(dtype)


def arrays_of(dtype):
    """The shapes and memory orders numcodecs' own codec tests use: 1-D, C and Fortran
    order in 2 and 3 dimensions, strided views, 0-d and empty arrays."""
    flat = _values(dtype, 1000)
    return [
        flat,
        flat.reshape(100, 10),
        flat.reshape(100, 10, order="F"),
        flat.reshape(10, 10, 10),
        flat.reshape(10, 10, 10, order="F"),
        flat.reshape(100, 10)[::2],
        flat[::3],
        np.asarray(flat[7]),
        flat[:0],
        flat[:0].reshape(0, 10, order="F"),
    ]


CASES = [(d, i) for d in DTYPES for i in range(len(arrays_of("f4")))]


@pytest.mark.parametrize("codec", CODECS[:2], ids=["fast", "archive"])
@pytest.mark.parametrize("dtype,index", CASES)
def test_check_encode_decode_array(codec, dtype, index):
    arr = arrays_of(dtype)[index]
    common.check_encode_decode_array(arr, codec)
    # The array itself comes back: dtype, shape and memory order.
    back = codec.decode(codec.encode(arr))
    assert back.dtype == arr.dtype and back.shape == arr.shape
    if arr.flags.f_contiguous and not arr.flags.c_contiguous:
        assert back.flags.f_contiguous
    else:
        assert back.flags.c_contiguous


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: repr(c))
@pytest.mark.parametrize("dtype", ["f4", "c8", "i4"])
def test_check_encode_decode(codec, dtype):
    for arr in arrays_of(dtype)[:5]:
        common.check_encode_decode(arr, codec)


def test_fortran_order_is_coded_as_it_lies_in_memory():
    data = visibilities((40, 16, 4), "c8")
    fortran = np.asfortranarray(data)
    codec = KarooCodec()
    encoded = codec.encode(fortran)
    # What any numcodecs codec stores: the bytes in memory order.
    out = np.empty_like(fortran)
    codec.decode(bytes(encoded), out=out)
    assert same_bits(out, data) and out.flags.f_contiguous
    assert codec.decode(encoded).tobytes(order="A") == fortran.tobytes(order="A")
    assert karoo.describe(encoded)["shape"] == [4, 16, 40, 2]


def test_decode_without_out_returns_the_typed_array():
    codec = KarooCodec()
    scalar = np.asarray(np.float32(2.5))
    back = codec.decode(codec.encode(scalar))
    assert back.shape == () and back.dtype == np.float32 and back[()] == 2.5
    assert karoo.decompress(karoo.compress(scalar)).shape == ()
    data = visibilities((8, 5), "c16")
    assert same_bits(codec.decode(bytes(codec.encode(data))), data)
    # A buffer of bytes is coded, and decoded, as bytes.
    raw = codec.decode(codec.encode(data.tobytes()))
    assert raw.dtype == np.uint8 and raw.tobytes() == data.tobytes()


def test_check_config_and_repr(monkeypatch):
    for codec in CODECS:
        common.check_config(codec)
    # check_repr evaluates the statement among numcodecs' names; KarooCodec is karoo's.
    monkeypatch.setattr(common, "KarooCodec", KarooCodec, raising=False)
    common.check_repr("KarooCodec(mode='archive', predictor='auto', residual_map='auto', coder='auto', "
                      "threads=0, time_axis=1, lag=0, level=9)")
    assert karoo.KarooCodec is numcodecs.get_codec({"id": "karoo"}).__class__


def test_check_backwards_compatibility(monkeypatch):
    """Chunks written once into tests/fixtures decode to their arrays forever (numcodecs'
    own fixture check: configs and encoded bytes are stored in the repository)."""
    monkeypatch.chdir(FIXTURES)
    arrays = [
        _values("f4", 1000),
        _values("c8", 600).reshape(20, 30, order="F"),
        _values("i2", 1000).reshape(10, 10, 10),
        np.asarray(_values("f8", 3)[1]),
        _values("u1", 512).reshape(16, 32),
    ]
    common.check_backwards_compatibility(KarooCodec.codec_id, arrays, CODECS)


def test_fixtures_are_in_the_repository():
    # check_backwards_compatibility writes missing fixtures instead of failing: they must
    # have been written once and kept.
    stored = sorted(p.relative_to(FIXTURES).as_posix() for p in (FIXTURES / "fixture" / "karoo").rglob("*"))
    assert len([p for p in stored if p.endswith(".dat")]) == 5 * len(CODECS)
    assert len([p for p in stored if p.endswith("config.json")]) == len(CODECS)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("mode", ["fast", "archive"])
@pytest.mark.parametrize("dtype", ["c8", "f4", "i4"])
def test_zarr2_round_trips_in_both_orders(tmp_path, order, mode, dtype):
    data = _values(dtype, 40 * 16 * 4).reshape(40, 16, 4)
    store = str(tmp_path / "v2.zarr")
    z = zarr.create_array(store, shape=data.shape, chunks=(16, 16, 4), dtype=dtype, zarr_format=2,
                          order=order, compressors=numcodecs.get_codec({"id": "karoo", "mode": mode}))
    z[...] = data
    assert same_bits(zarr.open_array(store, mode="r")[...], data)
    assert same_bits(zarr.open_array(store, mode="r")[3:21, 2:9, 1:3], data[3:21, 2:9, 1:3])


@pytest.mark.parametrize("dtype", ["c8", "f8", "i2", "u1"])
def test_zarr3_round_trips(tmp_path, dtype):
    from karoo.zarr3 import KarooBytesCodec
    from karoo.zarr3 import KarooCodec as Serializer

    data = _values(dtype, 40 * 16 * 4).reshape(40, 16, 4)
    for name, kw in (("s", {"serializer": Serializer(), "compressors": None}),
                     ("b", {"compressors": [KarooBytesCodec()]})):
        store = str(tmp_path / f"{name}.zarr")
        z = zarr.create_array(store, shape=data.shape, chunks=(16, 16, 4), dtype=dtype, **kw)
        z[...] = data
        assert same_bits(zarr.open_array(store, mode="r")[...], data)


# -- bounds on what a decode may allocate -------------------------------------------------

def _zeros_chunk(nbytes):
    return karoo.compress(np.zeros(nbytes // 4, np.float32))


def test_decompress_refuses_more_than_max_size_before_allocating():
    chunk = _zeros_chunk(16 << 20)
    assert len(chunk) < 4096
    with pytest.raises(karoo.KarooError, match=r"^karoo: chunk declares 16777216 decoded bytes, "
                                               r"more than the 1048576 expected$"):
        karoo.decompress(chunk, max_size=1 << 20)
    assert karoo.decompress(chunk, max_size=16 << 20).nbytes == 16 << 20
    with pytest.raises(ValueError, match="karoo: max_size must be a byte count of 0 or more, not -1"):
        karoo.decompress(chunk, max_size=-1)


def test_numcodecs_decode_into_out_refuses_a_larger_chunk_first():
    chunk = _zeros_chunk(64 << 20)
    out = np.empty(1000, np.float32)
    with pytest.raises(karoo.KarooError, match="karoo: chunk declares 67108864 decoded bytes, more than "
                                               "the 4000 expected"):
        KarooCodec().decode(chunk, out=out)
    small = karoo.compress(np.ones(10, np.float32))
    with pytest.raises(ValueError, match="karoo: out holds 4000 bytes, the chunk decodes to 40"):
        KarooCodec().decode(small, out=out)


def test_allocation_failure_is_a_karoo_error(monkeypatch):
    chunk = karoo.compress(np.ones(10, np.float32))

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(karoo._array.np, "empty", no_memory)
    with pytest.raises(karoo.KarooError, match="karoo: cannot allocate the 40 bytes the chunk decodes to"):
        karoo.decompress(chunk)


@pytest.mark.parametrize("form", ["serializer", "bytes"])
def test_zarr3_refuses_a_chunk_larger_than_its_spec(tmp_path, form):
    from karoo.zarr3 import KarooBytesCodec
    from karoo.zarr3 import KarooCodec as Serializer

    kw = ({"serializer": Serializer(), "compressors": None} if form == "serializer"
          else {"compressors": [KarooBytesCodec()]})
    store = tmp_path / "bomb.zarr"
    z = zarr.create_array(str(store), shape=(8, 8), chunks=(8, 8), dtype="f4", **kw)
    z[...] = np.ones((8, 8), np.float32)
    (chunk_file,) = [p for p in store.rglob("c/*/*") if p.is_file()]
    chunk_file.write_bytes(bytes(_zeros_chunk(16 << 20)))
    with pytest.raises(karoo.KarooError, match="karoo: chunk declares 16777216 decoded bytes, more than the"):
        zarr.open_array(str(store), mode="r")[...]


@pytest.mark.parametrize("rows,message", [
    (4, "karoo: corrupt chunk: it decodes to 256 bytes, the dataset's chunks hold 512"),
    (9, "karoo: chunk declares 576 decoded bytes, more than the 512 expected"),
])
def test_hdf5_refuses_a_chunk_of_another_size(tmp_path, capfd, rows, message):
    """A valid karoo chunk that decodes to fewer or more bytes than the dataset's chunk is
    an error (HDF5 would return uninitialised bytes for the rest, or drop the excess)."""
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "short.h5"
    data = visibilities((8, 16), "f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=(8, 16), compression=karoo.Karoo())
    other = np.resize(data, (rows, 16))
    with h5py.File(path, "a") as f:
        f["d"].id.write_direct_chunk((0, 0), bytes(karoo.compress(other)))
    with h5py.File(path, "r") as f, pytest.raises(OSError):
        f["d"][...]
    assert message in capfd.readouterr().err
