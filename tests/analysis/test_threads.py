#!/usr/bin/python3
"""Thread identity in `ringtrace record`, view, analyze, export and report,
on the trace of tests/analysis/threads.c (named threads, one renamed by
another thread, payload fields called `pid`, every automatic pairing
pattern), recorded in embedded mode and through a private ringtraced.

usage: test_threads.py BUILD_DIR
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

P = common.Paths(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
PROGRAM = os.path.join(P.build, "tests/analysis/threads")
RINGTRACED = os.path.join(P.build, "src/daemon/ringtraced")
N = 20
PAIRS = {"app:begin/end": ("app:begin", "app:end"),
         "app:entry/exit": ("app:entry", "app:exit"),
         "app:start/stop": ("app:start", "app:stop"),
         "app:io": ("app:io_begin", "app:io_end")}


def parse_ids(stdout):
    """What threads.c printed: {"pid": [..], "main": [..], ...} as ints."""
    return {w[0]: [int(x) for x in w[1:]] for w in
            (line.split() for line in stdout.splitlines())}


class Embedded(unittest.TestCase):
    """`ringtrace record` in embedded mode (no daemon)."""

    @classmethod
    def record_env(cls):
        return dict(os.environ, RINGTRACE_NO_DAEMON="1")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-threads-")
        cls.env = cls.record_env()
        cls.trace = os.path.join(cls.tmp, "trace")
        r = subprocess.run([P.ringtrace, "record", "-o", cls.trace, "--", PROGRAM,
                            str(N)], capture_output=True, text=True, timeout=120,
                           env=cls.env)
        if r.returncode != 0:
            raise RuntimeError("record failed: %s %s" % (r.stdout, r.stderr))
        cls.record_stderr = r.stderr
        cls.ids = parse_ids(r.stdout)
        cls.w0, cls.w1 = cls.ids["workers"]
        cls.main, cls.late = cls.ids["main"][0], cls.ids["late"][0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_ok(self, *args):
        r = common.run(P, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def names(self):
        """{tid: thread name} the program set (the late thread's last)."""
        return {self.main: "rt-main", self.w0: "worker-0", self.w1: "worker-1",
                self.late: "late-b"}

    def test_recorded_in_this_mode(self):
        """Embedded mode's trace names its process in the env; the
        daemon's (per-user buffers) does not."""
        with open(os.path.join(self.trace, "metadata")) as f:
            env_pid = "vpid = %d;" % self.ids["pid"][0] in f.read()
        self.assertEqual(env_pid, not isinstance(self, Daemon), self.record_stderr)
        self.assertNotIn("embedded mode instead", self.record_stderr)

    def test_view_shows_each_thread(self):
        """Every event carries its process, thread id and thread name (the
        late thread's second tick its new name)."""
        seen = collections.defaultdict(set)
        ticks = []
        for line in self.run_ok("view", "--format=json", self.trace).splitlines():
            e = json.loads(line)
            c = e["context"]
            self.assertEqual(c["vpid"], self.ids["pid"][0])
            seen[c["vtid"]].add(c["procname"])
            if e["name"] == "app:tick":
                ticks.append(c["procname"])
        want = {t: {n} for t, n in self.names().items()}
        want[self.late] = {"late-a", "late-b"}
        self.assertEqual(dict(seen), want)
        self.assertEqual(ticks, ["late-a", "late-b"])
        text = self.run_ok("view", "-e", "app:setup", self.trace)
        self.assertIn('procname = "rt-main"', text)

    def test_analyze_threads(self):
        """One row per thread, keyed by its tid, with its name; no
        `unknown` key."""
        a = json.loads(self.run_ok("analyze", "--threads", "--format=json", self.trace))
        rows = {int(t["key"]): t.get("thread") for t in a["threads"]}
        self.assertEqual(rows, self.names())
        text = self.run_ok("analyze", "--threads", self.trace)
        self.assertNotIn("unknown", text)
        row = next(x for x in text.splitlines() if x.startswith(str(self.w1) + " "))
        self.assertEqual(row.split()[1], "worker-1")

    def test_pairs_and_outliers(self):
        """P:begin/P:end, P:entry/P:exit, P:start/P:stop and P:X_begin/P:X_end
        pair per thread; the outlier row names the thread."""
        a = json.loads(self.run_ok("analyze", "--durations", "--format=json", self.trace))
        dur = {d["pair"]: d for d in a["durations"]}
        self.assertEqual(set(dur), set(PAIRS))
        for label, (b, e) in PAIRS.items():
            d = dur[label]
            self.assertEqual((d["begin"], d["end"]), (b, e))
            self.assertEqual((d["count"], d["unmatched_begin"], d["unmatched_end"]),
                             (2 * N, 0, 0), label)
        # Each outlier names its thread with its key (which pair is the
        # longest is up to the scheduler: not checked).
        names = self.names()
        for label in PAIRS:
            for o in dur[label]["outliers"]:
                self.assertIn(int(o["key"]), (self.w0, self.w1))
                self.assertEqual(o["thread"], names[int(o["key"])])
        text = self.run_ok("analyze", "--durations", self.trace)
        lines = text.splitlines()
        at = lines.index("app:start/stop  (app:start .. app:stop)")
        head = next(i for i in range(at, len(lines)) if "outliers:" in lines[i])
        row = lines[head + 2].split()[-3:]
        self.assertEqual(row, ["tid", row[1], "(%s)" % names[int(row[1])]])

    def test_chrome_pid_and_threads(self):
        """A payload field called pid does not split the process; each
        thread gets its name (again when it is renamed)."""
        doc = json.loads(self.run_ok("export", "--format=chrome", "-o", "-", self.trace))
        evs = doc["traceEvents"]
        self.assertEqual({e["pid"] for e in evs}, {self.ids["pid"][0]})
        setup = [e for e in evs if e["name"] == "app:setup"]
        self.assertEqual([e["args"] for e in setup], [{"pid": 1}])
        names = [(e["tid"], e["args"]["name"]) for e in evs
                 if e["ph"] == "M" and e["name"] == "thread_name"]
        procs = [(e["pid"], e["args"]["name"]) for e in evs
                 if e["ph"] == "M" and e["name"] == "process_name"]
        self.assertEqual(procs, [(self.ids["pid"][0], "rt-main")])  # its main thread's
        want = set(self.names().items()) | {(self.late, "late-a")}
        self.assertEqual(set(names), want)
        self.assertEqual(len(names), len(want))
        x = collections.Counter((e["name"], e["tid"]) for e in evs if e["ph"] == "X")
        for label in PAIRS:
            self.assertEqual((x[(label, self.w0)], x[(label, self.w1)]), (N, N), label)

    def test_report_lanes(self):
        out = os.path.join(self.tmp, "report-%s.html" % type(self).__name__)
        self.run_ok("report", self.trace, "-o", out)
        with open(out) as f:
            html = f.read()
        for tid, name in self.names().items():
            self.assertIn('"label":"tid %d (%s)"' % (tid, name), html)
        self.assertIn('"thread":"worker-1"', html)


class Daemon(Embedded):
    """`ringtrace record` through a private ringtraced."""

    @classmethod
    def record_env(cls):
        env = rtfixtures.private_env(cls.tmp)
        cls.log = open(os.path.join(cls.tmp, "daemon.log"), "a")
        cls.daemon = rtfixtures.start_daemon(RINGTRACED, env, cls.log)
        return env

    @classmethod
    def setUpClass(cls):
        cls.daemon = None
        try:
            super().setUpClass()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.daemon:
            cls.daemon.kill()
            cls.daemon.wait()
            cls.log.close()
        super().tearDownClass()


if __name__ == "__main__":
    unittest.main(verbosity=2)
