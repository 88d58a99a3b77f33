"""The C backend never calls the checker; the program is final before it emits (issue 33).

A gate's worker checks only some bodies (check_gate); the C backend says
what more it needs (Backend.plan_bodies, nxc/backend/c/needs.py) and the
worker checks it (nxc/gates/execute.py, final_program). What is checked here:

- (tests/test_layering.py: no module under nxc/backend/ imports the checker,
  nxc/check/ other than the program's data);
- while a gate is built, no body is checked and no record is given to the
  program: every object emitted is emitted from the one program the worker
  handed over, and the emitted C refuses another one after that;
- the bodies the backend asks for are exactly what it needs: after a body
  edit of a leaf, only the leaf (and the root) are checked, and a gate whose
  objects are all cached asks for no body at all;
- a unit whose bodies were not checked is never emitted from a guess: it is
  a clear BodiesNeeded, not C written from a partial program.
"""
from __future__ import annotations

import os

import pytest

from nxc.backend.base import BodiesNeeded
from nxc.backend.c import objects
from nxc.backend.c.needs import LinkPlanner
from nxc.check import summary
from nxc.check.checker import Checker
from nxc.diagnostics import Diagnostics
from nxc.gates.collect import Item, Unit
from nxc.gates.execute import Options, run_unit

# (a branch: not copied into importers, so a body edit changes no importer's object)
LEAF = "func leaf_twice(x: i64) -> i64 {\n    if x > 100 { return 0 }\n    return x * 2\n}\n"
MID = 'import "leaf.nx"\nfunc mid(x: i64) -> i64 { return leaf_twice(x) + 1 }\n'
TOP = 'import "mid.nx"\nfunc main() -> i64 {\n    if mid(3) != 7 { return 1 }\n    return 0\n}\n'


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    for name, text in (("leaf.nx", LEAF), ("mid.nx", MID), ("top.nx", TOP)):
        (tmp_path / name).write_text(text)
    return tmp_path


def gate(path: str, **kw):
    item = Item(id=path, path=path, display=os.path.basename(path), backend="c", kind="gate")
    [result] = run_unit(Unit(path, os.path.basename(path), [item]), Options(**kw))
    return result


def watch_the_build(monkeypatch) -> dict:
    """Record, while a gate's library is built (objects.build_gate), every body
    checked, every record given, and the program each unit is emitted from."""
    seen = {"building": False, "during": [], "emitted_from": [], "planned": []}
    real_build, real_emit = objects.build_gate, objects.LinkedC.emit_unit
    real_body = Checker.check_body
    real_records = summary.Bodies.note_records

    def build(linked, *a, **kw):
        seen["building"], seen["planned"] = True, seen["planned"] + [linked.program]
        try:
            return real_build(linked, *a, **kw)
        finally:
            seen["building"] = False

    def emit_unit(self, unit):
        seen["emitted_from"].append(self.program)
        return real_emit(self, unit)

    def check_body(self, fn, *a, **kw):
        if seen["building"]:
            seen["during"].append(("checked", fn.decl.name))
        return real_body(self, fn, *a, **kw)

    def note_records(self, records):
        if seen["building"]:
            seen["during"].append(("records", sorted(records)))
        return real_records(self, records)

    monkeypatch.setattr(objects, "build_gate", build)
    monkeypatch.setattr(objects.LinkedC, "emit_unit", emit_unit)
    monkeypatch.setattr(Checker, "check_body", check_body)
    monkeypatch.setattr(summary.Bodies, "note_records", note_records)
    return seen


