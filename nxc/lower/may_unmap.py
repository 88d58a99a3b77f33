"""Which functions may end a mapping (call sys_munmap, directly or through a callee).

The checked C backend keeps, per access site, the mapping that site last hit
in a local variable of the function (a register in a hot loop). Mappings only
disappear through sys_munmap, so those caches must be forgotten after exactly
the calls that may reach sys_munmap: this analysis names them. A kernel whose
inner loops call only float32 helpers keeps its caches across the calls.
"""
from __future__ import annotations

from nxc.syntax import ast


def _symbol(e):
    """The symbol a name resolved to, where the checker left it on the node."""
    return getattr(e, "sym", None)


def _calls(node, out: set, sym) -> None:
    """Names of the functions called anywhere in a statement or expression."""
    if node is None:
        return
    if isinstance(node, ast.Block):
        for s in node.stmts:
            _calls(s, out, sym)
    elif isinstance(node, ast.VarDecl):
        _calls(node.value, out, sym)
    elif isinstance(node, ast.Assign):
        _calls(node.target, out, sym)
        _calls(node.value, out, sym)
    elif isinstance(node, ast.If):
        _calls(node.cond, out, sym)
        _calls(node.then, out, sym)
        _calls(node.orelse, out, sym)
    elif isinstance(node, ast.While):
        _calls(node.cond, out, sym)
        _calls(node.body, out, sym)
    elif isinstance(node, ast.Return):
        _calls(node.value, out, sym)
    elif isinstance(node, ast.ExprStmt):
        _calls(node.expr, out, sym)
    elif isinstance(node, ast.Expr):
        if isinstance(node, ast.Call):
            s = sym(node.func)
            if s is not None:
                out.add(s.name)
        for sub in ast.subexpressions(node):
            _calls(sub, out, sym)


def calls_in(node, sym=None) -> set[str]:
    """Names of the functions called anywhere in a statement or expression;
    `sym(name_expr)` gives a name's symbol (the checker's table)."""
    found: set = set()
    _calls(node, found, sym or _symbol)
    return found


def has_loop(node) -> bool:
    """Whether a statement holds a `while` (at any depth)."""
    if isinstance(node, ast.While):
        return True
    if isinstance(node, ast.Block):
        return any(has_loop(s) for s in node.stmts)
    if isinstance(node, ast.If):
        return has_loop(node.then) or (node.orelse is not None and has_loop(node.orelse))
    return False


def may_unmap(program) -> set[str]:
    """Names of the program's functions from which a call can reach sys_munmap
    (and "sys_munmap" itself)."""
    info = getattr(program, "info", None)
    sym = info.sym if info is not None else _symbol
    callees = {fn.decl.name: calls_in(fn.decl.body, sym) for fn in program.functions}
    result = {"sys_munmap"}
    changed = True
    while changed:
        changed = False
        for name, called in callees.items():
            if name not in result and called & result:
                result.add(name)
                changed = True
    return result
