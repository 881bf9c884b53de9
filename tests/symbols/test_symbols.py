#!/usr/bin/python3
"""The library's state dump and the `ip` context resolved to symbols.

tests/symbols/symapp records events in main_work (its executable),
lib_work (symlib.so, loaded with dlopen while tracing) and in a thread
named "sym-worker", with the ip context, and writes the functions'
addresses (dladdr in the program itself) to a side file. Checked, event
by event, in embedded mode (`record -t ...,ip`) and in a daemon snapshot
session (the dump taken before the snapshot):
  - `view` shows ip as <main_work+0xOFF> / <lib_work+0xOFF>, OFF being ip
    minus the address dladdr gave, inside the symbol's size (nm -S);
    every resolved ip agrees with babeltrace2's debug-info filter;
    --no-symbols shows raw addresses; JSON has "ip_symbol";
  - the dump lists the threads by name and the loaded objects with the
    build ids `readelf -n` reads in their files;
  - babeltrace2 reads the trace: the same events as our reader;
  - `analyze --threads` names the worker from the dump when the events
    carry no procname context (the snapshot session);
  - a trace whose dump names a FIFO, a directory or a missing file shows
    raw addresses, promptly (hostile input).

usage: test_symbols.py BUILD_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
APP = os.path.join(BUILD, "tests/symbols/symapp")
LIB = os.path.join(BUILD, "tests/symbols/symlib.so")
FORKER = os.path.join(BUILD, "tests/integration/forker")
SYM_RE = re.compile(r"ip = (0x[0-9a-f]+)(?: <([^>]*)>)?")


def nm_sizes(path):
    """{symbol: size} of the functions of the ELF file `path` (nm -S)."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines():
        w = line.split()
        if len(w) == 4 and w[2] in "tT":
            sizes[w[3]] = int(w[1], 16)
    return sizes


def readelf_build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def side_file(path):
    with open(path) as f:
        return {w[0]: int(w[1], 0) for w in (line.split() for line in f)}


