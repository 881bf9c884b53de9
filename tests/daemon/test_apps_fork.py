#!/usr/bin/python3
"""Programs that fork, in every mode: no tracing, embedded (`record
--embedded`, RINGTRACE_OUTPUT) and through a private ringtraced (`record`,
a session started before the program). Traces are read back with
babeltrace2 and `ringtrace view` and checked event by event.

usage: test_apps_fork.py BUILD_DIR
"""
import os
import subprocess
import sys
import unittest

from apps_common import AppCase, BUILD, RINGTRACE

FORKER = os.path.join(BUILD, "tests/integration/forker")


class ForkLocks(AppCase):
    """No lock of the library is left held in a fork child: a thread keeps
    the registry's lock busy while the main thread forks children that
    call exit(0), whose destructors take it (the child hung before)."""

    def run_stress(self, cmd, env):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_no_tracing(self):
        env = dict(self.env, RINGTRACE_NO_DAEMON="1")
        self.run_stress([FORKER, "stress", "300"], env)

    def test_daemon_client(self):
        self.run_stress([FORKER, "stress", "300"], self.env)

    def test_embedded_output(self):
        env = dict(self.env, RINGTRACE_OUTPUT=self.out("t"))
        self.run_stress([FORKER, "stress", "300"], env)

    def test_record_embedded(self):
        self.run_stress([RINGTRACE, "record", "--embedded", "-q", "-o", self.out("t"), "--",
                         FORKER, "stress", "300"], self.env)


if __name__ == "__main__":
    unittest.main(verbosity=2)
