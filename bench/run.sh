#!/usr/bin/env bash
# bench/run.sh - the overhead benchmark (`make bench`, docs/performance.md).
#
#   bench/run.sh BUILD_DIR [--quick | --smoke]
#
# Builds the benchmark programs, starts a private LTTng session daemon and a
# private ftrace instance, runs every measurement several times interleaved
# (A B C A B C ...), then writes bench/results/DATE-COMMIT.md (with .csv:
# every run's numbers, -samples.csv: raw per-call latencies, -threads.svg)
# and prints the headline ratios as its last lines. The kernel domain's
# benchmark (bench/kernel.sh: record -k against trace-cmd, strace, perf
# trace) runs last and writes bench/results/DATE-COMMIT-kernel.md.
#
#   --quick  fewer and shorter runs (under 2 minutes); results named
#            DATE-COMMIT-quick.*
#   --smoke  every program once on a tiny input, results in a temporary
#            directory, no daemon, no ftrace (the ctest entry bench_smoke);
#            fails only if a program fails or prints no numbers.
#
# Environment: TMPDIR (where traces are written; the disk-mode numbers
# depend on it), RTBENCH_REPS (override the number of repetitions),
# RTBENCH_KERNEL=0 (leave out bench/kernel.sh: it needs the machine's
# tracefs to itself).
set -euo pipefail

BENCH_NAME=bench BENCH_MODES="quick smoke"
. "$(dirname "$0")/common.sh"
bench_args "$@"
B=$BUILD/bench
START_S=$(date +%s)

# --- parameters ------------------------------------------------------------
case $MODE in
full)
	REPS=11 BATCH_MS=200 SAMPLES=100000 WARM_MS=50 WARM_CAP=1000
	THREADS="1 2 4" TP_MS=1000 TP_FLAT_REPS=3 TP_FRACTIONS="0.5 0.7 0.85 1.0 1.15"
	MACRO_REPS=9 MACRO_S=1.0 BYTES_EVENTS=1000000
	CONS_REPS=5 CONS_EVENTS=20000000 READ_REPS=3 READ_EVENTS=4000000
	THREADS_MORE="16 64" SHAPE_REPS=7 PROG_REPS=3 PROG_N=100 ;;
quick)
	REPS=3 BATCH_MS=50 SAMPLES=20000 WARM_MS=20 WARM_CAP=300
	THREADS="1 2 4" TP_MS=300 TP_FLAT_REPS=1 TP_FRACTIONS="0.5 0.85"
	MACRO_REPS=3 MACRO_S=0.25 BYTES_EVENTS=1000000
	CONS_REPS=3 CONS_EVENTS=5000000 READ_REPS=1 READ_EVENTS=1000000
	THREADS_MORE="16 64" SHAPE_REPS=3 PROG_REPS=1 PROG_N=100 ;;
smoke)
	REPS=1 BATCH_MS=5 SAMPLES=1000 WARM_MS=2 WARM_CAP=20
	THREADS="1 2" TP_MS=50 TP_FLAT_REPS=1 TP_FRACTIONS="0.5"
	MACRO_REPS=1 MACRO_S=0.02 BYTES_EVENTS=10000
	CONS_REPS=1 CONS_EVENTS=20000 READ_REPS=0 READ_EVENTS=0
	THREADS_MORE="" SHAPE_REPS=1 PROG_REPS=1 PROG_N=3 ;;
esac
REPS=${RTBENCH_REPS:-$REPS}
SHAPE_REPS=${RTBENCH_REPS:-$SHAPE_REPS}

# --- build -------------------------------------------------------------------
if [ "$MODE" != smoke ]; then
	say "building the benchmark programs"
	cmake --build "$BUILD" --target bench_programs -j "$(nproc)" >/dev/null ||
		die "build failed (cmake --build $BUILD --target bench_programs)"
fi
for p in micro_base micro_rt breakdown trace_stats macro_none macro_rt kload preload_bench idle_prog; do
	[ -x "$B/$p" ] || die "$B/$p is missing (cmake --build $BUILD --target bench_programs)"
done

# --- scratch space and cleanup ---------------------------------------------
T=$(mktemp -d "${TMPDIR:-/tmp}/rtbench.XXXXXX")
chmod 711 "$T"
CSV=$T/runs.csv
RAW=$T/samples.csv
NOTES=$T/notes
ERRLOG=$T/stderr.log
: >"$CSV"; : >"$RAW"; : >"$NOTES"; : >"$ERRLOG"
chmod 666 "$RAW"
mkdir -p "$T/tr"
LTTNG_OK=0 LH= LT_AS=() SESSIOND_PID= WAIT_SHM=
RTD_OK=0 RTD_RUN= RTD_PID=
MARKER= FTRACE_INSTANCE= MOUNTED_TRACEFS=0
note() { echo "$*" >>"$NOTES"; say "note: $*"; }

