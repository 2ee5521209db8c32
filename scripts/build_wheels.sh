#!/usr/bin/env bash
# Portable wheels in dist/: manylinux_2_17 (glibc 2.17 or newer: every Linux of the last
# decade) for x86_64 and aarch64, or for the architectures given as arguments.
#
# The plugin is cross-compiled by cargo-zigbuild (zig as the C compiler and linker, against
# the symbols of glibc 2.17), setup.py packs the library it built, and auditwheel checks
# that each wheel holds to its manylinux tag. The wheels install with
# `pip install dist/karoo-*.whl`, no Rust needed. Needs Rust (rustup) and Python 3; the
# build tools go into a venv of their own under target/.
set -euo pipefail
cd "$(dirname "$0")/.."

GLIBC=2.17
arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(x86_64 aarch64)

venv=target/wheel-tools
if [ ! -x "$venv/bin/cargo-zigbuild" ]; then
  echo "build_wheels: installing cargo-zigbuild, ziglang, auditwheel and build into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "cargo-zigbuild>=0.19" "ziglang>=0.13" "auditwheel>=6" "build>=1"
fi
export PATH="$PWD/$venv/bin:$PATH"

mkdir -p dist
for arch in "${arches[@]}"; do
  target="$arch-unknown-linux-gnu"
  platform="manylinux_${GLIBC/./_}_$arch"
  if command -v rustup >/dev/null 2>&1; then
    rustup target list --installed | grep -qx "$target" || rustup target add "$target"
  fi
  echo "build_wheels: $platform: cargo zigbuild (release)"
  cargo zigbuild --release --locked -p h5karoo --target "$target.$GLIBC"
  library="$PWD/target/$target/release/libh5karoo.so"
  out=$(mktemp -d)
  KAROO_PREBUILT_LIBRARY="$library" KAROO_WHEEL_PLATFORM="$platform" \
    python -m build --wheel --outdir "$out" . >/dev/null
  wheel=$(ls "$out"/karoo-*.whl)
  echo "build_wheels: $(basename "$wheel"): auditwheel show"
  report=$(auditwheel show "$wheel")
  echo "$report"
  # auditwheel wraps its sentences: compare them with the line breaks as spaces.
  if ! tr -s ' \n' '  ' <<<"$report" | grep -q "consistent with the following platform tag: \"$platform\""; then
    echo "build_wheels: $wheel does not hold to $platform" >&2
    exit 1
  fi
  mv "$wheel" dist/
  rm -rf "$out"
done
ls -l dist/karoo-*.whl
