"""C backend, text stage: checked Program -> C11 source text.

Expressions and statements are written here, one method per node kind; the
fixed file skeleton (includes, trap support, division helpers, entry points)
is the jinja2 template templates/module.c.j2 (mypyc's split: templates for
the skeleton, an emitter for code).

Semantics that C leaves open are pinned down here, so that the C and Python
backends agree bit for bit:
- every integer result is cast back to its nx width (C promotes to int);
- shift counts are masked to the width; left shifts go through unsigned;
- `/` and `%` call helpers that trap on zero and wrap MIN / -1;
- operands are evaluated left to right: when a later operand contains a
  call, an earlier one is stored in a temporary first (C leaves the order
  of operand evaluation unspecified);
- in an assignment the value is evaluated before the place.
Every nx name gets a prefix (nxf_, nxg_, l_, f_, nxs_) so that a function
called `exp`, `free`, `int` or `main` never collides with C or libc.
"""
from __future__ import annotations

import hashlib
import os
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field


from nxc import __version__
from nxc.syntax import ast
from nxc.check.program import Function, Program
from nxc.lower.f32_unbox import F32_BINARY, F32_COMPARE, F32_RESULT, primitive_name, unboxed_locals
from nxc.lower.guards import CAPTURE_SLOTS, CapturedOperand
from nxc.lower.plan import plan_program
from nxc.backend.emitter import CapturesMixin, FunctionEmitterBase, strip_outer_parens
from nxc.deep import deep
from nxc.backend.escape import c_string_body, comment_text
from nxc.backend.skeleton import template
from nxc.lower.may_unmap import calls_in, has_loop
from nxc.lower.effects import body_checked, body_facts, memory_free, recorded, silent, unmapping
from nxc.check.externs import task_externs
from nxc.lower.hoist import LoopPlan, plan_loops
from nxc.check.types import (I64, VOID, BoolType, IntType, PointerType, StructType, Type,
                    VoidType)

_INT_C = {(8, True): "int8_t", (16, True): "int16_t", (32, True): "int32_t", (64, True): "int64_t",
          (8, False): "uint8_t", (16, False): "uint16_t", (32, False): "uint32_t", (64, False): "uint64_t"}



# Externs that take or give memory: checked builds call the runtime's
# nxrt_chk_* twin, which checks the range against the live mappings.
CHECKED_EXTERNS = ("sys_mmap", "sys_munmap", "sys_write", "sys_file_open", "sys_file_read", "sys_parallel_for")

def c_type(t: Type) -> str:
    if isinstance(t, IntType):
        return _INT_C[(t.bits, t.signed)]
    if isinstance(t, BoolType):
        return "_Bool"
    if isinstance(t, VoidType) or t is None:
        return "void"
    if isinstance(t, PointerType):
        return c_type(t.target) + " *"
    if isinstance(t, StructType):
        return f"struct nxs_{t.name}"
    raise TypeError(t)


def c_abi_type(t: Type) -> str:
    """Type used at the exported boundary (cffi cdef): pointers are void *."""
    return "void *" if isinstance(t, PointerType) else c_type(t)


def unsigned_of(t: IntType) -> str:
    return _INT_C[(t.bits, False)]


def c_int_literal(value: int, t: Type) -> str:
    if isinstance(t, BoolType):
        return "1" if value else "0"
    if not isinstance(t, IntType):
        t = I64
    if t.bits == 64:
        if t.signed:
            if value == -(1 << 63):
                return "(-INT64_C(9223372036854775807) - 1)"
            return f"INT64_C({value})"
        return f"UINT64_C({value})"
    if t.signed and value == -(1 << (t.bits - 1)):
        return f"(({c_type(t)})({value + 1} - 1))"
    if t.bits == 32:
        return f"(({c_type(t)}){value}{'' if t.signed else 'u'})"
    return f"(({c_type(t)}){value})"


def func_c_name(sym) -> str:
    return ("nxrt_" if sym.kind == "extern" else "nxf_") + sym.name


@dataclass
class Site:
    """A source position a run-time error or a stack frame can name.

    `what` is the trap's message (division by zero) or, for a checked access,
    "read of i64" / "write of ptr"; `kind` says what the site is: "div",
    "access", "call", "loop", "entry" (a function's own line), "mmap",
    "munmap", "write"; `function` is the nx function the site lies in."""
    path: str
    line: int
    col: int
    what: str = "runtime error"
    kind: str = "div"
    function: str = ""


@dataclass
class EmittedC(CapturesMixin):
    text: str               # core + every function's API wrapper (what emit_c's callers compile)
    cdef: str               # declarations of the exported entry points, for cffi
    sites: list[Site]       # index -> position, for trap messages
    exports: list[Function] = field(default_factory=list)
    # gate return site -> the guard operands whose values the gate records
    captures: dict[int, list[CapturedOperand]] = field(default_factory=dict)
    capture_slots: int = CAPTURE_SLOTS
    checked: bool = False   # built with the memory checks and the shadow stack
    # The program without any nxw_ wrapper (gate entry points only), and each
    # function's wrapper: a wrapper makes its function and all it calls
    # reachable, so gcc compiles the whole import closure again for every
    # importer; `only` keeps the ones a build needs.
    core: str = ""
    wrappers: dict[str, dict] = field(default_factory=dict)  # name -> its wrappers.c.j2 fields

    def only(self, names) -> "EmittedC":
        """This program with the wrappers of `names` only (() for a gate build)."""
        names = [n for n in names if n in self.wrappers]
        wrapper_t = template("wrappers.c.j2") if names else None
        text = self.core + "".join(wrapper_t.render(exports=[self.wrappers[n]]) for n in names)
        cdef = "\n".join([*GATE_CDEF, *(f"int nxw_{n}({self.wrappers[n]['params']});" for n in names)]) + "\n"
        keep = set(names)
        return EmittedC(text, cdef, self.sites, [f for f in self.exports if f.decl.name in keep],
                        self.captures, self.capture_slots, self.checked, self.core,
                        {n: self.wrappers[n] for n in names})


