#!/usr/bin/env bash
# make check: run every test (unit, stress, integration) with ctest.
set -euo pipefail
build=${1:-build}
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 900
