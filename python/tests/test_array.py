"""karoo.compress / karoo.decompress: chunks identical to the HDF5 filter's, dtypes, errors,
and parallel decoding from Python threads (ctypes releases the GIL)."""

import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np
import pytest

import karoo
from conftest import same_bits, visibilities


def visibilities_of(dtype, shape):
    """Visibilities of `shape` as `dtype`: integers scaled to use their bits, a pair of
    int32 fields ("<i4,<i4") from two scalings of float64 visibilities."""
    data = visibilities(shape, "f8" if "," in dtype else dtype)
    if "," in dtype:
        pair = np.zeros(data.shape, dtype)
        pair["f0"], pair["f1"] = (data * 1000).astype("i4"), (data * -300).astype("i4")
        return pair
    if np.dtype(dtype).kind in "iu":
        return (data * 50).astype(dtype)
    return data


@pytest.mark.parametrize("mode", ["fast", "archive"])
@pytest.mark.parametrize("dtype", ["f4", "c8", "c16", "i2", "<i4,<i4"])
def test_chunk_shape_is_the_described_shape(mode, dtype):
    """The header-only shape call that decompress uses agrees with describe's JSON, for
    stored, planar, narrowed and scaled chunks alike."""
    from karoo._array import chunk_shape

    data = visibilities_of(dtype, (9, 5, 3))
    for array in (data, data[:1, :1, :1], np.zeros((4, 0, 3), data.dtype)):
        chunk = karoo.compress(array, mode=mode)
        info = karoo.describe(chunk)
        assert chunk_shape(chunk) == (tuple(info["shape"]), info["word_size"], info["decoded_size"])
        assert chunk_shape(chunk)[2] == array.nbytes


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "c8", "c16", "i1", "u2", "i4", "u8", "<i4,<i4"])
def test_round_trip_every_dtype(dtype):
    data = visibilities_of(dtype, (33, 7, 3))
    chunk = karoo.compress(data)
    assert isinstance(chunk, bytes) and chunk.dtype == data.dtype
    back = karoo.decompress(chunk)
    assert same_bits(back, data)
    assert same_bits(karoo.decompress(bytes(chunk), dtype=data.dtype), data)


@pytest.mark.parametrize("mode", ["fast", "archive"])
def test_compress_writes_the_bytes_the_filter_writes(tmp_path, mode):
    # The filter writes its output into HDF5's chunk buffer: what HDF5 stores must be
    # exactly the chunk, its length included.
    data = visibilities((32, 24, 4))
    options = dict(mode=mode, time_axis=0)
    with h5py.File(tmp_path / "c.h5", "w") as f:
        d = f.create_dataset("d", data=data, chunks=data.shape, compression=karoo.Karoo(**options))
        _, stored = d.id.read_direct_chunk((0, 0, 0))
    assert bytes(karoo.compress(data, **options)) == stored
    # and a chunk from compress can be written directly
    with h5py.File(tmp_path / "c.h5", "a") as f:
        e = f.create_dataset("e", shape=data.shape, dtype=data.dtype, chunks=data.shape,
                             compression=karoo.Karoo())
        e.id.write_direct_chunk((0, 0, 0), karoo.compress(data))
    with h5py.File(tmp_path / "c.h5", "r") as f:
        assert same_bits(f["e"][...], data)


def test_decompress_into_out_and_shape_from_the_chunk():
    data = visibilities((10, 6, 4), "c8")
    chunk = karoo.compress(data, lag=0, predictor="previous")
    out = np.empty_like(data)
    assert karoo.decompress(chunk, out=out) is out
    assert same_bits(out, data)
    assert karoo.decompress(bytes(chunk), dtype="c8").shape == (10, 6, 4)
    flat = np.empty(data.size, data.dtype)
    karoo.decompress(chunk, out=flat)
    assert same_bits(flat, data.reshape(-1))
    # An out too small refuses the chunk before decoding; one too large is refused too.
    with pytest.raises(karoo.KarooError, match=r"karoo: chunk declares 1920 decoded bytes, more than the 8 expected"):
        karoo.decompress(chunk, out=np.empty(1, "c8"))
    with pytest.raises(ValueError, match=r"karoo: out holds 3840 bytes, the chunk decodes to 1920"):
        karoo.decompress(chunk, out=np.empty(480, "c8"))


