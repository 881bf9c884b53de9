#!/usr/bin/python3
"""Fault tests with a real ringtraced: kill -9 the daemon while programs
trace (they finish normally; the wall-time bound only says "did not
hang"), kill -9 a traced program (the trace keeps everything it
committed), per-uid and per-pid buffers.

usage: test_apps_kill.py BUILD_DIR
"""
import os
import signal
import threading
import time
import unittest

from apps_common import AppCase, read_events


class KillDaemon(AppCase):
    def test_programs_finish_after_daemon_killed(self):
        self.rt("create", "s", "-o", self.out("t"))
        self.rt("enable-event", "-u", "app:*")
        self.rt("add-context", "-u", "-t", "vtid")
        self.rt("start")
        progs = [self.program(), self.program()]
        answers = {}

        def spin(p):
            answers[p.pid] = p.cmd("spin 1500")

        t0 = time.monotonic()
        threads = [threading.Thread(target=spin, args=(p,)) for p in progs]
        for t in threads:
            t.start()
        time.sleep(0.4)
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        for t in threads:
            t.join(30)
            self.assertFalse(t.is_alive(), "a program hung")
        for p in progs:
            self.assertGreater(int(answers[p.pid][0]), 0)
            p.cmd("emit 100 after")        # no daemon any more: untraced, fine
            rc, err = p.exit()
            self.assertEqual(rc, 0)
            lines = err.splitlines()
            self.assertLessEqual(len(lines), 1, lines)
        self.assertLess(time.monotonic() - t0, 30, "did not hang")
        # A program started now (stale socket, no daemon) runs normally.
        late = self.program()
        late.cmd("emit 10 late")
        self.assertEqual(late.exit(), (0, ""))


class KillProgram(AppCase):
    def check(self, buffers):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ch", buffers)
        self.rt("enable-event", "-u", "-c", "ch", "app:tick")
        self.rt("add-context", "-u", "-c", "ch", "-t", "vpid")
        self.rt("start")
        victim, other = self.program(), self.program()
        victim.cmd("emit 1000 victim")
        other.cmd("emit 10 other")
        os.kill(victim.pid, signal.SIGKILL)
        victim.p.wait()
        other.cmd("emit 10 other2")
        self.rt("stop")
        self.assertEqual(other.exit(), (0, ""))
        events = read_events(out)
        got = [e["seq"] for e in events if e["ctx_vpid"] == victim.pid]
        self.assertEqual(got, list(range(1000)))
        self.assertTrue(all(e["tag"] == "victim" for e in events
                            if e["ctx_vpid"] == victim.pid))
        mine = [(e["tag"], e["seq"]) for e in events if e["ctx_vpid"] == other.pid]
        self.assertEqual(mine, [("other", i) for i in range(10)] +
                         [("other2", i) for i in range(10)])

    def test_per_uid(self):
        self.check("--buffers-uid")

    def test_per_pid(self):
        self.check("--buffers-pid")


if __name__ == "__main__":
    unittest.main(verbosity=2)
