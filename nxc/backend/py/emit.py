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
    store:  _VQ[_a >> 3 if _SH[(_a := ADDR)] & 128 else _st(_a, SITE)] = VALUE
where _SH is the shadow of runtime/nx_memory.py (bit `size` set = a load
of that size may start here, bit `size << 4` = a store) and _ld / _st handle 64-bit wrap-around and
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
import os
from dataclasses import dataclass, field

from nxc import __version__
from nxc.syntax import ast
from nxc.check.program import Function, Program
from nxc.check.externs import f32_primitives, sited_externs
from nxc.lower.guards import CAPTURE_SLOTS, CapturedOperand
from nxc.lower.plan import plan_program
from nxc.backend.emitter import CapturesMixin, FunctionEmitterBase
from nxc.backend.py.arith import ArithEmitter
from nxc.backend.py.memory import MemoryEmitter
from nxc.backend.py.values import M64, literal, py_int, simple, strip, type_key, wrap_text  # noqa: F401 - type_key: py/backend.py imports it from here
from nxc.deep import deep
from nxc.backend.escape import comment_text
from nxc.backend.skeleton import template
from nxc.check.types import BoolType, IntType, PointerType

# The externs whose memory faults are located at the call (runtime/nx_memory.py),
# as checked C's nxrt_chk_* wrappers are (runtime/nx_externs.py's SITED_EXTERNS).
SITED_EXTERNS = sited_externs()

# Names the generated code uses for itself; nx names never take them.
_HELPERS = {"_SH", "_ld", "_st", "_a", "_p", "_t", "_r", "_d", "_rt", "_SITES", "_FILES", "_nx_f32", "_nx_mem",
            "_nx_runtime", "_nx_module_main", "_sys"} | {f"_c{k}" for k in range(CAPTURE_SLOTS)} | {f"_V{c}" for c in "bBhHiIqQz"} \
    | {f"_{op}_{s}{b}" for op in ("div", "rem") for s in "iu" for b in (8, 16, 32, 64)}
RESERVED = set(keyword.kwlist) | set(getattr(keyword, "softkwlist", ())) | _HELPERS | {"print"}

@dataclass
class EmittedPy(CapturesMixin):
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