class FunctionEmitter(FunctionEmitterBase):
    """Writes one function body as C statements (lines of text)."""

    def __init__(self, program: Program, fn: Function, sites: list[Site], gate: bool, unbox_f32: bool = True,
                 checked: bool = False, may_unmap: frozenset = frozenset(), memory_free: frozenset = frozenset(),
                 silent: frozenset = frozenset(), site_macro: bool = False, mark_sites: bool = False):
        super().__init__(program, fn, gate)
        # A module's own object numbers its sites from 0 and writes them as
        # NX_SITE(k), its ordinal in the link added (module.c.j2); a
        # single-file build writes the number itself. `mark_sites`: each as
        # a mark of its index in `sites` (CopiedC: a copy's C is kept once
        # per worker and numbered where a unit places it).
        self.site_macro = site_macro
        self.mark_sites = mark_sites
        # Checked mode (the default of nxc run/test/load): every memory access
        # goes through NXRT_CHK, every call and loop head keeps the shadow
        # stack (runtime/nx_runtime.h). All of it is written by the helpers in
        # the "checked mode" section below.
        self.checked = checked
        # The functions whose calls may end a mapping (nxc/lower/may_unmap.py),
        # after which this function's site caches (nx_cbK/nx_csK) are forgotten.
        self.may_unmap = may_unmap
        self.cache_count = 0
        # Loops whose checks are done once before them (nxc/lower/hoist.py), and
        # while the fast copy of one is written, the accesses it leaves unchecked.
        self.loop_plans = plan_loops(fn, program, memory_free) if checked else {}
        self.fast: frozenset = frozenset()
        self.subst: dict = {}
        # Fields an enclosing hoisted loop proved no store of its nest overwrites.
        self.apart_done: frozenset = frozenset()
        self.fallback = False                   # writing the checked copy of a hoisted loop
        # Accesses through the same pointer text at the same type share one
        # cache (a helper's `ctx.rng = ctx.rng * a + c` pays one miss per call,
        # not three); any cache gives a complete check, sharing only decides hits.
        self.cache_of: dict[tuple[str, str], int] = {}
        self.pointer_text: list[str] = []     # set by address(): the pointer the place is reached through
        # A function with no loop and no call of an nx function that could fail or
        # spin takes no shadow-stack frame: it cannot spin or recurse, and a fault
        # in it names it by its own site (faults.stack_from puts it on top of its
        # caller's frame). Small helpers called in hot loops (nx_f32_max,
        # nx_f32_exp) stay as cheap and as inlinable as unchecked. A call of a
        # silent function (nxc/lower/effects.py: no fault, no loop possible in
        # it) stores no site either.
        self.silent = silent
        # sys_parallel_for counts as a loud call: it runs a task (which may fault) and
        # stores its site in this frame's slot (runtime/nx_threads.c), as a call does.
        self.loud = (own_function_names(program) - silent) | task_externs()
        self.framed = checked and (has_loop(fn.decl.body) or bool(body_facts(fn, self.info).calls & self.loud))
        # Float32 unboxing (nxc/lower/f32_unbox.py): these locals are C floats.
        self.unbox_f32 = unbox_f32
        self.float_locals = unboxed_locals(fn.decl.body, self.info) if unbox_f32 else set()
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
        self.lines.append(f'#line {pos.line} "{_c_string(pos.file.path)}"')

    def temp(self, t: Type) -> str:
        return self.new_temp(c_type(t))

    def site(self, pos, what: str, kind: str = "div") -> str:
        """A new site at `pos`: the C expression of its id."""
        self.sites.append(Site(pos.file.path, pos.line, pos.col, what, kind, self.fn.decl.name))
        k = len(self.sites) - 1
        if self.mark_sites:
            return f"{_SITE_MARK}{k}{_SITE_MARK}"
        return f"NX_SITE({k})" if self.site_macro else str(k)

    # ---- statements ----
    def body(self) -> list[str]:
        prologue = []
        if self.framed:
            prologue = [f"{self.indentation(1)}volatile int32_t *nx_fr = "
                        f"nxrt_enter({self.site(self.fn.decl.pos, 'entry', 'entry')});"]
        super().body()
        if self.framed and self.fn.ret is VOID:
            self.emit("nxrt_leave();")
        decls = [f"{self.indentation(1)}{t} {name};" for t, name in self.temps]
        if self.checked:
            forget = " = ".join([f"nx_cs{k}" for k in range(self.cache_count)] + ["0"])
            decls += [f"{self.indentation(1)}uintptr_t nx_cb{k} = 0; uint64_t nx_cs{k} = 0;"
                      for k in range(self.cache_count)]
            return decls + prologue + [line.replace(_FORGET, forget) for line in self.lines]
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
            if (self.has_call(value) and not _is_stable_place(target)) or (self.has_call(target) and not self.is_stable(value)):
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
        if plan is None or plan.nodes() <= outer or self.fallback:
            # (In the checked copy of an enclosing hoisted loop, which runs when a
            # range test failed, mostly before a fault, its inner loops stay
            # single: four copies of a loop body would cost compile time, not speed.)
            self.loop(s)
            return
        # Loop versioning (nxc/lower/hoist.py): when the range checks before the
        # loop pass, a copy without the checks they cover runs; else the checked
        # copy, which stops at the exact iteration and site of a fault.
        self.fast = outer | plan.nodes()
        apart = self.apart_done
        # The checked copy is the cold path (mostly: a fault is ahead): GCC then
        # optimizes it for size, and spends its vectorizer on the fast copy only.
        self.emit(f"if (__builtin_expect(!!({self.hoisted_checks(plan, outer)}), 1)) {{")
        self.depth += 1
        self.apart_done = apart | {f.node for f in plan.fixed if f.base_of}
        self.loop(s)
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

    def loop(self, s: ast.While) -> None:
        if self.checked and self.restamps(s):
            self.emit(f"while (({self.frame_at(s.pos, 'loop')}, {self.cond(s.cond)})) {{")
        elif self.checked:
            # Nothing in the body moves this frame's slot: stamp it once (a hot
            # inner loop pays no store per iteration).
            self.emit(f"{self.frame_at(s.pos, 'loop')};")
            self.emit(f"while ({self.cond(s.cond)}) {{")
        else:
            self.emit(f"while ({self.cond(s.cond)}) {{")
        self.block(s.body)
        self.emit("}")

    def visit_Break(self, s) -> None:
        self.emit("break;")

    def visit_Continue(self, s) -> None:
        self.emit("continue;")

    def visit_Return(self, s: ast.Return) -> None:
        leave = "nxrt_leave(); " if self.framed else ""
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

    # ---- expressions ----
    def cond(self, e: ast.Expr) -> str:
        return strip_outer_parens(self.expr(e))

    def expr(self, e: ast.Expr) -> str:
        if self.const(e) is not None and not isinstance(self.ty(e), PointerType):
            text = c_int_literal(self.const(e), self.ty(e))
        else:
            text = self.visit(e)
            if (self.ty(e).__class__ is BoolType and e.__class__ in _MEMORY_PLACES and id(e) not in self.places
                    and (e.__class__ is not ast.Unary or e.op == "*")):
                text = f"nx_load_bool(&({text}))"
        slot = self.capture_slot.get(e)
        return text if slot is None else self.captured(e, slot, text)

    def captured(self, e: ast.Expr, slot: int, text: str) -> str:
        """`text`, with its value also stored in the gate's capture slot."""
        tmp = self.temp(self.ty(e))
        raw = f"(int64_t)(intptr_t){tmp}" if isinstance(self.ty(e), PointerType) else f"(int64_t){tmp}"
        return (f"({tmp} = {text}, nx_gate_captured[{slot}] = {raw}, "
                f"nx_gate_cap_mask |= UINT32_C({1 << slot}), {tmp})")

    def sequenced(self, first: ast.Expr, later: list[ast.Expr]) -> tuple[str | None, str]:
        """`first`, stored in a temporary when it must be evaluated before the later
        operands: a later call might change it, or it calls a function that might
        change what a later operand reads (a global, memory). C leaves the order of
        operands and of arguments unspecified; gcc evaluates `h(f(), g)` right to left."""
        text = self.expr(first)
        if self.is_stable(first):
            return None, text
        if any(self.has_call(x) for x in later) or (self.has_call(first) and not all(self.is_stable(x) for x in later)):
            tmp = self.temp(self.ty(first))
            return f"({tmp} = {text})", tmp
        return None, text

    def visit_Name(self, e: ast.Name) -> str:
        sym = self.sym(e)
        if sym in self.subst:               # an inner loop's counter, at its start (hoisted_checks)
            return self.subst[sym]
        if sym in self.float_locals:        # its bits are observed here
            return f"nxrt_f32_to_bits(lf_{sym.unique})"
        if sym.kind in ("local", "param"):
            return f"l_{sym.unique}"
        if sym.kind == "global":
            return f"nxg_{sym.name}"
        return func_c_name(sym)

    def visit_Unary(self, e: ast.Unary) -> str:
        if e.op == "&":
            self.places.add(id(e.operand))      # its address is taken, not its value
        if self.checked and e.op in ("*", "&"):
            if e.op == "*":
                return self.checked_place(e, "read")
            return f"(({c_type(self.ty(e))}){self.address(e.operand)})"
        a = self.expr(e.operand)
        if e.op == "-":
            return f"(({c_type(self.ty(e))})(-{a}))"
        if e.op == "~":
            return f"(({c_type(self.ty(e))})(~{a}))"
        if e.op == "!":
            return f"(!{a})"
        if e.op == "*":
            return f"(*{a})"
        if e.op == "&":
            return f"(&{a})"
        raise ValueError(e.op)

    def visit_Binary(self, e: ast.Binary) -> str:
        op = e.op
        if op in ("&&", "||"):
            return f"({self.expr(e.left)} {op} {self.expr(e.right)})"
        pre, a = self.sequenced(e.left, [e.right])
        b = self.expr(e.right)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            text = f"({a} {op} {b})"
        elif isinstance(self.ty(e), BoolType):
            text = f"((_Bool)({a} {op} {b}))"
        else:
            text = self.arith(op, self.ty(e), a, b, self.ty(e.right), e.pos)
        return f"({pre}, {text})" if pre else text

    def arith(self, op: str, t: IntType, a: str, b: str, bt: Type, pos) -> str:
        ct = c_type(t)
        if op in ("/", "%"):
            fn = "div" if op == "/" else "rem"
            what = "division by zero" if op == "/" else "remainder by zero"
            return f"nx_{fn}_{t}({a}, {b}, {self.site(pos, what)})"
        if op == "<<":
            return f"(({ct})(({unsigned_of(t)}){a} << ({b} & {t.bits - 1})))"
        if op == ">>":
            return f"(({ct})({a} >> ({b} & {t.bits - 1})))"
        return f"(({ct})({a} {op} {b}))"

    def visit_Cast(self, e: ast.Cast) -> str:
        src, dst = self.ty(e.expr), self.ty(e)
        a = self.expr(e.expr)
        if src == dst:
            return a
        if isinstance(dst, BoolType):
            return f"({a} != 0)"
        if isinstance(dst, PointerType):
            if isinstance(src, PointerType):
                return f"(({c_type(dst)}){a})"
            return f"(({c_type(dst)})(intptr_t){a})"
        if isinstance(src, PointerType):
            return f"(({c_type(dst)})(intptr_t){a})"
        return f"(({c_type(dst)}){a})"

    def visit_Call(self, e: ast.Call) -> str:
        name = primitive_name(e, self.info) if self.unbox_f32 else None
        if name in F32_RESULT:
            return f"nxrt_f32_to_bits({self.float_expr(e)})"
        if name in F32_COMPARE:
            a, b = self.float_operands(e)
            return f"({a} {F32_COMPARE[name]} {b})"
        pres, args = [], []
        for i, a in enumerate(e.args):
            pre, text = self.sequenced(a, e.args[i + 1:])
            if self.checked and pre is None and self.has_call(a) and self.sym(e.func).kind != "extern":
                # The call's site must be stored after its arguments' calls
                # stored theirs: hold the argument in a temporary first.
                tmp = self.temp(self.ty(a))
                pre, text = f"({tmp} = {text})", tmp
            if pre:
                pres.append(pre)
            args.append(text)
        if self.checked:
            return self.checked_call(e, pres, args)
        call = f"{func_c_name(self.sym(e.func))}({', '.join(args)})"
        return f"({', '.join(pres)}, {call})" if pres else call

    # ---- float32 expressions (unboxed; see nxc/lower/f32_unbox.py) ----
    def float_expr(self, e: ast.Expr) -> str:
        """C `float` expression for an expression that holds float32 bits."""
        if isinstance(e, ast.Name) and self.sym(e) in self.float_locals:
            return f"lf_{self.sym(e).unique}"
        name = primitive_name(e, self.info)
        if name in F32_BINARY:
            a, b = self.float_operands(e)
            return f"({a} {F32_BINARY[name]} {b})"
        if name == "nx_f32_sqrt":
            return f"nxrt_f32_sqrtf({self.float_expr(e.args[0])})"
        if name == "nx_i32_to_f32":
            return f"((float)(int32_t){self.expr(e.args[0])})"
        if self.const(e) is not None:
            return f"nxrt_f32_from_bits({c_int_literal(self.const(e), I64)})"
        return f"nxrt_f32_from_bits({self.expr(e)})"

    def float_operands(self, e: ast.Call) -> tuple[str, str]:
        """Both operands as floats, left before right (the rule of `sequenced`)."""
        left, right = e.args
        a = self.float_expr(left)
        stable = self.is_stable(left) or (isinstance(left, ast.Name) and self.sym(left) in self.float_locals)
        if not stable and (self.has_call(right) or (self.has_call(left) and not self.is_stable(right))):
            tmp = self.new_temp("float")
            return f"({tmp} = {a}, {tmp})", self.float_expr(right)
        return a, self.float_expr(right)

    def visit_Index(self, e: ast.Index) -> str:
        if self.checked:
            return self.checked_place(e, "read")
        pre, base = self.sequenced(e.base, [e.index])
        text = f"{base}[{self.expr(e.index)}]"
        return f"(*({pre}, &{text}))" if pre else text

    def visit_FieldAccess(self, e: ast.FieldAccess) -> str:
        if self.checked:
            return self.checked_place(e, "read")
        base = self.expr(e.base)
        return f"{base}{'->' if self.info.through_pointer(e) else '.'}f_{e.name}"

    # ---- checked mode: memory places, calls, the shadow stack ----
    def place(self, e: ast.Expr, mode: str) -> str:
        """The C lvalue of an assignment's target (checked as a write)."""
        if self.checked and _is_memory_place(e):
            return self.checked_place(e, mode)
        return self.expr(e)

    def checked_place(self, e: ast.Expr, mode: str) -> str:
        """`NXRT_CHK(T, address, cache, site)`: the place, after its access was checked
        (in the fast copy of a hoisted loop, the plain place: checked before the loop)."""
        if e in self.fast:
            if isinstance(e, ast.Index):
                pre, base = self.sequenced(e.base, [e.index])
                text = f"{base}[{self.expr(e.index)}]"
                return f"(*({pre}, &{text}))" if pre else text
            return f"{self.expr(e.base)}->f_{e.name}"
        t = c_type(self.ty(e))
        site = self.site(e.pos, f"{mode} of {_access_type_name(self.ty(e))}", "access")
        address = self.address(e)
        return f"NXRT_CHK({t}, {address}, {self.cache_for(address, t)}, {site})"

    def address(self, e: ast.Expr) -> str:
        """The address of a memory place as a uintptr_t expression, not checked
        (C's pointer arithmetic, wrapping at 64 bits)."""
        if isinstance(e, ast.Index):
            pre, base = self.sequenced(e.base, [e.index])
            text = (f"((uintptr_t)({base}) + (uintptr_t)({self.expr(e.index)}) * "
                    f"(uintptr_t)sizeof({c_type(self.ty(e))}))")
            self.pointer_text = [base]
            return f"({pre}, {text})" if pre else text
        if isinstance(e, ast.FieldAccess):
            through = self.info.through_pointer(e)
            struct = self.ty(e.base).target if through else self.ty(e.base)
            if through:
                pointer = self.expr(e.base)
                base = f"(uintptr_t)({pointer})"
            else:
                base = self.address(e.base)
                pointer = self.pointer_text[0] if self.pointer_text else base
            self.pointer_text = [pointer]
            return f"({base} + offsetof({c_type(struct)}, f_{e.name}))"
        if isinstance(e, ast.Unary) and e.op == "*":
            pointer = self.expr(e.operand)
            self.pointer_text = [pointer]
            return f"((uintptr_t)({pointer}))"
        raise TypeError(f"not a memory place: {type(e).__name__}")

    def cache_for(self, address: str, t: str) -> int:
        """The cache pair of the place whose address() was just written: accesses
        through the same pointer at the same type share one (see cache_of)."""
        key = (self.pointer_text.pop() if self.pointer_text else address, _cache_shape(t))
        self.pointer_text = []
        k = self.cache_of.get(key)
        if k is None:
            k = self.cache_of[key] = self.cache_count
            self.cache_count += 1
        return k

    def hoisted_checks(self, plan: LoopPlan, done: frozenset) -> str:
        """The C condition under which the fast copy of `plan.loop` may run: the
        loop runs no iteration, or every access it leaves unchecked is valid in
        every iteration of the nest (runtime/nx_runtime.h: NXRT_TRY, NXRT_SPAN1,
        nxrt_reach, nxrt_apart). Evaluated where the loop starts: its own
        counter holds its first value, an inner loop's counter is replaced by
        the start its loop gets. `done`: accesses an enclosing loop's checks
        already cover (no test of their own here)."""
        tests, counts, runs = [], [], []
        for k, c in enumerate(plan.counters):
            first = f"l_{c.sym.unique}" if k == 0 else f"({self.expr(c.start)})"
            bound = self.expr(c.bound)
            n = self.new_temp("uint64_t")       # iterations - 1, when there is one
            if c.inclusive:
                runs.append(f"{first} <= {bound}")
                count = f"{bound} != INT64_MAX && ({n} = (uint64_t){bound} - (uint64_t){first}, 1)"
            else:
                runs.append(f"{first} < {bound}")
                count = f"({n} = (uint64_t){bound} - (uint64_t){first} - 1u, 1)"
            tests.append(count)
            counts.append(n)
        # An inner loop that runs no iteration: no test for its accesses.
        runs_in = {k: "" if k == 0 else f"!({runs[k]}) || " for k in range(len(plan.counters))}
        self.subst = {c.sym: f"({self.expr(c.start)})" for c in plan.counters[1:]}
        fields = {}
        for f in plan.fixed:            # first: the ranges below read the base fields
            t = c_type(self.ty(f.node))
            addr = self.address(f.node)
            k = self.cache_for(addr, t)
            fields[f.node] = addr
            if f.node not in done:
                site = self.site(f.node.pos, f"{'write' if f.store else 'read'} of "
                                 f"{_access_type_name(self.ty(f.node))}", "access")
                tests.append(f"NXRT_TRY({t}, {addr}, {k}, {site})")
        spans = []
        need_stores = any(f.base_of and f.node not in self.apart_done for f in plan.fixed)
        for r in plan.ranges:
            if r.node in done and not (r.store and need_stores):
                continue
            t = c_type(self.ty(r.node))
            first = self.address(r.node)
            k = self.cache_for(first, t)
            if len(r.terms) == 1 and r.terms[0][1] is None:
                # `p[I + d]`: the last element is n = iterations - 1 after the first
                reach, test = counts[r.terms[0][0]], ""
            else:
                reach = self.new_temp("uint64_t")   # elements from the first to the last
                terms = [(counts[c], "INT64_C(1)" if stride is None else self.expr(stride)) for c, stride in r.terms]
                terms += [("0u", "0")] * (2 - len(terms))
                test = f"nxrt_reach(&{reach}, {terms[0][0]}, {terms[0][1]}, {terms[1][0]}, {terms[1][1]})"
            spans.append((r, first, reach, t))
            if r.node not in done:
                site = self.site(r.node.pos, f"{'write' if r.store else 'read'} of "
                                 f"{_access_type_name(self.ty(r.node))}", "access")
                test += f"{' && ' if test else ''}NXRT_SPAN1({t}, {first}, {reach}, {k}, {site})"
            if test:
                tests.append(f"({runs_in[r.region]}{test})")
        # No store of the nest may overwrite a pointer some range was computed from.
        for f in plan.fixed:
            if not f.base_of or f.node in self.apart_done:      # an enclosing loop's tests cover it
                continue
            fa, ft = fields[f.node], c_type(self.ty(f.node))
            for r, first, reach, t in spans:
                if r.store:
                    tests.append(f"({runs_in[r.region]}nxrt_apart({fa}, sizeof({ft}), {first}, {reach}, sizeof({t})))")
            for g in plan.fixed:
                if g.store:
                    tests.append(f"nxrt_apart({fa}, sizeof({ft}), {fields[g.node]}, 0u, "
                                 f"sizeof({c_type(self.ty(g.node))}))")
        self.subst = {}
        return f"!({runs[0]}) || ({' && '.join(tests)})"

    def restamps(self, s: ast.While) -> bool:
        """Whether the loop must store its site each iteration: its body (or
        condition) holds a call of an nx function or an inner loop, which
        store theirs in this frame's slot."""
        return has_loop(s.body) or bool((calls_in(s.body, self.sym) | calls_in(s.cond, self.sym)) & self.loud)

    def frame_at(self, pos, kind: str) -> str:
        """Store a site in this function's shadow-stack slot (where it is now)."""
        return f"*nx_fr = {self.site(pos, kind, kind)}"

    def checked_call(self, e: ast.Call, pres: list[str], args: list[str]) -> str:
        sym = self.sym(e.func)
        if sym.kind == "extern":
            if sym.name in CHECKED_EXTERNS:
                what = sym.name[4:]
                call = f"nxrt_chk_{sym.name}({', '.join(args + [self.site(e.pos, what, what)])})"
            else:
                call = f"{func_c_name(sym)}({', '.join(args)})"
            parts = pres
        else:
            call = f"{func_c_name(sym)}({', '.join(args)})"
            parts = pres if sym.name in self.silent else pres + [self.frame_at(e.pos, 'call')]
        if sym.name in self.may_unmap:
            # A mapping may have ended: forget the site caches, after the call.
            if self.ty(e) is None or self.ty(e) is VOID:
                call = f"({call}, {_FORGET})"
            else:
                tmp = self.temp(self.ty(e))
                call = f"({tmp} = {call}, {_FORGET}, {tmp})"
        return f"({', '.join(parts)}, {call})" if parts else call

    def visit_SizeOf(self, e: ast.SizeOf) -> str:   # always folded; kept for clarity
        return c_int_literal(self.const(e), I64)

    def visit_IntLit(self, e) -> str:  # pragma: no cover - always const
        return c_int_literal(self.const(e), self.ty(e))

    visit_BoolLit = visit_IntLit


