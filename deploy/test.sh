#!/usr/bin/env bash
# The test command (CI runs exactly this): set up, build, run every test. Tests labelled
# gpu are reported as skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
ctest --test-dir build --output-on-failure -j2 "$@"