class FunctionEmitter(ArithEmitter, MemoryEmitter, FunctionEmitterBase):
    """Writes one function: statements as lines, expressions as text."""

    def __init__(self, module: "ModuleEmitter", fn: Function, gate: bool):
        super().__init__(module.program, fn, gate, module.plan)
        self.m = module
        self.lines: list[tuple[int, str, int | None, tuple | None]] = []  # (depth, text, nx line, where)
        self.globals_assigned: set[str] = set()
        namer = _Namer(module.module_names)
        # Keyed by the checker's unique name of each local.
        self.local: dict[str, str] = {}
        for p in fn.params:
            self.local[p.unique or p.name] = namer.pick(p.unique or p.name)
        for s in fn.locals:
            self.local[s.unique or s.name] = namer.pick(s.unique or s.name)
        self.stmt_site: tuple | None = None
        self.path = fn.decl.pos.file.path
        # Gate captures (the plan: nxc/lower/plan.py): each recorded operand is
        # assigned to a local `_c<slot>` as it is evaluated; a guard with && or
        # || first sets its slots to None (not evaluated). The return it guards
        # hands them to the runtime (`_rt.captured`).

    # ---- output ----
    def emit(self, text: str, line: int | None = None) -> None:
        self.lines.append((self.depth, text, line, self.stmt_site))

    def empty_block(self) -> None:
        self.emit("pass")

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
            out.append((self.indentation(depth) + text, site))
        if not self.lines:
            out.append(("    pass", head_site))
        return out

    # ---- statements ----
    def stmt(self, s: ast.Stmt) -> None:
        saved = self.stmt_site
        self.stmt_site = _where(s.pos)
        self.visit(s)
        self.stmt_site = saved

    def visit_VarDecl(self, s: ast.VarDecl) -> None:
        self.emit(f"{self.local[self.sym(s).unique or self.sym(s).name]} = {strip(self.value(s.value))}", s.pos.line)

    def visit_Assign(self, s: ast.Assign) -> None:
        target, value = s.target, s.value
        line = s.pos.line
        if s.op == "=":
            if isinstance(target, ast.Name):
                if s in self.fplan.no_wrap:         # a loop counter below its bound: no overflow
                    self.emit(f"{self.assigned_name(target)} += 1", line)
                    return
                self.emit(f"{self.assigned_name(target)} = {strip(self.value(value))}", line)
            else:
                self.emit(self.store(target, value), line)
            return
        op = s.op[:-1]
        t: IntType = self.ty(target)
        if s in self.fplan.no_wrap:                 # a loop counter below its bound: no overflow
            self.emit(f"{self.assigned_name(target)} += 1", line)
            return
        vtext, vcanon = self.ex(value)
        if self.has_call(value):
            self.emit(f"_t = {strip(vtext)}", line)
            vtext = "_t"
        if isinstance(target, ast.Name):
            name = self.assigned_name(target)
            text, canon = self.arith(op, t, name, True, vtext, vcanon, value, s.pos)
            self.emit(f"{name} = {strip(text if canon else wrap_text(text, t))}", line)
            return
        # the value before the place (a call in the place may change a global the value names)
        if vtext != "_t" and (not simple(vtext) or self.has_call(target)):
            self.emit(f"_t = {strip(vtext)}", line)
            vtext = "_t"
        addr, need_mask = self.address(target)
        if need_mask:
            addr = f"({addr}) & {py_int(M64)}"
        self.emit(f"_p = {strip(addr)}", line)
        old = self.load_at("_p", self.ty(target), target.pos, fixed=True)
        text, canon = self.arith(op, t, old, True, vtext, vcanon, value, s.pos)
        self.emit(self.store_at("_p", self.ty(target), target.pos, text, canon, fixed=True), line)

    def visit_If(self, s: ast.If, prefix: str = "if") -> None:
        guard = self.fplan.guards.get(s.cond) if self.gate else None
        if guard is not None and guard.short_circuits:
            reset = guard.slots
            # Operands that && / || may skip start as None (not evaluated).
            chain = "None"
            for slot in reversed(reset):
                chain = f"(_c{slot} := {chain})"
            self.emit(f"{prefix} {chain} or {self.cond(s.cond)}:", s.pos.line)
        else:
            self.emit(f"{prefix} {strip(self.cond(s.cond))}:", s.pos.line)
        self.block(s.then)
        if isinstance(s.orelse, ast.If):
            saved = self.stmt_site
            self.stmt_site = _where(s.orelse.pos)
            self.visit_If(s.orelse, prefix="elif")
            self.stmt_site = saved
        elif isinstance(s.orelse, ast.Block):
            self.emit("else:")
            self.block(s.orelse)

    def visit_While(self, s: ast.While) -> None:
        c = s.cond
        text = "True" if self.const(c) is not None and self.const(c) != 0 else strip(self.cond(c))
        self.emit(f"while {text}:", s.pos.line)
        self.block(s.body)

    def visit_Break(self, s) -> None:
        self.emit("break", s.pos.line)

    def visit_Continue(self, s) -> None:
        self.emit("continue", s.pos.line)

    def visit_Return(self, s: ast.Return) -> None:
        if s.value is None:
            self.emit("return", s.pos.line)
            return
        v = strip(self.value(s.value))
        if self.gate and self.site_of(s) is not None:
            slots = self.fplan.site_slots.get(self.site_of(s))
            record = ""
            if slots:
                record = "_rt.captured = {" + ", ".join(f"{k}: _c{k}" for k in slots) + "}; "
            if self.const(s.value) is not None:
                self.emit(f"{record}_rt.gate_site = {self.site_of(s)}; return {v}", s.pos.line)
            else:
                self.emit(f"_t = {v}; {record}_rt.gate_site = {self.site_of(s)}; return _t", s.pos.line)
        else:
            self.emit(f"return {v}", s.pos.line)

    def visit_ExprStmt(self, s: ast.ExprStmt) -> None:
        e = s.expr
        if isinstance(e, ast.Call):
            self.emit(self.call(e), s.pos.line)
        else:
            self.emit(strip(self.value(e)), s.pos.line)

    def visit_Block(self, s: ast.Block) -> None:
        n = len(self.lines)
        for x in s.stmts:
            self.stmt(x)
        if len(self.lines) == n:
            self.emit("pass", s.pos.line)

    # ---- expressions ----
    def ex(self, e: ast.Expr) -> tuple[str, bool]:
        """(text, canonical): an atom-like text and whether it is already in range."""
        if self.const(e) is not None and not isinstance(self.ty(e), PointerType):
            text, canon = literal(self.const(e), self.ty(e)), True
        else:
            text, canon = self.visit(e)
        slot = self.capture_slot.get(e)
        if slot is not None:            # a gate guard's operand: record its value
            return f"(_c{slot} := {strip(text if canon else wrap_text(text, self.ty(e)))})", True
        return text, canon

    def value(self, e: ast.Expr) -> str:
        text, canon = self.ex(e)
        return text if canon else wrap_text(text, self.ty(e))

    def ring(self, e: ast.Expr) -> str:
        return self.ex(e)[0]

    def cond(self, e: ast.Expr) -> str:
        """A text whose Python truth is the nx condition (ints: non-zero)."""
        if isinstance(e, ast.Binary) and e.op in ("&&", "||") and self.const(e) is None:
            word = "and" if e.op == "&&" else "or"
            return f"({self.cond(e.left)} {word} {self.cond(e.right)})"
        if isinstance(e, ast.Unary) and e.op == "!" and self.const(e) is None:
            return f"(not {self.cond(e.operand)})"
        return self.value(e)

    def as_bool(self, e: ast.Expr) -> str:
        """A Python bool."""
        if isinstance(self.ty(e), BoolType):
            return self.value(e)
        return f"({self.value(e)} != 0)"

    def name_of(self, e: ast.Name) -> str:
        sym = self.sym(e)
        if sym.kind in ("local", "param"):
            return self.local[sym.unique or sym.name]
        if sym.kind == "global":
            return self.m.global_names[sym.name]
        return self.m.func_names[sym.name]

    def assigned_name(self, e: ast.Name) -> str:
        """The python name of an assignment target (declaring globals `global`)."""
        name = self.name_of(e)
        if self.sym(e).kind == "global":
            self.globals_assigned.add(name)
        return name

    def visit_Name(self, e: ast.Name):
        return self.name_of(e), True

    def visit_IntLit(self, e):  # pragma: no cover - always const
        return literal(self.const(e), self.ty(e)), True

    visit_BoolLit = visit_IntLit
    visit_SizeOf = visit_IntLit

    def visit_Unary(self, e: ast.Unary):
        op, x = e.op, e.operand
        if op == "-":
            return f"(-{self.ring(x)})", False
        if op == "~":
            text, canon = self.ex(x)
            if self.ty(e).signed:
                return f"(~{text})", canon
            if canon:
                return f"({text} ^ {py_int(self.ty(e).mask)})", True
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

    def visit_Binary(self, e: ast.Binary):
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
        if isinstance(self.ty(e), BoolType):
            return f"({self.value(e.left)} {op} {self.value(e.right)})", True
        lt, lc = self.ex(e.left)
        if op in ("/", "%", ">>"):
            lt = lt if lc else wrap_text(lt, self.ty(e.left))
            lc = True
        rt, rc = self.ex(e.right)
        return self.arith(op, self.ty(e), lt, lc, rt, rc, e.right, e.pos)

    def visit_Call(self, e: ast.Call):
        return self.call(e), True

    def call(self, e: ast.Call) -> str:
        sym = self.sym(e.func)
        name = self.m.func_names[sym.name]
        if sym.kind == "extern" and sym.name in self.m.f32:
            args = [strip(self.ring(a)) for a in e.args]
        else:
            args = [strip(self.value(a)) for a in e.args]
        if sym.kind == "extern" and sym.name in SITED_EXTERNS:
            args.append(str(self.site(e.pos, sym.name.removeprefix("sys_"))))
        return f"{name}({', '.join(args)})"

    def visit_Index(self, e: ast.Index):
        return self.load(e), True

    def visit_FieldAccess(self, e: ast.FieldAccess):
        return self.load(e), True

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
        self.plan = plan_program(program)       # the lowering, before any function is written
        self.captures: dict[int, list[CapturedOperand]] = dict(self.plan.captures)
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
