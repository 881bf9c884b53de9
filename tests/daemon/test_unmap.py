#!/usr/bin/python3
"""A program unmaps the buffer sets of a dead daemon, and those of a
destroyed session, while it goes on tracing (the library's per-thread
epochs, src/lib/epoch.h): three threads emit without pause, in turn an
event with a string (the library's path: written between a reservation
and a commit outside any rseq section) and a fixed-size one (the call
site's own section), and a fourth thread signals them every millisecond,
whose handler emits too. The buffer mappings (the memfds' inodes in
/proc/PID/maps) of the dead daemon, or of the destroyed session, must
disappear, the program must not crash, and its events, the signal
handler's included, must land in the new daemon's (or the other
session's) trace. And the grace period holds: a writer held between its
reservation and its commit in the dead daemon's buffer set (the hold
point of the tests' copy of the library, app_pause.c) keeps it mapped
while the program records into the new daemon; released, it commits
there (no crash), and then the buffer set goes.

usage: test_unmap.py BUILD_DIR
"""
import os
import signal
import time
import unittest

from apps_common import AppCase, Pausing, read_events

EVENTS = ("app:tick", "app:warn")


def buffer_inodes(pid):
    """Inodes of the ring buffer sets mapped in process pid."""
    found = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            if "ringtrace-buffer" in line:
                found.add(int(line.split()[4]))
    return found


class Unmap(AppCase):
    def start_session(self, name):
        out = self.out(name)
        self.session(out, *EVENTS, name=name)
        self.rt("start")
        return out

    def wait_for(self, what, cond, limit=60):
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if cond():
                return
            time.sleep(0.05)
        self.fail(what)

    def wait_registered(self, prog):
        self.wait_for("the program did not register with the new daemon",
                      lambda: any(str(prog.pid) in line.split()
                                  for line in self.rt("list", "-u").splitlines()))

    def check_landed(self, out, prog):
        """The storm's events, from every thread and the handler, are in
        the trace at `out`, each thread's in order."""
        seqs = {}
        warns = 0
        for e in read_events(out):
            if e["event"] == "app:warn":
                warns += 1
            else:
                self.assertEqual(e["value"], 3 * e["seq"])
                seqs.setdefault(e["tag"], []).append(e["seq"])
        self.assertEqual(sorted(seqs), ["sig", "w0", "w1", "w2"])
        self.assertGreater(warns, 0)
        for tag, got in seqs.items():
            if tag != "sig":
                self.assertEqual(got, sorted(set(got)), tag)

    def storm(self, prog):
        prog.cmd("storm 3")

    def calm(self, prog):
        events, signalled = prog.cmd("calm")
        self.assertGreater(int(events), 0)
        self.assertGreater(int(signalled), 0)

    def test_dead_daemon_unmapped(self):
        self.start_session("s1")
        prog = self.program()
        self.storm(prog)
        old = buffer_inodes(prog.pid)
        self.assertTrue(old, "no buffer set mapped")
        self.kill_and_restart()
        out = self.start_session("s2")
        self.wait_registered(prog)
        self.wait_for("the dead daemon's buffer sets are still mapped",
                      lambda: not (buffer_inodes(prog.pid) & old))
        new = buffer_inodes(prog.pid)
        self.assertTrue(new, "the new daemon's buffer sets are not mapped")
        time.sleep(0.2)     # more events into the new daemon's buffers
        self.calm(prog)
        self.rt("stop")
        self.assertEqual(prog.exit(), (0, ""))
        self.check_landed(out, prog)

    def kill_and_restart(self):
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        self.daemon_log.close()
        os.unlink(os.path.join(self.rundir, "ringtraced.sock"))
        self.start_daemon()

    def pause_session(self, name):
        out = self.out(name)
        self.rt("create", name, "-o", out)
        self.rt("enable-event", "-u", "pause:*")
        # A context: pause:ev takes the library's general path, where
        # the hold points are.
        self.rt("add-context", "-u", "-t", "vtid")
        self.rt("start")
        return out

    def test_held_writer_keeps_the_mapping(self):
        self.pause_session("s1")
        p = Pausing(self.env)
        try:
            self.rt("list", "-u")
            p.cmd("emit 10 0")
            old = buffer_inodes(p.pid)
            self.assertTrue(old, "no buffer set mapped")
            p.cmd("hold 10 reserved")
            self.kill_and_restart()
            out = self.pause_session("s2")
            self.wait_registered(p)
            # The listener tried to reclaim at each message since: the
            # held writer's buffer set stays.
            p.cmd("emit 10 100")
            self.assertTrue(buffer_inodes(p.pid) & old)
            p.cmd("release")
            self.wait_for("the dead daemon's buffer sets are still mapped",
                          lambda: not (buffer_inodes(p.pid) & old))
            p.cmd("emit 10 200")
            self.rt("stop")
        finally:
            p.close()
        self.assertEqual(p.p.returncode, 0)
        seqs = [e["seq"] for e in read_events(out) if e["event"] == "pause:ev"]
        self.assertEqual(seqs, list(range(100, 110)) + list(range(200, 210)))

    def test_destroyed_session_unmapped(self):
        self.start_session("s1")
        prog = self.program()
        self.storm(prog)
        first = buffer_inodes(prog.pid)
        self.assertTrue(first, "no buffer set mapped")
        out = self.start_session("s2")
        self.wait_for("the second session's buffer sets are not mapped",
                      lambda: buffer_inodes(prog.pid) - first)
        self.rt("destroy", "s1")
        self.wait_for("the destroyed session's buffer sets are still mapped",
                      lambda: not (buffer_inodes(prog.pid) & first))
        time.sleep(0.2)
        self.calm(prog)
        self.rt("stop", "s2")
        self.assertEqual(prog.exit(), (0, ""))
        self.check_landed(out, prog)


if __name__ == "__main__":
    unittest.main(verbosity=2)
