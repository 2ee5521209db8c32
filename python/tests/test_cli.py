"""The `karoo` command-line tool: verify, inspect, repack and bench, on generated files and
on the shared UVH5 files (skipped when ../shared/data is absent)."""

import os
import pathlib
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

import karoo
from karoo.cli import suggest_chunks
from conftest import needs_shared, same_bits, shared_files, visibilities

KAROO_BIN = pathlib.Path(sys.executable).with_name("karoo")


def run(*args, check=True):
    done = subprocess.run([str(KAROO_BIN), *map(str, args)], capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def karoo_file(tmp_path):
    path = tmp_path / "k.h5"
    data = visibilities((64, 32, 4), "c8")
    with h5py.File(path, "w") as f:
        f.create_dataset("vis", data=data, chunks=(16, 32, 4), compression=karoo.Karoo())
        f.create_dataset("grp/flags", data=np.zeros((64, 32), bool), chunks=(16, 32), compression="gzip")
    return path, data


def test_console_script_is_installed():
    assert KAROO_BIN.exists()
    assert run("--help").stdout.startswith("Usage: karoo")


def test_verify_passes_a_good_file(karoo_file):
    path, _ = karoo_file
    done = run("verify", "-q", path)
    assert done.stdout == "" and done.stderr == ""
    assert run("verify", path).stdout.strip() == f"{path}: 4 karoo chunks in 1 datasets checked"


def test_verify_fails_on_a_corrupted_chunk_and_names_it(karoo_file, tmp_path):
    path, _ = karoo_file
    bad = tmp_path / "bad.h5"
    shutil.copy(path, bad)
    with h5py.File(path, "r") as f:
        info = f["vis"].id.get_chunk_info(2)
    with open(bad, "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x40]))
    done = run("verify", "-q", bad, check=False)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(f"{bad}: /vis chunk {list(info.chunk_offset)}: karoo: corrupt chunk")
    assert lines[-1] == "karoo verify: 1 chunks failed"


def test_inspect_shows_pipeline_ratio_and_codings(karoo_file):
    path, data = karoo_file
    out = run("inspect", "-q", path).stdout
    assert "/vis  complex64 [64, 32, 4] chunks [16, 32, 4]" in out
    assert "pipeline: karoo(mode=fast)" in out
    assert "karoo chunks: 4 (fast); time axis 0, lag 256 words" in out
    assert "tiles  " in out and "/rotate-subtract/patched" in out or "/subtract/patched" in out
    assert "/grp/flags" in out and "deflate" in out


def test_inspect_warns_about_shuffle(tmp_path):
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=visibilities((32, 16), "f4"), chunks=(32, 16), shuffle=True,
                         compression=karoo.Karoo())
    out = run("inspect", "-q", path).stdout
    assert "pipeline: shuffle[2] -> karoo(mode=fast)" in out
    assert "warning: karoo: a shuffle filter runs before karoo" in out


def test_repack_rewrites_with_karoo_and_keeps_everything(karoo_file, tmp_path):
    src, data = karoo_file
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f.attrs["telescope"] = "test"
        d = f.create_dataset("vis", data=data, chunks=(8, 32, 4), shuffle=True, compression="gzip")
        d.attrs["units"] = "Jy"
        f.create_dataset("names", data=np.array([b"a", b"bb"]))
    out = tmp_path / "out.h5"
    run("repack", "-q", "--archive", "--chunks", "32,32,4", plain, out)
    with h5py.File(out, "r") as f:
        assert f.attrs["telescope"] == "test" and f["vis"].attrs["units"] == "Jy"
        assert same_bits(f["vis"][...], data)
        assert f["vis"].chunks == (32, 32, 4)
        assert karoo.Karoo.from_dataset(f["vis"]).get_config()["mode"] == "archive"
        assert [p[0] for p in karoo._hdf5.pipeline(f["vis"])] == [52033]  # shuffle dropped
        assert list(f["names"][...]) == [b"a", b"bb"]
    assert run("verify", "-q", out).returncode == 0


@pytest.fixture
def plain_file(tmp_path):
    """A small file without karoo: a 3-D and a 2-D dataset, a 1-D one."""
    path = tmp_path / "plain.h5"
    data = visibilities((32, 32, 4), "c8")
    with h5py.File(path, "w") as f:
        f.create_dataset("vis", data=data, chunks=(8, 32, 4), compression="gzip")
        f.create_dataset("grp/weights", data=np.arange(64 * 32, dtype="f4").reshape(64, 32), chunks=(8, 32))
        f.create_dataset("grp/times", data=np.arange(512, dtype="f8"))
    return path, data


def test_repack_chunks_by_dataset_and_by_rank(plain_file, tmp_path):
    src, data = plain_file
    out = tmp_path / "out.h5"
    run("repack", "-q", "--chunks", "vis=16,32,4", "--chunks", "32,16", "--chunks", "/grp/times=100", src, out)
    with h5py.File(out, "r") as f:
        assert f["vis"].chunks == (16, 32, 4) and same_bits(f["vis"][...], data)
        assert f["grp/weights"].chunks == (32, 16)
        assert f["grp/times"].chunks == (100,) and f["grp/times"][-1] == 511.0
        assert all(karoo.Karoo.from_dataset(f[n]) for n in ("vis", "grp/weights", "grp/times"))


def test_repack_chunks_auto_applies_the_suggestion_of_bench(plain_file, tmp_path):
    src, _ = plain_file
    out = tmp_path / "out.h5"
    run("repack", "-q", "--chunks", "auto", src, out)
    with h5py.File(out, "r") as f:
        assert f["vis"].chunks == suggest_chunks((32, 32, 4), "c8")
        assert f["grp/weights"].chunks == suggest_chunks((64, 32), "f4")


def test_repack_refuses_to_overwrite_without_force(plain_file, tmp_path):
    src, _ = plain_file
    out = tmp_path / "out.h5"
    out.write_bytes(b"keep me")
    done = run("repack", "-q", src, out, check=False)
    assert done.returncode == 1
    assert done.stderr == f"Error: karoo: {out} exists; pass --force to overwrite it\n"
    assert out.read_bytes() == b"keep me"
    run("repack", "-q", "--force", src, out)
    with h5py.File(out, "r") as f:
        assert f["vis"].shape == (32, 32, 4)


@pytest.mark.parametrize("chunks, message", [
    ("vis=16,32", "Invalid value for '--chunks': /vis=16,32 has 2 dimensions, /vis has 3"),
    ("16,x", "Invalid value for '--chunks': expected comma-separated integers or 'auto', got '16,x'"),
    ("vis=0,32,4", "Invalid value for '--chunks': every chunk dimension must be at least 1, got '0,32,4'"),
])
def test_a_failed_repack_leaves_no_output(plain_file, tmp_path, chunks, message):
    src, _ = plain_file
    done = run("repack", "-q", "--chunks", chunks, src, tmp_path / "out.h5", check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"Error: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.h5"]


def test_repack_reads_hdf5plugin_filters_and_names_those_it_cannot(tmp_path):
    hdf5plugin = pytest.importorskip("hdf5plugin")
    src = tmp_path / "zstd.h5"
    data = visibilities((32, 16), "f4")
    with h5py.File(src, "w") as f:
        f.create_dataset("d", data=data, chunks=(8, 16), **hdf5plugin.Zstd())
    out = tmp_path / "out.h5"
    run("repack", "-q", src, out)
    with h5py.File(out, "r") as f:
        assert same_bits(f["d"][...], data) and karoo.Karoo.from_dataset(f["d"])
    # Without hdf5plugin the Zstd filter is missing: a clear error, no output.
    code = "import sys; sys.modules['hdf5plugin'] = None; from karoo.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code, "repack", "-q", str(src), str(tmp_path / "no.h5")],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HDF5_PLUGIN_PATH": ""})
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "Error: karoo: cannot read these datasets, their filters are not available: /d: filter 32015 "
        "(HDF5 zstd filter; see https://github.com/HDFGroup/hdf5_plugins/blob/master/docs/"
        "RegisteredFilterPlugins.md); pip install hdf5plugin provides the common ones")
    assert not (tmp_path / "no.h5").exists()


