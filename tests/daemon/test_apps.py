#!/usr/bin/python3
"""Traced programs through ringtraced, end to end: session cycle with two
programs (one started before `start`, one after), two concurrent sessions
with different rules, per-uid and per-pid buffers, discard and overwrite,
snapshots, fork. Every trace is read back with babeltrace2 and checked
event by event (names, fields, contexts).

usage: test_apps.py BUILD_DIR
"""
import os
import re
import socket
import subprocess
import unittest

from apps_common import BUILD, RINGTRACE, AppCase, read_events, trace_dirs
import rtfixtures  # noqa: E402 (apps_common puts tests/support on the path)

FASTSITE = os.path.join(BUILD, "tests/integration/fastsite")
STRESS = os.path.join(BUILD, "tests/stress/stress")
CHECK_STRESS = os.path.join(BUILD, "tests/stress/check_stress")
APP_PAIR = os.path.join(BUILD, "tests/daemon/app_pair")


def ticks(events, tag=None, vpid=None):
    return [e for e in events if e["event"] == "app:tick" and
            (tag is None or e["tag"] == tag) and
            (vpid is None or e.get("ctx_vpid") == vpid)]


class SessionCycle(AppCase):
    def test_two_programs_before_and_after_start(self):
        out = self.out("trace")
        self.session(out, "app:*", contexts=("vpid", "vtid", "procname", "cpu_id", "ip",
                                             "prio", "hostname"))
        p1 = self.program()
        p1.cmd("emit 3 before")            # not started: not recorded
        self.rt("start")
        p1.cmd("emit 50 one")
        p2 = self.program()                 # registers while the session runs
        p2.cmd("emit 40 two")
        p1.cmd("warn 2")
        ranges = {p.pid: p.exe_range() for p in (p1, p2)}
        listing = self.rt("list", "-u")
        for p in (p1, p2):
            for ev in ("app:tick", "app:warn"):
                self.assertRegex(listing, rf"(?m)^.*\b{p.pid}\b.*app_prog.*{ev}\b")
        self.rt("stop")
        p1.cmd("emit 5 after")             # stopped: not recorded
        for p in (p1, p2):
            rc, err = p.exit()
            self.assertEqual((rc, err), (0, ""))

        self.assertEqual(trace_dirs(out),
                         [os.path.join(out, "ust", "uid", str(os.getuid()), "64-bit")])
        events = read_events(out)
        # The ip context brings each program's state dump along
        # (docs/statedump.md), its executable listed.
        for p in (p1, p2):
            self.assertTrue([e for e in events if e["event"] == "lttng_ust_statedump:bin_info"
                             and e["ctx_vpid"] == p.pid and e["path"].endswith("/app_prog")])
        events = [e for e in events if e["event"].startswith("app:")]
        self.assertEqual(len(events), 50 + 40 + 2)
        host = os.uname().nodename
        for p, tag, n in ((p1, "one", 50), (p2, "two", 40)):
            mine = ticks(events, vpid=p.pid)
            self.assertEqual([e["seq"] for e in mine], list(range(n)))
            prio = 20 + os.getpriority(os.PRIO_PROCESS, os.getpid())
            for e in mine:
                self.assertEqual(e["tag"], tag)
                self.assertEqual(e["value"], 3 * e["seq"])
                self.assertEqual(e["ctx_vtid"], p.pid)
                self.assertEqual(e["ctx_procname"], "app_prog")
                self.assertEqual(e["ctx_hostname"], host)
                self.assertEqual(e["ctx_prio"], prio)
                self.assertLess(e["ctx_cpu_id"], os.cpu_count())
                self.assertTrue(any(lo <= e["ctx_ip"] < hi for lo, hi in ranges[p.pid]),
                                hex(e["ctx_ip"]))
        warns = [e for e in events if e["event"] == "app:warn"]
        self.assertEqual([(e["seq"], e["ctx_vpid"]) for e in warns], [(0, p1.pid), (1, p1.pid)])

    def test_restart_keeps_appending(self):
        out = self.out("trace")
        self.session(out, "app:tick")
        p = self.program()
        self.rt("start")
        p.cmd("emit 10 first")
        self.rt("stop")
        p.cmd("emit 10 between")
        self.rt("start")
        p.cmd("emit 7 second")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        tags = [(e["tag"], e["seq"]) for e in read_events(out)]
        self.assertEqual(tags, [("first", i) for i in range(10)] +
                         [("second", i) for i in range(7)])


