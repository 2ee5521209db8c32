"""The examples of README.md and docs/*.md run as written: each file's ```python and ```sh
blocks in order, each as a script of its own, in one directory (the files one block writes
are there for the next), on the data the examples generate themselves, and for the HDF5
command-line recipes, on a small plain.h5 the test writes first (the user's own file in
those recipes). Set-up commands (pip, scripts/demo.sh, scripts/test.sh) are what the test
command itself runs, and are not run again."""

import importlib.util
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
from test_scaleout import _mpi_env, _mpi_python

import karoo

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(python|sh)\n(.*?)^```", re.M | re.S)
SET_UP = ("pip", "scripts/demo.sh", "scripts/test.sh")
"""Commands of the set-up blocks: the test command has run them."""


def blocks(path):
    """(language, code) of each ```python and ```sh block of `path`, in order."""
    return BLOCK.findall(path.read_text())


def commands(code):
    """The commands of a shell block: its lines without comments and blank lines."""
    lines = (line.split(" #")[0].strip() for line in code.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def run_python(code, folder, name):
    """Runs `code` as the script `name` in `folder`, as a user would: under mpirun with
    Debian's MPI-enabled Python for an example that says ``# mpirun -np N python3 ...``
    (None, with the reason, where those are not installed), else in this environment
    (None where a package it imports is not installed here)."""
    (folder / name).write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    mpi = re.match(r"# mpirun -np (\d+) python3", code)
    if not mpi:
        imported = re.findall(r"^(?:from|import) (\w+)", code, re.M)
        missing = [m for m in imported if importlib.util.find_spec(m) is None]
        if missing:
            return None, f"{', '.join(missing)} not installed"
        return subprocess.run([sys.executable, name], cwd=folder, capture_output=True, text=True,
                              timeout=600, env=env), None
    found, reason = _mpi_python()
    if found is None:
        return None, reason
    mpirun, python = found
    return subprocess.run([mpirun, "-np", mpi.group(1), python, name], cwd=folder, capture_output=True,
                          text=True, timeout=600, env=_mpi_env(folder / "mpi-path")), None


def run_shell(code, folder, name):
    """Runs the commands of a shell block in `folder`, each on its own, with this
    environment's commands (the `karoo` tool) on the PATH and HDF5_PLUGIN_PATH set to the
    package's plugin, as the README tells a user of the HDF5 tools to set it. None, with
    the reason, for a set-up block or where a command is not installed."""
    lines = commands(code)
    if all(line.startswith(SET_UP) for line in lines):
        return None, "set-up commands, which the test command runs"
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, HDF5_PLUGIN_PATH=karoo.PLUGIN_PATH,
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    programs = {shlex.split(line)[0] for line in lines}
    missing = sorted(p for p in programs if shutil.which(p, path=env["PATH"]) is None)
    if missing:
        return None, f"{', '.join(missing)} not installed"
    if not (folder / "plain.h5").exists():
        write_plain(folder / "plain.h5")
    script = "set -e\n" + "\n".join(lines) + "\n"
    (folder / name).write_text(script)
    return subprocess.run(["bash", name], cwd=folder, capture_output=True, text=True, timeout=600, env=env), None


def write_plain(path):
    """A small unfiltered file of complex visibilities `/vis` (time, baseline, channel), the
    user's file of the command-line recipes."""
    import h5py

    rng = np.random.default_rng(3)
    t = np.arange(8)[:, None, None]
    vis = (np.exp(1j * (0.1 * t + np.arange(64) / 10.0)) * (1 + np.arange(6)[:, None])
           + 0.01 * (rng.standard_normal((8, 6, 64)) + 1j * rng.standard_normal((8, 6, 64))))
    with h5py.File(path, "w") as f:
        f.create_dataset("vis", data=vis.astype(np.complex64), chunks=(2, 6, 64))


@pytest.mark.parametrize("doc", [d for d in DOCS if blocks(d)], ids=lambda d: d.name)
def test_the_examples_run_as_written(doc, tmp_path):
    skipped = []
    for i, (language, code) in enumerate(blocks(doc)):
        name = f"block{i + 1}.{'py' if language == 'python' else 'sh'}"
        run = run_python if language == "python" else run_shell
        done, reason = run(code, tmp_path, name)
        if done is None:
            if not reason.startswith("set-up"):
                skipped.append(f"example {i + 1}: {reason}")
            continue
        assert done.returncode == 0, f"{doc.name}, example {i + 1}:\n{code}\n{done.stderr[-3000:]}"
    if skipped:
        pytest.skip(f"{doc.name}: every other example ran; not run: " + "; ".join(skipped))


def test_shell_blocks_are_split_into_their_commands():
    code = "# a comment\nh5repack -f UD=52033,0,1,0 a.h5 b.h5   # karoo\n\nh5dump -H b.h5\n"
    assert commands(code) == ["h5repack -f UD=52033,0,1,0 a.h5 b.h5", "h5dump -H b.h5"]
