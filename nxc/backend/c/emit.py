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

import os
from dataclasses import dataclass, field


from nxc import __version__
from nxc.syntax import ast
from nxc.check.program import Function, Program
from nxc.lower.f32_unbox import F32_BINARY, F32_COMPARE, F32_RESULT, primitive_name, unboxed_locals
from nxc.lower.guards import CAPTURE_SLOTS, CapturedOperand
from nxc.lower.plan import plan_program
from nxc.backend.emitter import CapturesMixin, FunctionEmitterBase, strip_outer_parens
from nxc.backend.skeleton import template
from nxc.check.types import (I64, VOID, BoolType, IntType, PointerType, StructType, Type,
                    VoidType)

_INT_C = {(8, True): "int8_t", (16, True): "int16_t", (32, True): "int32_t", (64, True): "int64_t",
          (8, False): "uint8_t", (16, False): "uint16_t", (32, False): "uint32_t", (64, False): "uint64_t"}


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
    """A source position a run-time error can name (division by zero)."""
    path: str
    line: int
    col: int
    what: str = "runtime error"


@dataclass
class EmittedC(CapturesMixin):
    text: str
    cdef: str               # declarations of the exported entry points, for cffi
    sites: list[Site]       # index -> position, for trap messages
    exports: list[Function] = field(default_factory=list)
    # gate return site -> the guard operands whose values the gate records
    captures: dict[int, list[CapturedOperand]] = field(default_factory=dict)
    capture_slots: int = CAPTURE_SLOTS


