#!/usr/bin/env bash
# All tests: set up (first run only), lint, docs, the aarch64 build, the Rust tests (codec,
# plugin, Debian HDF5 1.10 via hdf5-sys) optimised as in release but with debug assertions
# and overflow checks, again on the portable and the AVX2 paths, then the tests through
# h5py (HDF5 2.0) and the HDF5 1.10 tools, and the Python package (pip install ., h5py,
# netCDF4, pyuvdata, Zarr, Dask, mpirun), and the demo.
#
# One build serves every test: the plugin the h5py, HDF5-tool and Python tests load is the
# one of the Rust tests' profile (`checked`: release optimisation, debug assertions,
# overflow checks), built from the same compiled crates; the shipped release build (one
# codegen unit) is scripts/setup.sh's and the demo's. Each step's time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

export KAROO_CARGO_PROFILE=checked
PLUGIN_DIR="$PWD/target/$KAROO_CARGO_PROFILE"

step_names=()
step_seconds=()
started=$SECONDS
report() {
  local status=$?
  echo "== step times (s)"
  for i in "${!step_names[@]}"; do
    printf '%6d  %s\n' "${step_seconds[$i]}" "${step_names[$i]}"
  done
  printf '%6d  total\n' $((SECONDS - started))
  return $status
}
trap report EXIT

# Runs "$@" as the step named $1, timed.
step() {
  local name=$1
  shift
  echo "== $name"
  local t0=$SECONDS
  "$@"
  step_names+=("$name")
  step_seconds+=($((SECONDS - t0)))
}

lint() {
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets -q -- -D warnings
}

docs() {
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
}

aarch64() {
  cargo check --target aarch64-unknown-linux-gnu -q -p karoo -p h5karoo
}

rust_tests() {
  cargo test --workspace --profile checked -q
}

# The unit and integration tests again on each narrower path (the doc tests exercise the
# API, not the kernels: rustdoc would compile them anew each time).
isa_tests() {
  KAROO_ISA=portable cargo test --profile checked -q -p karoo --tests
  KAROO_ISA=avx2 cargo test --profile checked -q -p karoo --tests
}

no_libhdf5_link() {
  if readelf -d "$PLUGIN_DIR/libh5karoo.so" | grep -i 'NEEDED.*hdf5'; then
    echo "libh5karoo.so must not link libhdf5" >&2
    return 1
  fi
}

h5py_tests() {
  HDF5_PLUGIN_PATH="$PLUGIN_DIR" .venv/bin/python -m pytest -q h5tests/python "$@"
}

python_package() {
  .venv/bin/pip install -q .
  env -u HDF5_PLUGIN_PATH .venv/bin/python -m pytest -q -rs python/tests "$@"
}

demo() {
  HDF5_PLUGIN_PATH="$PLUGIN_DIR" .venv/bin/python scripts/demo.py --ntime 16 --nchan 512 --repeats 1 >/dev/null
}

step "set-up (scripts/setup.sh)" scripts/setup.sh
step "cargo fmt / clippy" lint
step "cargo doc (warnings denied)" docs
step "cargo check for aarch64 (no x86 code there)" aarch64
step "cargo test (checked profile)" rust_tests
step "the codec's tests on the portable and the AVX2 paths (KAROO_ISA)" isa_tests
step "readelf: no link-time libhdf5" no_libhdf5_link
step "pytest (h5py + HDF5 tools)" h5py_tests "$@"
step "Python package: pip install ., then its tests without HDF5_PLUGIN_PATH" python_package "$@"
step "demo (small)" demo
echo "all tests passed"
