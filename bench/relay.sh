#!/usr/bin/env bash
# bench/relay.sh - streaming throughput through a relay daemon: the same
# workload traced by ringtraced into ringtrace-relayd and by LTTng's
# lttng-sessiond into lttng-relayd, on loopback (docs/relay.md).
#
#   bench/relay.sh BUILD_DIR [--quick]
#
# Each run: a session streamed to the relay (`create --set-url`, one
# channel of 16 sub-buffers of 1 MiB, discard mode), one program writing N
# events of one int32_t field flat out (micro_rt / micro_lttng --case p4
# --throughput), then `stop`, which returns once the relay stored every
# packet. Measured per run: the time from the program's start to stop's
# return, the events the relay stored (babeltrace2 counts them in the
# relay's output), the events lost (discarded: the trace's count), the
# bytes of the stream files the relay wrote. Throughput = stored events
# (bytes) / that time. The two tracers alternate (A B A B ...), REPS runs
# each; medians are reported. Writes bench/results/DATE-COMMIT-relay.md
# (and .csv, every run) and prints its table.
#
# Daemons: private ones, on loopback and ephemeral or non-default ports,
# ended by pid at exit. As root, LTTng's daemons run as "nobody" (a root
# session daemon uses the system's run directory).
# Environment: RTBENCH_REPS, RTBENCH_RELAY_EVENTS override the run count
# and N.
set -euo pipefail

BENCH_NAME=bench BENCH_MODES="quick"
. "$(dirname "$0")/common.sh"
bench_args "$@"
case $MODE in
full) REPS=7 EVENTS=10000000 ;;
quick) REPS=3 EVENTS=2000000 ;;
esac
REPS=${RTBENCH_REPS:-$REPS}
EVENTS=${RTBENCH_RELAY_EVENTS:-$EVENTS}
B=$BUILD/bench
RT_CLI=$BUILD/src/cli/ringtrace
RTD_BIN=$BUILD/src/daemon/ringtraced
RELAYD=$BUILD/src/relay/ringtrace-relayd
for f in "$B/micro_rt" "$RT_CLI" "$RTD_BIN" "$RELAYD"; do
	[ -x "$f" ] || die "$f is not built (run make first)"
done
command -v babeltrace2 >/dev/null || die "babeltrace2 is needed to count the stored events"

NCPU=$(nproc)
CONS_CPU=0			# daemons and relays
APP_CPU=$((NCPU - 1))		# the traced program

T=$(mktemp -d "${TMPDIR:-/tmp}/rtbench-relay.XXXXXX")
chmod 755 "$T"
ERRLOG=$T/errors.log
PIDS=()
LT_AS=()
WAIT_SHM=

cleanup() {
	local rc=$?
	set +e
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	# lttng-sessiond's consumer daemons end with it; any left are ours
	[ -n "${SESSIOND_KIDS:-}" ] && for k in $SESSIOND_KIDS; do
		case "$(ps -o comm= -p "$k" 2>/dev/null)" in lttng*) kill "$k" 2>/dev/null ;; esac
	done
	[ -n "$WAIT_SHM" ] && rm -f "$WAIT_SHM"
	bench_exit $rc
}
bench_traps

