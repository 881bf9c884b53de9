#!/usr/bin/env python3
"""ringtrace-relayd against a daemon written in Python (relay_client.py):
storage (HOST/SESSION-DATE/PATH, stream files byte for byte, the CTF
index), the secret file, and what it refuses while it keeps serving the
others: a wrong secret, a replayed handshake, host and stream names that
would leave the host's directory, an oversized frame, another host's
session; and a restart mid-session (the same files appended to, the index
read back)."""
import glob
import os
import socket
import stat
import struct
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../support"))
sys.path.insert(0, HERE)
import rtfixtures  # noqa: E402
import relay_client as rc  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
RELAYD = os.path.join(BUILD, "src/relay/ringtrace-relayd")
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
BURST = os.path.join(BUILD, "tests/integration/burst")
CREATED = rc.RelayCase.CREATED


def recorded_trace(tmp):
    return rc.recorded_trace(tmp, RINGTRACE, BURST)


def index_entries(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, major, minor, size = struct.unpack_from(">IIII", data)
    assert (magic, major, minor, size) == (0xC1F1DCC1, 1, 1, 72)
    assert (len(data) - 16) % 72 == 0
    return [struct.unpack_from(">9Q", data, 16 + 72 * i) for i in range((len(data) - 16) // 72)]


class Relay(rc.RelayCase, unittest.TestCase):
    relayd = RELAYD

    def stream_trace(self, c, d, sid, trace, upto=None):
        """Send the trace dir `trace` (metadata and every stream file, the
        first `upto` packets of each when given) as the daemon would."""
        for stid, pkts in rc.add_trace(c, sid, trace):
            for p in pkts[:upto]:
                d.packet(stid, p)

    def stored(self, host, name="s1"):
        dirs = glob.glob(os.path.join(self.out, host, name + "-*"))
        self.assertEqual(len(dirs), 1, os.listdir(self.out))
        return dirs[0]

    def wait_stored(self, path, size, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(path) and os.path.getsize(path) >= size:
                return
            time.sleep(0.02)
        self.fail("%s never reached %d bytes" % (path, size))

    def test_secret_created_private(self):
        st = os.lstat(self.secret)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(len(self.key), 32)

    def test_secret_readable_by_others_refused(self):
        os.chmod(self.secret, 0o644)
        r = subprocess.run([RELAYD, "-o", self.out, "-C", "tcp://127.0.0.1:0", "-D",
                            "tcp://127.0.0.1:0", "-L", "tcp://127.0.0.1:0"], env=self.env,
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 1)
        self.assertIn("mode 0600", r.stderr)

    def test_trace_stored_as_sent(self):
        trace = recorded_trace(self.tmp)
        c, d, sid = self.session("hostA")
        self.stream_trace(c, d, sid, trace)
        stored = self.stored("hostA")
        self.assertRegex(os.path.basename(stored), r"^s1-\d{8}-\d{6}$")
        files = [f for f in os.listdir(trace) if "_" in f]
        self.assertTrue(files)
        for name in files:
            src = os.path.join(trace, name)
            dst = os.path.join(stored, "ust", name)
            self.wait_stored(dst, os.path.getsize(src))
            with open(src, "rb") as a, open(dst, "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
            entries = index_entries(os.path.join(stored, "ust", "index", name + ".idx"))
            pk = rc.packets(src)
            self.assertEqual(len(entries), len(pk))
            off = 0
            for e, p in zip(entries, pk):
                h = rc.PKT_HDR.unpack_from(p)
                self.assertEqual(e, (off, h[7], h[6], h[4], h[5], h[9], h[2], h[3], h[8]))
                off += len(p)
        c.close()
        d.close()
        want, _, _ = rtfixtures.bt2_read(trace)
        got, disc, lost = rtfixtures.bt2_read(stored)
        self.assertGreater(len(want), 100)
        self.assertEqual([(e.event.name, e.default_clock_snapshot.value,
                           int(e.event.payload_field["seq"])) for e in got],
                         [(e.event.name, e.default_clock_snapshot.value,
                           int(e.event.payload_field["seq"])) for e in want])
        self.assertEqual((disc, lost), rtfixtures.bt2_read(trace)[1:])
        ours = rtfixtures.rtr_dump(BUILD, stored)
        self.assertEqual([(e["name"], e["ns"]) for e in ours],
                         [(e["name"], e["ns"]) for e in rtfixtures.rtr_dump(BUILD, trace)])

    def test_wrong_secret_refused(self):
        bad = os.urandom(32)
        c = rc.Conn(self.ctrl)
        # The daemon's side sees that the relay does not know its secret...
        self.assertEqual(c.handshake(bad, rc.ROLE_CTRL, "hostA")[0], "fail")
        c.close()
        # ... and the relay refuses a client that answers without it.
        c = rc.Conn(self.ctrl)
        r = c.handshake(bad, rc.ROLE_CTRL, "hostA", check_relay=False)
        self.assertEqual(r[0], "fail")
        self.assertIn("secret", r[1])
        self.assertTrue(c.closed_by_peer())
        self.assertFalse(os.path.exists(os.path.join(self.out, "hostA")))
        self.assertIn("authentication failed for host 'hostA'", self.logged())
        # Still serving the others.
        self.session("hostB")

    def test_replayed_handshake_refused(self):
        good = rc.Conn(self.ctrl)
        self.assertEqual(good.handshake(self.key, rc.ROLE_CTRL, "hostA"), "ok")
        hello, auth = good.sent
        good.close()
        replay = rc.Conn(self.ctrl)
        replay.s.sendall(hello)
        t, _ = replay.recv()
        self.assertEqual(t, rc.CHALLENGE)
        replay.s.sendall(auth)
        t, p = replay.recv()
        self.assertEqual(t, rc.AUTH_FAIL)
        self.assertTrue(replay.closed_by_peer())
        self.session("hostB")

    def test_host_names_refused(self):
        for host in ["../x", "..", ".", "a/b", "", "x" * 64, ".hidden", "a b", "a\nb"]:
            c = rc.Conn(self.ctrl)
            r = c.handshake(self.key, rc.ROLE_CTRL, host)
            self.assertEqual(r[0], "fail", host)
            self.assertIn("host name refused", r[1])
            c.close()
        self.assertEqual(os.listdir(self.out), [])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x")))
        self.session("x" * 63)

    def test_names_that_leave_the_session_refused(self):
        c, d, sid = self.session("hostA")
        for name in ["../x", "a/b", ".x", ""]:
            self.assertEqual(c.create_session(name, CREATED)[0], -22, name)
        for path, chan in [("ust/../../x", "c"), ("/etc", "c"), ("ust//x", "c"),
                           ("ust", "../c"), ("ust", "index"), ("ust", "metadata"), ("", "c")]:
            self.assertEqual(c.add_stream(sid, path, chan, 0)[0], -22, (path, chan))
        self.assertEqual(sorted(os.listdir(self.out)), ["hostA"])
        self.assertEqual(os.listdir(os.path.join(self.out, "hostA")),
                         [os.path.basename(self.stored("hostA"))])

    def test_other_hosts_session_refused(self):
        ca, da, sid_a = self.session("hostA")
        cb = rc.Conn(self.ctrl)
        self.assertEqual(cb.handshake(self.key, rc.ROLE_CTRL, "hostB"), "ok")
        self.assertEqual(cb.add_stream(sid_a, "ust", "channel0", 0)[0], -2)
        db = rc.Conn(self.data)
        self.assertEqual(db.handshake(self.key, rc.ROLE_DATA, "hostB"), "ok")
        self.assertEqual(db.attach(sid_a)[0], -2)
        # A data connection without a session of its own is closed at its
        # first packet.
        st, stid, _ = ca.add_stream(sid_a, "ust", "channel0", 0)
        db.send(rc.PACKET, struct.pack(">9Q", stid, 64 * 8, 64 * 8, 0, 0, 0, 0, 0, 0) +
                bytes(64))
        self.assertTrue(db.closed_by_peer())
        self.assertFalse(os.path.exists(os.path.join(self.out, "hostB")))

    def test_oversized_frame_refused(self):
        trace = recorded_trace(self.tmp)
        c, d, sid = self.session("hostA")
        evil = rc.Conn(self.data)
        self.assertEqual(evil.handshake(self.key, rc.ROLE_DATA, "hostE"), "ok")
        evil.s.sendall(struct.pack(">IHHI", rc.MAGIC, rc.PACKET, 0, 1 << 30))
        self.assertTrue(evil.closed_by_peer())
        # Before authentication too: a HELLO longer than a HELLO.
        evil = rc.Conn(self.ctrl)
        evil.s.sendall(struct.pack(">IHHI", rc.MAGIC, rc.HELLO, 0, 4096) + bytes(4096))
        self.assertTrue(evil.closed_by_peer())
        self.assertIn("Message too long", self.logged())
        # The honest host's trace is whole.
        self.stream_trace(c, d, sid, trace)
        name = [f for f in os.listdir(trace) if "_" in f][0]
        self.wait_stored(os.path.join(self.stored("hostA"), "ust", name),
                         os.path.getsize(os.path.join(trace, name)))

    def test_metadata_offset_bounded(self):
        """METADATA at an offset past the file's end is refused (it made a
        sparse file of any size: 1 TiB here); one at the end or within it
        is written, and the session goes on."""
        trace = recorded_trace(self.tmp)
        c, d, sid = self.session("hostA")
        st, mid, msg = c.add_stream(sid, "ust/x", "metadata", 0, metadata=True)
        self.assertEqual(st, 0, msg)
        c.metadata(mid, 0, b"/* CTF 1.8 */\n")
        c.metadata(mid, 1 << 40, b"far away")
        c.metadata(mid, 15, b"one past the end")
        c.metadata(mid, 14, b"at the end\n")
        c.metadata(mid, 3, b"CTF")
        # The control connection answers after the frames before it.
        self.assertEqual(c.add_stream(sid, "ust/x", "chan", 0)[0], 0)
        path = os.path.join(self.stored("hostA"), "ust", "x", "metadata")
        self.assertLess(os.stat(path).st_size, 4096)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"/* CTF 1.8 */\nat the end\n")
        self.assertIn("cannot write the metadata", self.logged())
        # The honest trace streams on the same connection.
        self.stream_trace(c, d, sid, trace)
        name = [f for f in os.listdir(trace) if "_" in f][0]
        self.wait_stored(os.path.join(self.stored("hostA"), "ust", name),
                         os.path.getsize(os.path.join(trace, name)))

    def test_unauthenticated_idle_connection_dropped(self):
        idle = rc.Conn(self.ctrl, timeout=20)
        self.assertTrue(idle.closed_by_peer(timeout=15))
        self.session("hostA")

    def test_restart_appends(self):
        trace = recorded_trace(self.tmp)
        c, d, sid = self.session("hostA")
        self.stream_trace(c, d, sid, trace, upto=2)
        name = [f for f in os.listdir(trace) if "_" in f][0]
        pk = rc.packets(os.path.join(trace, name))
        self.assertGreater(len(pk), 3)
        stored = os.path.join(self.stored("hostA"), "ust", name)
        self.wait_stored(stored, len(pk[0]) + len(pk[1]))
        self.relay.kill()
        self.relay.wait()
        # A packet cut in the middle by the crash is cut off at the restart.
        with open(stored, "ab") as f:
            f.write(pk[2][:100])
        self.relay = rc.restart_relay_on(RELAYD, self.env, self.out, self.log, self.ctrl,
                                         self.data)
        c, d, sid = self.session("hostA")
        self.stream_trace(c, d, sid, trace)
        # The second pass resends the first two packets: the stream holds
        # them twice, as sent, and the index says so.
        total = sum(map(len, pk)) + len(pk[0]) + len(pk[1])
        self.wait_stored(stored, total)
        time.sleep(0.2)
        self.assertEqual(os.path.getsize(stored), total)
        entries = index_entries(os.path.join(os.path.dirname(stored), "index", name + ".idx"))
        self.assertEqual(len(entries), len(pk) + 2)
        self.assertEqual([e[8] for e in entries[:3]],
                         [rc.PKT_HDR.unpack_from(p)[8] for p in (pk[0], pk[1], pk[0])])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:], verbosity=2)
