#!/usr/bin/python3
"""The kernel domain on this machine's kernel (root, tracefs): kcapture
records its own write(2) calls in a private tracefs instance and converts
the pages; the trace is read back with babeltrace2 (bt2) and `ringtrace
view`, event by event. Also: fork following, removal of the instance, and
of stale instances left by a killed owner. Exit 77 with the reason when
the kernel domain cannot be used here.

usage: test_kernel.py BUILD_DIR
"""
import ctypes
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import bt2

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
KCAPTURE = os.path.join(BUILD, "tests/kernel/kcapture")
KWRITES = os.path.join(BUILD, "tests/kernel/kwrites")
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
INSTANCES = "/sys/kernel/tracing/instances"


def capture(trace, *args):
    p = subprocess.run([KCAPTURE, trace, *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError("kcapture failed (%d): %s%s" % (p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout)


def read_bt2(path):
    """(name, tid, payload dict) of every event, in order; the env."""
    events, env = [], None
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._StreamBeginningMessageConst and env is None:
            env = dict(msg.stream.trace.environment)
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        payload = {k: (str(v) if isinstance(v, bt2._StringFieldConst) else int(v))
                   for k, v in ev.payload_field.items()}
        events.append((ev.name, int(ev.common_context_field["tid"]), payload))
    return events, env


def write_pairs(events, tid, fd):
    """The (entry, exit) pairs of write(2) on fd by tid, in order."""
    pairs, pending = [], None
    for name, t, p in events:
        if t != tid:
            continue
        if name == "syscall_entry_write":
            pending = p if p["fd"] == fd else None
        elif name == "syscall_exit_write" and pending is not None:
            pairs.append((pending, p))
            pending = None
    return pairs


class Kernel(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-kernel-")
        self.trace = os.path.join(self.tmp.name, "kernel")

    def tearDown(self):
        self.tmp.cleanup()

    def test_write_pairs_bt2_and_view(self):
        info = capture(self.trace, 500)
        self.assertEqual(info["lost"], 0)
        self.assertFalse(os.path.exists(os.path.join(INSTANCES, info["instance"])),
                         "the instance is removed")
        events, env = read_bt2(self.trace)
        self.assertEqual(env["domain"], "kernel")
        pairs = write_pairs(events, info["tid"], info["fd"])
        self.assertEqual(len(pairs), 500)
        for entry, exit_ in pairs:
            self.assertEqual(entry["count"], info["count"])
            self.assertEqual(exit_["ret"], info["count"])
            self.assertNotIn("__syscall_nr", entry)
        self.assertEqual(len(events), info["events"])

        out = subprocess.run([RINGTRACE, "view", self.trace], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(len(lines), len(events))
        entry_re = re.compile(r"syscall_entry_write: \{ tid = %d \}, \{ fd = %d, buf = 0x[0-9a-f]+, "
                              r"count = %d \}$" % (info["tid"], info["fd"], info["count"]))
        exit_re = re.compile(r"syscall_exit_write: \{ tid = %d \}, \{ ret = %d \}$"
                             % (info["tid"], info["count"]))
        self.assertEqual(sum(1 for l in lines if entry_re.search(l)), 500)
        self.assertGreaterEqual(sum(1 for l in lines if exit_re.search(l)), 500)
        # Our reader and bt2 give the same events in the same order.
        names = [l.split(": ")[0].split()[-1] for l in lines]
        self.assertEqual(names, [e[0] for e in events])

    def test_fork_following(self):
        info = capture(self.trace, 10, 3)
        events, _ = read_bt2(self.trace)
        forks = [p for n, t, p in events if n == "sched_process_fork"]
        self.assertEqual(len(forks), 3)
        for p in forks:
            self.assertEqual(p["parent_tid"], info["tid"])
        for p in forks:
            pairs = write_pairs(events, p["child_tid"], info["fd"])
            self.assertEqual(len(pairs), 1, "child %d's write" % p["child_tid"])
            self.assertEqual(pairs[0][1]["ret"], info["count"])

    def test_stale_instance_removed(self):
        p = subprocess.Popen([KCAPTURE, "--hold"], stdout=subprocess.PIPE, text=True)
        try:
            name = p.stdout.readline().strip()
            self.assertTrue(name.startswith("ringtrace-%d-" % p.pid), name)
            self.assertTrue(os.path.isdir(os.path.join(INSTANCES, name)))
            p.send_signal(signal.SIGKILL)
            # Dead but not reaped: its pid still exists, so no remover
            # takes its instance yet (a root ringtraced or record -k of a
            # test running beside this one removes stale instances when
            # it starts).
            os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
            self.assertTrue(os.path.isdir(os.path.join(INSTANCES, name)), "left by kill -9")
        finally:
            p.kill()
            p.wait()
            p.stdout.close()
        out = subprocess.run([KCAPTURE, "--remove-stale"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        # Removed, by this call or by such a remover (the same function)
        # that came first: the count may then be 0.
        self.assertGreaterEqual(int(out.stdout), 0)
        self.assertFalse(os.path.exists(os.path.join(INSTANCES, name)))


class List(unittest.TestCase):
    def run_list(self, *args, user=None):
        pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if user else []
        return subprocess.run(pre + [RINGTRACE, "list", "-k", *args], capture_output=True,
                              text=True, timeout=60)

    def test_tracepoints(self):
        p = self.run_list()
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[:2], ["Kernel events:", "-------------"])
        names = [l.split()[0] for l in lines[2:]]
        self.assertIn("sched_switch", names)
        self.assertNotIn("sys_enter_write", names)
        for l in lines[2:]:
            self.assertRegex(l, r"^      \S+ \(type: tracepoint\)$")
        systems = os.listdir("/sys/kernel/tracing/events")
        want = sum(len([e for e in os.listdir("/sys/kernel/tracing/events/" + s)
                        if os.path.isdir("/sys/kernel/tracing/events/%s/%s" % (s, e))])
                   for s in systems if s not in ("syscalls", "ftrace")
                   and os.path.isdir("/sys/kernel/tracing/events/" + s))
        self.assertEqual(len(names), want)

    def test_syscalls(self):
        p = self.run_list("--syscall")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[:2], ["System calls:", "-------------"])
        self.assertIn("      write (type: syscall)", lines)
        self.assertIn("      openat (type: syscall)", lines)
        self.assertEqual(len(lines) - 2, len([e for e in os.listdir(
            "/sys/kernel/tracing/events/syscalls") if e.startswith("sys_enter_")]))

    def test_other_user_gets_one_line(self):
        for args in ((), ("--syscall",)):
            p = self.run_list(*args, user="nobody")
            self.assertEqual(p.returncode, 1)
            self.assertEqual(p.stdout, "")
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
            self.assertIn("the kernel domain needs root", p.stderr)

    def test_usage(self):
        p = subprocess.run([RINGTRACE, "list", "--syscall"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--syscall goes with -k", p.stderr)
        p = subprocess.run([RINGTRACE, "list", "-k", "-u"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)


VIEW_LINE = re.compile(r"^\[[^]]*\] \([^)]*\) (?:trace \d+ )?cpu \d+ (\S+): \{ (?:vpid = \d+, )?"
                       r"v?tid = (\d+)[^}]*\}(?:, \{ (.*) \})?$")


# babeltrace2's text: [time] (+delta) host NAME: { cpu_id = N }, { ...tid = T... }, { payload }
BT2_LINE = re.compile(r"^\[[^]]*\] \([^)]*\) \S+ (\S+): \{ cpu_id = \d+ \}, \{ (?:vpid = \d+, )?"
                      r"v?tid = (\d+)[^}]*\}, \{ ?(.*?) ?\}$")


def view_events(trace):
    """(name, thread, payload text) of every event `ringtrace view` prints
    (the thread: vtid in user-space events, tid in the kernel's)."""
    out = subprocess.run([RINGTRACE, "view", trace], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise AssertionError("view failed: " + out.stderr)
    events = []
    for line in out.stdout.splitlines():
        m = VIEW_LINE.match(line)
        if not m:
            raise AssertionError("unexpected view line: " + line)
        events.append((m.group(1), int(m.group(2)), m.group(3) or ""))
    return events


def check_iterations(test, events, tid, fd, n, fields):
    """Every iteration of kwrites: before(i), the write(2) entry and exit,
    after(i), in this order among the thread's events."""
    mine = [e for e in events if e[1] == tid and
            (e[0].startswith("kwrites:") or e[0] in ("syscall_entry_write", "syscall_exit_write"))]
    i, k = 0, 0
    while k < len(mine) and mine[k][0] != "kwrites:before":
        k += 1
    for i in range(n):
        seq = mine[k:k + 4]
        test.assertEqual([e[0] for e in seq],
                         ["kwrites:before", "syscall_entry_write", "syscall_exit_write",
                          "kwrites:after"], "iteration %d" % i)
        test.assertEqual(fields(seq[0])["i"], i)
        test.assertEqual(fields(seq[1])["fd"], fd)
        test.assertEqual(fields(seq[1])["count"], 29)
        test.assertEqual(fields(seq[2])["ret"], 29)
        test.assertEqual(fields(seq[3])["i"], i)
        k += 4


def text_fields(e):
    return {k: int(v, 0) for k, v in re.findall(r"(\w+) = (-?(?:0x)?[0-9a-f]+)\b", e[2])}


class Record(unittest.TestCase):
    N = 10000

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-krecord-")
        self.trace = os.path.join(self.tmp.name, "t")

    def tearDown(self):
        self.tmp.cleanup()

    def test_program_without_the_library(self):
        """A program not linked with libringtrace: its run's kernel events
        are the trace, which record says and summarises (it used to call
        the run a failure: "wrote no trace ... is it linked?")."""
        p = subprocess.run([RINGTRACE, "record", "-o", self.trace, "-k", "sched_switch",
                            "--syscall", "write", "--", "/bin/sh", "-c", "echo x > /dev/null"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("wrote no trace", p.stderr)
        self.assertIn("'/bin/sh' recorded no user-space events", p.stderr)
        self.assertRegex(p.stderr, r"kernel/channel0: \d+ events recorded, 0 lost")
        self.assertEqual(os.listdir(self.trace), ["kernel"])
        events, _ = read_bt2(os.path.join(self.trace, "kernel"))
        self.assertIn("syscall_entry_write", [n for n, _, _ in events])

    def test_user_and_kernel_events_merged(self):
        p = subprocess.Popen([RINGTRACE, "record", "-q", "-o", self.trace, "-k", "sched_switch",
                              "--syscall", "write", "--", KWRITES, str(self.N)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(err, "")
        self.assertFalse(os.path.exists(os.path.join(INSTANCES, "ringtrace-%d-record" % p.pid)),
                         "the instance is removed")
        events = view_events(self.trace)
        setup = [e for e in events if e[0] == "kwrites:setup"]
        self.assertEqual(len(setup), 1)
        tid, fd = setup[0][1], text_fields(setup[0])["fd"]
        check_iterations(self, events, tid, fd, self.N, text_fields)
        # The forked child's write is followed (set_event_pid, event-fork).
        child = text_fields([e for e in events if e[0] == "kwrites:child"][0])["pid"]
        writes = [e for e in events if e[1] == child and e[0] == "syscall_entry_write"
                  and text_fields(e)["fd"] == fd]
        self.assertEqual(len(writes), 1)
        self.assertEqual(text_fields(writes[0])["count"], 29)
        # The kernel's events are CMD's tree's only: its threads (the
        # program's and its library's consumer thread) and its child.
        comm = {}
        for e in events:
            if e[0] == "sched_switch":
                m = re.search(r'prev_comm = "([^"]*)", prev_tid = (\d+)', e[2])
                comm[int(m.group(2))] = m.group(1)
        pids = {e[1] for e in events if e[0].startswith("syscall_")}
        for pid in pids - {tid, child}:
            self.assertIn(comm.get(pid), ("ringtrace-cons",), "tid %d" % pid)

        # The session directory holds the two traces only, as LTTng's do
        # (user space under ust/uid/UID/64-bit, the kernel's in kernel/),
        # so that babeltrace2 finds both in it.
        self.assertEqual(sorted(os.listdir(self.trace)), ["kernel", "ust"])
        user = os.path.join(self.trace, "ust", "uid", str(os.geteuid()), "64-bit")
        self.assertTrue(os.path.isfile(os.path.join(user, "metadata")))
        self.assertTrue(os.path.isfile(os.path.join(self.trace, "kernel", "metadata")))

        # babeltrace2 reads the session directory as one collection and
        # merges the two traces the same way: bt2 ...
        bt, domains = [], set()
        for msg in bt2.TraceCollectionMessageIterator(self.trace):
            if type(msg) is bt2._StreamBeginningMessageConst:
                domains.add(str(msg.stream.trace.environment["domain"]))
            if type(msg) is not bt2._EventMessageConst:
                continue
            ev = msg.event
            ctx = ev.common_context_field
            payload = {k: int(v) for k, v in ev.payload_field.items()
                       if not isinstance(v, bt2._StringFieldConst)}
            bt.append((ev.name, int(ctx["vtid" if "vtid" in ctx else "tid"]), payload))
        self.assertEqual(domains, {"ust", "kernel"})
        check_iterations(self, bt, tid, fd, self.N, lambda e: e[2])
        self.assertEqual(len(bt), len(events))

        # ... and its command line.
        out = subprocess.run(["babeltrace2", self.trace], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        cli = []
        for line in out.stdout.splitlines():
            m = BT2_LINE.match(line)
            self.assertIsNotNone(m, line)
            cli.append((m.group(1), int(m.group(2)), m.group(3)))
        check_iterations(self, cli, tid, fd, self.N, text_fields)
        self.assertEqual([e[0] for e in cli], [e[0] for e in bt])

        # `ringtrace summary DIR` counts each trace's channel apart, named
        # with the trace's directory.
        out = subprocess.run([RINGTRACE, "summary", self.trace], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        chans = dict((m.group(1), int(m.group(2))) for m in re.finditer(
            r"^  (\S+): (\d+) events recorded, 0 lost", out.stdout, re.M))
        user_chan = "ust/uid/%d/64-bit/channel0" % os.geteuid()
        self.assertEqual(set(chans), {"kernel/channel0", user_chan}, out.stdout)
        n_user = sum(1 for e in events if e[0].startswith("kwrites:"))
        self.assertEqual(chans[user_chan], n_user)
        self.assertEqual(chans["kernel/channel0"], len(events) - n_user)

        # `ringtrace export` takes both domains too.
        js = os.path.join(self.tmp.name, "t.json")
        out = subprocess.run([RINGTRACE, "export", "--format=chrome", "-o", js, self.trace],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(js) as f:
            names = collections.Counter(e.get("name") for e in json.load(f)["traceEvents"])
        self.assertEqual(names["kwrites:before"], self.N)
        self.assertEqual(names["syscall_entry_write"],
                         sum(1 for e in events if e[0] == "syscall_entry_write"))

    def test_state_dump(self):
        """The kernel trace begins with a state dump of every thread of the
        machine, this test's own threads (names with spaces and
        parentheses) among them, before CMD's first event."""
        libc = ctypes.CDLL(None, use_errno=True)
        names = ["rtk dump (a)", "rtk) dump b"]
        ready, done, tids = threading.Barrier(len(names) + 1), threading.Event(), {}

        def named(name):
            libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
            tids[name] = threading.get_native_id()
            ready.wait()
            done.wait()
        threads = [threading.Thread(target=named, args=(n,)) for n in names]
        for t in threads:
            t.start()
        # A process in a pid namespace of its own (pid 1 there).
        nested = subprocess.Popen(["unshare", "--pid", "--fork", "sleep", "120"])
        inner = None
        try:
            for _ in range(1000):
                kids = open("/proc/%d/task/%d/children" % (nested.pid, nested.pid)).read().split()
                if kids and open("/proc/%s/comm" % kids[0]).read().strip() == "sleep":
                    inner = int(kids[0])
                    inner_ns = os.stat("/proc/%d/ns/pid" % inner).st_ino
                    break
                time.sleep(0.01)
            self.assertIsNotNone(inner, "unshare's child in its pid namespace")
            ready.wait()
            before = {int(t) for p in os.listdir("/proc") if p.isdigit()
                      for t in (os.listdir("/proc/%s/task" % p)
                                if os.path.isdir("/proc/%s/task" % p) else ())}
            p = subprocess.run([RINGTRACE, "record", "-q", "-o", self.trace, "-k", "sched_switch",
                                "--", KWRITES, "1"], capture_output=True, text=True, timeout=120)
            after = {int(t) for p_ in os.listdir("/proc") if p_.isdigit()
                     for t in (os.listdir("/proc/%s/task" % p_)
                               if os.path.isdir("/proc/%s/task" % p_) else ())}
        finally:
            done.set()
            for t in threads:
                t.join()
            # Its pid 1 ends the namespace; unshare then exits.
            if inner is not None:
                os.kill(inner, signal.SIGKILL)
            else:
                nested.kill()
            nested.wait()
        self.assertEqual(p.returncode, 0, p.stderr)
        kernel = os.path.join(self.trace, "kernel")

        def dump_of(events):
            names = [e[0] for e in events if e[0].startswith("lttng_statedump_")]
            self.assertEqual(names[0], "lttng_statedump_start")
            self.assertEqual(names[-1], "lttng_statedump_end")
            self.assertEqual(names.count("lttng_statedump_start"), 1)
            self.assertEqual(names.count("lttng_statedump_end"), 1)
            return {e[2]["tid"]: e[2] for e in events
                    if e[0] == "lttng_statedump_process_state"}

        bt, _ = read_bt2(kernel)
        dump = dump_of(bt)
        me = os.getpid()
        with open("/proc/self/comm") as f:
            main_name = f.read().rstrip("\n")
        want = {me: main_name, **{tid: name for name, tid in tids.items()}}
        for tid, name in want.items():
            d = dump.get(tid)
            self.assertIsNotNone(d, "thread %d (%s) in the dump" % (tid, name))
            self.assertEqual((d["pid"], d["ppid"], d["name"], d["type"], d["mode"],
                              d["submode"]), (me, os.getppid(), name, 0, 5, 0))
            self.assertIn(d["status"], (2, 5), "waiting for a CPU or blocked")
        rec = dump.get(p.pid if hasattr(p, "pid") else -1)
        cmd = [d for d in dump.values() if d["pid"] == d["tid"] and d["ppid"] not in (0, me)
               and dump.get(d["ppid"], {}).get("ppid") == me and d["tid"] != inner]
        self.assertEqual(len(cmd), 1, "record's child, CMD, waiting to run")
        self.assertEqual(dump[cmd[0]["ppid"]]["name"], "ringtrace")
        self.assertIsNone(rec)
        self.assertEqual(dump[2]["name"], "kthreadd")
        self.assertEqual(dump[2]["type"], 1, "a kernel thread")
        self.assertLessEqual(before & after, set(dump), "every thread alive throughout")

        # Our reader: the same dump; and it lies before CMD's first event.
        # Each thread's state is followed by LTTng's
        # lttng_statedump_process_pid_ns: its ids in every pid namespace it
        # is in, its own first, down to the root's (level 0).
        ns, last = {}, None
        for name, _, pl in bt:
            if name == "lttng_statedump_process_state":
                last = pl["tid"]
                ns[last] = []
            elif name == "lttng_statedump_process_pid_ns":
                self.assertEqual(pl["tid"], last, "right after its thread's state")
                ns[last].append(pl)
        self.assertEqual(set(ns), set(dump))
        self.assertTrue(all(ns.values()), "every thread has its pid namespace")
        root = os.stat("/proc/self/ns/pid").st_ino
        for tid in want:
            self.assertEqual(ns[tid], [{"tid": tid, "vtid": tid, "vpid": me,
                                        "vppid": os.getppid(), "ns_level": 0,
                                        "ns_inum": root}])
        self.assertEqual(ns[inner], [
            {"tid": inner, "vtid": 1, "vpid": 1, "vppid": 0, "ns_level": 1,
             "ns_inum": inner_ns},
            {"tid": inner, "vtid": inner, "vpid": inner, "vppid": nested.pid, "ns_level": 0,
             "ns_inum": root}])

        text = [e for e in view_events(kernel) if e[0].startswith("lttng_statedump_")]
        states = [e for e in text if e[0] == "lttng_statedump_process_state"]
        self.assertEqual(len(states), len(dump))
        self.assertEqual(len(text), 2 + len(dump) + sum(len(v) for v in ns.values()))
        for e in states:
            f = text_fields(e)
            self.assertEqual({k: f[k] for k in ("pid", "ppid", "status", "cpu")},
                             {k: dump[f["tid"]][k] for k in ("pid", "ppid", "status", "cpu")})
            self.assertIn('name = "%s"' % dump[f["tid"]]["name"], e[2])
        merged = [e[0] for e in view_events(self.trace)]
        self.assertLess(merged.index("lttng_statedump_end"), merged.index("kwrites:setup"))

    def test_full_disk(self):
        """record -k on a disk that fills up: the kernel trace's packets
        that cannot be written are cut back off their files and counted
        lost in the trace (the consumer's write-error path, as for the
        user trace), record says so once and exits 1, and the kernel trace
        reads whole with babeltrace2 and our reader (the same events; our
        reader's losses at least babeltrace2's, which leaves out a
        stream's first packet's). (Before, the kernel trace ended on a
        torn packet.)"""
        small = os.path.join(self.tmp.name, "small")
        os.mkdir(small)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small], check=True)
        try:
            self.record_on_full_disk(os.path.join(small, "out"))
        finally:
            subprocess.run(["umount", "-l", small], check=True)

    def record_on_full_disk(self, out):
        p = subprocess.run([RINGTRACE, "record", "-q", "-o", out, "-k", "sched_switch",
                            "--syscall", "write", "--", KWRITES, "20000"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.count("the kernel trace is incomplete"), 1, p.stderr)
        self.assertRegex(p.stderr, r"the kernel trace is incomplete: cannot write a stream "
                         r"file in .*/kernel: No space left on device; \d+ events in \d+ "
                         r"packets could not be written")
        kernel = os.path.join(out, "kernel")
        events, _ = read_bt2(kernel)
        lost = 0
        for msg in bt2.TraceCollectionMessageIterator(kernel):
            if type(msg) is bt2._DiscardedEventsMessageConst:
                lost += msg.count or 0
        s = subprocess.run([RINGTRACE, "summary", kernel], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(s.returncode, 0, s.stderr)
        m = re.search(r"channel0: (\d+) events recorded, (\d+) lost", s.stdout)
        self.assertTrue(m, s.stdout)
        self.assertEqual(int(m.group(1)), len(events))
        self.assertGreater(len(events), 0)
        self.assertGreater(int(m.group(2)), 0, "losses counted in the trace")
        self.assertGreaterEqual(int(m.group(2)), lost)

    def test_kernel_contexts(self):
        """--kernel-context pid,procname,prio: every kernel event of CMD's
        threads after it ran carries its process, name and priority (the
        program, its library's consumer thread, its forked child); a
        sched_switch's context is its prev thread's. CMD runs on one CPU:
        the table follows each CPU's events in order (docs/kernel.md)."""
        nice = os.getpriority(os.PRIO_PROCESS, 0)
        p = subprocess.run([RINGTRACE, "record", "-q", "-o", self.trace, "-k", "sched_switch",
                            "--syscall", "write", "--kernel-context", "pid,procname",
                            "--kernel-context", "prio", "--", KWRITES, "200"],
                           capture_output=True, text=True, timeout=120,
                           preexec_fn=lambda: os.sched_setaffinity(
                               0, {min(os.sched_getaffinity(0))}))
        self.assertEqual(p.returncode, 0, p.stderr)
        events = []
        for msg in bt2.TraceCollectionMessageIterator(self.trace):
            if type(msg) is bt2._EventMessageConst:
                ev = msg.event
                ctx = {k: (str(v) if isinstance(v, bt2._StringFieldConst) else int(v))
                       for k, v in ev.common_context_field.items()}
                payload = {k: (str(v) if isinstance(v, bt2._StringFieldConst) else int(v))
                           for k, v in ev.payload_field.items()}
                events.append((ev.name, ctx, payload))
        setup = [i for i, e in enumerate(events) if e[0] == "kwrites:setup"][0]
        main = events[setup][1]["vtid"]
        child = [e[2]["pid"] for e in events if e[0] == "kwrites:child"][0]
        with open(os.path.join(self.trace, "kernel", "metadata")) as f:
            meta = f.read()
        self.assertNotIn("task_rename", meta, "the table's own events are not declared")
        seen = {}
        for name, ctx, payload in events[setup:]:
            if not name.startswith("syscall_"):
                continue
            tid = ctx["tid"]
            # The child, gone from /proc when its events are converted,
            # is named from its parent's task_newtask (docs/kernel.md).
            if tid == main or tid == child:
                want = (tid, "kwrites")
            elif ctx["procname"] == "ringtrace-cons":
                want = (main, "ringtrace-cons")
            else:
                continue
            self.assertEqual((ctx["pid"], ctx["procname"], ctx["prio"]), (*want, 20 + nice),
                             "%s of %d" % (name, tid))
            seen[want[1] if tid != child else "child"] = True
        self.assertEqual(sorted(seen), ["child", "kwrites", "ringtrace-cons"])
        switches = 0
        for name, ctx, payload in events:
            if name == "sched_switch":
                # LTTng's priorities, in the payload as in the context.
                self.assertEqual((ctx["tid"], ctx["procname"], ctx["prio"]),
                                 (payload["prev_tid"], payload["prev_comm"],
                                  payload["prev_prio"]))
                switches += 1
        self.assertGreater(switches, 0)
        p = subprocess.run([RINGTRACE, "record", "-o", self.trace + "2", "--kernel-context", "pid",
                            "--", KWRITES, "1"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--kernel-context goes with -k", p.stderr)
        p = subprocess.run([RINGTRACE, "record", "-o", self.trace + "2", "-k", "sched_switch",
                            "--kernel-context", "pid,cpu_id", "--", KWRITES, "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown kernel context 'cpu_id'", p.stderr)

    def test_other_user_gets_one_line(self):
        os.chmod(self.tmp.name, 0o755)
        out = os.path.join(self.tmp.name, "nobody")
        os.mkdir(out, 0o700)
        os.chown(out, 65534, 65534)
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            RINGTRACE, "record", "-o", out, "-k", "sched_switch", "--",
                            KWRITES, "1"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertIn("the kernel domain needs root", p.stderr)
        self.assertEqual(os.listdir(out), [], "CMD did not run")

    def test_unknown_event(self):
        p = subprocess.run([RINGTRACE, "record", "-q", "-o", self.trace, "-k", "no_such_event",
                            "--", KWRITES, "1"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no kernel tracepoint matches 'no_such_event'", p.stderr)


if __name__ == "__main__":
    probe = subprocess.run([KCAPTURE, "--remove-stale"], capture_output=True, text=True)
    if probe.returncode == 77:
        print(probe.stdout.strip())
        sys.exit(77)
    unittest.main(verbosity=2)
