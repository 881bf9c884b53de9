#!/usr/bin/python3
"""enable-event -u --filter: user rules' filters judged in the traced
program before anything is written (docs/filters.md). Programs record
events with integers and strings; rules with different filters on one
event, in one channel and in several, contexts, missing fields, events
emitted on a small alternate signal stack, call sites
that record by themselves (the fast site must not bypass a filter) and
version 1 call sites (which cannot be filtered first: a filtered channel
does not get their events, counted lost), and a hostile daemon (a proxy
damaging the compiled filters it sends: the program refuses them, goes on
and exits 0 with one warning). Every trace is read back with babeltrace2
and with our reader and checked event by event.

usage: test_filters.py BUILD_DIR
"""
import os
import re
import socket
import struct
import subprocess
import threading
import unittest

from apps_common import BUILD, AppCase, read_events
import rtfixtures

FASTSITE = os.path.join(BUILD, "tests/integration/fastsite")
ABI_V1 = os.path.join(BUILD, "tests/abi/abi_callsite_1")


def plain(events):
    """bt2's events as (name, payload) pairs, context fields left out."""
    return [(e["event"], {k: v for k, v in e.items()
                          if k not in ("event", "stream_class") and not k.startswith("ctx_")})
            for e in events]


def ours(path):
    """Our reader's events as (name, payload) pairs, in time order."""
    return [(e["name"], e["payload"]) for e in rtfixtures.rtr_dump(BUILD, path)]


def tick(tag, seq):
    return ("app:tick", {"seq": seq, "tag": tag, "value": 3 * seq})


class FilterCase(AppCase):
    def check_both(self, out, want):
        """The trace at `out` holds exactly `want`, for bt2 and our reader."""
        got = plain(read_events(out))
        self.assertEqual(got, want)
        self.assertEqual(ours(out), want)


