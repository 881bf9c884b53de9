"""A program speaking ringtraced's app protocol (src/proto/app_proto.h)
directly, for the daemon tests that need what libringtrace never sends:
thousands of event classes, frames held half-sent, replies never read.

RawApp registers N event classes raw:evK { u32 v } (K = 0..N-1) and
answers the daemon like the library does (SYNC -> SYNC_REPLY; CHANNEL
descriptors are closed, ENABLE entries counted) from a thread."""
import os
import socket
import struct
import threading
import time

from rt_abi import RT_ABI_VERSION

MAGIC = 0x31505452
HDR = struct.Struct("<IHHIi")
CTL_REQUEST, CTL_REPLY = 1, 2
(REGISTER, REGISTER_REPLY, EVENTS, CHANNEL, ENABLE, DISABLE_SESSION, GOODBYE,
 EVENTS_REPLY, SYNC, SYNC_REPLY) = range(16, 26)
RT_TYPE_U32 = 6


def frame(typ, payload=b"", status=0):
    return HDR.pack(MAGIC, 1, typ, len(payload), status) + payload


def _str(s):
    b = s.encode()
    return struct.pack("<B", len(b)) + b


def event_record(index, provider, name, fields=(("v", RT_TYPE_U32),)):
    out = struct.pack("<Ii", index, 6) + _str(provider) + _str(name)
    out += struct.pack("<B", len(fields))
    for fname, ftype in fields:
        out += struct.pack("<B", ftype) + _str(fname)
    return out


def event_list(n, first=0, provider="raw"):
    return struct.pack("<I", n) + b"".join(
        event_record(first + i, provider, f"ev{first + i}") for i in range(n))


def register_payload(nr_events, procname="rawapp"):
    pn = procname.encode()[:15].ljust(16, b"\0")
    return struct.pack("<IIIBBH", os.getpid(), os.getuid(), RT_ABI_VERSION, 8, 2, 0) + pn \
        + event_list(nr_events)


def connect(rundir):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.path.join(rundir, "ringtraced.sock"))
    except OSError:
        s.close()
        raise
    return s


def read_frame(sock):
    """One frame (type, status, payload), or None when the peer closed."""
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk, fds, _, _ = socket.recv_fds(sock, n - len(buf), 4)
            for fd in fds:
                os.close(fd)
            if not chunk:
                return None
            buf += chunk
        return buf
    hdr = exact(HDR.size)
    if hdr is None:
        return None
    magic, _, typ, length, status = HDR.unpack(hdr)
    assert magic == MAGIC
    body = exact(length) if length else b""
    if body is None:
        return None
    return typ, status, body


class RawApp:
    """Registers `nr_events` classes, then serves the daemon from a thread.
    register_status: the REGISTER_REPLY's status (None until it came, or
    when the daemon closed first); enabled and ids: the entries of the
    last ENABLE received (their number; index -> event id); synced: the
    `enabled` of each SYNC answered, in order."""

    def __init__(self, rundir, nr_events, procname="rawapp"):
        self.sock = connect(rundir)
        self.register_status = None
        self.replied = threading.Event()
        self.closed = threading.Event()
        self.enabled = 0
        self.ids = {}
        self.synced = []
        self.mute = False       # True: answers nothing more
        self.sock.sendall(frame(REGISTER, register_payload(nr_events, procname)))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            while True:
                f = read_frame(self.sock)
                if f is None:
                    break
                typ, status, body = f
                if typ == REGISTER_REPLY:
                    self.register_status = status
                    self.replied.set()
                elif typ == ENABLE:
                    n = struct.unpack_from("<I", body, 8)[0]
                    pairs = struct.unpack_from(f"<{2 * n}I", body, 16)
                    self.ids = dict(zip(pairs[0::2], pairs[1::2]))
                    self.enabled = n
                elif typ == SYNC and not self.mute:
                    self.synced.append(self.enabled)
                    self.sock.sendall(frame(SYNC_REPLY, body))
        except OSError:
            pass
        self.closed.set()
        self.replied.set()

    def wait_registered(self, timeout):
        self.replied.wait(timeout)
        return self.register_status

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)


def ctl_request(rundir, *entries, timeout=10):
    """A control request of key=value entries; returns (status, {key: value})."""
    s = connect(rundir)
    s.settimeout(timeout)
    payload = b"".join(e.encode() + b"\0" for e in entries)
    s.sendall(frame(CTL_REQUEST, payload))
    f = read_frame(s)
    s.close()
    if f is None:
        return None, {}
    _, status, body = f
    kv = {}
    for entry in body.split(b"\0"):
        if b"=" in entry:
            k, v = entry.split(b"=", 1)
            kv.setdefault(k.decode(), v.decode())
    return status, kv


def timed(fn, *args):
    t = time.monotonic()
    r = fn(*args)
    return r, time.monotonic() - t
