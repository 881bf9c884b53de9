#!/usr/bin/python3
"""The documentation matches the command line: every command of
`ringtrace --help` has a man page (man/pages) with the same one-line
description and is listed in ringtrace(1), and every page of a command is
one the CLI has; every option
that `ringtrace CMD --help` (or `ringtraced --help`) prints is documented in
the page that the man page is made from, and every option that page lists
is one the command has; a session command's page describes it in the words
of its --help. The man pages themselves are checked by
test_install.sh once installed.

The console examples of docs/ (```console blocks: "$ command" lines and
the output they show) are run in a scratch directory where ./build is
BUILD_DIR, with ringtrace from BUILD_DIR and /tmp/ replaced by the scratch
directory, and their output must be what the page
shows, numbers, times and bars aside (normalized by `normal`, runs of
alike lines counted once): every line shown must come out, in order; a "..." line stands for lines left out, and
without one the output must have no other line.

usage: test_docs.py SOURCE_DIR BUILD_DIR
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC, BUILD = os.path.abspath(sys.argv.pop(1)), os.path.abspath(sys.argv.pop(1))
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


def console_blocks(path):
    """The ```console blocks of a page: lists of (command, [output lines])."""
    blocks, block, in_console = [], None, False
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.startswith("```"):
                in_console = line.strip() == "```console"
                if in_console:
                    block = []
                    blocks.append(block)
                continue
            if not in_console:
                continue
            if line.startswith("$ "):
                block.append((line[2:], []))
            elif block:
                block[-1][1].append(line)
    return blocks


def normal(line):
    """A line of output with what changes from run to run made uniform."""
    line = re.sub(r"[\u2581-\u2588]+", "", line)                  # sparklines
    line = re.sub(r"#+", "", line)                                  # histogram bars
    line = re.sub(r"\d+(\.\d+)?\s?(ns|us|ms|s|B|KiB|MiB|GiB)\b", "N", line)  # 2ms, 0
    line = re.sub(r"\d+(\.\d+)?", "N", line)
    line = re.sub(r"\bN (\w+?)s\b", r"N \1", line)                # 1 stream, 2 streams
    return " ".join(line.split())


def matches(shown, output):
    """Whether output (lines) is what shown (lines, "..." for omissions) shows."""
    def uniq(lines):  # runs of alike lines (histogram buckets, rows) count once
        return [x for i, x in enumerate(lines) if i == 0 or lines[i - 1] != x]
    out = uniq([normal(x) for x in output if x.strip()])
    want = uniq([normal(x) for x in shown if x.strip()])
    i = 0
    for w in want:
        if w == "...":
            continue
        while i < len(out) and out[i] != w:
            if "..." not in want:
                return False
            i += 1
        if i == len(out):
            return False
        i += 1
    return "..." in want or i == len(out)


class Examples(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rt-docs-")
        self.env = dict(os.environ,
                        PATH=os.path.join(BUILD, "src/cli") + ":" + os.environ["PATH"],
                        RINGTRACED=RINGTRACED,  # no daemon runs there
                        RINGTRACE_RUNDIR=os.path.join(self.tmp, "run"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_matches(self):
        self.assertTrue(matches(["a 1", "...", "c 3"], ["a 2", "b", "c 4"]))
        self.assertFalse(matches(["a 1", "c 3"], ["a 2", "b", "c 4"]))
        self.assertFalse(matches(["a 1", "d"], ["a 2", "b", "c 4"]))
        self.assertTrue(matches(["took 1.5ms"], ["took 811ns"]))

    def test_console_examples(self):
        pages = sorted(glob.glob(os.path.join(SRC, "docs/*.md")) +
                       glob.glob(os.path.join(SRC, "docs/commands/*.md")))
        ran = 0
        for page in pages:
            for block in console_blocks(page):
                scratch = tempfile.mkdtemp(dir=self.tmp)
                os.symlink(BUILD, os.path.join(scratch, "build"))  # ./build/... as shown
                for cmd, shown in block:
                    run = cmd.replace("/tmp/", scratch + "/")
                    r = subprocess.run(["bash", "-c", run + " 2>&1"], cwd=scratch, env=self.env,
                                       capture_output=True, text=True, timeout=60)
                    output = r.stdout.replace(scratch + "/", "/tmp/").splitlines()
                    where = os.path.relpath(page, SRC)
                    self.assertEqual(r.returncode, 0, f"{where}: `{cmd}` failed:\n{r.stdout}")
                    self.assertTrue(matches(shown, output),
                                    f"{where}: `{cmd}` shows\n" + "\n".join(shown) +
                                    "\nbut prints today\n" + "\n".join(output))
                    ran += 1
        self.assertGreaterEqual(ran, 7)


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

    def test_overview_lists_every_command(self):
        """ringtrace(1) lists exactly the commands of `ringtrace --help`."""
        with open(os.path.join(SRC, self.pages[("ringtrace", "1")][0]), encoding="utf-8") as f:
            listed = re.findall(r"^\[ringtrace ([a-z-]+)\]", f.read(), re.M)
        self.assertEqual(sorted(listed), sorted(self.commands))

    def test_every_page_is_a_command(self):
        for (name, section) in self.pages:
            if name.startswith("ringtrace-") and section == "1":   # 7: topics
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

    def test_descriptions_of_session_commands(self):
        """A session command's --help DESCRIPTION is its page's Description
        (first paragraph, whitespace aside): the man page says what the
        command says."""
        checked = 0
        for cmd in self.commands:
            m = re.search(r"^DESCRIPTION\n(.*?)\n\n", help_text(RINGTRACE, cmd, "--help"),
                          re.S | re.M)
            if not m:
                continue
            source = self.pages[("ringtrace-" + cmd, "1")][0]
            with open(os.path.join(SRC, source), encoding="utf-8") as f:
                d = re.search(r"^## Description\n\n(.*?)\n\n", f.read(), re.S | re.M)
            self.assertIsNotNone(d, f"{source} has no Description")
            self.assertEqual(" ".join(d.group(1).split()), " ".join(m.group(1).split()),
                             f"{source}: the Description differs from `ringtrace {cmd} --help`")
            checked += 1
        self.assertGreaterEqual(checked, 16)

    def test_options_of_ringtrace_itself(self):
        """Each option that ringtrace(1) lists works (exit status 0)."""
        source = self.pages[("ringtrace", "1")][0]
        with open(os.path.join(SRC, source), encoding="utf-8") as f:
            listed = [re.findall(r"\*\*(-[^*]+)\*\*", line)
                      for line in f if LISTED.match(line)]
        opts = [o for line in listed for o in line]
        self.assertIn("--version", opts)
        for opt in opts:
            help_text(RINGTRACE, opt)

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
