"""The front end as one call: load the import graph, then check it.

Both backends, the runner and the Python API start here, so every one of
them sees the same checked Program and the same diagnostics.
"""
from __future__ import annotations

from nxc.check.checker import check_program
from nxc.check.program import Program
from nxc.deep import deep, gc_paused
from nxc.diagnostics import CompileError, Diagnostics, Pos
from nxc.syntax.loader import ModuleGraph, load_graph


@deep
def check_file(path: str, include: list[str] | None = None,
               diags: Diagnostics | None = None, soft_f32: bool = False) -> Program:
    """Raises diagnostics.CompileError with every error found.

    soft_f32: build with the float32 primitives in .nx (nx_src/nx_f32_soft.nx)
    instead of the runtime's; see nxc.check.calls.CallChecker.soft_f32_callee.
    """
    diags = diags or Diagnostics()
    with gc_paused():
        return _checked_or_too_deep(path, include, diags, soft_f32)


def _checked_or_too_deep(path, include, diags, soft_f32) -> Program:
    try:
        return _check_file(path, include, diags, soft_f32)
    except RecursionError:
        # Past what even nxc/deep.py's stack holds (a chain of hundreds of
        # thousands of type aliases): a limit, said as one, not a traceback.
        from nxc.syntax.loader import read_source
        src = read_source(path, Diagnostics())
        diags.error(Pos(src, 1, 1) if src is not None else None,
                    "nested too deeply: the program's declarations refer to each other too deeply "
                    "to be checked (see docs/language.md, Limits)")
        diags.raise_if_errors()
        raise


def _check_file(path, include, diags, soft_f32) -> Program:
    graph = load_graph(path, include, diags, soft_f32)
    try:
        return check_program(graph, diags, soft_f32=soft_f32)
    except CompileError:
        add_import_notes(graph, diags)
        raise


def add_import_notes(graph: ModuleGraph, diags: Diagnostics) -> None:
    """An error inside an imported module also says how it was reached."""
    for d in diags.items:
        chain = graph.chains.get(d.pos.file.path) if d.pos is not None else None
        for pos in reversed(chain or []):
            d.notes.append(Diagnostics.note(pos, "imported from here"))