def _cache_shape(t: str) -> str:
    """What a site cache entry depends on besides the mapping: the access's size
    and alignment (runtime/nx_runtime.h: span = (len - size) / align + 1). The
    8-byte scalars and every pointer share one, so `pool.n` and `pool.K` through
    the same pointer pay one miss per call, not two."""
    if t.endswith("*") or t in ("int64_t", "uint64_t", "double"):
        return "8"
    if t in ("int32_t", "uint32_t", "float"):
        return "4"
    if t in ("int16_t", "uint16_t"):
        return "2"
    if t in ("int8_t", "uint8_t"):
        return "1"
    return t


# Where the checked code forgets its site caches (filled in when the function is done).
_FORGET = "/*nx:forget*/"


def _is_memory_place(e: ast.Expr) -> bool:
    return isinstance(e, (ast.Index, ast.FieldAccess)) or (isinstance(e, ast.Unary) and e.op == "*")


def _access_type_name(t: Type) -> str:
    """The name of an access's type in fault messages (the Python backend's words)."""
    if isinstance(t, PointerType):
        return "ptr"
    if isinstance(t, StructType):
        return f"struct {t.name}"
    return str(t)


# Expressions that read memory: a bool read there goes through
# nx_load_bool (module.c.j2), as a byte, since a _Bool holding 2 is undefined.
_MEMORY_PLACES = frozenset({ast.Index, ast.FieldAccess, ast.Unary})


