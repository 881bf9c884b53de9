#!/usr/bin/python3
"""The LD_PRELOAD helpers (src/preload): programs not linked with
libringtrace run under `ringtrace record --preload=...`; every call they
report on stdout is found in the trace with its arguments and result
(babeltrace2, and our reader gives the same events), and nothing else of
theirs is missing or invented:

- libc: N mallocs of known sizes and their frees, calloc, realloc,
  memalign, posix_memalign, aligned_alloc, in the parent, in a fork child
  and after that child's exec; the caller of each is the program; none
  of the tracer's own allocations; the allocations dlsym made before the
  real functions were known came from the helper's pool (usable, not
  recorded); the user's LD_PRELOAD kept first;
- pthread: a contended mutex (trylock EBUSY, then a lock that waited:
  wait_ns > 0), every event's caller the program;
- dl: dlopen/dlclose of a library with its path, flags, base address and
  the build id `readelf -n` shows;
- func: entry and exit of a -finstrument-functions program, in call order,
  each address the function's symbol (nm) in the program's mapping;
- bad --preload values refused before CMD runs.

usage: test_preload.py BUILD_DIR
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1))
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
HERE = os.path.join(BUILD, "tests/preload")
PL_LIB = os.path.realpath(os.path.join(HERE, "pl_lib.so"))
HELPERS = {"libc": "libringtrace-libc-wrapper.so", "pthread": "libringtrace-pthread-wrapper.so",
           "dl": "libringtrace-dl.so", "func": "libringtrace-cyg-profile.so"}


def helper(name):
    return os.path.realpath(os.path.join(BUILD, "src/preload", HELPERS[name]))


class Trace:
    """One recorded trace: its events as plain dicts (bt2), checked equal
    to our reader's, and the objects of the state dump."""

    def __init__(self, path, provider):
        events, discarded, lost = rtfixtures.bt2_read(path)
        assert (discarded, lost) == (0, 0), (discarded, lost)
        self.events = []
        self.objects = []	# (vpid, baddr, memsz, path)
        for m in events:
            e = m.event
            ctx = rtfixtures.bt2_plain(e.common_context_field)
            p = rtfixtures.bt2_plain(e.payload_field)
            ev = dict(name=e.name, vpid=ctx["vpid"], vtid=ctx["vtid"], p=p,
                      procname=ctx["procname"])
            if e.name == "lttng_ust_statedump:bin_info":
                self.objects.append((ctx["vpid"], p["baddr"], p["memsz"], p["path"]))
            if e.name.startswith(provider + ":"):
                # Nothing the tracer's own threads do (its consumer's).
                assert not ctx["procname"].startswith("ringtrace"), ev
                self.events.append(ev)
        ours = [(e["name"], e["payload"]) for e in rtfixtures.rtr_dump(BUILD, path)
                if e["name"].startswith(provider + ":")]
        assert ours == [(e["name"], e["p"]) for e in self.events], "our reader differs"

    def object_of(self, vpid, path_end):
        """(baddr, memsz) of the object of process vpid whose path ends so."""
        found = [(b, s) for v, b, s, p in self.objects if v == vpid and p.endswith(path_end)]
        assert found, "no state dump of %s in process %d" % (path_end, vpid)
        return found[-1]


