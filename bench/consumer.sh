# bench/consumer.sh - sourced by bench/run.sh (it uses run.sh's variables
# and functions: B, T, CSV, ERRLOG, RT_CLI, CONS_CPU, cpu_list, lt,
# lttng_session, lttng_stop, lttng_end, rtd, rtd_session, rtd_end,
# LTTNG_OK, RTD_OK, RTD_PID, SESSIOND_PID, die, say).
#
# The consumer's CPU per event and per MB written, and all the tracer's CPU
# per 4-byte event (writer + consumer), against LTTng-UST with its
# lttng-consumerd and against the rdtsc lower bound (docs/performance.md,
# "Consumer"). One trial, cons_trial TRACER REP, writes one row:
#
#   CONS,tracer,rep,emitted,writer_cpu_ns,consumer_cpu_ns,bytes,recorded,elapsed_ns
#
# The writer: one thread on the last CPU emitting CONS_EVENTS p4 events flat
# out (`--throughput --events`), its own CPU time (CLOCK_THREAD_CPUTIME_ID,
# the harness's T row). Overwrite mode, 4 sub-buffers of 256 KiB per CPU
# (the micro benchmark's geometry), traces to disk. The consumer:
#   bound      none: the lower bound's store (micro_base lw_tsc), nothing
#              written;
#   rt         embedded mode: the traced process's CPU time (wait4, bench/
#              rusage.py) less the writer thread's: the consumer thread, its
#              final drain, the library's start-up and exit;
#   rt-daemon  through ringtraced: the daemon's CPU time over the trial
#              (/proc/PID/task/*/schedstat, from before the program starts to
#              after `ringtrace stop`);
#   lttng      LTTng-UST: lttng-consumerd's (every consumer daemon of our
#              session daemon) over the trial, to after `lttng stop` (which
#              waits for the data to be consumed).
# bytes: the stream files' sizes; recorded: the events in them (`ringtrace
# view --stats`, which reads LTTng's traces too).

# CPU time in ns of process PID and its threads so far (0 if gone).
sched_cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
# The consumer daemons of our LTTng session daemon.
lttng_consumerd_pids() {
	local k
	for k in $(ps -o pid= --ppid "$SESSIOND_PID" 2>/dev/null); do
		case "$(ps -o comm= -p "$k" 2>/dev/null)" in lttng-consumerd) echo "$k" ;; esac
	done
}
cpu_of_pids() {
	local p s=0
	for p in "$@"; do s=$((s + $(sched_cpu_ns "$p"))); done
	echo "$s"
}
# "BYTES RECORDED" of the trace under DIR (stream files: every regular
# file but metadata and LTTng's index files).
trace_bytes_events() {
	local bytes events
	bytes=$(find "$1" -type f ! -name metadata ! -path '*/index/*' -printf '%s\n' |
		awk '{ s += $1 } END { printf "%.0f\n", s }')
	events=$("$RT_CLI" view --stats "$1" 2>>"$ERRLOG" | awk '$1 == "events:" { print $2 }')
	echo "$bytes ${events:--1}"
}

cons_trial() {
	local tracer=$1 rep=$2 out dir before after wcpu ccpu=0 be
	local args=(--case p4 --throughput --events "$CONS_EVENTS" --section cons
		--tracer "$tracer" --rep "$rep" --cpus "$(cpu_list 1)")
	RUN_ID=$((RUN_ID + 1))
	dir=$T/tr/r$RUN_ID
	case $tracer in
	bound)
		args[1]=lw_tsc
		out=$(taskset -c "$CONS_CPU" "$B/micro_base" "${args[@]}" 2>>"$ERRLOG") ||
			die "cons: the lower bound's run failed"
		be="0 $CONS_EVENTS" ;;
	rt)
		out=$(env RINGTRACE_OUTPUT="$dir" RINGTRACE_OVERWRITE=1 \
			python3 "$SRC/bench/rusage.py" "$T/rusage" taskset -c "$CONS_CPU" \
			"$B/micro_rt" "${args[@]}" 2>>"$ERRLOG") || die "cons: the rt run failed"
		ccpu=$(awk '{ print $1 + $2 }' "$T/rusage")
		be=$(trace_bytes_events "$dir") ;;
	rt-daemon)
		[ "$RTD_OK" = 1 ] || return 0
		rtd_session cons
		dir=$RTD_RUN/traces/cons
		before=$(sched_cpu_ns "$RTD_PID")
		out=$(env -u RINGTRACE_OUTPUT RINGTRACE_RUNDIR="$RTD_RUN" taskset -c "$CONS_CPU" \
			"$B/micro_rt" "${args[@]}" 2>>"$ERRLOG") || die "cons: the rt-daemon run failed"
		rtd stop cons >>"$ERRLOG" 2>&1 || true
		after=$(sched_cpu_ns "$RTD_PID")
		ccpu=$((after - before))
		be=$(trace_bytes_events "$dir")
		rtd_end cons ;;
	lttng)
		[ "$LTTNG_OK" = 1 ] || return 0
		lttng_session cons overwrite 256k 4
		local pids
		pids=$(lttng_consumerd_pids)
		# shellcheck disable=SC2086 # one pid per word
		before=$(cpu_of_pids $pids)
		out=$(cd "$LH" && lt taskset -c "$CONS_CPU" "$LH/bin/micro_lttng" "${args[@]}" \
			2>>"$ERRLOG") || die "cons: the LTTng run failed"
		lttng_stop cons
		# shellcheck disable=SC2086
		after=$(cpu_of_pids $pids)
		ccpu=$((after - before))
		be=$(trace_bytes_events "$LH/traces/cons")
		lttng_end cons ;;
	*) die "cons: unknown tracer $tracer" ;;
	esac
	rm -rf "$dir"
	# T,section,tracer,case,threads,rep,tid,cpu,emitted,elapsed_ns,rate,cpu_ns
	wcpu=$(echo "$out" | awk -F, '$1 == "T" { print $12 }')
	[ -n "$wcpu" ] || die "cons: $tracer printed no numbers"
	# embedded mode: the process's CPU time less the writer's
	[ "$tracer" = rt ] && ccpu=$((ccpu - wcpu))
	echo "$out" | awk -F, -v c="$ccpu" -v be="$be" '$1 == "T" {
		split(be, x, " ")
		printf "CONS,%s,%s,%s,%s,%s,%s,%s,%s\n", $3, $6, $9, $12, c, x[1], x[2], $10 }' >>"$CSV"
}

# Every tracer in each repetition, in turn.
cons_rows() {
	local rep t
	for ((rep = 1; rep <= CONS_REPS; rep++)); do
		say "consumer CPU: repetition $rep of $CONS_REPS"
		for t in bound rt rt-daemon lttng; do cons_trial "$t" "$rep"; done
		sync
	done
}
