#!/usr/bin/python3
"""User-space probes (uprobe events) on a program built without ringtrace
(probed.c, compiled here with gcc -g): `ringtrace record --probe` and the
elf:/sdt: forms, read back with babeltrace2 (bt2) and `ringtrace view`
call by call; the separate debug file, named by .gnu_debuglink or found by
build id under the debug root (RINGTRACE_DEBUG_DIR); bad input (one line, non-zero
exit, nothing left behind); the uprobe events removed at the end and,
when their owner was killed, as stale. Exit 77 with the reason when the
kernel domain cannot be used here.

usage: test_probes.py BUILD_DIR SOURCE_DIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import bt2

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
SOURCE = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "tests/kernel"
KCAPTURE = os.path.join(BUILD, "tests/kernel/kcapture")
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
UPROBE_EVENTS = "/sys/kernel/tracing/uprobe_events"
INSTANCES = "/sys/kernel/tracing/instances"


def read_bt2(path):
    """(name, tid, payload dict) of every event but the state dump's."""
    events = []
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        if ev.name.startswith("lttng_statedump"):
            continue
        payload = {k: (str(v) if isinstance(v, bt2._StringFieldConst) else int(v))
                   for k, v in ev.payload_field.items()}
        events.append((ev.name, int(ev.common_context_field["tid"]), payload))
    return events


def read_view(path):
    """The same from `ringtrace view`'s lines: (name, tid, payload text)."""
    out = subprocess.run([RINGTRACE, "view", path], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    rows = []
    for line in out.stdout.splitlines():
        m = re.search(r" (\w+): \{ tid = (\d+) \}(?:, \{ (.*) \})?$", line)
        assert m, line
        if m.group(1).startswith("lttng_statedump"):
            continue
        rows.append((m.group(1), int(m.group(2)), m.group(3) or ""))
    return rows


def ours():
    """The uprobe events defined by ringtrace (group ringtrace_PID_N)."""
    with open(UPROBE_EVENTS) as f:
        return [l for l in f.read().splitlines() if re.match(r"[pr]:ringtrace_\d+_\d+/", l)]


def ours_of(pid):
    return [l for l in ours() if l[2:].startswith("ringtrace_%d_" % pid)]


def split_by_build_id(prog, out, root):
    """out: prog stripped, without .gnu_debuglink; its debug information
    in root/.build-id/NN/REST.debug, as distributions install it."""
    note = subprocess.run(["readelf", "-n", prog], capture_output=True, text=True,
                          check=True).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]+)", note).group(1)
    d = os.path.join(root, ".build-id", build_id[:2])
    os.makedirs(d, mode=0o755)
    subprocess.run(["objcopy", "--only-keep-debug", prog,
                    os.path.join(d, build_id[2:] + ".debug")], check=True)
    subprocess.run(["strip", "-o", out, prog], check=True)


