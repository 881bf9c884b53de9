#!/usr/bin/python3
"""The stable call-site ABI: call sites built against the headers of
earlier ABI versions (tests/abi/vN, frozen) keep tracing with the current
libringtrace. Each build of callsite.c runs under `ringtrace record`; its
trace is read back with our reader (rtr_dump) and every event is checked,
field by field, against what callsite.c computed.

usage: test_abi.py BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
VERSIONS = ["1", "2", "3", "5", "current"]


def callsite(version):
    return os.path.join(BUILD, "tests/abi/abi_callsite_" + version)


def expected(version, n):
    """callsite.c's events, in program order: (name, payload)."""
    out = [("abi:by_hand", {"v": v}) for v in range(10)]
    if version == "1":
        out += [("abi:outer", {"v": 111}), ("abi:inner", {"v": 222})]
    for i in range(n):
        v = i * 7
        b = [(v + k) & 0xff for k in range(i % 9)]
        out += [("abi:empty", {}),
                ("abi:fixed", {"a": v & 0xff, "b": -i, "c": v + 1, "d": v << 32,
                               "e": i / 4}),
                ("abi:wide", {k: v + j for j, k in enumerate("abcdefgh")}),
                ("abi:text", {"s": f"event {i}", "n": i, "_b_length": len(b), "b": b})]
    return out


class OldCallSites(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-abi-")

    def tearDown(self):
        self.tmp.cleanup()

    def check_events(self, version, n, events):
        # Version 1's nested pair: in buffer order, which differs between
        # a first and a second buffer (callsite.c).
        def pair_sorted(evs):
            return sorted(evs[10:12]) + evs[12:] if version == "1" else evs[10:]
        got = [(e["name"], e["payload"]) for e in events]
        want = expected(version, n)
        got, want = got[:10] + pair_sorted(got), want[:10] + pair_sorted(want)
        self.assertEqual(len(got), len(want))
        for k, (g, w) in enumerate(zip(got, want)):
            self.assertEqual(g, w, f"event {k}")

    def run_version(self, version, n, *opts):
        trace = os.path.join(self.tmp.name, f"v{version}{len(opts)}")
        r = subprocess.run([RINGTRACE, "record", "-o", trace, *opts, "--",
                            callsite(version), str(n)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^abi \d+: done\n$")
        self.assertNotIn("ignored", r.stderr)
        events = rtfixtures.rtr_dump(BUILD, trace)
        self.check_events(version, n, events)
        return events

    def test_contexts(self):
        """record's default contexts: every call site takes the probe."""
        for v in VERSIONS:
            with self.subTest(version=v):
                events = self.run_version(v, 200)
                name = os.path.basename(callsite(v))[:15]
                self.assertTrue(all(e["context"]["procname"] == name for e in events))

    def test_no_contexts_many_subbuffers(self):
        """Without contexts the current call sites record inline, older
        ones through the library (their `fast` stays NULL: callsite.c
        checks); events span many sub-buffers."""
        for v in VERSIONS:
            with self.subTest(version=v):
                self.run_version(v, 3000, "-t", "none", "--subbuf-size", "4k",
                                 "--num-subbuf", "256")


    def rt(self, env, *args):
        r = subprocess.run([RINGTRACE, *args], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertEqual(r.returncode, 0, f"ringtrace {' '.join(args)}: {r.stderr}")

    def test_daemon_two_sessions(self):
        """Through ringtraced, two sessions record every event: each call
        site writes both buffers (version 1's rt__commit hands over the
        second one)."""
        env = rtfixtures.private_env(self.tmp.name)
        with open(os.path.join(self.tmp.name, "daemon.log"), "a") as log:
            daemon = rtfixtures.start_daemon(RINGTRACED, env, log)
            try:
                for v in VERSIONS:
                    with self.subTest(version=v):
                        outs = [os.path.join(self.tmp.name, f"d{v}-{k}") for k in (1, 2)]
                        for k, out in enumerate(outs):
                            self.rt(env, "create", f"s{v}-{k}", "-o", out)
                            self.rt(env, "enable-event", "-u", "abi:*")
                            self.rt(env, "start")
                        r = subprocess.run([callsite(v), "100"], capture_output=True,
                                           text=True, env=env, timeout=120)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        for k in range(len(outs)):
                            self.rt(env, "destroy", f"s{v}-{k}")
                        for out in outs:
                            self.check_events(v, 100, rtfixtures.rtr_dump(BUILD, out))
            finally:
                daemon.kill()
                daemon.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)
