"""The checker keeps its results in side tables of the checked Program
(nxc/check/program.py `Info`), not in the AST: a parsed module is never
changed, so the parse cache hands the same AST object to every check."""
from __future__ import annotations

import os

from nxc.backend.c.emit import emit_c
from nxc.backend.py.emit import emit_py
from nxc.check.frontend import check_file
from nxc.check.types import I64
from nxc.diagnostics import Diagnostics
from nxc.paths import bundled_dir
from nxc.syntax import ast

from test_printer import shape


def test_checks_share_one_parsed_module_and_leave_it_unchanged():
    path = os.path.join(bundled_dir(), "nx_kvcache.nx")
    first = check_file(path, diags=Diagnostics())
    before = shape(first.graph.root)
    second = check_file(path, diags=Diagnostics())
    assert second.graph.root is first.graph.root            # one AST object
    assert shape(second.graph.root) == before               # the second check changed nothing
    assert first.info is not second.info
    # Each program answers for the shared nodes from its own tables.
    fn = next(f for f in first.functions if f.decl.name == "nx_kvc_new")
    ret = fn.decl.body.stmts[-1]
    assert isinstance(ret, ast.Return)
    assert first.info.sym(ret.value) is not None
    assert first.info.sym(ret.value) is not second.info.sym(ret.value)
    assert first.info.sym(ret.value).name == second.info.sym(ret.value).name == "c"
    # Emitting the older program after the newer check gives the same code.
    assert emit_py(first).text == emit_py(second).text
    assert emit_c(first).text == emit_c(second).text


def test_nodes_carry_no_checker_fields(write_nx):
    program = check_file(write_nx("""
        const K: i64 = 2 + 3
        func main() -> i64 {
            let x: i64 = K * 2
            if x != 10 { return 1 }
            return 0
        }
    """), diags=Diagnostics())
    body = program.entry.decl.body.stmts
    decl, guard_if, last = body
    for node in (decl, decl.value, guard_if.cond, last):
        for name in ("ty", "const", "sym", "site"):
            assert not hasattr(node, name), (type(node).__name__, name)
    info = program.info
    assert info.ty(decl.value) == I64 and info.const(decl.value) == 10
    assert info.sym(decl).name == "x"
    assert [info.site(r) for r in (guard_if.then.stmts[0], last)] == [0, 1]
    assert [g.site for g in program.gate_returns] == [0, 1]
