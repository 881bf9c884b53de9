#!/usr/bin/env bash
# bench/kernel.sh - the kernel domain's benchmark (`make bench` runs it
# after bench/run.sh; docs/performance.md, "The kernel domain").
#
#   bench/kernel.sh BUILD_DIR [--quick]
#
# Needs root and tracefs; without them (or without trace-cmd, strace,
# perf) the rows it cannot measure are left out with a note. Two parts,
# every trial repeated and the tracers alternated (A B C A B C ...):
#
#  1. Recording: the same kernel events (sched_switch, sched_waking and
#     the entry and exit of read(2) and write(2)) of the same workload
#     (bench/kload pingpong: threads passing a byte over pipes), with
#     `ringtrace record -k` and `trace-cmd record` (its default, a
#     compressed file, and --compression none), 4 MiB of ftrace buffer per
#     CPU for both, the workload's process tree only; flat out, then paced
#     below the untraced rate, and flat out while a CPU hog runs on every
#     CPU (kind `loaded`: the recorder competes for the CPUs with the
#     workload and the hogs). Events recorded and lost, from the trace
#     (ringtrace summary) and from the instance's per-CPU stats (trace-cmd:
#     `read events`, `overrun` + `dropped events`); where ringtrace's
#     events went (RINGTRACE_KERNEL_STATS=1: per CPU, the pages its reader
#     moved through the backlog because the queue was full, the backlog's
#     peak, the reader's waits on a full backlog, the longest time between
#     two of its reads, and the kernel's overrun and dropped counts); the
#     recorder's CPU time
#     (the CPU time of the recorder's whole process tree, from the shell's
#     `times`, minus the workload's own, which it prints).
#  2. A traced system call: getppid in a loop (bench/kload syscall), ns
#     per call (median of chunks of about 0.2 ms, wall time), untraced, under
#     `ringtrace record --syscall getppid` and `--syscall all` (overwrite
#     mode: every event is written even when the buffer is full),
#     `trace-cmd record` of the same two events, `strace -c -f` and
#     `perf trace -s`.
#
# Writes bench/results/DATE-COMMIT-kernel.md (-quick with --quick) and
# .csv, and prints the tables. Environment: TMPDIR (where traces go),
# RTBENCH_KREPS (repetitions), RTBENCH_KPACED (the paced trials'
# fractions of the untraced rate, "0.3 0.6" in full mode; empty: none),
# RTBENCH_KBASE (another build directory
# whose `ringtrace record -k` is recorded too, as ringtrace-base, in the
# same alternation: a change measured against the code before it).
set -euo pipefail

BENCH_NAME=bench/kernel BENCH_MODES="quick"
. "$(dirname "$0")/common.sh"
bench_args "$@"
KLOAD=$BUILD/bench/kload
RT=$BUILD/src/cli/ringtrace
RTB=
if [ -n "${RTBENCH_KBASE:-}" ]; then
	RTB=$(cd "$RTBENCH_KBASE" 2>/dev/null && pwd)/src/cli/ringtrace
	[ -x "$RTB" ] || die "RTBENCH_KBASE: no ringtrace in $RTBENCH_KBASE"
fi
[ -x "$KLOAD" ] && [ -x "$RT" ] || die "$KLOAD or $RT is missing (make build; cmake --build BUILD --target bench_programs)"

case $MODE in
full) REPS=7 LOAD_MS=1000 SYS_MS=400 PAIRS=2 FRACTIONS="0.3 0.6" ;;
quick) REPS=3 LOAD_MS=300 SYS_MS=100 PAIRS=2 FRACTIONS="" ;;
esac
REPS=${RTBENCH_KREPS:-$REPS}
FRACTIONS=${RTBENCH_KPACED-$FRACTIONS}
BUF_KB=4096 # ftrace buffer per CPU: record -k's, and trace-cmd's -b
TR=/sys/kernel/tracing
KEVENTS=(sched:sched_switch sched:sched_waking syscalls:sys_enter_read syscalls:sys_exit_read
	syscalls:sys_enter_write syscalls:sys_exit_write)

T=$(mktemp -d "${TMPDIR:-/tmp}/rtkbench.XXXXXX")
chmod 700 "$T"
CSV=$T/runs.csv
ERRLOG=$T/stderr.log
NOTES=$T/notes
: >"$CSV"; : >"$ERRLOG"; : >"$NOTES"
TC_INSTANCE=
HOGS=()
note() { echo "$*" >>"$NOTES"; say "note: $*"; }
cleanup() {
	local rc=$?
	set +e
	hogs_stop
	[ -n "$TC_INSTANCE" ] && [ -d "$TR/instances/$TC_INSTANCE" ] && rmdir "$TR/instances/$TC_INSTANCE"
	bench_exit $rc
}
bench_traps

