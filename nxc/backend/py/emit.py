"""Python backend, text stage: checked Program -> Python source text.

The same checked `Program` the C backend compiles, written as readable
Python: one `def` per nx function, nx names kept (renamed only where they
would clash with Python), every statement tagged with its .nx line. The file
skeleton (runtime binding, site table, entry point) is the jinja2 template
templates/module.py.j2; this module writes the code, one method per node kind
(like emit_c.py, whose semantics it must match bit for bit).

Values. Every nx value is a Python int in its type's *canonical* range
(i64 in [-2^63, 2^63), u8 in [0, 256), pointers as unsigned 64-bit
addresses); bools are Python bools. An expression is emitted either
canonical or as a *ring* value: an int congruent to the nx value modulo 2^w.
`+ - * << & | ^ ~` commute with that congruence, so a chain like
`t * head_dim + d` is computed unwrapped and wrapped once where a canonical
value is needed (a comparison, `/`, `>>`, a call argument, a local). A signed
wrap is `(_r if -H <= (_r := x) < H else ((_r + H) & M) - H)`: two compares
when no overflow happened, which is the common case.

Memory. An access is inline (no call on the fast path):
    load:   (_Vq[_a >> 3] if _SH[(_a := ADDR)] & 8 else _ld(_a, SITE))
    store:  _VQ[_a >> 3 if _SH[(_a := ADDR)] & 8 else _st(_a, SITE)] = VALUE
where _SH is the shadow of runtime/nx_memory.py (bit `size` set = an access
of that size may start here) and _ld / _st handle 64-bit wrap-around and
raise the located fault. Python evaluates the right side of an assignment
before its target, which is the nx rule (value before place). An address
beyond the arena makes the shadow subscript raise IndexError; nxc/backend/py/run.py
reads the site from the line (`describe_fault`).

Order of evaluation is Python's, left to right, which is nx's; compound
assignments store the value and the address in temporaries (`_t`, `_p`)
first, like the C backend.
"""
from __future__ import annotations

import keyword
from itertools import accumulate, repeat
import os
import re
from dataclasses import dataclass, field


from nxc import __version__
from nxc.syntax import ast
from nxc.check.checker import Function, Program
from nxc.check.externs import f32_primitives
from nxc.lower.f32_unbox import is_pure
from nxc.lower.guards import CAPTURE_SLOTS, CapturedOperand, captured_values, plan_captures
from nxc.deep import deep
from nxc.backend.escape import comment_text
from nxc.backend.skeleton import template
from nxc.check.types import BoolType, IntType, PointerType, Type

M64 = (1 << 64) - 1

# Names the generated code uses for itself; nx names never take them.
_HELPERS = {"_SH", "_ld", "_st", "_a", "_p", "_t", "_r", "_d", "_rt", "_SITES", "_FILES", "_nx_f32", "_nx_mem",
            "_nx_runtime", "_nx_module_main", "_sys"} | {f"_c{k}" for k in range(CAPTURE_SLOTS)} | {f"_V{c}" for c in "bBhHiIqQz"} \
    | {f"_{op}_{s}{b}" for op in ("div", "rem") for s in "iu" for b in (8, 16, 32, 64)}
RESERVED = set(keyword.kwlist) | set(getattr(keyword, "softkwlist", ())) | _HELPERS | {"print"}

_VIEW = {(8, True): ("_Vb", 0), (8, False): ("_VB", 0), (16, True): ("_Vh", 1), (16, False): ("_VH", 1),
         (32, True): ("_Vi", 2), (32, False): ("_VI", 2), (64, True): ("_Vq", 3), (64, False): ("_VQ", 3)}


def type_key(t: Type) -> str:
    """The runtime's name for the type of an access (nx_memory.FORMATS)."""
    if isinstance(t, PointerType):
        return "ptr"
    if isinstance(t, BoolType):
        return "bool"
    return str(t)


def _view(t: Type, canonical: bool = True) -> tuple[str, int]:
    """(view name, log2 size) for loads/stores of t; non-canonical stores use the unsigned view."""
    if isinstance(t, PointerType):
        return "_VQ", 3
    if isinstance(t, BoolType):
        return "_VB", 0         # the byte; a load reads any nonzero byte as true
    return _VIEW[(t.bits, t.signed and canonical)]


def py_int(v: int) -> str:
    if -4096 <= v <= 65535:
        return str(v)
    return f"-0x{-v:X}" if v < 0 else f"0x{v:X}"


