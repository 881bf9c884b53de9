#!/usr/bin/python3
"""rt_event from C++: cxx_events (every field type, templates, an inline
function emitted by two translation units, a member function, a lambda,
enumerations, an event without fields, a log level, rt_printf's events)
is built with each
C++ compiler given, in C++17, C++20 and C++23, with -Wall -Wextra -Werror
-pedantic, recorded by `ringtrace record` with the default contexts (the
library's path) and with none (the call sites' inline path), and every
event is read back with babeltrace2 and with our reader and compared with
the values the program computed; rt_printf's formats are the labels of
their field fmt (babeltrace2) and `ringtrace view` prints each formatted
message (its field msg).

usage: test_cxx.py SOURCE_DIR BUILD_DIR CXX...
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import bt2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
import rtfixtures  # noqa: E402

SRC = os.path.abspath(sys.argv.pop(1))
BUILD = os.path.abspath(sys.argv.pop(1))
COMPILERS = sys.argv[1:]
del sys.argv[1:]
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
HERE = os.path.join(SRC, "tests/cxx")
N = 12


def std_flag(cxx, std):
    """-std=c++23, or the draft's name for it (c++2b) on a compiler that
    predates the name."""
    for flag in ("-std=c++%d" % std, "-std=c++2b" if std == 23 else None):
        if flag and subprocess.run([cxx, flag, "-x", "c++", "-fsyntax-only", "/dev/null"],
                                   capture_output=True).returncode == 0:
            return flag
    raise AssertionError("%s accepts no flag for C++%d" % (cxx, std))


def expected():
    """[(event name, payload)] in the order cxx_events records them."""
    evs = []
    for i in range(N):
        evs.append(("cxx:types", {
            "s8": -i, "u8": 200 + i, "s16": -300 * i, "u16": 60000 + i, "s32": -70000 * i,
            "u32": 4000000000 + i, "s64": -(1 << 40) - i, "u64": (1 << 63) | i,
            "f": 0.5 * i, "d": 0.25 * i, "b": i % 2, "ch": ord("a") + i % 26,
            "lit": "literal", "arr": "buf%d" % i, "str": "item-%d" % i, "null": "(null)",
            "_seq_length": i % 5, "seq": [0xca, 0xfe, 0x00, 0x7f][:i % 5], "ptr": 0x1000 + i,
            "scoped": 2 if i % 2 else 1, "unscoped": 7 if i % 2 else -3}))
        evs.append(("cxx:none", {}))
        evs.append(("cxx:debug", {"i": i}))
        evs.append(("cxx:generic", {"v": i, "i": i}))
        evs.append(("cxx:generic", {"v": 1.5 * i, "i": i}))
        evs.append(("cxx:generic", {"v": "item-%d" % i, "i": i}))
        evs.append(("cxx:method", {"n": -5 + 10 * (i + 1)}))
        evs.append(("cxx:lambda", {"i": i, "twice": 2 * i}))
        evs.append(("cxx:printf_none", {"fmt": 0}))
        evs.append(("cxx:printf", {"fmt": 0, "arg1": i, "arg2": (1 << 63) | i,
                                   "arg3": "item-%d" % i, "arg4": 0.25 * i,
                                   "arg5": ord("a") + i % 26, "arg6": 0x1000 + i}))
        evs.append(("cxx:printf_debug", {"fmt": 0, "arg1": -i, "arg2": "ab"}))
        evs.append(("cxx:printf_generic", {"fmt": 0, "arg1": i, "arg2": 2 * i}))
        evs.append(("cxx:printf_lambda", {"fmt": 0, "arg1": "item-%d" % i, "arg2": i}))
        evs.append(("cxx:shared", {"unit": "main", "k": i}))
    evs.extend(("cxx:shared", {"unit": "other", "k": i}) for i in range(N))
    return evs


# rt_printf's events: the format of each, and the message printf makes of
# iteration i's arguments.
FORMATS = {
    "cxx:printf_none": "no arguments",
    "cxx:printf": "i=%d u64=%llu s=%s d=%.2f c=%c p=%p",
    "cxx:printf_debug": "[%5d|%-4s]",
    "cxx:printf_generic": "twice %d is %ld",
    "cxx:printf_lambda": "%s#%d",
}


def messages():
    """[(event name, msg)] of rt_printf's events, in order."""
    msgs = []
    for i in range(N):
        msgs += [("cxx:printf_none", "no arguments"),
                 ("cxx:printf", "i=%d u64=%d s=item-%d d=%.2f c=%c p=%#x" % (
                     i, (1 << 63) | i, i, 0.25 * i, chr(ord("a") + i % 26), 0x1000 + i)),
                 ("cxx:printf_debug", "[%5d|%-4s]" % (-i, "ab")),
                 ("cxx:printf_generic", "twice %d is %d" % (i, 2 * i)),
                 ("cxx:printf_lambda", "item-%d#%d" % (i, i))]
    return msgs


