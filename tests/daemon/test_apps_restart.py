#!/usr/bin/python3
"""Programs reconnect to a restarted ringtraced: a program emits numbered
events all the time (batches of B app:tick, tag "bK", seq 0..B-1, so
event number = K*B + seq) while the daemon is killed with -9 and a new
one started with the same RINGTRACE_RUNDIR; the new daemon's session
must hold the program's events from some point after the restart until
its very last one, consecutive, no holes. (The session of the killed
daemon is not read: what it had not written out died with it.) Also:
two restarts; a
fake daemon that sends garbage after the registration (the program keeps
running, retries, and later records into a real daemon again); a library
loaded with dlopen while no daemon ran has its events recorded after the
reconnection;
a program started while no daemon ran never connects (no thread).

Nothing here asserts timing: the test waits for the program to show up
in `ringtrace list -u` of the new daemon instead of sleeping.

usage: test_apps_restart.py BUILD_DIR
"""
import os
import signal
import struct
import sys
import threading
import time
import unittest

from apps_common import BUILD, AppCase, DlProgram, read_events
from test_apps_faults import REGISTER_REPLY, FakeDaemon, frame

B = 10   # events per batch


class Ticker(threading.Thread):
    """Drives a program: `emit B bK` for K = 0, 1, ... every few ms
    until stopped. `batches` is the number of batches done."""

    def __init__(self, prog):
        super().__init__(daemon=True)
        self.prog = prog
        self.batches = 0
        self.halt = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.halt.is_set():
                self.prog.cmd(f"emit {B} b{self.batches}")
                self.batches += 1
                time.sleep(0.003)
        except Exception as e:   # reported by stop()
            self.error = e

    def wait_batches(self, n, limit=60):
        end = time.monotonic() + limit
        while self.batches < n and self.error is None and time.monotonic() < end:
            time.sleep(0.01)

    def stop(self):
        self.halt.set()
        self.join(30)
        assert not self.is_alive(), "the program hung"
        assert self.error is None, self.error
        return self.batches * B     # events emitted


def numbers(path, pid):
    """Event numbers of the ticker in a trace, in time order."""
    out = []
    for e in read_events(path):
        if e["event"] == "app:tick" and e["ctx_vpid"] == pid and e["tag"].startswith("b"):
            out.append(int(e["tag"][1:]) * B + e["seq"])
    return out


def thread_names(pid):
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            names.append(f.read().strip())
    return names


