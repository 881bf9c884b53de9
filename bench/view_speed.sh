#!/usr/bin/env bash
# bench/view_speed.sh - how fast `ringtrace view` turns a trace into text
# and JSON, next to babeltrace2's text conversion (docs/performance.md,
# "Reading traces").
#
#   bench/view_speed.sh BUILD_DIR [EVENTS [REPS]]
#
# Records EVENTS (default 4000000) events of tests/integration/burst (one
# thread, two integer fields each) with `ringtrace record`, buffers large
# enough for none to be discarded (the events actually in the trace are
# counted and used), then times, REPS times (default 3) interleaved:
#
#   babeltrace2 DIR > /dev/null
#   ringtrace view DIR > /dev/null
#   ringtrace view --format=json DIR > /dev/null
#
# and prints a Markdown table of the medians: seconds, events/s, and the
# speed relative to babeltrace2. The trace goes to TMPDIR (default /tmp)
# and is removed at the end. Timing decides nothing: the script fails only
# when a program fails.
set -euo pipefail
shopt -s inherit_errexit

die() { echo "view_speed: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: bench/view_speed.sh BUILD_DIR [EVENTS [REPS]]"
BUILD=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1 (run make first)"
EVENTS=${2:-4000000}
REPS=${3:-3}
RINGTRACE=$BUILD/src/cli/ringtrace
BURST=$BUILD/tests/integration/burst
for p in "$RINGTRACE" "$BURST"; do
	[ -x "$p" ] || die "$p is missing (run make first)"
done
command -v babeltrace2 >/dev/null || die "babeltrace2 is not installed (scripts/install-deps.sh)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rt-view-speed.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
TRACE=$WORK/trace

"$RINGTRACE" record -q -o "$TRACE" --subbuf-size 1M --num-subbuf 64 --read-timer 1 \
	-- "$BURST" "$EVENTS" return
RECORDED=$("$RINGTRACE" view --stats "$TRACE" | awk '$1 == "events:" { print $2 }')
[ -n "$RECORDED" ] && [ "$RECORDED" -gt 0 ] || die "no events recorded"
SIZE=$(du -sh "$TRACE" | cut -f1)

# Nanoseconds that "$@" takes, its output thrown away (its messages, such
# as babeltrace2's discarded-events warnings, kept in $WORK/stderr).
elapsed() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" > /dev/null 2>> "$WORK/stderr" || { cat "$WORK/stderr" >&2; die "$1 failed"; }
	t1=$(date +%s%N)
	echo $(( t1 - t0 ))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -a T_BT T_TEXT T_JSON
for ((r = 0; r < REPS; r++)); do
	T_BT+=("$(elapsed babeltrace2 "$TRACE")")
	T_TEXT+=("$(elapsed "$RINGTRACE" view "$TRACE")")
	T_JSON+=("$(elapsed "$RINGTRACE" view --format=json "$TRACE")")
done
M_BT=$(printf '%s\n' "${T_BT[@]}" | median)
M_TEXT=$(printf '%s\n' "${T_TEXT[@]}" | median)
M_JSON=$(printf '%s\n' "${T_JSON[@]}" | median)

row() {	# name median_ns
	awk -v name="$1" -v ns="$2" -v bt="$M_BT" -v n="$RECORDED" 'BEGIN {
		printf "| %-36s | %8.3f | %12.0f | %6.1fx |\n",
			name, ns / 1e9, n / (ns / 1e9), bt / ns }'
}

echo "Trace: $RECORDED events (burst), $SIZE; median of $REPS interleaved runs, output to /dev/null."
echo
echo "| command                              |   time s |     events/s | vs bt2 |"
echo "|--------------------------------------|---------:|-------------:|-------:|"
row "babeltrace2 DIR" "$M_BT"
row "ringtrace view DIR" "$M_TEXT"
row "ringtrace view --format=json DIR" "$M_JSON"
