"""C backend: what emitting one program's C reads about it, computed before
any function is written.

Lowering (nxc/lower/) runs here, once per program and for all its checked
bodies at once, before any of its C is written, never inside an emitter:
the program's plan (lower/plan.py: capture plan, evaluation order and
float32 primitives per expression, the locals kept as C floats, what each
body calls) and, for checked C, lower/checked_plan.py (the effects: which
functions may end a mapping, touch no memory, are silent; per function the
loops whose checks are hoisted and whether it keeps a shadow-stack frame;
per loop whether it stores its site each iteration). The emitters
(function.py and its mixins) and the unit logic (units.py, copies.py) only
read those tables, through a `FunctionFacts` and this class.

A `ProgramFacts` lives as long as the one program it describes, and owns
every answer computed about it: the effects, the functions by name, which
functions importers copy, the copies found for its units (copies.py). None
of it is a module global keyed on the program: while a gate's link asks
its worker for more bodies (needs.py, LinkPlanner), each new program gets a
new ProgramFacts; the one it emits from is final. Only the kept C of copied helpers outlives a
program (copies.COPIED, keyed on what decides that C, not on a program).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from nxc.syntax import ast
from nxc.check.program import Function, Program
from nxc.check.types import PointerType, StructType
from nxc.lower.checked_plan import CheckedPlan, plan_bodies, plan_checked
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


@dataclass
class ModuleMembers:
    """What one module declares in a program, each in the program's order."""
    functions: list = field(default_factory=list)      # not the program's entry
    structs: list = field(default_factory=list)
    globals: list = field(default_factory=list)        # (symbol, value)
    consts: list = field(default_factory=list)
    externs: list = field(default_factory=list)


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
    for n in ast.nodes(fn.decl.body):
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
    """One program's lowering and the emitter's answers about it. The lowering
    runs before any of the program's C is written, all of it at once
    (lower/plan.py's plan_program, and for checked C lower/checked_plan.py's
    plan_checked, each once per program, when first asked); the emitters and
    the unit logic only read it."""

    def __init__(self, program: Program, *, checked: bool = False, unbox_f32: bool = True):
        self.program = program
        self.checked = checked
        self.unbox_f32 = unbox_f32
        self._plan: ProgramPlan | None = None
        self._checked_plan: CheckedPlan | None = None
        self._effects: Effects | None = None
        self._by_name: dict | None = None
        self._functions: dict[int, FunctionFacts] = {}
        self._copied: dict[str, bool] = {}
        self._structs: dict[int, tuple] = {}
        self._members: dict[str, ModuleMembers] | None = None
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
    def checked_plan(self) -> CheckedPlan:
        """plan_checked of the program (checked C only)."""
        if self._checked_plan is None:
            self._checked_plan = plan_checked(self.program, self.plan)
        return self._checked_plan

    @property
    def effects(self) -> Effects:
        """The program's Effects (every unit of a gate and every interface asks)."""
        if self._effects is None:
            cp = self.checked_plan if self.checked else None
            self._effects = Effects(cp.may_unmap, cp.memory_free, cp.silent) if cp is not None else Effects()
        return self._effects

    @property
    def by_name(self) -> dict:
        """The program's functions by name (each unit of a gate, and the check
        of its copies before it, ask)."""
        if self._by_name is None:
            self._by_name = {fn.decl.name: fn for fn in self.program.functions}
        return self._by_name

    def members(self, module: ast.Module) -> ModuleMembers:
        """What `module` declares in the program (interface_text asks for each
        module of a gate's closure whose record it writes: grouped once, not a
        walk of the whole program per module)."""
        if self._members is None:
            program, of = self.program, defaultdict(ModuleMembers)     # real path -> its members
            for fn in program.functions:
                if fn is not program.entry:
                    of[fn.module.source.path].functions.append(fn)
            for st in program.structs:
                if st.pos is not None:
                    of[st.pos.file.path].structs.append(st)
            for sym, value in program.globals:
                if sym.module is not None:
                    of[sym.module.source.path].globals.append((sym, value))
            for sym in program.consts:
                if sym.module is not None:
                    of[sym.module.source.path].consts.append(sym)
            for sym in program.externs:
                if sym.module is not None:
                    of[sym.module.source.path].externs.append(sym)
            self._members = dict(of)
        found = self._members.get(module.source.path)
        return found if found is not None else ModuleMembers()     # (a fresh one: callers may hold it)

    def function(self, fn: Function) -> FunctionFacts:
        """The lowering of `fn` its emitter reads."""
        found = self._functions.get(id(fn))
        if found is None:
            fp = self.plan.functions[fn]
            float_locals = fp.float_locals if self.unbox_f32 else frozenset()
            if self.checked:
                cp = self.checked_plan
                if fn not in cp.loops:          # an imported module's gate, for its own object
                    plan_bodies(self.program, self.plan, cp, [fn])
                found = FunctionFacts(is_gate(self.program, fn), cp.loops[fn], float_locals, cp.framed[fn])
            else:
                found = FunctionFacts(is_gate(self.program, fn), {}, float_locals, False)
            self._functions[id(fn)] = found
        return found

    def body_checked(self, fn: Function) -> bool:
        """Whether the program checked `fn`'s body: the plan covers exactly those."""
        return fn in self.plan.functions

    def calls_of(self, fn: Function) -> frozenset:
        """The names the checked body of `fn` calls (plan.py, from effects.body_facts)."""
        return self.plan.functions[fn].calls

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
            if not self.body_checked(fn):
                found = name in self.plan.recorded.copied      # not checked here: its record says
            else:
                found = (is_straight_line(fn) and len(fn.decl.body.stmts) <= COPY_MAX_STATEMENTS
                         and not any(n.startswith("sys_") for n in self.calls_of(fn)))
            self._copied[name] = found
        return found
