#!/usr/bin/python3
"""Programs facing a broken daemon: a fake ringtraced (this script) that
accepts and sends garbage, never answers, closes in the middle of a
message, or sends a malformed buffer-set message. Each time the traced
program must run to completion, exit 0 and print at most one warning.
Also: no daemon at all, and RINGTRACE_NO_DAEMON=1 (start cost reported,
not asserted).

usage: test_apps_faults.py BUILD_DIR
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import fcntl
import time

from rt_abi import RT_ABI_VERSION

MAGIC = 0x31505452
HDR = struct.Struct("<IHHIi")
REGISTER, REGISTER_REPLY, CHANNEL, ENABLE = 16, 17, 19, 20


def frame(typ, payload=b"", status=0):
    return HDR.pack(MAGIC, 1, typ, len(payload), status) + payload


class FakeDaemon:
    """Listens on RUNDIR/ringtraced.sock; `behaviour(conn)` runs for each
    connection in its own thread."""

    def __init__(self, rundir, behaviour):
        self.path = os.path.join(rundir, "ringtraced.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.behaviour = behaviour
        self.first_frames = []
        self.conns = []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def read_frame(self, conn):
        hdr = b""
        while len(hdr) < HDR.size:
            chunk = conn.recv(HDR.size - len(hdr))
            if not chunk:
                return None
            hdr += chunk
        magic, ver, typ, length, status = HDR.unpack(hdr)
        assert magic == MAGIC and ver == 1, "bad frame from the program"
        body = b""
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            if not chunk:
                return None
            body += chunk
        return typ, body

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        try:
            f = self.read_frame(conn)
            self.first_frames.append(f)
            self.behaviour(conn)
        except OSError:
            pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def garbage(conn):
    conn.sendall(os.urandom(64) + b"\xff" * 32)
    time.sleep(5)


def silent(conn):
    time.sleep(5)


def close_mid(conn):
    conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 0, 0))[:10])
    conn.close()


def bad_channel(conn):
    # A CHANNEL without its descriptor and with nonsense sizes, then a
    # valid-looking reply: the program must reject the channel and go on.
    conn.sendall(frame(CHANNEL, b"\x01" * 52))
    conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
    time.sleep(5)


def unsealed_channel(conn):
    # A well-formed CHANNEL whose memfd a daemon could still truncate
    # under the program's mapping (its next event would then die of
    # SIGBUS): the program must refuse it before mapping it.
    size = 1 << 20
    fd = os.memfd_create("unsealed", os.MFD_CLOEXEC)
    os.ftruncate(fd, size)
    body = struct.pack("<QQIIQ", 1, 1, 0, 0, size) + b"\x11" * 16 + struct.pack("<I", 0)
    socket.send_fds(conn, [frame(CHANNEL, body)], [fd])
    os.close(fd)
    conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
    time.sleep(5)


def late_garbage(conn):
    # Registration succeeds, garbage comes later while the program traces.
    conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
    time.sleep(0.3)
    conn.sendall(frame(ENABLE, b"\x07" * 11))
    time.sleep(5)


TRIGGERS, EVENTS, EVENTS_REPLY = 28, 18, 23
RTTR_MAGIC, RING_SLOTS, SLOT_SIZE = 0x52545452, 8, 128


def ring_fd(sealed=True, slots=RING_SLOTS):
    """A notification ring (src/proto/trig_ring.h) in a memfd."""
    fd = os.memfd_create("ring", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 256 + RING_SLOTS * SLOT_SIZE)
    os.pwrite(fd, struct.pack("<IIII", RTTR_MAGIC, 1, slots, SLOT_SIZE), 0)
    if sealed:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd


def triggers_body(records):
    """TRIGGERS (app_proto.h): records of (token, indices, filter bytes,
    captures)."""
    out = struct.pack("<II", len(records), 0)
    for token, indices, filt, caps in records:
        out += struct.pack("<QIIII", token, len(indices), len(filt), len(caps), 0)
        out += b"".join(struct.pack("<I", i) for i in indices) + filt
        out += b"".join(struct.pack("<B", len(c)) + c.encode() for c in caps)
    return out


def send_triggers(conn, records, fd):
    if fd is None:
        conn.sendall(frame(TRIGGERS, triggers_body(records)))
    else:
        socket.send_fds(conn, [frame(TRIGGERS, triggers_body(records))], [fd])
        os.close(fd)


def triggers_after_events(records, fd_fn, then=None):
    """Register the program, and answer its EVENTS with TRIGGERS on
    every event it registered (records: (token, filter, captures))."""
    def behaviour(conn):
        conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
        while True:
            f = FakeDaemon.read_frame(None, conn)
            if f is None:
                return
            if f[0] == EVENTS:
                n = struct.unpack_from("<I", f[1])[0]
                fd = fd_fn()
                send_triggers(conn, [(t, list(range(n)), filt, caps)
                                     for t, filt, caps in records], fd)
                conn.sendall(frame(EVENTS_REPLY))
                if then:
                    then(conn, fd)
                    return
    return behaviour


def unsealed_ring(conn):
    # A ring a daemon could truncate under the program's mapping.
    conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
    send_triggers(conn, [], ring_fd(sealed=False))
    time.sleep(5)


def triggers_without_ring(conn):
    conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
    send_triggers(conn, [], None)
    time.sleep(5)


def scribble(conn, fd):
    # The daemon scribbles over the ring while the program writes its
    # notifications: head, tail and lost anywhere, the geometry changed,
    # slots overwritten. The program only loses notifications.
    size = 256 + RING_SLOTS * SLOT_SIZE
    # Once the program writes (it mapped the ring: head moved).
    deadline = time.monotonic() + 10
    while os.pread(fd, 8, 64) == bytes(8) and time.monotonic() < deadline:
        time.sleep(0.001)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        junk = os.urandom(size - 16)
        os.pwrite(fd, struct.pack("<II", 1 << 30, 3), 8)
        os.pwrite(fd, junk[:size - 16], 16)
        time.sleep(0.001)
    time.sleep(5)


keep_fd = []     # the ring of the scribbled-ring case, kept to write into


def refuse(conn):
    conn.sendall(frame(REGISTER_REPLY, b"", status=-13))
    time.sleep(5)


def refuse_too_many(conn):
    # The daemon's per-program cap on event classes (-E2BIG).
    conn.sendall(frame(REGISTER_REPLY, b"", status=-7))
    time.sleep(5)


def run_program(prog, rundir, extra_env=None, commands=("emit 2000 a", "spin 300", "exit")):
    env = dict(os.environ, RINGTRACE_RUNDIR=rundir)
    env.pop("RINGTRACE_OUTPUT", None)
    env.pop("RINGTRACE_NO_DAEMON", None)
    env.update(extra_env or {})
    t0 = time.monotonic()
    p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True)
    ready = p.stdout.readline()
    start_ms = (time.monotonic() - t0) * 1000
    assert ready.startswith("ready"), f"no ready line: {ready!r}"
    out, err = p.communicate("\n".join(commands) + "\n", timeout=30)
    return p.returncode, start_ms, out, err, time.monotonic() - t0


def check_run(name, prog, behaviour, warning=None, timeout_ms=2000, quiet=False):
    """`timeout_ms` is the program's registration timeout: generous, so that
    on a loaded machine the fake's answer is what the program reacts to,
    not the clock; None keeps the default (the case about the timeout)."""
    extra = {} if timeout_ms is None else {"RINGTRACE_DAEMON_TIMEOUT_MS": str(timeout_ms)}
    with tempfile.TemporaryDirectory(prefix="rt-faults-") as rundir:
        fake = FakeDaemon(rundir, behaviour)
        try:
            rc, start_ms, out, err, total = run_program(prog, rundir, extra)
        finally:
            fake.close()
        assert rc == 0, f"{name}: exit status {rc}, stderr {err!r}"
        assert out.split("\n")[:1] == ["ok"], f"{name}: output {out!r}"
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) <= 1, f"{name}: more than one warning: {lines}"
        assert all(l.startswith("ringtrace: ") for l in lines), f"{name}: {lines}"
        if warning:
            assert len(lines) == 1 and warning in lines[0], f"{name}: {lines}"
        assert not (quiet and lines), f"{name}: {lines}"
        assert total < 30, f"{name}: hung"
        # The program did register: check the first frame it sent.
        assert fake.first_frames and fake.first_frames[0], f"{name}: no REGISTER"
        typ, body = fake.first_frames[0]
        assert typ == REGISTER, f"{name}: first frame type {typ}"
        pid, uid, abi = struct.unpack_from("<III", body)
        assert uid == os.getuid() and abi == RT_ABI_VERSION, f"{name}: REGISTER {pid} {uid} {abi}"
        procname = body[16:32].split(b"\0")[0].decode()
        assert procname == "app_prog", f"{name}: procname {procname!r}"
        print(f"{name}: exit 0, {len(lines)} warning(s), start {start_ms:.1f} ms, "
              f"total {total:.2f} s")


def check_register_payload(prog):
    """The REGISTER event list, once the program's own events are known
    (they come in an EVENTS message after the constructor)."""
    frames = []

    def record_all(conn):
        conn.sendall(frame(REGISTER_REPLY, struct.pack("<II", 1, 0)))
        while True:
            f = fake.read_frame(conn)
            if f is None:
                return
            frames.append(f)
            if f[0] == 18:  # EVENTS: acknowledge
                conn.sendall(frame(23))

    with tempfile.TemporaryDirectory(prefix="rt-faults-") as rundir:
        fake = FakeDaemon(rundir, record_all)
        try:
            rc, _, _, err, _ = run_program(prog, rundir, {"RINGTRACE_DAEMON_TIMEOUT_MS": "2000"},
                                           commands=("exit",))
        finally:
            time.sleep(0.1)
            fake.close()
    assert rc == 0, err
    assert err.strip() == "", err
    types = [f[0] for f in frames]
    assert 18 in types, f"no EVENTS message: {types}"
    assert types[-1] == 22, f"no GOODBYE at exit: {types}"
    body = frames[types.index(18)][1]
    names = []
    pos = 4
    (count,) = struct.unpack_from("<I", body)
    for _ in range(count):
        index, level = struct.unpack_from("<Ii", body, pos)
        pos += 8
        strs = []
        for _ in range(2):
            n = body[pos]
            strs.append(body[pos + 1:pos + 1 + n].decode())
            pos += 1 + n
        nf = body[pos]
        pos += 1
        fields = []
        for _ in range(nf):
            typ = body[pos]
            n = body[pos + 1]
            fields.append((body[pos + 2:pos + 2 + n].decode(), typ))
            pos += 2 + n
        names.append((":".join(strs), level, fields))
    assert pos == len(body), "trailing bytes in EVENTS"
    by = {n: (l, f) for n, l, f in names}
    assert by["app:tick"] == (6, [("seq", 8), ("tag", 12), ("value", 5)]), by
    assert by["app:warn"] == (4, [("seq", 8)]), by
    print("register/events payload: ok", sorted(by))


def main():
    build = sys.argv[1]
    prog = os.path.join(build, "tests", "daemon", "app_prog")
    check_run("silent", prog, silent, timeout_ms=None)
    keep_fd[:] = [ring_fd()]
    for name, behaviour, warning in [("garbage", garbage, None),
                                     ("close-mid-message", close_mid, None),
                                     ("bad-channel", bad_channel, None),
                                     ("unsealed-channel", unsealed_channel, "not sealed"),
                                     ("late-garbage", late_garbage, None),
                                     ("refused", refuse, None),
                                     ("refused-too-many", refuse_too_many,
                                      "more event classes than the daemon takes"),
                                     ("unsealed-ring", unsealed_ring,
                                      "the trigger notification ring is not one"),
                                     ("triggers-without-ring", triggers_without_ring,
                                      "triggers without a notification ring"),
                                     ("ring-too-small", triggers_after_events(
                                         [(1, b"", [])], lambda: ring_fd(slots=64)),
                                      "the trigger notification ring is not one"),
                                     ("bad-trigger-filter", triggers_after_events(
                                         [(1, b"RTF1" + os.urandom(40), [])], ring_fd),
                                      "a trigger's filter"),
                                     ("scribbled-ring", triggers_after_events(
                                         [(1, b"", ["seq", "tag", "$ctx.vtid"])],
                                         lambda: os.dup(keep_fd[0]),
                                         lambda conn, fd: scribble(conn, keep_fd[0])),
                                      "")]:
        keep_fd[:] = [ring_fd()]
        check_run(name, prog, behaviour, warning, quiet=warning == "")
    check_register_payload(prog)

    with tempfile.TemporaryDirectory(prefix="rt-faults-") as rundir:
        for label, env in [("no daemon", {}), ("RINGTRACE_NO_DAEMON=1",
                                                {"RINGTRACE_NO_DAEMON": "1"})]:
            times = []
            for _ in range(5):
                rc, start_ms, out, err, _ = run_program(prog, rundir, env,
                                                        ("emit 10 a", "exit"))
                assert rc == 0 and err == "", (rc, err)
                times.append(start_ms)
            print(f"start to 'ready' with {label}: median {sorted(times)[2]:.1f} ms "
                  f"(report only)")
    print("PASS")


if __name__ == "__main__":
    main()
