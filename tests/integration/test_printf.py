#!/usr/bin/python3
"""rt_printf: printfer's messages, formatted at read time by `ringtrace
view` (its field msg), are exactly what snprintf made of the same format
and arguments in the program, event by event, recorded in embedded mode
and through ringtraced; babeltrace2 reads the same events with the format
as the label of the enum field fmt and the arguments as fields arg1,
arg2, ...; misuses fail to compile with one message (a format that does
not match its arguments, a format that is not a literal, too many
arguments).

usage: test_printf.py BUILD_DIR SOURCE_DIR C_COMPILER
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import bt2

BUILD = os.path.abspath(sys.argv.pop(1))
SRC = os.path.abspath(sys.argv.pop(1))
CC = sys.argv.pop(1)
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
PRINTFER = os.path.join(BUILD, "tests/integration/printfer")
sys.path.insert(0, os.path.join(SRC, "tests/support"))
import rtfixtures  # noqa: E402

# The formats printfer.c uses, by event (after the preprocessor: PRIu64
# is "lu" on x86-64).
FORMATS = {
    "plain": "no arguments at all",
    "ints": "i=%d s8=%hhd u16=%hu big=%ld hex=%x HEX=%#X oct=%o",
    "widths": "[%5d] [%-5d] [%05d] [%+d] [% d] [%*d] [%-*d] [%.3d]",
    "floats": "%f %.2f %e %g %10.3f %a",
    "text": "dev=%s pad=[%8s] left=[%-8s] cut=%.3s c=%c pct=100%%",
    "u64": "n=%lu x=%lx i=%ld",
    "escapes": "tab\there \"quoted\" back\\slash\nnew line %d",
    "negative_as_unsigned": "%u %x",
    "ptr": "p=%p null=%p b=%d",
    "joined": "adjacent literals %s",
    "null_string": "s=%s",
}


def expected(stdout):
    """printfer's own formatting of each message, in order."""
    return [bytes.fromhex(line).decode() for line in stdout.splitlines()]