class UserFilters(FilterCase):

    def test_two_rules_on_one_event(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        # Two rules on app:tick, each with its filter: recorded when one
        # passes. A glob on a string, integers, LTTng's precedence
        # (& before ==).
        self.rt("enable-event", "-u", "app:tick", "--filter", "seq < 5 && tag == \"al*\"")
        self.rt("enable-event", "-u", "app:tick",
                "--filter", "tag == \"beta\" && (value >= 60 || seq & 1 == 1)")
        # Fixed-size fields only (rt__record's flat payload).
        self.rt("enable-event", "-u", "app:warn", "--filter", "seq >= 3 && !(seq > 6)")
        p = self.program()
        self.rt("start")
        p.cmd("emit 30 alpha")
        p.cmd("emit 30 beta")
        p.cmd("emit 10 alphabet")
        p.cmd("warn 10")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        want = ([tick("alpha", i) for i in range(5)] +
                [tick("beta", i) for i in range(30) if i >= 20 or i & 1] +
                [tick("alphabet", i) for i in range(5)] +
                [("app:warn", {"seq": i}) for i in range(3, 7)])
        self.check_both(out, want)

    def test_unfiltered_rule_wins_and_channels_differ(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "f")
        self.rt("enable-channel", "-u", "u")
        self.rt("enable-event", "-u", "-c", "f", "app:tick", "--filter", "seq == 7")
        # In channel u a rule without a filter matches too: everything.
        self.rt("enable-event", "-u", "-c", "u", "app:tick", "--filter", "seq == 7")
        self.rt("enable-event", "-u", "-c", "u", "app:*")
        p = self.program()
        self.rt("start")
        p.cmd("emit 10 x")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        events = read_events(out)
        ids = {e["stream_class"] for e in events}
        self.assertEqual(len(ids), 2)
        f_id = min(ids)        # f was created first
        self.assertEqual(plain([e for e in events if e["stream_class"] == f_id]),
                         [tick("x", 7)])
        self.assertEqual(plain([e for e in events if e["stream_class"] != f_id]),
                         [tick("x", i) for i in range(10)])

    def test_contexts_and_missing_fields(self):
        out = self.out("t")
        p = self.program()
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ctx")
        self.rt("enable-channel", "-u", "missing")
        # Added while the program runs: sent with its next ENABLE.
        self.rt("enable-event", "-u", "-c", "ctx", "app:tick", "--filter",
                f"$ctx.vpid == {p.pid} && $ctx.vtid == {p.pid} && "
                "$ctx.procname == \"app_p*\" && $ctx.cpu_id >= 0 && seq < 3")
        self.rt("enable-event", "-u", "-c", "ctx", "app:warn", "--filter",
                f"$ctx.vpid != {p.pid}")
        # A field app:tick lacks makes the whole expression false (LTTng),
        # whatever else it says; so does a string compared with a number.
        for expr in ("nosuch == 0 || 1", "!(nosuch == 0)", "tag == 1 || seq == 1",
                     "$ctx.nosuch == 1 || 1", "$app.a:b == 1 || 1"):
            self.rt("enable-event", "-u", "-c", "missing", "app:tick", "--filter", expr)
        self.rt("start")
        p.cmd("emit 6 c")
        p.cmd("warn 4")
        self.rt("stop")
        self.assertEqual(p.exit(), (0, ""))
        self.check_both(out, [tick("c", i) for i in range(3)])

    def test_filter_on_a_small_signal_stack(self):
        """Events emitted by a SIGUSR1 handler on a 6 KiB alternate signal
        stack (less than the classic SIGSTKSZ, 8 KiB) with an
        inaccessible page below it, under a filter: the evaluation takes
        a few values, not 4 KiB, so the program goes on and the events
        that pass are recorded. LD_BIND_NOW: the dynamic linker's lazy
        binding would take its own stack in the handler."""
        if "ASAN_OPTIONS" in os.environ:
            self.skipTest("AddressSanitizer's frames (redzones, its handler) do not fit "
                          "a 6 KiB signal stack (docs/sanitizers.md)")
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-u", "app:tick", "--filter", "seq >= 2")
        self.rt("start")
        p = subprocess.run([os.path.join(BUILD, "tests/daemon/app_prog")],
                           input="sigstack 6144 10\nexit\n", capture_output=True, text=True,
                           env=dict(self.env, LD_BIND_NOW="1"), timeout=60)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout.splitlines()[1:], ["ok 10"])
        self.rt("stop")
        self.check_both(out, [tick("sig", s) for s in range(2, 10)])

    def test_fast_site_does_not_bypass_the_filter(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-u", "fastsite:*", "--filter", "v >= 4")
        self.rt("start")
        r = subprocess.run([FASTSITE, "100"], capture_output=True, text=True, env=self.env,
                           timeout=60)
        self.rt("stop")
        self.assertEqual(r.returncode, 0, r.stderr)
        # No call site recorded by itself: the library judged each event.
        self.assertRegex(r.stderr, r"fastsite: inline 0 of 10")
        # The other events lack v: the expression is false for them.
        events = read_events(out)
        self.assertEqual(plain(events), [("fastsite:by_hand", {"v": v}) for v in range(4, 10)])

    def test_version_1_call_sites(self):
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "f")
        self.rt("enable-channel", "-u", "u")
        # abi:text is written by version 1's rt__reserve/rt__commit: a
        # filtered channel cannot judge it first and does not get it
        # (counted lost); an unfiltered one does. abi:fixed goes through
        # rt__record and is filtered as usual.
        self.rt("enable-event", "-u", "-c", "f", "abi:text", "--filter", "n >= 0")
        self.rt("enable-event", "-u", "-c", "f", "abi:fixed", "--filter", "b > -3")
        self.rt("enable-event", "-u", "-c", "u", "abi:*")
        self.rt("start")
        r = subprocess.run([ABI_V1, "20"], capture_output=True, text=True, env=self.env,
                           timeout=60)
        self.rt("stop")
        self.assertEqual(r.returncode, 0, r.stderr)
        events = read_events(out)
        ids = sorted({e["stream_class"] for e in events})
        self.assertEqual(len(ids), 2)
        f = [e for e in events if e["stream_class"] == ids[0]]
        u = [e for e in events if e["stream_class"] == ids[1]]
        self.assertEqual([(e["event"], e["b"]) for e in f], [("abi:fixed", -i) for i in range(3)])
        self.assertEqual([(e["event"], e["n"]) for e in u if e["event"] == "abi:text"],
                         [("abi:text", i) for i in range(20)])
        # The 20 abi:text events channel f did not get are counted lost
        # (summary counts every stream's discarded events from 0).
        r = subprocess.run([os.path.join(BUILD, "src/cli/ringtrace"), "summary", out],
                           capture_output=True, text=True, env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"(\d+) events recorded, (\d+) lost", r.stdout + r.stderr)
        self.assertTrue(m, r.stdout + r.stderr)
        self.assertEqual(int(m.group(2)), 20)