# --- what can run here ---------------------------------------------------------
KERNEL_OK=1
if [ "$(id -u)" != 0 ]; then
	note "not root: the kernel domain's rows are skipped"; KERNEL_OK=0
elif [ ! -d "$TR/instances" ]; then
	note "tracefs is not mounted at $TR: the kernel domain's rows are skipped"; KERNEL_OK=0
fi
have() { command -v "$1" >/dev/null; }
TC_OK=0 STRACE_OK=0 PERF_OK=0
if [ "$KERNEL_OK" = 1 ]; then
	if have trace-cmd; then TC_OK=1; else note "trace-cmd is not installed: its rows are skipped"; fi
fi
if have strace; then STRACE_OK=1; else note "strace is not installed: its row is skipped"; fi
if have perf && perf trace -s -o /dev/null -- true >/dev/null 2>&1; then
	PERF_OK=1
else
	note "perf trace does not run here (perf missing, or no access to the syscall tracepoints): its row is skipped"
fi

# timed OUT_FILE CMD...: runs CMD (stdout to OUT_FILE, stderr to the log)
# and prints the CPU time in ns of CMD's whole process tree (the shell's
# `times` for its children).
timed() {
	local out=$1
	shift
	# (times into a file: in a pipe or $(...) it would run in a new
	# process, which has no children)
	( "$@" >"$out" 2>>"$ERRLOG" || { echo "FAILED $*" >>"$ERRLOG"; exit 1; }
	  times >"$out.times" ) || return 1
	awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.0f\n", ((u[1] * 60 + u[2]) + (s[1] * 60 + s[2])) * 1e9 }' "$out.times"
}

# trace-cmd in a private instance ($TC_INSTANCE, set by the caller: timed
# runs this in a subshell): -k keeps trace-cmd from resetting
# function-tracer files on the way out (some machines refuse them), -d
# leaves the function tracer alone; the instance is read for its counts,
# then removed.
tc_record() { # OUT.dat EXTRA_ARGS... -- CMD...
	local dat=$1
	shift
	local extra=()
	while [ "$1" != -- ]; do extra+=("$1"); shift; done
	shift
	local ev=()
	for e in "${TC_EVENTS[@]}"; do ev+=(-e "$e"); done
	trace-cmd record -q -k -d -o "$dat" -B "$TC_INSTANCE" -b "$BUF_KB" -F -c "${extra[@]}" "${ev[@]}" "$@"
}
# (not in a process substitution: the instance must be gone before the
# next run makes it again)
tc_counts() { # -> "RECORDED LOST" of the instance, then removes it
	cat "$TR/instances/$TC_INSTANCE"/per_cpu/cpu*/stats |
		awk '/^read events:/ { r += $3 } /^overrun:/ { l += $2 } /^dropped events:/ { l += $3 }
		     END { print r + 0, l + 0 }'
	rmdir "$TR/instances/$TC_INSTANCE" || die "cannot remove the instance $TC_INSTANCE"
	TC_INSTANCE=
}
rt_counts() { # DIR -> "RECORDED LOST" of the kernel trace
	"$RT" summary "$1/kernel" 2>>"$ERRLOG" |
		sed -n 's/.*: \([0-9]*\) events recorded, \([0-9]*\) lost.*/\1 \2/p' | head -n1
}

# --- 1. recording ----------------------------------------------------------------
# rt_readers ERRLOG_OFFSET -> "KERNEL_LOST BACKLOG_PAGES BACKLOG_PEAK FULL_WAITS GAP_MS"
# summed over the CPUs (peak and gap: the largest) from record's readers' lines
# written after that offset of the log (-1 each when there are none: a
# build without them).
rt_readers() {
	tail -c +$(($1 + 1)) "$ERRLOG" | sed -n 's/.*kernel CPU [0-9]*: \([0-9]*\) pages read, \([0-9]*\) through the backlog (at most \([0-9]*\) at once), \([0-9]*\) waits on a full backlog, at most \([0-9]*\) ms between passes; .*: \([0-9]*\) events read, \([0-9]*\) overwritten, \([0-9]*\) dropped/\2 \3 \4 \7 \8 \5/p' |
		awk 'BEGIN { n = 0 } { b += $1; if ($2 > p) p = $2; w += $3; l += $4 + $5; if ($6 > g) g = $6; n++ }
		     END { if (n) print l + 0, b + 0, p + 0, w + 0, g + 0; else print -1, -1, -1, -1, -1 }'
}

