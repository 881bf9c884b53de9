#!/usr/bin/python3
"""Tests of `ringtrace view`: its JSON output is checked event by event
against babeltrace2's Python bindings (bt2), its text output line by line
against values recomputed from the JSON, and its filters, --limit and
--stats against counts computed from the JSON.

usage: test_view.py BUILD_DIR
"""
import calendar
import fnmatch
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import bt2

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
TYPES = os.path.join(BUILD, "tests/integration/types")
BURST = os.path.join(BUILD, "tests/integration/burst")
DEMO = os.path.join(BUILD, "examples/demo")
LTTNG_APP = os.path.join(BUILD, "tests/reader/rtr_lttng_app")
PRINT_CHECK = os.path.join(BUILD, "tests/view/view_print_check")
PRINTFER = os.path.join(BUILD, "tests/integration/printfer")


def record(trace, cmd, *opts):
    r = subprocess.run([RINGTRACE, "record", "-q", "-o", trace, *opts, "--", *cmd],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"record failed: {r.stderr}")


def view(*args, check=True):
    r = subprocess.run([RINGTRACE, "view", *args], capture_output=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"view {args} failed ({r.returncode}): {r.stderr.decode()}")
    return r


def view_json(*args):
    out = view("--format=json", *args).stdout.decode()
    return [json.loads(line) for line in out.splitlines()]


def bt2_value(f, bools=True):
    """A bt2 field as the JSON value ringtrace view gives it (bools: the
    enumeration {false, true} ringtrace writes for bool is a boolean)."""
    if isinstance(f, bt2._VariantFieldConst):
        return bt2_value(f.selected_option, bools)
    if isinstance(f, bt2._BoolFieldConst):
        return bool(f)
    if isinstance(f, (bt2._UnsignedEnumerationFieldConst, bt2._SignedEnumerationFieldConst)):
        labels = sorted(f.labels)
        if bools and labels in (["true"], ["false"]):
            return labels == ["true"]
        return {"value": int(f), "label": labels[0] if labels else None}
    if isinstance(f, bt2._IntegerFieldConst):
        return int(f)
    if isinstance(f, bt2._RealFieldConst):
        return float(f)
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._StructureFieldConst):
        return {k: bt2_value(v, bools) for k, v in f.items()}
    if isinstance(f, bt2._ArrayFieldConst):
        return [bt2_value(x, bools) for x in f]
    raise TypeError(type(f))


def bt2_events(path, bools=True):
    """Every event as {ts, name, cpu, fields, context}, via bt2. Messages
    are collected before their fields are read."""
    msgs = [m for m in bt2.TraceCollectionMessageIterator(path)
            if type(m) is bt2._EventMessageConst]
    out = []
    for m in msgs:
        ev = m.event
        ctx = {}
        for scope in (ev.common_context_field, ev.specific_context_field):
            if scope is not None:
                ctx.update(bt2_value(scope, bools))
        out.append({"ts": m.default_clock_snapshot.ns_from_origin, "name": ev.name,
                    "cpu": int(ev.packet.context_field["cpu_id"]),
                    "fields": bt2_value(ev.payload_field, bools)
                    if ev.payload_field is not None else {},
                    "context": ctx})
    return out


class Traces:
    """Traces recorded once for all tests."""
    tmp = None

    @classmethod
    def get(cls):
        if cls.tmp is None:
            cls.tmp = tempfile.TemporaryDirectory(prefix="rt-view-")
            d = cls.tmp.name
            cls.types = os.path.join(d, "types")
            # Without contexts: the lines checked below are the payloads.
            record(cls.types, [TYPES, "60"], "-t", "none")
            cls.burst = os.path.join(d, "burst")
            record(cls.burst, [BURST, "20000", "return"], "-t", "none")
            cls.demo = os.path.join(d, "demo")
            record(cls.demo, [DEMO, "200"])
            cls.big = os.path.join(d, "big")
            record(cls.big, [BURST, "300000", "return"], "--subbuf-size", "1M",
                   "--num-subbuf", "16", "-t", "none")
        return cls


def tearDownModule():
    for tmp in (Traces.tmp, LttngTrace.tmp):
        if tmp is not None:
            tmp.cleanup()