def _is_stable_place(e: ast.Expr) -> bool:
    return isinstance(e, ast.Name)


def _c_string(s: str) -> str:
    return c_string_body(s)         # a path may hold quotes, newlines, `??/`, any byte




def is_straight_line(fn: Function) -> bool:
    """No branch and no loop: declarations, assignments and calls, then one return."""
    stmts = fn.decl.body.stmts
    return (bool(stmts) and isinstance(stmts[-1], ast.Return)
            and all(isinstance(s, (ast.VarDecl, ast.Assign, ast.ExprStmt)) for s in stmts[:-1]))


_UNMAPPING: "weakref.WeakKeyDictionary[Program, Effects]" = weakref.WeakKeyDictionary()
_OWN: "weakref.WeakKeyDictionary[Program, frozenset]" = weakref.WeakKeyDictionary()


def own_function_names(program: Program) -> frozenset:
    """The names of the program's functions with a body, once per program (a
    module's object is emitted function by function, each asking)."""
    found = _OWN.get(program)
    if found is None:
        found = _OWN[program] = frozenset(fn.decl.name for fn in program.functions)
    return found


@dataclass(frozen=True)
class Effects:
    """The whole-program analyses the checked emitter reads about callees
    (nxc/lower/may_unmap.py, effects.py): which functions may end a mapping,
    touch no memory, are silent (no fault, no loop). Empty when unchecked."""
    may_unmap: frozenset = frozenset()
    memory_free: frozenset = frozenset()
    silent: frozenset = frozenset()


