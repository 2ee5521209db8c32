#!/usr/bin/env bash
# Every float32 bit pattern through every predictor and residual map (release mode,
# all cores; a few minutes per predictor on 2 cores). Set KAROO_EXHAUSTIVE_SHARE=n to
# cover every n-th block of patterns only, KAROO_EXHAUSTIVE_PREDICTORS=1,13 to pick
# predictors by id, KAROO_EXHAUSTIVE_CODER=7 (or 4) to code with fast mode's patched
# packing (or archive mode's context rANS) instead of bit planes.
set -euo pipefail
cd "$(dirname "$0")/.."
time cargo test --release --test exhaustive -- --ignored --nocapture
