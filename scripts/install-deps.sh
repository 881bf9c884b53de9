#!/usr/bin/env bash
# scripts/install-deps.sh [STEP] [BUILD_DIR]: install on a Debian machine what
# STEP needs, and nothing when it is all there already:
#   build  compiler, CMake, pkg-config, liburcu (the daemon's hash tables),
#          libtracefs and libtraceevent (the kernel domain), elfutils' libdw
#          (symbols of the `ip` context), OpenSSL's libcrypto (the relay's
#          HMAC-SHA256 authentication);
#          Python 3 and go-md2man, which make the man pages from docs/
#          (scripts/md2man.py)
#   demo   build + babeltrace2 (make demo)
#   check  demo + what the tests use: python3-bt2, LTTng (the comparison
#          tests), clang, man-db and bash-completion (the install test reads
#          the man pages and completes commands), spin (the ring buffer's
#          model, tests/model), and chromium, which only
#          the report test needs (it skips with exit status 77 without it)
#   bench  build + babeltrace2, python3-bt2 and LTTng-UST, and the kernel
#          tracers the kernel domain is measured against: trace-cmd,
#          strace, linux-perf (make bench)
# Default STEP: check (everything but nothing more than the tests need).
# When something was installed and BUILD_DIR holds a configured build, CMake
# configures it again so that it finds what is new (the LTTng test programs
# are built only when liblttng-ust-dev is there, for instance).
set -euo pipefail
step=${1:-check}
build_dir=${2:-}

build=(build-essential cmake pkg-config liburcu-dev libtracefs-dev libtraceevent-dev
       libdw-dev libssl-dev python3 go-md2man)
demo=("${build[@]}" babeltrace2)
check=("${demo[@]}" python3-bt2 lttng-tools liblttng-ust-dev liburcu-dev clang
       man-db bash-completion chromium spin)
bench=("${build[@]}" babeltrace2 python3-bt2 lttng-tools liblttng-ust-dev liburcu-dev
       trace-cmd strace linux-perf)
case $step in
build) pkgs=("${build[@]}") ;;
demo) pkgs=("${demo[@]}") ;;
check) pkgs=("${check[@]}") ;;
bench) pkgs=("${bench[@]}") ;;
*) echo "install-deps: unknown step '$step' (build, demo, check or bench)" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ -n "$build_dir" ] && [ -f "$build_dir/CMakeCache.txt" ]; then
	cmake -S "$(dirname "$0")/.." -B "$build_dir" >/dev/null
fi
