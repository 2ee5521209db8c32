"""Markdown tables of `cargo bench --bench codec` (and `--bench coders`) results:
throughput of each variant or coder (GB/s of raw data, criterion's median) and as a
fraction of the memcpy measured in the same run.

    cargo bench --bench codec -- --quick && cargo bench --bench coders -- --quick
    python3 scripts/crit_table.py [--doc] [target/criterion]

--doc also writes the tables, labelled with date, commit, machine and command, into the
"codec" section of docs/benchmarks.md."""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_doc  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("root", nargs="?", default="target/criterion")
parser.add_argument("--doc", action="store_true")
args = parser.parse_args()
root = pathlib.Path(args.root)
results = {}
for bench in root.glob("*/*/new/benchmark.json"):
    info = json.loads(bench.read_text())
    estimates = json.loads((bench.parent / "estimates.json").read_text())
    throughput = info.get("throughput") or {}
    size = throughput.get("Bytes") or throughput.get("BytesDecimal")
    if size:
        results[(info["group_id"], info["function_id"])] = size / estimates["median"]["point_estimate"]

COMMAND = ("cargo bench --bench codec -- --quick && cargo bench --bench coders -- --quick && "
           "python3 scripts/crit_table.py")
with bench_doc.capture("codec", COMMAND, enabled=args.doc):
    print("GB/s of raw data (criterion's median), and in brackets the fraction of the memcpy measured in "
          "the same run; compare within one table only.")
    for group in sorted({g for g, _ in results}):
        memcpy = results.get((group, "memcpy"))
        print(f"\n### {group} (memcpy {memcpy:.1f} GB/s)\n")
        if (group, "encode") in results:
            # `cargo bench --bench coders`: one coder on one word size.
            print("| encode | decode |")
            print("|---|---|")
            cells = [results.get((group, op)) for op in ("encode", "decode")]
            print("| " + " | ".join(f"{r:.2f} ({r / memcpy:.3f})" if r else "-" for r in cells) + " |")
            continue
        print("| variant | compress 1 thread | compress 2 threads | decompress 1 thread | decompress 2 threads |")
        print("|---|---|---|---|---|")
        variants = sorted({f.split("/")[0] for g, f in results if g == group and "+" in f},
                          key=lambda v: (not v.startswith("auto+auto"), v))
        for v in variants:
            cells = []
            for op in ("compress/1thread", "compress/allcores", "decompress/1thread", "decompress/allcores"):
                r = results.get((group, f"{v}/{op}"))
                cells.append(f"{r:.2f} ({r / memcpy:.3f})" if r else "-")
            print(f"| {v} | " + " | ".join(cells) + " |")
