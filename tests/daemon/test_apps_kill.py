#!/usr/bin/python3
"""Fault tests with a real ringtraced: kill -9 the daemon while programs
trace (they finish normally; the wall-time bound only says "did not
hang"), kill -9 a traced program (the trace keeps everything it
committed), per-uid and per-pid buffers; fake programs sending malformed
registrations leave the daemon serving the real ones.

usage: test_apps_kill.py BUILD_DIR
"""
import os
import signal
import socket
import struct
import threading
import time
import unittest

from apps_common import AppCase, read_events
from rt_abi import RT_ABI_VERSION


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
            p.cmd("emit 100 after")        # no daemon: untraced, retrying in the background
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


def frame(typ, payload=b"", status=0):
    return struct.pack("<IHHIi", 0x31505452, 1, typ, len(payload), status) + payload


def register(events=b"\0\0\0\0", abi=RT_ABI_VERSION, name=b"fake"):
    return (struct.pack("<IIIBBH", os.getpid(), os.getuid(), abi, 8, 3, 0) +
            name.ljust(16, b"\0") + events)


def event(index, level, provider, name, fields):
    out = struct.pack("<Ii", index, level)
    for s in (provider, name):
        out += bytes([len(s)]) + s
    out += bytes([len(fields)])
    for fname, ftype in fields:
        out += bytes([ftype, len(fname)]) + fname
    return out


class MalformedPrograms(AppCase):
    def send_raw(self, data, fds=()):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(os.path.join(self.rundir, "ringtraced.sock"))
        if fds:
            s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                struct.pack("%di" % len(fds), *fds))])
        else:
            s.sendall(data)
        try:
            reply = s.recv(64)
        except socket.timeout:
            reply = None
        s.close()
        return reply

    def test_daemon_survives(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-u", "app:*")
        self.rt("start")
        good = event(0, 6, b"fake", b"ev", [(b"x", 5)])
        bad = [
            register(struct.pack("<I", 1) + event(0, 6, b"fa ke", b"ev", [])),   # not an identifier
            register(struct.pack("<I", 1) + event(0, 99, b"fake", b"ev", [])),   # log level
            register(struct.pack("<I", 1) + event(0, 6, b"fake", b"ev", [(b"x", 77)])),  # type
            register(struct.pack("<I", 2) + good + good),                         # duplicate index
            register(struct.pack("<I", 0xFFFFFFFF) + good),                       # count
            register(struct.pack("<I", 1) + good + b"trailing"),
            register(struct.pack("<I", 1) + good[:-3]),                           # cut
            register(abi=7),
            register()[:20],
            os.urandom(40),
        ]
        for payload in bad:
            reply = self.send_raw(frame(16, payload))
            if reply:   # refused with an error status, never accepted
                magic, ver, typ, length, status = struct.unpack_from("<IHHIi", reply)
                self.assertEqual((typ, status < 0), (17, True), payload)
        r, w = os.pipe()
        self.send_raw(frame(16, register()), fds=[w])     # descriptors on REGISTER
        os.close(w)
        os.close(r)
        # A registered fake program that then sends garbage is dropped.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(os.path.join(self.rundir, "ringtraced.sock"))
        s.sendall(frame(16, register(struct.pack("<I", 1) + good)))
        while True:         # CHANNEL, ENABLE ... then the reply
            hdr = s.recv(16, socket.MSG_WAITALL)
            typ, length = struct.unpack_from("<HI", hdr, 6)
            if length:
                s.recv(length, socket.MSG_WAITALL)
            if typ == 17:
                break
        s.sendall(frame(18, b"\x05\0\0\0garbage"))
        self.assertEqual(s.recv(16), b"")    # closed by the daemon
        s.close()
        # The daemon still serves commands and real programs.
        p = self.program()
        p.cmd("emit 3 ok")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        self.assertEqual([(e["tag"], e["seq"]) for e in read_events(out)],
                         [("ok", i) for i in range(3)])
        self.assertEqual(self.daemon.poll(), None)


if __name__ == "__main__":
    unittest.main(verbosity=2)
