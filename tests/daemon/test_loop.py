#!/usr/bin/python3
"""ringtraced's main loop under load: a program registering tens of
thousands of event classes, slow and silent clients, descriptor
exhaustion, oversized frames. Whatever one client does, `list` and a
fresh program's registration are answered (within the command's own
timeout: no timing is asserted) and the traces read back.

usage: test_loop.py BUILD_DIR
"""
import errno
import os
import re
import subprocess
import sys
import threading
import time
import unittest

from apps_common import RINGTRACE, AppCase, read_events, trace_dirs
import raw_app


class LoopCase(AppCase):
    def list_ok(self):
        """`ringtrace list` succeeds (its own timeout applies)."""
        r = subprocess.run([RINGTRACE, "list"], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, f"list: {r.stderr}")
        return r.stdout

    def log_text(self):
        self.daemon_log.flush()
        with open(os.path.join(self.tmp, "daemon.log")) as f:
            return f.read()

    def raw(self, nr_events, procname="rawapp"):
        a = raw_app.RawApp(self.rundir, nr_events, procname)
        self.addCleanup(a.close)
        return a

    def run_program(self, tag, n=100):
        """A fresh app_prog registers, records n app:tick (tag `tag`) and
        exits 0."""
        p = self.program()
        p.cmd(f"emit {n} {tag}")
        rc, err = p.exit()
        self.assertEqual(rc, 0, err)
        return p


class Registration(LoopCase):
    """Issue 14 item 7: registering is linear, off the loop's critical
    path, capped per program."""

    def lister(self, stop, failures, count):
        while not stop.is_set():
            r = subprocess.run([RINGTRACE, "list"], capture_output=True, text=True,
                               env=self.env, timeout=60)
            count[0] += 1
            if r.returncode != 0:
                failures.append(r.stderr)

    def test_many_events(self):
        out = self.out("many")
        # 11,111 of the 65,536 classes recorded (raw:ev1, ev10..ev19, ...):
        # enough to show the cost of assigning ids, few enough for
        # babeltrace2 to read the metadata quickly.
        self.session(out, "raw:ev1*", "app:tick")
        wanted = 11111
        self.rt("start")
        stop, failures, count = threading.Event(), [], [0]
        t = threading.Thread(target=self.lister, args=(stop, failures, count))
        t.start()
        try:
            # Two programs with the same 65,536 classes (the most one may
            # register): the per-uid trace gets each class once.
            a = self.raw(65536, "many1")
            self.assertEqual(a.wait_registered(300), 0, self.log_text())
            b = self.raw(65536, "many2")
            self.assertEqual(b.wait_registered(300), 0, self.log_text())
        finally:
            stop.set()
            t.join()
        self.assertEqual(failures, [], "`list` failed while programs registered")
        self.assertGreater(count[0], 0)
        for p in (a, b):
            deadline = time.monotonic() + 60
            while p.enabled != wanted and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(p.enabled, wanted)
        self.assertEqual(a.ids, b.ids)
        self.assertEqual(sorted(a.ids.values()), list(range(wanted)))
        self.assertEqual(sorted(a.ids), sorted(i for i in range(65536) if str(i)[0] == "1"))

        # The metadata grows by appending: same file, new declarations at
        # its end, the header once.
        meta = os.path.join(trace_dirs(out)[0], "metadata")
        deadline = time.monotonic() + 60
        while "raw:ev19999" not in open(meta).read() and time.monotonic() < deadline:
            time.sleep(0.05)
        ino = os.stat(meta).st_ino
        self.run_program("after")
        deadline = time.monotonic() + 60
        while '"app:tick"' not in open(meta).read() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(os.stat(meta).st_ino, ino, "metadata rewritten, not appended")
        text = open(meta).read()
        self.assertEqual(text.count("/* CTF 1.8 */"), 1)
        self.assertEqual(text.count('name = "raw:ev12345";'), 1)
        self.assertEqual(text.count('name = "app:tick";'), 1)

        self.rt("stop")
        evs = [e for e in read_events(out) if e["event"] == "app:tick"]
        self.assertEqual([(e["seq"], e["tag"], e["value"]) for e in evs],
                         [(i, "after", 3 * i) for i in range(100)])

    def test_over_cap(self):
        out = self.out("cap")
        self.session(out, "app:tick")
        self.rt("start")
        a = self.raw(65537, "greedy")
        self.assertEqual(a.wait_registered(300), -errno.E2BIG)
        self.assertTrue(a.closed.wait(60))
        self.assertRegex(self.log_text(),
                         r"program \d+ \(greedy\) registers 65537 more event classes .*"
                         r"a program may register 65536")
        # The daemon goes on: `list` answers, a program traces.
        self.list_ok()
        self.run_program("fine")
        self.rt("stop")
        evs = [e for e in read_events(out) if e["event"] == "app:tick"]
        self.assertEqual(len(evs), 100)


if __name__ == "__main__":
    unittest.main(verbosity=2)
