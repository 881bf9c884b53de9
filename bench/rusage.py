#!/usr/bin/env python3
"""rusage.py - run a command and report the CPU time it used.

    rusage.py OUT_FILE COMMAND [ARGS...]

Runs COMMAND (its stdin, stdout and stderr are ours), waits for it with
wait4 and writes to OUT_FILE one line:

    user_ns sys_ns

(microsecond resolution, where /usr/bin/time gives 10 ms; its peak memory
is not given: a child of this interpreter starts with the interpreter's
high-water mark, /usr/bin/time -f %M is the one for memory). Exits with
the command's status (128 + N when a signal N ended it).
"""
import os
import sys

if len(sys.argv) < 3:
    sys.exit("usage: rusage.py OUT_FILE COMMAND [ARGS...]")
try:
    pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
except OSError as e:
    sys.exit(f"rusage.py: cannot run {sys.argv[2]}: {e.strerror}")
_, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{round(ru.ru_utime * 1e9)} {round(ru.ru_stime * 1e9)}\n")
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
