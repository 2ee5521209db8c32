"""Zarr stores written once by karoo and kept in tests/fixtures/zarr open and read forever:
their metadata pins the codec names and configuration keys that users' stores hold (Zarr 3
``karoo`` serializer and ``karoo.bytes`` compressor, Zarr 2 ``karoo`` compressor), and their
chunks pin the bytes. Missing stores are written with KAROO_WRITE_FIXTURES=1, then committed."""

import json
import os
import pathlib

import numpy as np
import pytest

from conftest import same_bits, visibilities

numcodecs = pytest.importorskip("numcodecs")
zarr = pytest.importorskip("zarr")

STORES = pathlib.Path(__file__).parent / "fixtures" / "zarr"

# Each store: its Zarr format, how karoo is named in it, and karoo's configuration there.
CASES = {
    "v3-serializer-fast": (3, "serializer", {}),
    "v3-serializer-archive-level9": (3, "serializer", {"mode": "archive", "level": 9}),
    "v3-bytes-archive": (3, "bytes", {"mode": "archive", "time_axis": 0}),
    "v2-compressor-fast-rice": (2, "compressor", {"predictor": "previous", "coder": "rice"}),
    "v2-compressor-archive": (2, "compressor", {"mode": "archive", "level": 1}),
}


def _data(name):
    dtype = "f4" if "rice" in name else "c8"
    return visibilities((24, 8, 4), dtype, seed=len(name))


def _write(path, zarr_format, route, options):
    from karoo.zarr3 import KarooBytesCodec, KarooCodec

    data = _data(path.name)
    kw = {"shape": data.shape, "chunks": (16, 8, 4), "dtype": data.dtype, "zarr_format": zarr_format}
    if route == "serializer":
        kw.update(serializer=KarooCodec(**options), compressors=None)
    elif route == "bytes":
        kw.update(compressors=[KarooBytesCodec(**options)])
    else:
        kw.update(compressors=numcodecs.get_codec({"id": "karoo", **options}))
    z = zarr.create_array(str(path), **kw)
    z[...] = data
    np.save(path.parent / f"{path.name}.npy", data)


def _karoo_entries(path, zarr_format):
    """karoo's entries in the store's metadata, as stored."""
    if zarr_format == 2:
        return [json.loads((path / ".zarray").read_text())["compressor"]]
    meta = json.loads((path / "zarr.json").read_text())
    return [c for c in meta["codecs"] if c["name"].startswith("karoo")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_stored_zarr_array_reads_back_forever(name):
    zarr_format, route, options = CASES[name]
    path = STORES / name
    if not path.exists():
        if os.environ.get("KAROO_WRITE_FIXTURES") != "1":
            pytest.fail(f"{path} is missing: write it with KAROO_WRITE_FIXTURES=1 and commit it")
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, zarr_format, route, options)
    expected = np.load(STORES / f"{name}.npy")
    z = zarr.open_array(str(path), mode="r")
    assert same_bits(z[...], expected)
    assert same_bits(z[5:19, 1:7, 2:], expected[5:19, 1:7, 2:])
    # What the store records for karoo: the name and the options it was written with.
    (entry,) = _karoo_entries(path, zarr_format)
    if zarr_format == 2:
        assert entry["id"] == "karoo"
        stored = entry
    else:
        assert entry["name"] == {"serializer": "karoo", "bytes": "karoo.bytes"}[route]
        stored = entry["configuration"]
    for key, value in options.items():
        assert stored[key] == value


def test_the_stores_hold_what_they_were_written_with():
    # The committed stores, chunk files included: a store rewritten by a later karoo would
    # no longer pin the bytes the first one wrote.
    for name, (zarr_format, _, _) in CASES.items():
        path = STORES / name
        chunks = [p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".z", "zarr.json"))]
        assert len(chunks) == 2, (name, chunks)  # 24 steps in chunks of 16
