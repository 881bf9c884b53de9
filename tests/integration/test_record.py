#!/usr/bin/python3
"""Integration tests of `ringtrace record`: traces are read back with
babeltrace2's Python bindings (bt2) and every field value is checked.

usage: test_record.py BUILD_DIR
"""
import math
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import bt2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
TYPES = os.path.join(BUILD, "tests/integration/types")
BURST = os.path.join(BUILD, "tests/integration/burst")
CTXTHREADS = os.path.join(BUILD, "tests/integration/ctxthreads")
STRPARTS = os.path.join(BUILD, "tests/integration/strparts")
STRPARTS_SSE = os.path.join(BUILD, "tests/integration/strparts_sse")
FASTSITE = os.path.join(BUILD, "tests/integration/fastsite")
FASTSITE_NOINLINE = os.path.join(BUILD, "tests/integration/fastsite_noinline")
FASTSITE_O0 = os.path.join(BUILD, "tests/integration/fastsite_O0")
# fastsite's events of each payload size: name -> field widths in bits.
FASTSITE_SIZES = {"s0": [], "s1": [8], "s3": [8, 16], "s5": [32, 8], "s28": [32] * 7,
                  "s32": [64] * 4, "s33": [64] * 4 + [8], "s60": [32] * 15}
DLHOST = os.path.join(BUILD, "tests/integration/dlhost")
NOTHREAD = os.path.join(BUILD, "tests/integration/nothread")
PLUGIN = os.path.join(BUILD, "tests/integration/plugin.so")


def record(trace, cmd, *opts, env=None):
    """Run ringtrace record; return the CompletedProcess."""
    return subprocess.run([RINGTRACE, "record", "-o", trace, *opts, "--", *cmd],
                          capture_output=True, text=True, env=env, timeout=120)


# All event messages and the discarded-event counts, via bt2.
read_trace = rtfixtures.bt2_read


def payload(msg):
    return msg.event.payload_field


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-test-")
        self.trace = os.path.join(self.tmp.name, "trace")

    def tearDown(self):
        self.tmp.cleanup()