# load_trial TRACER KIND REP RATE: one run; appends
#   L,tracer,kind,rep,rate,trips,elapsed_ns,workload_cpu_ns,tree_cpu_ns,recorded,lost,
#     kernel_lost,backlog_pages,backlog_peak,full_waits,gap_ms
# (the last five: ringtrace's readers (rt_readers); trace-cmd: kernel_lost
# only; -1: not known)
RUN=0
load_trial() {
	local tracer=$1 kind=$2 rep=$3 rate=$4 out=$T/out cpu rec=-1 lost=-1
	local klost=-1 bpages=-1 bpeak=-1 waits=-1 gap=-1 errpos
	errpos=$(stat -c %s "$ERRLOG")
	RUN=$((RUN + 1))
	local dir=$T/r$RUN
	local wl=("$KLOAD" pingpong "$LOAD_MS" "$PAIRS" "$rate")
	case $tracer in
	none) cpu=$(timed "$out" "${wl[@]}") ;;
	ringtrace | ringtrace-base)
		local rt=$RT
		[ "$tracer" = ringtrace-base ] && rt=$RTB
		cpu=$(RINGTRACE_KERNEL_STATS=1 timed "$out" "$rt" record -q -o "$dir" \
			-k sched_switch,sched_waking --syscall read,write -- "${wl[@]}") ||
			die "$tracer record -k failed"
		read -r rec lost < <(rt_counts "$dir")
		read -r klost bpages bpeak waits gap < <(rt_readers "$errpos") ;;
	trace-cmd | trace-cmd-raw)
		local extra=()
		[ "$tracer" = trace-cmd-raw ] && extra=(--compression none)
		TC_EVENTS=("${KEVENTS[@]}") TC_INSTANCE=rtbench-tc-$$
		cpu=$(timed "$out" tc_record "$dir.dat" "${extra[@]}" -- "${wl[@]}") ||
			die "trace-cmd record failed"
		tc_counts >"$T/counts"
		read -r rec lost <"$T/counts"
		klost=$lost ;;
	esac
	rm -rf "$dir" "$dir".dat*
	local line
	line=$(grep '^KLOAD,' "$out") || die "$tracer: the workload printed nothing"
	echo "$line" | awk -F, -v t="$tracer" -v k="$kind" -v r="$rep" -v q="$rate" -v c="$cpu" \
		-v n="${rec:--1}" -v l="${lost:--1}" -v kl="$klost" -v bp="$bpages" -v bk="$bpeak" \
		-v w="$waits" -v g="$gap" \
		'{ printf "L,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", t, k, r, q, $2, $3, $4, c, n,
		   l, kl, bp, bk, w, g }' >>"$CSV"
}

LOADERS=none
if [ "$KERNEL_OK" = 1 ]; then
	LOADERS="$LOADERS ringtrace"
	[ -n "$RTB" ] && LOADERS="$LOADERS ringtrace-base"
	[ "$TC_OK" = 1 ] && LOADERS="$LOADERS trace-cmd trace-cmd-raw"
fi
for ((rep = 1; rep <= REPS; rep++)); do
	say "recording, flat out: repetition $rep of $REPS ($LOADERS)"
	for t in $LOADERS; do load_trial "$t" flat "$rep" 0; done
done
# A busy loop per CPU beside each loaded trial (killed by pid after it).
hogs_start() {
	local i
	for ((i = 0; i < $(nproc); i++)); do
		( while :; do :; done ) &
		HOGS+=($!)
	done
}
hogs_stop() {
	local p
	for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
	HOGS=()
}
for ((rep = 1; rep <= REPS; rep++)); do
	say "recording, flat out beside a CPU hog per CPU: repetition $rep of $REPS ($LOADERS)"
	for t in $LOADERS; do hogs_start; load_trial "$t" loaded "$rep" 0; hogs_stop; done
done
if [ -n "$FRACTIONS" ] && [ "$LOADERS" != none ]; then
	# round trips per second per pair, untraced, flat out (median)
	base=$(awk -F, '$1 == "L" && $2 == "none" { print $6 / ($7 / 1e9) / '"$PAIRS"' }' "$CSV" |
		sort -g | awk '{ v[NR] = $1 } END { printf "%.0f", v[int((NR + 1) / 2)] }')
	for f in $FRACTIONS; do
		rate=$(awk -v b="$base" -v f="$f" 'BEGIN { printf "%.0f", b * f }')
		for ((rep = 1; rep <= REPS; rep++)); do
			say "recording, paced at $rate round trips/s per pair: repetition $rep of $REPS"
			for t in $LOADERS; do load_trial "$t" "paced-$f" "$rep" "$rate"; done
		done
	done
