#!/usr/bin/env python3
"""net_seeds.py CORPUS_DIR: write the hand-made seeds of the relay and
live harnesses (fuzz_relay.c, fuzz_live.c) into CORPUS_DIR/relay and
CORPUS_DIR/live, as seed-*. Each is a well-formed conversation, built
from the layouts of src/net/net.h, src/relay/relay.h and
src/live/live_proto.h; the live viewer's seeds carry the trace of the
packet harness's seed (corpus/packet/one-packet) as the relay's metadata
and packet."""
import os
import struct
import sys

out = sys.argv[1]


def u16(v): return struct.pack(">H", v)
def u32(v): return struct.pack(">I", v)
def u64(v): return struct.pack(">Q", v)
def text(s): return u16(len(s)) + s.encode()
def fixed(s, n): return s.encode().ljust(n, b"\0")


def frame(t, payload=b""):
    return u32(0x52544E31) + u16(t) + u16(0) + u32(len(payload)) + payload


HELLO, CHALLENGE, AUTH, AUTH_FAIL = 1, 2, 3, 5
CREATE, ADD, META, CLOSE_ST, CLOSE_SE, CLOCK = 16, 17, 18, 19, 20, 21
ATTACH, PACKET, BEACON, SYNC = 32, 33, 34, 35
TRACE = "ust/uid/0/64-bit"


def put(harness, name, data):
    d = os.path.join(out, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def index_fields(size, content, seq):
    return (u64(size * 8) + u64(content * 8) + u64(100 * seq) + u64(100 * seq + 50) + u64(0)
            + u64(0) + u64(0) + u64(seq))


# ---- relay: control, data, handshakes, index files, wire ----
ctrl = (frame(CREATE, text("s1") + u64(1700000000) + u32(1000000) + u32(0))
        + frame(ADD, u64(1) + text(TRACE) + text("metadata") + u32(0) + u32(1))
        + frame(ADD, u64(1) + text(TRACE) + text("channel0") + u32(0) + u32(0))
        + frame(META, u64(1) + u64(0) + b"/* CTF 1.8 */\n")
        + frame(META, u64(1) + u64(14) + b"trace { major = 1; minor = 8; };\n")
        + frame(CLOCK, u64(123456789))
        + frame(CLOSE_ST, u64(2))
        + frame(CLOSE_SE, u64(1)))
put("relay", "ctrl", b"\0" + ctrl)
put("relay", "ctrl-bad-name", b"\0" + frame(CREATE, text("../x") + u64(0) + u32(0) + u32(0)))
pkt = bytes(range(32))
data = (frame(ATTACH, u64(1))
        + frame(PACKET, u64(2) + index_fields(len(pkt), 24, 2) + pkt)
        + frame(PACKET, u64(2) + index_fields(len(pkt), 32, 5) + pkt)
        + frame(BEACON, u64(2) + u64(1000))
        + frame(SYNC))
put("relay", "data", b"\1" + data)
put("relay", "data-no-attach", b"\1" + frame(PACKET, u64(2) + index_fields(8, 8, 0) + bytes(8)))
hello = u32(1) + u32(1) + bytes(range(32)) + text("fuzzhost")
put("relay", "hs-server", b"\2" + frame(HELLO, hello) + frame(AUTH, bytes(32)))
put("relay", "hs-server-role", b"\2" + frame(HELLO, u32(1) + u32(9) + bytes(32) + text("..")))
put("relay", "hs-client", b"\3" + frame(CHALLENGE, bytes(range(64))))
put("relay", "hs-client-fail",
    b"\3" + frame(AUTH_FAIL, u32(2 ** 32 - 13) + u64(0) + u64(0) + text("refused")))
idx_hdr = u32(0xC1F1DCC1) + u32(1) + u32(1) + u32(72)
entries = b""
for k in range(3):
    entries += u64(64 * k) + u64(64 * 8) + u64(40 * 8) + u64(100 * k) + u64(100 * k + 50) \
        + u64(0) + u64(0) + u64(1) + u64(k)
index = idx_hdr + entries
put("relay", "index", b"\4" + struct.pack("<H", len(index)) + index + bytes(192))
put("relay", "index-cut", b"\4" + struct.pack("<H", len(index)) + index + bytes(100))
put("relay", "wire", b"\5" + frame(ADD, u64(1) + text(TRACE) + text("channel0")))
put("relay", "wire-url", b"\5net://[::1]:5342:5343")
put("relay", "wire-path", b"\5" + TRACE.encode())

# ---- live: the server's commands, the viewer's replies, decoders ----


def cmd(c, payload=b""):
    return u64(len(payload)) + u32(c) + u32(0) + payload


CONNECT, LIST, ATTACH_S, NEXT, GETP, GETM, NEWS, CREATE_S, DETACH = range(1, 10)
connect = u64(0) + u32(2) + u32(4) + u32(1)
server = (cmd(CONNECT, connect) + cmd(LIST) + cmd(CREATE_S)
          + cmd(ATTACH_S, u64(1) + u64(0) + u32(1))
          + cmd(GETM, u64(1)) + cmd(GETM, u64(1))
          + cmd(NEXT, u64(2)) + cmd(GETP, u64(2) + u64(0) + u32(64))
          + cmd(NEXT, u64(2)) + cmd(GETP, u64(2) + u64(64) + u32(64))
          + cmd(NEXT, u64(2)) + cmd(NEWS, u64(1)) + cmd(DETACH, u64(1)))
put("live", "server", b"\0" + server)
put("live", "server-last", b"\0" + cmd(CONNECT, connect) + cmd(CREATE_S)
    + cmd(ATTACH_S, u64(1) + u64(0) + u32(2)) + cmd(NEXT, u64(2)) + cmd(NEXT, u64(1)))
put("live", "server-handshake", b"\0" + frame(HELLO, u32(1) + u32(3) + bytes(32) + text("v"))
    + frame(AUTH, bytes(32)))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "corpus/packet/one-packet"), "rb") as f:
    raw = f.read()
