"""The lowering both backends share, computed once per checked program.

Each emitter used to re-derive these facts from the tree; now they are
worked out here, once per function, and both read the same answers:

- the capture plan of each module's gate (nxc/lower/guards.py): which
  operands of each guarded `return` get a value slot, and whether `&&` / `||`
  may skip some of them (then their slots start empty). Every checked gate,
  not only the root's: a separately compiled gate holds each module's main in
  that module's object (nxc/backend/c/objects.py), and an importing gate may
  be the one that compiles it. A gate's plan depends on its own body only, so
  it is the same in every program that checked it;
- evaluation order (`EvalOrder`): whether an expression may call something
  with side effects, and whether its value is stable across such a call.
  C leaves operand order unspecified, so the C emitter stores an earlier
  operand in a temporary when a later one has a call; both emitters keep
  nx's "value before place" rule for assignments with the same tests;
- loop counters: the `i = i + 1` of `while i < n { ... }` that cannot
  overflow (the Python emitter writes it as `i += 1`, with no wrap);
- per function, answered for every expression of its body before any
  emitter is made, so that emitting is reading (the emitters ask these at
  every level of every expression): the evaluation-order answers above, the
  float32 primitive each call is (f32_unbox.primitive_name), the locals kept
  as C floats (f32_unbox.unboxed_locals) and the names the body calls
  (effects.body_facts).

`plan_program(program)` is cached per Program object, so emitting the same
program for both backends plans it once.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from nxc.syntax import ast
from nxc.check.program import Function, Info, Program
from nxc.check.types import IntType
from nxc.lower.effects import body_facts, checked_functions, recorded
from nxc.lower.f32_unbox import is_pure, primitive_name, unboxed_locals
from nxc.lower.guards import CapturedOperand, plan_captures


@dataclass
class GuardPlan:
    """A gate guard whose operands are recorded."""
    slots: list[int]                # the value slot of each recorded operand
    short_circuits: bool            # has && / ||: some operands may not be evaluated


@dataclass
class FunctionPlan:
    fn: Function
    # A gate only: recorded operand -> its slot, guard -> its plan,
    # gate return site -> the slots its guard fills.
    capture_slot: dict[ast.Expr, int] = field(default_factory=dict)
    guards: dict[ast.Expr, GuardPlan] = field(default_factory=dict)
    site_slots: dict[int, list[int]] = field(default_factory=dict)
    # Loop-counter increments (ast.Assign) that cannot overflow.
    no_wrap: set = field(default_factory=set)
    # Every expression of the body -> (has_call, is_stable): EvalOrder's answers.
    order: dict = field(default_factory=dict)
    # The body's calls of float32 primitives -> the primitive (primitive_name).
    primitives: dict = field(default_factory=dict)
    # The locals the C emitter may keep as floats (unboxed_locals).
    float_locals: frozenset = frozenset()
    # The names of the functions and externs the body calls (body_facts).
    calls: frozenset = frozenset()
    # The body's loops, outer ones first.
    loops: tuple = ()


class EvalOrder:
    """Evaluation-order questions about checked expressions."""

    def __init__(self, info: Info):
        self.info = info

    def has_call(self, e) -> bool:
        """A call with possible side effects inside (float32 primitives are pure)."""
        return not is_pure(e, self.info)

    def is_stable(self, e) -> bool:
        """Its value cannot be changed by a call evaluated after it."""
        if self.info.const(e) is not None:
            return True
        if isinstance(e, ast.Name):
            sym = self.info.sym(e)
            return sym is not None and sym.kind in ("local", "param")
        if isinstance(e, ast.Cast):
            return self.is_stable(e.expr)
        return False


@dataclass
class ProgramPlan:
    # No reference to the program: _PLANS holds the plans weakly keyed by
    # their programs, and a plan that held its program kept every program a
    # long-lived worker ever planned (and all that is keyed by them) alive.
    order: EvalOrder
    functions: dict[Function, FunctionPlan]     # every body the program checked, and each imported gate
    # the root's gate return site -> the guard operands its gate records
    captures: dict[int, list[CapturedOperand]]
    # The effects recorded for the bodies this program did not check
    # (effects.recorded; None: it checked them all).
    recorded: object = None


_PLANS: "weakref.WeakKeyDictionary[Program, ProgramPlan]" = weakref.WeakKeyDictionary()


def plan_program(program: Program) -> ProgramPlan:
    plan = _PLANS.get(program)
    if plan is None:
        plan = _PLANS[program] = _plan(program)
    return plan


def _plan(program: Program) -> ProgramPlan:
    info = program.info
    functions = {}
    captures: dict[int, list[CapturedOperand]] = {}
    gates = {id(g.fn): g for g in program.gates.values()}
    # A body not checked here is never emitted from this program; imported
    # gates are not among the functions (no program calls them), but each is
    # emitted into its module's own object.
    imported_gates = [g.fn for g in program.gates.values() if g.fn is not program.entry]
    for fn in [*checked_functions(program), *imported_gates]:
        gate = gates.get(id(fn))
        fp, ops = _function_plan(fn, gate, info)
        if fn is program.entry:
            captures.update(ops)
        functions[fn] = fp
    return ProgramPlan(EvalOrder(info), functions, captures, recorded(program))


# Function -> (info, whether planned as a gate, its FunctionPlan's tables, its
# gate's captured operands by return site): a gate's worker makes a new
# program each time it checks more bodies (nxc/check/summary.py, Bodies), and
# a function's plan depends on its own body only (read only once made). The
# value holds nothing that refers to the function (a FunctionPlan does), or
# the entry would never go.
_FUNCTION_PLANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _function_plan(fn: Function, gate, info: Info) -> tuple:
    known = _FUNCTION_PLANS.get(fn)
    if known is not None and known[0] is info and known[1] == (gate is not None):
        _, _, tables, ops = known
        return FunctionPlan(fn, *tables), ops
    fp = FunctionPlan(fn)
    ops: dict[int, list[CapturedOperand]] = {}
    nodes = ast.nodes(fn.decl.body)
    fp.loops = tuple(n for n in nodes if isinstance(n, ast.While))
    for loop in fp.loops:
        inc = counter_increment(loop, info)
        if inc is not None:
            fp.no_wrap.add(inc)
    fp.order, fp.primitives = _order_tables(nodes, info)
    fp.float_locals = frozenset(unboxed_locals(fn.decl.body, info))
    fp.calls = body_facts(fn, info).calls
    if gate is not None:
        for gr in gate.returns:
            pairs = plan_captures(gr.guard, info)
            if not pairs:
                continue
            slots = [op.slot for _, op in pairs]
            fp.guards[gr.guard] = GuardPlan(slots, short_circuits(gr.guard))
            fp.site_slots[gr.site] = slots
            for e, op in pairs:
                fp.capture_slot[e] = op.slot
            ops[gr.site] = [op for _, op in pairs]
    _FUNCTION_PLANS[fn] = (info, gate is not None, (fp.capture_slot, fp.guards, fp.site_slots, fp.no_wrap, fp.order,
                                                    fp.primitives, fp.float_locals, fp.calls, fp.loops), ops)
    return fp, ops


def _order_tables(nodes: list, info: Info) -> tuple[dict, dict]:
    """(expression -> (has_call, is_stable), call -> its float32 primitive) for
    the expressions among `nodes` (ast.walk's order: outer ones first), worked
    out inner ones first, so each answer reads its operands' (EvalOrder asks
    is_pure, which walks the operands again, at every level)."""
    order: dict = {}
    primitives: dict = {}
    for e in reversed(nodes):
        if not isinstance(e, ast.Expr):
            continue
        if info.const(e) is not None:
            order[e] = (False, True)
            continue
        name = primitive_name(e, info) if isinstance(e, ast.Call) else None
        if name is not None:
            primitives[e] = name
        calls = (isinstance(e, ast.Call) and name is None) or any(order[x][0] for x in ast.subexpressions(e)
                                                                   if x is not None)
        if isinstance(e, ast.Name):
            sym = info.sym(e)
            stable = sym is not None and sym.kind in ("local", "param")
        else:
            stable = isinstance(e, ast.Cast) and order[e.expr][1]
        order[e] = (calls, stable)
    return order, primitives


def counter_increment(loop: ast.While, info: Info):
    """The `i = i + 1` of `while i < n { ... i = i + 1 ... }` that cannot overflow, if any.

    When the condition has a conjunct `i < X` (i a local or parameter), and the
    body assigns i exactly once, in a statement at its top level, `i + 1`
    happens only while i < X <= MAX: it never wraps.
    """
    counters = []

    for c in ast.conjuncts(loop.cond):
        if isinstance(c, ast.Binary) and c.op in ("<", ">"):
            x = c.left if c.op == "<" else c.right
            sym = info.sym(x) if isinstance(x, ast.Name) else None
            if sym is not None and sym.kind in ("local", "param") and isinstance(info.ty(x), IntType):
                counters.append(sym)
    for sym in counters:
        assigns = list(_assignments(loop.body, sym, info))
        if len(assigns) != 1:
            continue
        a = assigns[0]
        if a not in loop.body.stmts:
            continue
        if a.op == "+=" and info.const(a.value) == 1:
            return a
        v = a.value
        if a.op == "=" and isinstance(v, ast.Binary) and v.op == "+":
            one_side = [x for x in (v.left, v.right) if info.const(x) == 1]
            other = [x for x in (v.left, v.right) if isinstance(x, ast.Name) and info.sym(x) is sym]
            if one_side and other:
                return a
    return None


def _assignments(stmt, sym, info: Info):
    """Every statement that assigns the local `sym` inside stmt."""
    if isinstance(stmt, ast.Block):
        for x in stmt.stmts:
            yield from _assignments(x, sym, info)
    elif isinstance(stmt, ast.Assign):
        if isinstance(stmt.target, ast.Name) and info.sym(stmt.target) is sym:
            yield stmt
    elif isinstance(stmt, ast.If):
        yield from _assignments(stmt.then, sym, info)
        if stmt.orelse is not None:
            yield from _assignments(stmt.orelse, sym, info)
    elif isinstance(stmt, ast.While):
        yield from _assignments(stmt.body, sym, info)


def short_circuits(e) -> bool:
    """`&&` or `||` somewhere inside e."""
    if isinstance(e, ast.Binary) and e.op in ("&&", "||"):
        return True
    return any(short_circuits(x) for x in ast.subexpressions(e))
