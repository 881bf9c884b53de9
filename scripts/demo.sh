#!/usr/bin/env bash
# make demo: trace the bundled example, show the trace, an analysis and the
# summary, and write an HTML report.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
rt="$build/src/cli/ringtrace"
out=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-demo.XXXXXX")
trace=$out/trace

echo "== ringtrace record -o $trace -- examples/demo 50"
"$rt" record --embedded -o "$trace" -- "$build/examples/demo" 50
echo
echo "== ringtrace view $trace (first 20 events)"
"$rt" view "$trace" > "$out/trace.txt"
head -n 20 "$out/trace.txt"
echo "... ($(wc -l < "$out/trace.txt") events in all; babeltrace2 reads $(babeltrace2 "$trace" | wc -l))"
echo
echo "== ringtrace analyze --durations --pair http:request_start,http:request_done --key id --top 3"
"$rt" analyze --durations --no-auto-pairs --pair http:request_start,http:request_done \
	--key id --top 3 "$trace"
echo
echo "== ringtrace summary $trace"
"$rt" summary "$trace"
echo
"$rt" report "$trace" -o "$out/report.html"
echo "The trace stays in $trace; its HTML report is $out/report.html"
cd "$root"
