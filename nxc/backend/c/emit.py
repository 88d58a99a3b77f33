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
from nxc.check.checker import Function, Program
from nxc.lower.f32_unbox import F32_BINARY, F32_COMPARE, F32_RESULT, is_pure, primitive_name, unboxed_locals
from nxc.lower.guards import CAPTURE_SLOTS, CapturedOperand, captured_values, plan_captures
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
class EmittedC:
    text: str               # core + every function's API wrapper (what emit_c's callers compile)
    cdef: str               # declarations of the exported entry points, for cffi
    sites: list[Site]       # index -> position, for trap messages
    exports: list[Function] = field(default_factory=list)
    # gate return site -> the guard operands whose values the gate records
    captures: dict[int, list[CapturedOperand]] = field(default_factory=dict)
    capture_slots: int = CAPTURE_SLOTS
    # The program without any nxw_ wrapper (gate entry points only), and each
    # function's wrapper: a wrapper makes its function and all it calls
    # reachable, so gcc compiles the whole import closure again for every
    # importer; `only` keeps the ones a build needs.
    core: str = ""
    wrappers: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (C text, cdef line)
    root_exports: tuple[str, ...] = ()      # the root module's functions: what nxc.load exposes

    def only(self, names) -> "EmittedC":
        """This program with the wrappers of `names` only (() for a gate build)."""
        names = [n for n in names if n in self.wrappers]
        text = self.core + "".join(self.wrappers[n][0] for n in names)
        cdef = "\n".join([*GATE_CDEF, *(self.wrappers[n][1] for n in names)]) + "\n"
        keep = set(names)
        return EmittedC(text, cdef, self.sites, [f for f in self.exports if f.decl.name in keep],
                        self.captures, self.capture_slots, self.core,
                        {n: self.wrappers[n] for n in names}, self.root_exports)

    def captured(self, site: int, mask: int, raw) -> list[tuple[str, object]]:
        """(text, value) of the guard operands recorded before gate return `site`."""
        return captured_values(self.captures.get(site, []), mask, list(raw))


def _has_call(e) -> bool:
    """A call with possible side effects inside (float32 primitives are pure)."""
    return not is_pure(e)


def _is_stable(e) -> bool:
    """Its value cannot be changed by a call evaluated after it."""
    if e.const is not None:
        return True
    if isinstance(e, ast.Name):
        return e.sym is not None and e.sym.kind in ("local", "param")
    if isinstance(e, ast.Cast):
        return _is_stable(e.expr)
    return False


