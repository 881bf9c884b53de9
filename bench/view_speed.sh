#!/usr/bin/env bash
# bench/view_speed.sh - how fast `ringtrace view` turns a trace into text
# and JSON, next to babeltrace2's text conversion, and how fast the
# commands that only count or aggregate go through it (docs/performance.md,
# "Reading traces").
#
#   bench/view_speed.sh BUILD_DIR [EVENTS [REPS [WORKLOAD]]]
#
# Records about EVENTS (default 4000000) events of WORKLOAD with
# `ringtrace record`: burst (the default: tests/integration/burst, one
# thread, two integer fields each) or demo (examples/demo: several
# threads, strings, a double, a sequence and an array), buffers large
# enough for none to be discarded (the events actually in the trace are
# counted and used); or, with WORKLOAD dir:PATH, reads the trace already
# in PATH (any CTF trace our reader reads, an LTTng trace for one; EVENTS
# is then ignored and PATH is left as it is). Then times, REPS times
# (default 3) interleaved:
#
#   babeltrace2 DIR > /dev/null
#   ringtrace view DIR > /dev/null
#   ringtrace view --format=json DIR > /dev/null
#   ringtrace view --stats DIR > /dev/null
#   ringtrace analyze DIR > /dev/null
#   ringtrace summary DIR > /dev/null   (what `record` prints at its end)
#
# (RTBENCH_VIEW_BT2=0: without babeltrace2, whose text conversion takes
# 15 to 30 times as long as the rest) and prints a Markdown table of the
# medians: wall-clock and CPU seconds, events per CPU second, peak memory,
# and the speed relative to babeltrace2. The trace goes to TMPDIR
# (default /tmp) and is removed at the end. Timing decides nothing: the
# script fails only when a program fails.
set -euo pipefail
shopt -s inherit_errexit

die() { echo "view_speed: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: bench/view_speed.sh BUILD_DIR [EVENTS [REPS [burst|demo|dir:PATH]]]"
BUILD=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1 (run make first)"
EVENTS=${2:-4000000}
REPS=${3:-3}
WORKLOAD=${4:-burst}
BT2=${RTBENCH_VIEW_BT2:-1}
RINGTRACE=$BUILD/src/cli/ringtrace
TRACE=
case $WORKLOAD in
burst)	PROGRAM=("$BUILD/tests/integration/burst" "$EVENTS" return) ;;
# about 6 events per request
demo)	PROGRAM=("$BUILD/examples/demo" "$(( (EVENTS + 5) / 6 ))") ;;
dir:*)	TRACE=${WORKLOAD#dir:} PROGRAM=(true) WORKLOAD="trace in $(basename "$TRACE")"
	[ -d "$TRACE" ] || die "no trace directory $TRACE" ;;
*)	die "unknown workload $WORKLOAD (burst, demo or dir:PATH)" ;;
esac
for p in "$RINGTRACE" /usr/bin/time; do
	[ -x "$p" ] || die "$p is missing (run make first)"
done
[ -n "$TRACE" ] || [ -x "${PROGRAM[0]}" ] || die "${PROGRAM[0]} is missing (run make first)"
[ "$BT2" = 0 ] || command -v babeltrace2 >/dev/null ||
	die "babeltrace2 is not installed (scripts/install-deps.sh)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rt-view-speed.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
if [ -z "$TRACE" ]; then
	TRACE=$WORK/trace
	"$RINGTRACE" record -q -o "$TRACE" --subbuf-size 1M --num-subbuf 64 --read-timer 1 \
		-- "${PROGRAM[@]}" > /dev/null
fi
RECORDED=$("$RINGTRACE" view --stats "$TRACE" | awk '$1 == "events:" { print $2 }')
[ -n "$RECORDED" ] && [ "$RECORDED" -gt 0 ] || die "no events recorded"
SIZE=$(du -sh "$TRACE" | cut -f1)

# "WALL CPU MAXRSS_KIB" "$@" takes (CPU = user + system), its output thrown
# away (its messages, such as babeltrace2's discarded-events warnings, kept
# in $WORK/stderr). On a shared machine the CPU time is the steadier figure.
measure() {
	/usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$@" > /dev/null 2>> "$WORK/stderr" ||
		{ cat "$WORK/stderr" >&2; die "$1 failed"; }
	awk '{ printf "%.2f %.2f %d\n", $1, $2 + $3, $4 }' "$WORK/time"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -a R_BT R_TEXT R_JSON R_STATS R_AN R_SUM
for ((r = 0; r < REPS; r++)); do
	[ "$BT2" = 0 ] || R_BT+=("$(measure babeltrace2 "$TRACE")")
	R_TEXT+=("$(measure "$RINGTRACE" view "$TRACE")")
	R_JSON+=("$(measure "$RINGTRACE" view --format=json "$TRACE")")
	R_STATS+=("$(measure "$RINGTRACE" view --stats "$TRACE")")
	R_AN+=("$(measure "$RINGTRACE" analyze "$TRACE")")
	R_SUM+=("$(measure "$RINGTRACE" summary "$TRACE")")
done
# col N of the runs given: their median
med() { local col=$1; shift; printf '%s\n' "$@" | awk -v c="$col" '{ print $c }' | median; }
BT_WALL=0 BT_CPU=0
if [ "$BT2" != 0 ]; then
	BT_WALL=$(med 1 "${R_BT[@]}")
	BT_CPU=$(med 2 "${R_BT[@]}")
fi

row() {	# name runs...
	local name=$1
	shift
	awk -v name="$name" -v w="$(med 1 "$@")" -v c="$(med 2 "$@")" -v m="$(med 3 "$@")" \
		-v bw="$BT_WALL" -v bc="$BT_CPU" -v n="$RECORDED" 'BEGIN {
		# /usr/bin/time has 10 ms steps: no division by 0 on tiny runs
		if (w < 0.01) w = 0.01
		if (c < 0.01) c = 0.01
		vs = bc > 0 ? sprintf("%9.1fx | %9.1fx", bw / w, bc / c) : sprintf("%10s | %10s", "-", "-")
		printf "| %-34s | %7.2f | %6.2f | %12.0f | %7.1f | %s |\n",
			name, w, c, n / c, m / 1024, vs }'
}

echo "Trace: $RECORDED events ($WORKLOAD), $SIZE; median of $REPS interleaved runs, output to /dev/null; CPU = user + system; memory: peak resident set."
echo
echo "| command                            |  wall s |  CPU s | events/CPU s | peak MiB | wall vs bt2 | CPU vs bt2 |"
echo "|------------------------------------|--------:|-------:|-------------:|--------:|------------:|-----------:|"
[ "$BT2" = 0 ] || row "babeltrace2 DIR" "${R_BT[@]}"
row "ringtrace view DIR" "${R_TEXT[@]}"
row "ringtrace view --format=json DIR" "${R_JSON[@]}"
row "ringtrace view --stats DIR" "${R_STATS[@]}"
row "ringtrace analyze DIR" "${R_AN[@]}"
row "ringtrace summary DIR" "${R_SUM[@]}"
