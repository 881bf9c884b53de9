#!/usr/bin/python3
"""Tests of `ringtrace analyze` and `ringtrace export --format=chrome` on
the trace of tests/analysis/workload.c, checked against babeltrace2.

usage: test_analysis.py BUILD_DIR
"""
import collections
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

P = common.Paths(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
N = common.N_ITER
# ringtrace's reader and bt2 convert clock cycles to ns with their own
# rounding: a timestamp may differ by 1 ns, a duration by 2 ns (the Chrome
# "ts" and "dur", parsed as floats, get 1 ns more).
NS_SLACK = 2


class Workload(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rt-analysis-")
        cls.trace = os.path.join(cls.tmp.name, "trace")
        cls.outlier, cls.workers = common.record_workload(P, cls.trace)
        cls.events = common.read_events(cls.trace)
        cls.by_name = collections.Counter(name for _, name, _ in cls.events)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assertClose(self, a, b, slack=None):
        slack = NS_SLACK if slack is None else slack
        self.assertLessEqual(abs(a - b), slack, "%r vs %r" % (a, b))

    def analyze_json(self, *opts):
        r = common.run(P, "analyze", "--format=json", *opts, self.trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def bt2_durations(self, begin="app:work_begin"):
        """{tid: [durations]} of begin/work_end pairs, from bt2."""
        return common.durations(self.events, begin)

    def longest(self, begin="app:work_begin"):
        return common.longest_pair_tid(self.events, self.outlier, begin)


class Analyze(Workload):
    def test_totals_match_babeltrace2(self):
        a = self.analyze_json()
        self.assertEqual(a["events"], len(self.events))
        self.assertEqual(a["events"], WORKERS_EVENTS + 2)
        totals = {n["name"]: n["total"] for n in a["rates"]["names"]}
        self.assertEqual(totals, dict(self.by_name))
        self.assertEqual(a["lost_events"], 0)

    def test_rates_sum_to_total(self):
        for opts in ([], ["--interval", "1ms"], ["--interval", "250us"]):
            a = self.analyze_json("--rates", *opts)
            self.assertNotIn("durations", a)
            r = a["rates"]
            if opts:
                self.assertEqual(r["interval_ns"], 1000000 if opts[1] == "1ms" else 250000)
            for n in r["names"]:
                self.assertEqual(len(n["counts"]), r["intervals"])
                self.assertEqual(sum(n["counts"]), n["total"])
                self.assertEqual(max(n["counts"]) * 1e9 / r["interval_ns"], n["peak_per_s"])
                peak = n["counts"].index(max(n["counts"]))
                self.assertEqual(n["peak_offset_ns"], peak * r["interval_ns"])
                self.assertEqual(n["peak_at_ns"], r["start_ns"] + peak * r["interval_ns"])
            self.assertEqual(sum(sum(n["counts"]) for n in r["names"]), len(self.events))
            span = a["last_ns"] - a["first_ns"]
            self.assertEqual(r["intervals"], span // r["interval_ns"] + 1)

    def test_durations(self):
        a = self.analyze_json("--durations", "--top", "5")
        self.assertNotIn("rates", a)
        (d,) = a["durations"]
        self.assertEqual((d["pair"], d["begin"], d["end"]),
                         ("app:work", "app:work_begin", "app:work_end"))
        self.assertEqual(d["count"], common.WORKERS * N)
        self.assertEqual(d["unmatched_begin"], 1)
        self.assertEqual(d["unmatched_end"], 1)
        # nanosleep sleeps at least what it is asked: bounds, not timing
        self.assertGreaterEqual(d["min_ns"], common.SHORT_NS)
        self.assertGreaterEqual(d["max_ns"], common.LONG_NS)
        self.assertLessEqual(d["min_ns"], d["p50_ns"])
        self.assertLessEqual(d["p50_ns"], d["p99_ns"])
        self.assertLessEqual(d["p99_ns"], d["max_ns"])
        self.assertEqual(sum(h["count"] for h in d["histogram"]), d["count"])
        self.assertEqual(len(d["outliers"]), 5)
        top = d["outliers"][0]
        self.assertEqual(top["key"], self.longest())
        self.assertEqual(top["dur_ns"], d["max_ns"])
        durs = [o["dur_ns"] for o in d["outliers"]]
        self.assertEqual(durs, sorted(durs, reverse=True))
        # the same pairs as babeltrace2's timestamps give
        ref = self.bt2_durations()
        flat = sorted((x for v in ref.values() for x in v), reverse=True)
        self.assertEqual(len(flat), d["count"])
        self.assertClose(flat[0], d["max_ns"])
        self.assertClose(flat[-1], d["min_ns"])
        for x, y in zip(durs, flat[:5]):
            self.assertClose(x, y)
        begins = [ns for ns, name, f in self.events
                  if name == "app:work_begin" and str(f["tid"]) == top["key"]]
        self.assertTrue(any(abs(top["begin_ns"] - b) <= NS_SLACK for b in begins))
        self.assertTrue(top["begin_utc"].startswith("20"))
        a_all = self.analyze_json("--durations")
        for o in a_all["durations"][0]["outliers"]:
            self.assertEqual(o["begin_offset_ns"], o["begin_ns"] - a_all["first_ns"])

    def test_threads(self):
        a = self.analyze_json("--threads")
        t = {x["key"]: x for x in a["threads"]}
        self.assertEqual(sorted(t), sorted(self.workers + [self.main_tid()]))
        ref = self.bt2_durations()
        for w in self.workers:
            self.assertEqual(t[w]["events"], 3 * N)
            self.assertClose(t[w]["paired_ns"], sum(ref[w]), NS_SLACK * N)
            self.assertEqual({b["name"]: b["count"] for b in t[w]["busiest"]},
                             {"app:work_begin": N, "app:tick": N, "app:work_end": N})
            ns = [e[0] for e in self.events if str(e[2]["tid"]) == w]
            self.assertClose(t[w]["first_ns"], ns[0])
            self.assertClose(t[w]["last_ns"], ns[-1])
        self.assertEqual(t[self.main_tid()]["events"], 2)

    def main_tid(self):
        return str(self.events[-1][2]["tid"])

    def test_user_pair_and_key(self):
        a = self.analyze_json("--durations", "--no-auto-pairs",
                              "--pair", "app:tick,app:work_end")
        (d,) = a["durations"]
        self.assertEqual(d["pair"], "app:tick,app:work_end")
        self.assertEqual(d["count"], common.WORKERS * N)
        self.assertEqual((d["unmatched_begin"], d["unmatched_end"]), (0, 1))
        self.assertEqual(d["outliers"][0]["key"], self.longest("app:tick"))
        a = self.analyze_json("--threads", "--durations", "--key", "iter")
        keys = {x["key"] for x in a["threads"]}
        self.assertEqual(keys, {str(i) for i in range(N)} | {"9999"})
        self.assertEqual(a["durations"][0]["count"], common.WORKERS * N)
        a = self.analyze_json("--threads", "--key", "nosuchfield")
        self.assertEqual([x["key"] for x in a["threads"]], ["unknown"])

    def test_text_output(self):
        r = common.run(P, "analyze", self.trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        for s in ("== Event rates", "app:work_begin", "== Durations", "app:work",
                  "unmatched begins 1, unmatched ends 1", "histogram", "top 10 outliers",
                  "== Activity per tid"):
            self.assertIn(s, out)
        lines = out.splitlines()
        first = lines[lines.index(next(x for x in lines if "top 10 outliers" in x)) + 2]
        # the thread: key field, key and the thread's name (its comm)
        self.assertEqual(first.split()[-3:], ["tid", self.longest(), "(workload)"])

    def test_two_traces_merged(self):
        a = self.analyze_json(self.trace)   # the same trace twice
        self.assertEqual(a["events"], 2 * len(self.events))
        self.assertEqual(a["durations"][0]["count"], 2 * common.WORKERS * N)


WORKERS_EVENTS = common.WORKERS * 3 * N


class Export(Workload):
    def test_chrome_json(self):
        out = os.path.join(self.tmp.name, "chrome.json")
        r = common.run(P, "export", "--format=chrome", self.trace, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["displayTimeUnit"], "ns")
        md = doc["metadata"]
        start = md["trace_start_ns"]
        self.assertClose(start, self.events[0][0])
        self.assertEqual(md["events"], len(self.events))
        evs = doc["traceEvents"]
        ph = collections.Counter(e["ph"] for e in evs)
        self.assertEqual(ph["X"], common.WORKERS * N)
        self.assertEqual(ph["i"], len(self.events) - 2 * ph["X"])
        names = {(e["tid"], e["args"]["name"]) for e in evs
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        # `record` records each thread's name (procname): the workload
        # does not name its threads, so they keep the program's name.
        self.assertEqual(names, {(int(t), "workload") for t in self.workers + [self.main_tid()]})
        last = {}
        begins = {(f["tid"], f["iter"]): (ns, f) for ns, n, f in self.events
                  if n == "app:work_begin"}
        ends = {(f["tid"], f["iter"]): (ns, f) for ns, n, f in self.events
                if n == "app:work_end"}
        ticks = {(f["tid"], f["iter"]): (ns, f) for ns, n, f in self.events
                 if n == "app:tick"}
        for e in evs:
            if e["ph"] == "M":
                continue
            self.assertGreaterEqual(e["ts"], last.get(e["tid"], 0))
            last[e["tid"]] = e["ts"]
            a = e["args"]
            key = (a["tid"], a["iter"])
            if e["ph"] == "X":
                self.assertEqual(e["name"], "app:work")
                self.assertGreater(e["dur"], 0)
                ns, f = begins[key]
                self.assertEqual({k: v for k, v in a.items() if k != "end"}, f)
                self.assertEqual(a["end"], ends[key][1])
                self.assertClose(e["ts"] * 1000, ns - start, NS_SLACK + 1)
                self.assertClose(e["dur"] * 1000, ends[key][0] - ns, NS_SLACK + 1)
            else:
                self.assertEqual((e["s"], e["cat"]), ("t", "app"))
                if e["name"] == "app:tick":
                    self.assertEqual(a, ticks[key][1])
                    self.assertEqual(a["label"], 'a "quoted" <label>')
        self.assertEqual(len(last), common.WORKERS + 1)
        with open(out) as f:
            self.assertNotIn("<label>", f.read())   # escaped as \u003c

    def test_stdout(self):
        r = common.run(P, "export", "--format=chrome", "-o", "-", self.trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        evs = json.loads(r.stdout)["traceEvents"]
        # + 4 thread names, + the process's name twice: its trace's
        # directory at a worker's first event, then its main thread's name
        self.assertEqual(len(evs), len(self.events) - common.WORKERS * N + 6)
        self.assertEqual([e["args"]["name"] for e in evs if e["name"] == "process_name"],
                         [self.trace, "workload"])

    def main_tid(self):
        return str(self.events[-1][2]["tid"])


class Damaged(Workload):
    """Damaged traces: a message and status 1 (or a result), never a crash."""

    def damaged_copy(self, name, damage):
        import random
        import shutil
        rng = random.Random(name)
        copy = os.path.join(self.tmp.name, name)
        shutil.copytree(self.trace, copy)
        streams = [f for f in os.listdir(copy) if f != "metadata" and not f.startswith(".")]
        for f in streams:
            path = os.path.join(copy, f)
            with open(path, "r+b") as fh:
                data = bytearray(fh.read())
                damage(rng, data)
                fh.seek(0)
                fh.truncate()
                fh.write(data)
        return copy

    def run_all(self, trace):
        out = os.path.join(self.tmp.name, "damaged.json")
        before = open(out).read() if os.path.exists(out) else None
        for args in (["analyze", trace], ["analyze", "--format=json", trace],
                     ["export", "--format=chrome", trace, "-o", out],
                     ["report", trace, "-o", out + ".html"]):
            r = common.run(P, *args)
            self.assertIn(r.returncode, (0, 1), (args, r.stderr))
            if r.returncode:
                self.assertIn("ringtrace: ", r.stderr)
            elif args[0] == "analyze" and "--format=json" in args:
                json.loads(r.stdout)
            if args[0] == "export" and r.returncode:
                # A failed export leaves the output as it was (the last
                # trace's export, or nothing).
                self.assertEqual(open(out).read() if os.path.exists(out) else None, before)

    def test_truncated(self):
        def cut(rng, data):
            del data[len(data) // 2 + 3:]
        self.run_all(self.damaged_copy("truncated", cut))

    def test_random_bytes(self):
        def flip(rng, data):
            for _ in range(8):
                data[rng.randrange(len(data))] = rng.randrange(256)
        for i in range(12):
            self.run_all(self.damaged_copy("flipped%d" % i, flip))


class Errors(unittest.TestCase):
    def check(self, args, message, code=None):
        r = common.run(P, *args)
        self.assertNotEqual(r.returncode, 0, args)
        if code is not None:
            self.assertEqual(r.returncode, code, args)
        self.assertIn(message, r.stderr, args)
        self.assertNotIn("Traceback", r.stderr)

    def test_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "nope")
            self.check(["analyze", missing], "cannot read the trace in " + missing, 1)
            self.check(["export", "--format=chrome", missing, "-o",
                        os.path.join(tmp, "x.json")], "cannot read the trace", 1)
            self.assertFalse(os.path.exists(os.path.join(tmp, "x.json")))
            self.check(["report", missing, "-o", os.path.join(tmp, "r.html")],
                       "cannot read the trace", 1)
            for bad in ("foo", "app:a", "app:a,", ",app:b", "app:a,app:b,app:c",
                        "a,b", "app:a,app:a"):
                self.check(["analyze", "--pair", bad, missing], "bad pair", 2)
            for bad in ("10", "0ms", "-1ms", "10parsecs", "ms", "1e30s"):
                self.check(["analyze", "--interval", bad, missing], "bad interval", 2)
            self.check(["analyze", "--top", "-3", missing], "bad --top", 2)
            self.check(["analyze", "--format=xml", missing], "bad format", 2)
            self.check(["analyze"], "no trace directory", 2)
            self.check(["analyze", "--bogus", missing], "unknown option '--bogus'", 2)
            self.check(["analyze", "--interval"], "needs a value", 2)
            self.check(["export", "--format=chrome", missing], "no output file", 2)
            self.check(["export", missing, "-o", "x.json"], "no --format", 2)
            self.check(["export", "--format=svg", missing, "-o", "x.json"],
                       "unknown format", 2)
            self.check(["report", missing], "no output file", 2)
            not_trace = os.path.join(tmp, "empty")
            os.mkdir(not_trace)
            self.check(["analyze", not_trace], "cannot read the trace", 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