cleanup() {
	local rc=$?
	set +e
	if [ -n "$SESSIOND_PID" ] && kill -0 "$SESSIOND_PID" 2>/dev/null; then
		local kids
		kids=$(ps -o pid= --ppid "$SESSIOND_PID" 2>/dev/null)
		kill "$SESSIOND_PID" 2>/dev/null
		for _ in $(seq 50); do
			kill -0 "$SESSIOND_PID" 2>/dev/null || break
			# a zombie is gone for our purposes
			[ "$(ps -o stat= -p "$SESSIOND_PID" 2>/dev/null | cut -c1)" = Z ] && break
			sleep 0.1
		done
		kill -9 "$SESSIOND_PID" 2>/dev/null
		# its consumer daemons, if still there (and still ours)
		for k in $kids; do
			case "$(ps -o comm= -p "$k" 2>/dev/null)" in lttng*) kill "$k" 2>/dev/null ;; esac
		done
	fi
	# our ringtraced: SIGTERM stops its sessions and it exits
	if [ -n "$RTD_PID" ] && kill -0 "$RTD_PID" 2>/dev/null; then
		kill "$RTD_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$RTD_PID" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$RTD_PID" 2>/dev/null
	fi
	# the wait-shm our daemon created for its user, if it was not there before
	[ -n "$WAIT_SHM" ] && rm -f "$WAIT_SHM"
	[ -n "$FTRACE_INSTANCE" ] && rmdir "$FTRACE_INSTANCE" 2>/dev/null
	[ "$MOUNTED_TRACEFS" = 1 ] && umount /sys/kernel/tracing 2>/dev/null
	bench_exit $rc
}
bench_traps

# --- CPUs: consumers on the first CPU, measuring threads from the last ------
NCPU=$(nproc)
CONS_CPU=0
cpu_list() { # N threads -> "last,last-1,..." wrapping around
	local n=$1 i out=
	for ((i = 0; i < n; i++)); do out+="${out:+,}$(((NCPU - 1 - i % NCPU + NCPU) % NCPU))"; done
	echo "$out"
}

# --- LTTng: a private session daemon ----------------------------------------
# A root session daemon always uses the system-wide run directory, so as
# root ours runs as the unprivileged user "nobody" (its LTTNG_HOME, the
# programs it traces and their traces live in our temporary directory).
lt() { "${LT_AS[@]}" env HOME="$LH" LTTNG_HOME="$LH" "$@"; }

lttng_setup() {
	[ -x "$B/micro_lttng" ] || { note "LTTng-UST: not built (liblttng-ust-dev missing); its rows are skipped"; return; }
	if ! command -v lttng-sessiond >/dev/null || ! command -v lttng >/dev/null; then
		note "LTTng-UST: lttng-tools not installed; its rows are skipped"; return
	fi
	LH=$T/lttng
	mkdir -p "$LH/bin" "$LH/traces"
	cp "$B/micro_lttng" "$B/macro_lttng" "$B/preload_bench" "$LH/bin/"
	local uid
	uid=$(id -u)
	if [ "$uid" = 0 ]; then
		command -v setpriv >/dev/null || { note "LTTng-UST: setpriv missing; its rows are skipped"; return; }
		LT_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		chown -R 65534:65534 "$LH"
		uid=65534
	fi
	[ -e "/dev/shm/lttng-ust-wait-8-$uid" ] || WAIT_SHM=/dev/shm/lttng-ust-wait-8-$uid
	if ! (cd "$LH" && lt taskset -c "$CONS_CPU" lttng-sessiond --daemonize --no-kernel) >>"$ERRLOG" 2>&1; then
		note "LTTng-UST: the session daemon did not start; its rows are skipped"; return
	fi
	SESSIOND_PID=$(cat "$LH/.lttng/lttng-sessiond.pid" 2>/dev/null || true)
	[ -n "$SESSIOND_PID" ] || { note "LTTng-UST: no session daemon pid; its rows are skipped"; return; }
	LTTNG_OK=1
}

# lttng_session NAME overwrite|discard SUBBUF NUM_SUBBUF [FILTER]: the
# events LT_EVENTS (default rtbench:*), the contexts LT_CONTEXTS (-t
# options, default none)
lttng_session() {
	local filter=()
	[ -n "${5:-}" ] && filter=(--filter "$5")
	(cd "$LH" &&
		lt lttng create "$1" --output="$LH/traces/$1" &&
		lt lttng enable-channel -u -s "$1" "--$2" --subbuf-size "$3" --num-subbuf "$4" ch0 &&
		{ [ -z "${LT_CONTEXTS:-}" ] || lt lttng add-context -u -s "$1" -c ch0 $LT_CONTEXTS; } &&
		lt lttng enable-event -u -s "$1" -c ch0 "${LT_EVENTS:-rtbench:*}" "${filter[@]}" &&
		{ [ -n "${5:-}" ] || [ -n "${LT_EVENTS:-}" ] || lt lttng enable-event -u -s "$1" -c ch0 'lttng_ust_tracef:*'; } &&
		lt lttng start "$1") >>"$ERRLOG" 2>&1 || die "lttng: cannot set up session $1"
}
lttng_stop() { (cd "$LH" && lt lttng stop "$1") >>"$ERRLOG" 2>&1 || true; }
lttng_discarded() {
	(cd "$LH" && lt lttng list "$1") 2>>"$ERRLOG" |
		awk '/Discarded events:/ { s += $3 } END { print s + 0 }'
}
lttng_end() {
	(cd "$LH" && lt lttng destroy "$1") >>"$ERRLOG" 2>&1 || true
	rm -rf "${LH:?}/traces/$1"
}

