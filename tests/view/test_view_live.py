#!/usr/bin/python3
"""`ringtrace view --live` against LTTng's own relay daemon: a private
lttng-relayd and lttng-sessiond (as nobody when root), a live session, and
rtr_lttng_app run twice while the viewer follows (attached before the
first registered: the streams and metadata appear after it attached). Every event
the viewer printed is checked event by event against babeltrace2's reading
of the trace the relay stored for the same session. Also: the session list,
SIGINT while waiting, and a hostile relay (oversized counts and packets,
garbage, a connection cut mid-reply) refused with a clear error.

usage: test_view_live.py BUILD_DIR   (exit 77: LTTng or bt2 missing)
"""
import glob
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
LTTNG_APP = os.path.join(BUILD, "tests/reader/rtr_lttng_app")
SKIP = 77


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Lttng:
    """The private LTTng daemons, their home and the relay's ports."""

    def __init__(self):
        self.prefix = []
        if os.getuid() == 0:  # a root daemon would use the system-wide directory
            self.prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        self.tmp = tempfile.mkdtemp(prefix="rt-view-live-")
        os.chmod(self.tmp, 0o755)
        if self.prefix:
            os.chown(self.tmp, 65534, 65534)
        self.env = dict(os.environ, HOME=self.tmp, LTTNG_HOME=self.tmp)
        self.env.pop("LTTNG_UST_DEBUG", None)
        self.app = os.path.join(self.tmp, "app")
        shutil.copy(LTTNG_APP, self.app)
        os.chmod(self.app, 0o755)
        self.out = os.path.join(self.tmp, "relay")
        self.ctrl, self.data, self.live = free_ports(3)
        self.relayd = subprocess.Popen(
            self.prefix + ["lttng-relayd", "-C", "tcp://127.0.0.1:%d" % self.ctrl,
                           "-D", "tcp://127.0.0.1:%d" % self.data,
                           "-L", "tcp://127.0.0.1:%d" % self.live, "-o", self.out],
            env=self.env, cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.run("lttng-sessiond", "--daemonize", "--no-kernel")
        for _ in range(100):  # the relay's live port is up
            try:
                socket.create_connection(("127.0.0.1", self.live), 1).close()
                break
            except OSError:
                time.sleep(0.1)

    def run(self, *args):
        r = subprocess.run(self.prefix + list(args), env=self.env, cwd=self.tmp,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: {r.stdout}{r.stderr}")
        return r.stdout

    def url(self, session=None):
        u = "net://127.0.0.1:%d" % self.live
        return u + "/host/%s/%s" % (socket.gethostname(), session) if session else u

    def close(self):
        try:
            with open(os.path.join(self.tmp, ".lttng/lttng-sessiond.pid")) as f:
                os.kill(int(f.read()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
        self.relayd.terminate()
        self.relayd.wait(30)
        shutil.rmtree(self.tmp, ignore_errors=True)


LT = None


def setUpModule():
    global LT
    LT = Lttng()


def tearDownModule():
    if LT:
        LT.close()


def viewer(*args):
    return subprocess.Popen([RINGTRACE, "view", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


class FollowsLttngRelayd(unittest.TestCase):
    def test_every_event_as_babeltrace2_reads_it(self):
        sess = "follow"
        LT.run("lttng", "create", sess, "--live=100000",
               "--set-url=net://127.0.0.1:%d:%d" % (LT.ctrl, LT.data))
        # Per-user buffers: LTTng's relay may never announce the streams of
        # a short-lived process's per-process buffers.
        LT.run("lttng", "enable-channel", "-u", "ch")
        LT.run("lttng", "enable-event", "-u", "-c", "ch", "rtrtest:*")
        LT.run("lttng", "add-context", "-u", "-c", "ch", "-t", "vpid", "-t", "vtid",
               "-t", "procname")
        LT.run("lttng", "start")
        listed = subprocess.run([RINGTRACE, "view", "--live", LT.url()], capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn(LT.url(sess) + " (timer = 100000, ", listed.stdout)
        # Attached before any program registered: no stream yet.
        v = viewer("--format=json", "--live", LT.url(sess))
        try:
            time.sleep(1)
            LT.run(LT.app, "60")
            LT.run(LT.app, "40")
            time.sleep(1)
            LT.run("lttng", "destroy", sess)
            out, err = v.communicate(timeout=60)
        finally:
            if v.poll() is None:
                v.kill()
                v.wait()
        self.assertEqual(v.returncode, 0, err.decode())
        ours = [json.loads(line) for line in out.decode().splitlines()]
        self.assertEqual(len(ours), 5 * 100)
        sys.argv[1:] = [BUILD]
        import test_view  # its bt2 conversion, shared
        stored = glob.glob(os.path.join(LT.out, socket.gethostname(), sess + "-*"))
        self.assertEqual(len(stored), 1, stored)
        theirs = test_view.bt2_events(stored[0], bools=False)
        self.assertEqual(len(ours), len(theirs))
        key = lambda e: (e["context"]["vpid"], e["cpu"])
        for k in sorted({key(e) for e in theirs}):
            a = [e for e in ours if key(e) == k]
            b = [e for e in theirs if key(e) == k]
            self.assertEqual(len(a), len(b), k)
            for x, y in zip(a, b):
                self.assertEqual(x["name"], y["name"])
                self.assertLessEqual(abs(x["ts"] - y["ts"]), 1, (x, y))
                ol, tl = [], []
                self.assertEqual(test_view.enum_labels(x["fields"], ol),
                                 test_view.enum_labels(y["fields"], tl), x["name"])
                self.assertEqual(ol, tl)
                self.assertEqual(x["context"], y["context"])
        # The merge is in time order within each process's streams.
        for pid in {e["context"]["vpid"] for e in ours}:
            ts = [e["ts"] for e in ours if e["context"]["vpid"] == pid]
            self.assertEqual(ts, sorted(ts))

    def test_sigint_while_waiting(self):
        sess = "quiet"
        LT.run("lttng", "create", sess, "--live=100000",
               "--set-url=net://127.0.0.1:%d:%d" % (LT.ctrl, LT.data))
        LT.run("lttng", "enable-event", "-u", "nosuch:*")
        LT.run("lttng", "start")
        v = viewer("--live", LT.url(sess))
        try:
            time.sleep(1)
            self.assertIsNone(v.poll())
            v.send_signal(signal.SIGINT)
            out, err = v.communicate(timeout=30)
        finally:
            if v.poll() is None:
                v.kill()
                v.wait()
            LT.run("lttng", "destroy", sess)
        self.assertEqual(v.returncode, 0, err.decode())
        self.assertEqual(out, b"")

    def test_secret_then_lttng_relayd(self):
        """With a relay secret the viewer opens with ringtrace's handshake;
        lttng-relayd closes that connection and is spoken to as LTTng's
        viewers do."""
        secret = os.path.join(LT.tmp, "relay.secret")
        with open(secret, "w") as f:
            f.write("cd" * 32 + "\n")
        os.chmod(secret, 0o600)
        r = subprocess.run([RINGTRACE, "view", "--live", LT.url()], capture_output=True,
                           text=True, timeout=60,
                           env=dict(os.environ, RINGTRACE_RELAY_SECRET=secret))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")

    def test_no_such_session(self):
        r = subprocess.run([RINGTRACE, "view", "--live", LT.url("nosuch")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no live session nosuch of host", r.stderr)

    def test_bad_urls(self):
        for url in ("http://x", "net://", "net://h:0", "net://h:99999", "net://h/x/y",
                    "net://h/host/a", "net://h/host/a/b/c", "net://h/host/../"):
            r = subprocess.run([RINGTRACE, "view", "--live", url], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 2, (url, r.stderr))
            self.assertIn("--live:", r.stderr)
        r = subprocess.run([RINGTRACE, "view", "--live", LT.url("a"), "/tmp"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)


# ---------------------------------------------------------------------
# A hostile relay: answers CONNECT, then what the case says.

def hdr_and_payload(conn):
    h = b""
    while len(h) < 16:
        c = conn.recv(16 - len(h))
        if not c:
            return None, None
        h += c
    size, cmd, _ = struct.unpack(">QII", h)
    p = b""
    while len(p) < size:
        c = conn.recv(size - len(p))
        if not c:
            return None, None
        p += c
    return cmd, p


def session_rec(sid, host, name):
    return struct.pack(">QIII64s255s", sid, 100000, 0, 1, host.encode(), name.encode())


def stream_rec(sid, trace, meta, path):
    return struct.pack(">QQI4096s255s", sid, trace, meta, path.encode(), b"ch")


class FakeRelay:
    def __init__(self, answer, cut=False):
        self.cut = cut
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.answer = answer
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        conn, _ = self.sock.accept()
        with conn:
            while True:
                cmd, p = hdr_and_payload(conn)
                if cmd is None:
                    return
                if cmd == 1:
                    conn.sendall(struct.pack(">QIII", 1, 2, 4, 1))
                    continue
                out = self.answer(cmd, p)
                if out is None:
                    return  # cut the connection
                conn.sendall(out)
                if self.cut:
                    return

    def close(self):
        self.sock.close()


META = b"/* CTF 1.8 */\ntrace { major = 1; minor = 8; byte_order = le; };\n"


def attach_flow(index=None, packet=None, meta=META, streams=None):
    """Answers of a relay with one session 'h'/'s' of one trace."""
    def answer(cmd, p):
        if cmd == 2:
            return struct.pack(">I", 1) + session_rec(7, "h", "s")
        if cmd == 8:
            return struct.pack(">I", 1)
        if cmd == 3:
            lst = streams if streams is not None else [stream_rec(1, 1, 1, "h/s/metadata"),
                                                       stream_rec(2, 1, 0, "h/s/ch_0")]
            return struct.pack(">II", 1, len(lst)) + b"".join(lst)
        if cmd == 6:
            if answer.meta_sent:
                return struct.pack(">QI", 0, 2)
            answer.meta_sent = True
            return struct.pack(">QI", len(meta), 1) + meta
        if cmd == 4:
            return index
        if cmd == 5:
            return packet
        if cmd == 9:
            return struct.pack(">I", 1)
        return None
    answer.meta_sent = False
    return answer


class HostileRelay(unittest.TestCase):
    def check_refused(self, answer, message, session=True, cut=False):
        fake = FakeRelay(answer, cut)
        try:
            url = "net://127.0.0.1:%d" % fake.port + ("/host/h/s" if session else "")
            r = subprocess.run([RINGTRACE, "view", "--live", url], capture_output=True,
                               text=True, timeout=60)
        finally:
            fake.close()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(message, r.stderr)
        self.assertNotIn("Sanitizer", r.stderr)

    def test_huge_session_count(self):
        self.check_refused(lambda c, p: struct.pack(">I", 0xFFFFFFFF),
                           "sessions (at most", session=False)

    def test_cut_in_the_session_list(self):
        self.check_refused(lambda c, p: struct.pack(">I", 2) + session_rec(1, "h", "s")[:100],
                           "closed the connection", session=False, cut=True)

    def test_huge_stream_count(self):
        def answer(cmd, p):
            if cmd == 3:
                return struct.pack(">II", 1, 0x7FFFFFFF)
            return attach_flow()(cmd, p)
        self.check_refused(answer, "more streams (at most")

    def test_huge_packet(self):
        index = struct.pack(">QQQQQQQII", 0, 1 << 40, 1 << 40, 0, 0, 0, 0, 1, 0)
        self.check_refused(attach_flow(index=index), "impossible sizes")

    def test_packet_of_another_size(self):
        index = struct.pack(">QQQQQQQII", 0, 4096 * 8, 4096 * 8, 0, 0, 0, 0, 1, 0)
        self.check_refused(attach_flow(index=index, packet=struct.pack(">III", 1, 1 << 30, 0)),
                           "the relay sends 1073741824")

    def test_garbage_packet(self):
        index = struct.pack(">QQQQQQQII", 0, 64 * 8, 64 * 8, 0, 0, 0, 0, 1, 0)
        self.check_refused(attach_flow(index=index,
                                       packet=struct.pack(">III", 1, 64, 0) + b"\xff" * 64),
                           "byte offset")

    def test_garbage_metadata(self):
        self.check_refused(attach_flow(meta=b"\x00garbage" * 10), "metadata")

    def test_unknown_status(self):
        index = struct.pack(">QQQQQQQII", 0, 0, 0, 0, 0, 0, 0, 99, 0)
        self.check_refused(attach_flow(index=index), "unknown index status 99")

    def test_data_stream_without_metadata(self):
        self.check_refused(attach_flow(streams=[stream_rec(2, 1, 0, "h/s/ch_0")]),
                           "no metadata stream")


def main():
    if not os.path.exists(LTTNG_APP):
        print("skip: rtr_lttng_app not built (liblttng-ust-dev missing)")
        return SKIP
    for tool in ("lttng", "lttng-sessiond", "lttng-relayd"):
        if not shutil.which(tool):
            print("skip: %s not installed" % tool)
            return SKIP
    if os.getuid() == 0 and not shutil.which("setpriv"):
        print("skip: running as root without setpriv")
        return SKIP
    try:
        import bt2  # noqa: F401
    except ImportError:
        print("skip: python3-bt2 not installed")
        return SKIP
    sys.path.insert(0, HERE)
    prog = unittest.main(exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
