"""Another local user is hostile (docs/security.md): run directories and
daemons that are not ours are refused by the command, the daemon and
traced programs; trace directories and files are created without following
planted symbolic links and are not readable by others; outputs are written
beside their target and renamed. Needs root (to act as uid 65534,
`nobody`): exits 77 (skipped) otherwise."""
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
APP_PROG = os.path.join(BUILD, "tests/daemon/app_prog")
SLOW_LISTEN = os.path.join(BUILD, "tests/daemon/libslow_listen.so")
NOBODY = 65534

# A listener run as nobody: accepts connections on argv[1], prints the
# bytes each one sent (read for at most 2 s), closes it.
FAKE_DAEMON = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    n = 0
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            n += len(b)
    except OSError:
        pass
    print("got", n, flush=True)
    c.close()
"""


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-sec-")
        os.chmod(self.tmp, 0o755)     # nobody may look inside, not write
        self.rundir = os.path.join(self.tmp, "run")
        self.env = rtfixtures.private_env(self.tmp, timeout_ms=2000, RINGTRACED=RINGTRACED)
        self.procs = []

    def tearDown(self):
        pidfile = os.path.join(self.rundir, "ringtraced.pid")
        try:
            with open(pidfile) as f:
                os.kill(int(f.read()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_cmd(self, *args, cmd=RINGTRACE, **kw):
        return subprocess.run([cmd, *args], capture_output=True, text=True, env=self.env,
                              timeout=60, **kw)

    def rt(self, *args):
        r = self.run_cmd(*args)
        self.assertEqual(r.returncode, 0, f"ringtrace {' '.join(args)}: {r.stderr}")
        return r.stdout

    def expect_refused(self, args, text, cmd=RINGTRACE):
        r = self.run_cmd(*args, cmd=cmd)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(text, r.stderr)
        return r


class RunDirectory(Base):
    def refused_by_all(self, text):
        """ringtrace (with and without auto-start) and ringtraced refuse
        the run directory with `text`, and no daemon of ours starts."""
        self.expect_refused(["list"], text)
        self.expect_refused(["create", "s"], text)
        self.expect_refused([], text, cmd=RINGTRACED)
        self.assertFalse(os.path.exists(os.path.join(self.rundir, "ringtraced.sock")))

    def test_precreated_by_another_user(self):
        os.mkdir(self.rundir)
        os.chown(self.rundir, NOBODY, NOBODY)
        os.chmod(self.rundir, 0o777)
        self.refused_by_all(f"unsafe run directory: {self.rundir} is owned by uid 65534")

    def test_open_to_others(self):
        os.mkdir(self.rundir)
        os.chmod(self.rundir, 0o777)
        self.refused_by_all(f"unsafe run directory: {self.rundir} has mode 0777")

    def test_symbolic_link(self):
        real = os.path.join(self.tmp, "real")
        os.mkdir(real, 0o700)
        os.symlink(real, self.rundir)
        self.refused_by_all(f"unsafe run directory: {self.rundir} is a symbolic link")

    def test_default_run_directory_in_tmp(self):
        """The issue's case: no XDG_RUNTIME_DIR, so the run directory is
        /tmp/ringtrace-UID, which another user created first (a uid no
        one uses here, so that no real run directory is touched)."""
        uid = 64999
        rundir = f"/tmp/ringtrace-{uid}"
        shutil.rmtree(rundir, ignore_errors=True)
        os.mkdir(rundir)
        os.chown(rundir, NOBODY, NOBODY)
        os.chmod(rundir, 0o777)
        env = dict(self.env, HOME=self.tmp)
        for var in ("RINGTRACE_RUNDIR", "XDG_RUNTIME_DIR"):
            env.pop(var, None)
        try:
            text = f"unsafe run directory: {rundir} is owned by uid 65534"
            for cmd, stdin in (([RINGTRACE, "list"], None), ([RINGTRACE, "create", "s"], None),
                               ([RINGTRACED], None), ([APP_PROG], "emit 10 a\nexit\n")):
                r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env,
                                   user=uid, group=uid, extra_groups=[], timeout=60)
                self.assertIn(text, r.stderr, cmd)
                if cmd[0] == APP_PROG:
                    self.assertEqual(r.returncode, 0, r.stderr)   # untraced, not stopped
                else:
                    self.assertNotEqual(r.returncode, 0, cmd)
            self.assertEqual(os.listdir(rundir), [])
        finally:
            shutil.rmtree(rundir, ignore_errors=True)

    def test_created_private(self):
        self.rt("create", "s", "-o", os.path.join(self.tmp, "out"))
        st = os.lstat(self.rundir)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)


class SocketName(Base):
    def test_name_appears_once_listening(self):
        """A client that sees the socket's name can connect: the daemon
        binds a temporary name and renames it once it listens (listen()
        made 300 ms late by a preloaded shim; before, `list` found the
        name and got ECONNREFUSED: "no session daemon")."""
        env = dict(self.env, LD_PRELOAD=SLOW_LISTEN)
        d = subprocess.Popen([RINGTRACED, "--foreground"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(d)
        sock = os.path.join(self.rundir, "ringtraced.sock")
        for _ in range(3000):
            if os.path.exists(sock):
                break
            time.sleep(0.001)
        self.assertTrue(os.path.exists(sock))
        r = self.run_cmd("list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(sock + ".new"))


class ForeignDaemon(Base):
    """A run directory that passes the checks (ours, 0700) whose socket is
    served by another uid: the command and traced programs refuse it
    (SO_PEERCRED) before sending it anything."""

    def setUp(self):
        super().setUp()
        os.mkdir(self.rundir, 0o700)
        os.chown(self.rundir, NOBODY, NOBODY)
        self.fake = subprocess.Popen(
            [sys.executable, "-c", FAKE_DAEMON, os.path.join(self.rundir, "ringtraced.sock")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            user=NOBODY, group=NOBODY, extra_groups=[])
        self.procs.append(self.fake)
        self.assertEqual(self.fake.stdout.readline().strip(), "ready")
        os.chown(self.rundir, 0, 0)

    def received(self):
        self.fake.kill()
        out, _ = self.fake.communicate()
        return [int(l.split()[1]) for l in out.splitlines() if l.startswith("got")]

    def test_command_refuses(self):
        for args in (["list"], ["create", "s"]):
            self.expect_refused(args, "is served by uid 65534")
        self.assertEqual([n for n in self.received() if n], [])

    def test_program_stays_untraced(self):
        p = subprocess.Popen([APP_PROG], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=self.env, text=True)
        self.procs.append(p)
        out, err = p.communicate("emit 100 a\nexit\n", timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("ok", out)
        self.assertIn("is served by uid 65534", err)
        self.assertEqual([n for n in self.received() if n], [])


def as_nobody(fn):
    """Run fn() in a child process as uid/gid 65534."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fn()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "as nobody"


