#!/usr/bin/env python3
"""ringtrace-relayd's live port: a trace streamed by a daemon written in
Python (relay_client.py: a recorded trace sent packet by packet, in two
halves with beacons for the idle streams between) is followed live by
babeltrace2's lttng-live source (LTTng's unauthenticated protocol, on the
loopback live port) and by `ringtrace view --live` (authenticated with the
relay's secret), both from before the first packet: each sees every event,
checked against babeltrace2's and ringtrace's reading of the recorded
trace; events appear before the second half is sent. Also: garbage,
oversized and out-of-order viewer frames close only that connection (the
relay keeps serving); a wrong secret is refused; a live port that is not
on loopback refuses LTTng's viewers unless --live-open.

usage: test_relay_live.py BUILD_DIR   (exit 77: babeltrace2 missing)"""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../support"))
sys.path.insert(0, HERE)
import relay_client as rc  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
RELAYD = os.path.join(BUILD, "src/relay/ringtrace-relayd")
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
BURST = os.path.join(BUILD, "tests/integration/burst")
BEACON = 34
CLOSE_SESSION = 20


class Reader(threading.Thread):
    """A viewer process whose output lines are collected as they come."""

    def __init__(self, cmd, env):
        super().__init__(daemon=True)
        self.p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.lines = []
        self.start()

    def run(self):
        for line in self.p.stdout:
            self.lines.append(line.decode())

    def wait_lines(self, n, timeout=60):
        deadline = time.monotonic() + timeout
        while len(self.lines) < n and time.monotonic() < deadline and self.p.poll() is None:
            time.sleep(0.05)
        return len(self.lines)

    def finish(self, timeout=60):
        try:
            self.p.wait(timeout)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
        self.join(10)
        return self.p.returncode, self.p.stderr.read().decode()