def bt2_events(trace):
    events, discarded, lost = rtfixtures.bt2_read(trace)
    assert (discarded, lost) == (0, 0), (discarded, lost)
    return events


class Cxx(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-cxx-")

    def tearDown(self):
        self.tmp.cleanup()

    def build(self, cxx, flags, name):
        exe = os.path.join(self.tmp.name, name)
        cmd = [cxx, *flags, "-Wall", "-Wextra", "-Werror", "-pedantic",
               "-I", os.path.join(SRC, "include"), "-o", exe,
               os.path.join(HERE, "cxx_events.cpp"), os.path.join(HERE, "cxx_other.cpp"),
               "-L", BUILD, "-lringtrace", "-Wl,-rpath," + BUILD]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual((r.returncode, r.stderr), (0, ""), " ".join(cmd))
        return exe

    def check_trace(self, trace):
        want = expected()
        events = bt2_events(trace)
        got = [(m.event.name, rtfixtures.bt2_plain(m.event.payload_field)) for m in events]
        self.assertEqual(len(got), len(want))
        for k, (g, w) in enumerate(zip(got, want)):
            self.assertEqual(g, w, "event %d (babeltrace2)" % k)
        # The log level, and one event class per distinct field list.
        levels = {m.event.name: m.event.cls.log_level for m in events}
        self.assertEqual(levels["cxx:debug"], bt2.EventClassLogLevel.DEBUG)
        self.assertEqual(levels["cxx:types"], bt2.EventClassLogLevel.INFO)
        self.assertEqual(levels["cxx:printf_debug"], bt2.EventClassLogLevel.DEBUG)
        self.assertEqual(levels["cxx:printf"], bt2.EventClassLogLevel.INFO)
        for m in events:
            if m.event.name in FORMATS:
                self.assertEqual(list(m.event.payload_field["fmt"].labels),
                                 [FORMATS[m.event.name]], m.event.name)
        ids = {}
        for m in events:
            ids.setdefault(m.event.name, set()).add(m.event.cls.id)
        self.assertEqual(len(ids["cxx:generic"]), 3)
        self.assertEqual(len(ids["cxx:shared"]), 1)
        mine = [(e["name"], e["payload"]) for e in rtfixtures.rtr_dump(BUILD, trace)]
        self.assertEqual(len(mine), len(want))
        for k, (g, w) in enumerate(zip(mine, want)):
            self.assertEqual(g, w, "event %d (our reader)" % k)
        view = subprocess.run([RINGTRACE, "view", "--format=json", trace], capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(view.returncode, 0, view.stderr)
        msgs = [(e["name"], e["fields"]["msg"]) for e in map(json.loads, view.stdout.splitlines())
                if e["name"] in FORMATS]
        self.assertEqual(msgs, messages())

    def test_compilers_and_standards(self):
        variants = []
        for cxx in COMPILERS:
            for std in (17, 20, 23):
                variants.append((cxx, [std_flag(cxx, std), "-O2"]))
        # The inline path's assembly unoptimized too.
        variants.append((COMPILERS[0], [std_flag(COMPILERS[0], 17), "-O0"]))
        for k, (cxx, flags) in enumerate(variants):
            with self.subTest(cxx=cxx, flags=flags):
                exe = self.build(cxx, flags, "cxx_events%d" % k)
                for contexts in ([], ["-t", "none"]):
                    trace = os.path.join(self.tmp.name, "trace%d%s" % (k, "".join(contexts)))
                    r = subprocess.run([RINGTRACE, "record", "-q", "-o", trace, *contexts,
                                        "--", exe, str(N)],
                                       capture_output=True, text=True, timeout=120)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stdout, "recorded %d iterations\n" % N)
                    self.check_trace(trace)


if __name__ == "__main__":
    if not COMPILERS:
        print("skipped: no C++ compiler")
        sys.exit(77)
    unittest.main(verbosity=2)