class ConcurrentSessions(AppCase):
    def test_different_rules_and_contexts(self):
        a, b = self.out("a"), self.out("b")
        self.rt("create", "a", "-o", a)
        self.rt("enable-channel", "-u", "-s", "a", "channel0", "--subbuf-size", "1M",
                "--num-subbuf", "8")
        self.rt("enable-event", "-u", "-s", "a", "app:tick")
        self.rt("add-context", "-u", "-s", "a", "-t", "vtid")
        self.rt("create", "b", "-o", b)
        self.rt("enable-event", "-u", "-s", "b", "app:*", "--loglevel", "WARNING")
        self.rt("enable-event", "-u", "-s", "b", "app:tick")
        self.rt("add-context", "-u", "-s", "b", "-t", "procname", "-t", "vpid")
        p = self.program()
        self.rt("start", "a")
        self.rt("start", "b")
        p.cmd("emit 20 both")              # in both sessions: two targets
        p.cmd("warn 3")                    # only b
        self.rt("stop", "a")
        p.cmd("emit 4 bonly")              # a stopped
        self.rt("stop", "b")
        self.assertEqual(p.exit(), (0, ""))

        ea, eb = read_events(a), read_events(b)
        self.assertEqual([(e["event"], e["tag"], e["seq"], e["ctx_vtid"]) for e in ea],
                         [("app:tick", "both", i, p.pid) for i in range(20)])
        self.assertTrue(all("ctx_vpid" not in e for e in ea))
        names = [(e["event"], e.get("tag"), e["seq"]) for e in eb]
        self.assertEqual(names, [("app:tick", "both", i) for i in range(20)] +
                         [("app:warn", None, i) for i in range(3)] +
                         [("app:tick", "bonly", i) for i in range(4)])
        for e in eb:
            self.assertEqual((e["ctx_procname"], e["ctx_vpid"]), ("app_prog", p.pid))
            self.assertNotIn("ctx_vtid", e)

    def test_disable_event_while_running(self):
        out = self.out("t")
        self.session(out, "app:tick", "app:warn")
        p = self.program()
        self.rt("start")
        p.cmd("emit 5 on")
        p.cmd("warn 1")
        self.rt("disable-event", "-u", "app:tick")
        p.cmd("emit 5 off")
        p.cmd("warn 1")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        got = [(e["event"], e.get("tag"), e["seq"]) for e in read_events(out)]
        self.assertEqual(got, [("app:tick", "on", i) for i in range(5)] +
                         [("app:warn", None, 0), ("app:warn", None, 0)])


    def test_track_untrack(self):
        out = self.out("t")
        self.session(out, "app:tick", contexts=("vpid",))
        p1, p2 = self.program(), self.program()
        self.rt("track", "-u", "--pid", str(p1.pid))
        self.rt("start")
        p1.cmd("emit 3 a")
        p2.cmd("emit 3 a")                 # not tracked
        self.rt("track", "-u", "--pid", str(p2.pid))
        p2.cmd("emit 2 b")
        self.rt("untrack", "-u", "--pid", str(p1.pid))
        p1.cmd("emit 2 b")                 # no longer tracked
        self.rt("stop")
        for p in (p1, p2):
            self.assertEqual(p.exit(), (0, ""))
        got = [(e["ctx_vpid"], e["tag"], e["seq"]) for e in read_events(out)]
        self.assertEqual(got, [(p1.pid, "a", i) for i in range(3)] +
                         [(p2.pid, "b", i) for i in range(2)])


    def test_threads_while_tables_change(self):
        """Four threads trace into session a while session b's rule for
        the same event is enabled and disabled over and over (each change
        publishes new target tables): a keeps every event."""
        import threading
        a, b = self.out("a"), self.out("b")
        self.rt("create", "a", "-o", a)
        self.rt("enable-channel", "-u", "-s", "a", "channel0", "--subbuf-size", "1M",
                "--num-subbuf", "8")
        self.rt("enable-event", "-u", "-s", "a", "app:tick")
        self.rt("add-context", "-u", "-s", "a", "-t", "vtid")
        self.rt("create", "b", "-o", b)
        self.rt("enable-event", "-u", "-s", "b", "app:tick")
        p = self.program()
        self.rt("start", "a")
        self.rt("start", "b")
        done = threading.Event()
        rounds = [0]

        def churn():
            while not done.is_set():
                self.rt("disable-event", "-u", "-s", "b", "app:tick")
                self.rt("enable-event", "-u", "-s", "b", "app:tick")
                rounds[0] += 1

        t = threading.Thread(target=churn)
        t.start()
        try:
            p.cmd("threads 4 20000")
        finally:
            done.set()
            t.join()
        self.rt("stop", "a")
        self.rt("stop", "b")
        self.assertEqual(p.exit(), (0, ""))
        per_thread = {}
        tids = {}
        for e in read_events(a):
            per_thread.setdefault(e["tag"], []).append(e["seq"])
            tids.setdefault(e["tag"], set()).add(e["ctx_vtid"])
        self.assertEqual(sorted(per_thread), ["t0", "t1", "t2", "t3"])
        for tag, seqs in per_thread.items():
            self.assertEqual(seqs, list(range(20000)), tag)
            self.assertEqual(len(tids[tag]), 1, tag)
        self.assertEqual(len(set().union(*tids.values())), 4)
        print(f"({rounds[0]} disable/enable rounds while tracing)", end=" ")
        for e in read_events(b):
            self.assertEqual(e["value"], 3 * e["seq"])