# --- ringtrace: a private ringtraced (daemon mode) ----------------------------
# Its run directory is in our temporary directory (RINGTRACE_RUNDIR), so it
# is not the user's daemon; the programs measured in daemon mode get the same
# RINGTRACE_RUNDIR and no RINGTRACE_OUTPUT, so they register with it.
RTD_BIN=$BUILD/src/daemon/ringtraced
rtd() { env RINGTRACE_RUNDIR="$RTD_RUN" RINGTRACED="$RTD_BIN" "$RT_CLI" "$@"; }
rtd_setup() {
	if [ ! -x "$RTD_BIN" ] || [ ! -x "$RT_CLI" ]; then
		note "ringtrace daemon mode: ringtraced or ringtrace not built; its rows are skipped"; return
	fi
	RTD_RUN=$T/rtd
	mkdir -p "$RTD_RUN/traces"
	chmod 700 "$RTD_RUN"
	if ! env RINGTRACE_RUNDIR="$RTD_RUN" taskset -c "$CONS_CPU" "$RTD_BIN" --daemonize >>"$ERRLOG" 2>&1; then
		note "ringtrace daemon mode: ringtraced did not start; its rows are skipped"; return
	fi
	RTD_PID=$(cat "$RTD_RUN/ringtraced.pid" 2>/dev/null || true)
	[ -n "$RTD_PID" ] || { note "ringtrace daemon mode: no ringtraced pid; its rows are skipped"; return; }
	RTD_OK=1
}
# rtd_session NAME [FILTER]: overwrite channel with the geometry of the
# other rows; the rule has --filter FILTER when given
rtd_session() {
	local filter=()
	[ -n "${2:-}" ] && filter=(--filter "$2")
	{ rtd create "$1" -o "$RTD_RUN/traces/$1" &&
		rtd enable-channel -u ch0 -s "$1" --overwrite --subbuf-size 256k --num-subbuf 4 &&
		rtd enable-event -u -s "$1" -c ch0 'rtbench:*' "${filter[@]}" &&
		rtd start "$1"; } >>"$ERRLOG" 2>&1 || die "ringtraced: cannot set up session $1"
}
rtd_end() {
	{ rtd stop "$1"; rtd destroy "$1"; } >>"$ERRLOG" 2>&1 || true
	rm -rf "${RTD_RUN:?}/traces/$1"
}

# --- ringtrace traces: events recorded and lost ------------------------------
# rt_counts DIR -> "RECORDED LOST": `ringtrace summary` when the command is
# built (it decodes every event), else the packet headers (trace_stats:
# recorded unknown, -1).
RT_CLI=$BUILD/src/cli/ringtrace
rt_counts() {
	local line
	if [ -x "$RT_CLI" ] && line=$("$RT_CLI" summary "$1" 2>>"$ERRLOG" | grep -m1 'events recorded'); then
		echo "$line" | sed -n 's/.*: \([0-9]*\) events recorded, \([0-9]*\) lost.*/\1 \2/p'
	else
		echo "-1 $("$B/trace_stats" "$1" | sed -n 's/.*discarded=\([0-9]*\).*/\1/p')"
	fi
}

# --- ftrace: trace_marker of a private instance ------------------------------
marker_setup() {
	local tr=/sys/kernel/tracing
	if [ ! -e "$tr/trace_marker" ]; then
		if [ "$(id -u)" = 0 ] && [ -d "$tr" ] && mount -t tracefs nodev "$tr" 2>/dev/null; then
			MOUNTED_TRACEFS=1
		else
			note "ftrace: tracefs is not mounted and cannot be; the trace_marker rows are skipped"
			return
		fi
	fi
	if mkdir "$tr/instances/rtbench_$$" 2>/dev/null; then
		FTRACE_INSTANCE=$tr/instances/rtbench_$$
		echo 1 >"$FTRACE_INSTANCE/tracing_on" 2>/dev/null || true
		MARKER=$FTRACE_INSTANCE/trace_marker
	elif [ -w "$tr/trace_marker" ]; then
		MARKER=$tr/trace_marker
		note "ftrace: no private instance; trace_marker writes go to the top-level buffer"
	fi
	if [ -z "$MARKER" ] || [ ! -w "$MARKER" ]; then
		MARKER=
		note "ftrace: trace_marker is not writable; its rows are skipped"
	fi
}

# --- the LD_PRELOAD helpers: pl_helper rt|lttng CASE -> the library -----------
LTTNG_LIBDIR=$(dirname "$(ldconfig -p 2>/dev/null | awk '/liblttng-ust\.so / { print $NF; exit }')")
pl_helper() {
	local rt lt
	case $2 in
	malloc) rt=libringtrace-libc-wrapper.so lt=liblttng-ust-libc-wrapper.so ;;
	mutex) rt=libringtrace-pthread-wrapper.so lt=liblttng-ust-pthread-wrapper.so ;;
	func) rt=libringtrace-cyg-profile.so lt=liblttng-ust-cyg-profile.so ;;
	*) die "no helper for case $2" ;;
	esac
	if [ "$1" = rt ]; then echo "$BUILD/src/preload/$rt"
	elif [ -e "$LTTNG_LIBDIR/$lt" ]; then echo "$LTTNG_LIBDIR/$lt"; fi
}