class FunctionEmitter:
    """Writes one function body; keeps its temporaries and indentation."""

    def __init__(self, program: Program, fn: Function, sites: list[Site], gate: bool,
                 captures: dict[int, list[CapturedOperand]] | None = None, unbox_f32: bool = True):
        self.program = program
        self.fn = fn
        # Float32 unboxing (nxc/lower/f32_unbox.py): these locals are C floats.
        self.unbox_f32 = unbox_f32
        self.float_locals = unboxed_locals(fn.decl.body) if unbox_f32 else set()
        self.sites = sites
        self.gate = gate
        self.lines: list[str] = []
        self.temps: list[str] = []
        self.depth = 1
        self.last_line = None
        # The gate records the operands of each return's guard while the
        # guard is evaluated (nxc/lower/guards.py): expression id -> value slot.
        self.capture_slot: dict[int, int] = {}
        self.capturing_conds: set[int] = set()
        if gate:
            for gr in program.gate_returns:
                plan = plan_captures(gr.guard)
                if not plan:
                    continue
                self.capturing_conds.add(id(gr.guard))
                for e, op in plan:
                    self.capture_slot[id(e)] = op.slot
                if captures is not None:
                    captures[gr.site] = [op for _, op in plan]

    # ---- output helpers ----
    def emit(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def line_directive(self, pos) -> None:
        if pos is None or (pos.line, pos.file.path) == self.last_line:
            return
        self.last_line = (pos.line, pos.file.path)
        self.lines.append(f'#line {pos.line} "{_c_string(pos.file.path)}"')

    def temp(self, t: Type) -> str:
        name = f"nx_t{len(self.temps)}"
        self.temps.append(f"{c_type(t)} {name};")
        return name

    def site(self, pos, what: str) -> int:
        self.sites.append(Site(pos.file.path, pos.line, pos.col, what))
        return len(self.sites) - 1

    # ---- statements ----
    def body(self) -> list[str]:
        for s in self.fn.decl.body.stmts:
            self.stmt(s)
        decls = ["    " + t for t in self.temps]
        return decls + self.lines

    def block(self, b: ast.Block) -> None:
        self.depth += 1
        for s in b.stmts:
            self.stmt(s)
        self.depth -= 1

    def stmt(self, s: ast.Stmt) -> None:
        self.line_directive(s.pos)
        getattr(self, "stmt_" + type(s).__name__)(s)

    def stmt_VarDecl(self, s: ast.VarDecl) -> None:
        if s.sym in self.float_locals:
            self.emit(f"float lf_{s.sym.unique} = {self.float_expr(s.value)};")
            return
        self.emit(f"{c_type(s.sym.type)} l_{s.sym.unique} = {self.expr(s.value)};")

    def stmt_Assign(self, s: ast.Assign) -> None:
        target, value = s.target, s.value
        if isinstance(target, ast.Name) and target.sym in self.float_locals:
            self.emit(f"lf_{target.sym.unique} = {self.float_expr(value)};")
            return
        # The value is evaluated before the place (nx's rule; C leaves it unspecified):
        # a value with a call, or a value a call in the place might change, goes first.
        if s.op == "=":
            v = self.expr(value)
            if (_has_call(value) and not _is_stable_place(target)) or (_has_call(target) and not _is_stable(value)):
                tmp = self.temp(value.ty if value.ty is not None else I64)
                self.emit(f"{tmp} = {v};")
                v = tmp
            self.emit(f"{self.expr(target)} = {v};")
            return
        op = s.op[:-1]
        t: IntType = target.ty
        v = self.expr(value)
        if _has_call(value) or (_has_call(target) and not _is_stable(value)):
            tmp = self.temp(value.ty)
            self.emit(f"{tmp} = {v};")
            v = tmp
        if isinstance(target, ast.Name):
            place = self.expr(target)
            self.emit(f"{place} = {self.arith(op, t, place, v, value.ty, s.pos)};")
        else:
            self.emit(f"{{ {c_type(t)} *nx_p = &({self.expr(target)}); "
                      f"*nx_p = {self.arith(op, t, '*nx_p', v, value.ty, s.pos)}; }}")

    def stmt_If(self, s: ast.If, prefix: str = "if") -> None:
        if id(s.cond) in self.capturing_conds:
            # Forget the operands of an earlier guard, then record this one's.
            self.emit(f"{prefix} ((nx_gate_cap_mask = 0u, {self.expr(s.cond)})) {{")
        else:
            self.emit(f"{prefix} ({self.cond(s.cond)}) {{")
        self.block(s.then)
        if isinstance(s.orelse, ast.If):
            self.emit("}")
            self.line_directive(s.orelse.pos)
            self.stmt_If(s.orelse, prefix="else if")
            return
        if isinstance(s.orelse, ast.Block):
            self.emit("} else {")
            self.block(s.orelse)
        self.emit("}")

    def stmt_While(self, s: ast.While) -> None:
        self.emit(f"while ({self.cond(s.cond)}) {{")
        self.block(s.body)
        self.emit("}")

    def stmt_Break(self, s) -> None:
        self.emit("break;")

    def stmt_Continue(self, s) -> None:
        self.emit("continue;")

    def stmt_Return(self, s: ast.Return) -> None:
        if s.value is None:
            self.emit("return;")
            return
        v = self.expr(s.value)
        if self.gate and s.site is not None:
            self.emit(f"{{ int64_t nx_r = {v}; nx_gate_site = {s.site}; return nx_r; }}")
        else:
            self.emit(f"return {v};")

    def stmt_ExprStmt(self, s: ast.ExprStmt) -> None:
        self.emit(f"(void)({self.expr(s.expr)});")

    def stmt_Block(self, s: ast.Block) -> None:
        self.emit("{")
        self.block(s)
        self.emit("}")

    # ---- expressions ----
    def cond(self, e: ast.Expr) -> str:
        text = self.expr(e)
        return text[1:-1] if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]) else text

    def expr(self, e: ast.Expr) -> str:
        if e.const is not None and not isinstance(e.ty, PointerType):
            text = c_int_literal(e.const, e.ty)
        else:
            text = getattr(self, "expr_" + type(e).__name__)(e)
        slot = self.capture_slot.get(id(e))
        return text if slot is None else self.captured(e, slot, text)

    def captured(self, e: ast.Expr, slot: int, text: str) -> str:
        """`text`, with its value also stored in the gate's capture slot."""
        tmp = self.temp(e.ty)
        raw = f"(int64_t)(intptr_t){tmp}" if isinstance(e.ty, PointerType) else f"(int64_t){tmp}"
        return (f"({tmp} = {text}, nx_gate_captured[{slot}] = {raw}, "
                f"nx_gate_cap_mask |= UINT32_C({1 << slot}), {tmp})")

    def sequenced(self, first: ast.Expr, later: list[ast.Expr]) -> tuple[str | None, str]:
        """`first`, stored in a temporary when it must be evaluated before the later
        operands: a later call might change it, or it calls a function that might
        change what a later operand reads (a global, memory). C leaves the order of
        operands and of arguments unspecified; gcc evaluates `h(f(), g)` right to left."""
        text = self.expr(first)
        if _is_stable(first):
            return None, text
        if any(_has_call(x) for x in later) or (_has_call(first) and not all(_is_stable(x) for x in later)):
            tmp = self.temp(first.ty)
            return f"({tmp} = {text})", tmp
        return None, text

    def expr_Name(self, e: ast.Name) -> str:
        sym = e.sym
        if sym in self.float_locals:        # its bits are observed here
            return f"nxrt_f32_to_bits(lf_{sym.unique})"
        if sym.kind in ("local", "param"):
            return f"l_{sym.unique}"
        if sym.kind == "global":
            return f"nxg_{sym.name}"
        return func_c_name(sym)

    def expr_Unary(self, e: ast.Unary) -> str:
        a = self.expr(e.operand)
        if e.op == "-":
            return f"(({c_type(e.ty)})(-{a}))"
        if e.op == "~":
            return f"(({c_type(e.ty)})(~{a}))"
        if e.op == "!":
            return f"(!{a})"
        if e.op == "*":
            return f"(*{a})"
        if e.op == "&":
            return f"(&{a})"
        raise ValueError(e.op)

    def expr_Binary(self, e: ast.Binary) -> str:
        op = e.op
        if op in ("&&", "||"):
            return f"({self.expr(e.left)} {op} {self.expr(e.right)})"
        pre, a = self.sequenced(e.left, [e.right])
        b = self.expr(e.right)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            text = f"({a} {op} {b})"
        elif isinstance(e.ty, BoolType):
            text = f"((_Bool)({a} {op} {b}))"
        else:
            text = self.arith(op, e.ty, a, b, e.right.ty, e.pos)
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

    def expr_Cast(self, e: ast.Cast) -> str:
        src, dst = e.expr.ty, e.ty
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

    def expr_Call(self, e: ast.Call) -> str:
        name = primitive_name(e) if self.unbox_f32 else None
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
        call = f"{func_c_name(e.func.sym)}({', '.join(args)})"
        return f"({', '.join(pres)}, {call})" if pres else call

    # ---- float32 expressions (unboxed; see nxc/lower/f32_unbox.py) ----
    def float_expr(self, e: ast.Expr) -> str:
        """C `float` expression for an expression that holds float32 bits."""
        if isinstance(e, ast.Name) and e.sym in self.float_locals:
            return f"lf_{e.sym.unique}"
        name = primitive_name(e)
        if name in F32_BINARY:
            a, b = self.float_operands(e)
            return f"({a} {F32_BINARY[name]} {b})"
        if name == "nx_f32_sqrt":
            return f"nxrt_f32_sqrtf({self.float_expr(e.args[0])})"
        if name == "nx_i32_to_f32":
            return f"((float)(int32_t){self.expr(e.args[0])})"
        if e.const is not None:
            return f"nxrt_f32_from_bits({c_int_literal(e.const, I64)})"
        return f"nxrt_f32_from_bits({self.expr(e)})"

    def float_operands(self, e: ast.Call) -> tuple[str, str]:
        """Both operands as floats, left before right (the rule of `sequenced`)."""
        left, right = e.args
        a = self.float_expr(left)
        stable = _is_stable(left) or (isinstance(left, ast.Name) and left.sym in self.float_locals)
        if not stable and (_has_call(right) or (_has_call(left) and not _is_stable(right))):
            tmp = f"nx_t{len(self.temps)}"
            self.temps.append(f"float {tmp};")
            return f"({tmp} = {a}, {tmp})", self.float_expr(right)
        return a, self.float_expr(right)

    def expr_Index(self, e: ast.Index) -> str:
        pre, base = self.sequenced(e.base, [e.index])
        text = f"{base}[{self.expr(e.index)}]"
        return f"(*({pre}, &{text}))" if pre else text

    def expr_FieldAccess(self, e: ast.FieldAccess) -> str:
        base = self.expr(e.base)
        return f"{base}{'->' if e.through_pointer else '.'}f_{e.name}"

    def expr_SizeOf(self, e: ast.SizeOf) -> str:   # always folded; kept for clarity
        return c_int_literal(e.const, I64)

    def expr_IntLit(self, e) -> str:  # pragma: no cover - always const
        return c_int_literal(e.const, e.ty)

    expr_BoolLit = expr_IntLit