class FunctionEmitter(FunctionEmitterBase):
    """Writes one function body as C statements (lines of text)."""

    def __init__(self, program: Program, fn: Function, sites: list[Site], gate: bool, unbox_f32: bool = True):
        super().__init__(program, fn, gate)
        # Float32 unboxing (nxc/lower/f32_unbox.py): these locals are C floats.
        self.unbox_f32 = unbox_f32
        self.float_locals = unboxed_locals(fn.decl.body, self.info) if unbox_f32 else set()
        self.sites = sites
        self.last_line = None

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

    def site(self, pos, what: str) -> int:
        self.sites.append(Site(pos.file.path, pos.line, pos.col, what))
        return len(self.sites) - 1

    # ---- statements ----
    def body(self) -> list[str]:
        super().body()
        decls = [f"{self.indentation(1)}{t} {name};" for t, name in self.temps]
        return decls + self.lines

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
            self.emit(f"{self.expr(target)} = {v};")
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
            self.emit(f"{{ {c_type(t)} *nx_p = &({self.expr(target)}); "
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
        self.emit(f"while ({self.cond(s.cond)}) {{")
        self.block(s.body)
        self.emit("}")

    def visit_Break(self, s) -> None:
        self.emit("break;")

    def visit_Continue(self, s) -> None:
        self.emit("continue;")

    def visit_Return(self, s: ast.Return) -> None:
        if s.value is None:
            self.emit("return;")
            return
        v = self.expr(s.value)
        if self.gate and self.site_of(s) is not None:
            self.emit(f"{{ int64_t nx_r = {v}; nx_gate_site = {self.site_of(s)}; return nx_r; }}")
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
        if sym in self.float_locals:        # its bits are observed here
            return f"nxrt_f32_to_bits(lf_{sym.unique})"
        if sym.kind in ("local", "param"):
            return f"l_{sym.unique}"
        if sym.kind == "global":
            return f"nxg_{sym.name}"
        return func_c_name(sym)

    def visit_Unary(self, e: ast.Unary) -> str:
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
            if pre:
                pres.append(pre)
            args.append(text)
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
        pre, base = self.sequenced(e.base, [e.index])
        text = f"{base}[{self.expr(e.index)}]"
        return f"(*({pre}, &{text}))" if pre else text

    def visit_FieldAccess(self, e: ast.FieldAccess) -> str:
        base = self.expr(e.base)
        return f"{base}{'->' if self.info.through_pointer(e) else '.'}f_{e.name}"

    def visit_SizeOf(self, e: ast.SizeOf) -> str:   # always folded; kept for clarity
        return c_int_literal(self.const(e), I64)

    def visit_IntLit(self, e) -> str:  # pragma: no cover - always const
        return c_int_literal(self.const(e), self.ty(e))

    visit_BoolLit = visit_IntLit


def _is_stable_place(e: ast.Expr) -> bool:
    return isinstance(e, ast.Name)


def _c_string(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')




def is_straight_line(fn: Function) -> bool:
    """No branch and no loop: declarations, assignments and calls, then one return."""
    stmts = fn.decl.body.stmts
    return (bool(stmts) and isinstance(stmts[-1], ast.Return)
            and all(isinstance(s, (ast.VarDecl, ast.Assign, ast.ExprStmt)) for s in stmts[:-1]))


def signature(fn: Function) -> str:
    params = ", ".join(f"{c_type(p.type)} l_{p.unique}" for p in fn.params) or "void"
    # A straight-line function (nx_f32_exp_lanes, the bit helpers) is `inline`: a loop that
    # calls it can only be vectorized once it is inlined, and GCC's -O2 inliner leaves such a
    # call out of line ("call is cold") without the hint.
    inline = "inline " if is_straight_line(fn) else ""
    return f"static {inline}{c_type(fn.ret)} nxf_{fn.decl.name}({params})"


# The entry points a gate run needs (loaded with cffi's dlopen: see build_c).
GATE_CDEF = ("int nxc_run_main(int64_t *result);", "int nxc_gate_site(void);",
             "int nxc_trap_site(void);", "const char *nxc_trap_kind(void);",
             "int64_t nxc_gate_captured(int slot);", "uint32_t nxc_gate_captured_mask(void);")


def emit_c(program: Program, unbox_f32: bool = True) -> EmittedC:
    """unbox_f32=False writes every float32 primitive as a runtime call on bits
    (the plain path the unboxed code must agree with, bit for bit)."""
    sites: list[Site] = []
    captures = dict(plan_program(program).captures)
    functions = []
    for fn in program.functions:
        body = FunctionEmitter(program, fn, sites, gate=fn is program.entry, unbox_f32=unbox_f32).body()
        functions.append({"signature": signature(fn), "body": body,
                          "line": fn.decl.pos.line, "path": _c_string(fn.decl.pos.file.path)})
    structs = [{"name": st.name, "size": st.size,
                "fields": [(c_type(f.type), f.name, f.offset) for f in st.fields]}
               for st in program.structs]
    globals_ = [{"type": c_type(sym.type), "name": sym.name,
                 "init": c_int_literal(value, sym.type) if not isinstance(sym.type, PointerType) else "0"}
                for sym, value in program.globals]
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
    root = program.graph.root.source.path
    text = template("module.c.j2").render(
        version=__version__, root=os.path.basename(root), structs=structs, globals=globals_,
        functions=functions, exports=exports, has_entry=program.entry is not None,
        site_count=max(len(sites), 1), capture_slots=CAPTURE_SLOTS,
        int_types=[("i8", "int8_t", "uint8_t", 8, True), ("i16", "int16_t", "uint16_t", 16, True),
                   ("i32", "int32_t", "uint32_t", 32, True), ("i64", "int64_t", "uint64_t", 64, True),
                   ("u8", "uint8_t", "uint8_t", 8, False), ("u16", "uint16_t", "uint16_t", 16, False),
                   ("u32", "uint32_t", "uint32_t", 32, False), ("u64", "uint64_t", "uint64_t", 64, False)])
    cdef = list(GATE_CDEF)
    for x in exports:
        cdef.append(f"int nxw_{x['name']}({x['params']});")
    return EmittedC(text, "\n".join(cdef) + "\n", sites,
                    [fn for fn in program.functions if fn is not program.entry], captures)
