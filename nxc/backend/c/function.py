"""C backend, function emitter: one checked function -> C statements.

One method per statement kind here, per expression kind in expressions.py,
the checked mode's memory places, calls and hoisted loop checks in
checked.py. The emitter reads the checker's side tables and the lowering
its ProgramFacts ran before it was made (facts.py): it runs no analysis of
its own. Where a unit places a function and what surrounds it (prototypes,
structs, copies) is units.py's and copies.py's.

Semantics that C leaves open are pinned down here and in expressions.py, so
that the C and Python backends agree bit for bit:
- every integer result is cast back to its nx width (C promotes to int);
- shift counts are masked to the width; left shifts go through unsigned;
- `/` and `%` call helpers that trap on zero and wrap MIN / -1;
- operands are evaluated left to right: when a later operand contains a
  call, an earlier one is stored in a temporary first (C leaves the order
  of operand evaluation unspecified);
- in an assignment the value is evaluated before the place.
"""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.program import Function
from nxc.check.types import I64, VOID, IntType, Type
from nxc.backend.emitter import FunctionEmitterBase
from nxc.backend.c.checked import FORGET, CheckedMixin
from nxc.backend.c.expressions import ExpressionsMixin
from nxc.backend.c.facts import ProgramFacts, is_straight_line
from nxc.backend.c.names import c_string, c_type
from nxc.backend.c.sites import Site

# Marks a site number in a copy's C (CopiedC): never in emitted C, since
# paths and strings are escaped (nxc/backend/escape.py).
SITE_MARK = "\0"