fi

# --- 2. a traced system call ----------------------------------------------------
# sys_trial TRACER REP: appends
#   S,tracer,rep,calls,ns_per_call,workload_cpu_ns,tree_cpu_ns,recorded,lost
sys_trial() {
	local tracer=$1 rep=$2 out=$T/out rec=-1 lost=-1 cpu
	RUN=$((RUN + 1))
	local dir=$T/r$RUN
	local wl=("$KLOAD" syscall "$SYS_MS")
	case $tracer in
	none) cpu=$(timed "$out" "${wl[@]}") || die "kload failed" ;;
	ringtrace-getppid | ringtrace-all)
		local sc=getppid
		[ "$tracer" = ringtrace-all ] && sc=all
		cpu=$(timed "$out" "$RT" record -q --overwrite -o "$dir" --syscall "$sc" -- "${wl[@]}") ||
			die "ringtrace record --syscall failed"
		read -r rec lost < <(rt_counts "$dir") ;;
	trace-cmd-getppid)
		TC_EVENTS=(syscalls:sys_enter_getppid syscalls:sys_exit_getppid) TC_INSTANCE=rtbench-tc-$$
		cpu=$(timed "$out" tc_record "$dir.dat" -- "${wl[@]}") || die "trace-cmd record failed"
		tc_counts >"$T/counts"
		read -r rec lost <"$T/counts" ;;
	strace) cpu=$(timed "$out" strace -c -f -o /dev/null "${wl[@]}") || die "strace failed" ;;
	perf) cpu=$(timed "$out" perf trace -s -o /dev/null -- "${wl[@]}") || die "perf trace failed" ;;
	esac
	rm -rf "$dir" "$dir".dat*
	local line
	line=$(grep '^KSYS,' "$out") || die "$tracer: the workload printed nothing"
	echo "$line" | awk -F, -v t="$tracer" -v r="$rep" -v c="$cpu" -v n="${rec:--1}" -v l="${lost:--1}" \
		'{ printf "S,%s,%s,%s,%s,%s,%s,%s,%s\n", t, r, $2, $3, $4, c, n, l }' >>"$CSV"
}

SYSERS=none
[ "$KERNEL_OK" = 1 ] && SYSERS="$SYSERS ringtrace-getppid ringtrace-all"
[ "$TC_OK" = 1 ] && SYSERS="$SYSERS trace-cmd-getppid"
[ "$STRACE_OK" = 1 ] && SYSERS="$SYSERS strace"
[ "$PERF_OK" = 1 ] && SYSERS="$SYSERS perf"
for ((rep = 1; rep <= REPS; rep++)); do
	say "getppid: repetition $rep of $REPS ($SYSERS)"
	for t in $SYSERS; do sys_trial "$t" "$rep"; done
done

# --- report ---------------------------------------------------------------------------
COMMIT=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$SRC" status --porcelain 2>/dev/null)" ] && COMMIT="$COMMIT (with uncommitted changes)"
DATE=$(date +%F)
{
	echo "date=$DATE"
	echo "commit=$COMMIT"
	echo "mode=$MODE"
	echo "reps=$REPS"
	echo "load_ms=$LOAD_MS"
	echo "pairs=$PAIRS"
	echo "sys_ms=$SYS_MS"
	echo "buffer_kb=$BUF_KB"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
	echo "cpus=$(nproc)"
	echo "kernel=$(uname -r)"
	echo "trace_cmd=$(trace-cmd --version 2>/dev/null | awk '/version/ { print $3; exit }' || true)"
	echo "strace=$(strace -V 2>/dev/null | awk 'NR == 1 { print $NF }' || true)"
	echo "perf=$(perf version 2>/dev/null | awk '{ print $3 }' || true)"
	echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
	while read -r n; do echo "note=$n"; done <"$NOTES"
} >"$T/meta"
mkdir -p "$SRC/bench/results"
OUTBASE=$SRC/bench/results/$DATE-${COMMIT%% *}-kernel
[ "$MODE" = quick ] && OUTBASE=$OUTBASE-quick
cp "$CSV" "$OUTBASE.csv"
python3 "$SRC/bench/kernel_report.py" --meta "$T/meta" --csv "$OUTBASE.csv" --md "$OUTBASE.md" ||
	die "report failed"
say "results: ${OUTBASE#"$SRC"/}.md (.csv)"
