"""Tolerant loading for tools (nxc/tools/workspace.py): unsaved text wins,
syntax errors are recovered from line by line."""
from __future__ import annotations

import os
import textwrap

from nxc.syntax import ast
from nxc.tools.index import build_index
from nxc.tools.workspace import load_graph, parse_tolerant


def funcs(pm) -> list[str]:
    return [i.name for i in pm.module.items if isinstance(i, ast.FuncDecl)]


def test_two_independent_syntax_errors_are_both_reported():
    text = textwrap.dedent("""\
        func a() -> i64 {
            let x: i64 = (1 +
            return 1
        }
        func b() -> i64 { return 2 }
        func c() -> i64 {
            let y: i64 = 3 3
            return y
        }
        """)
    pm = parse_tolerant("/virtual/t.nx", text)
    assert [(d.pos.line, d.message.split(";")[0]) for d in pm.syntax_errors] == \
        [(2, "'(' is never closed: expected ')' before 'return' on line 3"),
         (7, "unexpected an integer literal '3'")]
    assert funcs(pm) == ["a", "b", "c"]            # every function kept


def test_an_unclosed_brace_is_closed_after_the_text():
    pm = parse_tolerant("/virtual/t.nx", "func a() -> i64 {\n    return 1\n")
    assert [d.message for d in pm.syntax_errors] == ["'{' is never closed: expected '}' before the end of the file"]
    assert funcs(pm) == ["a"] and pm.blanked == set()


def test_a_cascade_gives_one_error_per_declaration():
    text = "func a() -> i64 { ) ) ] @\n    let x: i64 = 1\n    return x\n}\nfunc b() -> i64 { return 2 }\n"
    pm = parse_tolerant("/virtual/t.nx", text)
    assert len(pm.syntax_errors) == 1 and pm.syntax_errors[0].pos.line == 1
    assert "b" in funcs(pm)


def test_open_documents_override_files_also_for_imports(tmp_path):
    (tmp_path / "lib.nx").write_text("const A: i64 = 1\n")
    (tmp_path / "app.nx").write_text('import "lib.nx"\nconst B: i64 = A\n')
    lib = os.path.realpath(tmp_path / "lib.nx")
    loaded = load_graph(str(tmp_path / "app.nx"), overlay={lib: "const A: i64 = 5\nconst C: i64 = 7\n"})
    assert [m.source.path for m in loaded.graph.modules] == [lib, os.path.realpath(tmp_path / "app.nx")]
    gi = build_index(str(tmp_path / "app.nx"), overlay={lib: "const A: i64 = 5\nconst C: i64 = 7\n"})
    assert gi.result.top_symbol("C") is not None and gi.result.top_symbol("A").value == 5


def test_checker_errors_caused_by_a_blanked_line_are_not_shown(tmp_path):
    from nxc.tools.lsp_features import diagnostics_for
    path = tmp_path / "t.nx"
    path.write_text("func f() -> i64 {\n    let x: i64 = (\n    return x\n}\n")
    real = os.path.realpath(path)
    gi = build_index(real)
    messages = [d.message for d in diagnostics_for(gi, real)]
    # the declaration of x was blanked to recover: "undefined name 'x'" would be noise
    assert messages == ["'(' is never closed: expected ')' before 'return' on line 3"]
