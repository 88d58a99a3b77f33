"""The C of copied helpers kept per worker (issue 21, nxc/backend/c/copies.py:
CopiedC, CopiedMemo): a gate's worker emits the small straight-line helpers
an object copies (`static inline`) from the kept text instead of checking
their bodies again. What is checked here:

- the unit a worker emits with kept copies is byte for byte the unit a fresh
  worker emits (nothing kept), also when a copy's sites land at another
  place in another unit;
- after an edit between two gates of one worker (the helper's body, or the
  effects of a function the helper calls, in another module), the kept text
  is not used: the unit is the fresh worker's again;
- a gate whose helpers are kept does not check their bodies;
- the memo stays within its bound, and no memo keeps a gate's program alive.
"""
from __future__ import annotations

import gc
import os
import textwrap
import weakref

from nxc.backend.c import copies as emit
from nxc.backend.c.needs import LinkPlanner
from nxc.check.summary import check_gate
from nxc.diagnostics import Diagnostics
from nxc.gates.collect import Item, Unit
from nxc.gates.execute import Options, run_unit


def _write(folder, name: str, text: str) -> str:
    path = os.path.join(str(folder), name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text).lstrip("\n"))
    return path


def _emit_root(path: str):
    """(C text, sites) of the root's unit as a gate's worker emits it, and the LinkedC."""
    found = check_gate(path, [], Diagnostics(warnings=True))
    assert found is not None
    # as the worker does (nxc/gates/execute.py, final_program), emitting the root's unit
    program = found.bodies.program
    planner = LinkPlanner(None, program, checked=True, opt="2", use_cache=True, emit={os.path.realpath(path)})
    while need := planner.needed(program):
        program = found.bodies.meet(need)
    linked = planner.emitted(program)
    [unit] = [u for u in linked.units if u.module.source.path == os.path.realpath(path)]
    c = linked.emit_unit(unit)
    return (c.text, [(s.path, s.line, s.col, s.what, s.kind, s.function) for s in c.sites]), linked


def _as_fresh_worker(path: str):
    """The root's unit as a worker that kept nothing emits it."""
    emit.COPIED.entries.clear()
    return _emit_root(path)[0]


def _tree(folder):
    # inner: silent now (no loop, no division); the helpers copied into importers:
    # `scale` calls it, `ratio` has a division (a site), `first` a field read (a site).
    _write(folder, "inner.nx", "func inner(x: i64) -> i64 { return x + 1; }\n")
    helpers = _write(folder, "helpers.nx", '''
        import "inner.nx"
        struct Pair { a: i64, b: i64 }
        func scale(x: i64) -> i64 { return inner(x) * 3; }
        func ratio(x: i64, y: i64) -> i64 { return x / y; }
        func first(p: *Pair) -> i64 { return p.a; }
        ''')
    a = _write(folder, "a.nx", '''
        import "helpers.nx"
        func main() -> i64 {
            if scale(1) != 6 { return 1; }
            if ratio(9, 3) != 3 { return 2; }
            return 0;
        }
        ''')
    # b places `ratio` first (its site at another number than in a's unit)
    b = _write(folder, "b.nx", '''
        import "helpers.nx"
        func main() -> i64 {
            if ratio(8, 2) != 4 { return 1; }
            if scale(2) != 9 { return 2; }
            return 0;
        }
        ''')
    return helpers, a, b


def _gate(path: str):
    unit = Unit(path, path, [Item(id=path, path=path, display=path, backend="c", kind="gate")])
    [r] = run_unit(unit, Options(read_results=False, record_results=False))
    return r


def test_kept_copies_give_the_fresh_workers_unit(tmp_path):
    _, a, b = _tree(tmp_path)
    assert _gate(a).passed and _gate(b).passed       # records and verdicts of the imports kept
    for root in (a, b, a):
        kept, _ = _emit_root(root)
        assert kept == _as_fresh_worker(root), root
    (text, sites), _ = _emit_root(b)
    assert "nxf_ratio" in text and "nxf_scale" in text and "NX_SITE(" in text and sites


def test_a_gate_whose_copies_are_kept_does_not_check_their_bodies(tmp_path):
    _, a, b = _tree(tmp_path)
    assert _gate(a).passed
    _emit_root(a)                       # the helpers' C is kept now
    hits = emit.COPIED.hits
    _, linked = _emit_root(b)
    assert emit.COPIED.hits > hits
    unchecked = linked.program.recorded.unchecked
    assert {"scale", "ratio", "inner"} <= unchecked, sorted(unchecked)
    # and a worker that kept nothing checks them to write them
    emit.COPIED.entries.clear()
    _, linked = _emit_root(b)
    assert not {"scale", "ratio"} & linked.program.recorded.unchecked


def test_an_edit_between_two_gates_of_one_worker_is_never_served_stale(tmp_path):
    helpers, a, b = _tree(tmp_path)
    assert _gate(a).passed and _gate(b).passed
    kept_before, _ = _emit_root(a)
    # the helper's own body: the gate must see it (the kept text would still pass)
    with open(helpers, encoding="utf-8") as f:
        good = f.read()
    with open(helpers, "w", encoding="utf-8") as f:
        f.write(good.replace("* 3", "* 4"))
    r = _gate(a)
    assert not r.passed and r.value == 1, r.message
    kept, _ = _emit_root(a)
    assert kept != kept_before and kept == _as_fresh_worker(a)
    with open(helpers, "w", encoding="utf-8") as f:
        f.write(good)
    assert _gate(a).passed
    _emit_root(a)
    # a function the helper calls, in another module, becomes loud (a loop):
    # the copy of `scale` now keeps a frame site for its call; helpers.nx is unchanged
    _write(tmp_path, "inner.nx", "func inner(x: i64) -> i64 {\n    var y = x;\n    while y > 100 { y = y - 1; }\n"
                                 "    return y + 1;\n}\n")
    assert _gate(a).passed
    kept, _ = _emit_root(a)
    assert kept != kept_before and kept == _as_fresh_worker(a)


def test_the_kept_copies_stay_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(emit, "COPIED", emit.CopiedMemo(3))
    _write(tmp_path, "many.nx", "".join(f"func h{k}(x: i64) -> i64 {{ return x + {k}; }}\n" for k in range(8)))
    root = _write(tmp_path, "root.nx", 'import "many.nx"\nfunc main() -> i64 {\n'
                  + "".join(f"    if h{k}(1) != {k + 1} {{ return {k + 1}; }}\n" for k in range(8))
                  + "    return 0;\n}\n")
    assert _gate(root).passed
    for _ in range(3):
        kept, _ = _emit_root(root)
        assert len(emit.COPIED.entries) <= 3
        assert emit.COPIED.stored >= 8
    assert kept == _as_fresh_worker(root)
    assert len(emit.COPIED.entries) <= 3


def test_a_worker_keeps_no_program_alive(tmp_path):
    """The per-program and per-function memos of the lowering and the emitter
    are weak: once a gate is done, nothing of its program stays (a plan that
    held its program kept every program a long-lived worker planned)."""
    _, a, b = _tree(tmp_path)
    assert _gate(a).passed
    _, linked = _emit_root(b)
    program = weakref.ref(linked.program)
    main = weakref.ref(linked.program.entry)
    del linked
    gc.collect()
    assert program() is None and main() is None
