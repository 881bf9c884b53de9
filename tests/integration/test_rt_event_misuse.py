#!/usr/bin/python3
"""rt_event misuses fail to compile with one readable message: a provider
or event given as a string, an odd number of field arguments. Correct uses
next to them compile without a warning.

usage: test_rt_event_misuse.py SOURCE_DIR C_COMPILER
"""
import os
import subprocess
import sys
import tempfile
import unittest

SRC = os.path.abspath(sys.argv.pop(1))
CC = sys.argv.pop(1)

GOOD = ("rt_event(app, ev)", "rt_event(app, ev, x, 1)",
        'rt_event(app, ev, x, 1, s, "text", d, 2.5)',
        "rt_event_loglevel(RT_LOGLEVEL_DEBUG, app, ev, x, 1)")
# (use, what the one error must say)
BAD = (('rt_event("app", ev, x, 1)', "rt_event_provider_must_be_an_identifier_"),
       ('rt_event(app, "ev", x, 1)', "rt_event_event_must_be_an_identifier_"),
       ("rt_event(app, ev, x)", "rt_event: fields come in name, value pairs"),
       ("rt_event(app, ev, x, 1, y)", "rt_event: fields come in name, value pairs"),
       ("rt_event_loglevel(RT_LOGLEVEL_DEBUG, app, ev, x, 1, y)",
        "rt_event: fields come in name, value pairs"))


def compile_use(use):
    with tempfile.TemporaryDirectory(prefix="rt-misuse-") as d:
        src = os.path.join(d, "use.c")
        with open(src, "w") as f:
            f.write("#include <ringtrace/ringtrace.h>\n"
                    "int main(void)\n{\n\t%s;\n\treturn 0;\n}\n" % use)
        return subprocess.run([CC, "-std=gnu11", "-Wall", "-Wextra", "-fsyntax-only",
                               "-I", os.path.join(SRC, "include"), src],
                              capture_output=True, text=True, timeout=60)


class Misuse(unittest.TestCase):
    def test_good_uses_compile(self):
        for use in GOOD:
            r = compile_use(use)
            self.assertEqual((r.returncode, r.stderr), (0, ""), use)

    def test_bad_uses_give_one_message(self):
        for use, says in BAD:
            r = compile_use(use)
            self.assertNotEqual(r.returncode, 0, use)
            errors = [line for line in r.stderr.splitlines() if "error:" in line]
            self.assertEqual(len(errors), 1, "%s:\n%s" % (use, r.stderr))
            self.assertIn(says, errors[0], use)


if __name__ == "__main__":
    unittest.main(verbosity=2)
