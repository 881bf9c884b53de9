"""Helpers of the test_apps* tests: a private ringtraced per test (its own
RINGTRACE_RUNDIR, started with --foreground, killed at the end), the
`ringtrace` commands, instrumented programs (app_prog, driven on stdin)
and traces read back with babeltrace2's Python bindings."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import bt2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
APP_PROG = os.path.join(BUILD, "tests/daemon/app_prog")
APP_PAUSE = os.path.join(BUILD, "tests/daemon/app_pause")


class Program:
    """app_prog: one command per line, one answer line each."""

    def __init__(self, env):
        self.p = subprocess.Popen([APP_PROG], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, text=True)
        line = self.p.stdout.readline()
        assert line.startswith("ready "), f"app_prog: {line!r}"
        self.pid = int(line.split()[1])

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline()
        assert answer.startswith("ok"), f"app_prog {line!r}: {answer!r}"
        return answer.split()[1:]

    def exit(self, timeout=30):
        self.p.stdin.write("exit\n")
        self.p.stdin.flush()
        self.p.wait(timeout=timeout)
        err = self.p.stderr.read()
        return self.p.returncode, err

    def exe_range(self):
        """Address ranges of app_prog's executable mappings."""
        ranges = []
        with open(f"/proc/{self.pid}/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and parts[5].endswith("/app_prog") and "x" in parts[1]:
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    ranges.append((lo, hi))
        return ranges


class DlProgram(Program):
    """app_dl (load PATH / work R / exit), driven like app_prog."""

    def __init__(self, env):
        self.p = subprocess.Popen([os.path.join(BUILD, "tests/daemon/app_dl")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, text=True)
        line = self.p.stdout.readline()
        assert line.startswith("ready "), f"app_dl: {line!r}"
        self.pid = int(line.split()[1])


class Pausing:
    """app_pause (linked with the tests' copy of the library, whose hold
    points can keep a writer at a point of an event): one command per
    line, one answer line each."""

    def __init__(self, env, under=()):
        """`under`: the command app_pause runs under (ringtrace record
        ... --), whose process is self.p; self.pid is app_pause's."""
        self.p = subprocess.Popen([*under, APP_PAUSE], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  text=True)
        line = self.p.stdout.readline()
        assert line.startswith("ready "), f"app_pause: {line!r}"
        self.pid = int(line.split()[1])

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline()
        assert answer == "ok\n", f"app_pause {line!r}: {answer!r}"

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write("exit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)
        for f in (self.p.stdin, self.p.stdout, self.p.stderr):
            f.close()


def view_losses(env, path):
    """(events discarded, packets lost) in the traces under `path`, as
    `ringtrace view --stats` (our reader) counts them: the sums of its
    streams' columns."""
    r = subprocess.run([RINGTRACE, "view", "--stats", path], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.split("pkts lost\n", 1)[1].split("\n\n", 1)[0]
    discarded = lost = 0
    for row in rows.splitlines():
        m = re.match(r"^\d+\s+\S+\s+\d+\s+\d+\s+(\d+)\s+(\d+)$", row)
        assert m, f"view --stats row {row!r}"
        discarded += int(m.group(1))
        lost += int(m.group(2))
    return discarded, lost


class AppCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-apps-")
        self.rundir = os.path.join(self.tmp, "run")
        self.env = rtfixtures.private_env(self.tmp)
        self.programs = []
        self.daemon = None
        self.start_daemon()

    def start_daemon(self):
        self.daemon_log = open(os.path.join(self.tmp, "daemon.log"), "a")
        try:
            self.daemon = rtfixtures.start_daemon(RINGTRACED, self.env, self.daemon_log)
        except RuntimeError as e:
            self.fail(str(e))

    def tearDown(self):
        for prog in self.programs:
            if prog.p.poll() is None:
                prog.p.kill()
            prog.p.wait()
            for f in (prog.p.stdin, prog.p.stdout, prog.p.stderr):
                f.close()
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
        if self.daemon:
            self.daemon.wait()
        self.daemon_log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def rt(self, *args):
        r = subprocess.run([RINGTRACE, *args], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertEqual(r.returncode, 0, f"ringtrace {' '.join(args)}: {r.stderr}")
        return r.stdout

    def session(self, out, *events, contexts=(), name="s"):
        """Create session `name` writing to `out` (it becomes the current
        one), enable `events` and add `contexts` in its default channel."""
        self.rt("create", name, "-o", out)
        for ev in events:
            self.rt("enable-event", "-u", ev)
        if contexts:
            self.rt("add-context", "-u", *[a for c in contexts for a in ("-t", c)])

    def program(self):
        p = Program(self.env)
        self.programs.append(p)
        return p

    def out(self, name):
        return os.path.join(self.tmp, name)


def read_events(path):
    """Every event of the traces under `path`, in time order, as dicts:
    event (its name), payload fields, context fields (ctx_NAME) and stream_class (the channel's id)."""
    events = []
    for msg in rtfixtures.bt2_read(path)[0]:
        ev = msg.event
        e = {"event": ev.name}
        if ev.payload_field is not None:
            for k, v in ev.payload_field.items():
                e[k] = rtfixtures.bt2_plain(v)
        if ev.common_context_field is not None:
            for k, v in ev.common_context_field.items():
                e["ctx_" + k] = str(v) if isinstance(v, bt2._StringFieldConst) else int(v)
        e["stream_class"] = ev.stream.cls.id
        events.append(e)
    return events


def trace_dirs(root):
    """Directories under root holding a `metadata` file."""
    found = []
    for d, _, files in os.walk(root):
        if "metadata" in files:
            found.append(d)
    return sorted(found)
