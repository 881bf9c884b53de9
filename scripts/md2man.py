#!/usr/bin/env python3
"""Make one man page from a page of docs/, so that the documentation has one
source: the Markdown that is read on the web is also the manual.

usage: md2man.py PAGES_FILE NAME SECTION VERSION DOCDIR OUT
(DOCDIR relative to the installation prefix; go-md2man is $GO_MD2MAN, else
the one in PATH)

PAGES_FILE (man/pages) lists every page as "NAME SECTION SOURCE DESCRIPTION".
The page NAME(SECTION) is written to OUT as roff, by go-md2man, from its
SOURCE turned into a man page's Markdown:
- a title block, then a NAME section ("NAME - DESCRIPTION");
- the source's first heading is dropped; what precedes its first "##"
  heading becomes the DESCRIPTION section; "##" headings become sections
  (upper case, code spans kept as they are), "###" and deeper sub-sections;
- the paragraph right after the first heading is dropped when it only
  repeats DESCRIPTION (the command pages' one-line summary);
- inside a list, indentation is doubled: blackfriday (go-md2man's parser)
  continues a list item after a blank line only when it is indented by 4
  spaces, where CommonMark (the web) takes the item's own 2;
- a table (two columns: a term and its meaning) becomes a list of terms,
  as man pages present options, since tbl cannot fit long cells in a line
  (a nested list when the table is inside a list item);
- an underscore inside a word is escaped: go-md2man would take
  DEBUG_LINE or X_begin/X_end for emphasis, which Markdown on the web
  does not;
- a link to another page of docs/ that has a man page names that page
  ("ringtrace-analyze(1)"); a link to any other page of docs/ names the
  file, installed in DOCDIR; a web link is left to go-md2man;
- a SEE ALSO section: ringtrace(1) or, for ringtrace(1), every other page,
  and where the rest of the documentation is installed.
Code blocks (fenced, or indented outside a list) are copied as they are, but a line of the roff output that
starts with a dot or an apostrophe that is not go-md2man's own request (a
"..." line of an example) is escaped so that troff prints it.
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CELL = re.compile(r"(?<!\\)\|")
ROFF_REQUESTS = {".TH", ".SH", ".SS", ".PP", ".TP", ".IP", ".RS", ".RE",
                 ".nf", ".fi", ".nh", ".br", ".sp", ".TS", ".TE", ".EX", ".EE"}


def read_pages(path):
    """PAGES_FILE -> list of (name, section, source, description)."""
    pages = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 3)
            if len(parts) != 4:
                sys.exit(f"md2man: {path}:{n}: expected NAME SECTION SOURCE DESCRIPTION")
            pages.append(tuple(parts))
    return pages


def upper_outside_code(text):
    """Upper-case a heading, leaving `code spans` alone."""
    return "".join(p if p.startswith("`") else p.upper()
                   for p in re.split(r"(`[^`]*`)", text))


def escape_underscores(line, in_span):
    """Escape word-internal underscores outside code spans and link targets.
    in_span: whether a code span opened on an earlier line of the paragraph.
    Returns the line and whether a code span is still open at its end."""
    out = []
    for i, part in enumerate(line.split("`")):
        if i:
            in_span = not in_span
        if in_span:
            out.append(part)
            continue
        pieces = re.split(r"(\]\([^)]*\))", part)
        out.append("".join(p if p.startswith("](")
                           else re.sub(r"(?<=\w)_(?=\w)", r"\\_", p) for p in pieces))
    return "`".join(out), in_span


def table_to_list(rows):
    """A Markdown table (header, rule, rows) -> a definition list, or a list
    nested in the list item that held the table."""
    out = []
    indent = rows[0][:len(rows[0]) - len(rows[0].lstrip())]
    for row in rows[2:]:
        cells = [c.strip().replace("\\|", "|")
                 for c in CELL.split(row.strip().strip("|"))]
        if len(cells) != 2:
            sys.exit(f"md2man: a table row without two cells: {row}")
        if indent:  # blackfriday keeps no definition list inside a list item
            out += [f"{indent}- {cells[0]}: {cells[1]}"]
        else:
            out += [cells[0], ":   " + cells[1], ""]
    return out


def relink(line, here, by_source):
    """Replace links to docs/ pages by the man page or file they name."""
    def repl(m):
        text, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return m.group(0) if not target.startswith("#") else text
        path = os.path.normpath(os.path.join(os.path.dirname(here),
                                             target.split("#", 1)[0]))
        if path in by_source:
            name, section = by_source[path]
            ref = f"**{name}**({section})"
            return ref if text.strip("`").replace(" ", "-") == name \
                else f"{text} ({ref})"
        base = os.path.basename(path)
        return text if text.strip("`") == base else f"{text} ({base})"
    return LINK.sub(repl, line)


def drop_summary(lines, description):
    """Drop the paragraph after the first heading if it repeats description."""
    for i, line in enumerate(lines):
        if line.startswith("# "):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            k = j
            while k < len(lines) and lines[k].strip():
                k += 1
            para = " ".join(lines[j:k]).strip().rstrip(".").lower()
            return lines[:j] + lines[k:] if para == description.lower() else lines
    return lines


def convert(lines, source, by_source):
    """The body of SOURCE as a man page's Markdown (without title and NAME)."""
    out, in_code, seen_title, in_section, table = [], False, False, False, []
    in_span = False

    def text(line):
        nonlocal in_span
        if not line.strip():
            in_span = False
        if line.startswith("    ") and not in_list:  # an indented code block
            return line
        line, in_span = escape_underscores(relink(line, source, by_source), in_span)
        return line

    in_list = False
    for line in lines + [""]:
        if not in_code and line.strip():
            if re.match(r"^([-*+]|\d+\.) ", line):
                in_list = True
            elif not line[0].isspace():
                in_list = False
            elif in_list:
                line = " " * (len(line) - len(line.lstrip())) + line
        if not in_code and line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            out += [text(x) for x in table_to_list(table)]
            table = []
        if not in_code and not in_section and line.strip() and not line.startswith("#"):
            out += ["# DESCRIPTION", ""]
            in_section = True
        if FENCE.match(line):
            in_code = not in_code
            out.append(line)
            continue
        if in_code:
            out.append(line)
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m and len(m.group(1)) == 1 and not seen_title:
            seen_title = True
            continue
        if m:
            level = len(m.group(1))
            if level <= 2:
                out.append("# " + upper_outside_code(m.group(2)))
            else:
                out.append("## " + m.group(2))
            in_section = True
            continue
        out.append(text(line))
    return out