def literal(value: int, t: Type) -> str:
    if isinstance(t, BoolType):
        return "True" if value else "False"
    return py_int(value)


def wrap_text(text: str, t: Type) -> str:
    """Canonical value of type t from a ring value `text`."""
    if not isinstance(t, IntType):
        return text
    if not t.signed:
        return f"({text} & {py_int(t.mask)})"
    h = 1 << (t.bits - 1)
    return (f"(_r if {py_int(-h)} <= (_r := {text}) < {py_int(h)} "
            f"else ((_r + {py_int(h)}) & {py_int(t.mask)}) - {py_int(h)})")


def to_signed_text(text: str, t: IntType) -> str:
    """Signed value of type t from an unsigned value of the same width (already in range)."""
    h = 1 << (t.bits - 1)
    if _simple(text):
        return f"({text} if {text} < {py_int(h)} else {text} - {py_int(1 << t.bits)})"
    return f"(_r if (_r := {text}) < {py_int(h)} else _r - {py_int(1 << t.bits)})"


_PAREN_DELTA = {"(": 1, ")": -1}


def _strip(text: str) -> str:
    """Drop one pair of redundant outer parentheses (statement level)."""
    if text.startswith("(") and text.endswith(")"):
        # The depth after each character, computed in C (map, accumulate,
        # list.index): a loop in Python here made deep expressions n^2 slow.
        depths = list(accumulate(map(_PAREN_DELTA.get, text, repeat(0))))
        if depths.index(0) != len(text) - 1:
            return text
        return text[1:-1]
    return text


def _has_call(e) -> bool:
    """A call with possible side effects inside (float32 primitives are pure)."""
    return not is_pure(e)


@dataclass
class EmittedPy:
    text: str
    filename: str                       # the code object's file name (for tracebacks -> sites)
    sites: list                         # index -> (file index, line, col, kind, type)
    files: list                         # file index -> path
    line_pos: dict = field(default_factory=dict)     # python line -> (path, line, col) of its nx statement
    names: dict = field(default_factory=dict)        # nx function name -> python name
    functions: list = field(default_factory=list)    # checked Functions, in order
    entry: str | None = None            # python name of the gate
    # gate return site -> the guard operands whose values the gate records (nxc/lower/guards.py)
    captures: dict = field(default_factory=dict)
    capture_slots: int = CAPTURE_SLOTS

    def captured(self, site: int, mask: int, raw) -> list[tuple[str, object]]:
        """(text, value) of the guard operands recorded before gate return `site`."""
        return captured_values(self.captures.get(site, []), mask, list(raw))


class _Namer:
    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def pick(self, name: str) -> str:
        def free(n):
            return n not in self.taken and n not in RESERVED and not (n.startswith("__") and n.endswith("__"))
        out = name
        k = 2
        while not free(out):
            out = f"{name}_{k}"
            k += 1
        self.taken.add(out)
        return out