def _is_stable_place(e: ast.Expr) -> bool:
    return isinstance(e, ast.Name)


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _c_string(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')




def signature(fn: Function) -> str:
    params = ", ".join(f"{c_type(p.type)} l_{p.unique}" for p in fn.params) or "void"
    return f"static {c_type(fn.ret)} nxf_{fn.decl.name}({params})"


# The entry points a gate run needs (loaded with cffi's dlopen: see build_c).
GATE_CDEF = ("int nxc_run_main(int64_t *result);", "int nxc_gate_site(void);",
             "int nxc_trap_site(void);", "const char *nxc_trap_kind(void);",
             "int64_t nxc_gate_captured(int slot);", "uint32_t nxc_gate_captured_mask(void);")


def emit_c(program: Program, unbox_f32: bool = True) -> EmittedC:
    """unbox_f32=False writes every float32 primitive as a runtime call on bits
    (the plain path the unboxed code must agree with, bit for bit)."""
    sites: list[Site] = []
    captures: dict[int, list[CapturedOperand]] = {}
    functions = []
    for fn in program.functions:
        body = FunctionEmitter(program, fn, sites, gate=fn is program.entry, captures=captures,
                               unbox_f32=unbox_f32).body()
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
    core = template("module.c.j2").render(
        version=__version__, root=os.path.basename(root), structs=structs, globals=globals_,
        functions=functions, has_entry=program.entry is not None,
        site_count=max(len(sites), 1), capture_slots=CAPTURE_SLOTS,
        int_types=[("i8", "int8_t", "uint8_t", 8, True), ("i16", "int16_t", "uint16_t", 16, True),
                   ("i32", "int32_t", "uint32_t", 32, True), ("i64", "int64_t", "uint64_t", 64, True),
                   ("u8", "uint8_t", "uint8_t", 8, False), ("u16", "uint16_t", "uint16_t", 16, False),
                   ("u32", "uint32_t", "uint32_t", 32, False), ("u64", "uint64_t", "uint64_t", 64, False)])
    wrapper_t = template("wrappers.c.j2")
    wrappers = {x["name"]: (wrapper_t.render(exports=[x]), f"int nxw_{x['name']}({x['params']});")
                for x in exports}
    exported = [fn for fn in program.functions if fn is not program.entry]
    root_exports = tuple(fn.decl.name for fn in exported if fn.module is program.graph.root)
    full = EmittedC(core, "", sites, exported, captures, CAPTURE_SLOTS, core, wrappers, root_exports)
    return full.only(wrappers)