class FunctionEmitter(CheckedMixin, ExpressionsMixin, FunctionEmitterBase):
    """Writes one function body as C statements (lines of text)."""

    def __init__(self, facts: ProgramFacts, fn: Function, sites: list[Site], *, site_macro: bool = False,
                 mark_sites: bool = False):
        lowered = facts.function(fn)
        super().__init__(facts.program, fn, lowered.gate, facts.plan)
        # A module's own object numbers its sites from 0 and writes them as
        # NX_SITE(k), its ordinal in the link added (module.c.j2); a
        # single-file build writes the number itself. `mark_sites`: each as
        # a mark of its index in `sites` (CopiedC: a copy's C is kept once
        # per worker and numbered where a unit places it).
        self.site_macro = site_macro
        self.mark_sites = mark_sites
        # Checked mode (the default of nxc run/test/load): every memory access
        # goes through NXRT_CHK, every call and loop head keeps the shadow
        # stack (runtime/nx_runtime.h). All of it is written by checked.py.
        self.checked = facts.checked
        # The functions whose calls may end a mapping (nxc/lower/may_unmap.py),
        # after which this function's site caches (nx_cbK/nx_csK) are forgotten.
        self.may_unmap = facts.effects.may_unmap
        self.cache_count = 0
        # Loops whose checks are done once before them (nxc/lower/hoist.py), and
        # while the fast copy of one is written, the accesses it leaves unchecked.
        self.loop_plans = lowered.loop_plans
        self.fast: frozenset = frozenset()
        self.subst: dict = {}
        # Fields an enclosing hoisted loop proved no store of its nest overwrites.
        self.apart_done: frozenset = frozenset()
        self.fallback = False                   # writing the checked copy of a hoisted loop
        self.in_fast_nest = False               # writing the body of a hoisted loop's fast copy
        # Accesses through the same pointer text at the same type share one
        # cache (a helper's `ctx.rng = ctx.rng * a + c` pays one miss per call,
        # not three); any cache gives a complete check, sharing only decides hits.
        self.cache_of: dict[tuple[str, str], int] = {}
        self.pointer_text: list[str] = []     # set by address(): the pointer the place is reached through
        # A call of a silent function (nxc/lower/effects.py: no fault, no loop
        # possible in it) stores no site; one of a loud one keeps a frame.
        self.silent = facts.effects.silent
        # Whether each loop stores its site again each iteration (lower/checked_plan.py).
        self.loop_restamps = facts.checked_plan.restamps if facts.checked else {}
        self.framed = lowered.framed
        # Float32 unboxing (nxc/lower/f32_unbox.py): these locals are C floats.
        self.unbox_f32 = facts.unbox_f32
        self.float_locals = lowered.float_locals
        self.sites = sites
        self.last_line = None
        # Memory places used as places (assigned to, address taken), not
        # loaded: a bool there is not read through nx_load_bool.
        self.places: set[int] = set()

    # ---- output helpers ----
    def emit(self, text: str, line: int | None = None) -> None:
        self.lines.append(self.indentation() + text)

    def line_directive(self, pos) -> None:
        if pos is None or (pos.line, pos.file.path) == self.last_line:
            return
        self.last_line = (pos.line, pos.file.path)
        self.lines.append(f'#line {pos.line} "{c_string(pos.file.path)}"')

    def temp(self, t: Type) -> str:
        return self.new_temp(c_type(t))

    def site(self, pos, what: str, kind: str = "div") -> str:
        """A new site at `pos`: the C expression of its id."""
        self.sites.append(Site(pos.file.path, pos.line, pos.col, what, kind, self.fn.decl.name))
        k = len(self.sites) - 1
        if self.mark_sites:
            return f"{SITE_MARK}{k}{SITE_MARK}"
        return f"NX_SITE({k})" if self.site_macro else str(k)

    # ---- statements ----
    def body(self) -> list[str]:
        prologue = []
        if self.framed:
            # the thread's shadow stack read once (nxrt_cur_stk: a global load, not a
            # thread-local one, unless tasks run), kept for the leave
            prologue = [f"{self.indentation(1)}volatile int32_t *nx_st = nxrt_cur_stk(); "
                        f"volatile int32_t *nx_fr = "
                        f"nxrt_enter_on(nx_st, {self.site(self.fn.decl.pos, 'entry', 'entry')});"]
        super().body()
        if self.framed and self.fn.ret is VOID:
            self.emit("nx_st[0]--;")
        decls = [f"{self.indentation(1)}{t} {name};" for t, name in self.temps]
        if self.checked:
            forget = " = ".join([f"nx_cs{k}" for k in range(self.cache_count)] + ["0"])
            decls += [f"{self.indentation(1)}uintptr_t nx_cb{k} = 0; uint64_t nx_cs{k} = 0;"
                      for k in range(self.cache_count)]
            return decls + prologue + [line.replace(FORGET, forget) for line in self.lines]
        return decls + prologue + self.lines

    def stmt(self, s: ast.Stmt) -> None:
        self.line_directive(s.pos)
        self.visit(s)

    def visit_VarDecl(self, s: ast.VarDecl) -> None:
        if self.sym(s) in self.float_locals:
            self.emit(f"float lf_{self.sym(s).unique} = {self.float_expr(s.value)};")
            return
        self.emit(f"{c_type(self.sym(s).type)} l_{self.sym(s).unique} = {self.expr(s.value)};")

    def visit_Assign(self, s: ast.Assign) -> None:
        target, value = s.target, s.value
        if isinstance(target, ast.Name) and self.sym(target) in self.float_locals:
            self.emit(f"lf_{self.sym(target).unique} = {self.float_expr(value)};")
            return
        # The value is evaluated before the place (nx's rule; C leaves it unspecified):
        # a value with a call, or a value a call in the place might change, goes first.
        if s.op == "=":
            v = self.expr(value)
            if (self.has_call(value) and not isinstance(target, ast.Name)) or (self.has_call(target) and not self.is_stable(value)):
                tmp = self.temp(self.ty(value) if self.ty(value) is not None else I64)
                self.emit(f"{tmp} = {v};")
                v = tmp
            self.places.add(id(target))
            self.emit(f"{self.place(target, 'write')} = {v};")
            return
        op = s.op[:-1]
        t: IntType = self.ty(target)
        v = self.expr(value)
        if self.has_call(value) or (self.has_call(target) and not self.is_stable(value)):
            tmp = self.temp(self.ty(value))
            self.emit(f"{tmp} = {v};")
            v = tmp
        if isinstance(target, ast.Name):
            place = self.expr(target)
            self.emit(f"{place} = {self.arith(op, t, place, v, self.ty(value), s.pos)};")
        else:
            self.emit(f"{{ {c_type(t)} *nx_p = &({self.place(target, 'write')}); "
                      f"*nx_p = {self.arith(op, t, '*nx_p', v, self.ty(value), s.pos)}; }}")

    def visit_If(self, s: ast.If, prefix: str = "if") -> None:
        if self.gate and s.cond in self.fplan.guards:
            # Forget the operands of an earlier guard, then record this one's.
            self.emit(f"{prefix} ((nx_gate_cap_mask = 0u, {self.expr(s.cond)})) {{")
        else:
            self.emit(f"{prefix} ({self.cond(s.cond)}) {{")
        self.block(s.then)
        if isinstance(s.orelse, ast.If):
            self.emit("}")
            self.line_directive(s.orelse.pos)
            self.visit_If(s.orelse, prefix="else if")
            return
        if isinstance(s.orelse, ast.Block):
            self.emit("} else {")
            self.block(s.orelse)
        self.emit("}")

    def visit_While(self, s: ast.While) -> None:
        plan = self.loop_plans.get(s)
        outer = self.fast                       # inside the fast copy of an enclosing loop
        if plan is None or plan.unchecked <= outer or self.fallback:
            # (In the checked copy of an enclosing hoisted loop, which runs when a
            # range test failed, mostly before a fault, its inner loops stay
            # single: four copies of a loop body would cost compile time, not speed.)
            self.loop(s)
            return
        # Loop versioning (nxc/lower/hoist.py): when the range checks before the
        # loop pass, a copy without the checks they cover runs; else the checked
        # copy, which stops at the exact iteration and site of a fault.
        self.fast = outer | plan.unchecked
        apart = self.apart_done
        # The checked copy is the cold path (mostly: a fault is ahead): GCC then
        # optimizes it for size, and spends its vectorizer on the fast copy only.
        self.emit(f"if (__builtin_expect(!!({self.hoisted_checks(plan, outer)}), 1)) {{")
        self.depth += 1
        self.apart_done = apart | {f.node for f in plan.fixed if f.base_of}
        self.loop(s, fast=not self.in_fast_nest)
        self.apart_done = apart
        self.depth -= 1
        self.fast = outer
        self.emit("} else {")
        self.depth += 1
        self.last_line = None
        self.line_directive(s.pos)
        self.fallback = True
        self.loop(s)
        self.fallback = False
        self.depth -= 1
        self.emit("}")

    def loop(self, s: ast.While, fast: bool = False) -> None:
        """A loop; `fast`: the fast copy of a hoisted nest (the outermost one)."""
        if not self.checked or self.in_fast_nest:
            # Unchecked; or a loop inside a hoisted nest's fast copy, which stores no site of
            # its own: the nest stamped its outer loop's, and a TIMEOUT in the nest names that
            # loop. A site store is a volatile int32 store that, for GCC, may alias any memory
            # the nest reads (nxc passes -fno-strict-aliasing): loads could not move across it,
            # and a kernel's values went through the stack instead of its vector operands.
            self.emit(f"while ({self.cond(s.cond)}) {{")
        elif self.restamps_nest(s) if fast else self.restamps(s):
            self.emit(f"while (({self.frame_at(s.pos, 'loop')}, {self.cond(s.cond)})) {{")
        else:
            # Nothing in the body moves this frame's slot: stamp it once (a hot
            # inner loop pays no store per iteration).
            self.emit(f"{self.frame_at(s.pos, 'loop')};")
            self.emit(f"while ({self.cond(s.cond)}) {{")
        inside = self.in_fast_nest
        self.in_fast_nest = inside or fast
        self.block(s.body)
        self.in_fast_nest = inside
        self.emit("}")

    def visit_Break(self, s) -> None:
        self.emit("break;")

    def visit_Continue(self, s) -> None:
        self.emit("continue;")

    def visit_Return(self, s: ast.Return) -> None:
        leave = "nx_st[0]--; " if self.framed else ""
        if s.value is None:
            self.emit(f"{leave}return;")
            return
        v = self.expr(s.value)
        if self.gate and self.site_of(s) is not None:
            self.emit(f"{{ int64_t nx_r = {v}; nx_gate_site = {self.site_of(s)}; {leave}return nx_r; }}")
        elif self.framed:
            self.emit(f"{{ {c_type(self.fn.ret)} nx_r = {v}; {leave}return nx_r; }}")
        else:
            self.emit(f"return {v};")

    def visit_ExprStmt(self, s: ast.ExprStmt) -> None:
        self.emit(f"(void)({self.expr(s.expr)});")

    def visit_Block(self, s: ast.Block) -> None:
        self.emit("{")
        self.block(s)
        self.emit("}")


