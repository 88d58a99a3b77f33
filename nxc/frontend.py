"""The front end as one call: load the import graph, then check it.

Both backends, the runner and the Python API start here, so every one of
them sees the same checked Program and the same diagnostics.
"""
from __future__ import annotations

from .check import Program, check_program
from .diagnostics import CompileError, Diagnostics
from .loader import load_program


def check_file(path: str, include: list[str] | None = None,
               diags: Diagnostics | None = None) -> Program:
    """Raises diagnostics.CompileError with every error found."""
    diags = diags or Diagnostics()
    graph = load_program(path, include, diags)
    try:
        return check_program(graph, diags)
    except CompileError:
        # An error inside an imported module also says how it was reached.
        for d in diags.items:
            chain = graph.chains.get(d.pos.file.path) if d.pos is not None else None
            for pos in reversed(chain or []):
                d.notes.append(Diagnostics.note(pos, "imported from here"))
        raise