class BufferTypes(AppCase):
    def test_per_pid(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ch", "--buffers-pid")
        self.rt("enable-event", "-u", "-c", "ch", "app:*")
        self.rt("add-context", "-u", "-c", "ch", "-t", "vpid")
        self.rt("start")
        p1, p2 = self.program(), self.program()
        p1.cmd("emit 30 p1")
        p2.cmd("emit 20 p2")
        self.assertEqual(p1.exit(), (0, ""))   # exits before stop: drained
        p2.cmd("emit 5 p2b")
        self.rt("stop")
        self.assertEqual(p2.exit(), (0, ""))
        dirs = trace_dirs(out)
        self.assertEqual(len(dirs), 2, dirs)
        by_pid = {}
        for d in dirs:
            self.assertEqual(os.path.dirname(d), os.path.join(out, "ust", "pid"))
            events = read_events(d)
            pids = {e["ctx_vpid"] for e in events}
            self.assertEqual(len(pids), 1, d)
            pid = pids.pop()
            self.assertTrue(os.path.basename(d).startswith(f"app_prog-{pid}-"), d)
            by_pid[pid] = [(e["tag"], e["seq"]) for e in events]
        self.assertEqual(by_pid[p1.pid], [("p1", i) for i in range(30)])
        self.assertEqual(by_pid[p2.pid], [("p2", i) for i in range(20)] +
                         [("p2b", i) for i in range(5)])

    def test_per_pid_exec(self):
        # A program that execs a linked program keeps its pid and registers
        # again within the second: the new image's trace needs a directory
        # of its own or shares the old one; none of its events is lost
        # (its metadata was refused with "File exists" when the name was
        # taken).
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ch", "--buffers-pid")
        self.rt("enable-event", "-u", "-c", "ch", "app:*")
        self.rt("add-context", "-u", "-c", "ch", "-t", "vpid")
        self.rt("start")
        p = self.program()
        tags = []
        for round in range(3):
            tag = f"image{round}"
            p.cmd(f"emit 10 {tag}")
            tags.append(tag)
            if round < 2:
                p.p.stdin.write("exec\n")
                p.p.stdin.flush()
                line = p.p.stdout.readline()
                self.assertEqual(line.split(), ["ready", str(p.pid)])
        self.assertEqual(p.exit(), (0, ""))
        self.rt("stop")
        dirs = trace_dirs(out)
        self.assertTrue(dirs)
        names = [os.path.basename(d) for d in dirs]
        self.assertEqual(len(set(names)), len(names), names)
        got = []
        for d in dirs:
            # PROCNAME-PID-DATE[-N]; the exec'd image is named "exe"
            self.assertIn(f"-{p.pid}-", os.path.basename(d), d)
            events = read_events(d)
            self.assertEqual({e["ctx_vpid"] for e in events}, {p.pid}, d)
            got += [(e["tag"], e["seq"]) for e in events]
        self.assertEqual(sorted(got), sorted((t, i) for t in tags for i in range(10)))

    def test_discard_and_overwrite(self):
        out = self.out("t")
        n = 20000
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "d", "--discard", "--subbuf-size", "4k",
                "--num-subbuf", "2", "--read-timer", "200000")
        self.rt("enable-channel", "-u", "o", "--overwrite", "--subbuf-size", "4k",
                "--num-subbuf", "2", "--read-timer", "200000")
        self.rt("enable-event", "-u", "-c", "d", "app:tick")
        self.rt("enable-event", "-u", "-c", "o", "app:tick")
        p = self.program()
        self.rt("start")
        p.cmd(f"emit {n} x")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        events = read_events(out)
        per_mode = {}
        for e in events:
            self.assertEqual((e["event"], e["tag"], e["value"]),
                             ("app:tick", "x", 3 * e["seq"]))
            per_mode.setdefault(e["stream_class"], []).append(e["seq"])
        d, o = per_mode[0], per_mode[1]
        for seqs in (d, o):
            self.assertEqual(seqs, sorted(set(seqs)), "not strictly increasing")
        self.assertEqual(d[0], 0, "discard mode keeps the oldest events")
        self.assertEqual(o[-1], n - 1, "overwrite mode keeps the newest events")
        self.assertLess(len(d), n, "small buffers and a slow reader should drop some")


