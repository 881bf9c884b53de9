#!/usr/bin/env bash
# make check-sanitize / make check-tsan: build ringtrace with sanitizers in
# a build directory of its own and run tests under them
# (docs/sanitizers.md).
#   address: AddressSanitizer, LeakSanitizer and UBSan over the unit,
#            reader, view, daemon and symbols tests (make check-sanitize)
#   thread:  ThreadSanitizer over the stress and daemon tests, and the
#            kernel domain's unit test (per-CPU readers and converters)
#            (make check-tsan)
# Every report fails the run:
#  - the build stops at the first report (-fno-sanitize-recover), and
#    reports end the process with SIGABRT (abort_on_error), which no test
#    takes for the exit status 1 or 2 it may expect from a bad input;
#  - ASan's, LeakSanitizer's and TSan's reports are also written to
#    BUILD/sanitizer-logs and any there fails the run, so that one from a
#    daemon no test waited for is not missed. (gcc's UBSan runtime, linked
#    beside ASan's, ignores log_path: its reports go to the process's
#    stderr, which the tests check.)
# Usage: scripts/check-sanitize.sh [BUILD [address|thread]]
#        (default build-asan address)
set -euo pipefail
build=${1:-build-asan}
kind=${2:-address}
src=$(cd "$(dirname "$0")/.." && pwd)

# Both leave out daemon_apps_fork: its programs fork hundreds of times
# while other threads run. Under ASan each fork copies the shadow
# memory's page tables and 300 of them take 40 to 85 s, past the test's
# limits; LeakSanitizer also reports, in each child, the heap blocks that
# only the parent's other threads' stacks pointed to (a message being
# received, metadata being written). TSan's runtime does not support the
# children going on with threads of their own (they hang in it).
fork_test='^daemon_apps_fork$'
case $kind in
address) option=ON tests='^(unit_|reader_|view|daemon_|symbols$|analysis_kernel$)' ;;
thread) option=thread tests='^(stress_|daemon_|unit_kernel_pages$)' ;;
*) echo "check-sanitize: unknown kind '$kind' (address or thread)" >&2; exit 2 ;;
esac

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DRINGTRACE_SANITIZE="$option" >/dev/null
# Quiet like `make` (compiler messages show, progress goes to build.log);
# V=1 shows every command.
if [ "${V:-0}" = 1 ]; then
	cmake --build "$build" -j "$(nproc)" --verbose
else
	cmake --build "$build" -j "$(nproc)" > "$build/build.log"
fi

logs=$(cd "$build" && pwd)/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
# verify_asan_link_order=0: daemon_security preloads a shim (not built
# with ASan) into the daemon to slow its listen().
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:verify_asan_link_order=0:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
# die_after_fork=0: the fork tests' children start the library's
# listener thread, which TSan supports but warns about.
export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:die_after_fork=0:log_path=$logs/tsan"

status=0
(cd "$build" && ctest --output-on-failure -j "$(nproc)" --timeout 900 -R "$tests" \
	-E "$fork_test") || status=1

# A log holds a report or only a warning, such as LeakSanitizer's
# "thread was not suspended" at the exit of a forked child (the parent's
# threads are still in its registry): reports are what fail.
found=$(grep -l -E '(ERROR|WARNING): [A-Za-z]+Sanitizer' "$logs"/* 2>/dev/null || true)
if [ -n "$found" ]; then
	for f in $found; do
		echo "==== $f" >&2
		cat "$f" >&2
	done
	echo "check-sanitize: $(echo "$found" | wc -l) sanitizer report(s), see above" >&2
	status=1
fi
exit $status
