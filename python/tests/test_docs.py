"""The Python examples of README.md and docs/*.md run as written: each file's ```python
blocks in order, each as a script of its own, in one empty directory (the files one block
writes are there for the next), on the data the examples generate themselves."""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest
from test_scaleout import _mpi_env, _mpi_python

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def blocks(path):
    return BLOCK.findall(path.read_text())


def run_block(code, folder, name):
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


@pytest.mark.parametrize("doc", [d for d in DOCS if blocks(d)], ids=lambda d: d.name)
def test_the_python_examples_run_as_written(doc, tmp_path):
    skipped = []
    for i, code in enumerate(blocks(doc)):
        done, reason = run_block(code, tmp_path, f"block{i + 1}.py")
        if done is None:
            skipped.append(f"example {i + 1}: {reason}")
            continue
        assert done.returncode == 0, f"{doc.name}, example {i + 1}:\n{code}\n{done.stderr[-3000:]}"
    if skipped:
        pytest.skip(f"{doc.name}: every other example ran; not run: " + "; ".join(skipped))
