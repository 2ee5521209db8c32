"""How often the encoder chooses each coder, predictor, residual map, whole-chunk pipeline and
header flag, over the cases of the compression table (scripts/bench_compression.py: every
UVH5 file under --data and the generated workloads, at 1, 2, 4, 16 and all time steps per
chunk, and real files in chunks of one baseline's spectrum), in both modes at one effort
level: the measurement behind which parts of the format the encoder needs.

    .venv/bin/python scripts/coding_stats.py --out docs/coding-statistics.md
    .venv/bin/python scripts/coding_stats.py --quick --level 9

Each chunk is compressed by `karoo.compress` as the plugin would code it (time on axis 0)
and described by `karoo.describe` (its tiles' codings and their payload bytes, without
decoding); edge chunks are coded as they are, without HDF5's padding. For each choice the
table gives the cases (workload x chunking) in which some chunk uses it, and its share of
the mode's coded bytes: tile payloads by their coding, brief chunks (coded whole) whole by
their pipeline, header flags by the chunks that set them.
"""

import argparse
import collections
import datetime
import pathlib
import shlex
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import bench_compression as bench  # noqa: E402
import datasets  # noqa: E402

import karoo  # noqa: E402

MODES = ("fast", "archive")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of UVH5 files (default ../shared/data)")
    parser.add_argument("--level", type=int, default=0, help="karoo's effort level (0: default)")
    parser.add_argument("--quick", action="store_true", help="smaller generated workloads")
    parser.add_argument("--out", help="write the markdown report here (default: stdout)")
    return parser.parse_args()


class Tally:
    """One mode's choices: per kind ("coder", ...) and name, the cases using it and its bytes."""

    def __init__(self):
        self.cases = collections.defaultdict(set)
        self.bytes = collections.Counter()
        self.total_bytes = 0
        self.case_count = 0

    def add(self, case, kind, name, nbytes):
        self.cases[kind, name].add(case)
        self.bytes[kind, name] += nbytes

    def chunk(self, case, info):
        """Adds one chunk's description."""
        self.add(case, "chunk", f"version {info['format_version']}", info["encoded_size"])
        if info["mode"] is None:
            pipeline = info["pipeline"]
            self.add(case, "pipeline", pipeline, info["encoded_size"])
            self.total_bytes += info["encoded_size"]
            return
        flags = [name for name in ("scaled_integers", "narrowed_float64", "planar_components") if info[name]]
        if info["shifted_bits"]:
            flags.append("shifted")
        if info["stored"]:
            flags.append("stored")
        for flag in flags:
            self.add(case, "flag", flag, info["encoded_size"])
        for coding, nbytes in info["coding_bytes"].items():
            predictor, map_, coder = coding.split("/")
            spatial = predictor.endswith("+spatial")
            self.add(case, "predictor", predictor.removesuffix("+spatial"), nbytes)
            self.add(case, "map", map_, nbytes)
            self.add(case, "coder", coder, nbytes)
            if spatial:
                self.add(case, "flag", "spatial first row", nbytes)
            self.total_bytes += nbytes


def measure(data_dir, quick, level):
    """{mode: Tally} over every case of the compression table."""
    tallies = {mode: Tally() for mode in MODES}
    for name, data in bench.workloads(data_dir, quick):
        for label, chunks in bench.layouts(name, data.shape):
            case = f"{name}, {label}"
            bench.progress(f"{case}: {data.dtype} {data.shape} in chunks of {chunks}")
            for mode in MODES:
                tally = tallies[mode]
                tally.case_count += 1
                for index in bench.chunk_slices(data.shape, chunks):
                    chunk = karoo.compress(data[index], mode=mode, level=level)
                    tally.chunk(case, karoo.describe(chunk))
    return tallies


def share(part, whole):
    return f"{100 * part / whole:.2f}%" if whole else "-"


def report(emit, tallies, known):
    """One table per kind: every name the format defines, with its use in each mode."""
    for kind, title, names in known:
        emit(f"## {title}")
        emit()
        emit("| " + " | ".join([kind] + [f"{m}: cases, bytes" for m in MODES]) + " |")
        emit("|---" * (1 + len(MODES)) + "|")
        seen = {name for t in tallies.values() for (k, name) in t.cases if k == kind}
        for name in list(names) + sorted(seen - set(names)):
            cells = []
            for mode in MODES:
                t = tallies[mode]
                cases = len(t.cases.get((kind, name), ()))
                if cases == 0:
                    cells.append("never")
                    continue
                cells.append(f"{cases} of {t.case_count}, {share(t.bytes[kind, name], t.total_bytes)}")
            emit(f"| {name} | " + " | ".join(cells) + " |")
        emit()
    never = [(kind, name) for kind, _, names in known if kind in ("coder", "predictor", "map")
             for name in names if all((kind, name) not in t.cases for t in tallies.values())]
    emit("Never chosen in either mode: " + (", ".join(f"{k} {n}" for k, n in never) or "none") + ".")
    emit()


def main():
    args = parse_args()
    data_dir = pathlib.Path(args.data) if args.data else bench.default_data_dir()
    tallies = measure(data_dir, args.quick, args.level)
    known = [
        ("coder", "Coders (per tile)", [n for n in karoo.CODERS if n != "auto"]),
        ("predictor", "Predictors (per tile)", [n for n in karoo.PREDICTORS if n != "auto"]),
        ("map", "Residual maps (per tile)", [n for n in karoo.RESIDUAL_MAPS if n != "auto"]),
        ("pipeline", "Whole-chunk pipelines (brief chunks)", []),
        ("flag", "Header flags and the spatial first row", []),
        ("chunk", "Format versions written", []),
    ]
    lines = []

    def emit(line=""):
        lines.append(line)

    command = "python scripts/coding_stats.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    commit = bench.git(REPO, "rev-parse", "HEAD") or "not in a git checkout"
    if bench.git(REPO, "status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    emit("# Coding statistics")
    emit()
    emit(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    emit(f"- commit: {commit}")
    emit(f"- machine: {bench.machine()}")
    emit(f"- command: `{command.strip()}`")
    emit()
    emit(f"{len(datasets.uvh5_files(data_dir))} UVH5 files and the generated workloads of "
         "docs/compression.md, each chunking a case; level "
         f"{args.level or 'default'}. Each cell: the cases in which some chunk uses it, and its share "
         "of the mode's coded bytes (tile payloads by coding, brief chunks whole, flags by the "
         "chunks that set them).")
    emit()
    report(emit, tallies, known)
    text = "\n".join(lines) + "\n"
    if args.out:
        pathlib.Path(args.out).write_text(text)
        bench.progress(f"wrote {args.out}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