# --- one measurement ----------------------------------------------------------
RUN_ID=0
# run_micro SECTION TRACER CASE THREADS REP
run_micro() {
	local section=$1 tracer=$2 case=$3 threads=$4 rep=$5
	local prog env=() as=() dir= nominal=$3 label=$2
	RUN_ID=$((RUN_ID + 1))
	dir=$T/tr/r$RUN_ID
	case $tracer in
	empty | lw-tsc | lw-clock | printf | marker)
		prog=$B/micro_base
		case $tracer in lw-tsc) case=lw_tsc ;; lw-clock) case=lw_clock ;; empty | printf | marker) case=$tracer ;; esac
		[ "$tracer" = marker ] && { [ -n "$MARKER" ] || return 0; env=(RTBENCH_MARKER="$MARKER"); } ;;
	rt-off) prog=$B/micro_rt ;;
	rt) prog=$B/micro_rt env=(RINGTRACE_OUTPUT="$dir" RINGTRACE_OVERWRITE=1) ;;
	rt-atomic) prog=$B/micro_rt env=(RINGTRACE_OUTPUT="$dir" RINGTRACE_OVERWRITE=1 RINGTRACE_RSEQ=0) ;;
	rt-disk) prog=$B/micro_rt env=(RINGTRACE_OUTPUT="$dir") ;;
	rt-ctx) prog=$B/micro_rt case=p4
		env=(RINGTRACE_OUTPUT="$dir" RINGTRACE_OVERWRITE=1 RINGTRACE_CONTEXTS=vtid,procname) ;;
	bound) prog=$B/micro_base case=lw_$case ;;
	rt-daemon | rt-daemon2 | rt-daemon-many | rt-filt-*)
		[ "$RTD_OK" = 1 ] || return 0
		prog=$B/micro_rt env=(-u RINGTRACE_OUTPUT RINGTRACE_RUNDIR="$RTD_RUN") ;;
	lttng-filt-*)
		[ "$LTTNG_OK" = 1 ] || return 0
		prog=$LH/bin/micro_lttng as=(lt) ;;
	lttng-ctx)
		[ "$LTTNG_OK" = 1 ] || return 0
		prog=$LH/bin/micro_lttng as=(lt) case=p4 ;;
	lttng | lttng-off)
		[ "$LTTNG_OK" = 1 ] || [ "$MODE" = smoke ] || return 0
		# (smoke: no session daemon, the tracepoints are disabled)
		if [ "$MODE" = smoke ]; then prog=$B/micro_lttng label=lttng-off; else prog=$LH/bin/micro_lttng as=(lt); fi ;;
	bd) prog=$B/breakdown env=(RINGTRACE_OUTPUT="$dir" RINGTRACE_OVERWRITE=1) ;;
	pl-none) prog=$B/preload_bench ;;
	pl-rt) prog=$B/preload_bench
		env=(LD_PRELOAD="$(pl_helper rt "$case")" RINGTRACE_OUTPUT="$dir" RINGTRACE_OVERWRITE=1) ;;
	pl-lttng)
		[ "$LTTNG_OK" = 1 ] && [ -n "$(pl_helper lttng "$case")" ] || return 0
		prog=$LH/bin/preload_bench as=(lt) env=(LD_PRELOAD="$(pl_helper lttng "$case")") ;;
	bd-ctl) # controls for the thread scaling (private buffers, no consumer)
		prog=$B/breakdown case=inline,floor ;;
	*) die "unknown tracer $tracer" ;;
	esac
	local out rc=0
	out=$(cd "${LH:-$T}" && "${as[@]}" taskset -c "$CONS_CPU" env "${env[@]}" "$prog" \
		--section "$section" --tracer "$label" --case "$case" --threads "$threads" \
		--rep "$rep" --cpus "$(cpu_list "$threads")" --batch-ms "$BATCH_MS" \
		--samples "$SAMPLES" --warm-ms "$WARM_MS" --warm-cap-ms "$WARM_CAP" \
		--raw "$RAW" --raw-max 400 2>>"$ERRLOG") || rc=$?
	rm -rf "$dir"
	if [ $rc = 3 ]; then # BENCH_EXIT_UNAVAILABLE
		grep -qx "$tracer/$case: not available on this machine" "$NOTES" ||
			note "$tracer/$case: not available on this machine"
		return 0
	fi
	[ $rc = 0 ] || die "$tracer/$case ($threads threads) failed"
	[ -n "$out" ] || die "$tracer/$case printed nothing"
	# rows are keyed by the workload (p4 ...), not by the program's case
	# name; the breakdown keeps its variants' names, the controls become
	# tracers bd-inline and bd-floor
	echo "$out" | awk -F, -v c="$nominal" -v t="$tracer" 'BEGIN { OFS = "," }
		t == "bd" { print; next }
		t == "bd-ctl" { $3 = "bd-" $4 }
		{ $4 = c; print }' >>"$CSV"
}

# --- set up --------------------------------------------------------------------
if [ "$MODE" != smoke ]; then
	lttng_setup
	rtd_setup
	marker_setup
	command -v babeltrace2 >/dev/null ||
		note "babeltrace2 missing: recorded events are counted from the traces' discarded counts only"
fi

