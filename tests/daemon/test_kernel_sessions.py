#!/usr/bin/python3
"""The kernel domain in ringtraced's sessions (root, tracefs): a session
with `enable-event -k sched_switch` and `enable-event -k --syscall write`
records a workload whose write(2) calls (fd, count, ret) and threads (in
sched_switch) are read back with babeltrace2 and `ringtrace view`; a
snapshot session keeps the newest kernel events; a user other than root
gets one line saying why not; the session's tracefs instance is gone after
destroy, and after kill -9 of the daemon once a new daemon starts. Exit 77
with the reason when the kernel domain cannot be used here.

usage: test_kernel_sessions.py BUILD_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import bt2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
DAEMON_DIR = os.path.join(BUILD, "src/daemon")
WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_workload.py")
KERNEL_APP = os.path.join(BUILD, "tests/daemon/kernel_app")
INSTANCES = "/sys/kernel/tracing/instances"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def read_bt2(path):
    """(name, tid, payload) of every event of the traces under path, in
    time order (rtfixtures.bt2_read), and the number of events reported
    lost."""
    msgs, lost, _ = rtfixtures.bt2_read(path)
    return [(m.event.name, int(m.event.common_context_field["tid"]),
             rtfixtures.bt2_plain(m.event.payload_field)) for m in msgs], lost


def writes_of(events, tid, fd):
    """The (count, ret) of each write(2) on fd by tid, in order."""
    out, pending = [], None
    for name, t, p in events:
        if t != tid:
            continue
        if name == "syscall_entry_write":
            pending = p["count"] if p["fd"] == fd else None
        elif name == "syscall_exit_write" and pending is not None:
            out.append((pending, p["ret"]))
            pending = None
    return out


def ours(daemon_pid):
    prefix = "ringtrace-%d-" % daemon_pid
    return sorted(n for n in os.listdir(INSTANCES) if n.startswith(prefix))


class KernelSession(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-ksess-")
        os.chmod(self.tmp, 0o755)
        self.env = dict(os.environ, RINGTRACE_RUNDIR=os.path.join(self.tmp, "run"),
                        HOME=self.tmp, RINGTRACE_DAEMON_TIMEOUT_MS="5000",
                        PATH=DAEMON_DIR + os.pathsep + os.environ.get("PATH", ""))
        self.env.pop("RINGTRACED", None)

    def tearDown(self):
        pid = self.daemon_pid()
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def daemon_pid(self):
        try:
            with open(os.path.join(self.tmp, "run", "ringtraced.pid")) as f:
                return int(f.read())
        except (OSError, ValueError):
            return None

    def rt(self, *args, env=None, pre=()):
        return subprocess.run([*pre, RINGTRACE, *args], capture_output=True, text=True,
                              env=env or self.env, timeout=120)

    def ok(self, *args):
        r = self.rt(*args)
        self.assertEqual(r.returncode, 0, "ringtrace %s: %s%s" % (" ".join(args), r.stdout,
                                                                  r.stderr))
        return r.stdout

    def workload(self, nthreads, writes, *pin):
        """Start the workload: its pid, and a function that lets it run and
        returns what it did."""
        p = subprocess.Popen(["/usr/bin/python3", WORKLOAD, str(nthreads), str(writes), *pin],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        pid = int(p.stdout.readline())

        def run():
            out, _ = p.communicate("go\n", timeout=120)
            self.assertEqual(p.returncode, 0)
            return json.loads(out)
        return pid, run

    def test_session_records_writes_and_threads(self):
        out = os.path.join(self.tmp, "trace")
        self.ok("create", "k", "-o", out)
        # The workload's threads only (set_event_pid, following its clones).
        pid, run = self.workload(3, 400)
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("enable-event", "-k", "sched_switch")
        self.ok("enable-event", "-k", "--syscall", "write")
        listing = self.ok("list", "k")
        self.assertIn("=== Domain: Linux kernel ===", listing)
        self.assertIn("sched_switch (type: tracepoint) [enabled]", listing)
        self.assertIn("write (type: syscall) [enabled]", listing)
        self.ok("start")
        names = ours(self.daemon_pid())
        self.assertEqual(names, ["ringtrace-%d-k" % self.daemon_pid()])
        with open(os.path.join(INSTANCES, names[0], "trace_clock")) as f:
            self.assertRegex(f.read(), r"\[(x86-tsc|mono)\]")
        info = run()
        self.ok("stop")
        status = self.ok("status")
        m = re.search(r"kernel channel0: ftrace buffers \d+ bytes, events (\d+), lost (\d+)",
                      status)
        self.assertTrue(m, status)

        kdir = os.path.join(out, "kernel")
        events, lost = read_bt2(kdir)
        self.assertEqual(int(m.group(1)), len(events), "status counts what was written")
        self.assertEqual(lost, 0, "a 4 MiB buffer per CPU loses nothing here")
        # Every name each tid was switched in or out with: a thread is
        # switched in as "python3" before its prctl too, and one that runs
        # from its prctl to its end without being preempted is switched in
        # under its name never, but out under it at its end.
        switched_in = {}
        for n, _, p in events:
            if n == "sched_switch":
                switched_in.setdefault(p["next_tid"], set()).add(p["next_comm"])
                switched_in.setdefault(p["prev_tid"], set()).add(p["prev_comm"])
        for t in info["threads"]:
            got = writes_of(events, t["tid"], info["fd"])
            want = [(t["base"] + i, t["base"] + i) for i in range(info["writes"])]
            self.assertEqual(got, want, "thread %s's write(2) calls" % t["name"])
            self.assertIn(t["name"], switched_in.get(t["tid"], set()),
                             "thread %s in sched_switch" % t["name"])

        # Our reader: the same events in the same order.
        r = subprocess.run([RINGTRACE, "view", kdir], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual([l.split(": ")[0].split()[-1] for l in lines], [e[0] for e in events])
        t0 = info["threads"][0]
        entry = re.compile(r"syscall_entry_write: \{ tid = %d \}, \{ fd = %d, buf = 0x[0-9a-f]+, "
                           r"count = (\d+) \}$" % (t0["tid"], info["fd"]))
        counts = [int(m.group(1)) for m in map(entry.search, lines) if m]
        self.assertEqual(counts, [t0["base"] + i for i in range(info["writes"])])

        self.ok("destroy", "k")
        self.assertEqual(ours(self.daemon_pid()), [], "destroy removes the instance")

    def test_per_rule_filters(self):
        """Two system call rules on write(2) with different filters (LTTng's
        language: payload fields, $ctx.procname, a glob) and a tracepoint
        rule with LTTng's field names and values (prev_tid is ftrace's
        prev_pid; prev_prio is LTTng's, the kernel's minus 100, so the
        workload's nice 0 threads have 20): the trace holds exactly the
        events one of its rules' filters passes."""
        out = os.path.join(self.tmp, "filtered")
        self.ok("create", "f", "-o", out)
        pid, run = self.workload(2, 100)       # counts 1..100 and 101..200
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("enable-event", "-k", "--syscall", "write", "--filter",
                'count <= 10 && $ctx.procname == "rtkw-0"')
        self.ok("enable-event", "-k", "--syscall", "write", "--filter",
                "count >= 195 || count == 42")
        self.ok("enable-event", "-k", "sched_switch", "--filter",
                'prev_comm == "rtkw-*" && prev_tid != 0 && prev_prio == 20')
        listing = self.ok("list", "f")
        self.assertIn('write (type: syscall) [filter: count >= 195 || count == 42] [enabled]',
                      listing)
        self.ok("start")
        info = run()
        self.ok("stop")
        events, lost = read_bt2(os.path.join(out, "kernel"))
        self.assertEqual(lost, 0)
        t0, t1 = (t["tid"] for t in info["threads"])
        # The state dump's, and the two rules' events; the exits have no
        # count: no rule's filter passes on them.
        events = [e for e in events if not e[0].startswith("lttng_statedump_")]
        self.assertEqual({n for n, _, _ in events}, {"syscall_entry_write", "sched_switch"})
        got = sorted((tid, p["count"]) for n, tid, p in events
                     if n == "syscall_entry_write" and p["fd"] == info["fd"])
        want = sorted([(t0, c) for c in range(1, 11)] + [(t0, 42)] +
                      [(t1, c) for c in range(195, 201)])
        self.assertEqual(got, want)
        for n, tid, p in events:
            if n == "syscall_entry_write":
                self.assertTrue(p["count"] >= 195 or p["count"] == 42 or
                                (p["count"] <= 10 and tid == t0), (tid, p))
            else:
                self.assertTrue(p["prev_comm"].startswith("rtkw-") and p["prev_tid"] != 0
                                and p["prev_prio"] == 20, p)
        switched = {p["prev_tid"] for n, _, p in events if n == "sched_switch"}
        self.assertTrue(switched & {t0, t1}, "the workload's threads were switched out")
        self.ok("destroy", "f")

    def test_procname_is_the_current_threads(self):
        """$ctx.procname is the name of the thread that emits the event,
        not the event's own `comm` field (signal_generate's comm is the
        signal's target): this process, not "sleep", sends the signals,
        so the SIGTERM to sleep A is dropped and the SIGUSR1 to sleep B
        recorded."""
        out = os.path.join(self.tmp, "procname")
        a, b = (subprocess.Popen(["sleep", "60"]) for _ in range(2))
        for p in (a, b):
            self.addCleanup(p.wait)
            self.addCleanup(p.kill)
        with open("/proc/self/comm") as f:
            comm = f.read().strip()
        self.ok("create", "p", "-o", out)
        self.ok("enable-event", "-k", "signal_generate", "--filter",
                f'(sig == 15 && pid == {a.pid} && $ctx.procname == "sleep") || '
                f'(sig == 10 && pid == {b.pid} && $ctx.procname == "{comm}")')
        self.ok("start")
        a.send_signal(signal.SIGTERM)
        b.send_signal(signal.SIGUSR1)
        a.wait()
        b.wait()
        self.ok("stop")
        events, lost = read_bt2(os.path.join(out, "kernel"))
        self.assertEqual(lost, 0)
        got = [(tid, p["pid"], p["sig"]) for n, tid, p in events if n == "signal_generate"]
        self.assertEqual(got, [(os.getpid(), b.pid, 10)])
        self.ok("destroy", "p")

    def test_user_and_kernel_merged(self):
        """kernel_app emits kapp:before, calls write(2), emits kapp:after,
        10,000 times: in the session's directory read as one collection,
        each write's entry and exit lie between its two user events."""
        out = os.path.join(self.tmp, "merged")
        self.ok("create", "m", "-o", out)
        p = subprocess.Popen([KERNEL_APP, "10000"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=self.env)
        self.addCleanup(p.kill)
        pid = int(p.stdout.readline().split()[1])
        self.ok("track", "-u", "--pid", str(pid))
        self.ok("enable-event", "-k", "--syscall", "write")
        self.ok("enable-event", "-u", "kapp:*")
        self.ok("add-context", "-u", "-t", "vtid")
        self.ok("start")
        done, _ = p.communicate("go\n", timeout=120)
        self.assertEqual(p.returncode, 0)
        fd = int(done.split()[1])
        self.ok("stop")
        seq, state = 0, "before"
        for msg in bt2.TraceCollectionMessageIterator(out):
            if type(msg) is not bt2._EventMessageConst:
                continue
            ev = msg.event
            ctx = ev.common_context_field
            tid = int(ctx["tid"] if "tid" in ctx else ctx["vtid"])
            if tid != pid:
                continue
            p_ = ev.payload_field
            step = (ev.name, state)
            if step == ("kapp:before", "before"):
                self.assertEqual(int(p_["seq"]), seq)
                state = "entry"
            elif step == ("syscall_entry_write", "entry") and int(p_["fd"]) == fd:
                self.assertEqual(int(p_["count"]), 1 + seq % 100)
                state = "exit"
            elif step == ("syscall_exit_write", "exit"):
                self.assertEqual(int(p_["ret"]), 1 + seq % 100)
                state = "after"
            elif step == ("kapp:after", "after"):
                self.assertEqual((int(p_["seq"]), int(p_["ret"])), (seq, 1 + seq % 100))
                seq, state = seq + 1, "before"
            elif ev.name.startswith("kapp:") or state in ("exit", "after"):
                self.fail("write %d: %s where %s was due" % (seq, ev.name, state))
        self.assertEqual(seq, 10000, "every write between its two user events")

    def test_restart_appends(self):
        """start, stop, start, stop: the kernel trace holds both runs'
        writes, none twice, and the instance lives until destroy."""
        out = os.path.join(self.tmp, "again")
        self.ok("create", "a", "-o", out)
        pid, run = self.workload(1, 300)
        p2, run2 = self.workload(1, 300)
        self.ok("track", "-k", "--pid", "%d,%d" % (pid, p2))
        self.ok("enable-event", "-k", "--syscall", "write")
        self.ok("start")
        first = run()
        self.ok("stop")
        self.assertEqual(len(ours(self.daemon_pid())), 1, "stop keeps the instance")
        self.ok("start")
        second = run2()
        self.ok("stop")
        events, lost = read_bt2(os.path.join(out, "kernel"))
        self.assertEqual(lost, 0)
        for info in (first, second):
            t = info["threads"][0]
            self.assertEqual([c for c, _ in writes_of(events, t["tid"], info["fd"])],
                             [t["base"] + i for i in range(300)])
        # A state dump at each start: the first lists both workloads
        # (waiting for their "go"), the second the one still alive.
        dumps, cur = [], None
        for n, _, p in events:
            if n == "lttng_statedump_start":
                cur = {}
            elif n == "lttng_statedump_process_state":
                cur[p["tid"]] = p
            elif n == "lttng_statedump_end":
                dumps.append(cur)
        self.assertEqual(len(dumps), 2, "one state dump per start")
        for dump, alive in ((dumps[0], (pid, p2)), (dumps[1], (p2,))):
            for w in alive:
                self.assertEqual((dump[w]["pid"], dump[w]["ppid"], dump[w]["name"]),
                                 (w, os.getpid(), "python3"))
            self.assertEqual(dump[self.daemon_pid()]["name"], "ringtraced")
        self.assertNotIn(pid, dumps[1], "ended before the second start")
        self.ok("destroy")
        self.assertEqual(ours(self.daemon_pid()), [])

    def newest_writes(self, events, info):
        """Check that a snapshot's events hold the workload's (one
        thread's) newest writes as a run without gap, ending on its last
        one; their counts."""
        t = info["threads"][0]
        got = writes_of(events, t["tid"], info["fd"])
        last = t["base"] + info["writes"] - 1
        self.assertTrue(got, "the snapshot holds the workload's last writes")
        self.assertEqual(got[-1], (last, last), "the newest write is kept")
        counts = [c for c, _ in got]
        self.assertEqual(counts, list(range(counts[0], last + 1)),
                         "a run of the newest writes, none missing")
        return counts

    def test_kernel_contexts(self):
        """add-context -k -t pid,procname -t prio: every write(2) of the
        workload's threads carries their process, name (set with prctl
        just before: task_rename) and priority (20 + nice: each thread its
        own), in bt2 and in view. The workload runs on one CPU: the table
        follows each CPU's events in order (docs/kernel.md)."""
        out = os.path.join(self.tmp, "ctx")
        self.ok("create", "c", "-o", out)
        pid, run = self.workload(3, 100, "pin")
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("enable-event", "-k", "sched_switch")
        self.ok("enable-event", "-k", "--syscall", "write")
        r = self.ok("add-context", "-k", "-t", "pid,procname", "-t", "prio")
        self.assertIn("Context prio added to kernel channel channel0 of session c.", r)
        self.assertIn("Contexts: tid, pid, procname, prio\n", self.ok("list", "c"))
        self.ok("start")
        err = self.rt("add-context", "-k", "-t", "pid")
        self.assertIn("fixed at the first start", err.stderr)
        info = run()
        self.ok("stop")
        kdir = os.path.join(out, "kernel")
        msgs, lost, _ = rtfixtures.bt2_read(kdir)
        self.assertEqual(lost, 0)
        threads = {t["tid"]: t for t in info["threads"]}
        self.assertEqual(sorted(t["nice"] for t in info["threads"]), [0, 1, 2])
        got = {}
        for m in msgs:
            ctx = rtfixtures.bt2_plain(m.event.common_context_field)
            if m.event.name == "syscall_entry_write" and ctx["tid"] in threads:
                t = threads[ctx["tid"]]
                self.assertEqual((ctx["pid"], ctx["procname"], ctx["prio"]),
                                 (pid, t["name"], 20 + t["nice"]))
                got[t["name"]] = got.get(t["name"], 0) + 1
        self.assertEqual(got, {t["name"]: info["writes"] for t in info["threads"]})
        view = subprocess.run([RINGTRACE, "view", kdir], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(view.returncode, 0, view.stderr)
        for t in info["threads"]:
            line = re.compile(r'syscall_entry_write: \{ tid = %d, pid = %d, procname = "%s", '
                              r'prio = %d \}, \{ fd = %d,' % (t["tid"], pid, t["name"],
                                                              20 + t["nice"], info["fd"]))
            self.assertEqual(len(line.findall(view.stdout)), info["writes"], t["name"])
        self.ok("destroy", "c")

    def test_snapshot_keeps_newest(self):
        snaps = os.path.join(self.tmp, "snaps")
        self.ok("create", "snap", "--snapshot", "-o", snaps)
        # 8 KiB of ftrace buffer per CPU: a fraction of the writes fit.
        self.ok("enable-channel", "-k", "channel0", "--subbuf-size", "4k", "--num-subbuf", "2")
        self.ok("enable-event", "-k", "--syscall", "write")
        self.assertIn("Event-loss mode:  overwrite", self.ok("list", "snap"))
        # On one CPU: its buffer holds the newest writes, a run without gap.
        pid, run = self.workload(1, 3000, "pin")
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("start")
        info = run()
        self.assertRegex(self.ok("status"), r"kernel channel0: ftrace buffers \d+ bytes, a flight "
                         r"recorder \('snapshot record' writes what they hold\)")
        r = self.ok("snapshot", "record")
        path = r.split("Snapshot recorded in ")[1].strip()
        events, lost = read_bt2(os.path.join(path, "kernel"))
        t = info["threads"][0]
        counts = self.newest_writes(events, info)
        self.assertGreater(counts[0], t["base"], "the oldest were overwritten")
        # The snapshot ends with a state dump of the threads alive at the
        # snapshot (appended after the buffers' events, displacing none).
        names = [n for n, _, _ in events]
        last_write = max(i for i, (n, tid, _) in enumerate(events)
                         if tid == t["tid"] and n.startswith("syscall_"))
        self.assertEqual(names[-1], "lttng_statedump_end")
        start = len(names) - 1 - names[::-1].index("lttng_statedump_start")
        self.assertGreater(start, last_write)
        dump = {p["tid"]: p for n, _, p in events[start:]
                if n == "lttng_statedump_process_state"}
        me = dump[os.getpid()]
        self.assertEqual((me["pid"], me["ppid"]), (os.getpid(), os.getppid()))
        with open("/proc/self/comm") as f:
            self.assertEqual(me["name"], f.read().rstrip("\n"))
        self.assertEqual(dump[self.daemon_pid()]["name"], "ringtraced")
        self.assertNotIn(info["pid"], dump, "the workload had ended")
        # The loss is carried by each stream's first packet, which
        # babeltrace2 does not report: `ringtrace summary` counts it.
        r = subprocess.run([RINGTRACE, "summary", os.path.join(path, "kernel")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"channel0: (\d+) events recorded, (\d+) lost", r.stdout)
        self.assertTrue(m, r.stdout)
        self.assertEqual(int(m.group(1)), len(events))
        self.assertGreaterEqual(int(m.group(2)) + lost, 2 * (counts[0] - t["base"]) - 1,
                                "the overwritten writes (entry and exit; the exit of the "
                                "one before the first kept may be there) are counted lost")
        self.ok("destroy", "snap")

    def test_snapshots_do_not_consume(self):
        """Two snapshots in a row of a kernel flight recorder: the second
        holds the first's writes again (the readers keep the newest pages
        and snapshots copy them, docs/kernel.md), as babeltrace2 and
        ringtrace's reader read them. Before, a snapshot consumed the
        buffers: the second held none of the writes."""
        snaps = os.path.join(self.tmp, "snaps")
        self.ok("create", "snap", "--snapshot", "-o", snaps)
        self.ok("enable-channel", "-k", "channel0", "--subbuf-size", "4k", "--num-subbuf", "2")
        self.ok("enable-event", "-k", "--syscall", "write")
        pid, run = self.workload(1, 3000, "pin")
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("start")
        info = run()
        t = info["threads"][0]
        got = []
        for _ in range(2):
            r = self.ok("snapshot", "record")
            kdir = os.path.join(r.split("Snapshot recorded in ")[1].strip(), "kernel")
            events, _ = read_bt2(kdir)
            counts = self.newest_writes(events, info)
            self.assertGreater(counts[0], t["base"], "the oldest were overwritten")
            view = subprocess.run([RINGTRACE, "view", kdir], capture_output=True, text=True,
                                  timeout=120)
            self.assertEqual(view.returncode, 0, view.stderr)
            line = re.compile(r"syscall_entry_write: \{ tid = %d \}, \{ fd = %d, .*count = (\d+)"
                              % (t["tid"], info["fd"]))
            self.assertEqual([int(c) for c in line.findall(view.stdout)], counts,
                             "ringtrace's reader reads the same writes")
            got.append(counts)
        self.assertEqual(got[1], got[0], "the second snapshot holds the first's writes")
        self.ok("destroy", "snap")

    def test_snapshot_max_size(self):
        """snapshot record --max-size bounds the kernel part too: its
        stream files hold the newest packets that fit (the state dump
        appended to the snapshot, then the newest writes), at most the
        limit, ending on the newest write with no gap before it. (Before,
        the kernel part was written whole whatever the size: 45240 bytes
        for a limit of 8192.)"""
        snaps = os.path.join(self.tmp, "snaps")
        self.ok("create", "snap", "--snapshot", "-o", snaps)
        # 256 KiB per CPU: more than the limit once converted.
        self.ok("enable-channel", "-k", "channel0", "--subbuf-size", "64k", "--num-subbuf",
                "4")
        self.ok("enable-event", "-k", "--syscall", "write")
        pid, run = self.workload(1, 6000, "pin")
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("start")
        info = run()
        limit = 128 * 1024
        r = self.ok("snapshot", "record", "--max-size", str(limit))
        path = os.path.join(r.split("Snapshot recorded in ")[1].strip(), "kernel")
        size = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
                   if f.startswith("channel0_"))
        self.assertLessEqual(size, limit)
        self.assertGreater(size, limit // 2, "filled up to the limit")
        events, _ = read_bt2(path)
        names = [e[0] for e in events]
        self.assertIn("lttng_statedump_end", names, "the snapshot's state dump is kept")
        self.newest_writes(events, info)
        self.ok("destroy", "snap")

    def test_snapshot_max_size_shared(self):
        """A snapshot session with user and kernel channels: --max-size
        bounds the whole snapshot, the programs' trace and the kernel's
        sharing it, each holding its newest packets: as much of what a
        snapshot without a limit holds (taken after it: snapshots do not
        consume) as fits its share. (Before, the kernel part had the whole
        limit besides the programs': up to twice it.) Not a fixed size for
        the kernel's part: what its readers keep is shorter when they fell
        behind the kernel (a loaded machine: the kernel overwrote pages
        they had not read, and the hole drops the older pages kept,
        docs/kernel.md), which failed the former check, more than a
        quarter of the limit, now and then."""
        snaps = os.path.join(self.tmp, "snaps")
        self.ok("create", "hs", "--snapshot", "-o", snaps)
        self.ok("enable-channel", "-k", "channel0", "--subbuf-size", "64k", "--num-subbuf",
                "4")
        self.ok("enable-channel", "-u", "uch", "--subbuf-size", "16k", "--num-subbuf", "16")
        p = subprocess.Popen([KERNEL_APP, "10000"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=self.env)
        self.addCleanup(p.kill)
        pid = int(p.stdout.readline().split()[1])
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("enable-event", "-k", "--syscall", "write")
        self.ok("enable-event", "-u", "-c", "uch", "kapp:*")
        self.ok("start")
        p.stdin.write("go\n")
        p.stdin.flush()
        self.assertTrue(p.stdout.readline().startswith("done"))
        limit = 96 * 1024

        def snapshot(*args):
            r = self.ok("snapshot", "record", *args)
            path = r.split("Snapshot recorded in ")[1].strip()
            sizes = {"kernel": 0, "ust": 0}
            for d, _, files in os.walk(path):
                for f in files:
                    if f != "metadata":
                        part = os.path.relpath(d, path).split(os.sep)[0]
                        sizes[part] += os.path.getsize(os.path.join(d, f))
            return sizes
        sizes = snapshot("--max-size", str(limit))
        whole = snapshot()
        self.assertLessEqual(sizes["kernel"] + sizes["ust"], limit, (sizes, whole))
        self.assertGreater(whole["ust"], limit, "the programs' part alone is over the limit")
        for part in ("kernel", "ust"):
            # Its share is half the limit: filled past a quarter (its
            # packets are smaller than a quarter) unless the whole part is
            # smaller.
            if whole[part] <= limit // 4:
                self.assertEqual(sizes[part], whole[part], (part, sizes, whole))
            else:
                self.assertGreater(sizes[part], limit // 4, (part, sizes, whole))
        p.stdin.close()
        p.wait(timeout=60)
        self.ok("destroy", "hs")

    def test_tiny_buffer_counts_losses(self):
        """8 KiB per CPU in discard mode, with the daemon stopped (SIGSTOP)
        while the workload writes, so that no reader empties the buffer
        (its per-CPU readers keep up with this workload otherwise, e.g.
        under AddressSanitizer's slower workload): ftrace drops what does
        not fit; the trace reads back whole, and status and the trace
        count the drops."""
        out = os.path.join(self.tmp, "tiny")
        self.ok("create", "t", "-o", out)
        self.ok("enable-channel", "-k", "channel0", "--subbuf-size", "4k", "--num-subbuf", "2",
                "--discard", "--read-timer", "1000000")
        self.ok("enable-event", "-k", "--syscall", "write")
        pid, run = self.workload(1, 3000, "pin")
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("start")
        daemon = self.daemon_pid()
        os.kill(daemon, signal.SIGSTOP)
        try:
            info = run()
        finally:
            os.kill(daemon, signal.SIGCONT)
        self.ok("stop")
        m = re.search(r"kernel channel0: ftrace buffers \d+ bytes, events (\d+), lost (\d+)",
                      self.ok("status"))
        self.assertTrue(m)
        written, lost = int(m.group(1)), int(m.group(2))
        self.assertGreater(lost, 0, "a full buffer in discard mode drops events")
        events, _ = read_bt2(os.path.join(out, "kernel"))
        self.assertEqual(len(events), written)
        t = info["threads"][0]
        got = writes_of(events, t["tid"], info["fd"])
        self.assertTrue(got)
        for count, ret in got:
            self.assertEqual(count, ret, "every write kept is whole")
        counts = [c for c, _ in got]
        self.assertEqual(counts, sorted(set(counts)), "in order, none twice")
        self.assertGreaterEqual(written + lost, 2 * info["writes"],
                                "every write is either in the trace or counted lost")
        r = subprocess.run([RINGTRACE, "summary", os.path.join(out, "kernel")],
                           capture_output=True, text=True, timeout=60)
        m = re.search(r"channel0: (\d+) events recorded, (\d+) lost", r.stdout)
        self.assertTrue(m, r.stdout + r.stderr)
        self.assertEqual((int(m.group(1)), int(m.group(2))), (written, lost),
                         "the trace says what status says")

    def test_sigterm_removes_instance(self):
        """A daemon ended by SIGTERM stops its sessions (the trace is
        complete) and removes their instances."""
        out = os.path.join(self.tmp, "term")
        self.ok("create", "s", "-o", out)
        pid, run = self.workload(1, 200)
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("enable-event", "-k", "--syscall", "write")
        self.ok("start")
        info = run()
        daemon = self.daemon_pid()
        self.assertEqual(len(ours(daemon)), 1)
        os.kill(daemon, signal.SIGTERM)
        for _ in range(400):
            if not os.path.exists("/proc/%d" % daemon):
                break
            time.sleep(0.05)
        self.assertFalse(os.path.exists("/proc/%d" % daemon), "the daemon exits")
        self.assertEqual(ours(daemon), [])
        events, _ = read_bt2(os.path.join(out, "kernel"))
        t = info["threads"][0]
        self.assertEqual(len(writes_of(events, t["tid"], info["fd"])), 200)

    def test_full_disk_reported(self):
        """The kernel trace's write errors (a full disk) show in status
        while the session runs, stop exits 1 with them, and the trace is
        what the consumer makes of a user trace on a full disk: every
        packet that could not be written cut back off its file and its
        events counted lost in the trace itself (once space returns), so
        that babeltrace2 reads it whole, its events and lost counts are
        status's, and reads + lost accounts for every write. (Before, the
        kernel trace ended on a torn packet babeltrace2 refused, and its
        lost events were counted nowhere.)"""
        small = os.path.join(self.tmp, "small")
        os.mkdir(small)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", small])
        self.ok("create", "f", "-o", os.path.join(small, "out"))
        # One CPU: the workload's events in one stream.
        pid, run = self.workload(1, 20000, "pin")
        self.ok("track", "-k", "--pid", str(pid))
        self.ok("enable-event", "-k", "--syscall", "write")
        self.ok("start")
        did = run()
        status = ""
        for _ in range(100):  # the reader writes every 100 ms
            status = self.ok("status")
            if "Write errors" in status:
                break
            time.sleep(0.1)
        self.assertRegex(status, r"Write errors: kernel trace: .*No space left on device")
        # Space returns: the stop's drain writes the header-only packets
        # that carry what could not be written.
        subprocess.run(["mount", "-o", "remount,size=4m", small], check=True)
        r = self.rt("stop")
        self.assertEqual(r.returncode, 1)
        self.assertIn("stopped, but its trace is incomplete: kernel trace", r.stderr)
        self.assertIn("No space left on device", r.stderr)
        status = self.ok("status")
        m = re.search(r"kernel channel0: .*, events (\d+), lost (\d+)", status)
        self.assertIsNotNone(m, status)
        events, lost = int(m.group(1)), int(m.group(2))
        self.assertGreater(lost, 0)
        # Reported by stop; status still names the last error, as it
        # does for user-space traces.
        self.assertRegex(status, r"Write errors: kernel trace: .*could not be written")
        trace = os.path.join(small, "out", "kernel")
        read, _ = read_bt2(trace)
        self.assertEqual(len(read), events)
        # The losses of a stream whose first packet could not be written
        # are carried by its first packet, which babeltrace2 does not
        # report: `ringtrace summary` counts every one.
        r = subprocess.run([RINGTRACE, "summary", trace], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"channel0: (\d+) events recorded, (\d+) lost", r.stdout)
        self.assertTrue(m, r.stdout)
        self.assertEqual((int(m.group(1)), int(m.group(2))), (events, lost))
        ours_ = [e for e in read if e[1] == did["threads"][0]["tid"]]
        self.assertGreaterEqual(len(ours_) + lost, 2 * did["writes"])
        self.ok("destroy")

    def test_refusals(self):
        self.ok("create", "r")
        self.ok("enable-event", "-k", "--syscall", "write", "--filter", "common_pid != 1")
        # Filters are per rule, in LTTng's language, checked by enable-event.
        err = self.rt("enable-event", "-k", "sched_switch", "--filter", "prev_tid == 1.5")
        self.assertEqual(err.returncode, 2)
        self.assertIn("ftrace cannot express this filter: ftrace compares integers and "
                      "strings, not reals", err.stderr)
        err = self.rt("enable-event", "-k", "sched_switch", "--filter", "prev_tid == == 1")
        self.assertEqual(err.returncode, 2)
        self.assertIn("filter:1:13: expected a field name", err.stderr)
        err = self.rt("enable-event", "-k", "sched_switch", "--filter", "$ctx.prio < 3")
        self.assertIn("ftrace has no context $ctx.prio", err.stderr)
        err = self.rt("enable-event", "-u", "a:b", "--filter", "x == == 1")
        self.assertIn("filter:1:6: expected a field name", err.stderr)
        self.assertNotIn("sched_switch", self.ok("list", "r"))
        err = self.rt("enable-event", "-k", "sched_switch", "--exclude", "x")
        self.assertIn("does not apply to kernel rules", err.stderr)
        err = self.rt("enable-event", "-u", "a:b", "--syscall")
        self.assertIn("is for kernel rules", err.stderr)
        err = self.rt("enable-channel", "-k", "other")
        self.assertIn("one kernel channel", err.stderr)
        err = self.rt("enable-event", "-k", "sched_switch", "--filter", "prev_tid == 1\nx")
        self.assertEqual(err.returncode, 2)
        self.assertIn("one line of printable characters", err.stderr)
        err = self.rt("enable-event", "-k", "-u", "x")
        self.assertIn("exclude each other", err.stderr)
        err = self.rt("add-context", "-k", "-t", "cpu_id")
        self.assertNotEqual(err.returncode, 0)
        self.assertIn("kernel context 'cpu_id' is not available (tid, pid, procname, prio)",
                      err.stderr)
        self.ok("add-context", "-k", "-t", "tid")
        self.ok("add-context", "-k", "-t", "prio,pid")
        self.assertIn("Contexts: tid, pid, prio\n", self.ok("list", "r"))
        saved = self.ok("save", "r")
        self.assertIn("add-context domain=kernel session=r channel=channel0 type=pid\n"
                      "add-context domain=kernel session=r channel=channel0 type=prio\n", saved)
        self.assertIn("enable-event domain=kernel session=r channel=channel0 pattern=write "
                      "syscall=1 filter=common_pid%20!=%201", saved)
        # Names that match nothing are refused at once.
        err = self.rt("enable-event", "-k", "no_such_event_xyz", "--filter", "common_pid != 1")
        self.assertEqual(err.returncode, 1)
        self.assertIn("no kernel tracepoint matches 'no_such_event_xyz'", err.stderr)
        err = self.rt("enable-event", "-k", "--syscall", "no_such_call*", "--filter",
                      "common_pid != 1")
        self.assertIn("no system call matches 'no_such_call*'", err.stderr)
        self.assertNotIn("no_such", self.ok("list", "r"))
        # -k --syscall -a disables the system call rules only; -k -a all.
        self.ok("enable-event", "-k", "sched_switch", "--filter", "common_pid != 1")
        self.ok("disable-event", "-k", "--syscall", "-a")
        listing = self.ok("list", "r")
        self.assertIn("write (type: syscall) [filter: common_pid != 1] [disabled]", listing)
        self.assertIn("sched_switch (type: tracepoint) [filter: common_pid != 1] [enabled]",
                      listing)
        self.ok("disable-event", "-k", "-a")
        self.assertIn("sched_switch (type: tracepoint) [filter: common_pid != 1] [disabled]",
                      self.ok("list", "r"))
        self.ok("enable-event", "-k", "--syscall", "write", "--filter", "common_pid != 1")
        # A filter ftrace refuses: start says why and leaves nothing.
        self.ok("disable-event", "-k", "--syscall", "write")
        self.ok("enable-event", "-k", "sched_sw*", "--filter", "no_such_field == 1")
        err = self.rt("start", "r")
        self.assertEqual(err.returncode, 2)
        self.assertIn("the filter 'no_such_field == 1' of kernel rule 'sched_sw*' names a "
                      "field that none of the events the rule matches has", err.stderr)
        self.assertEqual(ours(self.daemon_pid()), [], "nothing left by a refused start")
        self.ok("disable-event", "-k", "sched_sw*")
        self.ok("enable-event", "-k", "--syscall", "write", "--filter", "common_pid != 1")
        self.ok("start", "r")
        err = self.rt("enable-event", "-k", "sched_wakeup")
        self.assertIn("fixed at the first start", err.stderr)
        self.ok("destroy", "r")
        # Saved and loaded back: the same listing.
        cfg = os.path.join(self.tmp, "r.cfg")
        with open(cfg, "w") as f:
            f.write(saved)
        self.ok("load", cfg, "--force")
        listing = self.ok("list", "r")
        self.assertIn("write (type: syscall) [filter: common_pid != 1] [enabled]", listing)
        self.assertIn("Contexts: tid, pid, prio\n", listing)

    def test_not_root(self):
        home = os.path.join(self.tmp, "nobody")
        os.mkdir(home)
        os.chown(home, 65534, 65534)
        env = dict(self.env, HOME=home, RINGTRACE_RUNDIR=os.path.join(home, "run"))
        try:
            self.assertEqual(self.rt("create", "n", env=env, pre=NOBODY).returncode, 0)
            r = self.rt("enable-event", "-k", "sched_switch", env=env, pre=NOBODY)
            self.assertEqual(r.returncode, 1)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn("kernel domain is not available", lines[0])
            self.assertIn("root", lines[0])
        finally:
            subprocess.run([*NOBODY, RINGTRACE, "destroy", "-a"], env=env,
                           capture_output=True, timeout=60)
            try:
                with open(os.path.join(home, "run", "ringtraced.pid")) as f:
                    os.kill(int(f.read()), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def test_killed_daemon_instance_removed(self):
        self.ok("create", "x")
        self.ok("enable-event", "-k", "sched_switch")
        self.ok("start")
        pid = self.daemon_pid()
        left = ours(pid)
        self.assertEqual(len(left), 1)
        os.kill(pid, signal.SIGKILL)
        # Checked before the daemon is reaped: from then on any root
        # ringtraced or record -k starting (other tests run beside this
        # one) may remove it as stale, as the new daemon below must.
        self.assertTrue(os.path.isdir(os.path.join(INSTANCES, left[0])), "left by kill -9")
        for _ in range(200):
            if not os.path.exists("/proc/%d" % pid):
                break
            time.sleep(0.05)
        self.ok("create", "y")  # starts a new daemon
        self.assertNotEqual(self.daemon_pid(), pid)
        self.assertFalse(os.path.exists(os.path.join(INSTANCES, left[0])),
                         "the new daemon removed the stale instance")


def usable():
    if os.geteuid() != 0:
        return "not root: the kernel domain needs root"
    if not os.path.isdir(INSTANCES):
        return "no tracefs instances directory at " + INSTANCES
    try:
        os.mkdir(os.path.join(INSTANCES, "rt-probe-%d" % os.getpid()))
        os.rmdir(os.path.join(INSTANCES, "rt-probe-%d" % os.getpid()))
    except OSError as e:
        return "cannot create a tracefs instance: %s" % e
    return None


if __name__ == "__main__":
    why = usable()
    if why:
        print("SKIP:", why)
        sys.exit(77)
    unittest.main(verbosity=2)
