#!/usr/bin/python3
"""How long a kernel trigger takes from the event to the snapshot complete
on disk: a program is killed with kill -9, the kernel's signal_generate
(sig == 9, the program's comm) fires a trigger whose actions are
snapshot-session then notify, and the notification reaches
`ringtrace notifications` once the snapshot is written.

A private ringtraced (root) has a snapshot session with a user channel
(app:tick, SUBBUF x 4 per buffer set) and a kernel channel
(signal_generate, every process); each repeat starts
tests/daemon/app_prog, has it emit EVENTS events, kills it and waits for
its notification. Printed per phase, median and 90th percentile over the
repeats, in milliseconds:
  detect   kill(2) called -> the daemon fires the trigger (its
           notification's time-ns; both CLOCK_REALTIME);
  snapshot the firing -> the notification read by the subscriber (the
           snapshot-session action ran first: the snapshot is on disk);
  total    kill(2) -> the notification read.
Each snapshot is checked to hold the user and the kernel traces.
Then what a trigger on a frequent event costs the daemon: a trigger on
this script's getppid(2) calls (syscall:entry, filtered on its tid,
action notify with no subscriber), FREQUENT calls as fast as Python
makes them; printed: the matches fired and lost, and the daemon's CPU
time (user + system, /proc) per match. Report only, nothing asserted.

usage: bench/trigger_kernel.py BUILD_DIR [REPEATS [EVENTS [SUBBUF [FREQUENT]]]]
       (default 30 repeats, 2000 events, 64k sub-buffers, 200000 calls)
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])      # utime + stime


def counts(rt, name):
    out = rt("list-triggers").split(f"- name: {name}\n", 1)[1]
    get = lambda key: int(out.split(f"{key}: ", 1)[1].split("\n", 1)[0])  # noqa: E731
    return get("fired"), get("events lost")


def frequent_cost(rt, daemon_pid, calls):
    rt("add-trigger", "--name=often", "--condition=event-rule-matches",
       "--type=syscall:entry", "--name=getppid", f"--filter=$ctx.tid == {os.getpid()}",
       "--action=notify")
    before = cpu_ticks(daemon_pid)
    for _ in range(calls):
        os.getppid()
    # Until the daemon has taken every match (no change for 0.5 s).
    last, still = None, 0
    while still < 5:
        now = counts(rt, "often")
        still = still + 1 if now == last else 0
        last = now
        time.sleep(0.1)
    used = (cpu_ticks(daemon_pid) - before) / os.sysconf("SC_CLK_TCK")
    fired, lost = last
    print(f"frequent trigger: {calls} getppid calls, {fired} fired, {lost} events lost; "
          f"daemon CPU {used * 1e3:.0f} ms, {used * 1e6 / max(fired, 1):.2f} us per match "
          f"(list-triggers polled 10 times a second meanwhile)")


def main():
    build = os.path.abspath(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    events = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    subbuf = sys.argv[4] if len(sys.argv) > 4 else "64k"
    frequent = int(sys.argv[5]) if len(sys.argv) > 5 else 200000
    if os.geteuid() != 0:
        sys.exit("bench/trigger_kernel.py: the kernel domain needs root")
    tmp = tempfile.mkdtemp(prefix="rt-bench-ktrig-")
    os.chmod(tmp, 0o755)
    env = dict(os.environ, RINGTRACE_RUNDIR=os.path.join(tmp, "run"), HOME=tmp,
               RINGTRACE_DAEMON_TIMEOUT_MS="5000")
    rtbin = os.path.join(build, "src/cli/ringtrace")
    log = open(os.path.join(tmp, "daemon.log"), "w")
    daemon = subprocess.Popen([os.path.join(build, "src/daemon/ringtraced"), "-f"], env=env,
                              stdout=log, stderr=log)
    sub = None
    try:
        for _ in range(200):
            if os.path.exists(os.path.join(tmp, "run", "ringtraced.sock")):
                break
            time.sleep(0.025)

        def rt(*args):
            r = subprocess.run([rtbin, *args], env=env, capture_output=True, text=True,
                               timeout=120)
            if r.returncode:
                sys.exit(f"ringtrace {' '.join(args)}: {r.stderr}")
            return r.stdout

        snaps = os.path.join(tmp, "snaps")
        rt("create", "fr", "--snapshot", "-o", snaps)
        rt("enable-channel", "-u", "channel0", "--subbuf-size", subbuf, "--num-subbuf", "4")
        rt("enable-event", "-u", "app:tick")
        rt("enable-event", "-k", "signal_generate")
        rt("track", "-k", "--all")
        rt("start")
        rt("add-trigger", "--name=killed", "--condition=event-rule-matches", "--type=kernel",
           "--name=signal_generate", '--filter=sig == 9 && comm == "app_prog"',
           "--capture=pid", "--action=snapshot-session", "fr", "--action=notify")
        sub = subprocess.Popen([rtbin, "notifications", "--trigger", "killed"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sub.stderr.readline()       # subscribed
        detect, snap, total = [], [], []
        for _ in range(repeats):
            prog = subprocess.Popen([os.path.join(build, "tests/daemon/app_prog")], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            prog.stdout.readline()
            prog.stdin.write(f"emit {events} b\n")
            prog.stdin.flush()
            prog.stdout.readline()
            t0_real = time.time_ns()
            t0 = time.monotonic_ns()
            os.kill(prog.pid, signal.SIGKILL)
            while True:
                n = json.loads(sub.stdout.readline())
                if n["captures"].get("pid") == prog.pid:
                    break
            t1 = time.monotonic_ns()
            prog.wait()
            prog.stdin.close()
            prog.stdout.close()
            parts = {d for d, _, f in os.walk(n["snapshot"]) if "metadata" in f}
            if not any(p.endswith("/kernel") for p in parts) or len(parts) < 2:
                sys.exit(f"snapshot {n['snapshot']} lacks a trace: {sorted(parts)}")
            detect.append((n["time_ns"] - t0_real) / 1e6)
            total.append((t1 - t0) / 1e6)
            snap.append(total[-1] - detect[-1])
        print(f"kill -9 -> snapshot on disk, {repeats} repeats, {events} user events each, "
              f"user channel {subbuf} x 4 per buffer set, {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f}")
        for name, v in (("detect", detect), ("snapshot", snap), ("total", total)):
            q = statistics.quantiles(v, n=10)
            print(f"  {name:9s} median {statistics.median(v):7.2f} ms   p90 {q[-1]:7.2f} ms   "
                  f"min {min(v):7.2f} ms")
        frequent_cost(rt, daemon.pid, frequent)
    finally:
        if sub:
            sub.kill()
            sub.wait()
        daemon.terminate()
        daemon.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
