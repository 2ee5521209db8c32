#!/usr/bin/env bash
# The main job: set up (first run only), then run the demo on a generated observation.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