# --- 1. micro benchmark, payloads, threads, breakdown: interleaved reps --------
MICRO1="empty rt-off rt rt-daemon rt-atomic rt-disk lttng lw-tsc lw-clock printf marker"
SCAL="rt rt-atomic lttng lw-tsc lw-clock printf marker rt-off empty"
SCAL_MORE="rt lw-tsc"
PAYLOADS="p32 str64 f8 printf1"
# filters (v is the loop counter, from 0): rejected by one comparison,
# passed by one, rejected by two
FILTERS="reject pass reject2"
declare -A FILTER_EXPR=([reject]='v < 0' [pass]='v >= 0' [reject2]='v > 100 && v < 50')
# the breakdown's variants run in one process, interleaved
BREAKDOWN="rseq2,clock,buf,buf_clk,inline,buf_atomic,inline_atomic,smp3,calls,lib,floor,inline_s64,lib_s64,inline_q256,lib_q256"
for ((rep = 1; rep <= REPS; rep++)); do
	say "micro benchmark: repetition $rep of $REPS"
	[ "$LTTNG_OK" = 1 ] && lttng_session micro overwrite 256k 4
	if [ "$RTD_OK" = 1 ]; then rtd_session micro; fi
	for t in $MICRO1; do run_micro micro "$t" p4 1 "$rep"; done
	for p in $PAYLOADS; do
		run_micro payload rt "$p" 1 "$rep"
		run_micro payload lttng "$p" 1 "$rep"
	done
	for n in $THREADS; do
		run_micro threads bd-ctl p4 "$n" "$rep"
		[ "$n" = 1 ] && continue
		for t in $SCAL; do run_micro threads "$t" p4 "$n" "$rep"; done
	done
	# more threads than CPUs: the tracer, its bound and the controls
	for n in $THREADS_MORE; do
		for t in bd-ctl $SCAL_MORE; do run_micro threads "$t" p4 "$n" "$rep"; done
	done
	run_micro breakdown bd "$BREAKDOWN" 1 "$rep"
	if [ "$LTTNG_OK" = 1 ]; then lttng_stop micro; lttng_end micro; fi
	if [ "$RTD_OK" = 1 ]; then rtd_end micro; fi
	# user rules' --filter, judged in the program (docs/filters.md): each
	# filter in a session of its own, after the unfiltered rt-daemon row of
	# this repetition; LTTng-UST's rejected event likewise
	for f in $FILTERS; do
		flt=${FILTER_EXPR[$f]}
		if [ "$RTD_OK" = 1 ]; then
			rtd_session filt "$flt"
			run_micro filter "rt-filt-$f" p4 1 "$rep"
			rtd_end filt
		fi
		if [ "$LTTNG_OK" = 1 ] && [ "$f" != pass ]; then
			lttng_session filt overwrite 256k 4 "$flt"
			run_micro filter "lttng-filt-$f" p4 1 "$rep"
			lttng_stop filt
			lttng_end filt
		fi
	done
done

# --- 1a. event shapes against their bounds: strings of 16, 64 and 256
# bytes, byte sequences of 32 and 256 bytes (the library's path), the
# 4-byte event with the contexts vtid and procname, each beside its bound
# (micro_base's lw_*: the TSC and the same bytes copied into a per-thread
# array) and LTTng-UST, alternated in each repetition; the SMP-atomic
# fallback beside rseq; one event recorded by two daemon sessions beside
# one session --------------------------------------------------------------------
SHAPES="str16 str64 str256 p32 seq256"
for ((rep = 1; rep <= SHAPE_REPS; rep++)); do
	say "event shapes: repetition $rep of $SHAPE_REPS"
	[ "$LTTNG_OK" = 1 ] && lttng_session shape overwrite 256k 4
	for c in $SHAPES; do
		for t in bound rt lttng; do run_micro shape "$t" "$c" 1 "$rep"; done
	done
	if [ "$LTTNG_OK" = 1 ]; then lttng_stop shape; lttng_end shape; fi
	[ "$LTTNG_OK" = 1 ] && LT_CONTEXTS="-t vtid -t procname" lttng_session shapectx overwrite 256k 4
	for t in bound rt-ctx lttng-ctx; do run_micro shape "$t" ctx 1 "$rep"; done
	if [ "$LTTNG_OK" = 1 ]; then lttng_stop shapectx; lttng_end shapectx; fi
	for t in rt rt-atomic; do run_micro shape "$t" p4 1 "$rep"; done
	if [ "$RTD_OK" = 1 ]; then
		rtd_session one
		run_micro shape rt-daemon p4 1 "$rep"
		rtd_end one
		rtd_session two1
		rtd_session two2
		run_micro shape rt-daemon2 p4 1 "$rep"
		rtd_end two1
		rtd_end two2
	fi
done

