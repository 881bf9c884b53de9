"""relay_client - the relay protocol (src/net/net.h) spoken from Python, so
that the tests can be an honest daemon, a hostile one, or a replaying one,
byte by byte; and the relay started and stopped for them."""
import hashlib
import hmac
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

MAGIC = 0x52544e31
HELLO, CHALLENGE, AUTH, AUTH_OK, AUTH_FAIL = 1, 2, 3, 4, 5
CREATE_SESSION, ADD_STREAM, METADATA, CLOSE_STREAM, CLOSE_SESSION, CLOCK = 16, 17, 18, 19, 20, 21
REPLY, CLOCK_REPLY = 24, 25
DATA_ATTACH, PACKET = 32, 33
ROLE_CTRL, ROLE_DATA, ROLE_VIEWER = 1, 2, 3

# ctf_packet.h's header: magic, uuid, stream_id, stream_instance_id,
# timestamp_begin, timestamp_end, content_size, packet_size,
# packet_seq_num, events_discarded, cpu_id (little-endian, packed).
PKT_HDR = struct.Struct("<I16sIQQQQQQQI")


def frame(t, payload=b""):
    return struct.pack(">IHHI", MAGIC, t, 0, len(payload)) + payload


def text(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">H", len(b)) + b


def mac(key, side, role, host, nonce_c, nonce_r):
    msg = b"ringtrace-relay-1" + side + struct.pack(">I", role) + text(host) + nonce_c + nonce_r
    return hmac.new(key, msg, hashlib.sha256).digest()


def read_secret(path):
    with open(path) as f:
        return bytes.fromhex(f.read().strip())