HDR = struct.Struct("<IHHIi")
ENABLE = 20


class DamagingProxy:
    """Between programs (listening on `rundir`/ringtraced.sock) and the
    daemon at `daemon_sock`: frames go through unchanged, descriptors
    included, but for the ENABLE messages that carry filters, whose
    first filter's bytes `damage` rewrites (a hostile daemon)."""

    def __init__(self, rundir, daemon_sock, damage):
        os.makedirs(rundir, mode=0o700, exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(os.path.join(rundir, "ringtraced.sock"))
        self.sock.listen(8)
        self.daemon_sock, self.damage = daemon_sock, damage
        self.damaged = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                prog, _ = self.sock.accept()
            except OSError:
                return
            d = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            d.connect(self.daemon_sock)
            threading.Thread(target=self.pipe, args=(prog, d, False), daemon=True).start()
            threading.Thread(target=self.pipe, args=(d, prog, True), daemon=True).start()

    @staticmethod
    def read(sock, n, fds):
        data = b""
        while len(data) < n:
            chunk, more, _, _ = socket.recv_fds(sock, n - len(data), 4)
            if not chunk:
                return None
            data += chunk
            fds += more
        return data

    def pipe(self, src, dst, from_daemon):
        try:
            while True:
                fds = []
                hdr = self.read(src, HDR.size, fds)
                if hdr is None:
                    break
                length = HDR.unpack(hdr)[3]
                body = self.read(src, length, fds) if length else b""
                if body is None:
                    break
                if from_daemon and HDR.unpack(hdr)[2] == ENABLE and len(body) >= 16:
                    if struct.unpack_from("<I", body, 12)[0]:
                        body = self.rewrite(body)
                        hdr = HDR.pack(*HDR.unpack(hdr)[:3], len(body), HDR.unpack(hdr)[4])
                        self.damaged += 1
                socket.send_fds(dst, [hdr + body], fds) if fds else dst.sendall(hdr + body)
                for fd in fds:
                    os.close(fd)
        except OSError:
            pass
        for s_ in (src, dst):
            try:
                s_.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def rewrite(self, body):
        """The ENABLE (body, with filters) as the program gets it: its
        first filter's bytes damaged."""
        head, filters, uses = enable_parts(body)
        return enable_bytes(head, [self.damage(filters[0])] + filters[1:], uses)

    def close(self):
        self.sock.close()


class SavedSessions(FilterCase):
    def test_save_and_load_keep_the_filter(self):
        out, saved = self.out("t"), self.out("saved.txt")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-u", "app:tick", "--filter", "seq >= 2 && tag == \"k*\"")
        self.rt("save", "s", "-o", saved)
        with open(saved) as f:
            self.assertIn("filter=", f.read())
        self.rt("destroy", "s")
        self.rt("load", saved)
        self.assertIn('app:tick [filter: seq >= 2 && tag == "k*"] [enabled]', self.rt("list", "s"))
        p = self.program()
        self.rt("start", "s")
        p.cmd("emit 4 keep")
        p.cmd("emit 4 drop")
        self.rt("stop", "s")
        self.assertEqual(p.exit(), (0, ""))
        self.check_both(out, [tick("keep", i) for i in range(2, 4)])


def enable_parts(body):
    """An ENABLE with filters (app_proto.h) as its key and entries, its
    filters' bytes and its uses [(entry, filter)]."""
    n, f = struct.unpack_from("<II", body, 8)
    at = 16 + 8 * n
    head, filters = body[:at], []
    for _ in range(f):
        length = struct.unpack_from("<I", body, at)[0]
        filters.append(body[at + 4:at + 4 + length])
        at += 4 + length
    nu = struct.unpack_from("<I", body, at)[0]
    return head, filters, [struct.unpack_from("<II", body, at + 4 + 8 * i) for i in range(nu)]


def enable_bytes(head, filters, uses):
    out = head[:12] + struct.pack("<I", len(filters)) + head[16:]
    out += b"".join(struct.pack("<I", len(f)) + f for f in filters)
    return out + struct.pack("<I", len(uses)) + b"".join(struct.pack("<II", *u) for u in uses)


class RewritingProxy(DamagingProxy):
    """A DamagingProxy whose ENABLEs with filters `rewrite` changes as a
    whole (parts in, parts out)."""

    def __init__(self, rundir, daemon_sock, rewrite):
        super().__init__(rundir, daemon_sock, None)
        self.rewrite_parts = rewrite

    def rewrite(self, body):
        return enable_bytes(*self.rewrite_parts(*enable_parts(body)))


