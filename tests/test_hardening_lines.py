"""issue 15 (3): one notion of a line for the lexer and the quoted source line.

LF, CRLF and a lone CR end a line; nothing else does (form feed, vertical
tab, U+0085, U+2028 are not line ends for the lexer, so they must not be for
the quoted line either).
"""
from __future__ import annotations

import pytest

from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics, SourceFile
from nxc.gates.run import execute

from conftest import compile_errors
from load_bounds import GATE_BOUND

GATE = ["// a gate whose first check fails", "func main() -> i64 {", "    return 1", "}", ""]


@pytest.mark.parametrize("end", ["\r", "\r\n", "\n"], ids=["CR", "CRLF", "LF"])
def test_gate_fails_whatever_its_line_ends(tmp_path, end):
    # Before: with CR only, the leading // comment swallowed the whole file,
    # which "compiled" as an empty library module and so passed.
    path = tmp_path / "g.nx"
    path.write_bytes(end.join(GATE).encode())
    program = check_file(str(path), diags=Diagnostics())
    outcome = execute(program, "py", timeout=GATE_BOUND)[0]
    assert (outcome.status, outcome.value) == ("FAIL", 1)
    assert outcome.gate_return.node.pos.line == 3


@pytest.mark.parametrize("odd", ["\f", "\v", "\x85", "\u2028", "\u2029", "\x1c"])
def test_quoted_line_is_the_line_the_lexer_counted(tmp_path, odd):
    path = tmp_path / "t.nx"
    path.write_text(f"// a{odd}b\nfunc main() -> i64 {{\n    return coutn\n}}\n", encoding="utf-8")
    [err] = compile_errors(str(path))
    assert err.pos.line == 3
    assert err.render().splitlines()[1].strip() == "return coutn"


def test_caret_column_in_a_crlf_file(tmp_path):
    # The error is at the newline after `let x`: the blanks before it used
    # to swallow the CR, so the column was one past the line end.
    crlf, lf = tmp_path / "crlf.nx", tmp_path / "lf.nx"
    text = "func main() -> i64 {\n    let x\n    return 0\n}\n"
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    lf.write_bytes(text.encode())
    [a], [b] = compile_errors(str(crlf)), compile_errors(str(lf))
    assert (a.pos.line, a.pos.col) == (b.pos.line, b.pos.col) == (2, 10)
    assert a.render().split("\n")[1:] == b.render().split("\n")[1:]


def test_source_lines_split_only_at_line_ends():
    from nxc.diagnostics import source_lines
    assert source_lines("a\r\nb\rc\nd\x85e\u2028f\n") == ["a", "b", "c", "d\x85e\u2028f"]
    assert SourceFile("x.nx", "a\rb").line_text(2) == "b"


def test_bad_utf8_located_on_cr_lines(tmp_path):
    path = tmp_path / "t.nx"
    path.write_bytes(b"// one\r// two\rlet \xff")
    [err] = compile_errors(str(path))
    assert (err.pos.line, err.pos.col) == (3, 5)