class FunctionEmitter:
    """Writes one function: statements as lines, expressions as text."""

    def __init__(self, module: "ModuleEmitter", fn: Function, gate: bool):
        self.m = module
        self.fn = fn
        self.gate = gate
        self.lines: list[tuple[int, str, int | None, tuple | None]] = []  # (depth, text, nx line, where)
        self.depth = 1
        self.globals_assigned: set[str] = set()
        namer = _Namer(module.module_names)
        # Keyed by the checker's unique name (not the Symbol object): the parse
        # cache shares AST nodes between checks, so Name.sym may be a newer twin.
        self.local: dict[str, str] = {}
        for p in fn.params:
            self.local[p.unique or p.name] = namer.pick(p.unique or p.name)
        for s in fn.locals:
            self.local[s.unique or s.name] = namer.pick(s.unique or s.name)
        self.stmt_site: tuple | None = None
        self.path = fn.decl.pos.file.path
        # The gate records the operands of each return's guard while the guard
        # is evaluated, like the C backend: expression id -> value slot.
        # Each operand is assigned to a local `_c<slot>` as it is evaluated; a
        # guard with && or || first sets its slots to None (not evaluated).
        # The return it guards hands them to the runtime (`_rt.captured`).
        self.capture_slot: dict[int, int] = {}
        self.capturing_conds: dict[int, list[int]] = {}     # guard id -> slots to reset (may be [])
        self.site_slots: dict[int, list[int]] = {}          # gate return site -> its guard's slots
        if gate:
            for gr in module.program.gate_returns:
                plan = plan_captures(gr.guard)
                if not plan:
                    continue
                slots = [op.slot for _, op in plan]
                self.capturing_conds[id(gr.guard)] = slots if _short_circuits(gr.guard) else []
                self.site_slots[gr.site] = slots
                for e, op in plan:
                    self.capture_slot[id(e)] = op.slot
                module.captures[gr.site] = [op for _, op in plan]

    # ---- output ----
    def emit(self, text: str, line: int | None = None) -> None:
        self.lines.append((self.depth, text, line, self.stmt_site))

    def site(self, pos, kind: str, arg=None) -> int:
        return self.m.site(pos, kind, arg)

    def render(self) -> list[tuple[str, int | None]]:
        """(python line, (path, line, col) of its nx statement) pairs, including the def line."""
        params = ", ".join(self.local[p.unique or p.name] for p in self.fn.params)
        name = self.m.func_names[self.fn.decl.name]
        pos = self.fn.decl.pos
        head_site = _where(pos)
        out = [(f"def {name}({params}):  # {comment_text(pos.file.display)}:{pos.line}", head_site)]
        if self.globals_assigned:
            out.append(("    global " + ", ".join(sorted(self.globals_assigned)), head_site))
        last = None
        for depth, text, line, site in self.lines:
            if line is not None and line != last:
                text = f"{text}  # line {line}"
                last = line
            out.append(("    " * depth + text, site))
        if not self.lines:
            out.append(("    pass", head_site))
        return out

    # ---- statements ----
    def body(self) -> None:
        for s in self.fn.decl.body.stmts:
            self.stmt(s)

    def block(self, b: ast.Block) -> None:
        self.depth += 1
        n = len(self.lines)
        for s in b.stmts:
            self.stmt(s)
        if len(self.lines) == n:
            self.emit("pass")
        self.depth -= 1

    def stmt(self, s: ast.Stmt) -> None:
        saved = self.stmt_site
        self.stmt_site = _where(s.pos)
        getattr(self, "stmt_" + type(s).__name__)(s)
        self.stmt_site = saved

    def stmt_VarDecl(self, s: ast.VarDecl) -> None:
        self.emit(f"{self.local[s.sym.unique or s.sym.name]} = {_strip(self.value(s.value))}", s.pos.line)

    def stmt_Assign(self, s: ast.Assign) -> None:
        target, value = s.target, s.value
        line = s.pos.line
        if s.op == "=":
            if isinstance(target, ast.Name):
                if id(s) in self.m.no_wrap:         # a loop counter below its bound: no overflow
                    self.emit(f"{self.assigned_name(target)} += 1", line)
                    return
                self.emit(f"{self.assigned_name(target)} = {_strip(self.value(value))}", line)
            else:
                self.emit(self.store(target, value), line)
            return
        op = s.op[:-1]
        t: IntType = target.ty
        if id(s) in self.m.no_wrap:                 # a loop counter below its bound: no overflow
            self.emit(f"{self.assigned_name(target)} += 1", line)
            return
        vtext, vcanon = self.ex(value)
        if _has_call(value):
            self.emit(f"_t = {_strip(vtext)}", line)
            vtext = "_t"
        if isinstance(target, ast.Name):
            name = self.assigned_name(target)
            text, canon = self.arith(op, t, name, True, vtext, vcanon, value, s.pos)
            self.emit(f"{name} = {_strip(text if canon else wrap_text(text, t))}", line)
            return
        # the value before the place (a call in the place may change a global the value names)
        if vtext != "_t" and (not _simple(vtext) or _has_call(target)):
            self.emit(f"_t = {_strip(vtext)}", line)
            vtext = "_t"
        addr, need_mask = self.address(target)
        if need_mask:
            addr = f"({addr}) & {py_int(M64)}"
        self.emit(f"_p = {_strip(addr)}", line)
        old = self.load_at("_p", target.ty, target.pos, fixed=True)
        text, canon = self.arith(op, t, old, True, vtext, vcanon, value, s.pos)
        self.emit(self.store_at("_p", target.ty, target.pos, text, canon, fixed=True), line)

    def stmt_If(self, s: ast.If, prefix: str = "if") -> None:
        reset = self.capturing_conds.get(id(s.cond))
        if reset:
            # Operands that && / || may skip start as None (not evaluated).
            chain = "None"
            for slot in reversed(reset):
                chain = f"(_c{slot} := {chain})"
            self.emit(f"{prefix} {chain} or {self.cond(s.cond)}:", s.pos.line)
        else:
            self.emit(f"{prefix} {_strip(self.cond(s.cond))}:", s.pos.line)
        self.block(s.then)
        if isinstance(s.orelse, ast.If):
            saved = self.stmt_site
            self.stmt_site = _where(s.orelse.pos)
            self.stmt_If(s.orelse, prefix="elif")
            self.stmt_site = saved
        elif isinstance(s.orelse, ast.Block):
            self.emit("else:")
            self.block(s.orelse)

    def stmt_While(self, s: ast.While) -> None:
        inc = _counter_increment(s)
        if inc is not None:
            self.m.no_wrap.add(id(inc))
        c = s.cond
        text = "True" if c.const is not None and c.const != 0 else _strip(self.cond(c))
        self.emit(f"while {text}:", s.pos.line)
        self.block(s.body)

    def stmt_Break(self, s) -> None:
        self.emit("break", s.pos.line)

    def stmt_Continue(self, s) -> None:
        self.emit("continue", s.pos.line)

    def stmt_Return(self, s: ast.Return) -> None:
        if s.value is None:
            self.emit("return", s.pos.line)
            return
        v = _strip(self.value(s.value))
        if self.gate and s.site is not None:
            slots = self.site_slots.get(s.site)
            record = ""
            if slots:
                record = "_rt.captured = {" + ", ".join(f"{k}: _c{k}" for k in slots) + "}; "
            if s.value.const is not None:
                self.emit(f"{record}_rt.gate_site = {s.site}; return {v}", s.pos.line)
            else:
                self.emit(f"_t = {v}; {record}_rt.gate_site = {s.site}; return _t", s.pos.line)
        else:
            self.emit(f"return {v}", s.pos.line)

    def stmt_ExprStmt(self, s: ast.ExprStmt) -> None:
        e = s.expr
        if isinstance(e, ast.Call):
            self.emit(self.call(e), s.pos.line)
        else:
            self.emit(_strip(self.value(e)), s.pos.line)

    def stmt_Block(self, s: ast.Block) -> None:
        n = len(self.lines)
        for x in s.stmts:
            self.stmt(x)
        if len(self.lines) == n:
            self.emit("pass", s.pos.line)

    # ---- expressions ----
    def ex(self, e: ast.Expr) -> tuple[str, bool]:
        """(text, canonical): an atom-like text and whether it is already in range."""
        if e.const is not None and not isinstance(e.ty, PointerType):
            text, canon = literal(e.const, e.ty), True
        else:
            text, canon = getattr(self, "ex_" + type(e).__name__)(e)
        slot = self.capture_slot.get(id(e))
        if slot is not None:            # a gate guard's operand: record its value
            return f"(_c{slot} := {_strip(text if canon else wrap_text(text, e.ty))})", True
        return text, canon

    def value(self, e: ast.Expr) -> str:
        text, canon = self.ex(e)
        return text if canon else wrap_text(text, e.ty)

    def ring(self, e: ast.Expr) -> str:
        return self.ex(e)[0]

    def cond(self, e: ast.Expr) -> str:
        """A text whose Python truth is the nx condition (ints: non-zero)."""
        if isinstance(e, ast.Binary) and e.op in ("&&", "||") and e.const is None:
            word = "and" if e.op == "&&" else "or"
            return f"({self.cond(e.left)} {word} {self.cond(e.right)})"
        if isinstance(e, ast.Unary) and e.op == "!" and e.const is None:
            return f"(not {self.cond(e.operand)})"
        return self.value(e)

    def as_bool(self, e: ast.Expr) -> str:
        """A Python bool."""
        if isinstance(e.ty, BoolType):
            return self.value(e)
        return f"({self.value(e)} != 0)"

    def name_of(self, e: ast.Name) -> str:
        sym = e.sym
        if sym.kind in ("local", "param"):
            return self.local[sym.unique or sym.name]
        if sym.kind == "global":
            return self.m.global_names[sym.name]
        return self.m.func_names[sym.name]

    def assigned_name(self, e: ast.Name) -> str:
        """The python name of an assignment target (declaring globals `global`)."""
        name = self.name_of(e)
        if e.sym.kind == "global":
            self.globals_assigned.add(name)
        return name

    def ex_Name(self, e: ast.Name):
        return self.name_of(e), True

    def ex_IntLit(self, e):  # pragma: no cover - always const
        return literal(e.const, e.ty), True

    ex_BoolLit = ex_IntLit
    ex_SizeOf = ex_IntLit

    def ex_Unary(self, e: ast.Unary):
        op, x = e.op, e.operand
        if op == "-":
            return f"(-{self.ring(x)})", False
        if op == "~":
            text, canon = self.ex(x)
            if e.ty.signed:
                return f"(~{text})", canon
            if canon:
                return f"({text} ^ {py_int(e.ty.mask)})", True
            return f"(~{text})", False
        if op == "!":
            return f"(not {self.cond(x)})", True
        if op == "*":
            return self.load(e), True
        if op == "&":
            addr, _ = self.address(x)
            if isinstance(x, ast.Unary) and x.op == "*":
                return addr, True                       # &*p is p
            return f"({addr} & {py_int(M64)})", True     # addresses wrap at 64 bits
        raise ValueError(op)

    def ex_Binary(self, e: ast.Binary):
        op = e.op
        if op in ("&&", "||"):
            word = "and" if op == "&&" else "or"
            return f"({self.as_bool(e.left)} {word} {self.as_bool(e.right)})", True
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if op in ("==", "!="):
                raw = self.raw_pointer_compare(e)
                if raw is not None:
                    return raw, True
            return f"({self.value(e.left)} {op} {self.value(e.right)})", True
        if isinstance(e.ty, BoolType):
            return f"({self.value(e.left)} {op} {self.value(e.right)})", True
        lt, lc = self.ex(e.left)
        if op in ("/", "%", ">>"):
            lt = lt if lc else wrap_text(lt, e.left.ty)
            lc = True
        rt, rc = self.ex(e.right)
        return self.arith(op, e.ty, lt, lc, rt, rc, e.right, e.pos)

    def raw_pointer_compare(self, e: ast.Binary) -> str | None:
        """`(p as i64) == 0`, `(p as i64) == (q as i64)`: the cast is one-to-one, compare addresses."""
        def ptr_cast(x):
            return (isinstance(x, ast.Cast) and isinstance(x.expr.ty, PointerType)
                    and isinstance(x.ty, IntType) and x.ty.bits == 64)
        l, r = e.left, e.right
        if id(l) in self.capture_slot or id(r) in self.capture_slot:
            return None
        if ptr_cast(l) and ptr_cast(r):
            return f"({self.value(l.expr)} {e.op} {self.value(r.expr)})"
        if ptr_cast(l) and r.const is not None:
            return f"({self.value(l.expr)} {e.op} {py_int(r.const & M64)})"
        if ptr_cast(r) and l.const is not None:
            return f"({py_int(l.const & M64)} {e.op} {self.value(r.expr)})"
        return None

    def arith(self, op: str, t: IntType, a: str, ac: bool, b: str, bc: bool, bnode: ast.Expr, pos):
        """`a op b` in type t; a and b are texts (canonical when ac / bc). -> (text, canonical).

        For / % >> the caller passes a canonical `a`."""
        w = t.bits
        bconst = bnode.const if bnode is not None and not isinstance(bnode.ty, PointerType) else None
        if op in ("+", "-", "*"):
            return f"({a} {op} {b})", False
        if op == "&":
            canon = (ac and bc) or (bconst is not None and bconst >= 0)
            return f"({a} & {b})", canon
        if op in ("|", "^"):
            return f"({a} {op} {b})", ac and bc
        if op == "<<":
            if bconst is not None:
                k = bconst & (w - 1)
                return (a, ac) if k == 0 else (f"({a} << {k})", False)
            return f"({a} << ({b} & {w - 1}))", False
        if op == ">>":
            if bconst is not None:
                k = bconst & (w - 1)
                return (a, True) if k == 0 else (f"({a} >> {k})", True)
            return f"({a} >> ({b} & {w - 1}))", True
        if op in ("/", "%"):
            if not bc:
                b = wrap_text(b, bnode.ty)
            return self.divide(op, t, a, b, bconst, pos), True
        raise ValueError(op)

    def divide(self, op: str, t: IntType, a: str, b: str, c: int | None, pos) -> str:
        if c is not None and c > 0:
            if not t.signed:
                if c & (c - 1) == 0:
                    k = c.bit_length() - 1
                    return f"({a} >> {k})" if op == "/" else f"({a} & {py_int(c - 1)})"
                return f"({a} {'//' if op == '/' else '%'} {py_int(c)})"
            if c == 1:
                return a if op == "/" else f"({a} and 0)"
            pyop = "//" if op == "/" else "%"
            if _simple(a):
                return f"({a} {pyop} {py_int(c)} if {a} >= 0 else -(-{a} {pyop} {py_int(c)}))"
            return f"(_d {pyop} {py_int(c)} if (_d := {a}) >= 0 else -(-_d {pyop} {py_int(c)}))"
        what = "div" if op == "/" else "rem"
        fn = f"_{what}_{'i' if t.signed else 'u'}{t.bits}"
        site = self.site(pos, what)
        return f"{fn}({_strip(a)}, {_strip(b)}, {site})"

    def ex_Cast(self, e: ast.Cast):
        src, dst = e.expr.ty, e.ty
        if src == dst:
            return self.ex(e.expr)
        if isinstance(dst, BoolType):
            return f"({self.value(e.expr)} != 0)", True
        if isinstance(src, BoolType):
            return f"(1 if {self.value(e.expr)} else 0)", True
        if isinstance(dst, PointerType):
            if isinstance(src, PointerType):
                return self.ex(e.expr)
            if e.expr.const is not None:
                return py_int(e.expr.const & M64), True
            if not src.signed and src.bits <= 64:       # zero-extension: the value is the address
                return self.value(e.expr), True
            if src.bits == 64:
                return f"({self.ring(e.expr)} & {py_int(M64)})", True
            return f"({self.value(e.expr)} & {py_int(M64)})", True
        if isinstance(src, PointerType):                # address -> integer: truncate
            text = self.value(e.expr)
            if dst.bits == 64:
                return (to_signed_text(text, dst) if dst.signed else text), True
            return wrap_text(text, dst), True
        # integer -> integer
        if dst.bits > src.bits or (dst.bits == src.bits and dst.signed == src.signed):
            v = self.value(e.expr)
            if src.signed and not dst.signed:
                return f"({v} & {py_int(dst.mask)})", True
            return v, True                              # same value (extension)
        text, canon = self.ex(e.expr)
        if canon and dst.bits == src.bits and dst.signed and not src.signed:
            return to_signed_text(text, dst), True      # same width, unsigned -> signed
        return wrap_text(text, dst), True               # truncation or same-width sign change

    def ex_Call(self, e: ast.Call):
        return self.call(e), True

    def call(self, e: ast.Call) -> str:
        sym = e.func.sym
        name = self.m.func_names[sym.name]
        if sym.kind == "extern" and sym.name in self.m.f32:
            args = [_strip(self.ring(a)) for a in e.args]
        else:
            args = [_strip(self.value(a)) for a in e.args]
        if sym.kind == "extern" and sym.name in ("sys_mmap", "sys_munmap", "sys_write"):
            args.append(str(self.site(e.pos, sym.name[4:])))
        return f"{name}({', '.join(args)})"

    def ex_Index(self, e: ast.Index):
        return self.load(e), True

    def ex_FieldAccess(self, e: ast.FieldAccess):
        return self.load(e), True

    # ---- memory ----
    def address(self, place: ast.Expr) -> tuple[str, bool]:
        """(address text, needs a 64-bit mask) of a memory place."""
        if isinstance(place, ast.Index):
            base = self.value(place.base)
            size = _size(place.ty)
            idx = place.index
            if idx.const is not None:
                off = idx.const * size
                if off == 0:
                    return base, False
                return (f"({base} + {py_int(off)})" if off > 0 else f"({base} - {py_int(-off)})"), \
                    off < 0
            # A 64-bit ring index (t * n + d, unwrapped) or a u64 index can take the
            # address out of [0, 2^64): mask it (C's pointer arithmetic wraps). A
            # canonical i64 index only can when |i| >= 2^61 (pointer overflow,
            # undefined in C); that ends in describe_access's wrap-around message.
            i, canon = self.ex(idx)
            mask = idx.ty.bits == 64 and (not canon or not idx.ty.signed)
            if not canon and idx.ty.bits < 64:
                i = wrap_text(i, idx.ty)
            return (f"({base} + {i})" if size == 1 else f"({base} + {i} * {size})"), mask
        if isinstance(place, ast.FieldAccess):
            st = place.base.ty.target if place.through_pointer else place.base.ty
            off = st.field(place.name).offset
            if place.through_pointer:
                base, mask = self.value(place.base), False
            else:
                base, mask = self.address(place.base)
            return (f"({base} + {off})" if off else base), mask
        if isinstance(place, ast.Unary) and place.op == "*":
            return self.value(place.operand), False
        raise TypeError(f"not a memory place: {type(place).__name__}")

    def load(self, place: ast.Expr) -> str:
        addr, mask = self.address(place)
        if mask:
            addr = f"{addr} & {py_int(M64)}"
        return self.load_at(_strip(addr), place.ty, place.pos)

    def load_at(self, addr: str, t: Type, pos, fixed: bool = False) -> str:
        view, shift = _view(t)
        var, check, idx, size, site = self.access(addr, t, pos, "r", shift, fixed)
        if isinstance(t, BoolType):     # a byte holding 2 (written as u8) reads as true
            return f"(({view}[{idx}] if {check} & {size} else _ld({var}, {site})) != 0)"
        return f"({view}[{idx}] if {check} & {size} else _ld({var}, {site}))"

    def access(self, addr: str, t: Type, pos, mode: str, shift: int, fixed: bool):
        """The pieces of a checked access: (address variable, shadow check,
        element index, access size, fault site)."""
        site = self.site(pos, mode, type_key(t))
        var = addr if fixed else "_a"
        check = f"_SH[{addr}]" if fixed else f"_SH[(_a := {addr})]"
        idx = var if shift == 0 else f"{var} >> {shift}"
        return var, check, idx, 1 << shift, site

    def store(self, place: ast.Expr, value: ast.Expr) -> str:
        text, canon = self.ex(value)
        addr, mask = self.address(place)
        if mask:
            addr = f"{addr} & {py_int(M64)}"
        return self.store_at(_strip(addr), place.ty, place.pos, text, canon)

    def store_at(self, addr: str, t: Type, pos, text: str, canon: bool, fixed: bool = False) -> str:
        if isinstance(t, IntType) and not canon:
            text = f"{text} & {py_int(t.mask)}"
            view, shift = _view(t, canonical=False)
        else:
            view, shift = _view(t)
        var, check, idx, size, site = self.access(addr, t, pos, "w", shift, fixed)
        return f"{view}[{idx} if {check} & {size} else _st({var}, {site})] = {_strip(text)}"


