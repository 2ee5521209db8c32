"""What karoo refuses, and what it passes through: variable-length data and cd_values
beyond the five a user sets."""

import numpy as np
import pytest

from conftest import KAROO, h5py, same_bits, special_floats


def stored_unfiltered(dataset):
    """True when every chunk of `dataset` skipped karoo (filter mask bit 0 set)."""
    masks = [dataset.id.get_chunk_info(i).filter_mask for i in range(dataset.id.get_num_chunks())]
    return bool(masks) and all(mask & 1 for mask in masks)


@pytest.mark.parametrize("kind", ["string", "bytes", "sequence"])
def test_variable_length_data_is_stored_unfiltered_silently(h5file, capfd, kind):
    """h5py adds karoo as an optional filter; HDF5 (1.10.8 and later) skips can_apply and
    set_local for variable-length types then, and karoo declines each chunk without a
    word, so HDF5 stores them as they are, as with any optional filter."""
    if kind == "sequence":
        dtype = h5py.vlen_dtype("f4")
        data = np.empty(30, dtype=object)
        data[:] = [np.arange(i % 7, dtype="f4") * i for i in range(30)]
    else:
        dtype = h5py.string_dtype("utf-8" if kind == "string" else "ascii")
        text = [f"visibility {i} \u00e9" if kind == "string" else f"row {i}".encode() for i in range(30)]
        data = np.array(text, dtype=object)
    with h5py.File(h5file, "w") as f:
        d = f.create_dataset("d", data=data, dtype=dtype, chunks=(8,), compression=KAROO,
                             compression_opts=(1, 0, 2))
        d[3] = data[4]
        data[3] = data[4]
    with h5py.File(h5file, "r") as f:
        d = f["d"]
        back = d[...]
        assert stored_unfiltered(d)
        assert d.id.get_create_plist().get_filter_by_id(KAROO)[1] == (1, 0, 2)
    for got, want in zip(back, data):
        if kind == "sequence":
            assert same_bits(got, want)
        else:
            assert got.decode() == (want if kind == "string" else want.decode())
    captured = capfd.readouterr()
    assert "karoo" not in captured.err + captured.out


def test_mandatory_karoo_on_variable_length_data_is_refused(h5file):
    """Through h5py's low-level API karoo can be mandatory: HDF5 then refuses the dataset
    (HDF5 1.10.8 and later before asking karoo, older ones through its can_apply)."""
    with h5py.File(h5file, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8,))
        dcpl.set_filter(KAROO, 0, ())
        space = h5py.h5s.create_simple((30,))
        tid = h5py.h5t.py_create(h5py.string_dtype(), logical=True)
        with pytest.raises((ValueError, OSError)):
            h5py.h5d.create(f.id, b"d", tid, space, dcpl=dcpl)
        assert "d" not in f


@pytest.mark.parametrize("opts", [(0, 0, 0, 0, 0, 1, 99, 7), (0, 0, 0, 0, 0, 0), tuple(range(11))])
def test_cd_values_beyond_the_five_user_values_are_refused(h5file, opts):
    with h5py.File(h5file, "w") as f:
        with pytest.raises((ValueError, OSError)) as err:
            f.create_dataset("d", shape=(40, 10), dtype="f4", chunks=(20, 10), compression=KAROO,
                             compression_opts=opts)
        layout = " and they are not a layout karoo wrote (unknown cd_values layout version 5)" if len(opts) == 11 else ""
        assert (f"karoo: {len(opts)} cd_values given{layout}; users set at most the first 5 (mode, "
                "coding, threads, time axis, lag), karoo appends the others itself") in str(err.value)
        assert "d" not in f


def test_a_copied_complete_array_is_derived_again_for_the_new_dataset(h5file):
    """A complete array set_local wrote, handed to a new dataset of another type and chunk
    (in a copied creation property list, as h5repack and H5Pcopy hand it, or as
    compression_opts read from an existing dataset), keeps its user part only."""
    data = special_floats("c8", (40, 12))
    wide = data.real.astype("f8")
    with h5py.File(h5file, "w") as f:
        a = f.create_dataset("a", data=data, chunks=(20, 12), compression=KAROO,
                             compression_opts=(1, 0, 2, 0, 12))
        full = a.id.get_create_plist().get_filter_by_id(KAROO)[1]
        assert full == (1, 0, 2, 0, 12, 2, 8, 2, 4, 2, 261, 2, 20, 12)
        f.create_dataset("b", data=wide, chunks=(40, 6), compression=KAROO, compression_opts=full)
        f.create_dataset("c", data=wide, chunks=(10, 12), dcpl=a.id.get_create_plist())
    with h5py.File(h5file, "r") as f:
        assert same_bits(f["a"][...], data)
        assert f["b"].id.get_create_plist().get_filter_by_id(KAROO)[1] == (1, 0, 2, 0, 12, 2, 8, 2, 8, 1, 260, 2, 40, 6)
        assert f["c"].id.get_create_plist().get_filter_by_id(KAROO)[1] == (1, 0, 2, 0, 12, 2, 8, 2, 8, 1, 260, 2, 10, 12)
        assert same_bits(f["b"][...], wide)
        assert same_bits(f["c"][...], wide)
