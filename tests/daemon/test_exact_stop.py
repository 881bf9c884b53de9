#!/usr/bin/python3
"""Exact stop: an event that passed its enabled check and looked up its
buffer before `stop`, but reserves only after the stop's drain, never
lands after it (it used to appear in the next start's first packet): the
drain closed the buffer (rb_close_cpu), the reservation is refused and
the event counted as discarded. A writer is held between the two by a
hold point of the tests' copy of the library (app_pause.c); traces are
read back event by event with babeltrace2 and our reader, and the
discarded count with both.

usage: test_exact_stop.py BUILD_DIR
"""
import unittest

from apps_common import AppCase, BUILD, Pausing, read_events, view_losses
import rtfixtures  # noqa: E402 (apps_common puts tests/support on the path)


class ExactStop(AppCase):
    def check(self, buffering):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", buffering, "ch")
        self.rt("enable-event", "-u", "-c", "ch", "pause:*")
        # A context: pause:ev takes the library's general path, where
        # the hold points are.
        self.rt("add-context", "-u", "-c", "ch", "-t", "vtid")
        self.rt("start")
        p = Pausing(self.env)
        try:
            # The program registers in the background: wait until its
            # events are recorded (list -u answers once it applied them).
            self.rt("list", "-u")
            p.cmd("cpu 0")
            p.cmd("emit 10 0")
            p.cmd("hold 10 before")
            self.rt("stop")
            p.cmd("release")
            self.rt("start")
            p.cmd("emit 10 11")
            self.rt("stop")
        finally:
            p.close()
        self.rt("destroy")
        want = list(range(10)) + list(range(11, 21))
        events, discarded, _ = rtfixtures.bt2_read(out)
        seqs = [e["seq"] for e in read_events(out) if e["event"] == "pause:ev"]
        self.assertEqual(seqs, want)
        ours = [e["payload"]["seq"] for e in rtfixtures.rtr_dump(BUILD, out)
                if e["name"] == "pause:ev"]
        self.assertEqual(ours, want)
        # Event 10 was refused by the closed buffer: counted as
        # discarded, once.
        self.assertEqual(discarded, 1)
        self.assertEqual(view_losses(self.env, out)[0], 1)

    def test_per_uid_buffers(self):
        self.check("--buffers-uid")

    def test_per_pid_buffers(self):
        self.check("--buffers-pid")


if __name__ == "__main__":
    unittest.main(verbosity=2)
