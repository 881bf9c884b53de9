# bench/common.sh - sourced by the bench scripts (run.sh, kernel.sh,
# relay.sh): their messages, their `BUILD_DIR [--MODE]` arguments and
# their exit.
#
#   BENCH_NAME=bench/kernel BENCH_MODES="quick" . "$(dirname "$0")/common.sh"
#   bench_args "$@"
#
# die/say print "BENCH_NAME: ..." on stderr (die exits 1). bench_args sets
# SRC (the repository), BUILD (the build directory, absolute) and MODE
# (full, or one of BENCH_MODES given as --MODE); anything else is refused
# with the usage line.

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }
say() { echo "$BENCH_NAME: $*" >&2; }

bench_args() {
	local usage="usage: $0 BUILD_DIR" m
	for m in $BENCH_MODES; do
		usage="$usage [--$m]"
	done
	[ $# -ge 1 ] || die "$usage"
	SRC=$(cd "$(dirname "$0")/.." && pwd)
	BUILD=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1 (run make first)"
	MODE=full
	[ -z "${2:-}" ] && return 0
	for m in $BENCH_MODES; do
		if [ "$2" = "--$m" ]; then
			MODE=$m
			return 0
		fi
	done
	die "unknown option $2"
}

# The end of a script's cleanup (after it ended its own daemons and
# instances): with a failure (rc, not 0), the last 20 lines of ERRLOG (the
# programs' messages); then T (the script's temporary directory) removed,
# and exit rc.
bench_exit() {
	local rc=$1
	if [ "$rc" -ne 0 ] && [ -s "$ERRLOG" ]; then
		say "last messages of the programs:"
		tail -n 20 "$ERRLOG" >&2
	fi
	rm -rf "$T"
	exit "$rc"
}

# The script's function `cleanup` runs at exit, also after SIGINT and
# SIGTERM (exit codes 130 and 143).
bench_traps() {
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}
