#!/usr/bin/python3
"""Programs that fork, in every mode: no tracing, embedded (`record
--embedded`, RINGTRACE_OUTPUT) and through a private ringtraced (`record`,
a session started before the program). Traces are read back with
babeltrace2 and `ringtrace view` and checked event by event.

usage: test_apps_fork.py BUILD_DIR
"""
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
import unittest

from apps_common import AppCase, BUILD, Program, RINGTRACE, read_events

FORKER = os.path.join(BUILD, "tests/integration/forker")


class ForkLocks(AppCase):
    """No lock of the library is left held in a fork child: a thread keeps
    the registry's lock busy while the main thread forks children that
    call exit(0), whose destructors take it (the child hung before)."""

    STALL_S = 60    # a child takes milliseconds (some 0.1 s on a loaded machine)

    def run_stress(self, cmd, env):
        """Runs `forker stress K`; a hang is a child that does not end
        within STALL_S seconds of the previous one, however long all K
        take on a loaded machine (the whole run took over 60 s there)."""
        k = int(cmd[-1])
        with tempfile.TemporaryFile() as err, \
                subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err) as p, \
                selectors.DefaultSelector() as sel:
            sel.register(p.stdout, selectors.EVENT_READ)
            done = []
            try:
                while True:
                    if not sel.select(timeout=self.STALL_S):
                        self.fail(f"{cmd}: hung after {len(done)} children (nothing "
                                  f"ended for {self.STALL_S} s)")
                    line = p.stdout.readline()
                    if not line:
                        break
                    done.append(line.decode())
            finally:
                if p.poll() is None:
                    p.kill()
            p.wait()
            err.seek(0)
            self.assertEqual(p.returncode, 0, err.read().decode(errors="replace"))
        self.assertEqual(done, [f"done {i}\n" for i in range(k)])

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


