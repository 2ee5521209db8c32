"""KAROO_NUM_THREADS replaces the thread count of every read and write through the plugin.
The variable is read once per process, so each case runs in a fresh Python process."""

import os
import subprocess
import sys

import pytest

from conftest import PLUGIN_DIR, REPO

CORES = len(os.sched_getaffinity(0))

# Writes and reads a dataset whose cd_values ask for `ask` threads, then prints the
# number of karoo pool workers in the process and a digest of the stored chunk.
CHILD = r"""
import hashlib, os, sys
import numpy as np
import h5py
ask, path = int(sys.argv[1]), sys.argv[2]
t = np.arange(64, dtype="f4")[:, None, None]
data = (np.sin(np.arange(300 * 40, dtype="f4") / 50).reshape(1, 300, 40) * (1 + t / 100)).astype("f4")
with h5py.File(path, "w") as f:
    f.create_dataset("d", data=data, chunks=data.shape, compression=52033, compression_opts=(0, 0, ask))
with h5py.File(path, "r") as f:
    assert f["d"][...].tobytes() == data.tobytes()
    chunk = f["d"].id.read_direct_chunk((0, 0, 0))[1]
workers = sum(open(f"/proc/self/task/{t}/comm").read().startswith("karoo-")
              for t in os.listdir("/proc/self/task"))
print(workers, hashlib.sha256(chunk).hexdigest())
"""


def run(tmp_path, value, ask):
    """(pool workers, chunk digest, stderr) of a child with KAROO_NUM_THREADS = `value`."""
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(PLUGIN_DIR))
    env.pop("KAROO_NUM_THREADS", None)
    if value is not None:
        env["KAROO_NUM_THREADS"] = value
    done = subprocess.run([sys.executable, "-c", CHILD, str(ask), str(tmp_path / "t.h5")],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    workers, digest = done.stdout.split()
    return int(workers), digest, done.stderr


def test_the_variable_sets_the_threads_and_never_the_bytes(tmp_path):
    workers, digest, _ = run(tmp_path, None, 1)
    assert workers == 0
    for value, ask, expected in [
        ("1", 8, 1),
        ("2", 1, min(2, CORES)),
        ("0", 3, min(3, CORES)),
        ("64", 1, CORES),
    ]:
        got = run(tmp_path, value, ask)
        assert got[:2] == (expected - 1, digest), (value, ask)


@pytest.mark.parametrize("value", ["all", "-2", "1025"])
def test_an_invalid_value_is_ignored_with_one_warning(tmp_path, value):
    workers, _, stderr = run(tmp_path, value, 1)
    assert workers == 0
    assert stderr == (f"karoo: ignoring KAROO_NUM_THREADS={value!r}: expected a whole number of "
                      "threads from 0 to 1024 (0 = the count asked for)\n").replace("'", '"')