def effects_of(program: Program, checked: bool) -> Effects:
    """The program's Effects, computed once per program (every unit of a gate asks)."""
    if not checked:
        return Effects()
    found = _UNMAPPING.get(program)
    if found is None:
        found = _UNMAPPING[program] = Effects(frozenset(unmapping(program)), frozenset(memory_free(program)),
                                              frozenset(silent(program)))
    return found


# The largest straight-line function importers copy (nx_f32_exp_lanes has 29 statements).
COPY_MAX_STATEMENTS = 32


def is_copied_into_importers(fn: Function, program: Program) -> bool:
    """Whether importers get a `static inline` copy of `fn` (like a function in a
    C header), besides the definition in its own module's object: the small
    straight-line arithmetic helpers (float32 bit helpers, exp lanes) that a
    kernel's loop must inline to vectorize. A function that maps memory or does
    I/O (calls a sys_* extern) is never copied: no loop needs it inline, and a
    copy would make every importer depend on its body."""
    memo = _COPIED.get(program)
    if memo is None:
        memo = _COPIED[program] = {}
    found = memo.get(fn.decl.name)
    rec = recorded(program)
    if found is None and rec is not None and fn.decl.name in rec.unchecked:
        found = memo[fn.decl.name] = fn.decl.name in rec.copied     # its body was not checked here: its record says
    if found is None:
        found = memo[fn.decl.name] = (
            is_straight_line(fn) and len(fn.decl.body.stmts) <= COPY_MAX_STATEMENTS
            and not any(name.startswith("sys_") for name in body_facts(fn, program.info).calls))
    return found


_COPIED: "weakref.WeakKeyDictionary[Program, dict]" = weakref.WeakKeyDictionary()


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