# --- 1a'. many programs in one per-user session: PROG_N - 1 idle traced
# programs (bench/idle_prog) registered with ringtraced, then the 4-byte
# event's cost beside the same with the measuring program alone; the
# daemon's memory (VmRSS) and CPU time (utime + stime) before and after
# the idle programs registered; the memory of one idle traced program
# (smaps_rollup: Rss, Pss) not traced, in embedded mode and registered.
#   PROGS,rep,programs,register_ms,daemon_rss_kb_before,daemon_rss_kb_after,
#         daemon_cpu_ms_register,daemon_cpu_ms_idle_1s
#   MEM,mode,rss_kb,pss_kb
proc_cpu_ms() { # utime + stime of a process, in ms
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / hz }' "/proc/$1/stat"
}
proc_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
registered() { rtd list -u 2>/dev/null | grep -c ' rtbench:idle ' || true; }
prog_pss() { # PID -> "RSS_KB PSS_KB"
	awk '/^Rss:/ { r = $2 } /^Pss:/ { p = $2 } END { print r + 0, p + 0 }' "/proc/$1/smaps_rollup"
}
idle_mem() { # MODE ENV... : one idle program's memory once it is up
	local mode=$1 pid i
	shift
	env "$@" "$B/idle_prog" 2>>"$ERRLOG" &
	pid=$!
	sleep 0.5
	echo "MEM,$mode,$(prog_pss "$pid" | tr ' ' ,)" >>"$CSV"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
}
if [ "$RTD_OK" = 1 ]; then
	mkdir -p "$T/norun" && chmod 700 "$T/norun"
	idle_mem untraced -u RINGTRACE_OUTPUT RINGTRACE_RUNDIR="$T/norun"
	idle_mem embedded RINGTRACE_OUTPUT="$T/tr/idle" RINGTRACE_OVERWRITE=1
	rm -rf "$T/tr/idle"
	rtd_session many
	idle_mem daemon -u RINGTRACE_OUTPUT RINGTRACE_RUNDIR="$RTD_RUN"
	for ((rep = 1; rep <= PROG_REPS; rep++)); do
		say "many programs: repetition $rep of $PROG_REPS ($PROG_N programs)"
		run_micro programs rt-daemon p4 1 "$rep"
		rss0=$(proc_rss_kb "$RTD_PID") cpu0=$(proc_cpu_ms "$RTD_PID") t0=$(date +%s%N)
		pids=()
		for ((i = 1; i < PROG_N; i++)); do
			env -u RINGTRACE_OUTPUT RINGTRACE_RUNDIR="$RTD_RUN" "$B/idle_prog" 2>>"$ERRLOG" &
			pids+=($!)
		done
		# (each `list -u` waits for every program to answer: poll slowly)
		for _ in $(seq 360); do
			[ "$(registered)" -ge $((PROG_N - 1)) ] && break
			sleep 0.5
		done
		n=$(registered)
		t1=$(date +%s%N) cpu1=$(proc_cpu_ms "$RTD_PID")
		sleep 1
		cpu2=$(proc_cpu_ms "$RTD_PID") rss1=$(proc_rss_kb "$RTD_PID")
		run_micro programs rt-daemon-many p4 1 "$rep"
		echo "PROGS,$rep,$((n + 1)),$(((t1 - t0) / 1000000)),$rss0,$rss1,$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }'),$(awk -v a="$cpu1" -v b="$cpu2" 'BEGIN { print b - a }')" >>"$CSV"
		kill "${pids[@]}" 2>/dev/null
		wait "${pids[@]}" 2>/dev/null || true
		sleep 1
	done
	rtd_end many
fi

# --- 1b. the LD_PRELOAD helpers: malloc+free, mutex lock+unlock and an
# instrumented function, bare, with ringtrace's helpers (embedded mode,
# overwrite, no context) and with LTTng-UST's (a session enabling their
# events, overwrite, no context); alternated in each repetition ----------------
PL_CASES="malloc mutex func"
for ((rep = 1; rep <= REPS; rep++)); do
	say "LD_PRELOAD helpers: repetition $rep of $REPS"
	[ "$LTTNG_OK" = 1 ] &&
		LT_EVENTS='lttng_ust_libc:*,lttng_ust_pthread:*,lttng_ust_cyg_profile:*' \
			lttng_session preload overwrite 256k 4
	for c in $PL_CASES; do
		for t in pl-none pl-rt pl-lttng; do run_micro preload "$t" "$c" 1 "$rep"; done
	done
	if [ "$LTTNG_OK" = 1 ]; then lttng_stop preload; lttng_end preload; fi
done
[ "$LTTNG_OK" = 1 ] && for c in $PL_CASES; do
	[ -n "$(pl_helper lttng "$c")" ] || note "LTTng-UST: no helper for $c in $LTTNG_LIBDIR; its row is skipped"
done

# --- 2. sustained throughput to disk, discard mode ----------------------------
# tp_trial TRACER RATE KIND REP: prints nothing, appends
#   TP,tracer,kind,rep,rate,emitted,elapsed_ns,discarded,recorded (-1: not counted)
tp_trial() {
	local tracer=$1 rate=$2 kind=$3 rep=$4 out disc rec=-1
	RUN_ID=$((RUN_ID + 1))
	local dir=$T/tr/r$RUN_ID
	local args=(--case p4 --throughput --duration-ms "$TP_MS" --rate "$rate"
		--section tp --tracer "$tracer" --rep "$rep" --cpus "$(cpu_list 1)")
	if [ "$tracer" = rt ]; then
		out=$(env RINGTRACE_OUTPUT="$dir" taskset -c "$CONS_CPU" "$B/micro_rt" "${args[@]}" 2>>"$ERRLOG") ||
			die "throughput run failed"
		read -r rec disc < <(rt_counts "$dir")
		rm -rf "$dir"
		sync
	else
		lttng_session tp discard 256k 4
		out=$(cd "$LH" && lt taskset -c "$CONS_CPU" "$LH/bin/micro_lttng" "${args[@]}" 2>>"$ERRLOG") ||
			die "throughput run failed"
		lttng_stop tp
		disc=$(lttng_discarded tp)
		lttng_end tp
		sync
	fi
	# T,section,tracer,case,threads,rep,tid,cpu,emitted,elapsed_ns,rate
	echo "$out" | awk -F, -v k="$kind" -v d="${disc:-0}" -v n="${rec:--1}" \
		'$1 == "T" { printf "TP,%s,%s,%s,%s,%s,%s,%s,%s\n", $3, k, $6, $11, $9, $10, d, n }' >>"$CSV"
}
tp_tracers=rt
[ "$LTTNG_OK" = 1 ] && tp_tracers="rt lttng"
for tr in $tp_tracers; do
	say "throughput to disk: $tr, flat out"
	for ((rep = 1; rep <= TP_FLAT_REPS; rep++)); do tp_trial "$tr" 0 flat "$rep"; done
	# recorded events/s when flat out (median of the reps)
	base=$(awk -F, -v t="$tr" '$1 == "TP" && $2 == t && $3 == "flat" { print ($6 - $8) / $7 * 1e9 }' "$CSV" |
		sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }')
	say "throughput to disk: $tr, paced around $(printf '%.0f' "$base") events/s"
	for f in $TP_FRACTIONS; do
		rate=$(awk -v b="$base" -v f="$f" 'BEGIN { printf "%.0f", b * f }')
		tp_trial "$tr" "$rate" paced 1
	done
