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
import resource
import subprocess
import sys
import threading
import time
import unittest

from apps_common import RINGTRACE, RINGTRACED, AppCase, read_events, trace_dirs
import raw_app
import rtfixtures


def read(path):
    with open(path) as f:
        return f.read()


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

    def wait_log(self, pattern):
        deadline = time.monotonic() + 30
        while not re.search(pattern, self.log_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertRegex(self.log_text(), pattern)

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
        while "raw:ev19999" not in read(meta) and time.monotonic() < deadline:
            time.sleep(0.05)
        ino = os.stat(meta).st_ino
        self.run_program("after")
        deadline = time.monotonic() + 60
        while '"app:tick"' not in read(meta) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(os.stat(meta).st_ino, ino, "metadata rewritten, not appended")
        text = read(meta)
        self.assertEqual(text.count("/* CTF 1.8 */"), 1)
        self.assertEqual(text.count('name = "raw:ev12345";'), 1)
        self.assertEqual(text.count('name = "app:tick";'), 1)

        self.rt("stop")
        evs = [e for e in read_events(out) if e["event"] == "app:tick"]
        self.assertEqual([(e["seq"], e["tag"], e["value"]) for e in evs],
                         [(i, "after", 3 * i) for i in range(100)])

    def test_listed_has_applied(self):
        """A program shown by `list -u` has applied the enablement of the
        sessions already started when it registered: the daemon SYNCs the
        programs before it answers (without it, a program that had just
        registered was listed while its ENABLE still sat unread in its
        socket, and events it emitted right after were not recorded)."""
        self.session(self.out("s"), "raw:*")
        self.rt("start")
        a = self.raw(3)
        for _ in range(600):
            if str(os.getpid()) in self.rt("list", "-u").split():
                break
            time.sleep(0.05)
        else:
            self.fail("the program was never listed")
        # Answered when first listed, with its 3 classes enabled by then.
        synced = list(a.synced)
        self.assertTrue(synced, "listed before it applied what it was sent")
        self.assertEqual(synced[0], 3)
        self.rt("stop")

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


class SlowClients(LoopCase):
    """Issue 14 item 8: no client delays the others."""

    def test_partial_frames_and_unread_reply(self):
        out = self.out("slow")
        self.session(out, "app:tick")
        self.rt("start")
        # Classes enough for a `list -u` reply of about 700 KB.
        big = self.raw(12000, "bigapp")
        self.assertEqual(big.wait_registered(120), 0)
        holders = []
        for i in range(50):
            h = self.raw(1, f"hold{i}")
            self.assertEqual(h.wait_registered(60), 0)
            holders.append(h)
        # A control client that asks for the big reply and never reads it.
        mute = raw_app.connect(self.rundir)
        self.addCleanup(mute.close)
        mute.sendall(raw_app.frame(raw_app.CTL_REQUEST, b"cmd=list\0events=1\0"))
        # Fifty programs send half a frame header each and hold it.
        for h in holders:
            h.mute = True
            h.sock.sendall(raw_app.frame(raw_app.SYNC_REPLY, b"\0" * 8)[:7])
        # Meanwhile `list` is answered and a new program traces.
        self.assertIn("Available tracing sessions", self.list_ok())
        self.run_program("fresh")
        self.assertIn("Available tracing sessions", self.list_ok())
        self.rt("stop")
        evs = [e for e in read_events(out) if e["event"] == "app:tick"]
        self.assertEqual([(e["seq"], e["tag"]) for e in evs],
                         [(i, "fresh") for i in range(100)])
        # The programs that held their frame past the limit are let go,
        # one by one, without holding anybody.
        for h in holders:
            self.assertTrue(h.closed.wait(30), "a program holding half a frame stays")
        self.wait_log(r"\(hold49\) did not take or finish a message in time")



class Memory(LoopCase):
    """Issue 14 item 10: frames are bounded per type and pending input
    in all."""

    def test_request_too_large(self):
        # A control request announcing 2 MiB is refused at once, before
        # its payload is read (the limit is 1 MiB).
        s = raw_app.connect(self.rundir)
        self.addCleanup(s.close)
        s.settimeout(60)
        s.sendall(raw_app.HDR.pack(raw_app.MAGIC, 1, raw_app.CTL_REQUEST, 2 << 20, 0))
        f = raw_app.read_frame(s)
        self.assertIsNotNone(f, "closed without a reply")
        self.assertEqual(f[1], -errno.EPROTO)
        self.assertIn(b"frame too large for its type", f[2])
        # A program's SYNC_REPLY is 8 bytes: a longer one disconnects it.
        a = self.raw(1, "longsync")
        self.assertEqual(a.wait_registered(60), 0)
        a.sock.sendall(raw_app.frame(raw_app.SYNC_REPLY, b"\0" * 4096))
        self.assertTrue(a.closed.wait(60))
        self.wait_log(r"\(longsync\) sent a malformed message")
        self.list_ok()

    def test_pending_input_capped(self):
        # Connections one after the other each send a 4 MiB first frame
        # but its last byte and keep it pending: the daemon buffers 64 MiB
        # at most, so one of the first 17 is told that it is busy and
        # closed (all 40 would be 160 MiB).
        frame = memoryview(raw_app.HDR.pack(raw_app.MAGIC, 1, raw_app.REGISTER, 4 << 20, 0)
                           + b"\0" * ((4 << 20) - 1))
        held, busy = [], None
        for k in range(40):
            s = raw_app.connect(self.rundir)
            held.append(s)
            s.settimeout(60)
            try:
                s.sendall(frame)
                continue
            except OSError:
                pass
            f = raw_app.read_frame(s)
            self.assertIsNotNone(f, "closed without a reply")
            self.assertEqual(f[1], -errno.ENOBUFS)
            self.assertIn(b"ringtraced is busy: the pending input of all connections "
                          b"reached 64 MiB", f[2])
            busy = k
            break
        self.assertIsNotNone(busy, "160 MiB of pending frames taken")
        self.assertLessEqual(busy, 16)
        for s in held:
            s.close()
        self.list_ok()
        self.run_program("after")


class Descriptors(LoopCase):
    """Issue 14 item 9: out of descriptors, the daemon refuses new
    connections cleanly instead of spinning, and recovers."""

    def cpu_s(self):
        with open(f"/proc/{self.daemon.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def test_emfile(self):
        # Restart the daemon with 32 descriptors at most.
        self.daemon.kill()
        self.daemon.wait()
        self.daemon_log.close()
        os.unlink(os.path.join(self.rundir, "ringtraced.sock"))
        lim = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
        self.daemon_log = open(os.path.join(self.tmp, "daemon.log"), "a")
        self.daemon = rtfixtures.start_daemon(RINGTRACED, self.env, self.daemon_log,
                                              preexec_fn=lim)
        self.list_ok()
        # 60 connections that say nothing: the daemon runs out of
        # descriptors (they would be closed after 5 s without a frame).
        held = [raw_app.connect(self.rundir) for _ in range(60)]
        time.sleep(0.5)
        cpu, wall = self.cpu_s(), time.monotonic()
        time.sleep(2)
        cpu, wall = self.cpu_s() - cpu, time.monotonic() - wall
        # A spinning daemon uses a whole CPU; an idle one next to nothing.
        self.assertLess(cpu, wall / 10, f"{cpu:.2f} s of CPU in {wall:.2f} s")
        print(f"daemon CPU {cpu:.2f} s in {wall:.2f} s", file=sys.stderr)
        # A new client is told why it is refused.
        r = subprocess.run([RINGTRACE, "list"], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("out of file descriptors", r.stderr)
        self.wait_log(r"out of file descriptors \(Too many open files\): new connections "
                      r"are refused")
        self.assertEqual(self.log_text().count("out of file descriptors"), 1)
        for s in held:
            s.close()
        # Recovered: commands and programs are served again.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = subprocess.run([RINGTRACE, "list"], capture_output=True, text=True,
                               env=self.env, timeout=60)
            if r.returncode == 0:
                break
            time.sleep(0.1)
        self.list_ok()
        out = self.out("fds")
        self.session(out, "app:tick")
        self.rt("start")
        self.run_program("back")
        self.rt("stop")
        evs = [e for e in read_events(out) if e["event"] == "app:tick"]
        self.assertEqual(len(evs), 100)


if __name__ == "__main__":
    unittest.main(verbosity=2)