# The entry points a gate run needs (loaded with cffi's dlopen: see build_c),
# and those of checked mode (stubs in an unchecked build; nxc_checked() says which).
GATE_CDEF = ("int nxc_run_main(int64_t *result);", "int nxc_gate_site(void);",
             "int nxc_trap_site(void);", "const char *nxc_trap_kind(void);",
             "int64_t nxc_gate_captured(int slot);", "uint32_t nxc_gate_captured_mask(void);",
             "int nxc_checked(void);", "void nxc_fault_info(int64_t *out);", "int nxc_stack_depth(void);",
             "int nxc_stack_frame(int k);", "int nxc_stack_mirror(void *page, int64_t nbytes);",
             "int64_t nxc_stack_bytes(void);",
             "int nxc_buf_register(void *p, int64_t nbytes, int arg);", "void nxc_buf_clear(void);",
             "int nxc_probe(void *p, int64_t size, int64_t align);",
             "const char *nxc_file_log(void);", "int64_t nxc_file_log_bytes(void);",
             "int nxc_set_threads(int n);", "int nxc_threads(void);")
FAULT_INFO_WORDS = 10
# ... and those a separately compiled gate's loader binds its modules with
# (runtime/nx_runtime.c: only in a linked library, never a single file's).
LINK_CDEF = ("int nxc_module_count(void);", "int nxc_modules_bound(void);",
             "int nxc_module_bind(const char *id, int32_t base, int root);")


_INT_TYPES = [("i8", "int8_t", "uint8_t", 8, True), ("i16", "int16_t", "uint16_t", 16, True),
              ("i32", "int32_t", "uint32_t", 32, True), ("i64", "int64_t", "uint64_t", 64, True),
              ("u8", "uint8_t", "uint8_t", 8, False), ("u16", "uint16_t", "uint16_t", 16, False),
              ("u32", "uint32_t", "uint32_t", 32, False), ("u64", "uint64_t", "uint64_t", 64, False)]


def _function_entry(program: Program, fn: Function, sites: list[Site], *, checked: bool, unbox_f32: bool,
                    linkage: str = "static", site_macro: bool = False, name: str | None = None,
                    mark_sites: bool = False) -> dict:
    """The template's record of one function: its declarator, prototype and
    body (`name`: its C name, when not nxf_ and its nx name; `mark_sites`:
    its site numbers marked, see CopiedC)."""
    fx = effects_of(program, checked)
    body = FunctionEmitter(program, fn, sites, gate=is_gate(program, fn), unbox_f32=unbox_f32,
                           checked=checked, may_unmap=fx.may_unmap, memory_free=fx.memory_free, silent=fx.silent,
                           site_macro=site_macro, mark_sites=mark_sites).body()
    sig = signature(fn, linkage, name)
    return {"signature": sig, "prototype": signature(fn, "extern", name) if linkage == "module" else sig,
            "body": body, "line": fn.decl.pos.line, "path": _c_string(fn.decl.pos.file.path)}


def is_gate(program: Program, fn: Function) -> bool:
    """`fn` is a module's gate whose body `program` checked (the root's, or in a
    module's own object an imported module's): its returns set the report."""
    gate = program.gates.get(fn.module.source.path)
    return gate is not None and gate.fn is fn


def _struct_entry(st) -> dict:
    return {"name": st.name, "size": st.size, "fields": [(c_type(f.type), f.name, f.offset) for f in st.fields]}


def _global_entry(sym, value: int, storage: str = "static ") -> dict:
    return {"type": c_type(sym.type), "name": sym.name, "storage": storage,
            "init": c_int_literal(value, sym.type) if not isinstance(sym.type, PointerType) else "0"}


def _render(program: Program, *, unit: str, about: str, functions: list, sites: list, checked: bool,
            structs: list, globals_: list, extern_globals: list = (), imported: list = (),
            module_id: str = "", gate: str | None = None) -> str:
    return template("module.c.j2").render(
        version=__version__, root=comment_text(os.path.basename(about)), unit=unit, structs=structs,
        globals=globals_, extern_globals=extern_globals, imported=imported, functions=functions,
        has_entry=program.entry is not None, module_id=module_id, gate=gate,
        site_count=max(len(sites), 1), checked=checked, fault_words=FAULT_INFO_WORDS,
        int_types=_INT_TYPES)


@deep    # deeply nested programs recurse deeply (nxc/deep.py)
def emit_c(program: Program, unbox_f32: bool = True, checked: bool = False) -> EmittedC:
    """The whole program as one C file (nxc emit-c, the Python API).

    unbox_f32=False writes every float32 primitive as a runtime call on bits
    (the plain path the unboxed code must agree with, bit for bit).
    `text` has every function's wrapper; `only(names)` keeps the ones a build
    needs (a gate build needs none).
    checked=True checks every memory access and keeps the .nx call stack
    (runtime/nx_runtime.h, NXRT_CHECKED)."""
    sites: list[Site] = []
    captures = dict(plan_program(program).captures)
    functions = [_function_entry(program, fn, sites, checked=checked, unbox_f32=unbox_f32)
                 for fn in program.functions]
    structs = [_struct_entry(st) for st in program.structs]
    globals_ = [_global_entry(sym, value) for sym, value in program.globals]
    exports = []
    for fn in program.functions:
        if fn is program.entry:
            continue
        params = [f"{c_abi_type(p.type)} a{i}" for i, p in enumerate(fn.params)]
        call_args = [f"({c_type(p.type)})a{i}" for i, p in enumerate(fn.params)]
        if fn.ret is not VOID:
            params.append(f"{c_abi_type(fn.ret)} *out")
        exports.append({"name": fn.decl.name, "params": ", ".join(params) or "void",
                        "call": f"nxf_{fn.decl.name}({', '.join(call_args)})",
                        "returns": fn.ret is not VOID,
                        "ret_abi": c_abi_type(fn.ret)})
    # The externs the program declares are callable through the Python API too
    # (`nxc.load("nx_f32.nx").nx_f32_add`): a wrapper calls the runtime's.
    for sym in program.externs:
        if sym.name in task_externs():
            continue                # its task is a function's name: no use from Python
        ftype = sym.type
        params = [f"{c_abi_type(t)} a{i}" for i, t in enumerate(ftype.params)]
        call_args = [f"({c_type(t)})a{i}" for i, t in enumerate(ftype.params)]
        soft = "nx_soft_" + sym.name[len("nx_"):]           # --soft-f32: the .nx primitive instead
        if sym.name in CHECKED_EXTERNS and checked:
            call = f"nxrt_chk_{sym.name}({', '.join(call_args + ['-1'])})"     # site -1: the Python API
        elif any(fn.decl.name == soft for fn in program.functions):
            call = f"nxf_{soft}({', '.join(call_args)})"
        else:
            call = f"nxrt_{sym.name}({', '.join(call_args)})"
        if ftype.ret is not VOID:
            params.append(f"{c_abi_type(ftype.ret)} *out")
        exports.append({"name": sym.name, "params": ", ".join(params) or "void", "call": call,
                        "returns": ftype.ret is not VOID, "ret_abi": c_abi_type(ftype.ret)})
    core = _render(program, unit="whole", about=program.graph.root.source.path, functions=functions, sites=sites,
                   checked=checked, structs=structs, globals_=globals_)
    exported = [fn for fn in program.functions if fn is not program.entry]
    bare = EmittedC(core, "", sites, exported, captures, CAPTURE_SLOTS, checked, core,
                    {x["name"]: x for x in exports})
    return bare.only(bare.wrappers)


