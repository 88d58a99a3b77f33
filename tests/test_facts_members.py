"""ProgramFacts.members (nxc/backend/c/facts.py): what each module declares,
grouped once per program, is exactly what the walks over the whole program
it replaced found (interface_text, a module's record and its unit read it),
in the program's order, for every module of a program with structs,
globals, consts and externs in several modules."""
from __future__ import annotations

import os

from nxc.backend.c.facts import ProgramFacts
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.paths import bundled_dir


def _walked(program, module):
    """The members of `module` as the walks over the whole program found them."""
    return (
        [fn for fn in program.functions if fn.module is module and fn is not program.entry],
        [st for st in program.structs if st.pos is not None and st.pos.file.path == module.source.path],
        [(sym, value) for sym, value in program.globals if sym.module is module],
        [sym for sym in program.consts if sym.module is module],
        [sym for sym in program.externs if sym.module is module],
    )


def test_members_are_what_the_walks_found():
    program = check_file(os.path.join(bundled_dir(), "nx_qwen3.nx"), diags=Diagnostics())
    facts = ProgramFacts(program, checked=True)
    kinds = set()
    for module in program.graph.modules:
        m = facts.members(module)
        got = (m.functions, m.structs, m.globals, m.consts, m.externs)
        want = _walked(program, module)
        for name, g, w in zip(("functions", "structs", "globals", "consts", "externs"), got, want):
            assert [id(x) if not isinstance(x, tuple) else (id(x[0]), x[1]) for x in g] == \
                   [id(x) if not isinstance(x, tuple) else (id(x[0]), x[1]) for x in w], (module.source.path, name)
            if w:
                kinds.add(name)
    # the program exercises every kind, so the comparison above covers each grouping
    assert kinds == {"functions", "structs", "globals", "consts", "externs"}, kinds
    assert program.entry is not None
    assert all(program.entry is not fn for m in program.graph.modules for fn in facts.members(m).functions)
