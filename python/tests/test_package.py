"""The installed package: registration with h5py's HDF5, the right libhdf5, the Karoo
filter class, its validation, and rebuilding it from stored cd_values."""

import os
import textwrap

import h5py
import numpy as np
import pytest

import karoo
from conftest import run_python, same_bits, visibilities


def test_import_registers_the_filter_without_a_plugin_path(tmp_path):
    assert "HDF5_PLUGIN_PATH" not in os.environ
    config = karoo.get_config()
    assert config.registered and config.filter_id == karoo.FILTER_ID == 52033
    assert os.path.isfile(os.path.join(karoo.PLUGIN_PATH, "libh5karoo.so"))
    assert config.library == os.path.join(karoo.PLUGIN_PATH, "libh5karoo.so")
    assert config.hdf5_version == h5py.version.hdf5_version
    data = visibilities((40, 16, 4))
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("vis", data=data, chunks=(16, 16, 4), compression=karoo.Karoo())
    with h5py.File(tmp_path / "a.h5", "r") as f:
        assert same_bits(f["vis"][...], data)
        assert "52033" in f["vis"]._filters


def test_get_config_names_the_kernels_and_KAROO_ISA_caps_them():
    assert karoo.get_config().kernels in {"avx512", "avx2", "portable"}
    capped = run_python("import karoo; print(karoo.get_config().kernels)", env={"KAROO_ISA": "portable"})
    assert capped.returncode == 0, capped.stderr
    assert capped.stdout.split() == ["portable"]


def test_the_namespace_holds_the_api_and_the_submodules_only():
    public = {name for name in vars(karoo) if not name.startswith("_")}
    submodules = {"cli", "codecs", "zarr3"}
    assert public - submodules == set(karoo.__all__) - {"KarooCodec"}  # KarooCodec: on first use
    for leaked in ("h5py", "warnings", "namedtuple"):
        assert not hasattr(karoo, leaked), leaked


# The option names are stored in numcodecs and Zarr configs, in users' files, forever:
# pinned here, so that renaming one in the codec (where the package reads them) fails.
PINNED_NAMES = {
    "PREDICTORS": {"auto": 0, "previous": 1, "parallelogram": 2, "lagrange3": 3, "lagrange4": 4,
                   "mean2": 5, "mean4": 6, "mean8": 7, "median3": 8, "median5": 9, "holt": 10,
                   "lorenzo": 11, "none": 13},
    "RESIDUAL_MAPS": {"auto": 0, "xor": 1, "rotate-subtract": 2, "subtract": 3},
    "CODERS": {"auto": 0, "lzbytes": 1, "bitplane": 2, "rice": 3, "ctx-ans": 4, "ctx-huffman": 5,
               "dictionary": 6, "patched": 7, "shuffled-lz4": 8, "shuffled-zstd": 9,
               "float-fields": 10, "banded-ans": 11, "bitshuffled-lz4": 12, "bitshuffled-zstd": 13,
               "ctx-bitplanes": 14},
}


@pytest.mark.parametrize("table", sorted(PINNED_NAMES))
def test_the_option_names_come_from_the_library_and_never_change(table):
    assert getattr(karoo, table) == PINNED_NAMES[table]
    kind = {"PREDICTORS": "predictors", "RESIDUAL_MAPS": "maps", "CODERS": "coders"}[table]
    assert {"auto": 0, **karoo._lib.names(kind)} == PINNED_NAMES[table]


@pytest.mark.parametrize("first", ["netCDF4", "h5netcdf"])
def test_netcdf4_imported_first_still_binds_to_h5pys_hdf5(tmp_path, first):
    # netCDF4's wheel carries its own libhdf5; before, the plugin bound to whichever copy
    # was loaded first and h5py's create_dataset failed with "error during user callback".
    code = textwrap.dedent(f"""
        import {first}, h5py, numpy as np
        import karoo
        x = (np.arange(4096, dtype="f4").reshape(64, 64) * 0.25).astype("c8")
        with h5py.File({str(tmp_path / 'n.h5')!r}, "w") as f:
            f.create_dataset("d", data=x, chunks=(16, 64), compression=karoo.Karoo(mode="archive"))
        with h5py.File({str(tmp_path / 'n.h5')!r}, "r") as f:
            assert f["d"][...].tobytes() == x.tobytes()
        print("libhdf5:", karoo.get_config().hdf5_library)
        import netCDF4
        with netCDF4.Dataset({str(tmp_path / 'n.h5')!r}) as nc:
            # netCDF-C's libhdf5 finds the same plugin through PLUGIN_PATH.
            pass
        print("ok")
    """)
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")
    assert "h5py" in done.stdout.splitlines()[0]


def test_both_hdf5_copies_read_karoo_through_the_plugin_path(tmp_path):
    # HDF5_PLUGIN_PATH=karoo.PLUGIN_PATH: netCDF-C's libhdf5 loads the same library that
    # `import karoo` registered with h5py's; each copy gets a filter class bound to itself.
    path = tmp_path / "p.h5"
    code = textwrap.dedent(f"""
        import netCDF4, h5py, numpy as np, karoo
        x = np.arange(64 * 48, dtype="f4").reshape(64, 48) * np.float32(0.5)
        with h5py.File({str(path)!r}, "w") as f:
            f.create_dataset("v", data=x, chunks=(16, 48), compression=karoo.Karoo())
        with netCDF4.Dataset({str(path)!r}) as nc:
            assert np.asarray(nc["v"][:]).tobytes() == x.tobytes()
        with h5py.File({str(path)!r}) as f:
            assert f["v"][...].tobytes() == x.tobytes()
        print("ok")
    """)
    done = run_python(code, env={"HDF5_PLUGIN_PATH": karoo.PLUGIN_PATH})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_register_again_is_harmless_and_force_reregisters(tmp_path):
    assert karoo.register() is True
    assert karoo.register(force=True) is True
    data = visibilities((20, 8), "f8")
    with h5py.File(tmp_path / "r.h5", "w") as f:
        f.create_dataset("d", data=data, chunks=(10, 8), compression=karoo.Karoo())
    with h5py.File(tmp_path / "r.h5", "r") as f:
        assert same_bits(f["d"][...], data)