def _simple(text: str) -> bool:
    return re.fullmatch(r"-?[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+|-?0x[0-9A-Fa-f]+", text) is not None


def _size(t: Type) -> int:
    return t.size


def _counter_increment(loop: ast.While):
    """The `i = i + 1` of `while i < n { ... i = i + 1 ... }` that cannot overflow, if any.

    When the condition has a conjunct `i < X` (i a local or parameter), and the
    body assigns i exactly once, in a statement at its top level, `i + 1`
    happens only while i < X <= MAX: it never wraps.
    """
    counters = []

    def conjuncts(c):
        if isinstance(c, ast.Binary) and c.op == "&&":
            yield from conjuncts(c.left)
            yield from conjuncts(c.right)
        else:
            yield c
    for c in conjuncts(loop.cond):
        if isinstance(c, ast.Binary) and c.op in ("<", ">"):
            x = c.left if c.op == "<" else c.right
            if isinstance(x, ast.Name) and x.sym is not None and x.sym.kind in ("local", "param") \
                    and isinstance(x.ty, IntType):
                counters.append(x.sym)
    for sym in counters:
        assigns = list(_assignments(loop.body, sym))
        if len(assigns) != 1:
            continue
        a = assigns[0]
        if a not in loop.body.stmts:
            continue
        if a.op == "+=" and a.value.const == 1:
            return a
        v = a.value
        if a.op == "=" and isinstance(v, ast.Binary) and v.op == "+":
            one_side = [x for x in (v.left, v.right) if x.const == 1]
            other = [x for x in (v.left, v.right) if isinstance(x, ast.Name) and x.sym is sym]
            if one_side and other:
                return a
    return None


