#!/usr/bin/env bash
# make demo: trace the bundled example, show the trace and its summary.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-demo.XXXXXX")
trace=$out/trace

echo "== ringtrace record -o $trace -- examples/demo 50"
"$build/src/cli/ringtrace" record -o "$trace" -- "$build/examples/demo" 50
echo
echo "== the trace, as babeltrace2 prints it (first 25 events)"
babeltrace2 "$trace" > "$out/trace.txt"
head -n 25 "$out/trace.txt"
echo "... ($(wc -l < "$out/trace.txt") lines in all)"
echo
echo "== ringtrace summary $trace"
"$build/src/cli/ringtrace" summary "$trace"
echo
echo "The trace stays in $trace"
cd "$root"