class Printf(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rt-printf-")
        self.trace = os.path.join(self.tmp.name, "t")
        self.env = rtfixtures.private_env(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def record(self, *opts):
        p = subprocess.run([RINGTRACE, "record", "-q", "-o", self.trace, *opts, "--",
                            PRINTFER], capture_output=True, text=True, env=self.env,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return expected(p.stdout)

    def check_view(self, want):
        out = subprocess.run([RINGTRACE, "view", "--format=json", self.trace], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        events = [json.loads(line) for line in out.stdout.splitlines()]
        self.assertEqual([e["fields"]["msg"] for e in events], want)
        self.assertEqual(len(events), 3 * 10 + 1)
        # The arguments are there too, as recorded.
        ints = [e["fields"] for e in events if e["name"] == "printfer:ints"]
        self.assertEqual([f["arg1"] for f in ints], [0, 1, 2])
        self.assertEqual(ints[0]["arg4"], -1234567890123)
        # Text output: the message as a quoted string first.
        text = subprocess.run([RINGTRACE, "view", self.trace], capture_output=True,
                              text=True, timeout=60).stdout.splitlines()
        self.assertRegex(text[1], r' printfer:ints: \{ [^}]* \}, \{ msg = "i=0 s8=-8 u16=65535 '
                         r'big=-1234567890123 hex=deadbeef HEX=0XDEADBEEF oct=10", arg1 = 0, ')
        self.assertRegex(text[6], r'msg = "tab\\there \\"quoted\\" back\\\\slash\\nnew line 0"')

    def check_bt2(self, n):
        msgs, lost, _ = rtfixtures.bt2_read(self.trace)
        self.assertEqual(lost, 0)
        self.assertEqual(len(msgs), n)
        for m in msgs:
            ev = m.event
            name = ev.name.split(":")[1]
            payload = ev.payload_field
            keys = list(payload.keys())
            self.assertEqual(keys[0], "fmt")
            self.assertEqual(keys[1:], ["arg%d" % i for i in range(1, len(keys))])
            self.assertEqual(list(payload["fmt"].labels), [FORMATS[name]], name)
            self.assertEqual(int(payload["fmt"]), 0)
            if name == "ints":
                self.assertEqual([int(payload[k]) for k in ("arg2", "arg3", "arg5")],
                                 [-8, 65535, 0xdeadbeef])
            if name == "text":
                self.assertEqual(str(payload["arg1"]), "disk0")
            if name == "null_string":
                self.assertEqual(str(payload["arg1"]), "(null)")

    def test_embedded(self):
        want = self.record("--embedded")
        self.assertEqual(len(want), 31)
        self.check_view(want)
        self.check_bt2(31)

    def test_through_the_daemon(self):
        """The format goes through the daemon's registration (the
        protocol's event description) into its metadata."""
        with open(os.path.join(self.tmp.name, "daemon.log"), "w") as log:
            d = rtfixtures.start_daemon(RINGTRACED, self.env, log)
            try:
                want = self.record()
            finally:
                d.terminate()
                d.wait(timeout=60)
        with open(os.path.join(self.tmp.name, "daemon.log")) as f:
            self.assertNotIn("printfer", f.read())
        with open(os.path.join(self.trace, "metadata"), errors="replace") as f:
            self.assertIn('trace_name = ".record-', f.read(), "a session of the daemon")
        # Written by the daemon: a session directory with the user-space
        # trace below it.
        self.check_view(want)
        self.check_bt2(31)

    def test_our_reader_and_bt2_agree_on_the_fields(self):
        self.record("--embedded")
        out = subprocess.run([RINGTRACE, "view", "--format=json", self.trace], capture_output=True,
                             text=True, timeout=60)
        ours = [json.loads(line)["fields"] for line in out.stdout.splitlines()]
        msgs, _, _ = rtfixtures.bt2_read(self.trace)
        for fields, m in zip(ours, msgs):
            theirs = rtfixtures.bt2_plain(m.event.payload_field)
            for k, v in fields.items():
                if k == "msg" or isinstance(v, float) or k.startswith("arg") and \
                        isinstance(v, str) and v.startswith("0x"):
                    continue
                self.assertEqual(theirs[k], v, k)


def compile_use(use, *flags):
    with tempfile.TemporaryDirectory(prefix="rt-printf-cc-") as d:
        src = os.path.join(d, "use.c")
        with open(src, "w") as f:
            f.write("#include <ringtrace/ringtrace.h>\n"
                    "int main(int argc, char **argv)\n{\n\t(void)argc; (void)argv;\n"
                    "\t%s;\n\treturn 0;\n}\n" % use)
        return subprocess.run([CC, "-std=gnu11", "-Wall", "-Wextra", *flags, "-fsyntax-only",
                               "-I", os.path.join(SRC, "include"), src],
                              capture_output=True, text=True, timeout=60)


class Compile(unittest.TestCase):
    GOOD = ('rt_printf(app, ev, "plain")', 'rt_printf(app, ev, "%d %s", argc, argv[0])',
            'rt_printf_loglevel(RT_LOGLEVEL_DEBUG, app, ev, "%.2f", 1.5)',
            'rt_printf(app, ev, "%d" "%d", 1, 2)')
    BAD = (('rt_printf(app, ev, "%d", "text")', "format '%d' expects argument of type 'int'"),
           ('rt_printf(app, ev, "%s %s", argv[0])', "expects a matching"),
           # A format that is not a literal: a syntax error in the
           # check that says so, '"" fmt ""'.
           ('rt_printf(app, ev, argv[0], 1)', 'sizeof("" fmt "")'),
           ('rt_printf(app, ev, "%d"' + "".join(", 1" for _ in range(32)) + ")",
            "rt_printf: at most 31 arguments"),
           ('rt_printf("app", ev, "x")', "rt_event_provider_must_be_an_identifier_"))

    def test_good_uses_compile_cleanly(self):
        for use in self.GOOD:
            with self.subTest(use=use):
                r = compile_use(use, "-Werror", "-Wformat=2")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stderr, "")

    def test_misuses_fail(self):
        for use, msg in self.BAD:
            with self.subTest(use=use):
                r = compile_use(use, "-Werror")
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(msg, r.stderr.replace("\u2018", "'").replace("\u2019", "'"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
