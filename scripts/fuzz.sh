#!/usr/bin/env bash
# scripts/fuzz.sh [BUILD_DIR] [NAME...]: build the libFuzzer harnesses
# (tests/fuzz) with clang in BUILD_DIR (default build-fuzz) and run each
# for FUZZ_SECONDS (default 60) from its corpus (tests/fuzz/corpus/NAME),
# on FUZZ_JOBS processes (default 1). New inputs go to
# BUILD_DIR/fuzz-corpus/NAME (merge the useful ones into the corpus with
# `fuzz_NAME -merge=1 tests/fuzz/corpus/NAME BUILD_DIR/fuzz-corpus/NAME`);
# a finding is written as BUILD_DIR/fuzz-findings/NAME/crash-* (or
# leak-*, timeout-*) and fails the run. Prints executions per harness.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-fuzz}
shift || true
mkdir -p "$build"
build=$(cd "$build" && pwd)
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	names=($(sed -n 's/^set(RT_FUZZ_HARNESSES \(.*\))$/\1/p' "$src/tests/fuzz/CMakeLists.txt"))
fi
command -v clang >/dev/null || { echo "fuzz: clang is needed (libFuzzer)" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
	CC=clang cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DRINGTRACE_FUZZ=ON --log-level=WARNING >/dev/null
fi
cmake --build "$build" -j "$(nproc)" $(printf -- '--target fuzz_%s ' "${names[@]}") >"$build/fuzz-build.log" 2>&1 ||
	{ tail -n 30 "$build/fuzz-build.log"; exit 1; }
status=0
for n in "${names[@]}"; do
	mkdir -p "$build/fuzz-corpus/$n" "$build/fuzz-findings/$n"
	log="$build/fuzz-findings/$n/fuzz.log"
	echo "  FUZZ      $n (${secs}s)"
	par=()
	[ "$jobs" -gt 1 ] && par=(-jobs="$jobs" -workers="$jobs")
	# From the findings directory: with -jobs, libFuzzer writes each
	# worker's log (fuzz-N.log) in the current directory.
	if ! (cd "$build/fuzz-findings/$n" && "$build/tests/fuzz/fuzz_$n" -max_total_time="$secs" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${par[@]}" \
		-artifact_prefix="$build/fuzz-findings/$n/" \
		"$build/fuzz-corpus/$n" "$src/tests/fuzz/corpus/$n") >"$log" 2>&1; then
		echo "fuzz: $n found something: $build/fuzz-findings/$n/ ($log)" >&2
		grep -m 5 -E "ERROR|SUMMARY|harness check" "$log" >&2 || true
		status=1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	echo "            $n: ${execs:-?} executions"
done
exit $status