mlen = struct.unpack("<I", raw[:4])[0]
metadata, packet = raw[4:4 + mlen], raw[4 + mlen:4 + mlen + 4096]  # its first packet


def session(sid, host, name):
    return u64(sid) + u32(1000000) + u32(0) + u32(2) + fixed(host, 64) + fixed(name, 255)


def stream(sid, trace, meta, path, channel):
    return u64(sid) + u64(trace) + u32(meta) + fixed(path, 4096) + fixed(channel, 255)


hello_reply = u64(7) + u32(2) + u32(4) + u32(1)
listing = u32(2) + session(1, "h", "s") + session(2, "h", "other")
put("live", "client-list", b"\1" + hello_reply + listing)
attach = (hello_reply + listing + u32(1)
          + u32(1) + u32(2)
          + stream(1, 1, 1, "h/s-20240101-000000/" + TRACE + "/metadata", "metadata")
          + stream(2, 1, 0, "h/s-20240101-000000/" + TRACE + "/channel0_0", "channel0")
          + u64(len(metadata)) + u32(1) + metadata
          + u64(0) + u32(2)
          + u64(0) + u64(len(packet) * 8) + u64(len(packet) * 8) + u64(0) + u64(0) + u64(0)
          + u64(0) + u32(1) + u32(0)
          + u32(1) + u32(len(packet)) + u32(0) + packet
          + u64(0) * 7 + u32(3) + u32(0)
          + u32(4) + u32(0)
          + u32(1))
put("live", "client-attach", b"\2" + attach)
put("live", "client-retry", b"\2" + hello_reply + listing + u32(1) + u32(1) + u32(0)
    + u32(2) + u32(0) + u32(1) + u32(1))
put("live", "decode-stream", b"\3" + stream(5, 1, 0, "a/b", "channel0"))
put("live", "decode-url", b"\3net6://[::1]:5344/host/h/s")

# ---- regression inputs (each failed the harness before its fix) ----
# An empty packet was stored with a zero-size index entry, which live
# viewers refuse (and with it the whole session).
put("relay", "regress-empty-packet", b"\1" + frame(ATTACH, u64(1))
    + frame(PACKET, u64(2) + index_fields(0, 0, 2)))
# An index read back after a restart with an entry of size 0, and one
# whose content is larger than its packet.
bad = idx_hdr + (u64(0) + u64(0) + u64(0) + u64(0) * 6)
put("relay", "regress-index-empty-entry", b"\4" + struct.pack("<H", len(bad)) + bad + bytes(64))
bad = idx_hdr + (u64(0) + u64(64 * 8) + u64(65 * 8) + u64(0) * 6)
put("relay", "regress-index-content", b"\4" + struct.pack("<H", len(bad)) + bad + bytes(64))

# ---- cluster requests and chunk archives (mode 6: session 1 of the
# host, with its streams, already open by another connection) ----
CLUSTER_LISTEN, CLUSTER_TRIGGER, CLUSTER_DONE, ARCHIVE = 22, 23, 27, 30
put("relay", "cluster-listen", b"\6" + frame(CLUSTER_LISTEN, u64(1))
    + frame(CLUSTER_DONE, u64(1) + u32(0) + text("stored"))
    + frame(CLUSTER_DONE, u64(7) + u32(2 ** 32 - 5) + text("failed")))
put("relay", "cluster-trigger", b"\6" + frame(CREATE, text("fix") + u64(1700000000) + u32(0)
                                             + u32(0))
    + frame(CLUSTER_TRIGGER, u64(1) + u64(1700000000 * 10 ** 9) + u64(1))
    + frame(CLUSTER_TRIGGER, u64(1) + u64(1700000000 * 10 ** 9) + u64(1))
    + frame(ARCHIVE, u64(1) + text("") + text("20231114T221320-0"))
    + frame(ARCHIVE, u64(1) + text("chunk-1") + text("20231114T221320-1")))

# ---- netsink: a relay's replies to a session daemon (fuzz_netsink.c):
# each reply a u16 (length, bit 15 on a connection's last) then its
# bytes; a CLOCK_REPLY echoing 0 gets the CLOCK's own timestamp ----
REPLY, CLOCK_REPLY, CLUSTER_SNAPSHOT = 24, 25, 26


