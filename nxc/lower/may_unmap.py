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


def calls_in(node, sym=None) -> set[str]:
    """Names of the functions called anywhere in a statement or expression;
    `sym(name_expr)` gives a name's symbol (the checker's table)."""
    sym = sym or _symbol
    return {s.name for n in ast.nodes(node) if isinstance(n, ast.Call) and (s := sym(n.func)) is not None}


def has_loop(node) -> bool:
    """Whether a statement holds a `while` (at any depth)."""
    if isinstance(node, ast.While):
        return True
    if isinstance(node, ast.Block):
        return any(has_loop(s) for s in node.stmts)
    if isinstance(node, ast.If):
        return has_loop(node.then) or (node.orelse is not None and has_loop(node.orelse))
    return False


def may_unmap(program, functions=None, known=(), calls_of=None) -> set[str]:
    """Names of the program's functions from which a call can reach sys_munmap
    (and "sys_munmap" itself). `functions`: the ones whose bodies to walk
    (default: all); `known`: names already known to reach it (the answers
    recorded for functions whose bodies were not checked: nxc/lower/effects.py);
    `calls_of(fn)`: the names fn calls, if already known (default: calls_in)."""
    info = getattr(program, "info", None)
    sym = info.sym if info is not None else _symbol
    calls_of = calls_of or (lambda fn: calls_in(fn.decl.body, sym))
    callees = {fn.decl.name: calls_of(fn) for fn in (program.functions if functions is None else functions)}
    # sys_parallel_for: its task may unmap (its own scratch), like any callee
    # sys_file_unmap ends a mapping as sys_munmap does (a file's, nx_src/nx_file.nx).
    result = {"sys_munmap", "sys_file_unmap", "sys_parallel_for", *known}
    changed = True
    while changed:
        changed = False
        for name, called in callees.items():
            if name not in result and called & result:
                result.add(name)
                changed = True
    return result
