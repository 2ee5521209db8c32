#!/usr/bin/env bash
# Runs each cargo-fuzz target for a fixed time (default 60 s each) and prints the
# executions and any crash. Needs cargo-fuzz (installed here on first use) and a
# toolchain that accepts -Z flags (nightly, or stable with RUSTC_BOOTSTRAP=1).
# Usage: scripts/fuzz.sh [seconds per target]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
command -v cargo-fuzz >/dev/null 2>&1 || cargo install -q cargo-fuzz
export RUSTC_BOOTSTRAP=1
for target in decompress corrupt roundtrip cd_values scale_section; do
  echo "== fuzz $target for ${seconds}s"
  log="fuzz/$target.log"
  if cargo fuzz run --release "$target" -- -max_total_time="$seconds" -rss_limit_mb=2048 >"$log" 2>&1; then
    grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$log" | tail -1
  else
    echo "crash or error in $target: see $log and fuzz/artifacts/$target/" >&2
    tail -20 "$log" >&2
    exit 1
  fi
done