def signature(fn: Function, linkage: str = "static", name: str | None = None) -> str:
    """The C declarator of `fn`. linkage "static": a single-file build, or a
    copy in an importer; "module": defined in its module's object for the
    other objects of the link (hidden: -fvisibility=hidden); "extern": the
    prototype an importer calls it through. `name`: the C name (default
    nxf_ and the nx name)."""
    params = ", ".join(f"{c_type(p.type)} l_{p.unique}" for p in fn.params) or "void"
    name = name or f"nxf_{fn.decl.name}"
    if linkage == "extern":
        return f"{c_type(fn.ret)} {name}({params})"
    # A straight-line function (nx_f32_exp_lanes, the bit helpers) is `inline`: a loop that
    # calls it can only be vectorized once it is inlined, and GCC's -O2 inliner leaves such a
    # call out of line ("call is cold") without the hint. In a module's object the definition
    # stays external (C11 6.7.4: a file-scope declaration without `inline` precedes it).
    inline = "inline " if is_straight_line(fn) else ""
    storage = "static " if linkage == "static" else ""
    return f"{storage}{inline}{c_type(fn.ret)} {name}({params})"


def function_entry(facts: ProgramFacts, fn: Function, sites: list[Site], *, linkage: str = "static",
                   site_macro: bool = False, name: str | None = None, mark_sites: bool = False) -> dict:
    """The template's record of one function: its declarator, prototype and
    body (`name`: its C name, when not nxf_ and its nx name; `mark_sites`:
    its site numbers marked, see copies.CopiedC)."""
    body = FunctionEmitter(facts, fn, sites, site_macro=site_macro, mark_sites=mark_sites).body()
    sig = signature(fn, linkage, name)
    return {"signature": sig, "prototype": signature(fn, "extern", name) if linkage == "module" else sig,
            "body": body, "line": fn.decl.pos.line, "path": c_string(fn.decl.pos.file.path)}