def test_dtype_is_recorded_by_compress_or_required():
    chunk = karoo.compress(np.arange(12, dtype="f4"))
    assert pickle.loads(pickle.dumps(chunk)).dtype == np.dtype("f4")
    # The chunk records numeric types itself (format version 3)...
    for dtype in ("f2", "f4", "f8", "c8", "c16", "i1", "u2", "i4", "u8", "?", ">f4", ">i2"):
        data = np.arange(24).reshape(2, 3, 4).astype(dtype)
        assert same_bits(karoo.decompress(bytes(karoo.compress(data))), data), dtype
    # ... but not records, which need dtype= (or the Chunk compress returned).
    pair = np.zeros(12, "<i4,<i4")
    with pytest.raises(TypeError, match="karoo: the chunk does not record its dtype; pass dtype="):
        karoo.decompress(bytes(karoo.compress(pair)))
    assert same_bits(karoo.decompress(karoo.compress(pair)), pair)


def test_any_buffer_of_a_chunk_decodes():
    data = visibilities((16, 64), "c8")
    chunk = karoo.compress(data)
    for buffer in (chunk, bytes(chunk), bytearray(chunk), memoryview(chunk),
                   np.frombuffer(chunk, np.uint8), np.frombuffer(chunk, np.uint8)[::1]):
        assert same_bits(karoo.decompress(buffer, dtype="c8"), data), type(buffer)
        assert karoo.describe(buffer)["decoded_size"] == data.nbytes
    with pytest.raises(ValueError, match="karoo: the chunk buffer must be contiguous"):
        karoo.decompress(np.frombuffer(chunk * 2, np.uint8)[::2], dtype="c8")
    with pytest.raises(karoo.KarooError, match="karoo: corrupt chunk: truncated"):
        karoo.decompress(bytes(chunk[:3]), dtype="c8")


def test_corrupted_chunks_raise_karoo_errors():
    data = visibilities((64, 64), "f4")
    chunk = bytearray(karoo.compress(data))
    chunk[len(chunk) // 2] ^= 0x10
    with pytest.raises(karoo.KarooError, match="karoo: corrupt chunk"):
        karoo.decompress(chunk, dtype="f4")
    with pytest.raises(karoo.KarooError, match=r"karoo: not a karoo chunk \(bad magic bytes\)"):
        karoo.decompress(b"KAR0" + bytes(100), dtype="f4")
    with pytest.raises(karoo.KarooError, match="karoo: corrupt chunk: truncated"):
        karoo.decompress(bytes(chunk[:40]), dtype="f4")


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="karoo: time_axis 2 is out of range for an array of rank 2"):
        karoo.compress(np.zeros((4, 4), "f4"), time_axis=2)
    with pytest.raises(ValueError, match="karoo: lag 17 exceeds the 16 elements of one step along the time axis"):
        karoo.compress(np.zeros((4, 4), "f4"), lag=17)
    with pytest.raises(TypeError, match="karoo: cannot compress arrays of Python objects"):
        karoo.compress(np.array([object()] * 4))


def test_describe_reports_the_codings():
    data = visibilities((64, 32, 4), "c8")
    info = karoo.describe(karoo.compress(data, predictor="previous"))
    assert info["shape"] == [64, 32, 4, 2] and info["word_size"] == 4
    assert info["mode"] == "fast" and not info["stored"] and info["planar_components"] is False
    assert sum(info["codings"].values()) == info["tiles"]
    assert all(name.startswith("previous/") for name in info["codings"])
    assert info["coding_bytes"].keys() == info["codings"].keys()
    assert 0 < sum(info["coding_bytes"].values()) < info["encoded_size"]
    assert info["format_version"] == "5.0" and info["shifted_bits"] == 0


