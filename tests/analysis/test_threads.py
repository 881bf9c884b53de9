#!/usr/bin/python3
"""Thread identity in `ringtrace record`, view, analyze, export and report,
on the trace of tests/analysis/threads.c (named threads, payload fields
called `pid`, every automatic pairing pattern).

usage: test_threads.py BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

P = common.Paths(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
PROGRAM = os.path.join(P.build, "tests/analysis/threads")
N = 20


def record(trace, *opts):
    """Record threads.c in embedded mode; return what it printed
    ({"pid": [..], "main": [..], ...} as ints)."""
    env = dict(os.environ, RINGTRACE_NO_DAEMON="1")
    r = subprocess.run([P.ringtrace, "record", "-q", "-o", trace, *opts, "--",
                        PROGRAM, str(N)], capture_output=True, text=True,
                       timeout=120, env=env)
    if r.returncode != 0:
        raise RuntimeError("record failed: %s %s" % (r.stdout, r.stderr))
    return {w[0]: [int(x) for x in w[1:]] for w in
            (line.split() for line in r.stdout.splitlines())}


class Threads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rt-threads-")
        cls.trace = os.path.join(cls.tmp.name, "trace")
        cls.ids = record(cls.trace)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_ok(self, *args):
        r = common.run(P, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_chrome_pid_is_the_process(self):
        """A payload field called pid does not split the process: every
        event (and metadata event) has the recording's pid."""
        doc = json.loads(self.run_ok("export", "--format=chrome", "-o", "-", self.trace))
        pids = {e["pid"] for e in doc["traceEvents"]}
        self.assertEqual(pids, {self.ids["pid"][0]})
        setup = [e for e in doc["traceEvents"] if e["name"] == "app:setup"]
        self.assertEqual(len(setup), 1)
        self.assertEqual(setup[0]["args"], {"pid": 1})


if __name__ == "__main__":
    unittest.main(verbosity=2)
