#!/usr/bin/env python3
"""A live session of a real daemon followed end to end: `ringtrace create
S --set-url=net://... --live`, two channels (the events in the second, a
CTF stream class other than 0), ringtrace-relayd on loopback. Before the
program starts, babeltrace2's lttng-live source (LTTng's protocol, no
secret) and `ringtrace view --live` (with the relay's secret) attach.
The program then writes its events round by round and waits, after each
round, until both viewers have printed that round's events: so each
round is shown while the program still runs (its next round waits for
it: a handshake, no timing threshold). Then a burst from two threads,
the program's exit and the session's destroy: both viewers end on their
own (status 0), having shown every event exactly once, in time order,
the same as babeltrace2 and our reader read the relay's stored trace.

usage: test_live_session.py BUILD_DIR   (exit 77: babeltrace2 missing)"""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../support"))
sys.path.insert(0, HERE)
import rtfixtures  # noqa: E402
import test_streaming as ts  # noqa: E402

BUILD = ts.BUILD
RINGTRACE = ts.RINGTRACE
APP = ts.APP
ROUNDS = 6
# The longest wait for a viewer to show what the relay has (a bound for a
# hung viewer on a loaded machine, not a measure of speed).
WAIT = 120


class Follower(threading.Thread):
    """A viewer process whose output lines are collected as they come."""

    def __init__(self, cmd, env):
        super().__init__(daemon=True)
        self.p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.cond = threading.Condition()
        self.start()

    def run(self):
        for line in self.p.stdout:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, pred):
        """True once pred(lines) holds, False if the viewer ended or
        WAIT passed first."""
        deadline = time.monotonic() + WAIT
        with self.cond:
            while not pred(self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not self.is_alive()):
                    return pred(self.lines)
                self.cond.wait(min(left, 1.0))
            return True

    def finish(self):
        try:
            self.p.wait(WAIT)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
        self.join(10)
        err = self.p.stderr.read()
        self.p.stdout.close()
        self.p.stderr.close()
        return self.p.returncode, err


def bt2_tick(line):
    """(tag, seq) of babeltrace2's text line of an app:tick event, or None."""
    if " app:tick: " not in line:
        return None
    tag = line.split('tag = "', 1)[1].split('"', 1)[0]
    seq = int(line.split("seq = ", 1)[1].split(",", 1)[0])
    return tag, seq


def view_tick(line):
    e = json.loads(line)
    if e["name"] != "app:tick":
        return None
    return e["fields"]["tag"], e["fields"]["seq"]


class LiveSession(unittest.TestCase):
    setUp = ts.Streaming.setUp
    tearDown = ts.Streaming.tearDown
    host = ts.Streaming.host
    stored = ts.Streaming.stored

    def test_viewers_follow_a_daemon_session(self):
        a = self.host("hostA")
        a.rt("create", "web", "--set-url=" + self.url, "--live=100000")
        a.rt("enable-channel", "-u", "first")
        a.rt("enable-channel", "-u", "second")
        a.rt("enable-event", "-u", "app:warn", "-c", "first")
        a.rt("enable-event", "-u", "app:tick", "-c", "second")
        a.rt("start")
        live = ts.rc.live_port(self.relay_log)
        base = "net://127.0.0.1:%d" % live
        url = base + "/host/hostA/web"
        bt = Follower(["babeltrace2", "--input-format=lttng-live", url],
                      dict(a.env, RINGTRACE_RELAY_SECRET="/nonexistent"))
        view = Follower([RINGTRACE, "view", "--format=json", "--live", url], a.env)
        # Both attached before the program runs.
        listed = ""
        for _ in range(100):
            listed = subprocess.run([RINGTRACE, "view", "--live", base],
                                    env=a.env, capture_output=True, text=True,
                                    timeout=60)
            listed = listed.stdout + listed.stderr
            if "2 client(s)" in listed:
                break
            time.sleep(0.1)
        self.assertIn("2 client(s)", listed)
        app = subprocess.Popen([APP], env=a.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)

        def cmd(line):
            app.stdin.write(line + "\n")
            app.stdin.flush()
            return app.stdout.readline().strip()

        def shown(parse, tag, n):
            return lambda lines: sum(1 for x in lines if parse(x) and parse(x)[0] == tag) >= n

        try:
            self.assertTrue(app.stdout.readline().startswith("ready"))
            for k in range(ROUNDS):
                self.assertEqual(cmd("emit %d r%d" % (k + 1, k)), "ok")
                # The program waits here until both viewers showed the round.
                self.assertTrue(bt.wait_for(shown(bt2_tick, "r%d" % k, k + 1)),
                                "babeltrace2 did not show round %d while the program runs:\n%s"
                                % (k, "".join(bt.lines)))
                self.assertTrue(view.wait_for(shown(view_tick, "r%d" % k, k + 1)),
                                "view --live did not show round %d while the program runs:\n%s"
                                % (k, "".join(view.lines)))
                self.assertIsNone(app.poll())
            self.assertEqual(cmd("threads 2 3000"), "ok")
            self.assertEqual(cmd("exit"), "")
        finally:
            app.stdin.close()
            app.wait(timeout=60)
            app.stdout.close()
        a.rt("stop")
        a.rt("destroy")
        rb, eb = bt.finish()
        rv, ev = view.finish()
        self.assertEqual(rb, 0, eb)
        self.assertEqual(rv, 0, ev)
        want = sorted([("r%d" % k, s) for k in range(ROUNDS) for s in range(k + 1)] +
                      [("t%d" % t, s) for t in range(2) for s in range(3000)])
        got_bt = [bt2_tick(x) for x in bt.lines if bt2_tick(x)]
        got_view = [view_tick(x) for x in view.lines if view_tick(x)]
        self.assertEqual(sorted(got_bt), want)
        self.assertEqual(sorted(got_view), want)
        # In time order, as the relay stored them.
        trace = self.stored("hostA", "web")
        events, discarded, _ = rtfixtures.bt2_read(trace)
        self.assertEqual(discarded, 0)
        stored = [(str(e.event.payload_field["tag"]), int(e.event.payload_field["seq"]))
                  for e in events if e.event.name == "app:tick"]
        self.assertEqual(sorted(stored), want)
        ns = [json.loads(x)["ts"] for x in view.lines]
        self.assertEqual(ns, sorted(ns))
        ours = [(e["payload"]["tag"], e["payload"]["seq"])
                for e in rtfixtures.rtr_dump(BUILD, trace) if e["name"] == "app:tick"]
        self.assertEqual(sorted(ours), want)


def main():
    if not shutil.which("babeltrace2"):
        print("babeltrace2 is missing")
        sys.exit(77)
    unittest.main(argv=sys.argv[:1] + sys.argv[2:], verbosity=2)


if __name__ == "__main__":
    main()