def test_nothing_is_checked_while_a_gate_is_built_and_its_program_never_changes(tree, monkeypatch):
    seen = watch_the_build(monkeypatch)
    top = str(tree / "top.nx")
    assert gate(top).passed                     # cold: every object emitted
    assert [os.path.basename(p) for p in gate(top, read_results=False).checked_bodies] == ["top.nx"]
    (tree / "leaf.nx").write_text(LEAF.replace("x * 2", "x + x"))      # a body edit of the leaf
    r = gate(top, record_results=True)
    assert r.passed and [os.path.basename(p) for p in r.recompiled] == ["leaf.nx"]
    assert sorted(os.path.basename(p) for p in r.checked_bodies) == ["leaf.nx", "top.nx"]
    assert seen["during"] == []                 # no body checked, no record given, while building
    assert len(seen["planned"]) == 3 and seen["emitted_from"]
    # each unit emitted from the program the worker handed over to that build
    assert all(any(p is q for q in seen["planned"]) for p in seen["emitted_from"])


def test_the_emitted_link_refuses_another_program(tree):
    top = str(tree / "top.nx")
    assert gate(top).passed                     # verdicts and records for leaf.nx and mid.nx
    found = summary.check_gate(top, [], Diagnostics(warnings=True))
    assert found.bodies.checked_order == [top]
    program = found.bodies.program
    planner = LinkPlanner(None, program, checked=True, opt="2", use_cache=False)
    asked = []
    while need := planner.needed(program):
        asked.append(need)
        program = found.bodies.meet(need)
    # without the cache every unit is emitted: the records (top.nx's too: it has no
    # function but its gate, so its record is its interface), then the imports' bodies
    assert [sorted(n.records) for n in asked if n.records] == [[str(tree / n) for n in ("leaf.nx", "mid.nx",
                                                                                          "top.nx")]]
    assert [sorted(os.path.basename(p) for p in n.modules) for n in asked if n.modules] == [["leaf.nx", "mid.nx"]]
    assert found.bodies.checked == {str(tree / n) for n in ("leaf.nx", "mid.nx", "top.nx")}
    linked = planner.emitted(program)
    linked.emit_unit(linked.units[0])
    with pytest.raises(RuntimeError, match="changed after its C was emitted"):
        linked.advance(program)


def test_each_program_names_exactly_the_bodies_it_checked(tree):
    """Bodies keeps the names of the functions not checked yet as it checks
    more, and effects.checked_functions keeps its answer per program: each new
    program's are those a fresh look at what was checked gives."""
    from nxc.lower.effects import checked_functions
    top = str(tree / "top.nx")
    assert gate(top).passed
    found = summary.check_gate(top, [], Diagnostics(warnings=True))
    program = found.bodies.program
    planner = LinkPlanner(None, program, checked=True, opt="2", use_cache=False)
    seen = []
    while True:
        checked = found.bodies.checked
        assert program.recorded.unchecked == {fn.decl.name for fn in program.functions
                                              if fn.module.source.path not in checked}
        assert list(checked_functions(program)) == [fn for fn in program.functions
                                                    if fn.module.source.path in checked]
        assert checked_functions(program) is checked_functions(program)
        seen.append(len(program.recorded.unchecked))
        need = planner.needed(program)
        if not need:
            break
        program = found.bodies.meet(need)
    assert seen[0] > 0 and seen[-1] == 0           # from the root's bodies alone to every body


def test_a_gate_whose_objects_are_cached_asks_for_no_body(tree):
    top = str(tree / "top.nx")
    assert gate(top).passed
    found = summary.check_gate(top, [], Diagnostics(warnings=True))
    program = found.bodies.program
    planner = LinkPlanner(None, program, checked=True, opt="2", use_cache=True)
    while need := planner.needed(program):
        assert not need.modules and not need.functions, need     # records only (the imports' effects)
        program = found.bodies.meet(need)
    assert found.bodies.checked_order == [str(tree / "top.nx")]


def test_a_unit_not_checked_is_not_emitted_from_a_guess(tree):
    top = str(tree / "top.nx")
    assert gate(top).passed
    found = summary.check_gate(top, [], Diagnostics(warnings=True))
    program = found.bodies.program
    planner = LinkPlanner(None, program, checked=True, opt="2", use_cache=True)
    while need := planner.needed(program):
        program = found.bodies.meet(need)
    linked = planner.emitted(program)
    [leaf] = [u for u in linked.units if u.module.source.path.endswith("leaf.nx")]
    with pytest.raises(BodiesNeeded, match="leaf.nx"):
        linked.emit_unit(leaf)                  # as if its object left the cache after planning