class Conn:
    """One connection to a relay port."""

    def __init__(self, port, timeout=10.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sent = []          # every frame sent, as bytes (for replays)

    def close(self):
        self.s.close()

    def send(self, t, payload=b""):
        f = frame(t, payload)
        self.sent.append(f)
        self.s.sendall(f)

    def recv_exact(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise ConnectionResetError("closed by the relay")
            b += c
        return b

    def recv(self):
        """(type, payload) of the next frame."""
        magic, t, flags, n = struct.unpack(">IHHI", self.recv_exact(12))
        assert magic == MAGIC and flags == 0, (magic, flags)
        return t, self.recv_exact(n) if n else b""

    def closed_by_peer(self, timeout=10.0):
        """True when the relay closes the connection (reading returns EOF or
        a reset) within timeout."""
        self.s.settimeout(timeout)
        try:
            while self.s.recv(65536):
                pass
            return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def handshake(self, key, role, host, check_relay=True):
        """The client's side: returns "ok", or ("fail", message)."""
        nonce_c = os.urandom(32)
        self.send(HELLO, struct.pack(">II", 1, role) + nonce_c + text(host))
        t, p = self.recv()
        if t == AUTH_FAIL:
            return ("fail", reply_decode(p)[2])
        assert t == CHALLENGE, t
        nonce_r, mac_r = p[:32], p[32:]
        if check_relay and not hmac.compare_digest(mac_r, mac(key, b"R", role, host, nonce_c,
                                                              nonce_r)):
            return ("fail", "the relay does not know our secret")
        self.send(AUTH, mac(key, b"C", role, host, nonce_c, nonce_r))
        t, p = self.recv()
        if t == AUTH_FAIL:
            return ("fail", reply_decode(p)[2])
        assert t == AUTH_OK, t
        return "ok"

    def request(self, t, payload):
        """Send a request answered by REPLY: (status, value, message)."""
        self.send(t, payload)
        rt, p = self.recv()
        assert rt == REPLY, rt
        return reply_decode(p)

    def create_session(self, name, created, live_us=0, flags=0):
        return self.request(CREATE_SESSION, text(name) + struct.pack(">QII", created, live_us,
                                                                     flags))

    def add_stream(self, session, path, channel, cpu, metadata=False):
        return self.request(ADD_STREAM, struct.pack(">Q", session) + text(path) + text(channel) +
                            struct.pack(">II", cpu, 1 if metadata else 0))

    def metadata(self, stream, offset, data):
        self.send(METADATA, struct.pack(">QQ", stream, offset) + data)

    def attach(self, session):
        return self.request(DATA_ATTACH, struct.pack(">Q", session))

    def packet(self, stream, pkt):
        h = PKT_HDR.unpack_from(pkt)
        (_, _, sid, inst, tb, te, content, size, seq, disc, _) = h
        self.send(PACKET, struct.pack(">9Q", stream, size, content, tb, te, disc, sid, inst, seq) +
                  pkt)


def reply_decode(p):
    status, value, value2, n = struct.unpack_from(">iQQH", p)
    return status, value, p[22:22 + n].decode()


def packets(path):
    """The packets of a stream file, as bytes."""
    with open(path, "rb") as f:
        data = f.read()
    out, off = [], 0
    while off < len(data):
        size = PKT_HDR.unpack_from(data, off)[7] // 8
        out.append(data[off:off + size])
        off += size
    return out


def recorded_trace(tmp, ringtrace, burst, events=3000):
    """A small trace recorded locally in tmp/local (4 KiB packets: several
    per stream)."""
    import rtfixtures
    out = os.path.join(tmp, "local")
    env = rtfixtures.private_env(tmp, RINGTRACE_NO_DAEMON="1")
    r = subprocess.run([ringtrace, "record", "--subbuf-size", "4096", "-o", out, "--",
                        burst, str(events), "return"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return out


def add_trace(c, sid, trace):
    """Every trace under the directory `trace` added to session sid as a
    daemon would (its metadata sent, its streams added, under "ust/..."):
    [(stream id, the stream file's packets)]."""
    out = []
    for root, _, files in sorted(os.walk(trace)):
        if "metadata" not in files:
            continue
        rel = os.path.relpath(root, trace)
        path = "ust" if rel == "." else "ust/" + rel
        st, mid, msg = c.add_stream(sid, path, "metadata", 0, metadata=True)
        assert st == 0, msg
        with open(os.path.join(root, "metadata"), "rb") as f:
            c.metadata(mid, 0, f.read())
        for name in sorted(files):
            if name == "metadata" or "_" not in name:
                continue
            chan, cpu = name.rsplit("_", 1)
            st, stid, msg = c.add_stream(sid, path, chan, int(cpu))
            assert st == 0, msg
            out.append((stid, packets(os.path.join(root, name))))
    return out


def start_relay(relayd, env, out, log_path, extra=()):
    """ringtrace-relayd on ephemeral loopback ports: (process, control port,
    data port), once it listens."""
    log = open(log_path, "a")
    p = subprocess.Popen([relayd, "-o", out, "-C", "tcp://127.0.0.1:0",
                          "-D", "tcp://127.0.0.1:0", "-L", "tcp://127.0.0.1:0", *extra], env=env,
                         stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(log_path) as f:
            m = re.findall(r"control port [^ ]*:(\d+), data port [^ ]*:(\d+)", f.read())
        if m and len(m) > start_relay.seen.get(log_path, 0):
            start_relay.seen[log_path] = len(m)
            return p, int(m[-1][0]), int(m[-1][1])
        if p.poll() is not None:
            raise RuntimeError("the relay exited: " + open(log_path).read())
        time.sleep(0.02)
    p.kill()
    raise RuntimeError("the relay did not listen")


start_relay.seen = {}


def live_port(log_path):
    """The live port the relay logged last (it listens on an ephemeral one)."""
    with open(log_path) as f:
        m = re.findall(r"live port [^ ]*:(\d+)", f.read())
    return int(m[-1])


def restart_relay_on(relayd, env, out, log_path, ctrl, data):
    """The relay again on the given ports (after it was killed)."""
    log = open(log_path, "a")
    p = subprocess.Popen([relayd, "-o", out, "-C", "tcp://127.0.0.1:%d" % ctrl,
                          "-D", "tcp://127.0.0.1:%d" % data, "-L", "tcp://127.0.0.1:0"], env=env,
                         stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", ctrl), timeout=1).close()
            return p
        except OSError:
            time.sleep(0.02)
    p.kill()
    raise RuntimeError("the relay did not listen again")


class RelayCase:
    """A unittest.TestCase mixin: a relay of its own for each test, on
    ephemeral loopback ports (self.relay, .ctrl, .data, .live), with its
    secret (.secret, .key), output (.out), log (.log) and the environment
    that names them (.env). The test class sets `relayd`."""
    relayd = None
    CREATED = 1764000000    # 2025-11-24 16:00:00 UTC

    def setUp(self):
        import rtfixtures   # tests/support, on the path of every test here
        self.tmp = tempfile.mkdtemp(prefix="rt-relay-")
        self.secret = os.path.join(self.tmp, "secret")
        self.env = rtfixtures.private_env(self.tmp, RINGTRACE_RELAY_SECRET=self.secret)
        self.out = os.path.join(self.tmp, "out")
        self.log = os.path.join(self.tmp, "relay.log")
        self.relay, self.ctrl, self.data = start_relay(self.relayd, self.env, self.out,
                                                       self.log)
        self.live = live_port(self.log)
        self.key = read_secret(self.secret)

    def tearDown(self):
        if self.relay.poll() is None:
            self.relay.send_signal(signal.SIGTERM)
            self.relay.wait(timeout=10)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def logged(self):
        with open(self.log) as f:
            return f.read()

    def session(self, host, name="s1", live_us=0):
        """An authenticated control and data connection of `host` with
        session `name`: (ctrl, data, session id)."""
        c = Conn(self.ctrl)
        self.assertEqual(c.handshake(self.key, ROLE_CTRL, host), "ok")
        st, sid, msg = c.create_session(name, self.CREATED, live_us=live_us)
        self.assertEqual(st, 0, msg)
        d = Conn(self.data)
        self.assertEqual(d.handshake(self.key, ROLE_DATA, host), "ok")
        self.assertEqual(d.attach(sid)[0], 0)
        return c, d, sid
