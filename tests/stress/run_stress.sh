#!/usr/bin/env bash
# run_stress.sh BUILD_DIR NAME MODE THREADS EVENTS INTERVAL_US [record options...]
# Records the stress producer under `ringtrace record`, checks the trace
# event by event with check_stress, and has babeltrace2 read it all.
set -euo pipefail
build=$1 name=$2 mode=$3 threads=$4 events=$5 interval=$6
shift 6
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-stress-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
trace=$work/trace
opts=("$@")
[ "$mode" = overwrite ] && opts+=(--overwrite)

"$build/src/cli/ringtrace" record -o "$trace" "${opts[@]}" -- \
	"$build/tests/stress/stress" "$threads" "$events" "$interval" \
	> "$work/manifest" 2> "$work/record.log" || { cat "$work/record.log"; exit 1; }
cat "$work/record.log"
"$build/tests/stress/check_stress" "$trace" "$work/manifest" "$mode"

# babeltrace2 must read every packet without error; its event count must
# match ours.
if ! babeltrace2 "$trace" > "$work/bt.txt" 2> "$work/bt.err"; then
	echo "babeltrace2 failed:"; head -20 "$work/bt.err"; exit 1
fi
bt_events=$(grep -c ' stress:ev: ' "$work/bt.txt" || true)
ours=$("$build/src/cli/ringtrace" summary "$trace" | awk '/stress:ev$/ {print $1}')
if [ "$bt_events" != "${ours:-0}" ]; then
	echo "babeltrace2 read $bt_events events, ringtrace $ours"; exit 1
fi
echo "babeltrace2: $bt_events events, no error"
