#!/usr/bin/python3
"""Time from a cluster trigger firing on one host to every host's snapshot
stored at the relay (docs/relay.md, docs/performance.md).

One relay and three session daemons on this machine (hosts A, B and C:
their own run directories and RINGTRACE_HOSTNAME, loopback), each with a
snapshot session S sent to the relay and recording a traced program
(tests/daemon/app_prog). A has the trigger: event-rule-matches on
app:tick with tag "fire" -> snapshot-session S --cluster. Per run, each
host's program writes EVENTS events, then A's writes the one that fires;
the relay logs, once every host answered, how long after the trigger
(the event's time on A, put on the relay's clock) each host's snapshot
was stored. Runs are 1.2 s apart (the relay takes one request a second
per session name). Medians (and min, max) over the runs, of the last
host and of each. Report only, nothing asserted.

usage: bench/cluster_trigger.py BUILD_DIR [RUNS [EVENTS]]   (default 9, 20000)
"""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

DONE = re.compile(r"cluster snapshot (\d+) of session S \(trigger on host A\): (\d+) of (\d+) "
                  r"hosts stored as \S+, the last ([\d.]+) ms after the trigger \(([^)]*)\)")


def main():
    build = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    events = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    tmp = tempfile.mkdtemp(prefix="rt-bench-cluster-")
    secret = os.path.join(tmp, "relay.secret")
    relay_log = os.path.join(tmp, "relay.log")
    rt_bin = os.path.join(build, "src/cli/ringtrace")
    procs, apps = [], {}
    try:
        with open(relay_log, "w") as log:
            relay = subprocess.Popen([os.path.join(build, "src/relay/ringtrace-relayd"), "-o",
                                      os.path.join(tmp, "out"), "-C", "tcp://127.0.0.1:0",
                                      "-D", "tcp://127.0.0.1:0", "-L", "tcp://127.0.0.1:0"],
                                     env=dict(os.environ, RINGTRACE_RELAY_SECRET=secret,
                                              RINGTRACE_RUNDIR=os.path.join(tmp, "relay")),
                                     stdout=log, stderr=log)
        procs.append(relay)
        ports = None
        for _ in range(200):
            m = re.search(r"control port [^ ]*:(\d+), data port [^ ]*:(\d+)",
                          open(relay_log).read())
            if m:
                ports = m.groups()
                break
            time.sleep(0.05)
        if not ports:
            raise SystemExit("the relay did not start: " + open(relay_log).read())
        url = "net://127.0.0.1:%s:%s" % ports
        envs = {}
        for h in "ABC":
            base = os.path.join(tmp, h)
            os.makedirs(os.path.join(base, "home"))
            env = dict(os.environ, RINGTRACE_RUNDIR=os.path.join(base, "run"),
                       HOME=os.path.join(base, "home"), RINGTRACE_HOSTNAME=h,
                       RINGTRACE_RELAY_SECRET=secret, RINGTRACE_DAEMON_TIMEOUT_MS="5000")
            envs[h] = env
            with open(os.path.join(base, "daemon.log"), "w") as log:
                procs.append(subprocess.Popen([os.path.join(build, "src/daemon/ringtraced"),
                                               "-f"], env=env, stdout=log, stderr=log))
            for _ in range(100):
                if os.path.exists(os.path.join(base, "run", "ringtraced.sock")):
                    break
                time.sleep(0.05)

            def rt(*args, env=env):
                r = subprocess.run([rt_bin, *args], env=env, capture_output=True, text=True,
                                   timeout=120)
                if r.returncode:
                    raise SystemExit(f"ringtrace {' '.join(args)}: {r.stderr}")
            rt("create", "S", "--snapshot", "--set-url=" + url)
            rt("enable-event", "-u", "-a")
            rt("start")
            if h == "A":
                rt("add-trigger", "--name=cl", "--condition=event-rule-matches", "--type=user",
                   "--name=app:tick", "--filter=tag == \"fire\"",
                   "--action=snapshot-session", "S", "--cluster")
            app = subprocess.Popen([os.path.join(build, "tests/daemon/app_prog")], env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(app)
            if not app.stdout.readline().startswith("ready"):
                raise SystemExit("app_prog did not start")
            apps[h] = app

        def cmd(h, line):
            apps[h].stdin.write(line + "\n")
            apps[h].stdin.flush()
            return apps[h].stdout.readline()

        last, per = [], {h: [] for h in "ABC"}
        for run in range(runs):
            for h in "ABC":
                cmd(h, "emit %d r%d" % (events, run))
            cmd("A", "emit 1 fire")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                found = [m for m in DONE.finditer(open(relay_log).read())
                         if int(m.group(1)) == run + 1]
                if found:
                    break
                time.sleep(0.02)
            else:
                raise SystemExit("run %d: no cluster snapshot: %s" % (run, open(relay_log).read()))
            m = found[0]
            if m.group(2) != m.group(3) or m.group(3) != "3":
                raise SystemExit("run %d: %s" % (run, m.group(0)))
            last.append(float(m.group(4)))
            for h, ms in re.findall(r"(\w) ([\d.]+) ms", m.group(5)):
                per[h].append(float(ms))
            time.sleep(1.2)

        def line(name, v):
            print("%-34s median %8.1f ms  (min %.1f, max %.1f, %d runs)"
                  % (name, statistics.median(v), min(v), max(v), len(v)))
        print("cluster trigger on A -> snapshots of A, B and C stored at the relay "
              "(%d events per host per run)" % events)
        line("trigger -> every host stored", last)
        for h in "ABC":
            line("trigger -> host %s stored" % h, per[h])
    finally:
        for a in apps.values():
            if a.poll() is None:
                a.stdin.close()
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        if not os.environ.get("RT_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