def view_events(path):
    """The events as `ringtrace view --format=json` prints them, as
    read_events' dicts (event, payload fields, ctx_vpid, ctx_vtid)."""
    r = subprocess.run([RINGTRACE, "view", "--format=json", path], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    events = []
    for line in r.stdout.splitlines():
        j = json.loads(line)
        e = {"event": j["name"], **j.get("fields", {})}
        for k, v in j.get("context", {}).items():
            e["ctx_" + k] = v
        events.append(e)
    return events


N, M, LEAF = 2, 50, 7   # the forker 2 50, plus an exec'd child of 7 events


class Forking(AppCase):
    """forker 2 50 with a third child that execs `forker leaf 2 7`: every
    process of the tree is recorded from its first event, in every mode,
    each event with its process's own vpid and vtid."""

    def run_forker(self, cmd, env=None, leaf=True):
        tail = [FORKER, "leaf", str(N), str(LEAF)] if leaf else []
        r = subprocess.run(cmd + [FORKER, str(N), str(M)] + tail, env=env or self.env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def check(self, path, inherit=True, contexts=True):
        for reader in (read_events, view_events):
            events = reader(path)
            parent = [e for e in events if e["event"] in
                      ("forker:begin", "forker:forked", "forker:end")]
            self.assertEqual([(e["event"], e.get("k", e.get("n"))) for e in parent],
                             [("forker:begin", N)] + [("forker:forked", k) for k in range(N + 1)]
                             + [("forker:end", N)], reader.__name__)
            self.assertEqual((parent[0]["n"], parent[0]["m"]), (N, M))
            kids = [e for e in events if e not in parent]
            if not inherit:
                self.assertEqual(kids, [], reader.__name__)
                continue
            want = []
            for k in range(N):
                want += [("forker:child_begin", k, None, None)]
                want += [("forker:work", k, i, k * 1000000 + i) for i in range(M)]
                want += [("forker:child_end", k, None, None)]
            want += [("forker:leaf", N, i, None) for i in range(LEAF)]
            got = sorted((e["event"], e["k"], e.get("i"), e.get("v")) for e in kids)
            key = lambda w: (w[0], w[1], -1 if w[2] is None else w[2], w[3] or 0)
            self.assertEqual(sorted(got, key=key), sorted(want, key=key), reader.__name__)
            self.assertEqual(len(events), 4 + 1 + N * (M + 2) + LEAF)
            if not contexts:
                continue
            # Each process's events carry its own pid, in its only thread.
            pids = {}
            for e in events:
                who = "parent" if e in parent else e["k"]
                pids.setdefault(who, set()).add((e["ctx_vpid"], e["ctx_vtid"]))
            for who, s in pids.items():
                self.assertEqual(len(s), 1, (reader.__name__, who, s))
                vpid, vtid = next(iter(s))
                self.assertEqual(vpid, vtid)
            self.assertEqual(len({next(iter(s))[0] for s in pids.values()}), N + 2)

    def test_record_embedded(self):
        out = self.out("t")
        self.run_forker([RINGTRACE, "record", "--embedded", "-q", "-o", out, "--"])
        self.check(out)

    def test_record_daemon(self):
        out = self.out("t")
        self.run_forker([RINGTRACE, "record", "-q", "-o", out, "--"])
        self.check(out)

    def test_output_variable(self):
        out = self.out("t")
        self.run_forker([], env=dict(self.env, RINGTRACE_OUTPUT=out,
                                     RINGTRACE_CONTEXTS="vpid,vtid"))
        self.check(out)

    def test_session_started_before(self):
        out = self.out("t")
        self.session(out, "forker:*", contexts=("vpid", "vtid"))
        self.rt("start")
        self.run_forker([])
        self.rt("stop")
        self.check(out)

    def test_programs_of_a_shell(self):
        """Two programs a shell runs one after the other (neither is the
        other's descendant) both join the one trace, in both modes."""
        for opts in (["--embedded"], []):
            out = self.out("sh" + "".join(opts))
            r = subprocess.run([RINGTRACE, "record", *opts, "-q", "-o", out, "--", "sh", "-c",
                                f"{FORKER} leaf 1 3 && {FORKER} leaf 2 4"], env=self.env,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            for reader in (read_events, view_events):
                got = sorted((e["event"], e["k"], e["i"]) for e in reader(out))
                self.assertEqual(got, [("forker:leaf", 1, i) for i in range(3)]
                                 + [("forker:leaf", 2, i) for i in range(4)], opts)

    def test_no_inherit_embedded(self):
        out = self.out("t")
        self.run_forker([RINGTRACE, "record", "--embedded", "--no-inherit", "-q", "-o", out,
                         "--"])
        self.check(out, inherit=False)

    def test_no_inherit_daemon(self):
        out = self.out("t")
        self.run_forker([RINGTRACE, "record", "--no-inherit", "-q", "-o", out, "--"])
        self.check(out, inherit=False)


class ClosedDescriptors(AppCase):
    """A program that closes every descriptor from 3 up (the library's
    socket included) and creates a socketpair, which gets the numbers the
    library used: after a stop/start (the daemon writes to the old
    connection), the library must neither read nor close the program's
    descriptors (before, its listener read fd 3, found garbage and closed
    it: the program's pair was broken and it died of SIGPIPE), and it comes
    back traced on a new connection."""

    def wait_listed(self, prog, present=True):
        for _ in range(600):
            listed = any(str(prog.pid) in line.split()
                         for line in self.rt("list", "-u").splitlines())
            if listed == present:
                return
            time.sleep(0.05)
        self.fail(f"program {'not ' if present else ''}listed")

    def test_closed_socket_not_reused(self):
        out = self.out("t")
        self.session(out, "app:*")
        self.rt("start")
        prog = self.program()
        self.wait_listed(prog)
        prog.cmd("closefds")
        self.assertEqual(prog.cmd("pair"), ["3", "4"])
        self.rt("stop")
        self.rt("start")
        self.assertEqual(prog.cmd("pairtest"), ["intact"])
        # The library saw its connection gone and registered anew.
        self.wait_listed(prog)
        self.rt("stop")
        self.rt("start")
        self.assertEqual(prog.cmd("pairtest"), ["intact"])
        prog.cmd("emit 5 after")
        self.rt("stop")
        self.assertEqual(prog.cmd("pairtest"), ["intact"])
        self.assertEqual(prog.exit(), (0, ""))
        got = [(e["event"], e["seq"]) for e in read_events(out) if e.get("tag") == "after"]
        self.assertEqual(got, [("app:tick", i) for i in range(5)])

    def test_embedded_consumer(self):
        """Embedded mode: the consumer's wake pipe, stream files and
        metadata fragment are closed under it; it must neither take the
        program's pair for its pipe (stop on its data, write into it) nor
        lose the events recorded after."""
        out = self.out("t")
        prog = Program(dict(self.env, RINGTRACE_OUTPUT=out, RINGTRACE_SWITCH_TIMER_MS="5"))
        self.programs.append(prog)
        prog.cmd("emit 10 before")
        time.sleep(0.1)    # lets the switch timer write a packet (not asserted)
        prog.cmd("closefds")
        self.assertEqual(prog.cmd("pair"), ["3", "4"])
        prog.cmd("emit 10 after")
        self.assertEqual(prog.cmd("pairtest"), ["intact"])
        self.assertEqual(prog.exit(), (0, ""))
        for reader in (read_events, view_events):
            got = [(e["tag"], e["seq"]) for e in reader(out)]
            self.assertEqual(got, [("before", i) for i in range(10)]
                             + [("after", i) for i in range(10)], reader.__name__)


if __name__ == "__main__":
    unittest.main(verbosity=2)