def test_an_object_that_leaves_the_cache_after_planning_is_planned_again(tree, monkeypatch):
    """The backend said it needed nothing (every object cached); then the
    library and the leaf's object go (another run pruned them) before the
    build: the build says BodiesNeeded, the worker asks again and checks the
    leaf, and the gate passes, its leaf recompiled."""
    top = str(tree / "top.nx")
    assert gate(top).passed
    real = objects.build_gate
    gone = []

    def pruned_first(linked, *a, **kw):
        if not gone:
            [leaf] = [u for u in linked.units if u.module.source.path.endswith("leaf.nx")]
            gone.append(leaf.key)
            os.remove(objects.library_path(linked.key)[0])
            os.remove(objects.usable_object(leaf.key))
        return real(linked, *a, **kw)
    monkeypatch.setattr(objects, "build_gate", pruned_first)
    r = gate(top, read_results=False)
    assert r.passed, r.report
    assert [os.path.basename(p) for p in r.recompiled] == ["leaf.nx"]
    assert sorted(os.path.basename(p) for p in r.checked_bodies) == ["leaf.nx", "top.nx"]


def test_bottom_cycle_finds_the_cycle_that_waits_for_nothing_else():
    from nxc.incremental.index import bottom_cycle
    # a <-> b import each other and wait for nothing else; c imports both; d waits on c
    imported = {"a": {"b", "z"}, "b": {"a", "z"}, "c": {"a", "b", "z"}, "d": {"c", "a", "b", "z"}}
    assert bottom_cycle(["d", "c", "a", "b"], imported, {"z"}) == ["a", "b"]
    with pytest.raises(RuntimeError):
        bottom_cycle(["c"], {"c": {"q"}, "q": set()}, set())       # q waits for nothing: not a cycle


def test_an_unchecked_crash_in_an_import_is_located_by_a_checked_build_planned_the_same_way(tree):
    """--unchecked: the crash is in an imported module whose bodies the worker
    did not check (its verdict and record stand); the checked build that says
    where is another link, whose bodies the worker checks as that link asks."""
    (tree / "poke.nx").write_text("func poke(x: i64) -> i64 {\n    let p: *i64 = 0 as *i64\n    if x > 100 { return 0 }\n"
                                  "    p[0] = x\n    return 0\n}\n")
    (tree / "crash.nx").write_text('import "poke.nx"\nfunc main() -> i64 {\n    return poke(1)\n}\n')
    (tree / "other.nx").write_text('import "poke.nx"\nfunc main() -> i64 {\n    return 0\n}\n')
    assert gate(str(tree / "other.nx"), checked=False).passed        # poke.nx: verdict, records, object
    r = gate(str(tree / "crash.nx"), checked=False)
    assert [os.path.basename(p) for p in r.checked_bodies] == ["crash.nx"]
    assert r.status.name == "CRASH", r.report
    assert "the checked build (run again to locate the crash) stopped at:" in r.report
    assert "poke.nx:4:5: runtime error: write of i64 through a null pointer" in r.report, r.report


def test_the_default_body_plan_asks_for_every_unchecked_module_at_once(tree):
    """A backend that emits whole programs (the default BodyPlan): every module
    with a body the program did not check, in one question; then nothing."""
    from nxc.backend.base import BodyPlan
    top = str(tree / "top.nx")
    assert gate(top).passed
    found = summary.check_gate(top, [], Diagnostics(warnings=True))
    asking = BodyPlan(backend=None)
    need = asking.needed(found.bodies.program)
    assert need.modules == {str(tree / "leaf.nx"), str(tree / "mid.nx")} and not need.functions
    assert not asking.needed(found.bodies.meet(need))