def _assignments(stmt, sym):
    """Every statement that assigns the local `sym` inside stmt."""
    if isinstance(stmt, ast.Block):
        for x in stmt.stmts:
            yield from _assignments(x, sym)
    elif isinstance(stmt, ast.Assign):
        if isinstance(stmt.target, ast.Name) and stmt.target.sym is sym:
            yield stmt
    elif isinstance(stmt, ast.If):
        yield from _assignments(stmt.then, sym)
        if stmt.orelse is not None:
            yield from _assignments(stmt.orelse, sym)
    elif isinstance(stmt, ast.While):
        yield from _assignments(stmt.body, sym)


def _short_circuits(e) -> bool:
    if isinstance(e, ast.Binary):
        return e.op in ("&&", "||") or _short_circuits(e.left) or _short_circuits(e.right)
    if isinstance(e, ast.Unary):
        return _short_circuits(e.operand)
    if isinstance(e, ast.Cast):
        return _short_circuits(e.expr)
    if isinstance(e, ast.Call):
        return any(_short_circuits(a) for a in e.args)
    if isinstance(e, ast.Index):
        return _short_circuits(e.base) or _short_circuits(e.index)
    if isinstance(e, ast.FieldAccess):
        return _short_circuits(e.base)
    return False


def _where(pos) -> tuple:
    return (pos.file.path, pos.line, pos.col)


