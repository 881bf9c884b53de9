#!/usr/bin/python3
"""`ringtrace status` figures with programs recording: the events counted
while the session runs (what the buffers hold included, not only what a
full sub-buffer already brought to disk), and per-pid channels still
counting the events of programs that exited (their traces are closed).
Each count is checked against the trace read back with babeltrace2.

usage: test_apps_status.py BUILD_DIR
"""
import re
import time
import unittest

from apps_common import AppCase, read_events


def counts(status, channel):
    m = re.search(rf"(?m)^  {channel}: buffer usage ([0-9.]+)% .*, events (\d+), "
                  r"lost (\d+), ", status)
    assert m, status
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


class Status(AppCase):
    def test_counts_events_while_running(self):
        out = self.out("t")
        self.session(out, "app:*")
        self.rt("start")
        p = self.program()
        p.cmd("emit 123 a")
        usage, events, lost = counts(self.rt("status"), "channel0")
        self.assertEqual((events, lost), (123, 0))
        self.assertLessEqual(usage, 100.0)
        p.cmd("emit 7 b")
        self.assertEqual(counts(self.rt("status"), "channel0")[1:], (130, 0))
        self.rt("stop")
        self.assertEqual(counts(self.rt("status"), "channel0")[1:], (130, 0))
        self.assertEqual(p.exit(), (0, ""))
        events = read_events(out)
        self.assertEqual([(e["tag"], e["seq"]) for e in events],
                         [("a", i) for i in range(123)] + [("b", i) for i in range(7)])

    def test_per_pid_counts_exited_programs(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ch", "--buffers-pid")
        self.rt("enable-event", "-u", "-c", "ch", "app:*")
        self.rt("start")
        p1, p2 = self.program(), self.program()
        p1.cmd("emit 30 p1")
        p2.cmd("emit 20 p2")
        self.assertEqual(p1.exit(), (0, ""))
        self.assertEqual(counts(self.rt("status"), "ch")[1], 50)
        self.rt("stop")
        self.assertEqual(counts(self.rt("status"), "ch")[1], 50)
        self.assertEqual(p2.exit(), (0, ""))
        # Wait until the daemon saw p2 go (its trace closed): list -u
        # no longer shows it.
        for _ in range(500):
            if f" {p2.pid} " not in self.rt("list", "-u"):
                break
            time.sleep(0.01)
        self.assertEqual(counts(self.rt("status"), "ch")[1], 50)
        self.assertEqual(len(read_events(out)), 50)


if __name__ == "__main__":
    unittest.main(verbosity=2)
