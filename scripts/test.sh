#!/usr/bin/env bash
# All tests: set up (first run only), lint, docs, the aarch64 build, the Rust tests (codec,
# plugin, Debian HDF5 1.10 via hdf5-sys) optimised as in release but with debug assertions
# and overflow checks, again on the portable and the AVX2 paths, then the tests through
# h5py (HDF5 2.0) and the HDF5 1.10 tools with the release plugin, and the Python package
# (pip install ., h5py, netCDF4, pyuvdata, Zarr, Dask, mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== cargo fmt / clippy"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -q -- -D warnings
echo "== cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
echo "== cargo check for aarch64 (no x86 code there)"
cargo check --target aarch64-unknown-linux-gnu -q -p karoo -p h5karoo
# One optimised build of the tests (the release profile plus debug assertions and
# overflow checks): a second build without the checks would double the run's build time.
echo "== cargo test (release optimisation, debug assertions, overflow checks)"
cargo test --workspace --profile checked -q
echo "== the codec's tests on the portable and the AVX2 paths (KAROO_ISA)"
KAROO_ISA=portable cargo test --profile checked -q -p karoo
KAROO_ISA=avx2 cargo test --profile checked -q -p karoo
echo "== readelf: no link-time libhdf5"
if readelf -d target/release/libh5karoo.so | grep -i 'NEEDED.*hdf5'; then
  echo "libh5karoo.so must not link libhdf5" >&2
  exit 1
fi
echo "== pytest (h5py + HDF5 tools)"
HDF5_PLUGIN_PATH="$PWD/target/release" .venv/bin/python -m pytest -q h5tests/python "$@"
echo "== Python package: pip install ., then its tests without HDF5_PLUGIN_PATH"
.venv/bin/pip install -q .
env -u HDF5_PLUGIN_PATH .venv/bin/python -m pytest -q -rs python/tests "$@"
echo "== demo (small)"
.venv/bin/python scripts/demo.py --ntime 16 --nchan 512 --repeats 1 >/dev/null
echo "all tests passed"
