"""The numcodecs codec ``karoo`` and the Zarr 3 codecs ``karoo`` / ``karoo.bytes``, found
through their entry points; an MSv4-shaped xarray Dataset through Zarr 3."""

import numpy as np
import pytest

import karoo
from conftest import same_bits, visibilities

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")


@pytest.mark.parametrize("dtype", ["c8", "c16", "f4", "i4"])
def test_numcodecs_get_codec_round_trips(dtype):
    codec = numcodecs.get_codec({"id": "karoo", "mode": "archive", "time_axis": 0})
    assert type(codec).__name__ == "KarooCodec"
    assert codec.get_config() == {"id": "karoo", "mode": "archive", "predictor": "auto",
                                  "residual_map": "auto", "coder": "auto", "threads": 0,
                                  "time_axis": 0, "lag": 0, "level": 0}
    data = visibilities((20, 30, 4), dtype if dtype[0] != "i" else "f4")
    if dtype[0] == "i":
        data = (data * 1000).astype(dtype)
    encoded = codec.encode(data)
    assert len(encoded) < data.nbytes
    # from the bytes alone: the typed array, or filled into out
    assert same_bits(codec.decode(bytes(encoded)), data)
    out = np.empty_like(data)
    assert codec.decode(bytes(encoded), out=out) is out and same_bits(out, data)
    assert same_bits(codec.decode(encoded), data)
    # config round trip
    assert numcodecs.get_codec(codec.get_config()).get_config() == codec.get_config()


def test_numcodecs_refuses_bad_options():
    with pytest.raises(ValueError, match="karoo: unknown mode 'turbo'"):
        numcodecs.get_codec({"id": "karoo", "mode": "turbo"})


def test_zarr2_array_with_the_numcodecs_codec(tmp_path):
    data = visibilities((40, 16, 4), "c8")
    z = zarr.create_array(str(tmp_path / "v2.zarr"), shape=data.shape, chunks=(20, 16, 4), dtype="c8",
                          zarr_format=2, compressors=numcodecs.get_codec({"id": "karoo"}))
    z[...] = data
    assert same_bits(zarr.open_array(str(tmp_path / "v2.zarr"), mode="r")[...], data)


@pytest.mark.parametrize("dtype", ["c8", "c16"])
def test_zarr3_serializer_round_trips_complex(tmp_path, dtype):
    from zarr.registry import get_codec_class

    cls = get_codec_class("karoo")
    assert cls is karoo.zarr3.KarooCodec if hasattr(karoo, "zarr3") else cls.__name__ == "KarooCodec"
    data = visibilities((50, 24, 4), dtype)
    store = str(tmp_path / "a.zarr")
    z = zarr.create_array(store, shape=data.shape, chunks=(16, 24, 4), dtype=dtype,
                          serializer=cls(mode="fast"), compressors=None)
    z[...] = data
    back = zarr.open_array(store, mode="r")
    assert same_bits(back[...], data)
    assert back.metadata.codecs[0].to_dict() == {
        "name": "karoo", "configuration": {"mode": "fast", "predictor": "auto", "residual_map": "auto",
                                           "coder": "auto", "threads": 0, "time_axis": 0, "lag": 0,
                                           "level": 0}}
    stored = sum(p.stat().st_size for p in (tmp_path / "a.zarr").rglob("c/*/*/*"))
    assert 0 < stored < data.nbytes


def test_zarr3_bytes_to_bytes_form_round_trips(tmp_path):
    from zarr.registry import get_codec_class

    cls = get_codec_class("karoo.bytes")
    data = visibilities((40, 30, 2), "c8")
    store = str(tmp_path / "b.zarr")
    z = zarr.create_array(store, shape=data.shape, chunks=(16, 30, 2), dtype="c8",
                          compressors=[cls(mode="archive")])
    z[...] = data
    back = zarr.open_array(store, mode="r")
    assert same_bits(back[...], data)
    assert back.metadata.codecs[-1].to_dict()["name"] == "karoo.bytes"
    plain = zarr.create_array(str(tmp_path / "p.zarr"), shape=data.shape, chunks=(16, 30, 2), dtype="c8",
                              compressors=None)
    plain[...] = data
    size = lambda p: sum(f.stat().st_size for f in p.rglob("c/*/*/*"))  # noqa: E731
    assert size(tmp_path / "b.zarr") < 0.9 * size(tmp_path / "p.zarr")


def test_zarr3_codec_validates_its_time_axis(tmp_path):
    from zarr.registry import get_codec_class

    with pytest.raises(ValueError, match="karoo: time_axis 3 is out of range for an array of rank 2"):
        zarr.create_array(str(tmp_path / "c.zarr"), shape=(4, 4), chunks=(4, 4), dtype="f4",
                          serializer=get_codec_class("karoo")(time_axis=3))


def test_xarray_msv4_visibility_through_zarr3(tmp_path):
    xr = pytest.importorskip("xarray")
    from karoo.zarr3 import KarooCodec

    ntime, nbl, nchan, npol = 24, 21, 64, 4
    vis = visibilities((ntime, nbl, nchan, npol), "c8")
    ds = xr.Dataset(
        {"VISIBILITY": (("time", "baseline_id", "frequency", "polarization"), vis),
         "WEIGHT": (("time", "baseline_id", "frequency", "polarization"),
                    np.ones(vis.shape, "f4"))},
        coords={"time": np.arange(ntime) * 8.0, "baseline_id": np.arange(nbl),
                "frequency": 1.4e9 + np.arange(nchan) * 1e5, "polarization": ["XX", "XY", "YX", "YY"]},
    )
    encoding = {"VISIBILITY": {"serializer": KarooCodec(), "compressors": None,
                               "chunks": (8, nbl, nchan, npol)}}
    ds.to_zarr(tmp_path / "ms.zarr", zarr_format=3, encoding=encoding, consolidated=False)
    back = xr.open_zarr(tmp_path / "ms.zarr", consolidated=False)
    assert same_bits(back["VISIBILITY"].values, vis)
    assert back["VISIBILITY"].encoding["serializer"].to_dict()["name"] == "karoo"
    assert list(back["polarization"].values) == ["XX", "XY", "YX", "YY"]