now_ns() { date +%s%N; }
count_events() {	# DIR -> events babeltrace2 reads there
	babeltrace2 "$1" -c sink.utils.counter -p step=+0 2>>"$ERRLOG" |
		awk '/Event messages/ { n = $1 } END { print n + 0 }'
}
stream_bytes() {	# DIR -> bytes of its stream files
	find "$1" -type f ! -name metadata ! -path '*/index/*' -printf '%s\n' |
		awk '{ s += $1 } END { print s + 0 }'
}
write_rate() {	# the program's output -> the events/s it wrote (its T line: emitted / elapsed)
	echo "$1" | awk -F, '$1 == "T" && $10 > 0 { printf "%.0f\n", $9 / $10 * 1e9; exit }'
}
cpu_ticks() {	# PID... -> their CPU time so far (user + system, clock ticks, all threads)
	local p t=0 f
	for p in "$@"; do
		f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		f=${f##*) }
		# fields 14 and 15 of stat: the 12th and 13th after the name
		t=$((t + $(echo "$f" | awk '{ print $12 + $13 }')))
	done
	echo "$t"
}
free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- ringtrace: a private relay and daemon --------------------------------------
RT_HOME=$T/rt
mkdir -p "$RT_HOME/relay" "$RT_HOME/run" "$RT_HOME/out"
chmod 700 "$RT_HOME/run" "$RT_HOME/relay"
export RINGTRACE_RELAY_SECRET=$RT_HOME/relay/secret
taskset -c "$CONS_CPU" env RINGTRACE_RUNDIR="$RT_HOME/relay" "$RELAYD" -o "$RT_HOME/out" \
	-C tcp://127.0.0.1:0 -D tcp://127.0.0.1:0 -L tcp://127.0.0.1:0 2>"$RT_HOME/relay.log" &
RT_RELAY_PID=$!
PIDS+=("$RT_RELAY_PID")
for _ in $(seq 100); do
	grep -q "control port" "$RT_HOME/relay.log" 2>/dev/null && break
	sleep 0.05
done
RT_URL=$(sed -n 's/.*control port [^ ]*:\([0-9]*\), data port [^ ]*:\([0-9]*\),.*/net:\/\/127.0.0.1:\1:\2/p' \
	"$RT_HOME/relay.log" | head -1)
[ -n "$RT_URL" ] || die "ringtrace-relayd did not start: $(cat "$RT_HOME/relay.log")"
rtd() { env RINGTRACE_RUNDIR="$RT_HOME/run" RINGTRACE_HOSTNAME=bench "$RT_CLI" "$@"; }
env RINGTRACE_RUNDIR="$RT_HOME/run" RINGTRACE_HOSTNAME=bench taskset -c "$CONS_CPU" "$RTD_BIN" \
	--daemonize >>"$ERRLOG" 2>&1 || die "ringtraced did not start"
RTD_PID=$(cat "$RT_HOME/run/ringtraced.pid")
PIDS+=("$RTD_PID")

# --- LTTng: private relay and session daemons (as nobody when root) --------------
LTTNG_OK=0
LH=$T/lttng
lt() { "${LT_AS[@]}" env HOME="$LH" LTTNG_HOME="$LH" "$@"; }
lttng_setup() {
	[ -x "$B/micro_lttng" ] || { say "LTTng-UST not built: its rows are skipped"; return; }
	command -v lttng-relayd >/dev/null && command -v lttng-sessiond >/dev/null &&
		command -v lttng >/dev/null || { say "lttng-tools missing: its rows are skipped"; return; }
	mkdir -p "$LH/bin" "$LH/out"
	cp "$B/micro_lttng" "$LH/bin/"
	local uid
	uid=$(id -u)
	if [ "$uid" = 0 ]; then
		LT_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		chown -R 65534:65534 "$LH"
		uid=65534
	fi
	[ -e "/dev/shm/lttng-ust-wait-8-$uid" ] || WAIT_SHM=/dev/shm/lttng-ust-wait-8-$uid
	LPC=$(free_port) LPD=$(free_port) LPL=$(free_port)
	(cd "$LH" && exec "${LT_AS[@]}" env HOME="$LH" LTTNG_HOME="$LH" taskset -c "$CONS_CPU" \
		lttng-relayd -o "$LH/out" -C "tcp://127.0.0.1:$LPC" -D "tcp://127.0.0.1:$LPD" \
		-L "tcp://127.0.0.1:$LPL") >>"$ERRLOG" 2>&1 &
	LT_RELAY_PID=$!
	PIDS+=("$LT_RELAY_PID")
	(cd "$LH" && lt taskset -c "$CONS_CPU" lttng-sessiond --daemonize --no-kernel) >>"$ERRLOG" 2>&1 ||
		{ say "lttng-sessiond did not start: its rows are skipped"; return; }
	local pid
	pid=$(cat "$LH/.lttng/lttng-sessiond.pid" 2>/dev/null || true)
	[ -n "$pid" ] || { say "no lttng-sessiond pid: its rows are skipped"; return; }
	PIDS+=("$pid")
	SESSIOND_PID=$pid
	SESSIOND_KIDS=$(ps -o pid= --ppid "$pid" 2>/dev/null || true)
	LTTNG_OK=1
}
lttng_setup

CSV=$T/relay.csv
echo "tracer,rep,events,elapsed_ns,stored,lost,bytes,write_rate,daemon_ticks" >"$CSV"

# run_rt REP / run_lttng REP: one run, a CSV line
run_rt() {
	local s=r$1 out
	{ rtd create "$s" --set-url="$RT_URL" &&
		rtd enable-channel -u ch0 -s "$s" --subbuf-size 1M --num-subbuf 16 &&
		rtd enable-event -u -s "$s" -c ch0 'rtbench:*' &&
		rtd start "$s"; } >>"$ERRLOG" 2>&1 || die "ringtraced: cannot set up session $s"
	local t0 t1 lost prog c0 c1
	c0=$(cpu_ticks "$RT_RELAY_PID" "$RTD_PID")
	t0=$(now_ns)
	prog=$(env RINGTRACE_RUNDIR="$RT_HOME/run" RINGTRACE_DAEMON_TIMEOUT_MS=5000 \
		taskset -c "$APP_CPU" "$B/micro_rt" --case p4 \
		--throughput --events "$EVENTS" --cpus "$APP_CPU" 2>>"$ERRLOG") ||
		die "micro_rt failed"
	rtd stop "$s" >>"$ERRLOG" 2>&1 || true
	t1=$(now_ns)
	c1=$(cpu_ticks "$RT_RELAY_PID" "$RTD_PID")
	lost=$(rtd status "$s" 2>>"$ERRLOG" | sed -n 's/.*ch0: .*, lost \([0-9]*\),.*/\1/p' | head -1)
	rtd destroy "$s" >>"$ERRLOG" 2>&1 || true
	out=$(ls -d "$RT_HOME/out/bench/$s"-* | head -1)
	echo "rt,$1,$EVENTS,$((t1 - t0)),$(count_events "$out"),${lost:-0},$(stream_bytes "$out"),$(write_rate "$prog"),$((c1 - c0))" >>"$CSV"
	rm -rf "$out"
}
run_lttng() {
	local s=l$1 out
	(cd "$LH" && { lt lttng create "$s" --set-url="net://127.0.0.1:$LPC:$LPD" &&
		lt lttng enable-channel -u -s "$s" --subbuf-size 1M --num-subbuf 16 ch0 &&
		lt lttng enable-event -u -s "$s" -c ch0 'rtbench:*' &&
		lt lttng start "$s"; }) >>"$ERRLOG" 2>&1 || die "lttng: cannot set up session $s"
	local t0 t1 lost prog c0 c1 kids
	kids=$(ps -o pid= --ppid "$SESSIOND_PID" 2>/dev/null || true)
	# shellcheck disable=SC2086
	c0=$(cpu_ticks "$LT_RELAY_PID" "$SESSIOND_PID" $kids)
	t0=$(now_ns)
	prog=$(cd "$LH" && lt taskset -c "$APP_CPU" "$LH/bin/micro_lttng" --case p4 --throughput \
		--events "$EVENTS" --cpus "$APP_CPU" 2>>"$ERRLOG") || die "micro_lttng failed"
	(cd "$LH" && lt lttng stop "$s") >>"$ERRLOG" 2>&1 || true
	t1=$(now_ns)
	# shellcheck disable=SC2086
	c1=$(cpu_ticks "$LT_RELAY_PID" "$SESSIOND_PID" $kids)
	lost=$( (cd "$LH" && lt lttng list "$s") 2>>"$ERRLOG" |
		awk '/Discarded events:/ { s += $NF } END { print s + 0 }')
	(cd "$LH" && lt lttng destroy "$s") >>"$ERRLOG" 2>&1 || true
	out=$(ls -d "$LH/out/"*/"$s"-* | head -1)
	echo "lttng,$1,$EVENTS,$((t1 - t0)),$(count_events "$out"),${lost:-0},$(stream_bytes "$out"),$(write_rate "$prog"),$((c1 - c0))" >>"$CSV"
	rm -rf "$out"
}

say "$REPS runs per tracer of $EVENTS events, alternated; daemons on CPU $CONS_CPU, program on CPU $APP_CPU"
for ((rep = 1; rep <= REPS; rep++)); do
	run_rt "$rep"
	[ "$LTTNG_OK" = 1 ] && run_lttng "$rep"
	say "run $rep: $(tail -n "$((1 + LTTNG_OK))" "$CSV" | tr '\n' ' ')"
done

# --- the report -----------------------------------------------------------------
COMMIT=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
mkdir -p "$SRC/bench/results"
SUFFIX=
[ "$MODE" = quick ] && SUFFIX=-quick
BASE=$SRC/bench/results/$(date +%Y-%m-%d)-$COMMIT-relay$SUFFIX
cp "$CSV" "$BASE.csv"
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "# Relay throughput ($(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT)"
	echo
	echo "bench/relay.sh $MODE: $REPS runs per tracer, alternated, of $EVENTS events of one"
	echo "int32_t field written flat out by one thread (CPU $APP_CPU); session daemon, consumer and"
	echo "relay on CPU $CONS_CPU; loopback; one channel of 16 x 1 MiB sub-buffers, discard mode."
	echo "Time: the program's start to \`stop\`'s return (every packet stored by the relay)."
	echo "The program's own rate (its T line): when the relay's pipeline is slower the buffers"
	echo "fill and events are lost (discard mode), else the program is the limit. The daemons' CPU:"
	echo "user + system time of the relay and session daemon (LTTng's: and its consumer daemons)"
	echo "over the run, per MB of stream files stored."
	echo "$NCPU CPUs, load average at the end $LOAD. Medians (min-max):"
	echo
	echo "| relay | stored events/s | MB/s stored | events lost | stored / written | bytes per event | the program wrote events/s (median) | daemons' CPU ms per MB stored |"
	echo "|---|---|---|---|---|---|---|---|"
	/usr/bin/python3 - "$CSV" "$(getconf CLK_TCK)" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
names = {"rt": "ringtrace-relayd", "lttng": "lttng-relayd"}
for tr in ("rt", "lttng"):
    rs = [r for r in rows if r["tracer"] == tr]
    if not rs:
        continue
    def col(f):
        v = [f(r) for r in rs]
        return statistics.median(v), min(v), max(v)
    s = lambda r: float(r["elapsed_ns"]) / 1e9
    eps = col(lambda r: int(r["stored"]) / s(r))
    mbs = col(lambda r: int(r["bytes"]) / s(r) / 1e6)
    lost = col(lambda r: int(r["lost"]))
    frac = col(lambda r: int(r["stored"]) / int(r["events"]))
    bpe = col(lambda r: int(r["bytes"]) / max(1, int(r["stored"])))
    wr = col(lambda r: float(r["write_rate"] or 0))
    hz = float(sys.argv[2])
    cpu = col(lambda r: int(r["daemon_ticks"]) / hz * 1e3 / max(1e-9, int(r["bytes"]) / 1e6))
    print("| %s | %s (%s-%s) | %.1f (%.1f-%.1f) | %s (%s-%s) | %.3f (%.3f-%.3f) | %.1f | %s | %.1f (%.1f-%.1f) |" % (
        names[tr], *("{:,.0f}".format(x) for x in eps), *mbs,
        *("{:,.0f}".format(x) for x in lost), *frac, bpe[0], "{:,.0f}".format(wr[0]), *cpu))
EOF
} >"$BASE.md"
cat "$BASE.md"
say "results in $BASE.md and $BASE.csv"