def test_karoo_is_a_filter_ref_and_a_mapping():
    k = karoo.Karoo(mode="archive", predictor="lorenzo", residual_map="subtract", coder="ctx-huffman",
                    threads=2, time_axis=1, lag=7)
    assert isinstance(k, h5py.filters.FilterRefBase)
    assert dict(k) == {"compression": 52033,
                       "compression_opts": (1, 11 | 3 << 8 | 5 << 16, 2, 1, 7)}
    assert karoo.Karoo().filter_options == (0, 0, 0, 0, 0)
    assert repr(karoo.Karoo(mode="archive")) == (
        "karoo.Karoo(mode='archive', predictor='auto', residual_map='auto', coder='auto', "
        "threads=0, time_axis=0, lag=0, level=0)")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"mode": "slow"}, ValueError, "karoo: unknown mode 'slow'; expected one of 'fast', 'archive'"),
    ({"predictor": "cubic"}, ValueError, "karoo: unknown predictor 'cubic'"),
    ({"coder": "lz4"}, ValueError, "karoo: unknown coder 'lz4'"),
    ({"threads": 5000}, ValueError, "karoo: threads 5000 is out of range (0 to 1024)"),
    ({"threads": -1}, ValueError, "karoo: threads -1 is out of range (0 to 1024)"),
    ({"lag": 1.5}, TypeError, "karoo: lag must be an integer, not float"),
    ({"time_axis": True}, TypeError, "karoo: time_axis must be an integer, not bool"),
])
def test_bad_options_are_refused_in_python(kwargs, error, message):
    with pytest.raises(error) as caught:
        karoo.Karoo(**kwargs)
    assert str(caught.value).startswith(message)


def test_checked_options_are_reused_only_for_equal_arguments_of_equal_types():
    first = karoo.Karoo(threads=1, time_axis=0)
    assert karoo.Karoo(threads=1, time_axis=0) == first
    # Equal and of equal hash to 1 and 0, but not integers karoo accepts.
    with pytest.raises(TypeError, match="karoo: threads must be an integer, not bool"):
        karoo.compress(np.zeros(8, np.float32), threads=True)
    with pytest.raises(TypeError, match="karoo: time_axis must be an integer, not float"):
        karoo.compress(np.zeros(8, np.float32), time_axis=0.0)
    # An unhashable argument is checked too.
    with pytest.raises(ValueError, match="karoo: unknown mode \\['fast'\\]"):
        karoo.compress(np.zeros(8, np.float32), mode=["fast"])
    assert karoo.compress(np.zeros(8, np.float32), threads=np.int64(1)).dtype == np.float32


def test_options_are_rebuilt_from_stored_cd_values(tmp_path):
    written = karoo.Karoo(mode="archive", predictor="mean4", threads=3, time_axis=1, lag=0)
    data = visibilities((8, 30, 4), "c16")
    with h5py.File(tmp_path / "o.h5", "w") as f:
        f.create_dataset("d", data=data, chunks=(8, 10, 4), compression=written)
    with h5py.File(tmp_path / "o.h5", "r") as f:
        stored = f["d"].id.get_create_plist().get_filter_by_id(52033)[1]
        assert len(stored) > 5  # set_local appended the layout
        assert karoo.Karoo.from_dataset(f["d"]) == written
        assert karoo.Karoo.from_cd_values(stored).get_config()["predictor"] == "mean4"
        assert same_bits(f["d"][...], data)
    with h5py.File(tmp_path / "o.h5", "a") as f:
        f.create_dataset("plain", data=np.zeros(4))
        with pytest.raises(ValueError, match="karoo: dataset /plain does not use the karoo filter"):
            karoo.Karoo.from_dataset(f["plain"])


def test_shuffle_before_karoo_warns(tmp_path):
    data = visibilities((64, 32), "f4")
    with h5py.File(tmp_path / "s.h5", "w") as f:
        d = f.create_dataset("d", data=data, chunks=(64, 32), shuffle=True, compression=karoo.Karoo())
        with pytest.warns(karoo.ShuffleWarning, match="destroys karoo's prediction along time"):
            karoo.check_dataset(d)
        plain = f.create_dataset("p", data=data, chunks=(64, 32), compression=karoo.Karoo())
        karoo.check_dataset(plain)  # no warning
        assert same_bits(d[...], data)
        # The shuffled copy is lossless but compresses worse.
        assert d.id.get_storage_size() > plain.id.get_storage_size()


def test_the_plugin_warns_once_on_stderr_about_a_shuffle_before_karoo(tmp_path):
    code = textwrap.dedent(f"""
        import h5py, numpy as np, karoo
        with h5py.File({str(tmp_path / 'w.h5')!r}, "w") as f:
            f.create_dataset("plain", data=np.zeros((8, 8), "f4"), chunks=(8, 8), compression=karoo.Karoo())
            for name in ("a", "b"):
                f.create_dataset(name, data=np.zeros((8, 8), "f4"), chunks=(8, 8), shuffle=True,
                                 compression=karoo.Karoo())
        print("ok")
    """)
    done = run_python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert done.stderr.count("karoo: warning: a shuffle filter runs before karoo") == 1
