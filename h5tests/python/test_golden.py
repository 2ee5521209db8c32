"""Golden HDF5 files: datasets written by released karoo plugins decode to the same bytes.

The files (tests/golden/hdf5/, written once by h5tests/golden/make_golden_files.py)
pair each karoo dataset with an unfiltered twin holding the expected values.
"""

import h5py
import numpy as np
import pytest

from conftest import KAROO, REPO

GOLDEN = REPO / "tests" / "golden" / "hdf5"
FILES = ["karoo-v1-h5py.h5", "karoo-v1-h5repack.h5"]
# Every case each golden file must hold: losing one would silently drop its coverage.
CASES = {
    "complex64_fast_edges": "complex64",
    "complex128_archive": "complex128",
    "int32_compound_fast": "[('r', '<i4'), ('i', '<i4')]",
    "float32_bigendian": ">f4",
    "float32_archive_edges": "float32",
    "float32_specials": "float32",
    "float64_options": "float64",
    "int16_time_axis1": "int16",
    "float32_scaled_spectra_archive": "float32",
    "float32_lag_archive": "float32",
    "float32_one_row_fast": "float32",
}


@pytest.mark.parametrize("filename", FILES)
def test_golden_file_decodes_to_expected_bytes(filename):
    with h5py.File(GOLDEN / filename, "r") as f:
        assert sorted(n for n in f if not n.endswith("_expected")) == sorted(CASES)
        for name, dtype in CASES.items():
            dset, expected = f[name], f[name + "_expected"]
            assert dset.id.get_create_plist().get_filter(0)[0] == KAROO, name
            assert str(dset.dtype) == dtype, name
            got, want = dset[...], expected[...]
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert got.tobytes() == want.tobytes(), f"{filename}:{name} decodes differently"


@pytest.mark.parametrize("filename", FILES)
def test_golden_file_partial_reads_cross_edge_chunks(filename):
    with h5py.File(GOLDEN / filename, "r") as f:
        got = f["complex64_fast_edges"][11:13, 30:50:3, 1:3]
        want = f["complex64_fast_edges_expected"][11:13, 30:50:3, 1:3]
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
