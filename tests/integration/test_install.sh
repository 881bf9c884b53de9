#!/usr/bin/env bash
# test_install.sh SOURCE_DIR BUILD_DIR: install into a prefix (what
# `make install PREFIX=DIR` runs), then check what a user gets there:
# - every man page of man/pages is installed, `man` finds it under the
#   prefix, and it renders with `man -l` without a single warning;
# - the bash completion loads (alone and under bash-completion) and
#   completes a command, an option, an option's values and, from a private
#   daemon, a session name (without starting a daemon when none runs);
# - the example builds against the installed tree with pkg-config only
#   (with the rpath that ringtrace.pc recommends, and without it under
#   LD_LIBRARY_PATH), runs under the installed `ringtrace record`, and its
#   trace reads back with babeltrace2.
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install test: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/ringtrace bin/ringtraced bin/ringtrace-relayd lib/libringtrace.so include/ringtrace/ringtrace.h \
	lib/pkgconfig/ringtrace.pc share/bash-completion/completions/ringtrace \
	share/doc/ringtrace/recording.md lib/libringtrace-libc-wrapper.so \
	lib/libringtrace-pthread-wrapper.so lib/libringtrace-dl.so lib/libringtrace-cyg-profile.so \
	lib/python3/dist-packages/ringtrace/__init__.py lib/python3/dist-packages/ringtrace/_build.py; do
	[ -e "$prefix/$f" ] || fail "missing $f after install"
done

# Man pages.
command -v man > /dev/null || fail "man is not installed (scripts/install-deps.sh check installs man-db)"
pages=0
while read -r name section _; do
	case $name in ''|'#'*) continue ;; esac
	page=$prefix/share/man/man$section/$name.$section
	[ -f "$page" ] || fail "missing man page $name($section) (built only with go-md2man and python3: scripts/install-deps.sh build)"
	found=$(MANPATH=$prefix/share/man man -w "$section" "$name") ||
		fail "man does not find $name($section) under the prefix"
	[ "$found" = "$page" ] || fail "man finds $found for $name($section), not $page"
	LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" > "$work/page.txt" 2> "$work/warn.txt" ||
		fail "man -l $page failed: $(cat "$work/warn.txt")"
	[ ! -s "$work/warn.txt" ] || fail "$name($section) renders with warnings: $(cat "$work/warn.txt")"
	grep -q "^NAME" "$work/page.txt" && grep -qE "^       $name +- " "$work/page.txt" ||
		fail "$name($section) has no NAME section"
	grep -q '^SEE ALSO' "$work/page.txt" || fail "$name($section) has no SEE ALSO section"
	! grep -n '\\[_|]\|`\|\*\*\|](' "$work/page.txt" ||
		fail "$name($section) shows Markdown or escapes as text (above)"
	pages=$((pages + 1))
done < "$src/man/pages"
[ "$pages" -ge 25 ] || fail "only $pages man pages in man/pages"
# A page's content: the options of record, from docs/recording.md.
LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$prefix/share/man/man1/ringtrace-record.1" > "$work/record.txt"
grep -q '^       --overwrite$' "$work/record.txt" || fail "ringtrace-record(1) lacks --overwrite"
grep -q 'RINGTRACE_OUTPUT' "$work/record.txt" || fail "ringtrace-record(1) lacks the environment"

# Bash completion: COMP_WORDS -> COMPREPLY, one word a line.
complete_words() {
	local framework=$1; shift
	bash --norc --noprofile -c '
		[ -n "$1" ] && . "$1"
		. "$2"
		shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_ringtrace
		printf "%s\n" "${COMPREPLY[@]}"' \
		bash "$framework" "$prefix/share/bash-completion/completions/ringtrace" \
		"$prefix/bin/ringtrace" "$@"
}
frameworks=("")
[ -f /usr/share/bash-completion/bash_completion ] &&
	frameworks+=(/usr/share/bash-completion/bash_completion)
for fw in "${frameworks[@]}"; do
	out=$(complete_words "$fw" enable-)
	[ "$out" = $'enable-channel\nenable-event\nenable-rotation' ] || fail "completing 'enable-' gave: $out"
	out=$(complete_words "$fw" record --subb)
	[ "$out" = "--subbuf-size" ] || fail "completing 'record --subb' gave: $out"
	out=$(complete_words "$fw" analyze --format "")
	[ "$out" = $'text\njson' ] || fail "completing 'analyze --format ' gave: $out"
	out=$(complete_words "$fw" view --format=j)
	[ "$out" = "--format=json" ] || fail "completing 'view --format=j' gave: $out"
