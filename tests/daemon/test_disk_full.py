#!/usr/bin/python3
"""Write errors while recording: a disk that fills up (a small tmpfs;
needs root, exit 77 otherwise) and a trace directory removed under a
session.

- embedded `ringtrace record`: the trace stays readable (no torn packet)
  by babeltrace2 and `ringtrace view`, recorded + lost == emitted as
  readers count them, record says the trace is incomplete and exits
  non-zero; once space returns, recording resumes (every later event is
  there).
- a daemon session (the daemon started on demand, so it logs to
  RUNDIR/ringtraced.log, which status names): status shows the error,
  stop exits non-zero with the message and the session is stopped anyway,
  status counts recorded + lost == emitted; space freed, a new start
  records everything and stop and destroy succeed.
- `ringtrace record` through the daemon on a full disk: exits non-zero
  with the message, the trace is readable.
- a session whose trace directory is removed: destroy reports it; the
  same in embedded mode: record reports the stream file it cannot write.

usage: test_disk_full.py BUILD_DIR
"""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

if os.geteuid() != 0:
    print("skip: mounting a small tmpfs needs root")
    sys.exit(77)

from apps_common import APP_PROG, RINGTRACE, RINGTRACED, AppCase, read_events  # noqa: E402

import rtfixtures  # noqa: E402


def bt2_counts(path):
    """(events as (tag, seq), discarded events) as babeltrace2 reads them."""
    msgs, lost, _ = rtfixtures.bt2_read(path)
    return [(str(m.event.payload_field["tag"]), int(m.event.payload_field["seq"]))
            for m in msgs], lost


def summary_counts(path, env):
    """(recorded, lost) as `ringtrace summary` counts them: lost from every
    stream's discarded-events count, from 0 (babeltrace2 reports a loss
    only between two packets of a stream, not one carried by a stream's
    first packet, when its first packets were the ones lost)."""
    import re
    r = subprocess.run([RINGTRACE, "summary", path], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+) events recorded, (\d+) lost", r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    return int(m.group(1)), int(m.group(2))


def view_count(path, env):
    r = subprocess.run([RINGTRACE, "view", "--format=json", path], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return [(e["fields"]["tag"], e["fields"]["seq"]) for e in map(json.loads, r.stdout.splitlines())]


class SmallDisk:
    """A tmpfs of `size` with a `filler` file taking part of it."""

    def __init__(self, root, size, filler):
        self.path = os.path.join(root, "mnt")
        os.mkdir(self.path)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", self.path],
                       check=True)
        self.filler = os.path.join(self.path, "filler")
        with open(self.filler, "wb") as f:
            f.write(b"\0" * filler)

    def free(self):
        os.unlink(self.filler)

    def close(self):
        subprocess.run(["umount", "-l", self.path])


def chunk_tags(prefix, n):
    return [f"{prefix}{i}" for i in range(n)]


