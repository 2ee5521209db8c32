"""Interoperability with Debian's HDF5 1.10 command-line tools: h5dump, h5ls, h5repack."""

import subprocess

import numpy as np

from conftest import KAROO, h5py, same_bits, special_floats, tool


def run(*args):
    """Runs a command, failing the test with its output if it fails."""
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 0, f"{args}: {result.stdout}\n{result.stderr}"
    return result.stdout


def test_h5dump_reads_a_file_written_by_h5py(tmp_path):
    h5dump = tool("h5dump")
    path, raw = tmp_path / "a.h5", tmp_path / "a.bin"
    data = special_floats("f4", (50, 7, 3))
    with h5py.File(path, "w") as f:
        f.create_dataset("vis", data=data, chunks=(16, 7, 3), compression=KAROO)
    run(h5dump, "-d", "/vis", "-b", "LE", "-o", str(raw), str(path))
    assert raw.read_bytes() == data.tobytes()
    header = run(h5dump, "-H", "-p", str(path))
    assert "FILTER_ID 52033" in header and "COMMENT karoo" in header
    assert "PARAMS { 0 0 0 0 0 2 4 2 4 1 260 3 16 7 3 }" in header


def test_h5ls_shows_the_filter(tmp_path):
    h5ls = tool("h5ls")
    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("vis", data=special_floats("c8", (20, 8)), chunks=(10, 8), compression=KAROO)
    out = run(h5ls, "-v", f"{path}/vis")
    assert "Filter-0:   karoo-52033 OPT" in out or "karoo-52033" in out


def test_h5repack_compresses_with_karoo_and_h5py_reads_it(tmp_path):
    h5repack = tool("h5repack")
    plain, packed, back = tmp_path / "plain.h5", tmp_path / "packed.h5", tmp_path / "back.h5"
    data = {"f4": special_floats("f4", (64, 32, 4)), "c8": special_floats("c8", (64, 32)),
            "i4": np.arange(64 * 32, dtype="i4").reshape(64, 32)}
    with h5py.File(plain, "w") as f:
        for name, arr in data.items():
            f.create_dataset(name, data=arr, chunks=(16,) + arr.shape[1:])
    run(h5repack, "-f", f"UD={KAROO},0,3,0,0,2", str(plain), str(packed))
    with h5py.File(packed, "r") as f:
        for name, arr in data.items():
            assert same_bits(f[name][...], arr), name
            values = f[name].id.get_create_plist().get_filter_by_id(KAROO)[1]
            assert values[:6] == (0, 0, 2, 0, 0, 2)
        assert f["f4"].id.get_storage_size() < data["f4"].nbytes
    # And back: h5repack (HDF5 1.10) decodes what it wrote, removing the filter.
    run(h5repack, "-f", "NONE", str(packed), str(back))
    with h5py.File(back, "r") as f:
        for name, arr in data.items():
            assert same_bits(f[name][...], arr), name
            assert f[name].compression is None


def test_h5repack_writes_archive_mode_and_h5dump_reads_it(tmp_path):
    """HDF5 1.10's tools write and read archive mode; h5py (HDF5 2.0) reads it too."""
    h5repack, h5dump = tool("h5repack"), tool("h5dump")
    plain, packed, raw = tmp_path / "plain.h5", tmp_path / "packed.h5", tmp_path / "vis.bin"
    data = special_floats("f4", (64, 40, 4))
    with h5py.File(plain, "w") as f:
        f.create_dataset("vis", data=data, chunks=(64, 20, 4))
    run(h5repack, "-f", f"UD={KAROO},0,1,1", str(plain), str(packed))
    run(h5dump, "-d", "/vis", "-b", "LE", "-o", str(raw), str(packed))
    assert raw.read_bytes() == data.tobytes()
    with h5py.File(packed, "r") as f:
        assert same_bits(f["vis"][...], data)
        assert f["vis"].id.get_create_plist().get_filter_by_id(KAROO)[1][:2] == (1, 0)
        assert f["vis"].id.get_storage_size() < 0.9 * data.nbytes


def test_h5repack_falls_back_when_karoo_refuses_the_options(tmp_path):
    """An unknown mode is refused at creation; h5repack then keeps the original layout."""
    h5repack = tool("h5repack")
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    data = np.arange(1000, dtype="f4").reshape(100, 10)
    with h5py.File(plain, "w") as f:
        f.create_dataset("x", data=data, chunks=(50, 10))
    out = run(h5repack, "-v", "-f", f"UD={KAROO},0,1,7", str(plain), str(packed))
    assert "could not create dataset </x>. Applying original settings" in out
    with h5py.File(packed, "r") as f:
        assert same_bits(f["x"][...], data)
        assert f["x"].id.get_create_plist().get_nfilters() == 0


def test_h5dump_reports_a_corrupt_chunk_on_the_error_stack(tmp_path):
    """On HDF5 1.10 the filter's own message reaches the error stack."""
    h5dump = tool("h5dump")
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(8, 8), dtype="f4", chunks=(8, 8), compression=KAROO)
        d.id.write_direct_chunk((0, 0), b"KARO" + bytes(100))  # version byte 0
    result = subprocess.run([h5dump, "--enable-error-stack", "-d", "/d", str(path)], capture_output=True, text=True)
    assert result.returncode != 0
    assert "karoo: unsupported chunk format version 0.0 (this build reads 1.0, 2.0, 3.0, 4.2, 5.0; written by a later karoo?)" in result.stderr
    assert "filter returned failure during read" in result.stderr