def enum_labels(v, labels):
    """Enumeration values in v, as {"value", "label"}: the labels bt2 gives
    (every matching one) become the set to check ours against."""
    if isinstance(v, dict) and set(v) == {"value", "label"}:
        labels.append(v["label"])
        return {"value": v["value"], "label": "*"}
    if isinstance(v, dict):
        return {k: enum_labels(x, labels) for k, x in v.items()}
    if isinstance(v, list):
        return [enum_labels(x, labels) for x in v]
    return v


class AgreesWithBabeltrace(unittest.TestCase):
    def check_same(self, path, bools=True, min_events=1):
        ours = view_json(path)
        theirs = bt2_events(path, bools)
        self.assertEqual(len(ours), len(theirs))
        self.assertGreaterEqual(len(ours), min_events)
        # Time order, over all streams.
        self.assertEqual([e["ts"] for e in ours], sorted(e["ts"] for e in ours))
        # Within one CPU (one stream file) the order is the recording's:
        # compare event by event there (ties across CPUs may be ordered
        # differently).
        for cpu in sorted({e["cpu"] for e in theirs}):
            a = [e for e in ours if e["cpu"] == cpu]
            b = [e for e in theirs if e["cpu"] == cpu]
            self.assertEqual(len(a), len(b))
            for x, y in zip(a, b):
                self.assertEqual(x["name"], y["name"])
                # bt2 converts cycles to ns partly in floating point, the
                # reader in integers: they may differ by 1 ns.
                self.assertLessEqual(abs(x["ts"] - y["ts"]), 1, (x, y))
                ours_labels, their_labels = [], []
                self.assertEqual(enum_labels(x["fields"], ours_labels),
                                 enum_labels(y["fields"], their_labels), x["name"])
                for a, b in zip(ours_labels, their_labels):
                    self.assertEqual(a, b, x["name"])
                self.assertEqual(x["context"], y["context"])
                for k, v in x["fields"].items():
                    self.assertIs(type(v), type(y["fields"][k]), k)

    def test_types(self):
        self.check_same(Traces.get().types)

    def test_demo_several_cpus(self):
        self.check_same(Traces.get().demo)

    def test_burst(self):
        self.check_same(Traces.get().burst)

    def test_lttng_ust(self):
        """An LTTng-UST trace (contexts, enums, arrays, text arrays, network
        byte order), found below the session directory."""
        trace = LttngTrace.get(self)
        self.check_same(trace, bools=False, min_events=5 * 60)
        evs = view_json(trace)
        self.assertTrue(all(set(e["context"]) >= {"vpid", "vtid", "procname"} for e in evs))
        lines = view(trace).stdout.decode().splitlines()
        self.assertEqual(len(lines), len(evs))
        self.assertRegex(lines[0], r"^\[[0-9:.]+\] \(\+\?\.\?{9}\) cpu \d+ rtrtest:\w+: "
                                   r"\{ vpid = \d+, vtid = \d+, procname = \"[^\"]*\" \}, \{ ")
        enums = [l for l in lines if "rtrtest:enums:" in l]
        self.assertTrue(enums and "( \"" in enums[0] and ": container = " in enums[0], enums[:1])
        self.assertEqual(len(view_json("--filter", "$ctx.vtid > 0 && vtid == $ctx.vtid",
                                       trace)), len(evs))

    def test_big_u64_exact(self):
        evs = [e for e in view_json(Traces.get().types) if e["name"] == "types:ints"]
        for i, e in enumerate(evs):
            self.assertEqual(e["fields"]["u64"], i * (1 << 40) + (1 << 63))

    def test_several_traces_merged(self):
        t = Traces.get()
        a, b = view_json(t.types), view_json(t.burst)
        both = view_json(t.types, t.burst)
        self.assertEqual(len(both), len(a) + len(b))
        self.assertEqual([e["ts"] for e in both], sorted(e["ts"] for e in both))
        self.assertEqual([{k: v for k, v in e.items() if k != "trace"}
                          for e in both if e["trace"] == 0], a)
        self.assertEqual(sum(e["trace"] == 1 for e in both), len(b))


