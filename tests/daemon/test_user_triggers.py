#!/usr/bin/python3
"""Tests of event-rule-matches conditions on user events (docs/triggers.md),
evaluated in the traced program whether or not a session records the event
and reported through its notification ring (src/proto/trig_ring.h):

- the issue's server (4 worker threads, one slow request of 30 ms in
  40000) in a snapshot session with a trigger `--filter 'dur_us > 20000'`
  on request_end -> snapshot-session: the snapshot holds the slow
  request's begin and end and the events of all four threads before it,
  and `ringtrace analyze` lists that request first with its thread name;
- notify with captures (payload fields of both kinds of call site,
  $ctx.vtid, $ctx.procname, a field the event lacks) read by
  `ringtrace notifications`, with no session at all;
- a program whose daemon does not read its ring (stopped) keeps running:
  the ring fills, the rest is counted lost and reported;
- a hostile program's ring: slots that do not parse and a notification of
  a trigger it was not given are refused (logged), a good slot fires;
- remove-trigger stops the notifications.
Each test runs a private daemon.

usage: test_user_triggers.py BUILD_DIR
"""
import json
import mmap
import os
import signal
import socket
import struct
import subprocess
import unittest

from apps_common import BUILD, RINGTRACE, read_events, rtfixtures
from raw_app import HDR, MAGIC, REGISTER, REGISTER_REPLY, SYNC, SYNC_REPLY, connect, frame, \
    register_payload
from test_triggers import TriggerCase

SERVER = os.path.join(BUILD, "tests/daemon/trig_server")
TRIGGERS = 28                   # RTP_APP_TRIGGERS (app_proto.h)
RING_SLOTS = 256                # RTTR_DEFAULT_SLOTS (trig_ring.h)
SLOW = ["--condition=event-rule-matches", "--type=user", "--name=server:request_end",
        "--filter=dur_us > 20000"]


