#!/usr/bin/python3
"""A program that scribbles on the buffers it shares with the user's other
programs (per-uid buffers are mapped writable by all of them), while
another program records: random bytes over packet headers, another stream
id, a content size past the sub-buffer, changed write_count and commit
counters. The other program runs on another CPU, so none of its events
shares a sub-buffer with the damage. Then: `stop` succeeds, `status`
reports sane figures (usage within 100 %, corrupt packets counted), the
trace is read by babeltrace2 and `ringtrace view`, and every event of the
other program is there, checked event by event.

usage: test_apps_scribble.py BUILD_DIR
"""
import json
import os
import re
import subprocess
import time
import unittest

from apps_common import BUILD, RINGTRACE, AppCase, Program, read_events

APP_SCRIBBLE = os.path.join(BUILD, "tests/daemon/app_scribble")


class Scribbler(Program):
    def __init__(self, env):
        self.p = subprocess.Popen([APP_SCRIBBLE], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, text=True)
        line = self.p.stdout.readline()
        assert line.startswith("ready "), f"app_scribble: {line!r}"
        self.pid = int(line.split()[1])


class Scribbled(AppCase):
    def test_scribbled_buffers_damage_no_other_program(self):
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            self.skipTest("needs two CPUs")
        out = self.out("trace")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ch", "--subbuf-size", "4k", "--num-subbuf", "64")
        self.rt("enable-event", "-u", "-c", "ch", "app:*")
        self.rt("enable-event", "-u", "-c", "ch", "scribble:*")
        self.rt("add-context", "-u", "-c", "ch", "-t", "vpid")
        self.rt("start")
        other = self.program()
        os.sched_setaffinity(other.pid, {cpus[0]})
        bad = Scribbler(self.env)
        self.programs.append(bad)
        bad.cmd(f"pin {cpus[1]}")
        expected = []
        for rnd, mode in enumerate(("headers", "stream_id", "content", "counters")):
            other.cmd(f"emit 500 r{rnd}a")
            bad.cmd("emit 300")
            self.assertEqual(bad.cmd(f"scribble {mode}"), ["1"], mode)
            other.cmd(f"emit 500 r{rnd}b")
            bad.cmd("emit 300")
            expected += [(f"r{rnd}a", i) for i in range(500)]
            expected += [(f"r{rnd}b", i) for i in range(500)]
            status = self.rt("status")
            m = re.search(r"ch: buffer usage ([0-9.]+)% \((\d+) of (\d+) bytes", status)
            self.assertIsNotNone(m, status)
            self.assertLessEqual(float(m.group(1)), 100.0, status)
            self.assertLessEqual(int(m.group(2)), int(m.group(3)), status)
        t0 = time.monotonic()
        self.rt("stop")
        print(f"(stop took {time.monotonic() - t0:.2f} s)", end=" ")
        status = self.rt("status")
        m = re.search(r"ch: buffer usage ([0-9.]+)% .*, events (\d+), lost (\d+), "
                      r"sub-buffers lost (\d+), corrupt packets dropped (\d+)", status)
        self.assertIsNotNone(m, status)
        self.assertLessEqual(float(m.group(1)), 100.0, status)
        # Status syncs the buffers: each round's damaged packets were
        # read (and dropped) before the next round.
        self.assertGreater(int(m.group(5)), 0, status)
        for p in (other, bad):
            self.assertEqual(p.exit(), (0, ""))

        events = read_events(out)
        mine = [(e["tag"], e["seq"]) for e in events
                if e["event"] == "app:tick" and e["ctx_vpid"] == other.pid]
        self.assertEqual(mine, expected)
        for e in events:
            if e["event"] == "app:tick":
                self.assertEqual(e["value"], 3 * e["seq"])
        self.assertEqual(int(m.group(2)), len(events), status)

        r = subprocess.run([RINGTRACE, "view", "--format=json", out], capture_output=True,
                           text=True, env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        viewed = [json.loads(l) for l in r.stdout.splitlines()]
        self.assertEqual([(v["fields"]["tag"], v["fields"]["seq"]) for v in viewed
                          if v["name"] == "app:tick" and v["context"]["vpid"] == other.pid],
                         expected)
        self.assertEqual(len(viewed), len(events))
        self.rt("destroy", "s")


if __name__ == "__main__":
    unittest.main(verbosity=2)