class ModuleEmitter:
    def __init__(self, program: Program):
        self.program = program
        self.sites: list[tuple] = []          # (file index, line, col, kind, type)
        self.files: list[str] = []
        self._files: dict[str, int] = {}
        self._site_index: dict[tuple, int] = {}
        self.f32 = f32_primitives()
        self.no_wrap: set[int] = set()           # ids of `i = i + 1` that cannot overflow
        self.captures: dict[int, list[CapturedOperand]] = {}
        namer = _Namer(set())
        self.func_names: dict[str, str] = {}
        for sym in program.externs:
            self.func_names[sym.name] = namer.pick(sym.name)
        for fn in program.functions:
            self.func_names[fn.decl.name] = namer.pick(fn.decl.name)
        self.global_names: dict[str, str] = {}
        for sym, _ in program.globals:
            self.global_names[sym.name] = namer.pick(sym.name)
        self.module_names = set(namer.taken)

    def site(self, pos, kind: str, arg=None) -> int:
        f = self._files.get(pos.file.path)
        if f is None:
            f = self._files[pos.file.path] = len(self.files)
            self.files.append(pos.file.path)
        key = (f, pos.line, pos.col, kind, arg)
        i = self._site_index.get(key)
        if i is None:
            i = len(self.sites)
            self.sites.append(key)
            self._site_index[key] = i
        return i




