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
by babeltrace2 and our reader; only the packet A's slot is in is lost,
counted by both.

usage: test_dead_writer.py BUILD_DIR
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from apps_common import AppCase, BUILD, RINGTRACE, Pausing, read_events, view_losses
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
        # Only the packet A's slot is in was given up (its account's
        # bounds): what is missing is one run of consecutive events in
        # recording order, around A's event 10, no more than a packet
        # holds (64 KiB, each event at least 64 bytes).
        present = set(seqs)
        missing = [i for i, s in enumerate(order) if s not in present]
        self.assertEqual(missing, list(range(missing[0], missing[-1] + 1)))
        hole = order.index(1000)  # A's slot lay between events 9 and 1000
        self.assertLessEqual(missing[0], hole)
        self.assertGreaterEqual(missing[-1], hole - 1)
        self.assertLessEqual(len(missing), 65536 // 64)
        # What was given up is counted: one lost packet (babeltrace2 and
        # our reader), no event discarded.
        _, discarded, lost_packets = rtfixtures.bt2_read(out)
        self.assertEqual(lost_packets, 1)
        self.assertEqual(discarded, 0)
        self.assertEqual(view_losses(self.env, out), (0, lost_packets))

    def test_recover_per_user_buffers(self):
        # The daemon's per-user buffers in files (create --shm-path), a
        # read timer longer than the run: A records 3,000 events on CPU
        # 0 and is held with event 3,000's slot reserved, B records 50
        # after it on its own account; the daemon, A and B are killed.
        # recover finds A's 3,000 events, never its torn one, counts it
        # as discarded; B's 50 after A's slot are given up with it.
        shm, out, rec = self.out("shm"), self.out("t"), self.out("rec")
        self.rt("create", "s", "-o", out, "--shm-path", shm)
        self.rt("enable-channel", "-u", "--buffers-uid", "--subbuf-size", "64k",
                "--num-subbuf", "8", "--read-timer", "60000000", "ch")
        self.rt("enable-event", "-u", "-c", "ch", "pause:*")
        self.rt("add-context", "-u", "-c", "ch", "-t", "vtid")
        self.rt("start")
        a, b = Pausing(self.env), Pausing(self.env)
        try:
            for p in (a, b):
                p.cmd("cpu 0")
            a.cmd("emit 3000 0")
            a.cmd("hold 3000 reserved")
            b.cmd("emit 50 5000")
            self.daemon.send_signal(signal.SIGKILL)
            self.daemon.wait()
            for p in (a, b):
                os.kill(p.pid, signal.SIGKILL)
                p.p.wait()
        finally:
            a.close()
            b.close()
        r = subprocess.run([RINGTRACE, "recover", shm, "-o", rec], capture_output=True,
                           text=True, env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("a writer died in the middle of an event on 1 CPU(s)", r.stderr)
        seqs = [e["seq"] for e in read_events(rec) if e["event"] == "pause:ev"]
        ours = [e["payload"]["seq"] for e in rtfixtures.rtr_dump(BUILD, rec)
                if e["name"] == "pause:ev"]
        self.assertEqual(seqs, list(range(3000)))
        self.assertEqual(ours, seqs)
        _, discarded, lost_packets = rtfixtures.bt2_read(rec)
        self.assertEqual((discarded, lost_packets), (1, 0))
        self.assertEqual(view_losses(self.env, rec), (1, 0))


class RecoverTorn(unittest.TestCase):
    """`ringtrace recover` after a program died between reserving and
    committing an event (record --shm-path, SIGKILL): every event
    committed before its slot is recovered, from the complete packets
    and from the one its slot is in, never the torn event; the dead
    event is counted as discarded; what follows the slot in that packet
    is given up without a count in the trace (docs/recovery.md)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-torn-")
        self.env = rtfixtures.private_env(self.tmp, RINGTRACE_NO_DAEMON="1")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_killed_in_an_event(self):
        shm, out, rec = (os.path.join(self.tmp, d) for d in ("shm", "out", "rec"))
        # A 60 s read timer: the consumer writes nothing, all is in the
        # buffers. A context: pause:ev takes the library's general path,
        # where the hold points are.
        p = Pausing(self.env, [RINGTRACE, "record", "--shm-path", shm, "-o", out,
                               "-t", "vtid", "--subbuf-size", "64k", "--num-subbuf", "8",
                               "--read-timer", "60000", "--"])
        try:
            p.cmd("cpu 0")
            # Three packets' worth and more (about 1,000 events a packet).
            p.cmd("emit 3000 0")
            # Event 3000 reserved on CPU 0, never written; 3001-3050
            # committed after it by the main thread, in the same packet.
            p.cmd("hold 3000 reserved")
            p.cmd("emit 50 3001")
            os.kill(p.pid, signal.SIGKILL)
            _, err = p.p.communicate(timeout=60)
            self.assertIn("ringtrace recover", err)
        finally:
            if p.p.poll() is None:
                p.p.kill()
                p.p.wait()
        r = subprocess.run([RINGTRACE, "recover", shm, "-o", rec], capture_output=True,
                           text=True, env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("a writer died in the middle of an event on 1 CPU(s)", r.stderr)
        seqs = [e["seq"] for e in read_events(rec) if e["event"] == "pause:ev"]
        ours = [e["payload"]["seq"] for e in rtfixtures.rtr_dump(BUILD, rec)
                if e["name"] == "pause:ev"]
        # Event by event: everything before the dead slot, in order (the
        # consumer wrote none of them).
        self.assertEqual(seqs, list(range(3000)))
        self.assertEqual(ours, seqs)
        # The dead slot is counted as a discarded event (babeltrace2 and
        # our reader); no packet lost before it.
        _, discarded, lost_packets = rtfixtures.bt2_read(rec)
        self.assertEqual((discarded, lost_packets), (1, 0))
        self.assertEqual(view_losses(self.env, rec), (1, 0))


if __name__ == "__main__":
    unittest.main(verbosity=2)