class UserTriggerCase(TriggerCase):
    def server(self, n, slow):
        r = subprocess.run([SERVER, str(n), str(slow)], capture_output=True, text=True,
                           env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        return out

    def notification(self, stream):
        return json.loads(stream.line())

    def daemon_log_text(self):
        self.daemon_log.flush()
        with open(os.path.join(self.tmp, "daemon.log")) as f:
            return f.read()


class TestEvaluated(UserTriggerCase):
    def test_slow_request_snapshot(self):
        self.rt("create", "s", "--snapshot", "-o", self.out("snap"))
        self.rt("enable-event", "-u", "server:*")
        self.rt("add-context", "-u", "-t", "vtid", "-t", "procname")
        self.rt("start")
        r = self.run_rt("add-trigger", "--name=slow", *SLOW, "--capture=id",
                        "--action=snapshot-session", "s", "--action=notify")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")          # no "not evaluated" warning any more
        cmd = self.notifications("slow")
        out = self.server(40000, 23456)
        slow_id, slow_tid, _ = (int(x) for x in out["slow"].split())
        # On a loaded machine another request may take over 20 ms too
        # (preempted): its notification comes too, with its own id.
        while True:
            n = self.notification(cmd)
            self.assertEqual((n["trigger"], n["condition"]), ("slow", "event-rule-matches"))
            if n["captures"] == {"id": slow_id}:
                break
            self.assertEqual(list(n["captures"]), ["id"])
        self.assertEqual(n["tid"], slow_tid)
        snap = n["snapshot"]
        evs = read_events(snap)
        ends = [i for i, e in enumerate(evs)
                if e["event"] == "server:request_end" and e["id"] == slow_id]
        begins = [i for i, e in enumerate(evs)
                  if e["event"] == "server:request_begin" and e["id"] == slow_id]
        self.assertEqual(len(ends), 1, "the triggering event is in the snapshot")
        self.assertEqual(len(begins), 1, "the slow request's begin is in the snapshot")
        end = evs[ends[0]]
        self.assertGreaterEqual(end["dur_us"], 30000)
        self.assertEqual((end["ctx_vtid"], end["path"]), (slow_tid, f"/item/{slow_id}"))
        before = evs[:ends[0]]
        self.assertEqual({e["ctx_procname"] for e in before if e["event"].startswith("server:")},
                         {f"worker-{w}" for w in range(4)})
        # Our reader reads the same events.
        dumped = [e for e in rtfixtures.rtr_dump(BUILD, snap) if e["name"].startswith("server:")]
        self.assertEqual(len(dumped), sum(e["event"].startswith("server:") for e in evs))
        r = subprocess.run([RINGTRACE, "analyze", "--durations", "--top", "3",
                            "--format=json", snap], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        pair = [d for d in json.loads(r.stdout)["durations"] if d["pair"] == "server:request"][0]
        # The longest request first (the slow one, unless the machine
        # preempted another for longer), with its thread's name.
        dur = {e["id"]: e["dur_us"] for e in evs if e["event"] == "server:request_end"}
        longest = max(dur.values())
        top = pair["outliers"][0]
        self.assertAlmostEqual(top["dur_ns"] / 1000, longest, delta=max(100, longest / 10))
        slow = [o for o in pair["outliers"] if o["dur_ns"] >= 30_000_000 and
                int(o["key"]) == slow_tid]
        self.assertEqual(len(slow), 1, pair["outliers"])
        self.assertEqual(slow[0]["thread"], end["ctx_procname"])
        if longest == end["dur_us"]:
            self.assertIs(top, slow[0])
        self.assertGreaterEqual(int(self.triggers()["slow"]["fired"]), 1)

    def test_notify_captures_without_session(self):
        """No session records the events: the program evaluates the rule
        all the same. Captures of a field of a call site with strings
        (request_end) and of one without (request_begin), contexts, and a
        field the event lacks (left out)."""
        self.rt("add-trigger", "--name=end7", "--condition=event-rule-matches", "--type=user",
                "--name=server:request_end", "--filter=id == 7 || path == \"/item/9\"",
                "--capture=path", "--capture=dur_us", "--capture=$ctx.vtid",
                "--capture=$ctx.procname", "--capture=nope", "--action=notify")
        self.rt("add-trigger", "--name=begin5", "--condition=event-rule-matches",
                "--type=user", "--name=server:request_b*", "--filter=id == 5",
                "--capture=id", "--action=notify")
        cmd = self.notifications()
        self.server(12, 100)
        got = sorted((self.notification(cmd) for _ in range(3)),
                     key=lambda n: (n["trigger"], n["captures"].get("path", "")))
        self.assertEqual([n["trigger"] for n in got], ["begin5", "end7", "end7"])
        self.assertEqual(got[0]["captures"], {"id": 5})
        for n, rid in zip(got[1:], (7, 9)):
            c = n["captures"]
            self.assertEqual(set(c), {"path", "dur_us", "$ctx.vtid", "$ctx.procname"})
            self.assertEqual(c["path"], f"/item/{rid}")
            self.assertEqual(c["$ctx.procname"], f"worker-{rid % 4}")
            self.assertEqual(c["$ctx.vtid"], n["tid"])
            self.assertIsInstance(c["dur_us"], int)
            self.assertLess(abs(n["event_time_ns"] - n["time_ns"]), 60 * 10**9)
        self.assertEqual(len({n["pid"] for n in got}), 1)

    def test_byte_sequence_captures(self):
        """--capture of a byte sequence field (the JSON line's array of its
        bytes, as the trace has them), of one of its elements
        (FIELD[INDEX]), an index past its end and an index of a field that
        is not a sequence (both left out)."""
        caps = ["--capture=data", "--capture=data[2]", "--capture=data[4]", "--capture=seq[0]",
                "--capture=seq"]
        self.rt("add-trigger", "--name=b", "--condition=event-rule-matches", "--type=user",
                "--name=app:blob", "--filter=seq == 4 || seq == 6 || seq == 11", *caps,
                "--action=notify")
        cmd = self.notifications("b")
        prog = self.program()
        prog.cmd("blob 12")
        got = [self.notification(cmd)["captures"] for _ in range(3)]
        # blob N: event seq has seq % 6 bytes, byte j = seq + 3 * j.
        self.assertEqual(got, [
            {"data": [4, 7, 10, 13], "data[2]": 10, "seq": 4},
            {"data": [], "seq": 6},
            {"data": [11, 14, 17, 20, 23], "data[2]": 17, "data[4]": 23, "seq": 11},
        ])

    def test_library_loaded_later(self):
        """A library's events registered after the program's start
        (dlopen) get the triggers that select them."""
        self.rt("add-trigger", "--name=plug", "--condition=event-rule-matches",
                "--type=user", "--name=plugin:*", "--filter=i == 3", "--capture=round",
                "--capture=name", "--action=notify")
        cmd = self.notifications()
        # Its EVENTS message waits for the daemon's answer (the triggers
        # come before it): long enough on a loaded machine.
        env = dict(self.env, RINGTRACE_DAEMON_TIMEOUT_MS="5000")
        p = subprocess.Popen([os.path.join(BUILD, "tests/daemon/app_dl")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertTrue(p.stdout.readline().startswith("ready "))
        for line in ("load " + os.path.join(BUILD, "tests/integration/plugin.so"), "work 7"):
            p.stdin.write(line + "\n")
            p.stdin.flush()
            self.assertTrue(p.stdout.readline().startswith("ok"), line)
        n = self.notification(cmd)
        self.assertEqual((n["trigger"], n["pid"], n["captures"]),
                         ("plug", p.pid, {"round": 7, "name": "plugin"}))

    def test_remove_stops(self):
        """After remove-trigger the program's notifications of it stop; a
        second trigger, on an event recorded later, shows that the first
        sent nothing in between (its ring is read in order)."""
        self.rt("add-trigger", "--name=every", "--condition=event-rule-matches",
                "--type=user", "--name=app:tick", "--filter=tag == \"a\"", "--action=notify")
        self.rt("add-trigger", "--name=sentinel", "--condition=event-rule-matches",
                "--type=user", "--name=app:tick", "--filter=tag == \"z\"", "--action=notify")
        cmd = self.notifications()
        p = self.program()
        p.cmd("emit 2 a")
        p.cmd("emit 1 z")
        got = [self.notification(cmd)["trigger"] for _ in range(3)]
        self.assertEqual(got, ["every", "every", "sentinel"])
        self.rt("remove-trigger", "every")
        p.cmd("emit 50 a")
        p.cmd("emit 1 z")
        self.assertEqual(self.notification(cmd)["trigger"], "sentinel")
        self.assertEqual(list(self.triggers()), ["sentinel"])


class TestRing(UserTriggerCase):
    def test_daemon_not_reading(self):
        """The daemon stopped (SIGSTOP): the program matches 3000 events
        and goes on; its ring keeps the first RING_SLOTS, the rest are
        counted lost and reported with the last notification read."""
        self.rt("add-trigger", "--name=all", "--condition=event-rule-matches",
                "--type=user", "--name=app:tick", "--capture=seq", "--action=notify")
        cmd = self.notifications()
        p = self.program()
        os.kill(self.daemon.pid, signal.SIGSTOP)
        try:
            self.assertEqual(p.cmd("emit 3000 x"), [])
        finally:
            os.kill(self.daemon.pid, signal.SIGCONT)
        got = [self.notification(cmd) for _ in range(RING_SLOTS)]
        self.assertEqual([n["captures"]["seq"] for n in got], list(range(RING_SLOTS)))
        self.assertEqual(sum(n.get("lost", 0) for n in got), 3000 - RING_SLOTS)
        self.assertEqual(got[-1]["lost"], 3000 - RING_SLOTS)
        # The ring has room again.
        p.cmd("emit 1 y")
        self.assertEqual(self.notification(cmd)["captures"], {"seq": 0})

    def test_hostile_ring(self):
        """A program writing its ring by hand: a slot whose length is past
        the slot, one with an unknown capture type, and one naming a
        trigger it was not given (nobody's) are refused and logged; the
        good slot after them fires with its values, pid being the one the
        kernel gave the connection."""
        self.rt("add-trigger", "--name=mine", "--condition=event-rule-matches",
                "--type=user", "--name=raw:ev0", "--capture=v", "--action=notify")
        self.rt("add-trigger", "--name=theirs", "--owner-uid=65534",
                "--condition=event-rule-matches", "--type=user", "--name=raw:*",
                "--action=notify")
        cmd = self.notifications()
        s = connect(self.rundir)
        self.addCleanup(s.close)
        s.sendall(frame(REGISTER, register_payload(1, "hostile")))
        ring_fd, token = None, None
        while ring_fd is None or token is None:
            hdr, fds, _, _ = socket.recv_fds(s, HDR.size, 4)
            magic, _, typ, length, status = HDR.unpack(hdr)
            self.assertEqual(magic, MAGIC)
            body = b""
            while len(body) < length:
                body += s.recv(length - len(body))
            if typ == TRIGGERS:
                n = struct.unpack_from("<I", body, 0)[0]
                self.assertEqual(n, 1)      # nobody's trigger does not apply here
                token, nev = struct.unpack_from("<QI", body, 8)
                self.assertEqual((nev, struct.unpack_from("<I", body, 32)[0]), (1, 0))
                self.assertEqual(len(fds), 1)
                ring_fd = fds[0]
            else:
                for fd in fds:
                    os.close(fd)
            if typ == SYNC:
                s.sendall(frame(SYNC_REPLY, body))
            if typ == REGISTER_REPLY:
                self.assertEqual(status, 0)
        size = os.fstat(ring_fd).st_size
        ring = mmap.mmap(ring_fd, size)
        os.close(ring_fd)
        magic, version, nr, slot_size = struct.unpack_from("<IIII", ring, 0)
        self.assertEqual((magic, version, nr), (0x52545452, 1, RING_SLOTS))

        def put(ticket, tok, tid, body, length=None, nr_captures=1):
            off = 256 + ticket * slot_size
            struct.pack_into("<QQQIIII", ring, off, 0, tok, 1, 4242, tid,
                             len(body) if length is None else length, nr_captures)
            ring[off + 40:off + 40 + len(body)] = body
            struct.pack_into("<Q", ring, off, ticket + 1)
        value = struct.pack("<BBHQ", 2, 0, 8, 42)
        put(0, token, 1, value, length=slot_size)
        put(1, token, 2, struct.pack("<BBHQ", 9, 0, 8, 42))
        put(2, token + 1, 3, b"", nr_captures=0)          # nobody's token
        put(3, token, 4, value)
        struct.pack_into("<Q", ring, 64, 4)               # head
        n = self.notification(cmd)
        self.assertEqual((n["trigger"], n["tid"], n["pid"], n["captures"]),
                         ("mine", 4, os.getpid(), {"v": 42}))
        log = self.daemon_log_text()
        self.assertIn("program %d (hostile): a slot that does not parse in its trigger "
                      "notification ring; refused" % os.getpid(), log)
        self.assertEqual(self.triggers()["theirs"]["fired"], "0")
        ring.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