def unit(data, last=False):
    return struct.pack("<H", len(data) | (0x8000 if last else 0)) + data


def ok(value=0, value2=0, msg=""):
    return frame(REPLY, u32(0) + u64(value) + u64(value2) + text(msg))


def refused(errno, msg):
    return frame(REPLY, u32(2 ** 32 - errno) + u64(0) + u64(0) + text(msg))


clock = frame(CLOCK_REPLY, u64(0) + u64(1700000000 * 10 ** 9) + u64(1700000000 * 10 ** 9))
hello_units = b"".join(unit(clock) for _ in range(4)) + unit(ok(1))


def conns(*units_per_conn):
    out = b""
    for units in units_per_conn:
        for k, u in enumerate(units):
            out += unit(u, k == len(units) - 1)
    return out


def connection(after):
    """A control connection's replies: four clocks, the session, then
    `after`."""
    return [clock] * 4 + [ok(1)] + after


# scenario 0: open, metadata, packets, sync; connected again (stream 0
# has its first packet stored, stream 1 none); rotation, archive,
# cluster trigger, snapshot upload, close.
first = connection([ok(2), ok(3), ok(1), clock])
second = connection([ok(4, 1), ok(5, 0), ok(6), clock, ok(10), ok(11),
                     ok(0, 0, "fuzzhost/s-20231114-221320/archives/archive-0"),
                     ok(7, 3), ok(8), ok(9), clock, clock, ok()])
put("netsink", "session", b"\0" + conns(first, [ok(1), ok()], second,
                                        [ok(1), ok(), ok(), ok()]))
put("netsink", "session-refused", b"\0" + conns(
    first, [ok(1), ok()],
    connection([ok(4, 2), ok(5, 2), ok(6), clock, ok(10), ok(11), refused(17, "archive exists"),
                refused(16, "one request per second"), ok(8), ok(9), clock, clock, ok()]),
    [ok(1), ok(), ok(), ok()]))
put("netsink", "session-unasked-frames", b"\0" + conns(
    [clock + clock, clock, clock, clock, ok(1) + ok(2)], [ok(1)]))


def request(rid, session="s", name="cluster-1-20231114-221320"):
    return frame(CLUSTER_SNAPSHOT, u64(rid) + u64(1700000000 * 10 ** 9) + text(session)
                 + text("hostA") + text(name))


# scenario 0 with the relay away at the rotation (its sync unanswered):
# connected again for the next chunk's packets, each of the ended chunk's
# streams is added again (the relay has stream 0's packets up to seq 2,
# stream 1's up to 1), a header-only packet ends it there, then the new
# chunk's stream is added; the archive follows.
away = connection([ok(4, 1), ok(5, 0), ok(6)])
put("netsink", "rotation-relay-away", b"\0" + conns(
    first, [ok(1), ok()], away, [ok(1)],
    connection([ok(20, 3), ok(21), ok(22, 2), ok(23),
                ok(0, 0, "fuzzhost/s-20231114-221320/archives/archive-0"),
                ok(7, 3), ok(8), ok(9), clock, clock, ok()]),
    [ok(1), ok(), ok(), ok()]))

# scenario 1: a cluster listener; requests 1 and 2, 2 replayed, one of
# another session, a malformed name.
put("netsink", "listener", b"\1" + conns(
    connection([]), [ok(1)],
    [ok() + request(1) + request(2) + request(2) + request(3, "other")
     + request(4, name="../x")]))

# Regression inputs (each failed the harness before its fix):
# a relay's clock near 2^63 ns: the offset's sum overflowed (UBSan).
far = frame(CLOCK_REPLY, u64(0) + u64(2 ** 63 - 1) + u64(2 ** 63 - 1))
put("netsink", "regress-clock-far", b"\0" + conns([far] * 4 + [ok(1)], [ok(1)]))
# a refusal whose status is not an errno (INT32_MIN: -status overflows
# where it is shown), and a message with a terminal's escape sequence.
put("netsink", "regress-status-not-errno", b"\0" + conns(
    first, [ok(1), ok()],
    connection([ok(4, 1), ok(5, 0), ok(6), clock, ok(10), ok(11),
                frame(REPLY, u32(2 ** 31) + u64(0) + u64(0) + text("x")),
                ok(7, 3), ok(8), ok(9), clock, clock, ok()]),
    [ok(1), ok(), ok(), ok()]))
put("netsink", "regress-escape-in-message", b"\0" + conns(
    first, [ok(1), ok()],
    connection([ok(4, 1), ok(5, 0), ok(6), clock, ok(10), ok(11),
                ok(0, 0, "\x1b]0;owned\x07\x1b[2J"),
                refused(16, "\x1b[31mred"), ok(8), ok(9), clock, clock, ok()]),
    [ok(1), ok(), ok(), ok()]))
# the relay's side of the handshake (any peer on its port, without the
# secret) refusing with a terminal's escape sequence in its message.
put("relay", "regress-auth-fail-escape", b"\3" + frame(
    AUTH_FAIL, u32(2 ** 32 - 13) + u64(0) + u64(0) + text("\x1b]0;owned\x07\x1b[2Jno")))
