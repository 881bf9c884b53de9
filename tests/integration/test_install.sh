#!/usr/bin/env bash
# test_install.sh SOURCE_DIR BUILD_DIR: install into a prefix (what
# `make install PREFIX=DIR` runs), build the example against the installed
# tree with pkg-config only, run it under the installed `ringtrace record`,
# and check the trace with babeltrace2.
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/ringtrace lib/libringtrace.so include/ringtrace/ringtrace.h lib/pkgconfig/ringtrace.pc; do
	[ -e "$prefix/$f" ] || { echo "missing $f after install"; exit 1; }
done
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc -std=gnu11 -Wall -Wextra -Werror -O2 -o "$work/demo" "$src/examples/demo.c" \
	$(pkg-config --cflags --libs ringtrace) -pthread -Wl,-rpath,"$prefix/lib"
"$prefix/bin/ringtrace" record -q -o "$work/trace" -- "$work/demo" 10 > "$work/out"
grep -qx "served 30 requests" "$work/out"
babeltrace2 "$work/trace" > "$work/bt.txt"
n=$(grep -c ' http:request_done: ' "$work/bt.txt")
[ "$n" = 30 ] || { echo "expected 30 http:request_done events, got $n"; exit 1; }
grep -q 'http:request_done: .* status = 200, bytes = 64' "$work/bt.txt"
grep -q 'demo:stop: .*served = 30' "$work/bt.txt"
echo "install test ok: $n events"
