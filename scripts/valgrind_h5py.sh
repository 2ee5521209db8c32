#!/usr/bin/env bash
# The h5py tests (HDF5 2.0 loading libh5karoo.so) under valgrind memcheck. Python,
# numpy and HDF5 themselves report errors valgrind cannot tell from bugs, so the run
# counts only errors with a frame in the plugin (h5karoo / karoo) and fails on any.
# Slow (tens of minutes on 2 cores); pass pytest arguments to narrow it, e.g.
#   scripts/valgrind_h5py.sh h5tests/python/test_h5py.py -k archive
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not installed (apt install valgrind)" >&2; exit 1; }
cargo build --release -q -p h5karoo
log=$(mktemp)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(h5tests/python/test_h5py.py)
PYTHONMALLOC=malloc HDF5_PLUGIN_PATH="$PWD/target/release" \
  valgrind --log-file="$log" --num-callers=40 --leak-check=no \
  .venv/bin/python -m pytest -q -p no:cacheprovider "${targets[@]}" || true
total=$(grep -c "^==[0-9]*== [A-Z].*\(Invalid\|uninitialised\|Mismatched\|overlap\)" "$log" || true)
# An error block runs from its headline to the next blank line; keep those naming karoo.
ours=$(awk '/^==[0-9]+== (Invalid|Conditional|Use of uninitialised|Mismatched|Source and destination overlap)/{block=$0; keep=0; next}
            block!="" && /^==[0-9]+== *$/{ if (keep) n++; block=""; next }
            block!="" { block=block"\n"$0; if ($0 ~ /h5karoo|karoo::/) keep=1 }
            END{print n+0}' "$log")
echo "valgrind: $total error reports in all, $ours with a frame in the karoo plugin (log: $log)"
[ "$ours" -eq 0 ]
