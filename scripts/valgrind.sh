#!/usr/bin/env bash
# The tests through Debian's HDF5 1.10 (h5tests, which load libh5karoo.so as a plugin)
# under valgrind memcheck; any memory error fails the run (exit 99).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not installed (apt install valgrind)" >&2; exit 1; }
cargo test --release -q -p h5tests --no-run
bin=$(ls -t target/release/deps/debian_hdf5-* | grep -v '\.d$' | head -1)
valgrind --error-exitcode=99 --leak-check=no -q "$bin" --test-threads=1
