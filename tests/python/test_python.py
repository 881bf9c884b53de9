#!/usr/bin/python3
"""The `ringtrace` Python package, installed: `make install PREFIX=DIR`'s
step (cmake --install) into a temporary prefix puts it under
DIR/lib/python3/dist-packages; app_logging.py, run by /usr/bin/python3
from there under the installed `ringtrace record`, logs records of every
level (a custom one, a formatter, a NUL, non-ASCII, 10 KB, an exception,
another thread) through ringtrace.LoggingHandler, and every record is
found in the trace, in order, with its fields (babeltrace2 and our
reader); --loglevel WARNING keeps the records at WARNING and above; run
without tracing, the handler records nothing and the program runs.

usage: test_python.py BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import bt2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1))
APP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app_logging.py")
# LTTng's level (the event class's) for a Python level.
LEVELS = ((50, bt2.EventClassLogLevel.CRITICAL), (40, bt2.EventClassLogLevel.ERROR),
          (30, bt2.EventClassLogLevel.WARNING), (20, bt2.EventClassLogLevel.INFO),
          (0, bt2.EventClassLogLevel.DEBUG))


def class_level(levelno):
    return next(lt for py, lt in LEVELS if levelno >= py)


class Python(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rt-python-")
        cls.prefix = os.path.join(cls.tmp.name, "prefix")
        subprocess.run(["cmake", "--install", BUILD, "--prefix", cls.prefix],
                       check=True, capture_output=True, timeout=300)
        cls.site = os.path.join(cls.prefix, "lib/python3/dist-packages")
        cls.env = rtfixtures.private_env(cls.tmp.name, PYTHONPATH=cls.site)
        cls.env.pop("LD_LIBRARY_PATH", None)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_app(self, *record_opts, info=True):
        trace = os.path.join(self.tmp.name, "trace%d" % len(os.listdir(self.tmp.name)))
        cmd = [os.path.join(self.prefix, "bin/ringtrace"), "record", "-q", "-o", trace,
               *record_opts, "--", "/usr/bin/python3", APP]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "enabled %s" % info)
        # The package's library is the installed one, beside it.
        self.assertEqual(lines[1], "library " + os.path.join(self.prefix, "lib/libringtrace.so.0"))
        return trace, json.loads(lines[2])

    def check(self, trace, want):
        events, discarded, lost = rtfixtures.bt2_read(trace)
        self.assertEqual((discarded, lost), (0, 0))
        got = [m.event for m in events if m.event.name == "python:log"]
        self.assertEqual(len(got), len(want))
        fields = ["logger_name", "int_loglevel", "msg", "filename", "lineno", "funcName",
                  "thread", "threadName"]
        for k, (e, w) in enumerate(zip(got, want)):
            p = rtfixtures.bt2_plain(e.payload_field)
            self.assertEqual(list(p), fields)
            self.assertEqual(p, {f: w[f] for f in fields}, "record %d" % k)
            self.assertEqual(e.cls.log_level, class_level(w["levelno"]), "record %d" % k)
        mine = [e["payload"] for e in rtfixtures.rtr_dump(BUILD, trace)
                if e["name"] == "python:log"]
        self.assertEqual(mine, [rtfixtures.bt2_plain(e.payload_field) for e in got])

    def test_every_record(self):
        trace, want = self.run_app()
        self.assertEqual(len(want), 12)
        self.check(trace, want)

    def test_loglevel(self):
        trace, want = self.run_app("--loglevel", "WARNING", info=False)
        self.check(trace, [w for w in want if w["levelno"] >= 30])

    def test_not_traced(self):
        r = subprocess.run(["/usr/bin/python3", APP], capture_output=True, text=True,
                           timeout=120, env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0], "enabled False")


if __name__ == "__main__":
    unittest.main(verbosity=2)