done

# --- 2b. the consumer's CPU per event and per MB, all the tracer's CPU per
# event (bench/consumer.sh) ------------------------------------------------
# shellcheck source=bench/consumer.sh
. "$SRC/bench/consumer.sh"
cons_rows

# --- 3. bytes per event on disk: N events, buffers large enough to lose none ---
say "bytes per event"
dir=$T/tr/bytes
out=$(env RINGTRACE_OUTPUT="$dir" RINGTRACE_SUBBUF_SIZE=1M RINGTRACE_NUM_SUBBUF=16 \
	taskset -c "$CONS_CPU" "$B/micro_rt" --case p4 --throughput --events "$BYTES_EVENTS" \
	--cpus "$(cpu_list 1)" 2>>"$ERRLOG") || die "bytes run failed"
stats=$("$B/trace_stats" "$dir")
bytes=$(echo "$stats" | sed -n 's/.*bytes=\([0-9]*\) .*/\1/p')
read -r count disc < <(rt_counts "$dir")
# babeltrace2 is the judge when it is there
command -v babeltrace2 >/dev/null &&
	count=$(babeltrace2 "$dir" -c sink.utils.counter -p step=+0 2>>"$ERRLOG" | awk '/Event messages/ { print $1 }')
echo "BYTES,rt,$BYTES_EVENTS,${count:--1},$bytes,$disc" >>"$CSV"
rm -rf "$dir"
if [ "$LTTNG_OK" = 1 ]; then
	lttng_session bytes discard 1M 16
	(cd "$LH" && lt taskset -c "$CONS_CPU" "$LH/bin/micro_lttng" --case p4 --throughput \
		--events "$BYTES_EVENTS" --cpus "$(cpu_list 1)") >/dev/null 2>>"$ERRLOG" || die "bytes run failed"
	lttng_stop bytes
	disc=$(lttng_discarded bytes)
	bytes=$(find "$LH/traces/bytes" -type f ! -name metadata ! -path '*/index/*' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	count=-1
	command -v babeltrace2 >/dev/null &&
		count=$(babeltrace2 "$LH/traces/bytes" -c sink.utils.counter -p step=+0 2>>"$ERRLOG" | awk '/Event messages/ { print $1 }')
	echo "BYTES,lttng,$BYTES_EVENTS,${count:--1},$bytes,$disc" >>"$CSV"
	lttng_end bytes
fi

# --- 4. macro benchmark -----------------------------------------------------------
MCPUS=$(cpu_list "$NCPU")
out=$("$B/macro_none" --threads "$NCPU" --items 2000 --cpus "$MCPUS")
per_item=$(echo "$out" | awk -F, '{ print $7 / $5 }')
ITEMS=$(awk -v p="$per_item" -v s="$MACRO_S" 'BEGIN { n = int(s * 1e9 / p); print n < 50 ? 50 : n }')
say "macro benchmark: $NCPU threads x $ITEMS work items, $MACRO_REPS repetitions"
MACRO="none rt-off rt-ow rt-disk"
[ "$LTTNG_OK" = 1 ] && MACRO="$MACRO lttng-off lttng-ow lttng-disk"
[ "$MODE" = smoke ] && [ -x "$B/macro_lttng" ] && MACRO="$MACRO lttng-off"
for ((rep = 1; rep <= MACRO_REPS; rep++)); do
	for m in $MACRO; do
		RUN_ID=$((RUN_ID + 1))
		dir=$T/tr/r$RUN_ID
		args=(--threads "$NCPU" --items "$ITEMS" --cpus "$MCPUS" --tracer "$m" --rep "$rep")
		disc=0
		case $m in
		none) out=$(taskset -c "$CONS_CPU" "$B/macro_none" "${args[@]}") ;;
		rt-off) out=$(taskset -c "$CONS_CPU" "$B/macro_rt" "${args[@]}") ;;
		rt-ow | rt-disk)
			env=(RINGTRACE_OUTPUT="$dir")
			[ "$m" = rt-ow ] && env+=(RINGTRACE_OVERWRITE=1)
			out=$(env "${env[@]}" taskset -c "$CONS_CPU" "$B/macro_rt" "${args[@]}" 2>>"$ERRLOG")
			read -r _ disc < <(rt_counts "$dir")
			rm -rf "$dir" ;;
		lttng-off)
			if [ "$MODE" = smoke ]; then
				out=$("$B/macro_lttng" "${args[@]}" 2>>"$ERRLOG")
			else
				out=$(cd "$LH" && lt taskset -c "$CONS_CPU" "$LH/bin/macro_lttng" "${args[@]}" 2>>"$ERRLOG")
			fi ;;
		lttng-ow | lttng-disk)
			if [ "$m" = lttng-ow ]; then lttng_session macro overwrite 256k 4; else lttng_session macro discard 256k 4; fi
			out=$(cd "$LH" && lt taskset -c "$CONS_CPU" "$LH/bin/macro_lttng" "${args[@]}" 2>>"$ERRLOG")
			lttng_stop macro
			disc=$(lttng_discarded macro)
			lttng_end macro
			sleep 1 ;; # let the consumer daemon settle before the next run
		esac
		[ -n "$out" ] || die "macro $m printed nothing"
		echo "$out,${disc:-0}" >>"$CSV"
		sync # no write-back of this run's trace during the next one
	done