done
# Session names come from the running daemon (a private one here).
export RINGTRACE_RUNDIR=$work/run RINGTRACED=$prefix/bin/ringtraced
mkdir -m 0700 "$RINGTRACE_RUNDIR"
out=$(complete_words "" start "")
[ -z "$out" ] || fail "completing 'start ' without a daemon gave: $out"
[ ! -e "$RINGTRACE_RUNDIR/ringtraced.sock" ] || fail "completion started a daemon"
trap 'kill "$(cat "$work/run/ringtraced.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$work"' EXIT
"$prefix/bin/ringtrace" create comptest -o "$work/comptest" > /dev/null
out=$(complete_words "" start co)
[ "$out" = comptest ] || fail "completing 'start co' gave: $out"
out=$(complete_words "" enable-event -s "")
[ "$out" = comptest ] || fail "completing 'enable-event -s ' gave: $out"
"$prefix/bin/ringtrace" destroy comptest > /dev/null
kill "$(cat "$RINGTRACE_RUNDIR/ringtraced.pid")"
unset RINGTRACE_RUNDIR RINGTRACED
# With bash-completion, `complete -p` after loading on demand names _ringtrace.
if [ ${#frameworks[@]} -gt 1 ]; then
	XDG_DATA_DIRS=$prefix/share bash --norc --noprofile -c '
		. /usr/share/bash-completion/bash_completion
		__load_completion ringtrace && complete -p ringtrace' > "$work/complete.txt" ||
		fail "bash-completion does not load the completion from the prefix"
	grep -q -- '-F _ringtrace ringtrace' "$work/complete.txt" ||
		fail "bash-completion loaded: $(cat "$work/complete.txt")"
fi

# pkg-config: build with the rpath the .pc recommends, and without it.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
grep -q 'LD_LIBRARY_PATH' "$prefix/lib/pkgconfig/ringtrace.pc" || fail "ringtrace.pc does not say what a prefix needs"
libdir=$(pkg-config --variable=libdir ringtrace)
# The .pc's ABI numbers are the installed header's, and the library's
# soname is libringtrace.so.SOVERSION (RT_ABI_OLDEST - 1).
header=$prefix/include/ringtrace/ringtrace_types.h
for v in VERSION OLDEST; do
	want=$(sed -n "s/^#define RT_ABI_$v \([0-9]*\)$/\1/p" "$header")
	got=$(pkg-config --variable="abi_${v,,}" ringtrace)
	[ -n "$want" ] && [ "$got" = "$want" ] || fail "ringtrace.pc: abi_${v,,}=$got, the header says $want"
done
soversion=$(pkg-config --variable=soversion ringtrace)
[ "$soversion" = $(($(pkg-config --variable=abi_oldest ringtrace) - 1)) ] ||
	fail "ringtrace.pc: soversion=$soversion"
objdump -p "$libdir/libringtrace.so" | grep -qE "SONAME +libringtrace\.so\.$soversion\$" ||
	fail "libringtrace.so's soname is not libringtrace.so.$soversion"
cc -std=gnu11 -Wall -Wextra -Werror -O2 -o "$work/demo" "$src/examples/demo.c" \
	$(pkg-config --cflags --libs ringtrace) -pthread -Wl,-rpath,"$libdir"
cc -std=gnu11 -Wall -Wextra -Werror -O2 -o "$work/demo-norpath" "$src/examples/demo.c" \
	$(pkg-config --cflags --libs ringtrace) -pthread
if env -u LD_LIBRARY_PATH "$work/demo-norpath" 1 > /dev/null 2>&1; then
	ldd "$work/demo-norpath" | grep -q "=> /usr" || fail "demo without rpath ran, but not from /usr"
else
	LD_LIBRARY_PATH=$libdir "$work/demo-norpath" 1 > "$work/out1"
	grep -qx "served 3 requests" "$work/out1" || fail "demo with LD_LIBRARY_PATH: $(cat "$work/out1")"
fi
"$prefix/bin/ringtrace" record -q -o "$work/trace" -- "$work/demo" 10 > "$work/out"
grep -qx "served 30 requests" "$work/out"
babeltrace2 "$work/trace" > "$work/bt.txt"
n=$(grep -c ' http:request_done: ' "$work/bt.txt")
[ "$n" = 30 ] || fail "expected 30 http:request_done events, got $n"
grep -q 'http:request_done: .* status = 200, bytes = 64' "$work/bt.txt"
grep -q 'demo:stop: .*served = 30' "$work/bt.txt"
echo "install test ok: $pages man pages, completion, $n events"
