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


def test_xradio_converts_a_measurement_set_with_karoo_bytes_codec(tmp_path):
    """xradio's MSv2 to processing-set conversion with compressor=KarooBytesCodec(): the
    visibilities stored by karoo, equal bit for bit to those of xradio's default codec."""
    pytest.importorskip("casacore")
    xradio_ms = pytest.importorskip("xradio.measurement_set")
    import json

    from astropy.coordinates import EarthLocation
    from pyuvdata import Telescope, UVData

    from karoo.zarr3 import KarooBytesCodec

    telescope = Telescope.new(name="test", location=EarthLocation.from_geodetic(21.43, -30.72, 1050),
                              antenna_positions={0: [0.0, 0.0, 0.0], 1: [14.0, 0.0, 0.0], 2: [0.0, 14.0, 0.0]},
                              instrument="test")
    uvd = UVData.new(freq_array=np.linspace(100e6, 120e6, 32), polarization_array=[-5, -6, -7, -8],
                     times=2459000 + np.arange(8) / 8640, telescope=telescope,
                     antpairs=[(0, 1), (0, 2), (1, 2)], empty=True)
    shape = uvd.data_array.shape
    rng = np.random.default_rng(5)
    uvd.data_array = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).cumsum(axis=1).astype("c8")
    ms = str(tmp_path / "obs.ms")
    uvd.write_ms(ms, force_phase=True)
    stores = {}
    for label, codec in (("karoo", KarooBytesCodec()), ("default", None)):
        out = str(tmp_path / f"{label}.ps.zarr")
        kwargs = {"compressor": codec} if codec is not None else {}
        xradio_ms.convert_msv2_to_processing_set(ms, out, with_pointing=False, **kwargs)
        stores[label] = out
    karoo_ps = xradio_ms.open_processing_set(stores["karoo"])
    default_ps = xradio_ms.open_processing_set(stores["default"])
    (name,) = karoo_ps.keys()
    vis = karoo_ps[name]["VISIBILITY"].values
    assert vis.shape == (8, 3, 32, 4) and vis.dtype == np.complex64
    assert same_bits(vis, default_ps[name]["VISIBILITY"].values)
    meta = json.loads((tmp_path / "karoo.ps.zarr" / name / "VISIBILITY" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["bytes", "karoo.bytes"]