# ---- separate compilation: one C file per module ----
@dataclass
class UnitC:
    """One translation unit of a separately compiled gate (a module's object):
    its C text and its sites, numbered from 0 (its ordinal in the link is
    added at run time)."""
    text: str
    sites: list[Site]


def module_c_id(module: ast.Module) -> str:
    """A module's id in C, unique per module path: its object registers under
    it (nx_runtime.h, nxrt_module), and its gate is nxm_main_<id>."""
    return module_c_id_of(module.source.path)


def module_c_id_of(path: str) -> str:
    """module_c_id of the module at real path `path`."""
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])[:40]
    return f"{stem}_{hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def gate_symbol(module: ast.Module) -> str:
    """The C name of a module's gate in its object (nx names are one namespace,
    but every module may have its own `main`)."""
    return "nxm_main_" + module_c_id(module)


def _unit_parts(program: Program, own: list[Function], closure: list[ast.Module], *, checked: bool,
                unbox_f32: bool, copy_key=None):
    """What a unit holding `own` declares around it: the small straight-line
    imported functions it copies (is_copied_into_importers: like a C header's
    static inline functions, so that a kernel's loop can still inline and
    vectorize them) as their CopiedC, the prototypes of the
    other imported functions it calls, and the structs and globals of its
    import closure (dependencies first)."""
    by_name = _by_name(program)
    copies, called, unknown = _walk_copies(program, own, copy_key, checked, unbox_f32, write=True)
    if unknown:         # the caller checks their bodies first (objects.py, LinkedC._check_copies)
        raise RuntimeError(f"copied functions neither checked nor kept: {sorted(fn.decl.name for fn in unknown)}")
    order = {m.source.path: k for k, m in enumerate(closure)}
    position = lambda pos: (order.get(pos.file.path, len(order)), pos.line, pos.col)   # noqa: E731
    copied = sorted(copies.values(), key=lambda c: position(c[0].decl.pos))
    imported = [signature(by_name[n], "extern") for n in sorted(called)]
    paths = set(order)
    structs = _in_dependency_order([st for st in program.structs if st.pos is not None and st.pos.file.path in paths],
                                   position)
    return [c for _, c in copied], imported, structs, paths, position


def _walk_copies(program: Program, own: list[Function], copy_key, checked: bool, unbox_f32: bool,
                 write: bool):
    """(name -> (function, its CopiedC), names of the other imported functions
    called, the copied functions whose C can be had neither from the kept
    copies nor from this program (bodies not checked here)) of a unit holding
    `own`, transitively through the copies' own calls. `write`: write the C
    of the checked copies not kept (else their calls are only followed: the
    caller may check more bodies first, a new program)."""
    by_name = _by_name(program)
    own_names = {fn.decl.name for fn in own}
    copies: dict[str, tuple] = {}
    called: set[str] = set()
    unknown: dict[str, Function] = {}
    todo = [body_facts(fn, program.info).calls for fn in own]
    while todo:
        for name in todo.pop():
            callee = by_name.get(name)
            if callee is None or name in own_names or name in copies or name in unknown:
                continue
            if not is_copied_into_importers(callee, program):
                called.add(name)
                continue
            c = copied_c(program, callee, copy_key, checked=checked, unbox_f32=unbox_f32, write=write)
            if c is None:
                if not body_checked(program, callee):
                    unknown[name] = callee
                    continue
                c = body_facts(callee, program.info)        # not written now: its calls only
            copies[name] = (callee, c)
            todo.append(c.calls)
    return copies, called, list(unknown.values())


def _by_name(program: Program) -> dict:
    """The program's functions by name, once per program (each unit of a gate, and
    the check of its copies before it, ask)."""
    found = _BY_NAME.get(program)
    if found is None:
        found = _BY_NAME[program] = {fn.decl.name: fn for fn in program.functions}
    return found


_BY_NAME: "weakref.WeakKeyDictionary[Program, dict]" = weakref.WeakKeyDictionary()


def copies_unknown(program: Program, own: list[Function], *, checked: bool, unbox_f32: bool,
                   copy_key=None) -> list[Function]:
    """The functions a unit holding `own` copies (transitively) whose bodies
    must be checked before it is emitted: neither checked in `program` nor
    kept (CopiedC, under `copy_key`)."""
    return _walk_copies(program, own, copy_key, checked, unbox_f32, write=False)[2]


_SITE_MARK = "\0"      # never in emitted C: paths and strings are escaped (nxc/backend/escape.py)


@dataclass(frozen=True)
class CopiedC:
    """The C of a function as each unit that copies it holds it (`static
    inline`, emit_module_c), with its site numbers marked: a unit numbers
    them from where it places the copy (`placed`), so one text serves every
    unit. Kept per worker process (`CopiedMemo`): a gate's worker emits the
    same float32 helpers into almost every root's object, and without the
    kept text it would have to check their bodies and compute the effects of
    its program again to write them."""
    entry: dict             # _function_entry's fields; read only
    sites: tuple            # the sites its body adds, in order
    calls: frozenset        # the names its body calls (calls_in)

    def placed(self, sites: list) -> dict:
        """Its template fields at the end of a unit's `sites` (which it extends)."""
        base = len(sites)
        sites.extend(self.sites)
        if not self.sites:
            return self.entry
        body = [_number_sites(line, base) if _SITE_MARK in line else line for line in self.entry["body"]]
        return {**self.entry, "body": body}


def _number_sites(line: str, base: int) -> str:
    parts = line.split(_SITE_MARK)        # text, index, text, index, ..., text
    for k in range(1, len(parts), 2):
        parts[k] = f"NX_SITE({base + int(parts[k])})"
    return "".join(parts)


class CopiedMemo:
    """The kept CopiedC, least recently used first, at most `bound` of them.
    Keyed by what decides a copy's C: the key of its module's object (which
    covers the module's text and path, its closure's interfaces and the
    build configuration: objects.object_key), its name, checked, unbox_f32;
    never by a path alone: a long-lived worker (`nxc test --watch`) sees
    files change."""

    def __init__(self, bound: int):
        self.bound = bound
        self.entries: "OrderedDict[tuple, CopiedC]" = OrderedDict()
        self.hits = 0
        self.stored = 0

    def get(self, key: tuple) -> "CopiedC | None":
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
            self.hits += 1
        return found

    def put(self, key: tuple, value: CopiedC) -> None:
        self.entries[key] = value
        self.entries.move_to_end(key)
        self.stored += 1
        while len(self.entries) > self.bound:
            self.entries.popitem(last=False)