@deep    # deeply nested programs recurse deeply (nxc/deep.py)
def emit_py(program: Program) -> EmittedPy:
    m = ModuleEmitter(program)
    rendered = []
    for fn in program.functions:
        fe = FunctionEmitter(m, fn, gate=fn is program.entry)
        fe.body()
        rendered.append((fn, fe.render()))
    root = program.graph.root.source.path
    externs = []
    for sym in program.externs:
        py = m.func_names[sym.name]
        if sym.name in m.f32:
            externs.append((py, f"_nx_f32.{sym.name}"))
        else:
            externs.append((py, f"_rt.{sym.name}"))
    globals_ = []
    for sym, value in program.globals:
        init = "0" if isinstance(sym.type, PointerType) else literal(value, sym.type)
        globals_.append((m.global_names[sym.name], init, f"{sym.type}"))
    sites_text = "(\n" + "".join(f"    {s!r},\n" for s in m.sites) + ")"
    files_text = "(\n" + "".join(f"    {f!r},\n" for f in m.files) + ")"
    marker = "#@@NX_FUNCTIONS@@"
    head = template("module.py.j2").render(version=__version__, root=comment_text(os.path.basename(root)), externs=externs,
                              globals=globals_, sites=sites_text, files=files_text, functions=marker,
                              entry=m.func_names["main"] if program.entry is not None else None)
    before, after = head.split(marker)
    first = before.count("\n") + 1          # python line number of the first function line
    body: list[str] = []
    line_pos: dict[int, tuple] = {}
    for fn, fl in rendered:
        if body:
            body += ["", ""]
        for text, site in fl:
            if site is not None:
                line_pos[first + len(body)] = site
            body.append(text)
    text = before + "\n".join(body) + after
    filename = f"<nxc-py {comment_text(root)}>"
    return EmittedPy(text, filename, m.sites, m.files, line_pos, dict(m.func_names), list(program.functions),
                     m.func_names["main"] if program.entry is not None else None, m.captures)