def app_prog_through(case, proxy_class, change, script):
    """app_prog run with `script` on stdin, registered through a
    proxy_class proxy (`change` its damage or rewrite) to case's daemon:
    the proxy and the finished process."""
    proxy = proxy_class(os.path.join(case.tmp, "proxy"),
                        os.path.join(case.env["RINGTRACE_RUNDIR"], "ringtraced.sock"), change)
    env = dict(case.env, RINGTRACE_RUNDIR=os.path.join(case.tmp, "proxy"))
    try:
        return proxy, subprocess.run([os.path.join(BUILD, "tests/daemon/app_prog")],
                                     input=script, capture_output=True, text=True, env=env,
                                     timeout=60)
    finally:
        proxy.close()


class HostileDaemon(AppCase):
    def run_damaged(self, damage, why, proxy_class=DamagingProxy,
                    message="filter 0 of ENABLE refused", expr="seq == 3"):
        """app_prog registered through a proxy that damages its filters
        (or its ENABLE): it must go on, exit 0 with one warning, and
        record nothing unfiltered."""
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-u", "app:tick", "--filter", expr)
        self.rt("start")
        proxy, p = app_prog_through(self, proxy_class, damage, "emit 50 x\nemit 50 y\nexit\n")
        self.rt("stop")
        self.assertGreater(proxy.damaged, 0)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(message, lines[0])
        self.assertIn(why, lines[0])
        self.assertEqual(plain(read_events(out)) if os.path.exists(out) else [], [])

    def test_bad_magic(self):
        self.run_damaged(lambda b: b"XXXX" + b[4:], "bad header")

    def test_reference_past_the_table(self):
        # "seq == 3" is REF 0, CONST 0, EQ: the first instruction's
        # operand (filter_wire.c: byte 28) made the program's 6th ref.
        self.run_damaged(lambda b: b[:28] + struct.pack("<I", 5) + b[32:], "instruction 0: reference 5 of 1")


    def test_repeated_use(self):
        # The entry's use of filter 0 sent twice: the program would bind
        # and run it twice per event (10,000 times: 10^4 slower).
        self.run_damaged(lambda head, filters, uses: (head, filters, [uses[0]] + uses),
                         "malformed ENABLE message", RewritingProxy, message="daemon")

    def test_too_much_filter_per_event(self):
        # 256 filters (one program 256 times) on one entry, 121
        # comparisons each: over 65536 instructions per event.
        expr = "||".join(["seq==9"] * 120 + ["seq==3"])
        self.run_damaged(lambda head, filters, uses: (head, filters[:1] * 256,
                                                      [(uses[0][0], k) for k in range(256)]),
                         "the filters of entry 0 of ENABLE have more than 65536 instructions",
                         RewritingProxy, message="daemon", expr=expr)


class HonestDaemon(AppCase):
    def test_same_filter_twice_is_one_use(self):
        """Two rules with the same filter on one event ('app:*' and
        app:tick): the ENABLE names it once for the event (the program
        refuses repeated uses), and the trace holds each event once."""
        out = self.out("t")
        self.rt("create", "s", "-o", out)
        self.rt("enable-event", "-u", "app:*", "--filter", "seq == 3")
        self.rt("enable-event", "-u", "app:tick", "--filter", "seq == 3")
        self.rt("start")
        seen = []
        _, p = app_prog_through(self, RewritingProxy,
                                lambda head, filters, uses: seen.append(uses) or
                                (head, filters, uses), "emit 5 x\nwarn 5\nexit\n")
        self.rt("stop")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertTrue(seen)
        for uses in seen:
            self.assertEqual(uses, sorted(set(uses)))
        self.assertEqual(plain(read_events(out)),
                         [tick("x", 3), ("app:warn", {"seq": 3})])


class Refusals(AppCase):
    def test_syntax_errors_name_the_column(self):
        self.rt("create", "s", "-o", self.out("t"))
        for expr, col in (("seq ==", 7), ("seq == 1 &&& x", 12), ("(seq", 1)):
            r = subprocess.run([os.path.join(BUILD, "src/cli/ringtrace"), "enable-event",
                                "-u", "app:tick", "--filter", expr],
                               capture_output=True, text=True, env=self.env, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(f"filter:1:{col}:", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