class FieldTypes(Base):
    """Every supported type round-trips with its exact value."""

    def test_all_types(self):
        """With the default contexts (the library's general path) and
        without (strings and sequences in one rseq section,
        src/lib/parts_section.h; fixed-size events by the call site)."""
        for name, opts in (("contexts", []), ("none", ["-t", "none"])):
            with self.subTest(contexts=name):
                self.check_all_types(os.path.join(self.tmp.name, name), opts)

    def check_all_types(self, trace, opts):
        n = 300
        t0 = time.time()
        r = record(trace, [TYPES, str(n)], *opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"done {n}\n")  # the program's output stays clean
        self.assertIn("events recorded", r.stderr)
        events, discarded, lost = read_trace(trace)
        self.assertEqual((discarded, lost), (0, 0))
        by = {}
        for m in events:
            by.setdefault(m.event.name, []).append(m)

        ints = by["types:ints"]
        self.assertEqual(len(ints), n)
        for i, m in enumerate(ints):
            p = payload(m)
            self.assertEqual(int(p["s8"]), struct.unpack("b", struct.pack("B", (-i) & 0xff))[0])
            self.assertEqual(int(p["u8"]), (i * 3) & 0xff)
            self.assertEqual(int(p["s16"]), struct.unpack("h", struct.pack("H", (-i * 100) & 0xffff))[0])
            self.assertEqual(int(p["u16"]), (i * 100) & 0xffff)
            self.assertEqual(int(p["s32"]), -i * 100000)
            self.assertEqual(int(p["u32"]), i * 100000)
            self.assertEqual(int(p["s64"]), -i * (1 << 40))
            self.assertEqual(int(p["u64"]), i * (1 << 40) + (1 << 63))

        words = ["alpha", "", 'a "quoted" \\ word\twith tab']
        misc = by["types:misc"]
        self.assertEqual(len(misc), n)
        for i, m in enumerate(misc):
            p = payload(m)
            self.assertEqual(float(p["f"]), i * 0.5)
            self.assertTrue(math.isclose(float(p["d"]), i / 4.0))
            self.assertEqual(int(p["b"]), i % 2)
            self.assertEqual(list(p["b"].labels), ["true" if i % 2 else "false"])
            self.assertEqual(str(p["str"]), words[i % 3])
            self.assertEqual(int(p["ptr"]), 0x1000 + i)
            self.assertEqual([int(x) for x in p["bytes"]],
                             [0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x7f, 0x80, 0][: i % 9])
            self.assertEqual(int(p["ch"]), ord("a") + i % 26)

        self.assertEqual(len(by["types:empty"]), n)
        for m in by["types:empty"]:
            self.assertEqual(len(payload(m)), 0)
        many = by["types:many"]
        self.assertEqual(len(many), n)
        for i, m in enumerate(many):
            p = payload(m)
            self.assertEqual([int(p[f"f{k}"]) for k in range(1, 21)],
                             [i + k for k in range(1, 21)])
            self.assertEqual(m.event.cls.log_level, bt2.EventClassLogLevel.DEBUG)
        self.assertEqual(ints[0].event.cls.log_level, bt2.EventClassLogLevel.INFO)

        s = payload(by["types:strings"][0])
        self.assertEqual(str(s["null"]), "(null)")
        self.assertEqual(str(s["longstr"]), "x" * 300)
        g = payload(by["types:changed"][0])
        self.assertEqual((str(g["grown"]), str(g["shrunk"]), str(g["shrunk12"]),
                          str(g["shrunk300"]), [int(x) for x in g["b"]], int(g["k"])),
                         ("abc", "ab###", "abcdefghi###", "x" * 100 + "#" * 200, [1, 2], 77))

        # 40 distinct events, recorded twice: ids past 30 use the extended
        # header; the second batch comes after a pause longer than the
        # 27-bit compact timestamp covers.
        for k in range(40):
            got = by[f"types:id{k}"]
            self.assertEqual([int(payload(m)["k"]) for m in got], [k, k])
        pause = by["types:after_pause"][0]
        before = by["types:strings"][0]
        gap = pause.default_clock_snapshot.ns_from_origin - before.default_clock_snapshot.ns_from_origin
        self.assertGreaterEqual(gap, 140_000_000)
        self.assertLess(gap, 2_000_000_000)

        # Wall-clock time, monotonic per stream.
        first = events[0].default_clock_snapshot.ns_from_origin / 1e9
        self.assertLess(abs(first - t0), 30)
        last = {}
        for m in events:
            cpu = int(m.event.packet.context_field["cpu_id"])
            ts = m.default_clock_snapshot.ns_from_origin
            self.assertGreaterEqual(ts, last.get(cpu, 0))
            last[cpu] = ts

    def test_event_filter_and_loglevel(self):
        r = record(self.trace, [TYPES, "20"], "-e", "types:i*", "-e", "types:strings")
        self.assertEqual(r.returncode, 0, r.stderr)
        names = {m.event.name for m in read_trace(self.trace)[0]}
        self.assertIn("types:ints", names)
        self.assertIn("types:id39", names)
        self.assertIn("types:strings", names)
        self.assertNotIn("types:misc", names)
        self.assertNotIn("types:many", names)
        trace2 = os.path.join(self.tmp.name, "t2")
        r = record(trace2, [TYPES, "20"], "--loglevel", "INFO")
        self.assertEqual(r.returncode, 0, r.stderr)
        names = {m.event.name for m in read_trace(trace2)[0]}
        self.assertIn("types:misc", names)
        self.assertNotIn("types:many", names)  # DEBUG is less severe than INFO