def view(trace, *opts):
    r = subprocess.run([RINGTRACE, "view", "--no-delta", *opts, trace], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("view: " + r.stderr)
    return r.stdout.splitlines()


class Checks:
    """What both modes check on self.trace, self.side."""

    def events(self):
        return rtfixtures.rtr_dump(BUILD, self.trace)

    def test_view_names_functions_with_their_offsets(self):
        addr = side_file(self.side)
        sizes = {"main_work": nm_sizes(APP)["main_work"], "lib_work": nm_sizes(LIB)["lib_work"]}
        seen = set()
        for line in view(self.trace):
            for name, fn in (("symapp:main_work:", "main_work"), ("symlib:lib_work:", "lib_work")):
                if name not in line:
                    continue
                m = SYM_RE.search(line)
                self.assertIsNotNone(m, line)
                ip = int(m.group(1), 16)
                off = ip - addr[fn]
                self.assertTrue(0 < off < sizes[fn], f"{line}: offset {off:#x}")
                self.assertEqual(m.group(2), f"{fn}+{off:#x}", line)
                seen.add(fn)
        self.assertEqual(seen, {"main_work", "lib_work"})

    def test_same_symbols_as_babeltrace2_debug_info(self):
        bt = rtfixtures.bt2_debug_info(self.trace)
        compared = 0
        for line in view(self.trace):
            m = SYM_RE.search(line)
            name = re.search(r" ([a-z_0-9]+:[a-z_0-9]+): ", line)
            if not m or not name or not m.group(2):
                continue
            key = (name.group(1), int(m.group(1), 16))
            if bt.get(key):
                self.assertEqual(m.group(2), bt[key], line)
                compared += 1
        self.assertGreaterEqual(compared, 2)

    def test_no_symbols_and_json(self):
        self.assertFalse([ln for ln in view(self.trace, "--no-symbols") if " <" in ln])
        js = [json.loads(ln) for ln in view(self.trace, "--format=json")]
        main = [e for e in js if e["name"] == "symapp:main_work"]
        self.assertEqual(len(main), 1)
        self.assertTrue(main[0]["context"]["ip_symbol"].startswith("main_work+0x"))

    def test_dump_names_threads_and_objects_with_build_ids(self):
        evs = self.events()
        tid = side_file(self.side)["worker"]
        threads = {(e["payload"]["tid"], e["payload"]["name"]) for e in evs
                   if e["name"] == "lttng_ust_statedump:thread"}
        self.assertIn((tid, "sym-worker"), threads)
        objects = {}
        for e in evs:
            if e["name"] in ("lttng_ust_statedump:bin_info", "lttng_ust_dl:dlopen"):
                objects[e["payload"]["baddr"]] = e["payload"]["path"]
        paths = set(objects.values())
        self.assertIn(os.path.realpath(APP), {os.path.realpath(p) for p in paths})
        self.assertIn(os.path.realpath(LIB), {os.path.realpath(p) for p in paths})
        checked = 0
        for e in evs:
            if e["name"] not in ("lttng_ust_statedump:build_id", "lttng_ust_dl:build_id"):
                continue
            path = objects[e["payload"]["baddr"]]
            want = readelf_build_id(path)
            got = bytes(e["payload"]["build_id"]).hex()
            self.assertEqual(got, want, path)
            checked += 1
        self.assertGreaterEqual(checked, 3)

    def test_babeltrace2_reads_the_same_events(self):
        events, discarded, lost = rtfixtures.bt2_read(self.trace)
        ours = self.events()
        self.assertEqual((discarded, lost), (0, 0))
        self.assertEqual([str(m.event.name) for m in events], [e["name"] for e in ours])


class Embedded(Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-symbols-")
        cls.trace = os.path.join(cls.tmp, "trace")
        cls.side = os.path.join(cls.tmp, "side")
        env = dict(os.environ, RINGTRACE_NO_DAEMON="1")
        r = subprocess.run([RINGTRACE, "record", "-q", "-o", cls.trace, "-t",
                            "vpid,vtid,procname,ip", "--", APP, LIB, cls.side],
                           capture_output=True, text=True, timeout=120, env=env)
        if r.returncode != 0:
            raise RuntimeError("record: " + r.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_hostile_paths_show_raw_addresses(self):
        """The executable's path in the dump rewritten (same length) to a
        FIFO, a directory and a missing file: view neither blocks nor
        fails, main_work's ip stays raw, lib_work's still resolves."""
        real = os.path.realpath(APP).encode()
        for kind in ("fifo", "dir", "missing"):
            d = os.path.join(self.tmp, "h" + kind)
            shutil.copytree(self.trace, d)
            base = os.path.join(self.tmp, kind[0])
            if len(real) <= len(base) + 1:
                self.skipTest("build path too short to rewrite")
            target = base + "/" + "x" * (len(real) - len(base) - 1)
            os.makedirs(base, exist_ok=True)
            if kind == "fifo":
                os.mkfifo(target)
            elif kind == "dir":
                os.makedirs(target, exist_ok=True)
            changed = 0
            for name in os.listdir(d):
                if name == "metadata":
                    continue
                with open(os.path.join(d, name), "rb") as f:
                    data = f.read()
                changed += data.count(real)
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data.replace(real, target.encode()))
            self.assertGreater(changed, 0)
            r = subprocess.run([RINGTRACE, "view", d], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            main = [ln for ln in r.stdout.splitlines() if "symapp:main_work:" in ln]
            lib = [ln for ln in r.stdout.splitlines() if "symlib:lib_work:" in ln]
            self.assertEqual(len(main), 1)
            self.assertIsNone(SYM_RE.search(main[0]).group(2), main[0])
            self.assertTrue(SYM_RE.search(lib[0]).group(2).startswith("lib_work+0x"))

    def test_debug_file_by_build_id_under_the_debug_root(self):
        """The executable's path in the dump rewritten to a missing file:
        its symbols come from the debug file of its build id,
        ROOT/.build-id/NN/REST.debug, ROOT being RINGTRACE_DEBUG_DIR (not
        found without it: /usr/lib/debug has no such file)."""
        real = os.path.realpath(APP).encode()
        d = os.path.join(self.tmp, "byid")
        shutil.copytree(self.trace, d)
        missing = os.path.join(self.tmp, "m")
        if len(real) <= len(missing) + 1:
            self.skipTest("build path too short to rewrite")
        missing += "/" + "x" * (len(real) - len(missing) - 1)
        for name in os.listdir(d):
            if name != "metadata":
                with open(os.path.join(d, name), "rb") as f:
                    data = f.read()
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data.replace(real, missing.encode()))
        build_id = readelf_build_id(APP)
        root = os.path.join(self.tmp, "debug")
        os.makedirs(os.path.join(root, ".build-id", build_id[:2]))
        subprocess.run(["objcopy", "--only-keep-debug", APP,
                        os.path.join(root, ".build-id", build_id[:2], build_id[2:] + ".debug")],
                       check=True)
        want = [SYM_RE.search(ln).group(2) for ln in view(self.trace) if "symapp:main_work:" in ln]
        self.assertTrue(want[0].startswith("main_work+0x"), want)
        for env, symbol in (({"RINGTRACE_DEBUG_DIR": root}, want[0]), ({}, None)):
            env = dict(os.environ, **env)
            if not symbol:
                env.pop("RINGTRACE_DEBUG_DIR", None)
            r = subprocess.run([RINGTRACE, "view", d], capture_output=True, text=True,
                               timeout=30, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            main = [SYM_RE.search(ln).group(2) for ln in r.stdout.splitlines()
                    if "symapp:main_work:" in ln]
            self.assertEqual(main, [symbol], env.get("RINGTRACE_DEBUG_DIR"))

    def test_fork_children_dump_their_own_state(self):
        """tests/integration/forker's children (a channel of their own in
        embedded mode) each dump, and view resolves their events' ip with
        their own dump."""
        if "ASAN_OPTIONS" in os.environ:
            self.skipTest("AddressSanitizer's allocator is not fork-safe: a child forked "
                          "while another thread held its lock hangs at its first "
                          "allocation (docs/sanitizers.md)")
        trace = os.path.join(self.tmp, "fork")
        r = subprocess.run([RINGTRACE, "record", "-q", "-o", trace, "-t",
                            "vpid,vtid,procname,ip", "--", FORKER, "2", "3"],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, RINGTRACE_NO_DAEMON="1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        evs = rtfixtures.rtr_dump(BUILD, trace)
        workers = {e["context"]["vpid"] for e in evs if e["name"] == "forker:work"}
        dumped = {e["context"]["vpid"] for e in evs if e["name"] == "lttng_ust_statedump:bin_info"
                  and os.path.realpath(e["payload"]["path"]) == os.path.realpath(FORKER)}
        self.assertEqual(len(workers), 2)
        self.assertLessEqual(workers, dumped)
        work = [ln for ln in view(trace) if "forker:work:" in ln]
        self.assertEqual(len(work), 6)
        for ln in work:
            self.assertRegex(SYM_RE.search(ln).group(2) or "", r"^main\+0x[0-9a-f]+$", ln)

    def test_not_recorded_without_ip_unless_named(self):
        for ctx, events, want in (("vpid,vtid", (), False),
                                  ("vpid,vtid", ("symapp:*", "lttng_ust_statedump:*"), True)):
            trace = os.path.join(self.tmp, f"t-{want}")
            cmd = [RINGTRACE, "record", "-q", "-o", trace, "-t", ctx]
            for ev in events:
                cmd += ["-e", ev]
            r = subprocess.run(cmd + ["--", APP, LIB, os.path.join(self.tmp, "s2")],
                               capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, RINGTRACE_NO_DAEMON="1"))
            self.assertEqual(r.returncode, 0, r.stderr)
            names = {e["name"] for e in rtfixtures.rtr_dump(BUILD, trace)}
            self.assertEqual("lttng_ust_statedump:bin_info" in names, want, names)
            self.assertIn("symapp:main_work", names)


class Snapshot(Checks, unittest.TestCase):
    """A daemon snapshot session: the dump comes with the snapshot."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-symbols-")
        cls.side = os.path.join(cls.tmp, "side")
        cls.env = rtfixtures.private_env(cls.tmp)
        cls.log = open(os.path.join(cls.tmp, "daemon.log"), "a")
        cls.daemon = rtfixtures.start_daemon(RINGTRACED, cls.env, cls.log)
        snaps = os.path.join(cls.tmp, "snaps")
        for args in (("create", "snap", "--snapshot", "-o", snaps),
                     ("enable-event", "-u", "symapp:*,symlib:*"),
                     ("add-context", "-u", "-t", "vpid", "-t", "vtid", "-t", "ip"),
                     ("start",)):
            cls.rt(*args)
        app = subprocess.Popen([APP, LIB, cls.side, "wait"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=cls.env)
        try:
            if app.stdout.readline() != "ready\n":
                raise RuntimeError("symapp did not start")
            out = cls.rt("snapshot", "record")
        finally:
            app.stdin.close()
            app.wait(timeout=60)
            app.stdout.close()
        cls.trace = out.split("Snapshot recorded in ", 1)[1].split()[0].rstrip(".")
        cls.rt("destroy", "snap")

    def test_analyze_names_threads_from_the_dump(self):
        """The session records no procname context: analyze names the
        worker from the dump taken before the snapshot."""
        r = subprocess.run([RINGTRACE, "analyze", "--threads", "--format", "json",
                            self.trace], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        threads = {t["key"]: t.get("thread") for t in json.loads(r.stdout)["threads"]}
        self.assertEqual(threads.get(str(side_file(self.side)["worker"])), "sym-worker",
                         threads)

    @classmethod
    def rt(cls, *args):
        r = subprocess.run([RINGTRACE, *args], capture_output=True, text=True, env=cls.env,
                           timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"ringtrace {' '.join(args)}: {r.stderr}")
        return r.stdout

    @classmethod
    def tearDownClass(cls):
        if cls.daemon.poll() is None:
            cls.daemon.kill()
        cls.daemon.wait()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