class Embedded(unittest.TestCase):
    def test_record_on_a_full_disk(self):
        tmp = tempfile.mkdtemp(prefix="rt-df-")
        self.addCleanup(shutil.rmtree, tmp, True)
        disk = SmallDisk(tmp, "512k", 448 * 1024)
        self.addCleanup(disk.close)
        out = os.path.join(disk.path, "t")
        env = dict(os.environ, RINGTRACE_RUNDIR=os.path.join(tmp, "run"))
        p = subprocess.Popen([RINGTRACE, "record", "--embedded", "-o", out, "--subbuf-size",
                              "4k", "--num-subbuf", "256", "--", APP_PROG],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, text=True)
        self.assertTrue(p.stdout.readline().startswith("ready"))

        def cmd(line):
            p.stdin.write(line + "\n")
            p.stdin.flush()
            self.assertTrue(p.stdout.readline().startswith("ok"), line)

        # 1 MiB per CPU holds every event: whatever the consumer's pace,
        # only the disk loses some.
        for tag in chunk_tags("a", 10):
            cmd(f"emit 1000 {tag}")
        # The program warns once writes fail: wait for it before freeing.
        ready, _, _ = select.select([p.stderr], [], [], 30)
        self.assertTrue(ready, "no warning from the program")
        warning = p.stderr.readline()
        self.assertIn("No space left on device", warning)
        disk.free()
        for tag in chunk_tags("b", 2):
            cmd(f"emit 1000 {tag}")
        p.stdin.write("exit\n")
        p.stdin.flush()
        _, err = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0, err)
        self.assertIn("is incomplete", err)
        self.assertIn("No space left on device", err)

        events, bt2_lost = bt2_counts(out)
        recorded, lost = summary_counts(out, env)
        self.assertEqual(recorded, len(events))
        self.assertEqual(recorded + lost, 12000, err)
        self.assertGreater(lost, 0)
        self.assertLessEqual(bt2_lost, lost)
        # Recorded events in order, each at most once; all of the b's.
        emitted = [(t, i) for t in chunk_tags("a", 10) + chunk_tags("b", 2)
                   for i in range(1000)]
        pos = {e: k for k, e in enumerate(emitted)}
        self.assertEqual([pos[e] for e in events], sorted(pos[e] for e in events))
        self.assertEqual(events[-2000:], emitted[-2000:])
        self.assertEqual(view_count(out, env), events)
        print(f"(embedded: {len(events)} recorded, {lost} lost)", end=" ")

    def test_record_removed_directory(self):
        """The stream files removed while the program records: the events
        written after are lost, and record says so (the one consumer checks
        that its stream file is still in the file system in both modes)."""
        tmp = tempfile.mkdtemp(prefix="rt-df-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "t")
        env = dict(os.environ, RINGTRACE_RUNDIR=os.path.join(tmp, "run"))
        # One CPU: the events after the removal go to the stream file that
        # was removed.
        cpu = min(os.sched_getaffinity(0))
        p = subprocess.Popen([RINGTRACE, "record", "--embedded", "-o", out, "--subbuf-size",
                              "4k", "--", APP_PROG],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, text=True,
                             preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        self.assertTrue(p.stdout.readline().startswith("ready"))

        def cmd(line):
            p.stdin.write(line + "\n")
            p.stdin.flush()
            self.assertTrue(p.stdout.readline().startswith("ok"), line)

        cmd("emit 500 a")
        for _ in range(3000):
            if any(f.startswith("channel0_") for f in os.listdir(out)):
                break
            time.sleep(0.01)
        else:
            self.fail("no stream file")
        for f in os.listdir(out):
            if f.startswith("channel0_"):
                os.unlink(os.path.join(out, f))
        cmd("emit 2000 b")
        p.stdin.write("exit\n")
        p.stdin.flush()
        _, err = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0, err)
        self.assertIn("is incomplete", err)
        self.assertIn("cannot write a stream file", err)
        self.assertIn("No such file or directory", err)


class DaemonSession(AppCase):
    def start_daemon(self):
        # Started on demand like `ringtrace create` does (detached): it
        # logs to RUNDIR/ringtraced.log.
        self.daemon_log = open(os.devnull, "w")
        subprocess.run([RINGTRACED, "--daemonize"], env=self.env, check=True, timeout=30)
        with open(os.path.join(self.rundir, "ringtraced.pid")) as f:
            self.daemon_pid = int(f.read())
        self.addCleanup(os.kill, self.daemon_pid, signal.SIGKILL)

    def rt_fails(self, *args):
        r = subprocess.run([RINGTRACE, *args], capture_output=True, text=True, env=self.env,
                           timeout=60)
        self.assertNotEqual(r.returncode, 0, f"ringtrace {' '.join(args)}: {r.stdout}")
        return r.stderr

    def status_counts(self):
        import re
        st = self.rt("status")
        m = re.search(r"ch: buffer usage ([0-9.]+)% .*, events (\d+), lost (\d+), ", st)
        self.assertIsNotNone(m, st)
        return st, int(m.group(2)), int(m.group(3))

    def test_session_on_a_full_disk(self):
        disk = SmallDisk(self.tmp, "512k", 448 * 1024)
        self.addCleanup(disk.close)
        out = os.path.join(disk.path, "trace")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ch", "--subbuf-size", "4k", "--num-subbuf", "256")
        self.rt("enable-event", "-u", "-c", "ch", "app:*")
        self.rt("start")
        p = self.program()
        for tag in chunk_tags("a", 10):
            p.cmd(f"emit 1000 {tag}")
        st, events, lost = self.status_counts()
        self.assertIn("Write errors: cannot write", st)
        self.assertIn("No space left on device", st)
        log = os.path.join(self.rundir, "ringtraced.log")
        self.assertIn(f"Daemon log: {log}", st)
        with open(log) as f:
            self.assertIn("No space left on device", f.read())
        self.assertEqual(events + lost, 10000)

        err = self.rt_fails("stop")
        self.assertIn("stopped, but its trace is incomplete", err)
        self.assertIn("No space left on device", err)
        st, events, lost = self.status_counts()
        self.assertIn("Session s: [inactive]", st)
        self.assertEqual(events + lost, 10000)
        self.assertGreater(lost, 0)

        disk.free()
        self.rt("start")
        for tag in chunk_tags("b", 2):
            p.cmd(f"emit 1000 {tag}")
        self.rt("stop")
        st, events, lost = self.status_counts()
        self.assertEqual(events + lost, 12000)
        self.rt("destroy", "s")
        self.assertEqual(p.exit(), (0, ""))

        recorded, bt2_lost = bt2_counts(out)
        self.assertEqual(summary_counts(out, self.env), (events, lost))
        self.assertEqual(len(recorded), events)
        self.assertLessEqual(bt2_lost, lost)
        rlost = lost
        emitted = [(t, i) for t in chunk_tags("a", 10) + chunk_tags("b", 2)
                   for i in range(1000)]
        pos = {e: k for k, e in enumerate(emitted)}
        self.assertEqual([pos[e] for e in recorded], sorted(pos[e] for e in recorded))
        self.assertEqual(recorded[-2000:], emitted[-2000:])
        self.assertEqual(view_count(out, self.env), recorded)
        print(f"(daemon: {len(recorded)} recorded, {rlost} lost)", end=" ")

    def test_record_through_the_daemon(self):
        disk = SmallDisk(self.tmp, "512k", 448 * 1024)
        self.addCleanup(disk.close)
        out = os.path.join(disk.path, "t")
        script = "".join(f"emit 1000 a{i}\n" for i in range(10)) + "exit\n"
        r = subprocess.run([RINGTRACE, "record", "-o", out, "--subbuf-size", "4k",
                            "--num-subbuf", "256", "--", APP_PROG], input=script,
                           capture_output=True, text=True, env=self.env, timeout=120)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn("No space left on device", r.stderr)
        self.assertIn("is incomplete", r.stderr)
        # Whole packets only: both readers read it to the end.
        recorded, _ = bt2_counts(out)
        self.assertGreater(len(recorded), 0)
        self.assertEqual(view_count(out, self.env), recorded)

    def test_destroy_reports_and_removed_directory(self):
        out = self.out("gone")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "ch", "--subbuf-size", "4k")
        self.rt("enable-event", "-u", "-c", "ch", "app:*")
        self.rt("start")
        p = self.program()
        # One CPU: the events after the removal go to a stream file that
        # was removed (a new one would be created in a new directory).
        os.sched_setaffinity(p.pid, {min(os.sched_getaffinity(0))})
        p.cmd("emit 500 a")
        self.status_counts()
        shutil.rmtree(out)
        p.cmd("emit 2000 b")
        st, _, _ = self.status_counts()
        self.assertIn("Write errors: cannot write a stream file", st)
        # Destroying the active session stops it: reported, and gone.
        err = self.rt_fails("destroy", "s")
        self.assertIn("destroyed, but its trace is incomplete", err)
        self.assertIn("No such file or directory", err)
        self.assertNotIn("s ", self.rt("list"))
        self.assertEqual(p.exit(), (0, ""))


if __name__ == "__main__":
    unittest.main(verbosity=2)
