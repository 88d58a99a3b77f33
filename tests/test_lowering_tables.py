"""The lowering runs before the emitters, and they only read it (issue 33:
"down the stages without returning"; docs/architecture.md, nxc/lower/).

- the tables lower/plan.py answers for every expression of a body agree with
  the questions they replace (EvalOrder, f32_unbox.primitive_name), and
  lower/checked_plan.py's per-function and per-loop answers with the
  analyses they are made from, on every bundled module;
- writing a function's C, once its program's lowering is done, calls
  nothing in nxc/lower/ (the profile hook of bench/unit_walk.py, reduced).
"""
from __future__ import annotations

import glob
import os
import sys
import threading

import pytest

from nxc.backend.c.facts import ProgramFacts
from nxc.backend.c.function import function_entry
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.lower.effects import body_facts, memory_free
from nxc.lower.f32_unbox import primitive_name, unboxed_locals
from nxc.lower.hoist import plan_loops
from nxc.lower.may_unmap import calls_in, has_loop
from nxc.lower.plan import plan_program
from nxc.paths import bundled_dir
from nxc.syntax import ast

BUNDLED = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx")))
LOWER_DIR = os.path.dirname(os.path.abspath(plan_program.__code__.co_filename)) + os.sep


@pytest.fixture(scope="module")
def programs():
    return {os.path.basename(p): check_file(p, diags=Diagnostics()) for p in BUNDLED}


def test_order_and_primitive_tables_agree_with_the_questions(programs):
    asked = 0
    for name, program in programs.items():
        plan = plan_program(program)
        info = program.info
        for fn, fp in plan.functions.items():
            exprs = [n for n in ast.walk(fn.decl.body) if isinstance(n, ast.Expr)]
            assert set(fp.order) == set(exprs), (name, fn.decl.name)
            for e in exprs:
                assert fp.order[e] == (plan.order.has_call(e), plan.order.is_stable(e)), (name, fn.decl.name, e)
                assert fp.primitives.get(e) == primitive_name(e, info), (name, fn.decl.name, e)
                asked += 1
            assert fp.float_locals == frozenset(unboxed_locals(fn.decl.body, info))
            assert fp.calls == body_facts(fn, info).calls
    assert asked > 10_000           # the bundled kernels: every expression of every body


def test_checked_plan_agrees_with_the_analyses(programs):
    loops = framed = 0
    for name, program in programs.items():
        facts = ProgramFacts(program, checked=True)
        cp = facts.checked_plan
        free = frozenset(memory_free(program))
        assert cp.memory_free == free
        for fn in facts.plan.functions:
            facts.function(fn)              # an imported gate's answers are worked out when asked
            plans = plan_loops(fn, program, free)
            assert set(cp.loops[fn]) == set(plans), (name, fn.decl.name)
            is_framed = has_loop(fn.decl.body) or bool(body_facts(fn, program.info).calls & cp.loud)
            assert cp.framed[fn] == is_framed, (name, fn.decl.name)
            framed += is_framed
            for s in (n for n in ast.walk(fn.decl.body) if isinstance(n, ast.While)):
                called = bool((calls_in(s.body, program.info.sym) | calls_in(s.cond, program.info.sym)) & cp.loud)
                assert cp.restamps[s] == (has_loop(s.body) or called, called), (name, fn.decl.name)
                loops += 1
    assert loops > 100 and framed > 50


class _LowerCalls:
    """A profile hook counting calls of functions defined under nxc/lower/."""

    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(LOWER_DIR):
            self.calls.append(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}")


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])
def test_writing_a_function_calls_nothing_in_lower(programs, checked):
    """Once a program's lowering is done (ProgramFacts.plan, checked_plan),
    its functions' C is written from the tables alone."""
    hook = _LowerCalls()
    written = 0
    for name in ("nx_f32_gemm.nx", "nx_f32_attention.nx", "nx_paged_kv_gate.nx", "nx_qwen3.nx"):
        program = programs[name]
        facts = ProgramFacts(program, checked=checked)
        facts.plan
        if checked:
            facts.checked_plan
        fns = [fn for fn in facts.plan.functions if fn.module.source.path == program.graph.root.source.path]
        assert fns, name
        sys.setprofile(hook)
        threading.setprofile(hook)          # nxc.deep runs emitting in a thread of its own
        try:
            for fn in fns:
                function_entry(facts, fn, [], site_macro=True)
                written += 1
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    assert written > 10
    assert hook.calls == [], sorted(set(hook.calls))