class Preload(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-preload-")
        self.env = rtfixtures.private_env(self.tmp.name)
        self.env.pop("LD_PRELOAD", None)

    def tearDown(self):
        self.tmp.cleanup()

    def record(self, preload, cmd, env=None):
        trace = os.path.join(self.tmp.name, "trace-" + preload.replace(",", "-"))
        r = subprocess.run([RINGTRACE, "record", "-q", "-o", trace, "--preload=" + preload,
                            "--", *cmd], capture_output=True, text=True, timeout=120,
                           env=env or self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return trace, r.stdout

    def test_libc(self):
        n = 20
        env = dict(self.env, LD_PRELOAD=PL_LIB)
        trace, out = self.record("libc", [os.path.join(HERE, "pl_alloc"), str(n)], env)
        lines = out.splitlines()
        # The user's LD_PRELOAD first, the helper after it.
        self.assertEqual(lines[0], "env LD_PRELOAD %s:%s" % (PL_LIB, helper("libc")))
        boot = re.fullmatch(r"boot calloc (\S+) zeroed 1 realloc (\S+) kept 1", lines[1])
        self.assertTrue(boot, lines[1])
        t = Trace(trace, "lttng_ust_libc")
        parent = int(lines[2].split()[0])
        base, size = t.object_of(parent, "/pl_alloc")
        lib_base, lib_size = t.object_of(parent, "/libringtrace.so.0")

        def take(name, vpid, **fields):
            """The first remaining event of that name, process and
            fields; removed from the list (each call is one event)."""
            for i, e in enumerate(t.events):
                if e["name"] == "lttng_ust_libc:" + name and e["vpid"] == vpid and \
                        all(e["p"][k] == v for k, v in fields.items()):
                    return t.events.pop(i)
            self.fail("no %s event %s in process %d" % (name, fields, vpid))

        h = lambda s: int(s, 16)  # noqa: E731
        calls = 0
        for line in lines[2:]:
            w = line.split()
            pid, op = int(w[0]), w[1]
            if op == "malloc":
                e = take("malloc", pid, size=int(w[2]), ptr=h(w[3]))
                # The caller: the program's main, in its mapping.
                self.assertTrue(base <= e["p"]["caller"] < base + size, line)
            elif op == "free":
                take("free", pid, ptr=h(w[2]))
            elif op == "calloc":
                take("calloc", pid, nmemb=int(w[2]), size=int(w[3]), ptr=h(w[4]))
            elif op == "realloc":
                take("realloc", pid, in_ptr=h(w[2]), size=int(w[3]), ptr=h(w[4]))
            elif op == "memalign":
                take("memalign", pid, alignment=int(w[2]), size=int(w[3]), ptr=h(w[4]))
            elif op == "posix_memalign":
                take("posix_memalign", pid, alignment=int(w[2]), size=int(w[3]),
                     out_ptr=h(w[4]), result=int(w[5]))
            elif op == "aligned_alloc":
                take("aligned_alloc", pid, alignment=int(w[2]), size=int(w[3]), ptr=h(w[4]))
            elif op in ("fork-malloc", "exec-malloc"):
                # The fork child, then the program it executed (same pid).
                self.assertNotEqual(pid, parent)
                take("malloc", pid, size=int(w[2]), ptr=h(w[3]))
            else:
                self.fail("unexpected line " + line)
            calls += 1
        self.assertEqual(calls, 2 * n + 7)
        # The pool's blocks (dlsym's) were not recorded; the tracer's own
        # allocations (its state dump's; its consumer thread's: Trace)
        # neither.
        for e in t.events:
            self.assertNotIn(h(boot.group(1)), (e["p"].get("ptr"), e["p"].get("in_ptr")))
            if e["vpid"] == parent:
                self.assertFalse(lib_base <= e["p"]["caller"] < lib_base + lib_size, e)

    def test_pthread(self):
        trace, out = self.record("pthread", [os.path.join(HERE, "pl_mutex")])
        m = re.fullmatch(r"mutex (\S+)\ntid A (\d+)\ntid B (\d+)\n", out)
        self.assertTrue(m, out)
        mutex, a, b = int(m.group(1), 16), int(m.group(2)), int(m.group(3))
        t = Trace(trace, "lttng_ust_pthread")
        base, size = t.object_of(t.events[0]["vpid"], "/pl_mutex")
        # Only the program's calls: libringtrace's own locks are not there.
        for e in t.events:
            self.assertTrue(base <= e["p"]["caller"] < base + size, e)
            self.assertEqual(e["p"]["mutex"], mutex, e)
        seq = [(e["vtid"], e["name"].split(":")[1], e["p"].get("status")) for e in t.events]
        self.assertEqual(sorted(x for x in seq if x[0] == a),
                         sorted([(a, "pthread_mutex_lock_req", None),
                                 (a, "pthread_mutex_lock_acq", 0),
                                 (a, "pthread_mutex_unlock", 0)]))
        self.assertEqual([x for x in seq if x[0] == b],
                         [(b, "pthread_mutex_trylock", 16),	# EBUSY
                          (b, "pthread_mutex_lock_req", None),
                          (b, "pthread_mutex_lock_acq", 0),
                          (b, "pthread_mutex_unlock", 0)])
        acq = [e for e in t.events if e["vtid"] == b and e["name"].endswith("_acq")][0]
        self.assertGreater(acq["p"]["wait_ns"], 0)

    def test_dl(self):
        trace, out = self.record("dl", [os.path.join(HERE, "pl_dl"), PL_LIB])
        self.assertEqual(out, "answer 42\n")
        r = subprocess.run(["readelf", "-n", PL_LIB], capture_output=True, text=True, check=True)
        build_id = bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", r.stdout).group(1))
        t = Trace(trace, "lttng_ust_dl")
        opened = [e for e in t.events if e["name"] == "lttng_ust_dl:dlopen"
                  and e["p"].get("flags") is not None]
        self.assertEqual(len(opened), 1)
        o = opened[0]["p"]
        self.assertEqual((o["path"], o["flags"], o["has_build_id"]), (PL_LIB, 2, 1))
        self.assertGreater(o["memsz"], 0)
        ids = [e["p"]["build_id"] for e in t.events
               if e["name"] == "lttng_ust_dl:build_id" and e["p"]["baddr"] == o["baddr"]]
        self.assertIn(list(build_id), ids)
        closed = [e["p"]["baddr"] for e in t.events if e["name"] == "lttng_ust_dl:dlclose"]
        self.assertEqual(closed, [o["baddr"]])

    def test_func(self):
        prog = os.path.join(HERE, "pl_func")
        trace, out = self.record("func", [prog])
        self.assertEqual(out, "sum 6\n")
        syms = {}
        for line in subprocess.run(["nm", prog], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            w = line.split()
            if len(w) == 3 and w[2] in ("main", "outer", "leaf"):
                syms[int(w[0], 16)] = w[2]
        t = Trace(trace, "lttng_ust_cyg_profile")
        base, _ = t.object_of(t.events[0]["vpid"], "/pl_func")
        got = [(e["name"].split(":")[1], syms.get(e["p"]["addr"] - base)) for e in t.events]
        want = [("func_entry", "main"), ("func_entry", "outer")] + \
            [("func_entry", "leaf"), ("func_exit", "leaf")] * 3 + \
            [("func_exit", "outer"), ("func_exit", "main")]
        self.assertEqual(got, want)

    def test_daemon_session(self):
        """LD_PRELOAD by hand under a session of the daemon (docs/preload.md):
        the session's rules decide; the mallocs are in its trace."""
        out_dir = os.path.join(self.tmp.name, "session")
        with open(os.path.join(self.tmp.name, "daemon.log"), "w") as log:
            d = rtfixtures.start_daemon(os.path.join(BUILD, "src/daemon/ringtraced"),
                                        self.env, log)
        try:
            for cmd in (["create", "mem", "-o", out_dir],
                        ["enable-event", "-u", "lttng_ust_libc:malloc"],
                        ["add-context", "-u", "-t", "vpid", "-t", "vtid", "-t", "procname"], ["start"]):
                r = subprocess.run([RINGTRACE, *cmd], capture_output=True, text=True,
                                   timeout=60, env=self.env)
                self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([os.path.join(HERE, "pl_alloc"), "5"], capture_output=True,
                               text=True, timeout=60,
                               env=dict(self.env, LD_PRELOAD=helper("libc")))
            self.assertEqual(r.returncode, 0, r.stderr)
            for cmd in (["stop"], ["destroy"]):
                subprocess.run([RINGTRACE, *cmd], capture_output=True, timeout=60,
                               env=self.env, check=True)
        finally:
            d.terminate()
            d.wait()
        t = Trace(out_dir, "lttng_ust_libc")
        got = {(e["vpid"], e["p"]["size"], e["p"]["ptr"]) for e in t.events}
        for line in r.stdout.splitlines():
            w = line.split()
            if len(w) == 4 and w[1] in ("malloc", "fork-malloc", "exec-malloc"):
                self.assertIn((int(w[0]), int(w[2]), int(w[3], 16)), got, line)
        # Only what the rule names.
        self.assertEqual({e["name"] for e in t.events}, {"lttng_ust_libc:malloc"})

    def test_bad_values(self):
        for value, says in (("bogus", "unknown preload helper 'bogus'"),
                            ("libc,bogus", "unknown preload helper 'bogus'"),
                            ("", "--preload needs a helper"), (",", "--preload needs a helper")):
            r = subprocess.run([RINGTRACE, "record", "-o", os.path.join(self.tmp.name, "bad"),
                                "--preload=" + value, "--", "true"],
                               capture_output=True, text=True, timeout=60, env=self.env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(says, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "bad")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