def count_events(path):
    return len(rtfixtures.bt2_read(path)[0])


def tree_modes(root):
    """{relative path: mode} of every directory and file under root."""
    modes = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            modes[os.path.relpath(p, root)] = stat.S_IMODE(os.lstat(p).st_mode)
    return modes


class TraceFiles(Base):
    """Trace directories and files: created without following what another
    user planted, in directories that are ours, not readable by others."""

    def setUp(self):
        super().setUp()
        self.old_umask = os.umask(0o022)
        self.victim = os.path.join(self.tmp, "victim")
        with open(self.victim, "w") as f:
            f.write("precious\n")
        os.chmod(self.victim, 0o600)

    def tearDown(self):
        os.umask(self.old_umask)
        super().tearDown()

    def victim_intact(self, path=None):
        with open(path or self.victim, "rb") as f:
            self.assertEqual(f.read(), b"precious\n")

    def nobody_dir(self, name, mode=0o755):
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        os.chown(d, NOBODY, NOBODY)
        os.chmod(d, mode)
        return d

    def program(self, n=100):
        p = subprocess.run([APP_PROG], input=f"emit {n} a\nexit\n", capture_output=True,
                           text=True, env=self.env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def trace_session(self, out, *extra):
        self.rt("create", "s", "-o", out, *extra)
        self.rt("enable-event", "-u", "app:*")
        self.rt("start")
        self.program()
        self.rt("stop")

    def test_issue_example_planted_by_another_user(self):
        """The issue's attack: nobody pre-creates /tmp/x/web/ust/uid/0/64-bit
        with channel0_0 and metadata pointing at root's file."""
        x = self.nobody_dir("x")
        web = os.path.join(x, "web")
        victim = self.victim

        def plant():
            d = os.path.join(web, "ust/uid/0/64-bit")
            os.makedirs(d)
            for n in ("channel0_0", "metadata", ".metadata.tmp"):
                os.symlink(victim, os.path.join(d, n))
        as_nobody(plant)
        self.expect_refused(["create", "web", "--output", web],
                            f"cannot use output {web}: {x} is owned by uid 65534, not by you")
        self.expect_refused(["create", "web", "--output", web, "--force"],
                            f"{x} is owned by uid 65534")
        self.victim_intact()

    def test_output_owned_by_another_user_or_open(self):
        theirs = self.nobody_dir("theirs", 0o700)
        self.expect_refused(["create", "s", "-o", theirs],
                            f"{theirs} is owned by uid 65534, not by you (uid 0)")
        self.expect_refused(["record", "-o", theirs, "--", APP_PROG],
                            f"{theirs} is owned by uid 65534, not by you (uid 0)")
        opened = os.path.join(self.tmp, "open")
        os.mkdir(opened)
        os.chmod(opened, 0o777)
        for args in (["create", "s", "-o", opened], ["record", "-o", opened, "--", APP_PROG]):
            self.expect_refused(args, f"{opened} has mode 0777: it must not be writable")
        self.assertEqual(os.listdir(opened), [])

    def test_library_output_under_another_user(self):
        x = self.nobody_dir("x", 0o777)
        out = os.path.join(x, "trace")
        env = dict(self.env, RINGTRACE_OUTPUT=out)
        p = subprocess.run([APP_PROG], input="emit 10 a\nexit\n", capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"cannot use {out} as trace directory: {x} is owned by uid 65534",
                      p.stderr)
        self.assertEqual(os.listdir(x), [])

    def plant(self, d, names):
        """Links d/NAME -> a victim file each; returns {name: victim}."""
        os.makedirs(d, exist_ok=True)
        victims = {}
        for n in names:
            v = os.path.join(self.tmp, "victim-" + n)
            shutil.copy(self.victim, v)
            os.symlink(v, os.path.join(d, n))
            victims[n] = v
        return victims

    def check_planted(self, d, victims):
        for n, v in victims.items():
            self.victim_intact(v)
            self.assertTrue(os.path.islink(os.path.join(d, n)), n)

    def test_planted_metadata_links_never_followed(self):
        """Links in a trace directory (however they got there) are never
        written through: the metadata is a new file (renamed in without
        replacing one), its temporary file too (O_EXCL)."""
        out = os.path.join(self.tmp, "out")
        self.rt("create", "s", "-o", out)
        d = os.path.join(out, "ust/uid/0/64-bit")
        victims = self.plant(d, ["metadata", ".metadata.tmp"])
        self.rt("enable-event", "-u", "app:*")
        self.rt("start")
        self.program()
        self.run_cmd("stop")
        self.check_planted(d, victims)

    def test_planted_stream_links_never_followed(self):
        """Stream files, first and rotated, are new files (O_EXCL,
        O_NOFOLLOW): a planted link makes that stream fail, the victim
        stays as it was, and the other files are written."""
        out = os.path.join(self.tmp, "out")
        self.rt("create", "s", "-o", out)
        self.rt("enable-channel", "-u", "rot", "--subbuf-size", "4k",
                "--tracefile-size", "4k")
        for ch in ("channel0", "rot"):
            self.rt("enable-event", "-u", "-c", ch, "app:*")
        d = os.path.join(out, "ust/uid/0/64-bit")
        cpus = os.sysconf("SC_NPROCESSORS_CONF")
        victims = self.plant(d, [f"channel0_{c}" for c in range(cpus)] +
                             [f"rot_{c}_1" for c in range(cpus)])
        self.rt("start")
        self.program(3000)
        self.run_cmd("stop")
        self.check_planted(d, victims)
        self.assertTrue(os.path.isfile(os.path.join(d, "metadata")))
        first = [n for n in os.listdir(d) if n.startswith("rot_") and n.endswith("_0")]
        self.assertTrue(first, os.listdir(d))   # the rotation's first files are written

    def test_snapshot_output_under_another_user(self):
        self.rt("create", "s", "--snapshot", "-o", os.path.join(self.tmp, "snaps"))
        self.rt("enable-event", "-u", "app:*")
        self.rt("start")
        self.program()
        x = self.nobody_dir("x", 0o777)
        self.expect_refused(["snapshot", "record", "-o", os.path.join(x, "snap")],
                            f"{x} is owned by uid 65534")
        self.assertEqual(os.listdir(x), [])
        self.rt("snapshot", "record")
        self.assert_modes(os.path.join(self.tmp, "snaps"))

    def assert_modes(self, root):
        """Directories 0750, files 0640 (the umask, 022, removes nothing)."""
        modes = tree_modes(root)
        self.assertTrue(any(p.endswith("metadata") for p in modes), modes)
        self.assertEqual(stat.S_IMODE(os.stat(root).st_mode), 0o750)
        for p, m in modes.items():
            full = os.path.join(root, p)
            self.assertEqual(m, 0o750 if os.path.isdir(full) else 0o640, f"{full}: {m:o}")

    def test_modes_of_daemon_traces(self):
        out = os.path.join(self.tmp, "out")
        self.trace_session(out)
        self.assertEqual(count_events(out), 100)
        self.assert_modes(out)

    def test_modes_of_recorded_traces(self):
        out = os.path.join(self.tmp, "rec")
        for embedded in ([], ["--embedded"]):
            r = self.run_cmd("record", "-o", out, *embedded, "--", APP_PROG,
                             input="emit 50 a\nexit\n")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(count_events(out), 50)
            self.assert_modes(out)
            shutil.rmtree(out)


class OccupiedOutput(Base):
    """create -o DIR where DIR holds another trace, or cannot be written:
    refused at create, with the reason (issue 13 items 3 and 4)."""

    def program(self, n):
        p = subprocess.run([APP_PROG], input=f"emit {n} a\nexit\n", capture_output=True,
                           text=True, env=self.env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def record_session(self, name, out, n, *extra):
        self.rt("create", name, "-o", out, *extra)
        self.rt("enable-event", "-u", "app:*")
        self.rt("start")
        self.program(n)
        self.rt("stop")

    def test_directory_holding_a_trace(self):
        out = os.path.join(self.tmp, "out")
        self.record_session("first", out, 30)
        self.assertEqual(count_events(out), 30)
        # Not while the first session exists, even with --force.
        for extra in ([], ["--force"]):
            self.expect_refused(["create", "second", "-o", out, *extra],
                                f"session first writes in {out}")
            self.expect_refused(["create", "second", "-o", os.path.join(out, "sub"), *extra],
                                f"session first writes in {out}")
        self.rt("destroy", "first")
        before = tree_modes(out)
        self.expect_refused(["create", "second", "-o", out], f"output {out} is not empty")
        self.assertEqual(tree_modes(out), before)
        self.assertEqual(count_events(out), 30)
        # --force replaces it: the trace read back is the new one only.
        keep = os.path.join(out, "notes.txt")
        with open(keep, "w") as f:
            f.write("mine\n")
        self.assertIn("Removed 1 trace from", self.rt("create", "second", "-o", out, "--force"))
        self.assertTrue(os.path.exists(keep))
        self.rt("enable-event", "-u", "app:*")
        self.rt("start")
        self.program(7)
        self.rt("stop")
        self.assertEqual(count_events(out), 7)

    def test_load_into_occupied_directory(self):
        out = os.path.join(self.tmp, "out")
        self.record_session("first", out, 5)
        saved = os.path.join(self.tmp, "s.rts")
        self.rt("save", "first", "-o", saved)
        self.expect_refused(["load", saved, "--override-name", "copy"],
                            f"session first writes in {out}")
        self.rt("destroy", "first")
        self.expect_refused(["load", saved], f"output {out} is not empty")
        self.assertEqual(count_events(out), 5)
        self.rt("load", saved, "--force")

    def test_output_through_a_regular_file(self):
        f = os.path.join(self.tmp, "file")
        open(f, "w").close()
        self.expect_refused(["create", "s", "-o", os.path.join(f, "out")],
                            f"{f} is not a directory")

    def test_read_only_output(self):
        ro = os.path.join(self.tmp, "ro")
        os.mkdir(ro)
        if subprocess.run(["mount", "--bind", ro, ro], capture_output=True).returncode:
            self.skipTest("cannot bind-mount (no CAP_SYS_ADMIN)")
        try:
            r = subprocess.run(["mount", "-o", "remount,bind,ro", ro], capture_output=True)
            if r.returncode:
                self.skipTest("cannot remount read-only")
            self.expect_refused(["create", "s", "-o", os.path.join(ro, "out")],
                                f"cannot create directory {ro}/out: Read-only file system")
            self.expect_refused(["create", "s", "-o", ro],
                                f"cannot use output {ro}: Read-only file system")
        finally:
            subprocess.run(["umount", ro], capture_output=True)


class Outputs(Base):
    """export -o, report -o and save -o write beside the target and rename
    over it: a failure never touches (or deletes) the target, and targets
    that are not regular files are refused (issue 14 item 3)."""

    def setUp(self):
        super().setUp()
        self.trace = os.path.join(self.tmp, "trace")
        r = self.run_cmd("record", "-o", self.trace, "--embedded", "--", APP_PROG,
                         input="emit 20 a\nexit\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.outdir = os.path.join(self.tmp, "outs")
        os.mkdir(self.outdir)
        self.missing = os.path.join(self.tmp, "no-such-trace")

    def commands(self, target, trace):
        return (["export", "--format=chrome", trace, "-o", target],
                ["report", trace, "-o", target])

    def test_failure_leaves_target(self):
        target = os.path.join(self.outdir, "kept")
        for args in self.commands(target, self.missing):
            with open(target, "w") as f:
                f.write("precious\n")
            self.expect_refused(args, "no-such-trace")
            with open(target) as f:
                self.assertEqual(f.read(), "precious\n", args)
            self.assertEqual(os.listdir(self.outdir), ["kept"], args)

    def test_device_and_link_targets_refused(self):
        dev = os.path.join(self.outdir, "null")
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        link = os.path.join(self.outdir, "link")
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.symlink(victim, link)
        for trace in (self.missing, self.trace):
            for args in self.commands(dev, trace):
                self.expect_refused(args, f"{dev} is a character device, not a regular file")
                self.assertTrue(stat.S_ISCHR(os.lstat(dev).st_mode))
            for args in self.commands(link, trace):
                self.expect_refused(args, f"{link} is a symbolic link, not a regular file")
        self.rt("create", "s", "-o", os.path.join(self.tmp, "sess"))
        self.expect_refused(["save", "s", "-o", link], "is a symbolic link")
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertEqual(sorted(os.listdir(self.outdir)), ["link", "null"])

    def test_written_and_replaced(self):
        for args in self.commands(os.path.join(self.outdir, "out"), self.trace):
            target = args[-1]
            with open(target, "w") as f:
                f.write("old\n")
            self.rt(*args)
            with open(target) as f:
                text = f.read()
            self.assertIn("app:tick", text)
            self.assertEqual(stat.S_IMODE(os.stat(target).st_mode), 0o640)
            self.assertEqual(os.listdir(self.outdir), ["out"])
        out = self.rt("export", "--format=chrome", self.trace, "-o", "-")
        self.assertIn("app:tick", out)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root (acts as uid 65534)")
        sys.exit(77)
    unittest.main(verbosity=2)