class InlineCallSites(Base):
    """Call sites that record by themselves (ringtrace/internal/fast.h)."""

    def check(self, trace, n):
        events, discarded, lost = read_trace(trace)
        self.assertEqual((discarded, lost), (0, 0))
        hand = [int(payload(m)["v"]) for m in events if m.event.name == "fastsite:by_hand"]
        self.assertEqual(hand, list(range(10)))
        seq = [(int(payload(m)["seq"]), int(payload(m)["sq"]))
               for m in events if m.event.name == "fastsite:seq"]
        self.assertEqual(seq, [(i, i * i) for i in range(n)])
        # Each size's events, in order, every field as fastsite.c computed it.
        for name, widths in FASTSITE_SIZES.items():
            got = [[int(f) for f in (payload(m) or {}).values()]
                   for m in events if m.event.name == "fastsite:" + name]
            want = [[(i * 7 + k) % (1 << w) for k, w in enumerate(widths)]
                    for i in range(min(n, 2000))]
            self.assertEqual(got, want, name)

    def test_inline_across_subbuffers(self):
        """Without contexts (-t none) the call site records by itself, and
        events that fill many sub-buffers all read back, in order."""
        n = 20000  # 400 KB of events: fits the buffers, even with no consumer
        r = record(self.trace, [FASTSITE, str(n)], "--subbuf-size", "4k", "--num-subbuf", "256",
                   "-t", "none")
        self.assertEqual(r.returncode, 0, r.stderr)
        # The first event of a sub-buffer (and one whose rseq section a
        # preemption aborted) calls the library: at least one of ten
        # after the first is the call site's own.
        inline = re.search(r"fastsite: inline (\d+) of 10", r.stderr)
        self.assertTrue(inline, r.stderr)
        self.assertGreater(int(inline.group(1)), 0)
        self.assertNotIn("fast site left", r.stderr)
        self.check(self.trace, n)

    def test_inline_unoptimized(self):
        """Call sites built with -O0 record by themselves too."""
        r = record(self.trace, [FASTSITE_O0, "3000"], "-t", "none")
        self.assertEqual(r.returncode, 0, r.stderr)
        inline = re.search(r"fastsite: inline (\d+) of 10", r.stderr)
        self.assertTrue(inline and int(inline.group(1)) > 0, r.stderr)
        self.check(self.trace, 3000)

    def test_library_without_tsc_or_rseq(self):
        """Without the TSC as clock, or without rseq, no fast site is
        published: call sites call the library and record the same; so
        do call sites built with RT_NO_INLINE."""
        for name, prog, opts, env in (
                ("mono", FASTSITE, ["--clock", "monotonic"], None),
                ("atomic", FASTSITE, [], dict(os.environ, RINGTRACE_RSEQ="0")),
                ("noinline", FASTSITE_NOINLINE, [], None)):
            trace = os.path.join(self.tmp.name, name)
            r = record(trace, [prog, "100"], *opts, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("fastsite: inline 0 of 10", r.stderr)
            self.check(trace, 100)


class Contexts(Base):
    """Events with contexts: the library records an event of fixed-size
    fields in one rseq section, its contexts copied from a per-thread cache
    (src/lib/ctx_section.h) that a rename refreshes."""

    def test_contexts_threads_and_renames(self):
        t, n = 4, 3000
        r = record(self.trace, [CTXTHREADS, str(t), str(n)], "-t", "vpid,vtid,procname,prio",
                   "--subbuf-size", "16k", "--num-subbuf", "256")
        self.assertEqual(r.returncode, 0, r.stderr)
        events, discarded, lost = read_trace(self.trace)
        self.assertEqual((discarded, lost), (0, 0))
        tids = {}
        for m in events:
            if m.event.name == "ctx:tid":
                tids[int(payload(m)["thread"])] = int(payload(m)["tid"])
        self.assertEqual(sorted(tids), list(range(t)))
        pids = set()
        got = {}
        for m in events:
            if m.event.name == "ctx:tid":
                continue
            ctx = m.event.common_context_field
            p = payload(m)
            name = m.event.name
            if name == "ctx:a":
                i, seq = int(p["thread"]), int(p["seq"])
            elif name == "ctx:b":
                i, seq = int(p["b0"]), int(p["b1"])
                self.assertEqual([int(p[f"b{k}"]) for k in range(2, 8)],
                                 [seq + k for k in range(2, 8)])
            else:
                seq = int(p["seq"])
                self.assertEqual(int(p["small"]), seq & 0xff)
                i = None
            tid = int(ctx["vtid"])
            if i is None:
                i = next(k for k, v in tids.items() if v == tid)
            self.assertEqual(tid, tids[i], (name, seq))
            pids.add(int(ctx["vpid"]))
            self.assertEqual(int(ctx["prio"]), 20)
            want = f"w{i}" if seq < n // 2 else f"renamed{i}"
            self.assertEqual(str(ctx["procname"]), want, (name, i, seq))
            got.setdefault((name, i), []).append(seq)
        self.assertEqual(len(pids), 1)
        for name in ("ctx:a", "ctx:b", "ctx:odd"):
            for i in range(t):
                self.assertEqual(got[(name, i)], list(range(n)), (name, i))


class Strings(Base):
    """Events with strings and byte sequences of every length (0 to 1000,
    each side of the 8, 16 and 32-byte copies), several in one event,
    from 4 threads moving between CPUs and recording in signal handlers
    too: without contexts the library records them in one rseq section
    (src/lib/parts_section.h; strparts_sse makes it copy as on a CPU
    without AVX2), with contexts by its general path. Every
    event reads back whole, by babeltrace2 and by our reader; a string
    too long for a sub-buffer is refused and counted, never cut."""

    LENS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 47, 48, 63, 64, 65,
            95, 96, 97, 127, 128, 129, 191, 255, 256, 257, 300, 511, 1000]

    @staticmethod
    def chars(t, i, n):
        return "".join(chr(ord("a") + (t * 7 + i * 3 + j) % 26) for j in range(n))

    @staticmethod
    def octets(t, i, n):
        return [(t * 31 + i * 5 + j * 3) & 0xff for j in range(n)]

    def expect(self, name, p):
        """The payload event `name` with p's t and i (or k) must have."""
        L, nl = self.LENS, len(self.LENS)
        t = p["t"] if "t" in p else None
        if name == "strs:s":
            i = p["i"]
            return {"t": t, "i": i, "s": self.chars(t, i, L[i % nl]), "tail": (i ^ 0x5a) & 0xff}
        if name == "strs:q":
            i = p["i"]
            q = self.octets(t, i, L[(i + 1) % nl])
            return {"t": t, "i": i, "q": q, "tail": (i * 2654435761) & 0xffffffff}
        if name == "strs:m":
            i = p["i"]
            return {"t": t, "i": i, "a": self.chars(t, i, L[(i + 2) % nl]),
                    "b": self.octets(t, i + 1, L[(i + 3) % nl]),
                    "c": self.chars(t, i + 2, L[(i + 5) % nl]), "d": (i << 33) | t}
        if name == "strs:sig":
            k = p["k"]
            return {"t": t, "k": k, "s": self.chars(t + 1000, k, L[k % nl])}
        return None

    def check_events(self, events, threads, rounds, big, source):
        """events: (name, payload as plain dict) in trace order."""
        seen = {}
        signals = {}
        bigs = []
        changed = 0
        for name, p in events:
            p = {k: v for k, v in p.items() if not k.startswith("_")}
            if name == "strs:done":
                signals[p["t"]] = p["signals"]
                continue
            if name == "strs:big":
                bigs.append((p["k"], p["s"]))
                continue
            if name == "strs:changed":
                want = ["abc", "ab#", "ab###", "abcdefghi###", "vwxyz" + "#" * 14,
                        "0123456789" + "#" * 39, "x" * 100 + "#" * 200, "(null)"]
                self.assertEqual(p, {"q200": list(range(1, 201)), "s": want[p["k"]],
                                     "k": p["k"]}, source)
                changed += 1
                continue
            self.assertEqual(p, self.expect(name, p), (source, name))
            key = (name, p["t"], p["k"] if name == "strs:sig" else p["i"])
            self.assertNotIn(key, seen, source)
            seen[key] = True
        self.assertEqual(sorted(signals), list(range(threads)), source)
        for t in range(threads):
            for name in ("strs:s", "strs:q", "strs:m"):
                got = sorted(i for (n, tt, i) in seen if n == name and tt == t)
                self.assertEqual(got, list(range(rounds)), (source, name, t))
            got = sorted(k for (n, tt, k) in seen if n == "strs:sig" and tt == t)
            self.assertEqual(got, list(range(signals[t])), (source, t))
        self.assertEqual(bigs, big, source)
        self.assertEqual(changed, 8 * (1 + threads * (rounds // 100)), source)
        return sum(signals.values())

    def test_strings_and_sequences(self):
        threads, rounds, sb = 4, 1000, 16384
        # The largest string tried fits a 16 KiB sub-buffer with its
        # headers; one byte over the sub-buffer less its 84-byte packet
        # header, and a string longer than the sub-buffer, do not.
        lens = [sb - 128, sb - 84, sb + 200]
        for name, prog, opts in (("section", STRPARTS, ["-t", "none"]),
                                 ("section without AVX2", STRPARTS_SSE, ["-t", "none"]),
                                 ("general", STRPARTS, [])):
            trace = os.path.join(self.tmp.name, name.replace(" ", "_"))
            r = record(trace, [prog, str(threads), str(rounds)] + [str(n) for n in lens],
                       "--subbuf-size", str(sb), "--num-subbuf", "512", *opts)
            self.assertEqual(r.returncode, 0, r.stderr)
            events, discarded, lost = read_trace(trace)
            self.assertEqual((discarded, lost), (2, 0), name)
            big = [(0, "A" * lens[0])]
            nsig = self.check_events([(m.event.name, rtfixtures.bt2_plain(m.event.payload_field))
                                      for m in events], threads, rounds, big, name + " bt2")
            self.assertGreater(nsig, 0, name)
            ours = rtfixtures.rtr_dump(BUILD, trace)
            self.assertEqual(len(ours), len(events), name)
            self.check_events([(e["name"], e["payload"]) for e in ours], threads, rounds, big,
                              name + " rtr_dump")


class SharedLibraries(Base):
    def test_dlopen_while_recording(self):
        """Events of a library loaded (twice) with dlopen are recorded and
        described by the metadata."""
        r = record(self.trace, [DLHOST, PLUGIN])
        self.assertEqual(r.returncode, 0, r.stderr)
        events, _, _ = read_trace(self.trace)
        names = [m.event.name for m in events]
        self.assertEqual(names[0], "host:before")
        self.assertEqual(names[-1], "host:after")
        work = [(int(payload(m)["round"]), int(payload(m)["i"]), str(payload(m)["name"]))
                for m in events if m.event.name == "plugin:work"]
        self.assertEqual(work, [(r_, i, "plugin") for r_ in (1, 2) for i in range(10)])
        # Both loads share one event class.
        meta = open(os.path.join(self.trace, "metadata")).read()
        self.assertEqual(meta.count('name = "plugin:work"'), 1)


class Modes(Base):
    """With a consumer that never reads during the run, discard mode keeps
    the oldest events and counts the rest; overwrite keeps the newest."""

    N = 20000

    def seqs(self, events):
        return [int(payload(m)["seq"]) for m in events if m.event.name == "burst:ev"]

    def test_discard_keeps_oldest(self):
        r = record(self.trace, [BURST, str(self.N), "return"], "--subbuf-size", "4k",
                   "--num-subbuf", "4", "--read-timer", "60000")
        self.assertEqual(r.returncode, 0, r.stderr)
        events, discarded, lost = read_trace(self.trace)
        seqs = self.seqs(events)
        self.assertGreater(len(seqs), 100)
        self.assertEqual(seqs, list(range(len(seqs))))  # the head, intact
        self.assertEqual(lost, 0)
        # Every event not in the trace is counted (burst:done included).
        self.assertEqual(discarded, self.N + 1 - len(events))
        for m in events:
            if m.event.name == "burst:ev":
                self.assertEqual(int(payload(m)["check"]), int(payload(m)["seq"]) * 7 + 1)

    def test_overwrite_keeps_newest(self):
        r = record(self.trace, [BURST, str(self.N), "return"], "--overwrite",
                   "--subbuf-size", "4k", "--num-subbuf", "4", "--read-timer", "60000")
        self.assertEqual(r.returncode, 0, r.stderr)
        events, discarded, lost = read_trace(self.trace)
        seqs = self.seqs(events)
        self.assertGreater(len(seqs), 100)
        self.assertEqual(seqs, list(range(self.N - len(seqs), self.N)))  # the tail
        self.assertEqual(events[-1].event.name, "burst:done")
        # The overwritten packets are the ones before the first kept one
        # (packet numbers start at 0 in every stream).
        with open(os.path.join(self.trace, "channel0_0"), "rb") as f:
            header = f.read(72)  # packet_seq_num is the u64 at byte 64
        first_packet = struct.unpack_from("<Q", header, 64)[0]
        self.assertGreater(first_packet, 0)
        self.assertIn(f"+ {first_packet} packets overwritten", r.stderr)


class Exits(Base):
    """Events are flushed however the program ends; its status is kept."""

    N = 5000

    def check_complete(self, busy_main=False):
        events, discarded, lost = read_trace(self.trace)
        seqs = [int(payload(m)["seq"]) for m in events if m.event.name == "burst:ev"]
        self.assertEqual(seqs, list(range(self.N)))
        self.assertEqual([m.event.name for m in events if m.event.name == "burst:done"],
                         ["burst:done"])
        if busy_main:
            # The main thread floods burst:after events until exit: the
            # buffers may fill, and what they drop is counted.
            self.assertEqual(lost, 0)
        else:
            self.assertEqual((discarded, lost), (0, 0))

    def test_return(self):
        r = record(self.trace, [BURST, str(self.N), "return"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_complete()

    def test_exit_status_passed_through(self):
        r = record(self.trace, [BURST, str(self.N), "status", "42"])
        self.assertEqual(r.returncode, 42, r.stderr)
        self.check_complete()

    def test_exit_from_another_thread(self):
        r = record(self.trace, [BURST, str(self.N), "exit-thread"])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.check_complete(busy_main=True)

    def test_sigint(self):
        r = record(self.trace, [BURST, str(self.N), "sigint"])
        self.assertEqual(r.returncode, -signal.SIGINT, r.stderr)
        self.check_complete()

    def test_sigterm(self):
        r = record(self.trace, [BURST, str(self.N), "sigterm"])
        self.assertEqual(r.returncode, -signal.SIGTERM, r.stderr)
        self.check_complete()


class NotRecording(Base):
    def test_no_thread_without_record(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("RINGTRACE_")}
        r = subprocess.run([BURST, "1000", "threads"], capture_output=True, text=True,
                           env=env, timeout=60)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "threads 1\n", ""))
        r = record(self.trace, [BURST, "1000", "threads"])
        self.assertEqual(r.stdout, "threads 2\n")  # the consumer

    def test_consumer_thread_refused(self):
        """A program whose user may start no more threads (RLIMIT_NPROC,
        which root ignores: run as nobody) cannot start its consumer: it
        says so once, runs untraced to its end and keeps no descriptor of
        the attempt."""
        if os.geteuid() != 0:
            self.skipTest("needs root to run the program as nobody")
        os.chmod(self.tmp.name, 0o777)
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            RINGTRACE, "record", "-o", self.trace, "--",
                            "prlimit", "--nproc=2", NOTHREAD],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.stdout, "pipes 0\ndone\n", r.stderr)
        self.assertIn("cannot start the consumer thread", r.stderr)


class CommandLine(Base):
    def expect_error(self, args, status, text):
        r = subprocess.run([RINGTRACE, *args], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, status, r.stderr)
        self.assertIn(text, r.stderr)
        return r

    def test_bad_options(self):
        self.expect_error(["record", "--subbuf-size", "5000", "--", BURST, "1", "return"], 2,
                          "power of two")
        self.expect_error(["record", "--num-subbuf", "3", "--", BURST, "1", "return"], 2,
                          "power of two")
        self.expect_error(["record", "--subbuf-size", "lots", "--", BURST, "1", "return"], 2,
                          "not a size")
        self.expect_error(["record", "--frobnicate", "--", BURST], 2, "unknown option")
        self.expect_error(["record", "--loglevel", "LOUD", "--", BURST], 2, "not a log level")
        self.expect_error(["record", "--"], 2, "no command")
        self.expect_error(["frobnicate"], 2, "unknown command")

    def test_missing_command(self):
        r = self.expect_error(["record", "-o", self.trace, "--", "/nonexistent/cmd"], 127,
                              "cannot run '/nonexistent/cmd'")
        self.assertFalse(os.path.exists(self.trace))
        del r

    def test_never_overwrites_a_trace(self):
        r = record(self.trace, [BURST, "10", "return"])
        self.assertEqual(r.returncode, 0, r.stderr)
        before = sorted(os.listdir(self.trace))
        meta = open(os.path.join(self.trace, "metadata")).read()
        self.expect_error(["record", "-o", self.trace, "--", BURST, "10", "return"], 1,
                          "not empty")
        self.assertEqual(sorted(os.listdir(self.trace)), before)
        self.assertEqual(open(os.path.join(self.trace, "metadata")).read(), meta)

    def test_unwritable_output(self):
        self.expect_error(["record", "-o", "/proc/ringtrace-test", "--", BURST, "1", "return"],
                          1, "cannot create directory /proc/ringtrace-test")

    def test_default_output_directory(self):
        r = subprocess.run([RINGTRACE, "record", "--", BURST, "10", "return"], cwd=self.tmp.name,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        dirs = os.listdir(os.path.join(self.tmp.name, "ringtrace-traces"))
        self.assertEqual(len(dirs), 1)
        self.assertTrue(dirs[0].startswith("burst-"))
        self.assertIn("ringtrace-traces/" + dirs[0], r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
