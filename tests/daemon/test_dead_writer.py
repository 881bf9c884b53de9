#!/usr/bin/python3
"""Dead writers: a program killed between the reservation and the commit
of an event in a per-user buffer does not stop the other programs from
recording on that CPU. The daemon sees it dead (its pidfd), voids the
work it left outstanding on its own account, and gives up the
sub-buffers that may hold its unwritten slot (counted as lost packets):
never a torn event. Program A is held by a hold point of the tests'
copy of the library (app_pause.c) with a slot reserved, B records on the
same CPU, A is killed with SIGKILL, B goes on: its events after the
daemon voided A's work are all in the trace, read back event by event
by babeltrace2 and our reader, and the loss is counted by both.

usage: test_dead_writer.py BUILD_DIR
"""
import os
import signal
import time
import unittest

from apps_common import AppCase, BUILD, Pausing, read_events, view_losses
import rtfixtures  # noqa: E402 (apps_common puts tests/support on the path)

VOIDED = "died in the middle of an event"


class DeadWriter(AppCase):
    def wait_log(self, text, timeout=60):
        """Until the daemon's log holds `text` (bounded)."""
        deadline = time.monotonic() + timeout
        path = os.path.join(self.tmp, "daemon.log")
        while time.monotonic() < deadline:
            with open(path) as f:
                if text in f.read():
                    return
            time.sleep(0.05)
        self.fail(f"the daemon never logged {text!r}")

    def test_killed_in_an_event(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "--buffers-uid", "--subbuf-size", "64k",
                "--num-subbuf", "8", "ch")
        self.rt("enable-event", "-u", "-c", "ch", "pause:*")
        # A context: pause:ev takes the library's general path, where
        # the hold points are.
        self.rt("add-context", "-u", "-c", "ch", "-t", "vtid")
        self.rt("start")
        a, b = Pausing(self.env), Pausing(self.env)
        try:
            self.rt("list", "-u")
            for p in (a, b):
                p.cmd("cpu 0")
            # More than a sub-buffer: what follows is not the stream's
            # first packet (a reader sees a gap after it).
            b.cmd("emit 1000 10000")
            a.cmd("emit 10 0")
            # A reserves event 10 on CPU 0 and writes nothing.
            a.cmd("hold 10 reserved")
            b.cmd("emit 200 1000")
            os.kill(a.pid, signal.SIGKILL)
            a.p.wait(timeout=30)
            # B leaves the sub-buffer A's slot is in: before, every later
            # sub-buffer of CPU 0 waited behind A's slot.
            b.cmd("emit 1500 2000")
            self.wait_log(VOIDED)
            b.cmd("emit 1000 5000")
            self.rt("stop")
        finally:
            a.close()
            b.close()
        self.rt("destroy")
        seqs = [e["seq"] for e in read_events(out) if e["event"] == "pause:ev"]
        ours = [e["payload"]["seq"] for e in rtfixtures.rtr_dump(BUILD, out)
                if e["name"] == "pause:ev"]
        self.assertEqual(ours, seqs)
        # Never A's event 10 (reserved, never written), nothing twice,
        # everything in the order recorded.
        order = (list(range(10000, 11000)) + list(range(10)) + list(range(1000, 1200)) +
                 list(range(2000, 3500)) + list(range(5000, 6000)))
        self.assertNotIn(10, seqs)
        self.assertEqual(seqs, [s for s in order if s in set(seqs)])
        # B's first packet was read before A's death.
        self.assertEqual(seqs[:100], list(range(10000, 10100)))
        # B's events after the void: every one of them.
        self.assertEqual([s for s in seqs if 5000 <= s < 6000], list(range(5000, 6000)))
        # What was given up is counted: lost packets (babeltrace2 and our
        # reader), no event discarded.
        _, discarded, lost_packets = rtfixtures.bt2_read(out)
        self.assertGreaterEqual(lost_packets, 1)
        self.assertEqual(discarded, 0)
        self.assertEqual(view_losses(self.env, out), (0, lost_packets))


if __name__ == "__main__":
    unittest.main(verbosity=2)