class Snapshots(AppCase):
    def test_most_recent_events_of_each_program(self):
        snaps = self.out("snaps")
        self.rt("create", "snap", "--snapshot", "-o", snaps)
        self.rt("enable-channel", "-u", "ch", "--subbuf-size", "4k", "--num-subbuf", "4")
        self.rt("enable-event", "-u", "-c", "ch", "app:tick")
        self.rt("add-context", "-u", "-c", "ch", "-t", "vpid")
        self.rt("start")
        p1, p2 = self.program(), self.program()
        p1.cmd("emit 20000 p1")
        p2.cmd("emit 50 p2")
        first = self.rt("snapshot", "record")
        p1.cmd("emit 10 again")
        second = self.rt("snapshot", "record")
        self.rt("stop")
        for p in (p1, p2):
            self.assertEqual(p.exit(), (0, ""))
        paths = []
        for text in (first, second):
            self.assertIn("Snapshot recorded in " + snaps, text)
            paths.append(text.split("Snapshot recorded in ", 1)[1].split()[0].rstrip("."))
        self.assertNotEqual(paths[0], paths[1])
        ev1 = read_events(paths[0])
        mine1 = [e["seq"] for e in ticks(ev1, "p1", p1.pid)]
        self.assertEqual(mine1[-1], 19999)
        self.assertLess(len(mine1), 20000)
        self.assertEqual([e["seq"] for e in ticks(ev1, "p2", p2.pid)], list(range(50)))
        ev2 = read_events(paths[1])
        self.assertEqual([e["seq"] for e in ticks(ev2, "again", p1.pid)], list(range(10)))

    def test_hybrid_overwrite_and_streaming_channels(self):
        # A flight-recorder channel for frequent events and a streaming
        # (discard) channel for rare ones in one snapshot session: the
        # rare ones are written to the session's output as they come and
        # every snapshot holds them all, beside the newest frequent ones,
        # in one trace (one metadata, both channels).
        snaps = self.out("snaps")
        self.rt("create", "snap", "--snapshot", "-o", snaps)
        self.rt("enable-channel", "-u", "fast", "--subbuf-size", "4k", "--num-subbuf", "4")
        self.rt("enable-channel", "-u", "rare", "--discard")
        self.rt("enable-event", "-u", "-c", "fast", "app:tick")
        self.rt("enable-event", "-u", "-c", "rare", "app:warn")
        self.rt("start")
        p = self.program()
        p.cmd("warn 5")
        p.cmd("emit 20000 first")
        first = self.rt("snapshot", "record")
        p.cmd("warn 3")
        second = self.rt("snapshot", "record")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        paths = [t.split("Snapshot recorded in ", 1)[1].split()[0].rstrip(".")
                 for t in (first, second)]
        for path, warns in zip(paths, ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 0, 1, 2])):
            self.assertEqual(len(trace_dirs(path)), 1, trace_dirs(path))
            events = read_events(path)
            self.assertEqual([e["seq"] for e in events if e["event"] == "app:warn"], warns)
            seqs = [e["seq"] for e in ticks(events, "first")]
            self.assertEqual(seqs[-1], 19999)
            self.assertLess(len(seqs), 20000, "the 16 KiB overwrite channel kept them all")
            self.assertEqual({e["stream_class"] for e in events}, {0, 1})
        # The streaming channel's own trace, in the session's output.
        streamed = [d for d in trace_dirs(snaps) if "snapshot-" not in d]
        self.assertEqual(len(streamed), 1, streamed)
        self.assertEqual([e["seq"] for e in read_events(streamed[0])], [0, 1, 2, 3, 4, 0, 1, 2])

    def test_no_streams(self):
        # A program registered and recorded nothing: no packet to save, in
        # a snapshot of the whole buffers and in one trimmed to a size.
        snaps = self.out("snaps")
        self.rt("create", "snap", "--snapshot", "-o", snaps)
        self.rt("enable-event", "-u", "app:tick")
        self.rt("start")
        prog = self.program()
        for size in ((), ("--max-size", "1M")):
            text = self.rt("snapshot", "record", *size)
            self.assertIn("Snapshot recorded in " + snaps, text)
            path = text.split("Snapshot recorded in ", 1)[1].split()[0].rstrip(".")
            # The program's trace: its metadata, no stream file.
            dirs = trace_dirs(path)
            self.assertEqual(len(dirs), 1, dirs)
            self.assertEqual(os.listdir(dirs[0]), ["metadata"])
            self.assertEqual(read_events(dirs[0]), [])
        self.rt("stop")
        self.assertEqual(prog.exit(), (0, ""))


