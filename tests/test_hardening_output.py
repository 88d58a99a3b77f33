"""issue 15 (7): no quadratic work in positions, bounded diagnostic output."""
from __future__ import annotations

import subprocess
import sys

from nxc import diagnostics
from nxc.diagnostics import Diagnostics, Pos, SourceFile
from nxc.syntax import ast

from conftest import compile_errors


class _Poison:
    """A node that fails any look at it."""

    def __getattribute__(self, name):
        raise AssertionError(f"start_pos looked inside the base ({name})")


def test_start_pos_of_a_postfix_node_does_not_walk_its_base():
    # Before: start_pos walked the whole left spine of every postfix node,
    # and the parser asks it once per node: n^2 for a chain of n accesses.
    src = SourceFile("t.nx", "")
    pos = Pos(src, 3, 7)
    for node in (ast.FieldAccess(pos, _Poison(), "a", pos), ast.Index(pos, _Poison(), _Poison()),
                 ast.Call(pos, _Poison(), []), ast.Cast(pos, _Poison(), _Poison())):
        assert ast.start_pos(node) == pos


def test_a_long_field_chain_is_located(tmp_path):
    path = tmp_path / "t.nx"
    path.write_text("struct S { a: i64 }\nfunc main() -> i64 {\n    let p: *S = 0 as *S\n"
                    "    return p" + ".a" * 20000 + ".b\n}\n")
    errors = compile_errors(str(path))
    assert errors and errors[0].pos.line == 4


def test_repeated_errors_are_capped_and_quoted_lines_cut(tmp_path):
    # Before: 9,998 errors, each quoting the 40 KB line (601 MB of stderr).
    path = tmp_path / "t.nx"
    path.write_text("func main() -> i64 {\n    let b: bool = " + " < ".join(["1"] * 10000)
                    + "\n    return 0\n}\n")
    proc = subprocess.run([sys.executable, "-m", "nxc", "check", str(path)], capture_output=True, text=True)
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr) < diagnostics.LIMIT * (3 * diagnostics.QUOTE_WIDTH + 300)     # before: 601 MB
    assert proc.stderr.count(": error: ") == diagnostics.LIMIT
    assert f"{9998 - diagnostics.LIMIT} more errors not shown" in proc.stderr
    longest = max(len(line) for line in proc.stderr.splitlines())
    assert longest < diagnostics.QUOTE_WIDTH + 200


def test_quoted_line_keeps_the_caret_under_its_column():
    line = "x" * 1000 + "Y" + "x" * 1000
    text, col = diagnostics.quotable(line, 1001)
    assert text[col - 1] == "Y" and text.startswith("...") and text.endswith("...")
    assert diagnostics.quotable("\x1b[2Jab\x07", 1) == ("\ufffd[2Jab\ufffd", 1)


def test_warnings_are_capped_too():
    d = Diagnostics()
    for _ in range(diagnostics.LIMIT + 7):
        d.warning(None, "w")
    assert len(d.warnings) == diagnostics.LIMIT
    assert d.warnings[-1].notes[-1].message.startswith("7 more warnings")
