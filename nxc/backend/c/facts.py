"""C backend: what emitting one program's C reads about it, computed before
any function is written.

Lowering (nxc/lower/) runs here, never inside an emitter: the program's plan
(capture plan, evaluation order: plan.py), its effects (checked C: which
functions may end a mapping, touch no memory, are silent: may_unmap.py,
effects.py), and, per function, before its emitter is made: the loops whose
checks are hoisted (hoist.py), the float32 locals kept as C floats
(f32_unbox.py), whether it keeps a shadow-stack frame. The emitters
(function.py and its mixins) only read a `FunctionFacts`.

A `ProgramFacts` lives as long as the one program it describes, and owns
every answer computed about it: the effects, the functions by name, which
functions importers copy, the copies found for its units (copies.py). None
of it is a module global keyed on the program: while a gate's link asks
its worker for more bodies (needs.py, LinkPlanner), each new program gets a
new ProgramFacts; the one it emits from is final. Only the kept C of copied helpers outlives a
program (copies.COPIED, keyed on what decides that C, not on a program).
"""
from __future__ import annotations

from dataclasses import dataclass

from nxc.syntax import ast
from nxc.check.program import Function, Program
from nxc.check.types import PointerType, StructType
from nxc.check.externs import task_externs
from nxc.lower.effects import body_facts, memory_free, recorded, silent, unmapping
from nxc.lower.f32_unbox import unboxed_locals
from nxc.lower.hoist import plan_loops
from nxc.lower.may_unmap import has_loop
from nxc.lower.plan import ProgramPlan, plan_program

# The largest straight-line function importers copy (nx_f32_exp_lanes has 29 statements).
COPY_MAX_STATEMENTS = 32


@dataclass(frozen=True)
class Effects:
    """The whole-program analyses the checked emitter reads about callees
    (nxc/lower/may_unmap.py, effects.py): which functions may end a mapping,
    touch no memory, are silent (no fault, no loop). Empty when unchecked."""
    may_unmap: frozenset = frozenset()
    memory_free: frozenset = frozenset()
    silent: frozenset = frozenset()


@dataclass(frozen=True)
class FunctionFacts:
    """What one function's emitter reads besides the checker's side tables."""
    gate: bool              # its returns set the gate's report (is_gate)
    loop_plans: dict        # loop -> LoopPlan: checks done once before it (checked C)
    float_locals: frozenset  # locals that live as C floats (float32 unboxing)
    framed: bool            # keeps a shadow-stack frame (checked C)


def is_straight_line(fn: Function) -> bool:
    """No branch and no loop: declarations, assignments and calls, then one return."""
    stmts = fn.decl.body.stmts
    return (bool(stmts) and isinstance(stmts[-1], ast.Return)
            and all(isinstance(s, (ast.VarDecl, ast.Assign, ast.ExprStmt)) for s in stmts[:-1]))


def struct_of(t) -> StructType | None:
    """The struct `t` is, or points to (through any number of pointers)."""
    while isinstance(t, PointerType):
        t = t.target
    return t if isinstance(t, StructType) else None


def structs_used(fn: Function, info) -> tuple[frozenset, frozenset]:
    """(defined, named): the names of the structs whose layout the C of `fn`
    needs, and of those it only names. A layout is needed for a struct value
    (an expression, parameter, local or result of struct type: `*p`, `p[i]`,
    `o.inner`) and for the struct a field is read from (`p->f`, and checked
    C's offsetof); a pointer to a struct that is only passed, stored, cast or
    compared needs a forward declaration (nx has no pointer arithmetic: it
    goes through `as i64`). units.py adds what a defined struct embeds."""
    defined, named = set(), set()

    def note(t) -> None:
        if isinstance(t, StructType):
            defined.add(t.name)
        elif (st := struct_of(t)) is not None:
            named.add(st.name)
    for t in [fn.ret, *(p.type for p in fn.params), *(s.type for s in fn.locals)]:
        note(t)
    for n in ast.walk(fn.decl.body):
        if isinstance(n, ast.Expr):
            note(info.ty(n))
            if isinstance(n, ast.FieldAccess) and (st := struct_of(info.ty(n.base))) is not None:
                defined.add(st.name)
    return frozenset(defined), frozenset(named - defined)


