#!/usr/bin/env bash
# One-time set-up on a fresh Debian machine: system packages, a Python venv, and a
# release build of the karoo plugin (another cargo profile with KAROO_CARGO_PROFILE).
# Safe to re-run: every step is skipped when done.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# openmpi-bin and python3-h5py-mpi: the parallel HDF5 (mpirun) test of the Python package.
# gcc-aarch64-linux-gnu: the aarch64 portability check (scripts/test.sh) compiles zstd's C sources.
apt_pkgs=(libhdf5-dev hdf5-tools pkg-config python3-venv openmpi-bin python3-h5py-mpi gcc-aarch64-linux-gnu)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
  exit 1
fi

# The portability check builds the codec and the plugin for aarch64 too.
if command -v rustup >/dev/null 2>&1 \
  && ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  echo "setup: adding the aarch64-unknown-linux-gnu Rust target"
  rustup target add aarch64-unknown-linux-gnu
fi

VENV=.venv
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating Python venv in $VENV"
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import h5py, hdf5plugin, numpy, pytest, matplotlib, netCDF4, h5netcdf, \
    pyuvdata, zarr, numcodecs, xarray, dask, distributed, click, tqdm, xradio, casacore" >/dev/null 2>&1; then
  echo "setup: installing Python packages"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -r scripts/requirements.txt
fi

# KAROO_CARGO_PROFILE picks another cargo profile (scripts/test.sh: the tests' `checked`),
# as setup.py does for `pip install .`.
profile="${KAROO_CARGO_PROFILE:-release}"
echo "setup: building the plugin ($profile)"
cargo build --profile "$profile" -q -p h5karoo