def test_decoding_releases_the_gil():
    # While a thread is inside one long decode, the main thread keeps running Python code:
    # with the GIL held it would stall for the whole call.
    chunk = karoo.compress(visibilities((1024, 1024, 8), "c8"), threads=1)
    done = threading.Event()
    spans = []

    def decode():
        start = time.perf_counter()
        karoo.decompress(chunk, threads=1)
        spans.append(time.perf_counter() - start)
        done.set()

    worker = threading.Thread(target=decode)
    last, longest = time.perf_counter(), 0.0
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    assert longest < 0.5 * spans[0], (longest, spans[0])


def test_threads_decode_chunks_read_with_read_direct_chunk(tmp_path):
    data = visibilities((256, 64, 4), "c8")
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f.create_dataset("d", data=data, chunks=(32, 64, 4), compression=karoo.Karoo())
    with h5py.File(tmp_path / "t.h5", "r") as f:
        d = f["d"]
        raw = [d.id.read_direct_chunk((t, 0, 0))[1] for t in range(0, 256, 32)]
        with ThreadPoolExecutor(4) as pool:
            parts = list(pool.map(lambda c: karoo.decompress(c, dtype=d.dtype, threads=1), raw))
    assert same_bits(np.concatenate(parts), data)


@pytest.mark.parametrize("mode", ["fast", "archive"])
def test_levels_round_trip_and_level_9_is_smallest(mode):
    data = visibilities((24, 40, 4), "c8")
    sizes = {}
    for level in range(10):
        chunk = karoo.compress(data, mode=mode, level=level)
        assert same_bits(karoo.decompress(chunk), data), level
        sizes[level] = len(chunk)
    assert sizes[9] <= sizes[0]
    with pytest.raises(ValueError, match="karoo: level 10 is out of range"):
        karoo.compress(data, level=10)
    options = karoo.Karoo(mode=mode, level=9)
    assert options.filter_options[0] == {"fast": 0, "archive": 1}[mode] + 256 * 9
    assert karoo.Karoo.from_cd_values(options.filter_options).options == options.options


def test_level_9_through_h5py(tmp_path):
    data = visibilities((32, 24, 4), "c8")
    with h5py.File(tmp_path / "l.h5", "w") as f:
        f.create_dataset("d", data=data, chunks=(16, 24, 4), compression=karoo.Karoo(mode="archive", level=9))
    with h5py.File(tmp_path / "l.h5", "r") as f:
        assert same_bits(f["d"][...], data)
        assert karoo.Karoo.from_dataset(f["d"]).options.level == 9


@pytest.mark.parametrize("mode", ["fast", "archive"])
def test_chunks_that_do_not_compress_cost_at_most_16_bytes(mode):
    rng = np.random.default_rng(5)
    for shape in [(44,), (3, 7), (1, 2, 3, 2)]:
        data = rng.integers(0, 2**32, size=shape, dtype=np.uint32).view(np.float32)
        chunk = karoo.compress(data, mode=mode)
        assert len(chunk) <= data.nbytes + 16, (shape, len(chunk))
        info = karoo.describe(chunk)
        assert (info["stored"], info["pipeline"], info["mode"]) == (True, "stored", None)
        assert info["format_version"] == "4.0"
        back = karoo.decompress(chunk)
        assert back.dtype == data.dtype and back.shape == data.shape
        assert same_bits(back, data)


def test_a_brief_chunk_whose_shape_costs_more_decodes_flat():
    rng = np.random.default_rng(6)
    data = rng.integers(0, 2**32, size=(2, 300, 1, 300, 1), dtype=np.uint32).view(np.float32)
    chunk = karoo.compress(data, mode="fast")
    # magic, version 4.1, element type, pipeline with the unshaped bit, the size as a
    # varint (3 bytes), checksum.
    assert bytes(chunk[4:7]) == b"\x14\x04\x88"
    assert len(chunk) == data.nbytes + 14
    assert karoo.describe(chunk)["format_version"] == "4.1"
    back = karoo.decompress(chunk)
    assert back.shape == (data.size,) and same_bits(back, data.ravel())