def test_bench_times_the_suggested_layout_and_accepts_small_files(plain_file, tmp_path):
    pytest.importorskip("hdf5plugin")
    src, _ = plain_file
    plot = tmp_path / "bench.png"
    out = run("bench", "-q", "--repeats", "1", "--plot", plot, src).stdout
    labels = [line.split(" | ")[:2] for line in out.splitlines() if line.startswith("| plain.h5")]
    assert ["| plain.h5:/vis", "karoo fast (suggested chunks)"] in labels
    assert ["| plain.h5:/vis", "karoo archive (suggested chunks)"] in labels
    assert {name for name, _ in labels} == {"| plain.h5:/vis", "| plain.h5:/grp/weights", "| plain.h5:/grp/times"}
    assert plot.stat().st_size > 1000


def test_bench_prints_a_markdown_table_and_a_plot(karoo_file, tmp_path):
    path, _ = karoo_file
    pytest.importorskip("hdf5plugin")
    plot = tmp_path / "bench.png"
    out = run("bench", "-q", "--repeats", "1", "--plot", plot, f"{path}:vis").stdout
    lines = out.splitlines()
    assert lines[0] == "| dataset | filter | stored/raw | write MiB/s | read MiB/s |"
    filters = [line.split(" | ")[1] for line in lines[2:8]]
    assert filters == ["karoo fast", "karoo archive", "bitshuffle+lz4", "zstd", "blosc2 zstd", "none"]
    ratio = {line.split(" | ")[1]: float(line.split(" | ")[2]) for line in lines[2:8]}
    assert ratio["none"] == pytest.approx(1.0, abs=0.01) and ratio["karoo archive"] < ratio["none"]
    assert "k.h5:/vis: suggested chunks=" in out
    assert plot.stat().st_size > 1000


@needs_shared
@pytest.mark.parametrize("path", shared_files(), ids=lambda p: p.name[:24])
def test_repack_verify_inspect_on_the_shared_files(path, tmp_path):
    out = tmp_path / "r.h5"
    run("repack", "-q", path, out)
    with h5py.File(path, "r") as a, h5py.File(out, "r") as b:
        assert same_bits(b["Data/visdata"][...], a["Data/visdata"][...])
        assert karoo.Karoo.from_dataset(b["Data/visdata"])
    assert run("verify", "-q", out).returncode == 0
    text = run("inspect", "-q", out).stdout
    assert "/Data/visdata" in text and "karoo(mode=fast)" in text


@needs_shared
def test_bench_on_a_shared_file_suggests_a_lag_for_the_blt_axis():
    pytest.importorskip("hdf5plugin")
    path = next(p for p in shared_files() if p.name.startswith("zen.2458042"))
    out = run("bench", "-q", "--repeats", "1", f"{path}:Data/visdata").stdout
    assert "| karoo fast |" in out
    assert "lag=" in out and "UVH5 time-major blt axis" in out


GOLDEN = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden" / "hdf5"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.h5")), ids=lambda p: p.name)
def test_verify_and_inspect_the_golden_files(path):
    done = run("verify", path)
    assert done.stdout.startswith(f"{path}: ") and " karoo chunks in " in done.stdout
    assert int(done.stdout.split(": ")[1].split()[0]) > 0
    assert "karoo(mode=" in run("inspect", "-q", path).stdout
