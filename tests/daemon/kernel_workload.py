#!/usr/bin/python3
"""A workload for the kernel sessions' tests: N_THREADS named threads
(comm "rtkw-N", nice N) each call write(2) on /dev/null WRITES times with counts
BASE + i (i = 0..WRITES-1, thread N's BASE is 1 + N * WRITES), sleeping a
moment now and then so that they are switched out. Prints its pid, waits
for a line on stdin (the session is set up to record it), works, then
prints one JSON line: {"pid", "fd", "threads": [{"name", "tid", "base", "nice"}],
"writes"}.

usage: kernel_workload.py N_THREADS WRITES [pin]  (pin: run on the first
allowed CPU only, so that one per-CPU buffer holds every event)
"""
import ctypes
import json
import os
import sys
import threading
import time

PR_SET_NAME = 15
libc = ctypes.CDLL(None, use_errno=True)


def worker(n, writes, fd, out):
    name = "rtkw-%d" % n
    libc.prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
    os.nice(n)  # this thread's only (Linux)
    time.sleep(0.005)  # switched out: the scheduler's events show its priority
    base = 1 + n * writes
    out[n] = {"name": name, "tid": threading.get_native_id(), "base": base,
              "nice": os.getpriority(os.PRIO_PROCESS, 0)}
    buf = b"x" * (base + writes)
    for i in range(writes):
        os.write(fd, buf[:base + i])
        if i % 50 == 49:
            time.sleep(0.001)


def main():
    nthreads, writes = int(sys.argv[1]), int(sys.argv[2])
    if sys.argv[3:] == ["pin"]:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(os.getpid(), flush=True)
    sys.stdin.readline()
    fd = os.open("/dev/null", os.O_WRONLY)
    out = [None] * nthreads
    threads = [threading.Thread(target=worker, args=(n, writes, fd, out))
               for n in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"pid": os.getpid(), "fd": fd, "threads": out, "writes": writes}))


if __name__ == "__main__":
    main()