class CachedText(unittest.TestCase):
    """The printer's per-class caches of text (the contexts' text keyed
    on their bytes) print every event as the plain printer does, which
    decodes and formats every value: text, coloured text and JSON, event
    by event (tests/view/print_check.c)."""

    def check(self, *traces):
        r = subprocess.run([PRINT_CHECK, *traces], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^[1-9][0-9]* events printed the same")

    def test_ringtrace_traces(self):
        t = Traces.get()
        with tempfile.TemporaryDirectory(prefix="rt-view-cache-") as d:
            # With record's contexts (vpid, vtid, procname): every type
            # in types, several threads taking turns on the CPUs in
            # demo, rt_printf messages in printfer.
            record(os.path.join(d, "types"), [TYPES, "60"])
            record(os.path.join(d, "burst"), [BURST, "3000", "return"])
            record(os.path.join(d, "printf"), [PRINTFER])
            for name in ("types", "burst", "printf"):
                self.check(os.path.join(d, name))
            self.check(t.demo)
            self.check(t.types, t.demo, os.path.join(d, "types"))

    def test_lttng_ust(self):
        self.check(LttngTrace.get(self))


class LttngTrace:
    """One LTTng-UST trace recorded by tests/reader's rtr_lttng_app with a
    private session daemon; the test is skipped when LTTng is missing."""
    tmp = None
    trace = None

    @classmethod
    def get(cls, test):
        if cls.trace:
            return cls.trace
        if not os.path.exists(LTTNG_APP):
            test.skipTest("rtr_lttng_app not built (liblttng-ust-dev missing)")
        if not shutil.which("lttng") or not shutil.which("lttng-sessiond"):
            test.skipTest("lttng-tools not installed")
        prefix = []
        if os.getuid() == 0:  # a root daemon would use the system-wide directory
            if not shutil.which("setpriv"):
                test.skipTest("running as root without setpriv")
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        cls.tmp = tempfile.TemporaryDirectory(prefix="rt-view-lttng-")
        home = cls.tmp.name
        os.chmod(home, 0o755)
        if prefix:
            os.chown(home, 65534, 65534)
        env = dict(os.environ, HOME=home, LTTNG_HOME=home)
        env.pop("LTTNG_UST_DEBUG", None)
        app = os.path.join(home, "app")
        shutil.copy(LTTNG_APP, app)
        out = os.path.join(home, "session")

        def lt(*args):
            r = subprocess.run(prefix + list(args), env=env, cwd=home, capture_output=True,
                               text=True, timeout=60)
            if r.returncode != 0:
                raise AssertionError(f"{' '.join(args)}: {r.stdout}{r.stderr}")

        pidfile = os.path.join(home, ".lttng/lttng-sessiond.pid")
        try:
            lt("lttng-sessiond", "--daemonize", "--no-kernel")
            lt("lttng", "create", "view", "--output=" + out)
            lt("lttng", "enable-event", "-u", "rtrtest:*")
            lt("lttng", "add-context", "-u", "-t", "vpid", "-t", "vtid", "-t", "procname")
            lt("lttng", "start")
            lt(app, "60")
            lt("lttng", "stop")
            lt("lttng", "destroy")
        finally:
            try:
                with open(pidfile) as f:
                    os.kill(int(f.read()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        cls.trace = out
        return out


class CountedAtOnce(unittest.TestCase):
    """`view --stats` without filters and `ringtrace summary` (what record
    prints at its end) count a trace at once (rtr_count: no merge, payloads
    only walked to their end) when its streams allow, else event by event:
    their output must be what reading every event gives (`--limit` with a
    huge N reads event by event), on intact and damaged traces."""

    def same(self, trace):
        a = view("--stats", trace, check=False)
        b = view("--stats", "--limit", str(10**15), trace, check=False)
        self.assertEqual((a.returncode, a.stdout.decode(), a.stderr.decode()),
                         (b.returncode, b.stdout.decode(), b.stderr.decode()), trace)
        # summary: per channel, the events rtr_next reads (up to an error)
        r = subprocess.run([RINGTRACE, "summary", trace], capture_output=True, text=True,
                           timeout=120)
        total = sum(int(line.split(": ")[1].split()[0]) for line in r.stdout.splitlines()
                    if " events recorded, " in line)
        events = [line.split()[1] for line in b.stdout.decode().splitlines()
                  if line.startswith("events:")]
        if events:
            self.assertEqual(total, int(events[0]), (trace, r.stdout, r.stderr))
        return a, total

    def test_intact(self):
        t = Traces.get()
        for trace in (t.types, t.burst, t.demo, t.big):
            out = self.same(trace)[0].stdout.decode()
            self.assertNotIn("events:     0\n", out)

    def test_lttng(self):
        self.same(LttngTrace.get(self))

    def test_damaged(self):
        """A stream whose events stop decoding (an unknown event id), one
        whose clock goes back (a packet beginning before the previous one),
        bytes flipped here and there, a file cut short: the counts at once
        give up where they would differ (the merge's order decides what is
        read before an error, and which events come first and last) and
        the output is the same."""
        import struct
        t = Traces.get()

        def stream_of(trace):  # the largest stream file
            paths = [os.path.join(trace, f) for f in os.listdir(trace) if f != "metadata"]
            return max(sorted(paths), key=os.path.getsize)

        def unknown_id(f, size):
            # burst -t none: 4-byte compact headers and 16-byte payloads
            # from byte 84 of the first packet; id 30 has no class
            f.seek(84 + 20 * 100)
            h = struct.unpack("<I", f.read(4))[0]
            f.seek(84 + 20 * 100)
            f.write(struct.pack("<I", (h & ~31) | 30))

        def packets(f, size):  # the packets' offsets (packet_size at byte 56, bits)
            off, out = 0, []
            while off < size:
                out.append(off)
                f.seek(off + 56)
                off += struct.unpack("<Q", f.read(8))[0] // 8
            return out

        def clock_back(last):
            # The last packets begin 10^10 ticks earlier (the two last: in
            # order among themselves): the stream's clock goes back there
            # (within a chunk of rtr_count or between two). The merge
            # returns them before the other stream, a copy of the first
            # packet, ends: rtr_next's last event is this stream's last
            # one, not the latest one.
            def damage(f, size):
                offs = packets(f, size)
                for off in offs[-last:]:
                    f.seek(off + 32)
                    begin = struct.unpack("<Q", f.read(8))[0]
                    f.seek(off + 32)
                    f.write(struct.pack("<Q", begin - 10**10))
                f.seek(0)
                first = f.read(offs[1])
                with open(os.path.join(os.path.dirname(f.name), "channel0_9"), "wb") as g:
                    g.write(first)
            return damage

        def cpu_change(f, size):
            # the second packet's cpu_id (byte 80) is another CPU's
            offs = packets(f, size)
            f.seek(offs[1] + 80)
            cpu = struct.unpack("<I", f.read(4))[0]
            f.seek(offs[1] + 80)
            f.write(struct.pack("<I", cpu + 1))

        def flip(k):
            def damage(f, size):
                off = 84 + (size - 84) * (k + 1) // 5
                f.seek(off)
                b = f.read(1)
                f.seek(off)
                f.write(bytes([b[0] ^ 0xff]))
            return damage

        def cut(f, size):
            f.truncate(size * 2 // 3 + 5)

        cases = [(t.burst, unknown_id), (t.big, clock_back(1)), (t.big, clock_back(2)),
                 (t.big, cpu_change),
                 (t.demo, cut)]
        cases += [(t.demo, flip(k)) for k in range(4)]
        with tempfile.TemporaryDirectory(prefix="rt-view-count-") as d:
            for i, (src, damage) in enumerate(cases):
                trace = os.path.join(d, f"t{i}")
                shutil.copytree(src, trace)
                path = stream_of(trace)
                with open(path, "r+b") as f:
                    damage(f, os.path.getsize(path))
                out, summary_total = self.same(trace)
                if damage is unknown_id:
                    # the 100 events before it, as read in time order
                    self.assertIn(b"unknown event id 30", out.stderr)
                    self.assertEqual(summary_total, 100)
                if src is t.big:
                    self.assertEqual(out.returncode, 0, out.stderr)


def hms(ns):
    t = time.gmtime(ns // 10**9)
    return f"{t.tm_hour:02}:{t.tm_min:02}:{t.tm_sec:02}.{ns % 10**9:09}"


def secs(ns):
    return f"{ns // 10**9}.{ns % 10**9:09}"


class Text(unittest.TestCase):
    def test_known_lines(self):
        t = Traces.get()
        evs = view_json(t.types)
        lines = view("--clock-gmt", "--color=never", t.types).stdout.decode().splitlines()
        self.assertEqual(len(lines), len(evs))
        self.assertTrue(lines[0].startswith(f"[{hms(evs[0]['ts'])}] (+?.?????????) cpu "))
        ints = [i for i, e in enumerate(evs) if e["name"] == "types:ints"]
        k = ints[1]
        e, prev = evs[k], evs[k - 1]
        self.assertEqual(lines[k],
                         f"[{hms(e['ts'])}] (+{secs(e['ts'] - prev['ts'])}) cpu {e['cpu']} "
                         "types:ints: { s8 = -1, u8 = 3, s16 = -100, u16 = 100, s32 = -100000, "
                         "u32 = 100000, s64 = -1099511627776, u64 = 9223373136366403584 }")
        misc = [i for i, e in enumerate(evs) if e["name"] == "types:misc"]
        k = misc[2]
        self.assertTrue(lines[k].endswith(
            'types:misc: { f = 1.0, d = 0.5, b = false, str = "a \\"quoted\\" \\\\ word\\twith tab", '
            'ptr = 0x1002, _bytes_length = 2, bytes = [ [0] = 0xde, [1] = 0xad ], ch = 99 }'),
            lines[k])
        empty = [i for i, e in enumerate(evs) if e["name"] == "types:empty"][0]
        self.assertTrue(lines[empty].endswith(" types:empty:"), lines[empty])

    def test_clock_options(self):
        t = Traces.get()
        evs = view_json(t.burst)
        out = view("--clock-seconds", "--no-delta", t.burst).stdout.decode().splitlines()
        self.assertEqual(out[5], f"[{secs(evs[5]['ts'])}] cpu {evs[5]['cpu']} "
                                 f"burst:ev: {{ seq = 5, check = 36 }}")
        out = view("--clock-date", "--clock-gmt", t.burst).stdout.decode().splitlines()
        d = time.strftime("%Y-%m-%d", time.gmtime(evs[0]["ts"] // 10**9))
        self.assertTrue(out[0].startswith(f"[{d} {hms(evs[0]['ts'])}]"))
        out = view("--clock-cycles", t.burst).stdout.decode().splitlines()
        cycles = [int(line[1:line.index("]")]) for line in out]
        self.assertEqual(cycles, sorted(cycles))
        out = view("--color=always", "--limit=1", t.burst).stdout.decode()
        self.assertIn("\x1b[", out)


def iso(ns):
    t = time.gmtime(ns // 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{ns % 10**9:09}"


class Filters(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = Traces.get()
        cls.types = view_json(cls.t.types)
        cls.demo = view_json(cls.t.demo)

    def count(self, *args, trace=None):
        return len(view_json(*args, trace or self.t.types))

    def test_begin_end(self):
        evs = self.demo
        ts = [e["ts"] for e in evs]
        a, b = ts[len(ts) // 4], ts[3 * len(ts) // 4]
        n = sum(a <= x <= b for x in ts)
        for begin, end in ((iso(a), iso(b)), (str(a), str(b)),
                           (f"+{a - ts[0]}ns", f"+{(b - ts[0]) / 1e9:.9f}s")):
            got = view_json("--clock-gmt", "--begin", begin, "--end", end, self.t.demo)
            self.assertEqual(len(got), n, (begin, end))
            self.assertEqual(got[0]["ts"], a)
        us = (b - ts[0]) // 1000
        got = view_json("--end", f"+{us}us", self.t.demo)
        self.assertEqual(len(got), sum(x <= ts[0] + us * 1000 for x in ts))
        got = view_json("--end", f"+{us // 1000}ms", self.t.demo)
        self.assertEqual(len(got), sum(x <= ts[0] + us // 1000 * 10**6 for x in ts))
        # Time of day on the first day (whole seconds, so compute it).
        start = ts[0] // 10**9 + 1
        t = time.gmtime(start)
        got = view_json("--clock-gmt", "--begin", f"{t.tm_hour:02}:{t.tm_min:02}:{t.tm_sec:02}",
                        self.t.demo)
        self.assertEqual(len(got), sum(x >= start * 10**9 for x in ts))

    def test_event_globs(self):
        n = sum(fnmatch.fnmatchcase(e["name"], "types:id*") or e["name"] == "types:misc"
                for e in self.types)
        self.assertEqual(self.count("-e", "types:id*", "--event", "types:misc"), n)
        self.assertEqual(self.count("-e", "nothing:*"), 0)

    def test_expressions(self):
        def f(e, k):
            return e["fields"].get(k)
        cases = {
            "u8 > 100": lambda e: f(e, "u8") is not None and f(e, "u8") > 100,
            '$name == "types:misc" && str == ""': lambda e: e["name"] == "types:misc" and f(e, "str") == "",
            'str =~ "*quoted*" || k == 3': lambda e: "quoted" in (f(e, "str") or "") or f(e, "k") == 3,
            "!(s64 < 0)": lambda e: not (f(e, "s64") is not None and f(e, "s64") < 0),
            "u64 >= 9223373136366403584": lambda e: f(e, "u64") is not None and f(e, "u64") >= 9223373136366403584,
            "$payload.d > 1.5 && b": lambda e: f(e, "d") is not None and f(e, "d") > 1.5 and f(e, "b"),
            "s16 <= -1000 && (s8 != -12 || u16 == 1200)": lambda e: f(e, "s16") is not None and f(e, "s16") <= -1000 and (f(e, "s8") != -12 or f(e, "u16") == 1200),
            "$ctx.vtid == 1": lambda e: False,
            "$cpu >= 0 && f3 == 10": lambda e: f(e, "f3") == 10,
        }
        for expr, pred in cases.items():
            want = sum(bool(pred(e)) for e in self.types)
            self.assertEqual(self.count("--filter", expr), want, expr)
        self.assertGreater(self.count("--filter", "u8 > 100"), 0)

    def test_deep_and_long_expressions(self):
        # As deep as allowed (256 "!" or "("), and "||" chains as long as
        # a command-line argument can be, on a 256 KiB stack: the parser
        # and the evaluation recurse only per "!" and "(".
        def small_stack():
            resource.setrlimit(resource.RLIMIT_STACK, (256 << 10, 256 << 10))

        def count(expr):
            r = subprocess.run([RINGTRACE, "view", "--format=json", "--filter", expr,
                                self.t.types], capture_output=True, timeout=120,
                               preexec_fn=small_stack)
            self.assertEqual(r.returncode, 0, (expr[:40], r.returncode, r.stderr[:300]))
            return len(r.stdout.splitlines())
        big = sum(e["fields"].get("u8", 0) > 100 for e in self.types)
        # "!" binds tighter than a comparison (LTTng's precedence, and C's).
        nonzero = sum(e["fields"].get("u8", 0) != 0 for e in self.types)
        self.assertEqual(count("!" * 256 + "u8"), nonzero)
        self.assertEqual(count("(" * 256 + "u8 > 100" + ")" * 256), big)
        self.assertEqual(count("!" * 255 + "(u8 > 100)"), len(self.types) - big)
        ks = range(0, 24000, 2)      # 114 KB: MAX_ARG_STRLEN is 128 KiB
        want = sum(e["fields"].get("k") in ks for e in self.types)
        self.assertGreater(want, 0)
        self.assertEqual(count("||".join(f"k=={k}" for k in ks)), want)
        odd = sum(e["fields"].get("k", 0) % 2 == 1 for e in self.types)
        self.assertEqual(count("&&".join(f"k!={k}" for k in ks)), odd)

    def test_limit(self):
        got = view_json("--limit", "7", self.t.demo)
        self.assertEqual(got, self.demo[:7])

    def test_stats(self):
        out = view("--stats", self.t.demo).stdout.decode()
        self.assertIn(f"events:     {len(self.demo)}\n", out)
        names = {}
        cpus = {}
        for e in self.demo:
            names[e["name"]] = names.get(e["name"], 0) + 1
            cpus[e["cpu"]] = cpus.get(e["cpu"], 0) + 1
        rows = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                rows.setdefault(parts[0], int(parts[1]))
        for name, n in names.items():
            self.assertEqual(rows[name], n)
        for cpu, n in cpus.items():
            self.assertEqual(rows[str(cpu)], n)
        # Filters apply to the counts.
        out = view("--stats", "-e", "types:ints", self.t.types).stdout.decode()
        self.assertIn("events:     60\n", out)


class Errors(unittest.TestCase):
    def expect(self, args, code, text):
        r = view(*args, check=False)
        self.assertEqual(r.returncode, code, (args, r.stderr))
        self.assertIn(text, r.stderr.decode())
        self.assertEqual(r.stdout, b"")

    def test_usage(self):
        t = Traces.get().types
        self.expect(["/nonexistent/trace"], 1, "/nonexistent/trace")
        self.expect([], 2, "no trace directory")
        self.expect(["--filter", "u8 > > 3", t], 2, "filter:1:6: expected")
        self.expect(["--filter", "(u8 > 3", t], 2, "filter:1:1: unclosed '('")
        self.expect(["--filter", "u8 = 3", t], 2, "use ==")
        self.expect(["--filter", '$name =~ 3', t], 2, "string pattern")
        # Nesting is bounded (it used to overflow the stack).
        too_deep = "filter:1:257: nests deeper than 256"
        self.expect(["--filter", "!" * 50000 + "u8 > 3", t], 2, too_deep)
        self.expect(["--filter", "(" * 65000 + "1", t], 2, too_deep)
        self.expect(["--filter", "(" * 257 + "1" + ")" * 257, t], 2, too_deep)
        self.expect(["--filter", "!(" * 200, t], 2, too_deep)
        self.expect(["--begin", "yesterday", t], 2, "bad time")
        self.expect(["--end", "25:00:00", t], 2, "bad time")
        self.expect(["--begin", "99999999999999999999", t], 2, "bad time")
        self.expect(["--begin", "+3weeks", t], 2, "bad time")
        self.expect(["--begin", "2026-13-01T00:00", t], 2, "bad time")
        self.expect(["--limit", "-3", t], 2, "--limit")
        self.expect(["--format=xml", t], 2, "--format")
        self.expect(["--bogus", t], 2, "")

    def damaged_copy(self, src, damage):
        tmp = tempfile.TemporaryDirectory(prefix="rt-view-bad-")
        self.addCleanup(tmp.cleanup)
        dst = os.path.join(tmp.name, "t")
        os.mkdir(dst)
        for name in os.listdir(src):
            with open(os.path.join(src, name), "rb") as f:
                data = f.read()
            with open(os.path.join(dst, name), "wb") as f:
                f.write(damage(name, data))
        return dst

    def test_truncated_stream(self):
        t = Traces.get().big
        def cut(name, data):
            return data if name == "metadata" else data[: len(data) // 2 + 1000]
        r = view(self.damaged_copy(t, cut), check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"ringtrace: view:", r.stderr)

    def test_corrupt_metadata(self):
        t = Traces.get().types
        def garble(name, data):
            return data[: len(data) // 2] + b"@@" if name == "metadata" else data
        r = view(self.damaged_copy(t, garble), check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"metadata", r.stderr)

    def test_closed_pipe(self):
        t = Traces.get().big
        start = time.monotonic()
        p = subprocess.Popen([RINGTRACE, "view", t], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        first = p.stdout.readline()
        p.stdout.close()
        rc = p.wait(timeout=30)
        err = p.stderr.read()
        p.stderr.close()
        self.assertIn(b"burst:ev: { seq = 0, check = 1 }", first)
        self.assertEqual(rc, 0)
        self.assertEqual(err, b"")
        self.assertLess(time.monotonic() - start, 30)
        # The same through a shell pipeline, under pipefail.
        r = subprocess.run(["bash", "-c", "set -o pipefail; "
                            f"'{RINGTRACE}' view --format=json '{t}' | head -1"],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.count(b"\n"), 1)
        self.assertEqual(r.stderr, b"")


if __name__ == "__main__":
    unittest.main(verbosity=2)
