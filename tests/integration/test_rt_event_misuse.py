#!/usr/bin/python3
"""rt_event and rt_printf misuses fail to compile with one readable
message: a provider or event given as a string, an odd number of field
arguments, a value of a type it cannot record; rt_printf's arguments that
do not match its format are refused under -Werror=format. Correct uses
next to them compile without a warning, in GNU C, in ISO C with -pedantic, and in ISO C++17 with
-pedantic with each C++ compiler given (tests/cxx builds a program in each
standard).

usage: test_rt_event_misuse.py SOURCE_DIR C_COMPILER [CXX_COMPILER...]
"""
import os
import subprocess
import sys
import tempfile
import unittest

SRC = os.path.abspath(sys.argv.pop(1))
CC = sys.argv.pop(1)
CXXS = sys.argv[1:]
del sys.argv[1:]

GOOD = ("rt_event(app, ev)", "rt_event(app, ev, x, 1)",
        'rt_event(app, ev, x, 1, s, "text", d, 2.5)',
        "rt_event_loglevel(RT_LOGLEVEL_DEBUG, app, ev, x, 1)",
        'rt_printf(app, ev, "plain")', 'rt_printf(app, ev, "%d %s %.1f", 1, "x", 2.5)',
        'rt_printf_loglevel(RT_LOGLEVEL_DEBUG, app, ev, "%c" "%u", 65, 1u)')
# (use, what the one error must say)
BAD = (('rt_event("app", ev, x, 1)', "rt_event_provider_must_be_an_identifier_"),
       ('rt_event(app, "ev", x, 1)', "rt_event_event_must_be_an_identifier_"),
       ("rt_event(app, ev, x)", "rt_event: fields come in name, value pairs"),
       ("rt_event(app, ev, x, 1, y)", "rt_event: fields come in name, value pairs"),
       ("rt_event_loglevel(RT_LOGLEVEL_DEBUG, app, ev, x, 1, y)",
        "rt_event: fields come in name, value pairs"),
       ("rt_event(app, ev, d, (long double)1)", "has an unsupported type"),
       ('rt_printf("app", ev, "x")', "rt_event_provider_must_be_an_identifier_"),
       ('rt_printf(app, ev, "%Lf", (long double)1)', "has an unsupported type"))
# C++ only: classes are refused too (std::string's c_str() is a string).
BAD_CXX = (('rt_event(app, ev, s, std::string("x"))',
            "rt_event: field 's' has an unsupported type"),
           ("rt_event(app, ev, n, nullptr)", "rt_event: field 'n' has an unsupported type"))
# (GCC's C front end shows the quotes of the C message escaped.)
# (compiler, language, flags)
LANGS = [(CC, "c", ["-std=gnu11"]), (CC, "c", ["-std=c11", "-pedantic"])]
for cxx in CXXS:
    LANGS.append((cxx, "c++", ["-std=c++17", "-pedantic"]))


def compile_use(use, compiler, lang, flags, werror=()):
    with tempfile.TemporaryDirectory(prefix="rt-misuse-") as d:
        src = os.path.join(d, "use." + ("cpp" if lang == "c++" else "c"))
        with open(src, "w") as f:
            f.write("%s#include <ringtrace/ringtrace.h>\n"
                    "int main(void)\n{\n\t%s;\n\treturn 0;\n}\n"
                    % ("#include <string>\n" if lang == "c++" else "", use))
        return subprocess.run([compiler, *flags, "-Wall", "-Wextra", *werror, "-fsyntax-only",
                               "-I", os.path.join(SRC, "include"), src],
                              capture_output=True, text=True, timeout=60)


class Misuse(unittest.TestCase):
    def test_good_uses_compile(self):
        for compiler, lang, flags in LANGS:
            for use in GOOD:
                r = compile_use(use, compiler, lang, flags)
                self.assertEqual((r.returncode, r.stderr), (0, ""), (use, compiler, flags))

    def test_bad_uses_give_one_message(self):
        for compiler, lang, flags in LANGS:
            for use, says in BAD + (BAD_CXX if lang == "c++" else ()):
                r = compile_use(use, compiler, lang, flags)
                self.assertNotEqual(r.returncode, 0, use)
                errors = [line for line in r.stderr.splitlines() if "error:" in line]
                self.assertEqual(len(errors), 1, "%s %s %s:\n%s" % (use, compiler, flags, r.stderr))
                self.assertIn(says, errors[0], (use, compiler, flags))

    def test_printf_arguments_checked_against_the_format(self):
        for compiler, lang, flags in LANGS:
            for use in ('rt_printf(app, ev, "%d", "text")', 'rt_printf(app, ev, "%s %s", "a")'):
                r = compile_use(use, compiler, lang, flags, ["-Werror=format"])
                self.assertNotEqual(r.returncode, 0, (use, compiler, flags))
                self.assertRegex(r.stderr, r"error: .*format", (use, compiler, flags))


if __name__ == "__main__":
    unittest.main(verbosity=2)