def escape_roff(text):
    """Escape lines that troff would take for an unknown request."""
    return "\n".join("\\&" + l if l[:1] in (".", "'") and l.split(" ")[0] not in ROFF_REQUESTS
                     else l for l in text.split("\n"))


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    pages_file, name, section, version, docdir, out = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(pages_file)))
    pages = read_pages(pages_file)
    by_source = {os.path.normpath(os.path.join(root, src)): (n, s)
                 for n, s, src, _ in pages}
    this = [p for p in pages if p[0] == name and p[1] == section]
    if len(this) != 1:
        sys.exit(f"md2man: {name}({section}) is not listed once in {pages_file}")
    _, _, source, description = this[0]
    source = os.path.join(root, source)
    with open(source, encoding="utf-8") as f:
        body = convert(drop_summary(f.read().splitlines(), description),
                       source, by_source)

    md = [f'% {name.upper()} {section} "" "ringtrace {version}" "ringtrace manual"', "",
          "# NAME", f"{name} - {description}", ""]
    md += body
    md += ["", "# SEE ALSO", ""]
    if name == "ringtrace" and section == "1":
        refs = [f"**{n}**({s})" for n, s, _, _ in pages if (n, s) != (name, section)]
    else:
        refs = ["**ringtrace**(1)"]
    md.append(", ".join(refs))
    md += ["", f"The rest of the documentation is installed in {docdir} under the "
           "installation prefix (such as /usr/local)."]
    r = subprocess.run([os.environ.get("GO_MD2MAN", "go-md2man")], input="\n".join(md) + "\n",
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"md2man: go-md2man failed on {source}: {r.stderr.strip()}")
    with open(out, "w", encoding="utf-8") as f:
        f.write(escape_roff(r.stdout))


if __name__ == "__main__":
    main()