done

# --- 4b. reading traces (bench/view_speed.sh): view as text and JSON against
# babeltrace2, view --stats, analyze and summary, on a ringtrace trace
# (tests/integration/burst) and on an LTTng-UST trace (micro_lttng's p4
# events, discard mode, buffers large enough to lose none) -----------------
READ_MD=$T/reading.md
: >"$READ_MD"
if [ "$READ_REPS" -gt 0 ]; then
	say "reading traces: a ringtrace trace of $READ_EVENTS events"
	"$SRC/bench/view_speed.sh" "$BUILD" "$READ_EVENTS" "$READ_REPS" burst >>"$READ_MD" ||
		die "the reading benchmark failed (bench/view_speed.sh)"
	if [ "$LTTNG_OK" = 1 ]; then
		say "reading traces: an LTTng-UST trace of $READ_EVENTS events"
		lttng_session read discard 1M 16
		(cd "$LH" && lt taskset -c "$CONS_CPU" "$LH/bin/micro_lttng" --case p4 --throughput \
			--events "$READ_EVENTS" --cpus "$(cpu_list 1)") >/dev/null 2>>"$ERRLOG" ||
			die "the LTTng-UST trace for the reading benchmark failed"
		lttng_stop read
		echo >>"$READ_MD"
		"$SRC/bench/view_speed.sh" "$BUILD" - "$READ_REPS" "dir:$LH/traces/read" >>"$READ_MD" ||
			die "the reading benchmark failed on the LTTng-UST trace (bench/view_speed.sh)"
		lttng_end read
	fi
fi

# --- 5. the kernel domain: bench/kernel.sh (its own report, its tables on
# stderr so that the headline stays last); smoke: its workloads once -------
if [ "${RTBENCH_KERNEL:-1}" = 0 ] && [ "$MODE" != smoke ]; then
	note "RTBENCH_KERNEL=0: the kernel domain's benchmark (bench/kernel.sh) was not run"
elif [ "$MODE" = smoke ]; then
	"$B/kload" syscall 5 | grep -q '^KSYS,[0-9]*,[0-9.]*,[0-9]*$' || die "kload syscall printed no numbers"
	"$B/kload" pingpong 20 1 0 | grep -q '^KLOAD,[0-9]*,[0-9]*,[0-9]*$' ||
		die "kload pingpong printed no numbers"
else
	"$SRC/bench/kernel.sh" "$BUILD" $([ "$MODE" = quick ] && echo --quick) >&2 ||
		die "the kernel benchmark failed (bench/kernel.sh)"
fi

# --- 6. report ----------------------------------------------------------------------
ELAPSED=$(($(date +%s) - START_S))
COMMIT=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=
[ -n "$(git -C "$SRC" status --porcelain 2>/dev/null)" ] && DIRTY=" (with uncommitted changes)"
DATE=$(date +%F)
{
	echo "date=$DATE"
	echo "commit=$COMMIT$DIRTY"
	echo "mode=$MODE"
	echo "reps=$REPS"
	echo "elapsed_s=$ELAPSED"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
	echo "cpus=$NCPU"
	echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "hypervisor=$(grep -qw hypervisor /proc/cpuinfo && echo yes || echo no)"
	echo "kernel=$(uname -r)"
	echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
	echo "glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
	echo "compiler=$(${CC:-cc} --version 2>/dev/null | head -n1)"
	echo "lttng_ust=$(pkg-config --modversion lttng-ust 2>/dev/null || echo none)"
	echo "lttng_tools=$(lttng --version 2>/dev/null | head -n1 | sed 's/^lttng (LTTng Trace Control) //' || echo none)"
	echo "memory=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "tmpdir_fs=$(df -PT "$T" | awk 'NR == 2 { print $2 }')"
	echo "batch_ms=$BATCH_MS"
	echo "samples=$SAMPLES"
	echo "tp_ms=$TP_MS"
	echo "macro_items=$ITEMS"
	echo "macro_threads=$NCPU"
	echo "bytes_events=$BYTES_EVENTS"
	while read -r n; do echo "note=$n"; done <"$NOTES"
} >"$T/meta"

if [ "$MODE" = smoke ]; then
	OUTBASE=$T/smoke
else
	mkdir -p "$SRC/bench/results"
	OUTBASE=$SRC/bench/results/$DATE-$COMMIT
	[ "$MODE" = quick ] && OUTBASE=$OUTBASE-quick
fi
cp "$CSV" "$OUTBASE.csv"
cp "$RAW" "$OUTBASE-samples.csv"
python3 "$SRC/bench/analyze.py" --meta "$T/meta" --csv "$OUTBASE.csv" \
	--samples "$OUTBASE-samples.csv" --md "$OUTBASE.md" --svg "$OUTBASE-threads.svg" \
	$([ "$MODE" = smoke ] && echo --check) >"$T/headline" ||
	die "analysis failed"
if [ -s "$READ_MD" ]; then
	{ echo; echo "## Reading traces (bench/view_speed.sh)"; echo; cat "$READ_MD"; } >>"$OUTBASE.md"
fi
if [ "$MODE" != smoke ]; then
	say "results: ${OUTBASE#"$SRC"/}.md (.csv, -samples.csv, -threads.svg), $ELAPSED s"
fi
cat "$T/headline"