def is_gate(program: Program, fn: Function) -> bool:
    """`fn` is a module's gate whose body `program` checked (the root's, or in a
    module's own object an imported module's): its returns set the report."""
    gate = program.gates.get(fn.module.source.path)
    return gate is not None and gate.fn is fn


class ProgramFacts:
    """One program's lowering and the emitter's answers about it, each
    computed once, when first asked (a module's object asks about a few
    functions of a program that may hold hundreds)."""

    def __init__(self, program: Program, *, checked: bool = False, unbox_f32: bool = True):
        self.program = program
        self.checked = checked
        self.unbox_f32 = unbox_f32
        self._plan: ProgramPlan | None = None
        self._effects: Effects | None = None
        self._by_name: dict | None = None
        self._loud: frozenset | None = None
        self._copied: dict[str, bool] = {}
        self._structs: dict[int, tuple] = {}
        # (copy digest, function name) -> the CopiedC found for this program's
        # units (copies.py): what copies_unknown found kept is there when the
        # unit is emitted, even if the bounded per-process memo has dropped it since.
        self.found: dict = {}

    @property
    def plan(self) -> ProgramPlan:
        if self._plan is None:
            self._plan = plan_program(self.program)
        return self._plan

    @property
    def effects(self) -> Effects:
        """The program's Effects (every unit of a gate and every interface asks)."""
        if self._effects is None:
            p = self.program
            self._effects = (Effects(frozenset(unmapping(p)), frozenset(memory_free(p)), frozenset(silent(p)))
                             if self.checked else Effects())
        return self._effects

    @property
    def by_name(self) -> dict:
        """The program's functions by name (each unit of a gate, and the check
        of its copies before it, ask)."""
        if self._by_name is None:
            self._by_name = {fn.decl.name: fn for fn in self.program.functions}
        return self._by_name

    @property
    def loud(self) -> frozenset:
        """The functions with a body whose calls keep a frame: all but the silent ones."""
        if self._loud is None:
            # sys_parallel_for counts as a loud call: it runs a task (which may fault) and
            # stores its site in this frame's slot (runtime/nx_threads.c), as a call does.
            self._loud = ((frozenset(fn.decl.name for fn in self.program.functions) - self.effects.silent)
                          | task_externs())
        return self._loud

    def function(self, fn: Function) -> FunctionFacts:
        """The lowering of `fn` its emitter reads (run now, before the emitter is made)."""
        program, info = self.program, self.program.info
        checked = self.checked
        loop_plans = plan_loops(fn, program, self.effects.memory_free) if checked else {}
        # A function with no loop and no call of an nx function that could fail or
        # spin takes no shadow-stack frame: it cannot spin or recurse, and a fault
        # in it names it by its own site (faults.stack_from puts it on top of its
        # caller's frame). Small helpers called in hot loops (nx_f32_max,
        # nx_f32_exp) stay as cheap and as inlinable as unchecked.
        framed = checked and (has_loop(fn.decl.body) or bool(body_facts(fn, info).calls & self.loud))
        float_locals = frozenset(unboxed_locals(fn.decl.body, info)) if self.unbox_f32 else frozenset()
        return FunctionFacts(is_gate(program, fn), loop_plans, float_locals, framed)

    def structs_of(self, fn: Function) -> tuple[frozenset, frozenset]:
        """structs_used of `fn` (a function with a checked body), once per function."""
        found = self._structs.get(id(fn))
        if found is None:
            found = self._structs[id(fn)] = structs_used(fn, self.program.info)
        return found

    def is_copied(self, fn: Function) -> bool:
        """Whether importers get a `static inline` copy of `fn` (like a function in a
        C header), besides the definition in its own module's object: the small
        straight-line arithmetic helpers (float32 bit helpers, exp lanes) that a
        kernel's loop must inline to vectorize. A function that maps memory or does
        I/O (calls a sys_* extern) is never copied: no loop needs it inline, and a
        copy would make every importer depend on its body."""
        name = fn.decl.name
        found = self._copied.get(name)
        if found is None:
            rec = recorded(self.program)
            if rec is not None and name in rec.unchecked:
                found = name in rec.copied          # its body was not checked here: its record says
            else:
                found = (is_straight_line(fn) and len(fn.decl.body.stmts) <= COPY_MAX_STATEMENTS
                         and not any(n.startswith("sys_") for n in body_facts(fn, self.program.info).calls))
            self._copied[name] = found
        return found
