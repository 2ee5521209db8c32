"""A process that read and wrote karoo data on several threads, then forks (multiprocessing's
'fork' start method, the default on Linux before Python 3.14): the child reads and writes
karoo data on several threads too, instead of waiting forever on the parent's pool workers,
which do not exist in the child."""

import multiprocessing
import os

import numpy as np

from conftest import KAROO, h5py, same_bits, special_floats

# A chunk of several tiles, coded on up to 4 threads.
SHAPE = (64, 300, 40)
OPTS = (0, 0, 4)
# The child needs well under a second; a hung child is killed after this.
DEADLINE_S = 60


def write(path, data):
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=SHAPE, compression=KAROO, compression_opts=OPTS)


def child(path, copy, data):
    """Reads the parent's file, writes and reads a copy; exit status 0 when all is exact."""
    try:
        with h5py.File(path, "r") as f:
            ok = same_bits(f["d"][...], data)
        write(copy, data)
        with h5py.File(copy, "r") as f:
            ok = ok and same_bits(f["d"][...], data)
    except BaseException:
        os._exit(2)
    os._exit(0 if ok else 1)


def test_forked_child_reads_and_writes_after_multithreaded_use(tmp_path):
    data = special_floats("f4", SHAPE)
    path = tmp_path / "parent.h5"
    write(path, data)
    with h5py.File(path, "r") as f:
        assert same_bits(f["d"][...], data)
    process = multiprocessing.get_context("fork").Process(
        target=child, args=(str(path), str(tmp_path / "child.h5"), data))
    process.start()
    process.join(DEADLINE_S)
    hung = process.is_alive()
    if hung:
        process.kill()
        process.join()
    assert not hung, f"the forked child hung for {DEADLINE_S} s and was killed"
    assert process.exitcode == 0
    # The parent's own pools still work.
    with h5py.File(tmp_path / "child.h5", "r") as f:
        assert same_bits(f["d"][...], data)
