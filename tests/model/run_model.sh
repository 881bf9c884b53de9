#!/bin/sh
# tests/model/run_model.sh [-k] CONFIG...: check the ring buffer's Promela
# model (ringbuffer.pml) with spin, exhaustively, in each CONFIG, a
# comma-separated list of the model's -D switches; a CONFIG that starts
# with "!" must FAIL (a seeded mutation: spin must find the assertion it
# breaks). Prints, per run, the states explored, the memory and the time.
# Exit 0 when every run did what it should, 1 otherwise, 77 (skipped)
# without spin or a C compiler for the verifier it generates. -k keeps
# the work directory (pan.c, the trail of a failure) and prints its path.
set -u
here=$(cd "$(dirname "$0")" && pwd)
keep=0
[ "${1:-}" = -k ] && { keep=1; shift; }
command -v spin >/dev/null 2>&1 || { echo "skipped: spin is not installed (Debian package spin)"; exit 77; }
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || { echo "skipped: no C compiler ($cc) to build spin's verifier"; exit 77; }
work=$(mktemp -d)
[ $keep = 1 ] && echo "work directory: $work" || trap 'rm -rf "$work"' EXIT
status=0
for config in "$@"; do
	want=pass
	case $config in "!"*) want=fail; config=${config#!} ;; esac
	defs=
	for d in $(echo "$config" | tr ',' ' '); do defs="$defs -D$d"; done
	dir="$work/$(echo "${config:-default}" | tr ',=' '__')"
	mkdir -p "$dir"
	cp "$here/ringbuffer.pml" "$dir/"
	if ! (cd "$dir" && spin -a $defs ringbuffer.pml >spin.log 2>&1); then
		echo "FAIL [$config]: spin -a:"; cat "$dir/spin.log"; status=1; continue
	fi
	# -DCOLLAPSE: lossless compression of the stored states (the search
	# stays exhaustive); -DSAFETY: assertions and end states only.
	if ! (cd "$dir" && "$cc" -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c >cc.log 2>&1); then
		echo "FAIL [$config]: compiling the verifier:"; cat "$dir/cc.log"; status=1; continue
	fi
	start=$(date +%s)
	# Niced: a CPU-bound search of minutes must not starve the tests
	# that run beside it (make check runs them in parallel).
	(cd "$dir" && nice -n 19 ./pan -m200000 >pan.log 2>&1)
	secs=$(( $(date +%s) - start ))
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.log" | head -n 1)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$dir/pan.log" | head -n 1)
	mem=$(sed -n 's/^ *\([0-9.]*\)[[:space:]]*total actual memory usage.*/\1/p' "$dir/pan.log" | head -n 1)
	what=$(grep -m 1 -E "assertion violated|invalid end state|max search depth too small|out of memory" "$dir/pan.log")
	line="[$config] states ${states:-?}, memory ${mem:-?} MB, ${secs}s"
	if [ -z "$errors" ] || grep -qE "out of memory|max search depth too small" "$dir/pan.log"; then
		echo "FAIL $line: the search did not complete"; tail -n 20 "$dir/pan.log"; status=1
	elif [ $want = pass ] && [ "$errors" = 0 ]; then
		echo "ok   $line: no assertion violated"
	elif [ $want = fail ] && [ "$errors" != 0 ]; then
		echo "ok   $line: mutation caught: $what"
	elif [ $want = pass ]; then
		echo "FAIL $line: $what"
		(cd "$dir" && spin -t -p $defs ringbuffer.pml 2>&1 | tail -n 60); status=1
	else
		echo "FAIL $line: the mutation was not caught"; status=1
	fi
done
exit $status
