"""ast.walk and ast.subexpressions, which find each node's children through
one table by the node's class, give exactly the nodes, in exactly the order,
of the plain isinstance code they replaced: over every function, constant and
global of every bundled module and test module, and for a subclass of a node
class (walked as its base)."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from nxc.paths import bundled_dir
from nxc.syntax import ast
from nxc.syntax.parse import parse_source
from nxc.diagnostics import Diagnostics, SourceFile

HERE = os.path.dirname(os.path.abspath(__file__))


def reference_subexpressions(e):
    """subexpressions as it was written first."""
    if isinstance(e, ast.Unary):
        return (e.operand,)
    if isinstance(e, ast.Binary):
        return (e.left, e.right)
    if isinstance(e, ast.Cast):
        return (e.expr,)
    if isinstance(e, ast.Call):
        return tuple(e.args)
    if isinstance(e, ast.Index):
        return (e.base, e.index)
    if isinstance(e, ast.FieldAccess):
        return (e.base,)
    return ()


def reference_walk(node):
    """The walk as it was written first: a chain of isinstance tests per node."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        yield n
        if isinstance(n, ast.Block):
            stack.extend(reversed(n.stmts))
        elif isinstance(n, ast.VarDecl):
            stack.append(n.value)
        elif isinstance(n, ast.Assign):
            stack.extend((n.value, n.target))
        elif isinstance(n, ast.If):
            stack.extend((n.orelse, n.then, n.cond))
        elif isinstance(n, ast.While):
            stack.extend((n.body, n.cond))
        elif isinstance(n, ast.Return):
            stack.append(n.value)
        elif isinstance(n, ast.ExprStmt):
            stack.append(n.expr)
        elif isinstance(n, ast.Expr):
            stack.extend(reversed(reference_subexpressions(n)))


def _roots(module):
    for item in module.items:
        if isinstance(item, ast.FuncDecl) and item.body is not None:
            yield item.body
        elif isinstance(item, (ast.ConstDecl, ast.GlobalDecl)) and getattr(item, "value", None) is not None:
            yield item.value


def test_walk_visits_what_the_isinstance_walk_visited():
    files = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx")) + glob.glob(os.path.join(HERE, "nx", "**", "*.nx"),
                                                                          recursive=True))
    nodes = kinds = 0
    seen: set[type] = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            module = parse_source(SourceFile(path, text), Diagnostics())
        except Exception:       # a test module that is meant not to parse
            continue
        for root in _roots(module):
            got, want = list(ast.walk(root)), list(reference_walk(root))
            assert [id(n) for n in got] == [id(n) for n in want], path
            for n in got:
                assert [id(c) for c in ast.subexpressions(n)] == [id(c) for c in reference_subexpressions(n)], path
            nodes += len(got)
            seen.update(type(n) for n in got)
    kinds = len(seen)
    assert nodes > 40_000, nodes
    # every statement and expression class the walk dispatches on was met
    assert kinds >= 17, sorted(t.__name__ for t in seen)


def test_a_subclass_walks_as_its_base():
    @dataclass(eq=False, slots=True)
    class Tagged(ast.Binary):
        tag: str = ""

    pos = None
    inner = ast.Name(pos, "x")
    node = Tagged(pos, "+", inner, ast.IntLit(pos, 1), tag="t")
    call = ast.Call(pos, ast.Name(pos, "f"), [node, ast.Name(pos, "y")])
    assert [id(n) for n in ast.walk(call)] == [id(n) for n in reference_walk(call)]
    assert len(list(ast.walk(call))) == 5
    assert [id(c) for c in ast.subexpressions(node)] == [id(inner), id(node.right)]