class RelayLive(rc.RelayCase, unittest.TestCase):
    relayd = RELAYD

    def url(self, session=None, port=None, host="127.0.0.1"):
        u = "net://%s:%d" % (host, port or self.live)
        return u + "/host/hostA/" + session if session else u

    def session(self, name="s1"):
        return super().session("hostA", name, live_us=100000)

    def test_babeltrace2_and_view_follow_every_event(self):
        trace = rc.recorded_trace(self.tmp, RINGTRACE, BURST, 4000)
        c, d, sid = self.session()
        streams = rc.add_trace(c, sid, trace)
        self.assertGreater(sum(len(p) for _, p in streams), 2 * len(streams))
        view = Reader([RINGTRACE, "view", "--format=json", "--live", self.url("s1")], self.env)
        bt = Reader(["babeltrace2", "--no-delta", "--clock-gmt", "--input-format=lttng-live",
                     self.url("s1")], dict(self.env, RINGTRACE_RELAY_SECRET="/nonexistent"))
        # Both attached before the first packet (babeltrace2 attaches at the
        # relay's last packet).
        for _ in range(600):
            r = subprocess.run([RINGTRACE, "view", "--live", self.url()], env=self.env,
                               capture_output=True, text=True, timeout=60)
            if "2 client(s)" in r.stdout:
                break
            time.sleep(0.05)
        self.assertIn("2 client(s)", r.stdout)
        # First half: the first half of each stream's packets, then beacons
        # at the end of what was sent (the next packets begin later).
        for stid, pkts in streams:
            for p in pkts[:len(pkts) // 2]:
                d.packet(stid, p)
        for stid, pkts in streams:
            half = pkts[:len(pkts) // 2]
            te = rc.PKT_HDR.unpack_from(half[-1])[5] if half else 1
            cls = rc.PKT_HDR.unpack_from(pkts[0])[2] if pkts else 0   # its stream class
            d.send(BEACON, struct.pack(">QQQ", stid, te, cls))
        self.assertGreater(view.wait_lines(1), 0, "nothing shown while the session runs")
        self.assertGreater(bt.wait_lines(1), 0, "babeltrace2 shows nothing while it runs")
        for stid, pkts in streams:
            for p in pkts[len(pkts) // 2:]:
                d.packet(stid, p)
        time.sleep(0.5)
        self.assertEqual(c.request(CLOSE_SESSION, struct.pack(">Q", sid))[0], 0)
        rv, ev = view.finish()
        rb, eb = bt.finish()
        self.assertEqual(rv, 0, ev)
        self.assertEqual(rb, 0, eb)
        # ringtrace: every event, as `view` reads the recorded trace.
        local = subprocess.run([RINGTRACE, "view", "--format=json", trace], capture_output=True,
                               text=True, timeout=120)
        self.assertEqual(local.returncode, 0, local.stderr)
        theirs = [json.loads(x) for x in local.stdout.splitlines()]
        ours = [json.loads(x) for x in view.lines]
        self.assertEqual(len(ours), len(theirs))
        self.assertGreater(len(ours), 100)
        key = lambda e: (e["ts"], e["cpu"], e["name"], json.dumps(e["fields"], sort_keys=True))
        self.assertEqual(sorted(map(key, ours)), sorted(map(key, theirs)))
        self.assertEqual([e["ts"] for e in ours], sorted(e["ts"] for e in ours))
        # babeltrace2: the same text as it prints the recorded trace.
        bl = subprocess.run(["babeltrace2", "--no-delta", "--clock-gmt", trace],
                            capture_output=True, text=True, timeout=120)
        self.assertEqual(bl.returncode, 0, bl.stderr)
        self.assertEqual(len(bt.lines), len(bl.stdout.splitlines()))
        self.assertEqual(sorted(bt.lines), sorted(l + "\n" for l in bl.stdout.splitlines()))

    def test_beacons(self):
        """An idle stream is INACTIVE up to its beacon; once packets past the
        beacon were given, the old beacon is not told again (babeltrace2
        stops at a time before one it showed)."""
        trace = rc.recorded_trace(self.tmp, RINGTRACE, BURST, 4000)
        c, d, sid = self.session("beacons")
        stid, pkts = max(rc.add_trace(c, sid, trace), key=lambda s: len(s[1]))
        self.assertGreaterEqual(len(pkts), 2)
        v = socket.create_connection(("127.0.0.1", self.live), timeout=30)

        def cmd(n, payload, reply):
            v.sendall(struct.pack(">QII", len(payload), n, 0) + payload)
            got = b""
            while len(got) < reply:
                chunk = v.recv(reply - len(got))
                self.assertTrue(chunk, "the relay closed the connection")
                got += chunk
            return got

        def next_index():
            return struct.unpack(">7QII", cmd(4, struct.pack(">Q", stid), 64))

        cmd(1, struct.pack(">QIII", 0, 2, 4, 1), 20)
        cmd(8, b"", 4)
        st, n = struct.unpack(">II", cmd(3, struct.pack(">QQI", sid, 0, 1), 8))
        self.assertEqual(st, 1)
        v.settimeout(30)
        cmd_streams = b""
        while len(cmd_streams) < n * 4371:
            cmd_streams += v.recv(n * 4371 - len(cmd_streams))
        self.assertEqual(next_index()[7], 2)            # RETRY: nothing yet
        d.packet(stid, pkts[0])
        end0 = rc.PKT_HDR.unpack_from(pkts[0])[5]
        cls = rc.PKT_HDR.unpack_from(pkts[0])[2]
        d.send(BEACON, struct.pack(">QQQ", stid, end0 + 1, cls))
        for _ in range(600):                            # the relay has them
            x = next_index()
            if x[7] != 2:
                break
            time.sleep(0.05)
        self.assertEqual(x[7], 1)                       # OK: the first packet
        self.assertEqual(x[4], end0)
        for _ in range(600):                            # the beacon too
            x = next_index()
            if x[7] != 2:
                break
            time.sleep(0.05)
        self.assertEqual((x[7], x[4]), (5, end0 + 1))   # INACTIVE up to the beacon
        self.assertEqual(x[6], cls)                     # of the beacon's stream class
        for p in pkts[1:]:
            d.packet(stid, p)
        given = 1
        for _ in range(600):
            x = next_index()
            if x[7] == 1:
                given += 1
            elif given == len(pkts):
                break
            else:
                time.sleep(0.05)
        self.assertEqual(given, len(pkts))
        self.assertEqual(x[7], 2, x)                    # RETRY, not the stale beacon
        v.close()

    def test_session_list(self):
        c, d, sid = self.session("listed")
        r = subprocess.run([RINGTRACE, "view", "--live", self.url()], env=self.env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(self.url("listed") + " (timer = 100000, 0 stream(s), 0 client(s)",
                      r.stdout)
        b = subprocess.run(["babeltrace2", "--input-format=lttng-live", self.url()],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertIn(self.url("listed"), b.stdout)

    def raw(self, data):
        """Send data to the live port, then end the connection's sending
        side: what the relay answered until it closed."""
        s = socket.create_connection(("127.0.0.1", self.live), timeout=30)
        got = b""
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while True:
                c = s.recv(65536)
                if not c:
                    return got
                got += c
        except OSError:     # reset, or closed before our shutdown
            return got
        finally:
            s.close()

    def test_bad_frames_refused_relay_keeps_serving(self):
        c, d, sid = self.session("still")
        connect = struct.pack(">QII", 20, 1, 0) + struct.pack(">QIII", 0, 2, 4, 1)
        cases = [
            struct.pack(">QII", 1 << 40, 2, 0),             # oversized LIST_SESSIONS
            struct.pack(">QII", 20, 1, 0) + b"\x00" * 8,    # CONNECT cut short, then EOF
            struct.pack(">QII", 0, 2, 0),                   # a command before CONNECT
            connect + struct.pack(">QII", 8, 99, 0) + b"\x00" * 8,   # unknown command
            connect + struct.pack(">QII", 4096, 5, 0) + b"\xff" * 4096,  # GET_PACKET of 4 KiB
            b"\xff" * 64,                                   # garbage
            b"\x00\x00\x00",                               # 3 bytes, then EOF
        ]
        for data in cases:
            self.raw(data)
        self.assertIn("not the protocol", self.logged())
        self.assertIn("before CONNECT", self.logged())
        # Not held for the I/O timeout (a fuzzing finding: 10 s per such
        # connection): seen closed and said so.
        self.assertIn("closed before its first command", self.logged())
        # Still serving: a viewer lists the session.
        r = subprocess.run([RINGTRACE, "view", "--live", self.url()], env=self.env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(self.url("still"), r.stdout)
        # Unknown ids get error statuses, not a crash.
        got = self.raw(connect + struct.pack(">QII", 8, 4, 0) + struct.pack(">Q", 12345) +
                       struct.pack(">QII", 20, 5, 0) + struct.pack(">QQI", 12345, 0, 1 << 31))
        self.assertEqual(len(got), 20 + 64 + 12)
        self.assertEqual(struct.unpack_from(">I", got, 20 + 56)[0], 4)   # INDEX_ERR
        self.assertEqual(struct.unpack_from(">I", got, 20 + 64)[0], 3)   # PACKET_ERR

    def test_wrong_secret_refused(self):
        c, d, sid = self.session("guarded")
        other = os.path.join(self.tmp, "other-secret")
        with open(other, "w") as f:
            f.write("ab" * 32 + "\n")
        os.chmod(other, 0o600)
        r = subprocess.run([RINGTRACE, "view", "--live", self.url()],
                           env=dict(self.env, RINGTRACE_RELAY_SECRET=other),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("authentication failed", r.stderr)
        self.assertNotIn("guarded", r.stdout)

    def test_not_loopback_needs_the_secret(self):
        addr = None
        try:
            out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                                 capture_output=True, text=True, timeout=10).stdout
            addr = out.split()[3].split("/")[0] if out.split() else None
        except (OSError, IndexError):
            pass
        if not addr:
            self.skipTest("no address other than loopback")
        for opened in (False, True):
            log = os.path.join(self.tmp, "relay2-%d.log" % opened)
            extra = ["--live-open"] if opened else []
            p = subprocess.Popen([RELAYD, "-o", self.out, "-C", "tcp://127.0.0.1:0",
                                  "-D", "tcp://127.0.0.1:0", "-L", "tcp://%s:0" % addr, *extra],
                                 env=self.env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
            try:
                for _ in range(200):
                    if os.path.exists(log) and "live port" in open(log).read():
                        break
                    time.sleep(0.05)
                port = rc.live_port(log)
                url = self.url(port=port, host=addr)
                ours = subprocess.run([RINGTRACE, "view", "--live", url], env=self.env,
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual(ours.returncode, 0, ours.stderr)
                lttng = subprocess.run(["babeltrace2", "--input-format=lttng-live", url],
                                       capture_output=True, text=True, timeout=60)
                self.assertEqual(lttng.returncode == 0, opened, lttng.stderr)
                if not opened:
                    self.assertIn("without the relay's secret", open(log).read())
            finally:
                p.send_signal(signal.SIGTERM)
                p.wait(10)


def main():
    if not shutil.which("babeltrace2"):
        print("skip: babeltrace2 not installed")
        return 77
    prog = unittest.main(exit=False, verbosity=2, warnings="ignore")
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