# The float32 modules' copied helpers (~60) and a few per tree module a
# worker's gates import; each a few hundred bytes.
COPIED_KEPT = 2048
COPIED = CopiedMemo(COPIED_KEPT)


def copied_c(program: Program, fn: Function, copy_key=None, *, checked: bool, unbox_f32: bool,
             write: bool = True) -> "CopiedC | None":
    """`fn`'s CopiedC for a unit of `program`: the kept one when `copy_key(fn)`
    (the digest that decides its C, or None) has one, else (`write`) written
    now from its checked body (and kept); None if neither."""
    digest = copy_key(fn) if copy_key is not None else None
    key = (digest, fn.decl.name, checked, unbox_f32)
    per_program = _FOUND.get(program)
    if per_program is None:
        per_program = _FOUND[program] = {}
    found = per_program.get(key)
    if found is not None:
        return found
    if digest is not None:
        found = COPIED.get(key)
    if found is None:
        if not write or not body_checked(program, fn):
            return None
        sites: list[Site] = []
        entry = _function_entry(program, fn, sites, checked=checked, unbox_f32=unbox_f32, site_macro=True,
                                mark_sites=True)
        found = CopiedC(entry, tuple(sites), body_facts(fn, program.info).calls)
        if digest is not None:
            COPIED.put(key, found)
    per_program[key] = found
    return found


# program -> the CopiedC found for its units: what copies_unknown found kept is
# there when the unit is emitted, even if the bounded memo has dropped it since.
_FOUND: "weakref.WeakKeyDictionary[Program, dict]" = weakref.WeakKeyDictionary()


def _in_dependency_order(structs: list, position) -> list:
    """`structs` in declaration order, each after the structs it embeds by value."""
    done: set[int] = set()
    out = []

    def visit(st):
        if id(st) in done:
            return
        done.add(id(st))
        for f in st.fields:
            if isinstance(f.type, StructType):
                visit(f.type)
        out.append(st)
    for st in sorted(structs, key=lambda st: position(st.pos)):
        visit(st)
    return out


@deep
def emit_module_c(program: Program, module: ast.Module, closure: list[ast.Module], *, checked: bool = False,
                  unbox_f32: bool = True, copy_key=None) -> UnitC:
    """The C file of one module's own functions and its gate (its `main`, if
    any, in gate mode, as `gate_symbol(module)`), for an object that every
    gate importing the module links; the module's gate runs when the module is
    the root (the loader says so: nx_runtime.c, nxc_module_bind).

    `closure`: the module's import closure, dependencies first (nxc/backend/c/
    closure.py). The text depends only on the module and that closure, never
    on the gate that links it: sites and gate return numbers are module-local
    (NX_SITE; GateReturn.site), structs and globals are those of the closure,
    in its order. `program` must have checked the module's main if it has one
    (program.gates), and the bodies of the functions the unit copies that are
    not kept under `copy_key` (copies_unknown): `copy_key(fn)` is the digest
    that decides a copied function's C (its module's object key), or None."""
    gate = program.gates.get(module.source.path)
    own = [fn for fn in program.functions if fn.module is module and fn is not program.entry]
    mains = [gate.fn] if gate is not None else []
    copied, imported, structs, paths, position = _unit_parts(program, own + mains, closure, checked=checked,
                                                             unbox_f32=unbox_f32, copy_key=copy_key)
    sites: list[Site] = []
    options = dict(checked=checked, unbox_f32=unbox_f32, site_macro=True)
    functions = ([c.placed(sites) for c in copied]
                 + [_function_entry(program, fn, sites, linkage="module", **options) for fn in own]
                 + [_function_entry(program, fn, sites, linkage="module", name=gate_symbol(module), **options)
                    for fn in mains])
    mine = [(sym, value) for sym, value in program.globals if sym.module is module]
    others = sorted(((sym, value) for sym, value in program.globals
                     if sym.module is not module and sym.pos.file.path in paths), key=lambda g: position(g[0].pos))
    text = _render(program, unit="module", about=module.source.path, functions=functions, sites=sites,
                   checked=checked, structs=[_struct_entry(st) for st in structs],
                   globals_=[_global_entry(sym, value, "") for sym, value in mine],
                   extern_globals=[_global_entry(sym, value, "") for sym, value in others],
                   imported=imported, module_id=module_c_id(module), gate=gate_symbol(module) if mains else None)
    return UnitC(text, sites)


def interface_text(program: Program, module: ast.Module, *, checked: bool = False, unbox_f32: bool = True) -> str:
    """What the C of a module that imports `module` can depend on, as text:
    its functions' signatures and their effects (whether a call may end a
    mapping, touches memory, can fail or spin: the checked code of a caller
    forgets its caches, hoists checks, keeps a frame by them), the C of the
    small straight-line functions importers copy (is_copied_into_importers,
    with their sites' positions), its structs' layouts, its globals, consts
    and externs. A body edit of any other function leaves it unchanged, so
    importers are not recompiled.
    A gate's worker computes it only for the modules whose bodies it checked;
    the others' digests come from the records kept with their objects
    (LinkedC in objects.py)."""
    fx = None                   # a module without functions needs no effects (nor the program's fixed points)
    parts = []
    for fn in program.functions:
        if fn.module is not module or fn is program.entry:
            continue
        fx = fx or effects_of(program, checked)
        name = fn.decl.name
        parts.append(f"fn {signature(fn, 'extern')} unmaps={name in fx.may_unmap} "
                     f"memory_free={name in fx.memory_free} silent={name in fx.silent}")
        if is_copied_into_importers(fn, program):
            sites: list[Site] = []
            entry = _function_entry(program, fn, sites, checked=checked, unbox_f32=unbox_f32, site_macro=True)
            parts.append(f"body {entry['line']} {entry['path']}\n" + "\n".join(entry["body"]) + "\n"
                         + repr([(s.path, s.line, s.col, s.what, s.kind, s.function) for s in sites]))
    for st in program.structs:
        if st.pos is not None and st.pos.file.path == module.source.path:
            parts.append(f"struct {st.name} {st.size} {[(c_type(f.type), f.name, f.offset) for f in st.fields]}")
    for sym, value in program.globals:
        if sym.module is module:
            parts.append(f"global {sym.name} {sym.type} {value}")
    for sym in program.consts:
        if sym.module is module:
            parts.append(f"const {sym.name} {sym.type} {sym.value}")
    for sym in program.externs:
        if sym.module is module:
            parts.append(f"extern {sym.name} {sym.type}")
    return "\n".join(parts)
