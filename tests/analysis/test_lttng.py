#!/usr/bin/python3
"""analyze and export on an LTTng-UST trace: the thread key comes from the
vtid context, the Chrome pid/tid from vpid/vtid, and nested payload values
(arrays, enums) become JSON arrays and labels. Checked against bt2.

The trace is recorded by a private session daemon run as "nobody" when
the test runs as root (a root daemon would use the system-wide run
directory), with tests/reader's rtr_lttng_app as the traced program.

usage: test_lttng.py BUILD_DIR     (exit 77: LTTng not available)
"""
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import bt2  # noqa: E402

P = common.Paths(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
APP = os.path.join(P.build, "tests/reader/rtr_lttng_app")
ROUNDS = 20
NOBODY = 65534


class LttngSession:
    """A private lttng-sessiond in a scratch home; record() runs APP."""

    def __init__(self, home):
        self.home = home
        self.env = dict(os.environ, HOME=home, LTTNG_HOME=home)
        self.env.pop("LTTNG_UST_DEBUG", None)
        self.as_user = []
        if os.getuid() == 0:
            self.as_user = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                            "--clear-groups"]
            os.chown(home, NOBODY, NOBODY)
        os.chmod(home, 0o755)
        self.daemon_pid = None

    def run(self, *cmd):
        r = subprocess.run(self.as_user + list(cmd), env=self.env, cwd=self.home,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s%s" % (" ".join(cmd), r.stdout, r.stderr))

    def record(self, trace, events=("rtrtest:*",), contexts=("vpid", "vtid")):
        self.run("lttng-sessiond", "--daemonize", "--no-kernel")
        pid_file = os.path.join(self.home, ".lttng/lttng-sessiond.pid")
        deadline = time.monotonic() + 10
        while not os.path.exists(pid_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(pid_file) as f:
            self.daemon_pid = int(f.read())
        app = os.path.join(self.home, "app")
        shutil.copy(APP, app)
        os.chmod(app, 0o755)
        self.run("lttng", "create", "analysis", "--output=" + trace)
        for ev in events:
            self.run("lttng", "enable-event", "-u", ev)
        self.run("lttng", "add-context", "-u", *[a for c in contexts for a in ("-t", c)])
        self.run("lttng", "start")
        self.run(app, str(ROUNDS))
        self.run("lttng", "stop")
        self.run("lttng", "destroy")

    def stop(self):
        if not self.daemon_pid:
            return
        try:
            os.kill(self.daemon_pid, signal.SIGTERM)
            for _ in range(50):
                os.kill(self.daemon_pid, 0)
                time.sleep(0.1)
        except (ProcessLookupError, PermissionError):
            pass


class Lttng(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-analysis-lttng-")
        cls.session = LttngSession(cls.tmp)
        cls.trace = os.path.join(cls.tmp, "trace")
        try:
            cls.session.record(cls.trace)
        finally:
            cls.session.stop()
        cls.events = []
        for msg in bt2.TraceCollectionMessageIterator(cls.trace):
            if type(msg) is bt2._EventMessageConst:
                ctx = msg.event.common_context_field
                cls.events.append((msg.event.name, int(ctx["vpid"]), int(ctx["vtid"])))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_keys_from_vtid(self):
        r = common.run(P, "analyze", "--format=json", "--threads", "--rates", self.trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        a = json.loads(r.stdout)
        self.assertEqual(a["events"], len(self.events))
        self.assertGreaterEqual(a["events"], 5 * ROUNDS)
        want = collections.Counter(str(tid) for _, _, tid in self.events)
        self.assertEqual({t["key"]: t["events"] for t in a["threads"]}, dict(want))
        self.assertEqual({n["name"]: n["total"] for n in a["rates"]["names"]},
                         dict(collections.Counter(n for n, _, _ in self.events)))

    def test_chrome_pid_tid(self):
        out = os.path.join(self.tmp, "lttng.json")
        r = common.run(P, "export", "--format=chrome", self.trace, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            evs = [e for e in json.load(f)["traceEvents"] if e["ph"] != "M"]
        self.assertEqual([(e["name"], e["pid"], e["tid"]) for e in evs], self.events)
        arrays = next(e for e in evs if e["name"] == "rtrtest:arrays")
        self.assertIsInstance(arrays["args"]["a3"], list)
        self.assertEqual(len(arrays["args"]["a3"]), 3)
        labels = {e["args"]["col"] for e in evs if e["name"] == "rtrtest:enums"
                  and isinstance(e["args"].get("col"), str)}
        self.assertTrue(labels & {"red", "green", "many", "next"}, labels)



class LttngSymbols(unittest.TestCase):
    """view resolves the ip context of an LTTng-UST trace from LTTng's
    own state dump (lttng_ust_statedump:*, its build ids arrays of
    integers), as babeltrace2's debug-info filter does."""

    def test_view_symbols_match_babeltrace2(self):
        tmp = tempfile.mkdtemp(prefix="rt-analysis-lttng-sym-")
        self.addCleanup(shutil.rmtree, tmp, True)
        session = LttngSession(tmp)
        trace = os.path.join(tmp, "trace")
        try:
            session.record(trace, events=("rtrtest:*", "lttng_ust_statedump:*"),
                           contexts=("vpid", "vtid", "ip"))
        finally:
            session.stop()
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "../support"))
        import rtfixtures
        bt = rtfixtures.bt2_debug_info(trace)
        r = common.run(P, "view", "-e", "rtrtest:*", trace)
        self.assertEqual(r.returncode, 0, r.stderr)
        compared = 0
        for line in r.stdout.splitlines():
            # LTTng declares ip in decimal.
            m = re.search(r" (rtrtest:[a-z_0-9]+): .*ip = (0x[0-9a-f]+|[0-9]+)(?: <([^>]*)>)?",
                          line)
            self.assertTrue(m, line)
            want = bt.get((m.group(1), int(m.group(2), 0)))
            self.assertTrue(want, "babeltrace2 resolves " + line)
            self.assertEqual(m.group(3), want, line)
            compared += 1
        self.assertGreaterEqual(compared, 5 * ROUNDS)

if __name__ == "__main__":
    missing = [t for t in ("lttng", "lttng-sessiond") if not shutil.which(t)]
    if missing or not os.path.exists(APP) or (os.getuid() == 0 and not shutil.which("setpriv")):
        print("LTTng not available (%s): skipped" % (missing or APP))
        sys.exit(77)
    unittest.main(verbosity=2)
