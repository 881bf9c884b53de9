#!/usr/bin/python3
"""The documentation matches the command line: every command of
`ringtrace --help` has a man page (man/pages) with the same one-line
description, and every page of a command is one the CLI has; every option
that `ringtrace CMD --help` (or `ringtraced --help`) prints is documented in
the page that the man page is made from, and every option that page lists
is one the command has. The man pages themselves are checked by
test_install.sh once installed.

usage: test_docs.py SOURCE_DIR BUILD_DIR
"""
import os
import re
import subprocess
import sys
import unittest

SRC, BUILD = sys.argv.pop(1), sys.argv.pop(1)
RINGTRACE = os.path.join(BUILD, "src/cli/ringtrace")
RINGTRACED = os.path.join(BUILD, "src/daemon/ringtraced")
LONG_OPT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# The options a page lists: a definition-list term (**-o**, **--output** DIR)
# or the first cell of a table row (| `-o, --output DIR` | ...).
LISTED = re.compile(r"^(?:\*\*-.*|\s*\| *`-[^|]*\|)")


def pages():
    """man/pages -> {name: (section, source, description)}"""
    out = {}
    with open(os.path.join(SRC, "man/pages"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, section, source, desc = line.split(None, 3)
                out[(name, section)] = (source, desc.strip())
    return out


def help_text(*argv):
    """What a --help prints (it must succeed)."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exits {r.returncode}: {r.stderr}")
    return r.stdout


def commands():
    """`ringtrace --help` -> {command: description}"""
    out = {}
    for line in help_text(RINGTRACE, "--help").splitlines():
        m = re.match(r"^  ([a-z][a-z-]*)\s{2,}(\S.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def documented(source):
    """The long options a page mentions, and those it lists as options."""
    with open(os.path.join(SRC, source), encoding="utf-8") as f:
        text = f.read()
    listed = set()
    for line in text.splitlines():
        if LISTED.match(line):
            listed |= set(LONG_OPT.findall(line.split("|")[1] if "|" in line else line))
    return set(LONG_OPT.findall(text)), listed


class Docs(unittest.TestCase):
    def setUp(self):
        self.pages = pages()
        self.commands = commands()
        self.assertGreater(len(self.commands), 10, "cannot read `ringtrace --help`")

    def test_every_command_has_its_page(self):
        for cmd, desc in self.commands.items():
            key = ("ringtrace-" + cmd, "1")
            self.assertIn(key, self.pages, f"no man page for `ringtrace {cmd}` in man/pages")
            self.assertEqual(self.pages[key][1], desc,
                             f"man/pages describes ringtrace-{cmd} unlike `ringtrace --help`")

    def test_every_page_is_a_command(self):
        for (name, section) in self.pages:
            if name.startswith("ringtrace-"):
                self.assertIn(name[len("ringtrace-"):], self.commands,
                              f"{name}({section}) is not a command of `ringtrace --help`")
        for key in (("ringtrace", "1"), ("ringtraced", "8"), ("ringtrace", "3")):
            self.assertIn(key, self.pages)

    def check_options(self, name, help_out):
        source = self.pages[(name, "1" if name != "ringtraced" else "8")][0]
        mentioned, listed = documented(source)
        offered = set(LONG_OPT.findall(help_out))
        for opt in sorted(offered - mentioned - {"--help"}):
            self.fail(f"{name}: option {opt} of the --help output is not in {source}")
        for opt in sorted(listed - offered - {"--help", "--version"}):
            self.fail(f"{name}: {source} lists option {opt}, which the command does not have")

    def test_options_of_each_command(self):
        for cmd in self.commands:
            with self.subTest(cmd=cmd):
                self.check_options("ringtrace-" + cmd, help_text(RINGTRACE, cmd, "--help"))

    def test_options_of_the_daemon(self):
        self.check_options("ringtraced", help_text(RINGTRACED, "--help"))

    def test_check_catches_a_missing_option(self):
        """The option check fails on a page that lacks an option."""
        mentioned, _ = documented("docs/commands/create.md")
        self.assertIn("--snapshot", mentioned)
        offered = set(LONG_OPT.findall(help_text(RINGTRACE, "create", "--help")))
        self.assertIn("--snapshot", offered)
        self.assertNotEqual(offered - (mentioned - {"--snapshot"}) - {"--help"}, set())


if __name__ == "__main__":
    unittest.main(verbosity=2)