class Restart(AppCase):
    def kill_daemon(self):
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        self.daemon_log.close()
        # The stale socket would make start_daemon() return at once.
        os.unlink(os.path.join(self.rundir, "ringtraced.sock"))

    def session(self, name):
        out = self.out(name)
        self.rt("create", name, "-o", out)
        self.rt("enable-event", "-u", "app:tick")
        self.rt("add-context", "-u", "-t", "vpid")
        self.rt("start")
        return out

    def wait_registered(self, prog):
        for _ in range(600):
            if any(str(prog.pid) in line.split() for line in
                   self.rt("list", "-u").splitlines()):
                return
            time.sleep(0.05)
        self.fail("the program did not register with the new daemon")

    def restart_and_record(self, prog, ticker, name):
        """Kill the daemon while `prog` traces, start a new one and a
        session; returns (output, events emitted when it was killed,
        batches done once the program was seen registered)."""
        ticker.wait_batches(ticker.batches + 20)
        killed_at = ticker.batches * B
        self.kill_daemon()
        ticker.wait_batches(ticker.batches + 20)     # untraced meanwhile
        down = time.monotonic()
        self.start_daemon()
        out = self.session(name)
        self.wait_registered(prog)
        # Reported, not asserted: daemon down for `down - killed`, then
        # the backoff's next attempt (plus the polling of list -u).
        print(f"\n  program seen registered {1000 * (time.monotonic() - down):.0f} ms "
              f"after the new daemon was started", file=sys.stderr)
        return out, killed_at, ticker.batches

    def check_tail(self, got, first_possible, last):
        """Consecutive numbers from the first recorded to `last`."""
        self.assertTrue(got, "nothing recorded after the restart")
        self.assertGreaterEqual(got[0], first_possible)
        self.assertEqual(got, list(range(got[0], last + 1)))

    def test_restart_once(self):
        self.session("s1")
        prog = self.program()
        ticker = Ticker(prog)
        ticker.start()
        out, killed_at, seen = self.restart_and_record(prog, ticker, "s2")
        ticker.wait_batches(seen + 30)
        emitted = ticker.stop()
        self.rt("stop")
        self.assertEqual(prog.exit(), (0, ""))
        got = numbers(out, prog.pid)
        self.check_tail(got, killed_at, emitted - 1)
        # Everything after the program was seen registered is there.
        self.assertLessEqual(got[0], seen * B)

    def test_restart_twice(self):
        self.session("s1")
        prog = self.program()
        ticker = Ticker(prog)
        ticker.start()
        out2, killed1, seen2 = self.restart_and_record(prog, ticker, "s2")
        ticker.wait_batches(seen2 + 20)
        # What a daemon killed with -9 had not written yet is lost with
        # it: stop s2 (written out) before killing that daemon too.
        self.rt("stop")
        out3, killed2, seen3 = self.restart_and_record(prog, ticker, "s3")
        ticker.wait_batches(seen3 + 30)
        emitted = ticker.stop()
        self.rt("stop")
        self.assertEqual(prog.exit(), (0, ""))
        got2 = numbers(out2, prog.pid)
        self.assertTrue(got2)
        self.assertGreaterEqual(got2[0], killed1)
        self.assertLessEqual(got2[0], seen2 * B)
        self.assertGreaterEqual(got2[-1], (seen2 + 20) * B - 1)
        self.assertLess(got2[-1], killed2)
        self.assertEqual(got2, list(range(got2[0], got2[-1] + 1)))
        self.check_tail(numbers(out3, prog.pid), killed2, emitted - 1)

    def test_garbage_after_reconnect(self):
        self.session("s1")
        prog = self.program()
        ticker = Ticker(prog)
        ticker.start()
        ticker.wait_batches(20)
        self.kill_daemon()

        def register_then_garbage(conn):
            conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
            time.sleep(0.05)
            conn.sendall(os.urandom(64) + b"\xff" * 32)
            time.sleep(5)

        fake = FakeDaemon(self.rundir, register_then_garbage)
        try:
            # Two registrations: the program went on retrying after the
            # garbage (the backoff makes the second come 0.1-0.2 s later).
            for _ in range(600):
                if len(fake.first_frames) >= 2:
                    break
                time.sleep(0.05)
            self.assertGreaterEqual(len(fake.first_frames), 2)
            self.assertTrue(all(f and f[0] == 16 for f in fake.first_frames))
            before = ticker.batches
            ticker.wait_batches(before + 20)
            self.assertGreaterEqual(ticker.batches, before + 20, "the program stalled")
        finally:
            fake.close()
            os.unlink(os.path.join(self.rundir, "ringtraced.sock"))
        self.start_daemon()
        out = self.session("s2")
        self.wait_registered(prog)
        seen = ticker.batches
        ticker.wait_batches(seen + 30)
        emitted = ticker.stop()
        self.rt("stop")
        rc, err = prog.exit()
        self.assertEqual(rc, 0)
        lines = err.splitlines()
        self.assertLessEqual(len(lines), 1, lines)     # one warning at most
        self.check_tail(numbers(out, prog.pid), 0, emitted - 1)

    def test_library_events_after_reconnect(self):
        self.session("s1")
        prog = DlProgram(self.env)
        self.programs.append(prog)
        plugin = os.path.join(BUILD, "tests/integration/plugin.so")
        self.kill_daemon()
        prog.cmd(f"load {plugin}")  # registered while no daemon listens
        prog.cmd("work 2")          # untraced
        self.start_daemon()
        out = self.out("s2")
        self.rt("create", "s2", "-o", out)
        self.rt("enable-event", "-u", "plugin:*")
        self.rt("start")
        self.wait_registered(prog)
        # The new daemon knows the library's events from the new
        # registration: they are recorded.
        self.assertIn("plugin:work", self.rt("list", "-u"))
        prog.cmd("work 3")
        self.rt("stop")
        self.assertEqual(prog.exit(), (0, ""))
        got = [(e["event"], e["round"], e["i"]) for e in read_events(out)]
        self.assertEqual(got, [("plugin:work", 3, i) for i in range(10)])

    def test_fork_while_reconnecting(self):
        self.session("s1")
        prog = self.program()
        prog.cmd("emit 5 before")
        self.kill_daemon()
        self.start_daemon()
        out = self.session("s2")
        # The parent is most likely still waiting for its next attempt:
        # the child registers by itself all the same (app_prog's child
        # emits once its rt-listener thread exists, i.e. registered).
        self.assertEqual(prog.cmd("fork 20 child"), ["0"])
        self.wait_registered(prog)
        prog.cmd("emit 5 parent")
        self.rt("stop")
        self.assertEqual(prog.exit(), (0, ""))
        got = [(e["tag"], e["seq"], e["ctx_vpid"] == prog.pid) for e in read_events(out)]
        self.assertEqual(sorted(got), sorted([("child", i, False) for i in range(20)] +
                                             [("parent", i, True) for i in range(5)]))

    def test_started_without_daemon_never_connects(self):
        self.kill_daemon()
        prog = self.program()
        prog.cmd("emit 5 alone")
        self.start_daemon()
        out = self.session("s2")
        prog.cmd("emit 5 later")
        # Documented: no listener thread, no registration, ever.
        self.assertEqual(thread_names(prog.pid), ["app_prog"])
        self.assertNotIn(str(prog.pid), self.rt("list", "-u").split())
        late = self.program()
        late.cmd("emit 3 late")
        self.rt("stop")
        self.assertEqual(prog.exit(), (0, ""))
        self.assertEqual(late.exit(), (0, ""))
        self.assertEqual([(e["tag"], e["ctx_vpid"]) for e in read_events(out)],
                         [("late", late.pid)] * 3)


if __name__ == "__main__":
    unittest.main(verbosity=2)