class Probes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bin_dir = tempfile.TemporaryDirectory(prefix="rt-probed-")
        d = cls.bin_dir.name
        os.chmod(d, 0o755)
        cls.prog = os.path.join(d, "probed")
        subprocess.run(["gcc", "-g", "-O1", "-Wl,--build-id", "-o", cls.prog,
                        os.path.join(SOURCE, "probed.c")], check=True)
        # A stripped copy, and one whose debug information is in a
        # separate file named by .gnu_debuglink.
        cls.stripped = os.path.join(d, "stripped")
        subprocess.run(["strip", "-o", cls.stripped, cls.prog], check=True)
        cls.split = os.path.join(d, "split")
        subprocess.run(["objcopy", "--only-keep-debug", cls.prog, cls.split + ".debug"],
                       check=True)
        subprocess.run(["strip", "-o", cls.split, cls.prog], check=True)
        subprocess.run(["objcopy", "--add-gnu-debuglink=" + cls.split + ".debug", cls.split],
                       check=True, cwd=d)
        # And one whose debug file is found by its build id alone, under
        # a debug root of the test's own.
        cls.debug_root = os.path.join(d, "debug")
        cls.by_id = os.path.join(d, "by_id")
        split_by_build_id(cls.prog, cls.by_id, cls.debug_root)

    @classmethod
    def tearDownClass(cls):
        cls.bin_dir.cleanup()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-probes-")
        self.trace = os.path.join(self.tmp.name, "t")

    def tearDown(self):
        self.tmp.cleanup()

    def record(self, probes, *cmd, extra=(), env=None):
        """Run record; its output. Its uprobe events are gone after it."""
        p = subprocess.Popen([RINGTRACE, "record", "-q", "-o", self.trace, *extra,
                              "--probe", probes, "--", *cmd],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(ours_of(p.pid), [])
        return out

    def expected_calls(self, n):
        """add's and scale's entries and returns as probed.c makes them."""
        calls = []
        for i in range(n):
            b = -5 * i
            calls.append(("add_entry", {"a": i, "b": b}))
            calls.append(("add_return", {"ret": i + b + (1 if i % 2 else 0)}))
            calls.append(("scale_entry", {"c": i & 0xff, "s": -i}))
            calls.append(("scale_return", {"ret": int((i & 0xff) * 1.5) - i}))
        return calls

    def check_calls(self, trace, n):
        events = read_bt2(trace)
        calls = [(name, p) for name, _, p in events]
        expected = self.expected_calls(n)
        self.assertEqual(len(calls), len(expected), calls[:8])
        for (name, p), (ename, ep) in zip(calls, expected):
            self.assertEqual(name, ename)
            for k, v in ep.items():
                self.assertEqual(p[k], v, (name, p))
        # add's p: NULL for even i, a pointer for odd ones.
        adds = [p for name, p in calls if name == "add_entry"]
        self.assertEqual([p["p"] != 0 for p in adds], [i % 2 == 1 for i in range(n)])
        # The double of scale() is in an SSE register: not captured.
        self.assertNotIn("d", [k for name, p in calls for k in p])
        # One thread, the program's; entries at the function, returns
        # from it.
        self.assertEqual(len({tid for _, tid, _ in events}), 1)
        ips = {p["probe_ip"] for name, p in calls if name == "add_entry"}
        self.assertEqual(len(ips), 1)
        self.assertEqual({p["probe_func"] for name, p in calls if name == "add_return"}, ips)
        # Our reader: the same events, fields and values.
        rows = read_view(trace)
        self.assertEqual([(n, t) for n, t, _ in rows], [(n, t) for n, t, _ in events])
        for (name, _, text), (_, _, p) in zip(rows, events):
            self.assertEqual(text, ", ".join("%s = %d" % kv for kv in p.items()), name)
        return events

    def test_record_probe_entries_and_returns(self):
        out = self.record("%s:add,%s:scale" % (self.prog, self.prog), self.prog, "50")
        total = sum(i - 5 * i + i % 2 + int(i * 1.5) - i for i in range(50))
        self.assertEqual(out, "0 %d\n" % total)
        self.assertEqual(os.listdir(self.trace), ["kernel"])
        self.check_calls(os.path.join(self.trace, "kernel"), 50)

    def test_merged_with_system_calls(self):
        """The probes' events are kernel events: one stream per CPU with
        the system calls, on the same clock, in order."""
        self.record("%s:add" % self.prog, self.prog, "3", extra=("--syscall", "write"))
        events = read_bt2(os.path.join(self.trace, "kernel"))
        names = [n for n, _, _ in events if not n.startswith("syscall_") or
                 n.endswith("_write")]
        # The program's one printf comes after every call.
        self.assertEqual(names, ["add_entry", "add_return"] * 3 +
                         ["syscall_entry_write", "syscall_exit_write"])

    def test_elf_forms_and_names(self):
        self.record("elf:%s:add,elf:%s:add%%return" % (self.prog, self.prog), self.prog, "4")
        events = read_bt2(os.path.join(self.trace, "kernel"))
        self.assertEqual([n for n, _, _ in events], ["add", "add_return"] * 4)
        self.assertEqual([p["ret"] for n, _, p in events if n == "add_return"],
                         [i - 5 * i + i % 2 for i in range(4)])

    def test_sdt_probe_with_semaphore(self):
        """rtprobed:tick fires only while its semaphore is set: the kernel
        sets it for the uprobe (the note's semaphore as its reference
        counter)."""
        out = self.record("sdt:%s:rtprobed:tick" % self.prog, self.prog, "5")
        self.assertTrue(out.startswith("5 "), out)
        events = read_bt2(os.path.join(self.trace, "kernel"))
        self.assertEqual([(n, q["arg1"], q["arg2"]) for n, _, q in events],
                         [("rtprobed_tick", i, i * 1000) for i in range(5)])
        # Without the probe the semaphore stays 0: no tick.
        out = subprocess.run([self.prog, "5"], capture_output=True, text=True)
        self.assertTrue(out.stdout.startswith("0 "), out.stdout)

    def test_sdt_variables(self):
        """An SDT probe's variable operands, NAME(%rip) (a .bss global,
        a .data static), are read from the program's memory; an indexed
        one is left out, the others keep their numbers."""
        self.record("sdt:%s:rtprobed:vars" % self.prog, self.prog, "6")
        events = read_bt2(os.path.join(self.trace, "kernel"))
        self.assertEqual([n for n, _, _ in events], ["rtprobed_vars"] * 6)
        self.assertEqual([{k: v for k, v in p.items() if k.startswith("arg")}
                          for _, _, p in events],
                         [{"arg1": sum(range(i + 1)), "arg2": 8 + i, "arg4": i}
                          for i in range(6)])

    def test_separate_debug_file(self):
        """A stripped binary whose debug file .gnu_debuglink names: the
        symbol and the parameters' names come from it."""
        self.record("%s:add,%s:scale" % (self.split, self.split), self.split, "7")
        self.check_calls(os.path.join(self.trace, "kernel"), 7)

    def test_debug_file_by_build_id(self):
        """A stripped binary without .gnu_debuglink: its symbols and
        parameters come from ROOT/.build-id/NN/REST.debug, ROOT being
        RINGTRACE_DEBUG_DIR (/usr/lib/debug without it, where this debug
        file is not: the probe is refused there)."""
        env = dict(os.environ, RINGTRACE_DEBUG_DIR=self.debug_root)
        self.record("%s:add,%s:scale" % (self.by_id, self.by_id), self.by_id, "6", env=env)
        self.check_calls(os.path.join(self.trace, "kernel"), 6)
        shutil.rmtree(self.trace)
        for value, msg in ((None, "stripped without a debug file found (by build id or "
                                  ".gnu_debuglink, beside it or under /usr/lib/debug)"),
                           ("debug", "RINGTRACE_DEBUG_DIR must be an absolute path"),
                           ("/a:/b", "RINGTRACE_DEBUG_DIR must be an absolute path")):
            with self.subTest(value=value):
                env = dict(os.environ)
                env.pop("RINGTRACE_DEBUG_DIR", None)
                if value:
                    env["RINGTRACE_DEBUG_DIR"] = value
                p = subprocess.run([RINGTRACE, "record", "-q", "-o", self.trace, "--probe",
                                    "%s:add" % self.by_id, "--", "/bin/true"],
                                   capture_output=True, text=True, timeout=60, env=env)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                self.assertIn(msg, p.stderr)
                self.assertFalse(os.path.exists(self.trace))

    def test_bad_input(self):
        not_elf = os.path.join(SOURCE, "probed.c")
        cases = [
            ("%s:no_such_function" % self.prog, "has no function no_such_function"),
            ("%s:add" % not_elf, "is not an ELF file"),
            ("%s:add" % self.stripped, "stripped without a debug file found"),
            ("/no/such/file:add", "No such file or directory"),
            ("elf:%s:add%%exit" % self.prog, "only %return"),
            ("sdt:%s:rtprobed:tock" % self.prog, "has no SDT probe rtprobed:tock"),
            ("elf:relative/path:add", "the path must be absolute"),
            ("justaname", "expected PATH:FUNCTION"),
            ("%s:%s" % (self.prog, "x" * 70), "at most 63 characters"),
        ]
        for spec, msg in cases:
            with self.subTest(spec=spec):
                p = subprocess.Popen([RINGTRACE, "record", "-q", "-o", self.trace, "--probe",
                                      spec, "--", "/bin/true"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
                out, err = p.communicate(timeout=60)
                self.assertEqual(p.returncode, 1, err)
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(msg, err)
                self.assertEqual(out, "", "CMD did not run")
                self.assertFalse(os.path.exists(self.trace))
                self.assertEqual(ours_of(p.pid), [])

    def test_stale_probes_removed(self):
        """A record killed with its probes defined leaves them (and its
        instance); the next one removes them as stale."""
        rec = subprocess.Popen([RINGTRACE, "record", "-q", "-o", self.trace, "--probe",
                                "%s:add" % self.prog, "--", "sleep", "60"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        child = None
        try:
            deadline = time.monotonic() + 60
            # Both defined (one write to uprobe_events each), CMD started.
            while len(ours_of(rec.pid)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(len(ours_of(rec.pid)), 2, "add_entry and add_return defined")
            while child is None and time.monotonic() < deadline:
                with open("/proc/%d/task/%d/children" % (rec.pid, rec.pid)) as f:
                    kids = f.read().split()
                child = int(kids[0]) if kids else None
                time.sleep(0.02)
            rec.send_signal(signal.SIGKILL)
            os.waitid(os.P_PID, rec.pid, os.WEXITED | os.WNOWAIT)
            self.assertEqual(len(ours_of(rec.pid)), 2, "left by kill -9")
        finally:
            rec.kill()
            rec.wait()
            rec.stderr.close()
            if child:
                os.kill(child, signal.SIGKILL)
        # Any record (or ringtraced) starting removes them, this one or
        # one of another test beside this one.
        trace2 = os.path.join(self.tmp.name, "t2")
        p = subprocess.run([RINGTRACE, "record", "-q", "-o", trace2, "--probe",
                            "%s:add" % self.prog, "--", "/bin/true"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(ours_of(rec.pid), [])
        self.assertFalse([n for n in os.listdir(INSTANCES)
                          if n.startswith("ringtrace-%d-" % rec.pid)])


class Session(unittest.TestCase):
    """enable-event -k --userspace-probe in a session of ringtraced."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-psess-")
        os.chmod(self.tmp, 0o755)
        self.env = dict(os.environ, RINGTRACE_RUNDIR=os.path.join(self.tmp, "run"),
                        HOME=self.tmp, RINGTRACE_DAEMON_TIMEOUT_MS="5000",
                        PATH=os.path.join(BUILD, "src/daemon") + os.pathsep +
                        os.environ.get("PATH", ""))
        self.env.pop("RINGTRACED", None)
        self.prog = os.path.join(self.tmp, "probed")
        subprocess.run(["gcc", "-g", "-O1", "-Wl,--build-id", "-o", self.prog,
                        os.path.join(SOURCE, "probed.c")], check=True)

    def tearDown(self):
        try:
            with open(os.path.join(self.tmp, "run", "ringtraced.pid")) as f:
                pid = int(f.read())
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def rt(self, *args):
        return subprocess.run([RINGTRACE, *args], capture_output=True, text=True,
                              env=self.env, timeout=120)

    def ok(self, *args):
        r = self.rt(*args)
        self.assertEqual(r.returncode, 0, "ringtrace %s: %s%s" % (" ".join(args), r.stdout,
                                                                  r.stderr))
        return r.stdout

    def test_session_probes(self):
        out = os.path.join(self.tmp, "trace")
        self.ok("create", "p", "-o", out)
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:add" % self.prog, "add")
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:add%%return" % self.prog,
                "add_ret")
        self.ok("enable-event", "-k", "--userspace-probe=sdt:%s:rtprobed:tick" % self.prog,
                "tick")
        listing = self.ok("list", "p")
        self.assertIn("add (type: userspace-probe: elf:%s:add) [enabled]" % self.prog, listing)
        self.assertIn("tick (type: userspace-probe: sdt:%s:rtprobed:tick) [enabled]"
                      % self.prog, listing)
        self.ok("start")
        run = subprocess.run([self.prog, "4"], capture_output=True, text=True, timeout=60)
        self.assertTrue(run.stdout.startswith("4 "), run.stdout)
        self.ok("stop")
        events = [e for e in read_bt2(out) if e[0] in ("add", "add_ret", "tick")]
        self.assertEqual(len({tid for _, tid, _ in events}), 1)
        got = [(n, p.get("a", p.get("ret", p.get("arg1")))) for n, _, p in events]
        want = []
        for i in range(4):
            want += [("add", i), ("add_ret", i - 5 * i + i % 2), ("tick", i)]
        self.assertEqual(got, want)
        self.assertEqual([p["arg2"] for n, _, p in events if n == "tick"],
                         [0, 1000, 2000, 3000])
        with open(os.path.join(self.tmp, "run", "ringtraced.pid")) as f:
            daemon = int(f.read())
        self.assertEqual(len(ours_of(daemon)), 3)
        self.ok("destroy", "p")
        self.assertEqual(ours_of(daemon), [])

    def test_debug_dir_of_the_daemon(self):
        """The daemon resolves a session's probes: with RINGTRACE_DEBUG_DIR
        in its environment, a stripped binary's debug file is found by
        build id under that root."""
        root = os.path.join(self.tmp, "debug")
        by_id = os.path.join(self.tmp, "by_id")
        split_by_build_id(self.prog, by_id, root)
        self.env["RINGTRACE_DEBUG_DIR"] = root	# the daemon is started by create
        out = os.path.join(self.tmp, "trace")
        self.ok("create", "p", "-o", out)
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:add" % by_id, "add")
        self.ok("start")
        run = subprocess.run([by_id, "3"], capture_output=True, text=True, timeout=60)
        self.assertTrue(run.stdout.startswith("0 "), run.stdout)
        self.ok("stop")
        events = [(n, p["a"], p["b"]) for n, _, p in read_bt2(out) if n == "add"]
        self.assertEqual(events, [("add", i, -5 * i) for i in range(3)])
        self.ok("destroy", "p")

    def test_probe_filters(self):
        """A --filter on a probe rule is the uprobe event's ftrace filter:
        on the arguments by their DWARF names, on an SDT probe's arg1..,
        on a return probe's ret; only the hits that pass it are recorded,
        the others' rules unaffected. A filter on a field the probe lacks
        is refused at start with one line."""
        out = os.path.join(self.tmp, "trace")
        self.ok("create", "p", "-o", out)
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:add" % self.prog, "add",
                "--filter", "a >= 3 && b != -20")
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:add%%return" % self.prog,
                "add_ret", "--filter", "ret < -10")
        self.ok("enable-event", "-k", "--userspace-probe=sdt:%s:rtprobed:tick" % self.prog,
                "tick", "--filter", "arg2 == 1000 || arg1 == 5")
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:scale" % self.prog, "scale")
        listing = self.ok("list", "p")
        self.assertIn("add (type: userspace-probe: elf:%s:add) [filter: a >= 3 && b != -20] "
                      "[enabled]" % self.prog, listing)
        self.ok("start")
        run = subprocess.run([self.prog, "8"], capture_output=True, text=True, timeout=60)
        self.assertTrue(run.stdout.startswith("8 "), run.stdout)
        self.ok("stop")
        events = read_bt2(out)
        got = {}
        for n, _, p in events:
            got.setdefault(n, []).append(p)
        # add(i, -5 i): a >= 3 and b != -20 (i != 4)
        self.assertEqual([(p["a"], p["b"]) for p in got["add"]],
                         [(i, -5 * i) for i in range(8) if i >= 3 and i != 4])
        rets = [i - 5 * i + i % 2 for i in range(8)]
        self.assertEqual([p["ret"] for p in got["add_ret"]], [r for r in rets if r < -10])
        self.assertEqual([(p["arg1"], p["arg2"]) for p in got["tick"]], [(1, 1000), (5, 5000)])
        self.assertEqual([p["s"] for p in got["scale"]], [-i for i in range(8)])
        self.ok("destroy", "p")
        # A field the probe does not capture.
        self.ok("create", "q", "-o", os.path.join(self.tmp, "trace2"))
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:add" % self.prog, "add",
                "--filter", "nosuch == 1")
        r = self.rt("start")
        self.assertEqual(r.returncode, 2, r.stderr)	# EINVAL
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("nosuch", r.stderr)
        self.ok("destroy", "q")

    def test_refusals(self):
        self.ok("create", "p", "-o", os.path.join(self.tmp, "trace"))
        cases = [
            (["--userspace-probe=elf:%s:nope" % self.prog, "x"], "has no function nope"),
            (["--userspace-probe=elf:/etc/hostname:f", "x"], "is not an ELF file"),
            (["--userspace-probe=elf:%s:add" % self.prog, "bad-name"], "probe event name"),
            (["--userspace-probe=elf:%s:add" % self.prog, "a,b"], "names one event"),
            (["--userspace-probe=elf:%s:add" % self.prog, "--syscall", "x"],
             "not with --syscall or -a"),
            (["--userspace-probe=elf:%s:add" % self.prog, "--filter", "a ==", "x"],
             "filter:1:"),
            (["-u", "--userspace-probe=elf:%s:add" % self.prog, "x"],
             "--userspace-probe is for kernel rules"),
        ]
        for args, msg in cases:
            with self.subTest(args=args):
                r = self.rt("enable-event", *([] if args[0] == "-u" else ["-k"]), *args)
                # 1, or 2 for what the daemon calls a usage error (EINVAL)
                self.assertIn(r.returncode, (1, 2), r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertIn(msg, r.stderr)
        self.ok("enable-event", "-k", "--userspace-probe=elf:%s:add" % self.prog, "x")
        r = self.rt("enable-event", "-k", "--userspace-probe=elf:%s:scale" % self.prog, "x")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("has a probe named x already", r.stderr)


if __name__ == "__main__":
    probe = subprocess.run([KCAPTURE, "--remove-stale"], capture_output=True, text=True)
    if probe.returncode == 77:
        print(probe.stdout.strip())
        sys.exit(77)
    unittest.main(verbosity=2)