class Dlopen(AppCase):
    def test_library_events_recorded_from_the_first(self):
        import subprocess
        from apps_common import BUILD
        out = self.out("t")
        self.session(out, "host:*,plugin:*")
        self.rt("start")
        integ = os.path.join(BUILD, "tests", "integration")
        r = subprocess.run([os.path.join(integ, "dlhost"), os.path.join(integ, "plugin.so")],
                           env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.rt("stop")
        got = [(e["event"], e.get("round"), e.get("i")) for e in read_events(out)]
        self.assertEqual(got, [("host:before", None, None)] +
                         [("plugin:work", rnd, i) for rnd in (1, 2) for i in range(10)] +
                         [("host:after", None, None)])


class Fork(AppCase):
    def test_child_registers_as_new_program(self):
        out = self.out("t")
        self.session(out, "app:tick", contexts=("vpid",))
        p = self.program()
        self.rt("start")
        status = p.cmd("fork 30 child")
        self.assertEqual(status, ["0"])
        p.cmd("emit 10 parent")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        events = read_events(out)
        parent = ticks(events, "parent")
        child = ticks(events, "child")
        self.assertEqual([(e["seq"], e["ctx_vpid"]) for e in parent],
                         [(i, p.pid) for i in range(10)])
        self.assertEqual([e["seq"] for e in child], list(range(30)))
        self.assertEqual(len({e["ctx_vpid"] for e in child}), 1)
        self.assertNotEqual(child[0]["ctx_vpid"], p.pid)


class Exec(AppCase):
    def test_exec_registers_again(self):
        out = self.out("t")
        self.session(out, "app:tick", contexts=("vpid",))
        p = self.program()
        self.rt("start")
        p.cmd("emit 5 pre")
        p.p.stdin.write("exec\n")
        p.p.stdin.flush()
        self.assertEqual(p.p.stdout.readline(), f"ready {p.pid}\n")
        p.cmd("emit 4 post")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        got = [(e["ctx_vpid"], e["tag"], e["seq"]) for e in read_events(out)]
        self.assertEqual(got, [(p.pid, "pre", i) for i in range(5)] +
                         [(p.pid, "post", i) for i in range(4)])


class InlineCallSites(AppCase):
    """Daemon mode publishes a fast site when one channel without contexts
    records an event (ringtrace/internal/fast.h): the call site records by itself.
    With a context, or a second session, it calls the library, and the
    events carry the contexts."""

    def run_fastsite(self, n):
        r = subprocess.run([FASTSITE, str(n)], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"fastsite: inline (\d+) of 10", r.stderr)
        self.assertTrue(m, r.stderr)
        return int(m.group(1))

    def check(self, out, n, vtid=False):
        events = read_events(out)
        hand = [e for e in events if e["event"] == "fastsite:by_hand"]
        self.assertEqual([e["v"] for e in hand], list(range(10)))
        seq = [e for e in events if e["event"] == "fastsite:seq"]
        self.assertEqual([(e["seq"], e["sq"]) for e in seq], [(i, i * i) for i in range(n)])
        for e in hand + seq:
            self.assertEqual("ctx_vtid" in e, vtid)
        return events

    def test_one_channel_records_inline(self):
        out = self.out("plain")
        self.session(out, "fastsite:*", name="plain")
        self.rt("start")
        self.assertGreater(self.run_fastsite(5000), 0)
        self.rt("stop")
        self.check(out, 5000)

    def test_contexts_and_two_sessions_call_the_library(self):
        ctx = self.out("ctx")
        self.session(ctx, "fastsite:*", contexts=("vtid",), name="ctx")
        self.rt("start")
        self.assertEqual(self.run_fastsite(300), 0)
        self.rt("stop")
        events = self.check(ctx, 300, vtid=True)
        self.assertEqual(len({e["ctx_vtid"] for e in events}), 1)
        self.rt("destroy", "ctx")

        # Two sessions: each event to both, in one section each (the
        # library's call of the call sites' section), across sub-buffers.
        a, b = self.out("a"), self.out("b")
        for name, out in (("a", a), ("b", b)):
            self.session(out, "fastsite:*", name=name)
            self.rt("start", name)
        self.assertEqual(self.run_fastsite(5000), 0)
        for name, out in (("a", a), ("b", b)):
            self.rt("stop", name)
            self.check(out, 5000)

    def test_two_sessions_writer_between_sections(self):
        """Two sessions: the first buffer's section reads the clock for
        both; an event recorded between the two sections (the tests'
        hook) lands in both buffers, so the second section must read the
        clock again (pair_section.h). Each trace is read by babeltrace2
        and by ringtrace view, event by event, in the expected order with
        timestamps that never go back."""
        outs = {n: self.out(n) for n in ("a", "b")}
        for name, out in outs.items():
            self.session(out, "pair:*", name=name)
            self.rt("start", name)
        n = 300
        r = subprocess.run([APP_PAIR, str(n)], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        words = r.stdout.split()
        self.assertEqual(words[0], "hooked")
        hooked = {int(w) for w in words[1:]}
        self.assertGreater(len(hooked), n - 10)
        for name, out in outs.items():
            self.rt("stop", name)
        want = {"a": [], "b": []}
        for i in range(n):
            h = [("pair:in", i)] if i in hooked else []
            want["a"] += [("pair:out", i)] + h
            want["b"] += h + [("pair:out", i)]
        for name, out in outs.items():
            msgs = rtfixtures.bt2_read(out)[0]
            got = [(m.event.name, int(m.event.payload_field["seq"])) for m in msgs]
            self.assertEqual(got, want[name], name)
            ts = [m.default_clock_snapshot.value for m in msgs]
            self.assertEqual(ts, sorted(ts), name)
            v = subprocess.run([RINGTRACE, "view", "--clock-cycles", "--no-delta", out],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(v.returncode, 0, v.stderr)
            lines = [re.match(r"\[(\d+)\] .*(pair:\w+): \{ seq = (\d+) \}", l)
                     for l in v.stdout.splitlines()]
            self.assertTrue(all(lines), v.stdout[:500])
            self.assertEqual([(m.group(2), int(m.group(3))) for m in lines], want[name])
            self.assertEqual([int(m.group(1)) for m in lines], ts, name)

    def test_two_sessions_threads_and_signals(self):
        """Two sessions record the same events of 4 threads interrupted by
        timer signals whose handlers record too (tests/stress): the
        fixed-size ones go to both buffers with one clock read, the
        second section falling back to a clock read of its own when
        anything was reserved there in between (a handler, another
        thread). Each trace holds every event whole, each thread's in
        order, every missing one counted as discarded, each event's
        timestamp within its packet and monotonic in its stream (our
        reader, check_stress); babeltrace2 reads as many."""
        outs = {n: self.out(n) for n in ("a", "b")}
        for name, out in outs.items():
            self.session(out, "stress:*", name=name)
            self.rt("start", name)
        r = subprocess.run([STRESS, "4", "5000", "50"], capture_output=True, text=True,
                           env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        manifest = os.path.join(self.tmp, "manifest")
        with open(manifest, "w") as f:
            f.write(r.stdout)
        for name, out in outs.items():
            self.rt("stop", name)
            (trace,) = trace_dirs(out)
            c = subprocess.run([CHECK_STRESS, trace, manifest, "discard"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
            m = re.search(r"check_stress: (\d+) events read", c.stdout)
            self.assertTrue(m, c.stdout)
            events = read_events(out)
            self.assertEqual(len(events), int(m.group(1)))
            self.assertGreater(len(events), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
