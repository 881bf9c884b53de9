#!/usr/bin/env bash
# bench/view_speed.sh - how fast `ringtrace view` turns a trace into text
# and JSON, next to babeltrace2's text conversion (docs/performance.md,
# "Reading traces").
#
#   bench/view_speed.sh BUILD_DIR [EVENTS [REPS [WORKLOAD]]]
#
# Records about EVENTS (default 4000000) events of WORKLOAD with
# `ringtrace record`: burst (the default: tests/integration/burst, one
# thread, two integer fields each) or demo (examples/demo: several
# threads, strings, a double, a sequence and an array), buffers large
# enough for none to be discarded (the events actually in the trace are
# counted and used), then times, REPS times (default 3) interleaved:
#
#   babeltrace2 DIR > /dev/null
#   ringtrace view DIR > /dev/null
#   ringtrace view --format=json DIR > /dev/null
#
# and prints a Markdown table of the medians: wall-clock and CPU seconds,
# events per CPU second, and the speed relative to babeltrace2. The trace goes to TMPDIR (default /tmp)
# and is removed at the end. Timing decides nothing: the script fails only
# when a program fails.
set -euo pipefail
shopt -s inherit_errexit

die() { echo "view_speed: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: bench/view_speed.sh BUILD_DIR [EVENTS [REPS [burst|demo]]]"
BUILD=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1 (run make first)"
EVENTS=${2:-4000000}
REPS=${3:-3}
WORKLOAD=${4:-burst}
RINGTRACE=$BUILD/src/cli/ringtrace
case $WORKLOAD in
burst)	PROGRAM=("$BUILD/tests/integration/burst" "$EVENTS" return) ;;
# about 6 events per request
demo)	PROGRAM=("$BUILD/examples/demo" "$(( (EVENTS + 5) / 6 ))") ;;
*)	die "unknown workload $WORKLOAD (burst or demo)" ;;
esac
for p in "$RINGTRACE" "${PROGRAM[0]}" /usr/bin/time; do
	[ -x "$p" ] || die "$p is missing (run make first)"
done
command -v babeltrace2 >/dev/null || die "babeltrace2 is not installed (scripts/install-deps.sh)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rt-view-speed.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
TRACE=$WORK/trace

"$RINGTRACE" record -q -o "$TRACE" --subbuf-size 1M --num-subbuf 64 --read-timer 1 \
	-- "${PROGRAM[@]}" > /dev/null
RECORDED=$("$RINGTRACE" view --stats "$TRACE" | awk '$1 == "events:" { print $2 }')
[ -n "$RECORDED" ] && [ "$RECORDED" -gt 0 ] || die "no events recorded"
SIZE=$(du -sh "$TRACE" | cut -f1)

# "WALL CPU" seconds "$@" takes (CPU = user + system), its output thrown
# away (its messages, such as babeltrace2's discarded-events warnings, kept
# in $WORK/stderr). On a shared machine the CPU time is the steadier figure.
measure() {
	/usr/bin/time -f "%e %U %S" -o "$WORK/time" "$@" > /dev/null 2>> "$WORK/stderr" ||
		{ cat "$WORK/stderr" >&2; die "$1 failed"; }
	awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' "$WORK/time"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -a R_BT R_TEXT R_JSON
for ((r = 0; r < REPS; r++)); do
	R_BT+=("$(measure babeltrace2 "$TRACE")")
	R_TEXT+=("$(measure "$RINGTRACE" view "$TRACE")")
	R_JSON+=("$(measure "$RINGTRACE" view --format=json "$TRACE")")
done
# col N of the runs given: their median
med() { local col=$1; shift; printf '%s\n' "$@" | awk -v c="$col" '{ print $c }' | median; }
BT_WALL=$(med 1 "${R_BT[@]}")
BT_CPU=$(med 2 "${R_BT[@]}")

row() {	# name wall cpu
	awk -v name="$1" -v w="$2" -v c="$3" -v bw="$BT_WALL" -v bc="$BT_CPU" -v n="$RECORDED" 'BEGIN {
		# /usr/bin/time has 10 ms steps: no division by 0 on tiny runs
		if (w < 0.01) w = 0.01
		if (c < 0.01) c = 0.01
		if (bw < 0.01) bw = 0.01
		if (bc < 0.01) bc = 0.01
		printf "| %-34s | %7.2f | %6.2f | %12.0f | %10.1fx | %9.1fx |\n",
			name, w, c, n / c, bw / w, bc / c }'
}

echo "Trace: $RECORDED events ($WORKLOAD), $SIZE; median of $REPS interleaved runs, output to /dev/null; CPU = user + system."
echo
echo "| command                            |  wall s |  CPU s | events/CPU s | wall vs bt2 | CPU vs bt2 |"
echo "|------------------------------------|--------:|-------:|-------------:|------------:|-----------:|"
row "babeltrace2 DIR" "$BT_WALL" "$BT_CPU"
row "ringtrace view DIR" "$(med 1 "${R_TEXT[@]}")" "$(med 2 "${R_TEXT[@]}")"
row "ringtrace view --format=json DIR" "$(med 1 "${R_JSON[@]}")" "$(med 2 "${R_JSON[@]}")"
