#!/usr/bin/env bash
# bench/analyze_kernel.sh - how fast, and in how much memory, `ringtrace
# analyze` runs its kernel analyses on a large kernel trace
# (docs/performance.md, "Kernel analyses").
#
#   bench/analyze_kernel.sh BUILD_DIR [TRACE_DIR | SECONDS] [REPS]
#
# Without a TRACE_DIR, records one (root): bench/kload's getppid loop for
# SECONDS (default 20) under `ringtrace record -k` with sched_switch,
# the irq and softirq events, the block requests and every system call
# (about 500,000 events per second kept on this 2-CPU machine when it is
# quiet, 10 million in 20 s; far fewer under load), in TMPDIR (default
# /tmp), removed at the end. Then times,
# REPS times (default 3) each:
#
#   ringtrace analyze --syscalls DIR
#   ringtrace analyze --syscalls --io --cpu --irq DIR
#
# (text output to /dev/null) with /usr/bin/time, and prints a Markdown
# table of the medians: wall and CPU seconds, million events per CPU
# second, and the peak of the analysis' own memory (RssAnon, sampled
# every 20 ms from /proc: the reader maps the trace's files, whose pages
# count in the total resident size, /usr/bin/time's maximum, also shown).
# Timing decides nothing: the script fails only when a program fails.
set -euo pipefail
shopt -s inherit_errexit

die() { echo "analyze_kernel: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: bench/analyze_kernel.sh BUILD_DIR [TRACE_DIR | SECONDS] [REPS]"
BUILD=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1 (run make first)"
RINGTRACE=$BUILD/src/cli/ringtrace
REPS=${3:-3}
[ -x "$RINGTRACE" ] || die "no $RINGTRACE (run make first)"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian package time)"

TMP=
TMPOUT=$(mktemp -d "${TMPDIR:-/tmp}/analyze_kernel_out.XXXXXX")
cleanup() { rm -rf "$TMPOUT"; [ -z "$TMP" ] || rm -rf "$TMP"; }
trap cleanup EXIT
if [ -n "${2:-}" ] && [ -d "$2" ]; then
	TRACE=$2
else
	SECONDS_=${2:-20}
	[ "$(id -u)" = 0 ] || die "recording a kernel trace needs root (or give a TRACE_DIR)"
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/analyze_kernel.XXXXXX")
	TRACE=$TMP/trace
	echo "recording ${SECONDS_} s of bench/kload syscall into $TRACE ..." >&2
	"$RINGTRACE" record -q -o "$TRACE" --subbuf-size 1M --num-subbuf 8 \
		-k sched_switch,irq_handler_entry,irq_handler_exit,softirq_entry,softirq_exit,softirq_raise,block_rq_issue,block_rq_complete \
		--syscall all -- "$BUILD/bench/kload" syscall $((SECONDS_ * 1000)) > /dev/null
fi
EVENTS=$("$RINGTRACE" analyze --format=json --syscalls "$TRACE" |
	/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')
SIZE=$(du -sh "$TRACE" | cut -f1)

# One run: "wall user+sys maxrss_kb peak_rssanon_kb".
run() {
	local out=$TMPOUT/time pid child anon peak=0
	/usr/bin/time -o "$out" -f "%e %U %S %M" "$RINGTRACE" analyze "$@" "$TRACE" > /dev/null &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		child=$(pgrep -P "$pid" | head -1 || true)
		if [ -n "$child" ]; then
			anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$child/status" 2>/dev/null || true)
			[ -z "$anon" ] || [ "$anon" -le "$peak" ] || peak=$anon
		fi
		sleep 0.02
	done
	wait "$pid"
	awk -v p="$peak" '{ printf "%s %.2f %s %s\n", $1, $2 + $3, $4, p }' "$out"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "trace: $EVENTS kernel events ($SIZE), $REPS runs each, medians"
echo
echo "| analyses | wall s | CPU s | M events / CPU s | own memory (RssAnon) MiB | max RSS (trace pages too) MiB |"
echo "|---|---:|---:|---:|---:|---:|"
for opts in "--syscalls" "--syscalls --io --cpu --irq"; do
	rows=()
	for _ in $(seq "$REPS"); do
		# shellcheck disable=SC2086
		rows+=("$(run $opts)")
	done
	wall=$(printf '%s\n' "${rows[@]}" | cut -d' ' -f1 | median)
	cpu=$(printf '%s\n' "${rows[@]}" | cut -d' ' -f2 | median)
	rss=$(printf '%s\n' "${rows[@]}" | cut -d' ' -f3 | median)
	anon=$(printf '%s\n' "${rows[@]}" | cut -d' ' -f4 | median)
	awk -v o="$opts" -v w="$wall" -v c="$cpu" -v r="$rss" -v a="$anon" -v n="$EVENTS" \
		'BEGIN { printf "| `%s` | %.1f | %.1f | %.2f | %.1f | %.0f |\n", o, w, c, n / 1e6 / c, a / 1024, r / 1024 }'
done
