"""The karoo plugin through h5py's bundled HDF5 (2.0): round trips, layout, errors."""

import numpy as np
import pytest

from conftest import KAROO, h5py, same_bits, special_floats


def write_read(path, data, chunks, opts=None, **kw):
    """Writes `data` compressed with karoo, reopens the file and returns what it reads."""
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=chunks, compression=KAROO, compression_opts=opts, **kw)
    with h5py.File(path, "r") as f:
        return f["d"][...]


@pytest.mark.parametrize("dtype", ["f4", "f8", "c8", "c16"])
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_float_and_complex_round_trip_every_rank_with_edge_chunks(h5file, dtype, rank):
    shape = (37, 5, 4, 3, 2)[:rank]
    chunks = (16, 3, 3, 2, 2)[:rank]
    data = special_floats(dtype, shape, seed=rank)
    assert same_bits(write_read(h5file, data, chunks), data)


@pytest.mark.parametrize("dtype", ["i2", "i4", "i8", "u1", "u2", "u8"])
def test_integers_round_trip(h5file, dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    data = rng.integers(info.min, info.max, size=(50, 33), dtype=dtype, endpoint=True)
    data[::2] = data[0]  # some repetition along time
    assert same_bits(write_read(h5file, data, (20, 16)), data)


def test_integer_pair_compound_uses_word_path_and_round_trips(h5file):
    pair = np.dtype([("r", "<i4"), ("i", "<i4")])
    data = np.zeros((40, 64), dtype=pair)
    data["r"] = np.arange(64) * 1000 + np.arange(40)[:, None]
    data["i"] = -data["r"] // 3
    assert same_bits(write_read(h5file, data, (40, 64)), data)
    with h5py.File(h5file, "r") as f:
        values = f["d"].id.get_create_plist().get_filter_by_id(KAROO)[1]
    assert values == (0, 0, 0, 0, 0, 2, 8, 1, 4, 2, 256, 2, 40, 64)


def test_odd_sized_elements_take_the_byte_path(h5file):
    odd = np.dtype([("a", "<f4"), ("b", "<i2"), ("c", "u1")])
    data = np.zeros((30, 7), dtype=odd)
    data["a"] = np.linspace(0, 1, 210).reshape(30, 7)
    data["b"] = np.arange(210).reshape(30, 7)
    data["c"] = 7
    assert same_bits(write_read(h5file, data, (8, 7)), data)
    with h5py.File(h5file, "r") as f:
        values = f["d"].id.get_create_plist().get_filter_by_id(KAROO)[1]
    assert values[5:12] == (2, 7, 0, 1, 7, 256, 2)


def test_set_local_records_layout_and_chunk(h5file):
    data = special_floats("c8", (20, 6, 4))
    write_read(h5file, data, (10, 6, 4), opts=(0, 1, 2, 0, 0))
    with h5py.File(h5file, "r") as f:
        flags, values = f["d"].id.get_create_plist().get_filter_by_id(KAROO)[:2]
    assert values == (0, 1, 2, 0, 0, 2, 8, 2, 4, 2, 261, 3, 10, 6, 4)


def test_smooth_data_compresses(h5file):
    data = special_floats("f4", (256, 64, 8))
    assert same_bits(write_read(h5file, data, (64, 64, 8)), data)
    with h5py.File(h5file, "r") as f:
        stored = f["d"].id.get_storage_size()
    assert stored < 0.9 * data.nbytes


def test_append_one_dump_at_a_time(h5file):
    """How an archive writer works: resize along time, write each new dump."""
    dumps = special_floats("c8", (45, 16, 4))
    with h5py.File(h5file, "w") as f:
        d = f.create_dataset("vis", shape=(0, 16, 4), maxshape=(None, 16, 4), dtype="c8",
                             chunks=(8, 16, 4), compression=KAROO)
        for t, dump in enumerate(dumps):
            d.resize(t + 1, axis=0)
            d[t] = dump
    with h5py.File(h5file, "r") as f:
        assert same_bits(f["vis"][...], dumps)


def test_unwritten_chunks_read_as_fill_value(h5file):
    with h5py.File(h5file, "w") as f:
        d = f.create_dataset("d", shape=(100, 10), dtype="f4", chunks=(10, 10), compression=KAROO, fillvalue=-7.5)
        d[30:40] = np.arange(100, dtype="f4").reshape(10, 10)
    with h5py.File(h5file, "r") as f:
        out = f["d"][...]
        assert f["d"].id.get_num_chunks() == 1
    expected = np.full((100, 10), -7.5, dtype="f4")
    expected[30:40] = np.arange(100, dtype="f4").reshape(10, 10)
    assert same_bits(out, expected)


def chunk_bytes(path):
    """The stored bytes of every chunk of dataset `d`, in chunk order."""
    with h5py.File(path, "r") as f:
        d = f["d"]
        return [d.id.read_direct_chunk(d.id.get_chunk_info(i).chunk_offset)[1]
                for i in range(d.id.get_num_chunks())]


def test_complex64_values_stored_as_complex128_cost_what_complex64_costs(tmp_path):
    # A float32 correlator's output converted to complex128 (as UVFITS and Measurement
    # Set readers hand it over): karoo codes the float32 values, edge chunks included.
    narrow = special_floats("c8", (40, 24, 4), seed=5)
    sizes = {}
    for dtype in ("c8", "c16"):
        data = narrow.astype(dtype)
        path = tmp_path / f"{dtype}.h5"
        assert same_bits(write_read(path, data, (16, 24, 4)), data)
        sizes[dtype] = sum(len(c) for c in chunk_bytes(path))
    # The same tiles: only the chunk headers could differ, and they do not.
    assert sizes["c16"] == sizes["c8"]


def test_bit_rounded_floats_lose_their_zero_bits(tmp_path):
    # Values kept to 7 mantissa bits (bit rounding, as numcodecs' BitRound leaves them):
    # every word ends in 16 zero bits, which karoo drops before coding.
    smooth = special_floats("c8", (32, 64, 4), seed=7)
    words = smooth.view(np.uint32)
    rounded = ((words.astype(np.uint64) + (1 << 15)) >> 16 << 16).astype(np.uint32).view(np.complex64)
    assert same_bits(write_read(tmp_path / "r.h5", rounded, (16, 64, 4)), rounded)
    assert same_bits(write_read(tmp_path / "s.h5", smooth, (16, 64, 4)), smooth)
    rounded_size = sum(len(c) for c in chunk_bytes(tmp_path / "r.h5"))
    smooth_size = sum(len(c) for c in chunk_bytes(tmp_path / "s.h5"))
    assert rounded_size < 0.6 * smooth_size


def test_thread_count_never_changes_the_file(tmp_path):
    data = special_floats("f4", (64, 300, 40))
    paths = []
    for threads in (1, 2, 8):
        path = tmp_path / f"t{threads}.h5"
        write_read(path, data, (64, 300, 40), opts=(0, 0, threads))
        paths.append(path)
    files = [p.read_bytes() for p in paths]
    # Only cd_values[2] (the thread count) differs between the files.
    assert [chunk_bytes(p) for p in paths[1:]] == [chunk_bytes(paths[0])] * 2
    assert len({len(b) for b in files}) == 1
    differing = sum(a != b for a, b in zip(files[0], files[1]))
    assert differing <= 2


def test_time_axis_and_explicit_lag(tmp_path):
    # Time along axis 1.
    data = special_floats("f4", (120, 6, 5)).transpose(1, 0, 2).copy()
    assert same_bits(write_read(tmp_path / "a.h5", data, (3, 60, 5), opts=(0, 0, 0, 1)), data)
    # Time-major baseline-time axis: 9 baselines interleaved, lag of 9 rows.
    series = special_floats("c8", (40, 9, 32))
    blt = series.reshape(360, 32)
    out = write_read(tmp_path / "b.h5", blt, (360, 32), opts=(0, 0, 0, 0, 9 * 32))
    assert same_bits(out, blt)
    default = write_read(tmp_path / "c.h5", blt, (360, 32))
    assert same_bits(default, blt)
    with h5py.File(tmp_path / "b.h5") as fb, h5py.File(tmp_path / "c.h5") as fc:
        assert fb["d"].id.get_storage_size() < fc["d"].id.get_storage_size()


@pytest.mark.parametrize(
    "opts, message",
    [
        ((1, 15 << 16), "karoo: unknown residual coder 15 in cd_values[1] (0 to 14)"),
        ((5,), "karoo: unknown mode 5 in cd_values[0]"),
        ((0, 42), "karoo: unknown predictor 42 in cd_values[1]"),
        ((0, 0, 10**9), "karoo: 1000000000 threads in cd_values[2]; at most 1024 allowed"),
        ((0, 0, 0, 3), "karoo: time axis 3 in cd_values[3] is out of range for a rank-2 dataset"),
        ((0, 0, 0, 0, 1000), "karoo: lag 1000 in cd_values[4] exceeds the 200 elements"),
    ],
)
def test_bad_cd_values_fail_at_creation_with_a_clear_message(h5file, opts, message):
    with h5py.File(h5file, "w") as f:
        with pytest.raises((ValueError, OSError)) as err:
            f.create_dataset("d", shape=(40, 10), dtype="f4", chunks=(20, 10), compression=KAROO,
                             compression_opts=opts)
        assert message in str(err.value)
        assert "d" not in f


def test_corrupted_chunk_raises_oserror_and_process_survives(h5file, capfd):
    """HDF5 2.0 drops errors pushed inside filter callbacks, so the reason goes to stderr."""
    data = special_floats("f4", (64, 128))
    with h5py.File(h5file, "w") as f:
        f.create_dataset("d", data=data, chunks=(32, 128), compression=KAROO)
        f.create_dataset("ok", data=data, chunks=(32, 128), compression=KAROO)
    with h5py.File(h5file, "r+") as f:
        d = f["d"]
        _, chunk = d.id.read_direct_chunk((32, 0))
        bad = bytearray(chunk)
        bad[len(bad) // 2] ^= 0x10
        d.id.write_direct_chunk((32, 0), bytes(bad))
        _, chunk = d.id.read_direct_chunk((0, 0))
        d.id.write_direct_chunk((0, 0), chunk[: len(chunk) // 3])
    with h5py.File(h5file, "r") as f:
        with pytest.raises(OSError, match="filter returned failure during read"):
            f["d"][32:]
        assert "karoo: corrupt chunk: checksum mismatch" in reported(capfd)
        with pytest.raises(OSError, match="filter returned failure during read"):
            f["d"][:32]
        # A chunk of one tile has no tile table: its coder finds the stream cut short.
        message = reported(capfd)
        assert message.startswith("karoo: corrupt chunk: ") and "truncated" in message, message
        assert same_bits(f["ok"][...], data)


def reported(capfd):
    """The karoo message for the last failed read: in the exception on HDF5 < 2, else stderr."""
    return capfd.readouterr().err


def test_garbage_chunk_is_not_a_karoo_chunk(h5file, capfd):
    with h5py.File(h5file, "w") as f:
        d = f.create_dataset("d", shape=(8, 8), dtype="f4", chunks=(8, 8), compression=KAROO)
        d.id.write_direct_chunk((0, 0), b"this is not compressed data at all")
    with h5py.File(h5file, "r") as f:
        with pytest.raises(OSError):
            f["d"][...]
        assert "karoo: not a karoo chunk (bad magic bytes)" in reported(capfd)


@pytest.mark.parametrize("dtype", ["f4", "f8", "c8", "c16", "i2", "u8"])
@pytest.mark.parametrize("opts", [(1,), (1, 5 << 16, 1), (1, 6 << 16, 2)])
def test_archive_mode_round_trips_with_edge_chunks(h5file, dtype, opts):
    """Archive mode: default (context rANS), its Huffman variant and the value dictionary."""
    shape, chunks = (37, 5, 9), (16, 3, 4)
    if dtype[0] in "iu":
        rng = np.random.default_rng(2)
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        data = special_floats(dtype, shape, seed=4)
    assert same_bits(write_read(h5file, data, chunks, opts=opts), data)
    with h5py.File(h5file, "r") as f:
        values = f["d"].id.get_create_plist().get_filter_by_id(KAROO)[1]
    assert values[:3] == opts + (0,) * (3 - len(opts))


def test_archive_mode_is_smaller_than_fast_mode(tmp_path):
    data = special_floats("c8", (64, 128, 4))
    sizes = {}
    for mode in (0, 1):
        path = tmp_path / f"m{mode}.h5"
        assert same_bits(write_read(path, data, (64, 32, 4), opts=(mode,)), data)
        with h5py.File(path, "r") as f:
            sizes[mode] = f["d"].id.get_storage_size()
    assert sizes[1] < 0.97 * sizes[0], sizes


def test_archive_mode_codes_few_distinct_values_as_a_dictionary(h5file):
    """Value dictionary: 16 quantisation levels in random order cost about 4 bits each."""
    rng = np.random.default_rng(5)
    levels = np.linspace(-1, 1, 16, dtype="f4")
    data = levels[rng.integers(0, 16, size=(100, 1000))]
    assert same_bits(write_read(h5file, data, (100, 1000), opts=(1,)), data)
    with h5py.File(h5file, "r") as f:
        stored = f["d"].id.get_storage_size()
    assert stored < data.size * 4.1 / 8, stored


@pytest.mark.parametrize("dtype", ["c8", "c16"])
def test_archive_mode_codes_noise_by_its_distribution(h5file, dtype):
    """Single integrations of noise, one value in 16 flagged: the automatic coding takes
    the float fields (coder 10), 4% or more below context rANS of bit lengths (coder 4)."""
    rng = np.random.default_rng(9)
    values = rng.normal(0, 300, size=(4, 4096, 4, 2))
    values[:, ::16] = 0
    data = (values[..., 0] + 1j * values[..., 1]).astype(dtype)
    sizes = {}
    for coder in (0, 4):
        assert same_bits(write_read(h5file, data, (1, 4096, 4), opts=(1, coder << 16)), data)
        with h5py.File(h5file, "r") as f:
            sizes[coder] = f["d"].id.get_storage_size()
    assert sizes[0] < 0.96 * sizes[4], sizes
