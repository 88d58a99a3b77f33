"""Diagnostics as data: every `tests/diagnostics/**/*.nx` is checked with `nxc check`
and must report exactly the diagnostics its comments announce.

Writing a case (in the manner of Crafting Interpreters' test runner and
Cython's error tests): put the expected diagnostic in a line comment on the
line it points at,

    return coutn  // error:12: undefined name 'coutn'; did you mean 'count'?

The form is `// KIND[@OFFSET][:COL]: MESSAGE` where
  KIND     is `error`, `warning` or `note`;
  @OFFSET  (`@+1`, `@-2`) moves the expectation to a line after or before the
           comment's, for lines where a comment cannot go (inside an
           unterminated string or block comment);
  :COL     is the 1-based column the caret must stand at; without it any
           column matches;
  MESSAGE  is the whole message, compared exactly.

The test compares the full set of reported (line, column, severity, message)
with the announced one, so a missing, an extra, a moved or a reworded
diagnostic fails; a file announcing nothing must check clean. It also checks
each diagnostic's rendering (header, source line, caret under the column) and
the exit status (3, a compile error, with errors; 0 without). Cases that need several files
(import chains, notes in another module) or look at the API stay in
test_checker.py.
"""
from __future__ import annotations

import glob
import os
import re

import pytest

from nxc import cli

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "diagnostics")
CASES = sorted(glob.glob(os.path.join(HERE, "**", "*.nx"), recursive=True))

EXPECT = re.compile(r"//\s*(error|warning|note)(?:@([+-]\d+))?(?::(\d+))?:\s(.*?)\s*$")
# what looks like an expectation; one that EXPECT does not read is a typo, not a comment
LOOKS_LIKE = re.compile(r"//\s*(error|warning|note)\b")
HEADER = re.compile(r"^(.+?):(\d+):(\d+): (error|warning|note): (.*)$")


def expected(path: str) -> set:
    """The (line, col or None, severity, message) announced by the file's comments."""
    found = set()
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            m = EXPECT.search(text)
            assert m or not LOOKS_LIKE.search(text), f"{path}:{number}: an expectation in a form not understood"
            if m:
                kind, offset, col, message = m.groups()
                found.add((number + int(offset or 0), int(col) if col else None, kind, message))
    return found


def reported(path: str, stderr: str) -> list:
    """Parse `nxc check`'s output into (line, col, severity, message), checking each rendering."""
    lines = stderr.splitlines()
    source = open(path, encoding="utf-8").read().splitlines()
    out = []
    for i, text in enumerate(lines):
        m = HEADER.match(text)
        if not m:
            continue
        file, line, col, severity, message = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), m.group(5)
        assert os.path.samefile(file, path), f"a diagnostic in another file: {text}"
        if source[line - 1].strip():          # a blank line is rendered without source and caret
            assert lines[i + 1] == "    " + source[line - 1], f"source line of {text!r}"
            caret = lines[i + 2]
            assert caret.strip() == "^" and len(caret) - 4 == col, f"caret of {text!r}: {caret!r}"
        out.append((line, col, severity, message))
    return out


def test_there_are_cases():
    # a glob that found nothing would make every case below vanish silently
    assert len(CASES) >= 40
    for sub in ("check", "syntax", "warnings"):
        assert any(os.sep + sub + os.sep in c for c in CASES), sub


@pytest.mark.parametrize("path", CASES, ids=lambda p: os.path.relpath(p, HERE))
def test_diagnostics_match_the_comments(path, capsys):
    status = cli.main(["check", path])
    got = reported(path, capsys.readouterr().err)
    assert len(got) == len(set(got)), f"a diagnostic reported twice: {got}"
    want = expected(path)
    # a comment without a column matches any column on its line
    loose = {(line, None, sev, msg) for (line, col, sev, msg) in got}
    wanted_exact = {w for w in want if w[1] is not None}
    wanted_loose = {w for w in want if w[1] is None}
    matched = {g for g in got if g in wanted_exact or (g[0], None, g[2], g[3]) in wanted_loose}
    unexpected = sorted(set(got) - matched)
    missing = sorted(wanted_exact - set(got)) + sorted(wanted_loose - loose)
    assert not unexpected and not missing, f"\nunexpected: {unexpected}\nmissing: {missing}"
    has_errors = any(sev == "error" for (_, _, sev, _) in got)
    assert status == (3 if has_errors else 0)


def test_the_expectation_syntax():
    # The parser of the comments is itself code that could silently match nothing.
    samples = {
        "x  // error:12: undefined name 'a'": ("error", None, "12", "undefined name 'a'"),
        "x  // warning: unused variable 'u'": ("warning", None, None, "unused variable 'u'"),
        "x  // error@+1:11: unterminated string": ("error", "+1", "11", "unterminated string"),
        "x  // note@-2: here": ("note", "-2", None, "here"),
    }
    for text, groups in samples.items():
        assert EXPECT.search(text).groups() == groups
    assert EXPECT.search("x // an ordinary comment") is None
    for typo in ("x  // error 12: no colon", "x  // warning@1: no sign", "x  // error:12 no colon after"):
        assert EXPECT.search(typo) is None and LOOKS_LIKE.search(typo), typo
