#!/usr/bin/python3
"""The command line's messages: every command's usage errors in one style
(`ringtrace: CMD: what went wrong (see 'ringtrace CMD --help')`, exit 2),
--help on each command, --version, and the messages that used to mislead
(a program that cannot start, one that ends with _exit or crashes in
embedded mode, `summary`, `view` of a session still recording, an empty
./ringtrace-traces left behind).

usage: test_messages.py BUILD_DIR C_COMPILER
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1))
CC = sys.argv.pop(1)
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
BURST = os.path.join(BUILD, "tests/integration/burst")
NO_DAEMON = dict(os.environ, RINGTRACE_NO_DAEMON="1")

# (command, arguments): bad usage of each command.
BAD_USAGE = (
    ("record", ["--frobnicate", "--", "true"]),
    ("record", []),
    ("record", ["--subbuf-size", "5000", "--", "true"]),
    ("record", ["-t", "nosuchcontext", "--", "true"]),
    ("record", ["--loglevel"]),
    ("summary", []),
    ("summary", ["a", "b"]),
    ("summary", ["--frobnicate"]),
    ("view", ["--frobnicate", "x"]),
    ("view", []),
    ("view", ["--limit", "many", "x"]),
    ("view", ["--format", "xml", "x"]),
    ("analyze", ["--frobnicate", "x"]),
    ("analyze", []),
    ("analyze", ["--top", "x", "x"]),
    ("analyze", ["--interval", "1parsec", "x"]),
    ("analyze", ["--pair", "nocolon", "x"]),
    ("export", ["--frobnicate"]),
    ("export", ["--format=chrome", "x"]),
    ("export", ["--format=svg", "-o", "out.json", "x"]),
    ("report", ["--frobnicate"]),
    ("report", ["x"]),
    ("report", ["--lane-cap", "0", "-o", "r.html", "x"]),
    ("snapshot", ["frobnicate"]),
)


def commands():
    """Every command `ringtrace --help` lists."""
    r = subprocess.run([RINGTRACE, "--help"], capture_output=True, text=True, timeout=30)
    return [m.group(1) for m in re.finditer(r"^  ([a-z-]+)\s", r.stdout, re.M)]


def run(args, cwd=None, env=None):
    return subprocess.run([RINGTRACE, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env if env is not None else NO_DAEMON)


class Usage(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-msg-")
        # No daemon is started: session commands must fail on usage first.
        self.env = dict(NO_DAEMON, RINGTRACE_RUNDIR=os.path.join(self.tmp, "run"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_usage_error(self, cmd, args):
        r = run([cmd, *args], cwd=self.tmp, env=self.env)
        what = "%s %s: %s" % (cmd, args, r.stderr)
        self.assertEqual(r.returncode, 2, what)
        self.assertTrue(r.stderr.startswith("ringtrace: %s: " % cmd), what)
        self.assertIn("(see 'ringtrace %s --help')" % cmd, r.stderr, what)
        self.assertEqual(r.stdout, "", what)

    def test_table(self):
        for cmd, args in BAD_USAGE:
            self.check_usage_error(cmd, args)

    def test_every_command(self):
        """An unknown option, and --help, on every command."""
        cmds = commands()
        self.assertGreater(len(cmds), 20)
        for cmd in cmds:
            self.check_usage_error(cmd, ["--no-such-option"])
            r = run([cmd, "--help"], cwd=self.tmp, env=self.env)
            self.assertEqual(r.returncode, 0, cmd)
            self.assertIn("ringtrace %s" % cmd, r.stdout, cmd)
            self.assertEqual(r.stderr, "", cmd)

    def test_unknown_command_and_version(self):
        r = run(["frobnicate"])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "ringtrace: unknown command 'frobnicate' "
                                   "(see 'ringtrace --help')\n")
        for opt in ("--version", "-V"):
            r = run([opt])
            self.assertEqual(r.returncode, 0)
            self.assertRegex(r.stdout, r"^ringtrace \d+\.\d+")


class Recording(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-msg-")
        self.trace = os.path.join(self.tmp, "trace")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_summary_and_suggestion(self):
        r = run(["record", "-o", self.trace, "--", BURST, "100", "return"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ringtrace: trace written to %s" % self.trace, r.stderr)
        self.assertIn("view it with: ringtrace view %s" % self.trace, r.stderr)
        self.assertNotIn("were lost", r.stderr)
        s = run(["summary", self.trace])
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertNotIn("written", s.stdout)
        self.assertTrue(s.stdout.startswith("trace %s (" % self.trace), s.stdout)
        self.assertIn("101 events recorded", s.stdout)

    def test_missing_shared_library(self):
        """The loader's message, and ours says the program could not
        start; no empty ./ringtrace-traces is left behind."""
        lib = os.path.join(self.tmp, "libgone.so")
        src = os.path.join(self.tmp, "gone.c")
        with open(src, "w") as f:
            f.write("int gone(void) { return 0; }\n")
        subprocess.run([CC, "-shared", "-fPIC", "-o", lib, src], check=True)
        with open(src, "w") as f:
            f.write("int gone(void);\nint main(void) { return gone(); }\n")
        prog = os.path.join(self.tmp, "needs-gone")
        subprocess.run([CC, "-o", prog, src, "-L", self.tmp, "-lgone",
                        "-Wl,-rpath," + self.tmp], check=True)
        os.unlink(lib)
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        r = run(["record", "--", prog], cwd=work)
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertIn("error while loading shared libraries: libgone.so", r.stderr)
        self.assertIn("ringtrace: record: '%s' exited with status 127 before it wrote a "
                      "trace: it could not start" % prog, r.stderr)
        self.assertNotIn("linked with libringtrace", r.stderr)
        self.assertEqual(os.listdir(work), [])

    def test_not_linked_leaves_nothing(self):
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        r = run(["record", "--", "true"], cwd=work)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("is it linked with libringtrace", r.stderr)
        self.assertEqual(os.listdir(work), [])
        r = run(["record", "--", "/nonexistent/program"], cwd=work)
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertEqual(os.listdir(work), [])

    def test_exit_without_flush(self):
        """_exit and a crash in embedded mode: what was lost is said, what
        was written is kept (the summary reads it)."""
        for how, says in (("_exit", "ended without stopping the trace (_exit?)"),
                          ("abort", "was killed by signal 6 (Aborted)")):
            trace = os.path.join(self.tmp, how)
            r = run(["record", "-o", trace, "--subbuf-size", "4k", "--num-subbuf", "64",
                     "--", BURST, "20000", how])
            self.assertIn("ringtrace: record: '%s' %s: in embedded mode, the events still "
                          "in its buffers (up to 64 x 4096 bytes per CPU) were lost; the "
                          "trace keeps what was written before. Through ringtraced "
                          "(daemon mode) they are kept." % (BURST, says), r.stderr)
            # What was written stays, readable by view and babeltrace2
            # (the program may end before the consumer thread wrote even
            # the metadata; a packet it was writing is cut off by record).
            if os.path.exists(os.path.join(trace, "metadata")):
                self.assertIn("ringtrace: trace written to %s" % trace, r.stderr)
                v = run(["view", trace])
                self.assertEqual(v.returncode, 0, v.stderr)
                b = subprocess.run(["babeltrace2", trace], capture_output=True, text=True)
                self.assertEqual(b.returncode, 0, b.stderr[-2000:])
                self.assertEqual(len(b.stdout.splitlines()), len(v.stdout.splitlines()))
            else:
                self.assertIn("no trace was written in %s" % trace, r.stderr)
        # RINGTRACE_DONE_FD naming something else than a pipe (a file the
        # program has open there) is not written to.
        path = os.path.join(self.tmp, "program-file")
        with open(path, "wb") as f:
            fd = f.fileno()
            env = dict(NO_DAEMON, RINGTRACE_OUTPUT=os.path.join(self.tmp, "direct"),
                       RINGTRACE_DONE_FD=str(fd))
            p = subprocess.run([BURST, "10", "return"], env=env, pass_fds=(fd,),
                               capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.path.getsize(path), 0)
        for how in ("return", "sigterm"):
            r = run(["record", "-o", os.path.join(self.tmp, how), "--", BURST, "100", how])
            self.assertNotIn("were lost", r.stderr, how)


class ActiveSession(unittest.TestCase):
    """`view` of the output of a session still recording says so."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-msg-")
        self.env = rtfixtures.private_env(self.tmp)
        self.log = open(os.path.join(self.tmp, "daemon.log"), "a")
        self.daemon = rtfixtures.start_daemon(RINGTRACED, self.env, self.log)

    def tearDown(self):
        self.daemon.kill()
        self.daemon.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def rt(self, *args):
        r = run(args, env=self.env)
        self.assertEqual(r.returncode, 0, "%s: %s" % (args, r.stderr))
        return r

    def test_view_active(self):
        out = os.path.join(self.tmp, "out")
        self.rt("create", "live", "-o", out)
        self.rt("enable-event", "-u", "-a")
        self.rt("start")
        p = subprocess.run([BURST, "10", "return"], env=self.env, timeout=60)
        self.assertEqual(p.returncode, 0)
        note = ("ringtrace: view: note: session 'live' is still recording into %s: the "
                "events still in its buffers are not shown; 'ringtrace stop live' writes "
                "them out" % out)
        self.assertIn(note, run(["view", out], env=self.env).stderr)
        self.rt("stop")
        r = run(["view", out], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("note:", r.stderr)
        self.assertIn("burst:done", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
