#!/usr/bin/python3
"""`ringtrace analyze`'s rates and per-thread counts, which it counts as
the events come (without keeping them), against the same figures computed
here from every event `ringtrace view --format=json` prints: on a burst
trace, the threads trace (renamed threads), a demo trace (several threads
and event classes), two traces merged, and a copy of the burst trace whose
last packets go back in time before its first event (analyze then reads
the trace again, keeping the events); with the automatic interval and
with intervals asked for.

usage: test_rates.py BUILD_DIR
"""
import collections
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

P = common.Paths(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
BURST = os.path.join(P.build, "tests/integration/burst")
THREADS = os.path.join(P.build, "tests/analysis/threads")
DEMO = os.path.join(P.build, "examples/demo")
AUTO_BUCKETS = 50


def hist_lower(b):
    return (1, 2, 5)[b % 3] * 10 ** (b // 3)


def auto_interval(span):
    b = 0
    while b + 1 < 40 and hist_lower(b) * AUTO_BUCKETS < span:
        b += 1
    iv = hist_lower(b)
    if iv < span // AUTO_BUCKETS:
        iv = span // AUTO_BUCKETS + 1
    return iv


def record(trace, *cmd):
    r = subprocess.run([P.ringtrace, "record", "-q", "--subbuf-size", "64k", "-o", trace,
                        "--"] + list(cmd), capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, RINGTRACE_NO_DAEMON="1"))
    if r.returncode != 0:
        raise RuntimeError("record failed: %s %s" % (r.stdout, r.stderr))


def go_back(trace):
    """The last two packets of the largest stream file begin 10^10 ticks
    earlier (packet context: timestamp_begin at byte 32, packet_size in
    bits at byte 56)."""
    paths = [os.path.join(trace, f) for f in os.listdir(trace) if f != "metadata"]
    path = max(sorted(paths), key=os.path.getsize)
    with open(path, "r+b") as f:
        size, off, offs = os.path.getsize(path), 0, []
        while off < size:
            offs.append(off)
            f.seek(off + 56)
            off += struct.unpack("<Q", f.read(8))[0] // 8
        assert len(offs) >= 3, offs
        for off in offs[-2:]:
            f.seek(off + 32)
            begin = struct.unpack("<Q", f.read(8))[0]
            f.seek(off + 32)
            f.write(struct.pack("<Q", begin - 10 ** 10))


class Rates(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-rates-")
        cls.traces = {}
        for name, cmd in (("burst", [BURST, "20000", "return"]),
                          ("threads", [THREADS, "20"]),
                          ("demo", [DEMO, "300"])):
            cls.traces[name] = os.path.join(cls.tmp, name)
            record(cls.traces[name], *cmd)
        cls.traces["back"] = os.path.join(cls.tmp, "back")
        shutil.copytree(cls.traces["burst"], cls.traces["back"])
        go_back(cls.traces["back"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_ok(self, *args):
        r = common.run(P, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def events(self, dirs):
        return [json.loads(line) for line in
                self.run_ok("view", "--format=json", *dirs).splitlines()]

    def check(self, dirs, *opts):
        a = json.loads(self.run_ok("analyze", "--format=json", *opts, *dirs))
        evs = self.events(dirs)
        self.assertGreater(len(evs), 100)
        ts = [e["ts"] for e in evs]
        first, last = min(ts), max(ts)
        self.assertEqual((a["events"], a["first_ns"], a["last_ns"]), (len(evs), first, last))
        r = a["rates"]
        iv = auto_interval(last - first)
        if "--interval" in opts:  # "Nus"
            iv = int(opts[opts.index("--interval") + 1][:-2]) * 1000
        self.assertEqual(r["interval_ns"], iv)
        self.assertEqual(r["intervals"], (last - first) // iv + 1)
        want = collections.defaultdict(lambda: [0] * r["intervals"])
        for e in evs:
            want[e["name"]][(e["ts"] - first) // iv] += 1
        got = {n["name"]: n["counts"] for n in r["names"]}
        self.assertEqual(got, dict(want))
        self.assertEqual({n["name"]: n["total"] for n in r["names"]},
                         {k: sum(v) for k, v in want.items()})
        # Per thread: events, first and last, the busiest names' counts,
        # the thread's last name.
        per = collections.defaultdict(collections.Counter)
        span, name = {}, {}
        for e in evs:
            k = str(e["context"]["vtid"])
            per[k][e["name"]] += 1
            f, l = span.get(k, (e["ts"], e["ts"]))
            span[k] = (min(f, e["ts"]), max(l, e["ts"]))
            name[k] = e["context"]["procname"]
        rows = {t["key"]: t for t in a["threads"]}
        self.assertEqual(set(rows), set(per))
        for k, t in rows.items():
            self.assertEqual(t["events"], sum(per[k].values()), k)
            self.assertEqual((t["first_ns"], t["last_ns"]), span[k], k)
            self.assertEqual(t["thread"], name[k], k)
            self.assertTrue(t["busiest"])
            for b in t["busiest"]:
                self.assertEqual(b["count"], per[k][b["name"]], (k, b))
            self.assertEqual(t["busiest"][0]["count"], max(per[k].values()), k)
        return a

    def test_burst(self):
        for opts in ([], ["--interval", "250us"], ["--interval", "7us"]):
            self.check([self.traces["burst"]], *opts)

    def test_threads(self):
        for opts in ([], ["--interval", "1000us"]):
            self.check([self.traces["threads"]], *opts)

    def test_demo(self):
        for opts in ([], ["--interval", "3us"]):
            self.check([self.traces["demo"]], *opts)

    def test_merged(self):
        self.check([self.traces["threads"], self.traces["demo"]])

    def test_time_going_back(self):
        """Events earlier than the first one come last from their stream:
        the counts from the first event could not hold them."""
        evs = self.events([self.traces["back"]])
        ts = [e["ts"] for e in evs]
        self.assertLess(min(ts), ts[0])
        for opts in ([], ["--interval", "100us"]):
            self.check([self.traces["back"]], *opts)

    def test_text_matches_json(self):
        """The text's totals are the JSON's."""
        a = self.check([self.traces["demo"]])
        text = self.run_ok("analyze", "--rates", self.traces["demo"])
        for n in a["rates"]["names"]:
            row = next(x for x in text.splitlines() if x.startswith(n["name"] + " "))
            self.assertEqual(int(row.split()[1]), n["total"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
