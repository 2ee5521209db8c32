"""The real HERA telescope files (../shared/data): bit-exact round trips through karoo,
time-major and in the raw blt layout with an explicit lag; ratios next to Bitshuffle+LZ4."""

import sys

import numpy as np
import pytest

from conftest import KAROO, REPO, h5py, same_bits

sys.path.insert(0, str(REPO / "scripts"))
import datasets  # noqa: E402

FILES = datasets.hera_files()
pytestmark = pytest.mark.skipif(not FILES, reason="../shared/data/hera not present")


def stored_ratio(path, data, **filter_args):
    """Writes `data` as one chunk with the given filter; returns (stored/raw, read-back)."""
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=data.shape, **filter_args)
    with h5py.File(path, "r") as f:
        return f["d"].id.get_storage_size() / data.nbytes, f["d"][...]


@pytest.mark.parametrize("path", FILES, ids=[p.name[:20] for p in FILES])
def test_hera_round_trips_time_major_and_with_lag(tmp_path, path, record_property):
    import hdf5plugin

    time_major, raw, nbls = datasets.load_hera(path)
    ratio, back = stored_ratio(tmp_path / "k.h5", time_major, compression=KAROO)
    assert same_bits(back, time_major)
    # Raw blt layout: successive samples of a baseline are nbls rows apart when the
    # file is time-major, adjacent (the default lag) when it is baseline-major.
    times_adjacent = raw.shape[0] == time_major.shape[0] * nbls and not np.array_equal(
        raw, time_major.reshape(raw.shape))
    row = int(np.prod(raw.shape[1:]))
    lag = row if times_adjacent else nbls * row
    lag_ratio, back = stored_ratio(tmp_path / "l.h5", raw, compression=KAROO, compression_opts=(0, 0, 0, 0, lag))
    assert same_bits(back, raw)
    bs_ratio, back = stored_ratio(tmp_path / "b.h5", time_major, **hdf5plugin.Bitshuffle(cname="lz4"))
    assert same_bits(back, time_major)
    assert ratio < 1.0 or np.issubdtype(raw.dtype, np.integer)
    record_property("karoo_ratio", ratio)
    print(f"\n{path.name}: karoo {ratio:.3f} (raw layout, lag {lag}: {lag_ratio:.3f}), bitshuffle+lz4 {bs_ratio:.3f}")
