"""Writes a script's markdown output into a section of a generated document (by default
docs/benchmarks.md), labelled with the date, the commit, the machine and the command
that produced it.

A section is the text between `<!-- begin NAME -->` and `<!-- end NAME -->`; a section
that is not there yet is appended. Used by the benchmark scripts' `--doc` option:

    with bench_doc.capture("peers", "scripts/bench_filters.py --repeats 7"):
        ...  # everything printed here goes to stdout and into the section
"""

import contextlib
import datetime
import io
import os
import pathlib
import platform
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "docs" / "benchmarks.md"
RELIABILITY = REPO / "docs" / "reliability.md"


def commit():
    """The short hash of HEAD, with "+ uncommitted changes" when the tree is dirty."""
    try:
        sha = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True).strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "src", "plugin", "Cargo.toml"],
                               cwd=REPO).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + (" + uncommitted changes" if dirty else "")


def _cpuinfo():
    """(CPU model, set of CPU flags) from /proc/cpuinfo, where it can be read."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    return model, flags


def vector_isa():
    """The widest vector instructions of this CPU: "AVX-512", "AVX2" or "no AVX2"."""
    flags = _cpuinfo()[1]
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"


def machine():
    """CPU model, core count and widest vector instructions, e.g. "AMD EPYC, 2 cores, AVX2"."""
    return f"{_cpuinfo()[0]}, {os.cpu_count()} cores, {vector_isa()}"


def label(command):
    """The provenance line that heads a generated section."""
    today = datetime.date.today().isoformat()
    return f"_Measured {today}, commit {commit()}, machine: {machine()}. Command: `{command}`._"


def write_section(name, command, body, path=BENCHMARKS):
    """Replaces section `name` of `path` with the label and `body` (appends it when absent)."""
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{label(command)}\n\n{body.strip()}\n{end}"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
    print(f"\nwritten to {path} (section {name})", file=sys.stderr)


class _Tee(io.StringIO):
    """Keeps what is written and passes it on to `stream`."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text):
        self.stream.write(text)
        return super().write(text)

    def flush(self):
        self.stream.flush()


@contextlib.contextmanager
def capture(name, command, path=BENCHMARKS, enabled=True):
    """Prints as usual and, when `enabled`, writes what was printed into section `name`."""
    if not enabled:
        yield
        return
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield
    write_section(name, command, tee.getvalue(), path)
