"""The checker: a parsed module graph in, a checked `Program` out.

It resolves names across the shared namespace of the whole import graph,
resolves types and struct layouts, evaluates constants, and types every
expression (filling `expr.ty`, `expr.const`, `name.sym`). Both backends start
from the `Program` it returns and trust it: anything wrong is reported here,
with a position, and code generation never runs on a broken program.

Order of work: declarations of every module -> types and struct layouts ->
constants (lazily, so order of declaration does not matter) -> function
signatures -> globals -> bodies.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from nxc.syntax import ast
from nxc.diagnostics import Diagnostics, Pos
from nxc.syntax.loader import ModuleGraph
from nxc.check.types import (BOOL, BUILTIN_TYPES, I64, VOID, BoolType, FuncType, IntType, PointerType,
                    StructField, StructType, Type, layout_struct)

from nxc.check.externs import externs, f32_primitives
from nxc.check.suggest import suggest_undefined

# --soft-f32 (check_program(..., soft_f32=True)): the bundled module that holds
# the float32 primitives written in .nx, and the name of each one's twin there.
SOFT_F32_MODULE = "nx_f32_soft.nx"


def soft_f32_name(primitive: str) -> str:
    """nx_f32_add -> nx_soft_f32_add, nx_i32_to_f32 -> nx_soft_i32_to_f32."""
    return "nx_soft_" + primitive[len("nx_"):]


# ---------------------------------------------------------------- results
@dataclass(eq=False)
class Symbol:
    kind: str               # local | param | global | const | func | extern
    name: str
    type: Type | None
    pos: Pos
    mutable: bool = False
    value: int | None = None        # consts: the evaluated value
    unique: str = ""                # locals: a name unique in the function
    used: bool = False
    decl: object = None


@dataclass(eq=False)
class Function:
    sym: Symbol
    decl: ast.FuncDecl
    params: list[Symbol]
    ret: Type               # VOID when the function gives no value
    module: ast.Module
    locals: list[Symbol] = field(default_factory=list)


@dataclass(eq=False)
class GateReturn:
    """One `return` of the root module's gate, so a runner can name it."""
    site: int
    node: ast.Return
    guard: ast.Expr | None          # the `if` condition that led to it, if any


@dataclass(eq=False)
class Program:
    graph: ModuleGraph
    structs: list[StructType]       # embedded structs before their users
    consts: list[Symbol]
    globals: list[tuple[Symbol, int]]
    functions: list[Function]       # every function with a body, minus imported gates
    externs: list[Symbol]
    entry: Function | None          # the root module's `main`, if it has one
    gate_returns: list[GateReturn]
    warnings: list = field(default_factory=list)


# ---------------------------------------------------------------- helpers
def _suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def declared_names(fn: ast.FuncDecl) -> set[str]:
    """Names of the parameters and every local declared anywhere in `fn`."""
    names = {p.name for p in fn.params}
    stack = [fn.body] if fn.body is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Block):
            stack.extend(node.stmts)
        elif isinstance(node, ast.VarDecl):
            names.add(node.name)
        elif isinstance(node, ast.If):
            stack.append(node.then)
            if node.orelse is not None:
                stack.append(node.orelse)
        elif isinstance(node, ast.While):
            stack.append(node.body)
    return names


def is_literal_expr(e: ast.Expr) -> bool:
    """An expression of integer literals only: it takes its type from context.

    Remembered per node: the checker asks at every level of an expression,
    which made a chain of n operators cost n^2 (4,000 unary minuses: 5 s).
    """
    if isinstance(e, ast.IntLit):
        return True
    known = _LITERAL.get(id(e))
    if known is not None and known[0] is e:
        return known[1]
    if isinstance(e, ast.Unary) and e.op in ("-", "~"):
        result = is_literal_expr(e.operand)
    elif isinstance(e, ast.Binary) and e.op in _ARITH_OPS:
        result = is_literal_expr(e.left) and is_literal_expr(e.right)
    else:
        return False
    if len(_LITERAL) > 1 << 16:
        _LITERAL.clear()
    _LITERAL[id(e)] = (e, result)       # the node too: its id is not reused while it is here
    return result


_LITERAL: dict[int, tuple[object, bool]] = {}


_ARITH_OPS = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"}
_NOT_VALUES = (StructType, FuncType)      # types an expression has but a value cannot
_CMP_OPS = {"==", "!=", "<", "<=", ">", ">="}
_LOGIC_OPS = {"&&", "||"}


def fold_binary(op: str, ty: IntType, a: int, b: int) -> int | None:
    """The value of `a op b` in type `ty` under the run-time rules; None for x/0."""
    w = ty.bits
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op in ("/", "%"):
        if b == 0:
            return None
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        r = q if op == "/" else a - q * b
    elif op == "&":
        r = a & b
    elif op == "|":
        r = a | b
    elif op == "^":
        r = a ^ b
    elif op == "<<":
        r = a << (b & (w - 1))
    elif op == ">>":
        r = a >> (b & (w - 1))   # a is already signed or unsigned per ty
    else:
        raise ValueError(op)
    return ty.wrap(r)


def fold_compare(op: str, a: int, b: int) -> bool:
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b,
            ">": a > b, ">=": a >= b}[op]


def cast_allowed(src: Type, dst: Type) -> bool:
    if src == dst:
        return True
    scalar = (IntType, BoolType)
    if isinstance(src, scalar) and isinstance(dst, scalar):
        return True
    if isinstance(src, (IntType, PointerType)) and isinstance(dst, (IntType, PointerType)):
        return True
    return False


def fold_cast(value: int, dst: Type) -> int | None:
    if isinstance(dst, IntType):
        return dst.wrap(int(value))
    if isinstance(dst, BoolType):
        return int(value != 0)
    return None


class _Scope:
    def __init__(self, parent: "_Scope | None"):
        self.parent = parent
        self.names: dict[str, Symbol] = {}

    def lookup(self, name: str) -> Symbol | None:
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def all_names(self):
        s = self
        while s is not None:
            yield from s.names
            s = s.parent


# ---------------------------------------------------------------- checker
class Checker:
    def __init__(self, graph: ModuleGraph, diags: Diagnostics, soft_f32: bool = False):
        self.graph = graph
        self.diags = diags
        self.soft_f32 = soft_f32
        self.top: dict[str, Symbol] = {}          # the shared namespace
        self.aliases: dict[str, ast.TypeAlias] = {}
        self.alias_types: dict[str, Type] = {}
        self.structs: dict[str, StructType] = {}
        self.struct_decls: dict[str, ast.StructDecl] = {}
        self.struct_order: list[StructType] = []
        self.functions: list[Function] = []
        self.externs: list[Symbol] = []
        self.gate_returns: list[GateReturn] = []
        self._resolving: set[str] = set()
        self._evaluating: set[str] = set()
        # per-function state
        self.func: Function | None = None
        self.loop_depth = 0
        self._declared: set[str] = set()      # check_body: every local and parameter name
        self._taken: set[str] = set()         # check_body: unique names given so far
        # expression class -> its expr_<Class> method (check_expr's dispatch)
        self._expr_methods: dict[type, object] = {}

    # ---- entry point ----
    def check(self) -> Program:
        self.collect_declarations()
        self.diags.raise_if_errors()
        for st in list(self.structs.values()):
            self.complete_struct(st, self.struct_decls[st.name].pos)
        for name in self.aliases:
            self.alias_type(name, self.aliases[name].pos)
        funcs = self.function_signatures()
        const_syms = [s for s in self.top.values() if s.kind == "const"]
        for sym in const_syms:
            self.const_value(sym, sym.pos)
        globals_ = self.check_globals()
        self.diags.raise_if_errors()
        entry = None
        for fn in funcs:
            is_entry = fn.module is self.graph.root and fn.decl.name == "main"
            self.check_body(fn, is_entry)
            if fn.decl.name != "main" or fn.module is self.graph.root:
                self.functions.append(fn)
            if is_entry:
                entry = fn
        self.diags.raise_if_errors()
        return Program(self.graph, self.struct_order, const_syms, globals_, self.functions,
                       self.externs, entry, self.gate_returns, self.diags.warnings)

    # ---- declarations ----
    def collect_declarations(self) -> None:
        for module in self.graph.modules:
            for item in module.items:
                if isinstance(item, ast.Import):
                    continue
                if isinstance(item, ast.FuncDecl) and item.name == "main" and not item.is_extern:
                    continue   # every module may have its own gate; see function_signatures
                if isinstance(item, ast.TypeAlias) and item.name in BUILTIN_TYPES \
                        or isinstance(item, ast.StructDecl) and item.name in BUILTIN_TYPES:
                    self.diags.error(item.pos, f"'{item.name}' is a built-in type and cannot be redefined")
                    continue
                self.declare_top(item, module)

    def declare_top(self, item, module) -> None:
        name = item.name
        kind = {ast.ConstDecl: "const", ast.GlobalDecl: "global", ast.TypeAlias: "type",
                ast.StructDecl: "struct"}.get(type(item))
        if kind is None:
            kind = "extern" if item.is_extern else "func"
        prev = self.top.get(name)
        if prev is not None:
            if kind == "extern" and prev.kind == "extern" and _same_signature(prev.decl, item):
                return     # the same extern declared by two modules: one function
            self.diags.error(item.pos, f"'{name}' is defined twice",
                             [Diagnostics.note(prev.pos, f"the other definition of '{name}' is here")])
            return
        sym = Symbol(kind, name, None, item.pos, decl=item, mutable=(kind == "global"))
        sym.module = module
        self.top[name] = sym
        if kind == "type":
            self.aliases[name] = item
        elif kind == "struct":
            st = StructType(name, pos=item.pos)
            self.structs[name] = st
            self.struct_decls[name] = item

    # ---- types ----
    def resolve_type(self, texpr, allow_void: bool = False) -> Type | None:
        if isinstance(texpr, ast.TypePointer):
            target = self.resolve_type(texpr.target, allow_void=True)
            return None if target is None else PointerType(target)
        name = texpr.name
        if name in BUILTIN_TYPES:
            t = BUILTIN_TYPES[name]
            if t is VOID and not allow_void:
                self.diags.error(texpr.pos, "'void' is only allowed behind a pointer ('*void')")
                return None
            return t
        if name in self.structs:
            return self.structs[name]
        if name in self.aliases:
            t = self.alias_type(name, texpr.pos)
            if t is VOID and not allow_void:
                self.diags.error(texpr.pos, "'void' is only allowed behind a pointer ('*void')")
                return None
            return t
        sym = self.top.get(name)
        if sym is not None:
            self.diags.error(texpr.pos, f"'{name}' is a {_kind_word(sym.kind)}, not a type")
            return None
        known = list(BUILTIN_TYPES) + list(self.structs) + list(self.aliases)
        self.diags.error(texpr.pos, f"unknown type '{name}'" + _suggest(name, known))
        return None

    def alias_type(self, name: str, at: Pos) -> Type | None:
        if name in self.alias_types:
            return self.alias_types[name]
        if name in self._resolving:
            self.diags.error(self.aliases[name].pos, f"type alias '{name}' refers to itself")
            self.alias_types[name] = None
            return None
        self._resolving.add(name)
        t = self.resolve_type(self.aliases[name].target, allow_void=True)
        self._resolving.discard(name)
        self.alias_types[name] = t
        return t

    def complete_struct(self, st: StructType, at: Pos) -> bool:
        if st.complete:
            return True
        decl = self.struct_decls[st.name]
        key = "struct " + st.name
        if key in self._resolving:
            self.diags.error(decl.pos, f"struct '{st.name}' contains itself; use a pointer (*{st.name}) instead")
            return False
        self._resolving.add(key)
        seen: dict[str, ast.FieldDecl] = {}
        fields = []
        for f in decl.fields:
            if f.name in seen:
                self.diags.error(f.pos, f"struct '{st.name}' has two fields named '{f.name}'",
                                 [Diagnostics.note(seen[f.name].pos, "the first one is here")])
                continue
            seen[f.name] = f
            t = self.resolve_type(f.type_expr)
            if t is None:
                continue
            if isinstance(t, StructType) and not self.complete_struct(t, f.pos):
                continue
            fields.append(StructField(f.name, t, 0, f.pos))
        if not decl.fields:
            self.diags.error(decl.pos, f"struct '{st.name}' has no fields")
        st.fields = fields
        layout_struct(st)
        self._resolving.discard(key)
        self.struct_order.append(st)
        return True

    # ---- constants ----
    def const_value(self, sym: Symbol, at: Pos) -> int | None:
        if sym.type is not None or sym.name in self._evaluating:
            if sym.name in self._evaluating:
                self.diags.error(at, f"constant '{sym.name}' depends on itself")
                sym.type = I64
            return sym.value
        self._evaluating.add(sym.name)
        decl: ast.ConstDecl = sym.decl
        want = self.resolve_type(decl.type_expr) if decl.type_expr is not None else None
        saved = (self.func, self.scope if hasattr(self, "scope") else None)
        self.func, self.scope = None, _Scope(None)
        t = self.check_value(decl.value, want)
        self.func, self.scope = saved
        if want is not None and t is not None:
            self.coerce(decl.value, want, "the constant's value")
        ty = want or t
        if ty is not None and not isinstance(ty, (IntType, BoolType)):
            self.diags.error(decl.pos, f"constant '{sym.name}' must have an integer or bool type, not {ty}")
        elif t is not None and decl.value.const is None:
            self.diags.error(decl.value.pos, f"the value of constant '{sym.name}' is not a constant expression")
        sym.type = ty or I64
        sym.value = decl.value.const if decl.value.const is not None else 0
        self._evaluating.discard(sym.name)
        return sym.value

    # ---- functions and globals ----
    def function_signatures(self) -> list[Function]:
        funcs = []
        for module in self.graph.modules:
            for item in module.items:
                if not isinstance(item, ast.FuncDecl):
                    continue
                params = []
                names: dict[str, ast.Param] = {}
                for p in item.params:
                    t = self.resolve_type(p.type_expr)
                    if p.name in names:
                        self.diags.error(p.pos, f"parameter '{p.name}' appears twice",
                                         [Diagnostics.note(names[p.name].pos, "the first one is here")])
                    names[p.name] = p
                    if isinstance(t, StructType):
                        self.diags.error(p.type_expr.pos, f"parameter '{p.name}' has struct type {t}: structs are passed by pointer (*{t})")
                        t = None
                    params.append(Symbol("param", p.name, t, p.pos, mutable=True, unique=p.name))
                ret = VOID if item.ret is None else self.resolve_type(item.ret)
                if isinstance(ret, StructType):
                    self.diags.error(item.ret.pos, f"function '{item.name}' returns struct {ret} by value; return a pointer (*{ret})")
                    ret = None
                ftype = FuncType(tuple(p.type for p in params), ret)
                if item.name == "main" and not item.is_extern:
                    if item.params or ret != I64:
                        self.diags.error(item.pos, "a module's gate must be declared 'func main() -> i64'")
                    sym = Symbol("func", "main", ftype, item.pos, decl=item)
                else:
                    sym = self.top.get(item.name)
                    if sym is None or sym.decl is not item:
                        if sym is not None and sym.kind == "extern" and item.is_extern:
                            continue            # an identical extern seen before
                        continue                # a duplicate, already reported
                    sym.type = ftype
                if item.is_extern:
                    self.check_extern(item, ftype)
                    self.externs.append(sym)
                    continue
                funcs.append(Function(sym, item, params, ret, module))
        return funcs

    def check_extern(self, item: ast.FuncDecl, ftype: FuncType) -> None:
        EXTERNS = externs()
        spec = EXTERNS.get(item.name)
        if spec is None:
            self.diags.error(item.pos, f"extern function '{item.name}' is not provided by the runtime"
                             + _suggest(item.name, EXTERNS)
                             + " (the runtime provides: " + ", ".join(sorted(EXTERNS)) + ")")
            return
        want_params, want_ret = spec
        have_params = tuple(str(p) for p in ftype.params)
        have_ret = str(ftype.ret)
        if have_params != tuple(want_params) or have_ret != want_ret:
            sig = ", ".join(want_params)
            ret = "" if want_ret == "void" else f" -> {want_ret}"
            self.diags.error(item.pos, f"extern '{item.name}' does not match the runtime: "
                             f"it is 'extern func {item.name}({sig}){ret}'")

    def check_globals(self) -> list[tuple[Symbol, int]]:
        out = []
        for sym in self.top.values():
            if sym.kind != "global":
                continue
            decl: ast.GlobalDecl = sym.decl
            t = self.resolve_type(decl.type_expr)
            if isinstance(t, StructType):
                self.diags.error(decl.type_expr.pos, f"global '{sym.name}' has struct type {t}; allocate it and keep a pointer")
                t = None
            if t is None:
                continue
            sym.type = t
            self.func, self.scope = None, _Scope(None)
            vt = self.check_value(decl.value, t)
            if vt is not None:
                self.coerce(decl.value, t, f"the initial value of '{sym.name}'")
                if decl.value.const is None and not _is_null_pointer(decl.value):
                    self.diags.error(decl.value.pos, f"the initial value of global '{sym.name}' must be a constant expression")
            out.append((sym, decl.value.const or 0))
        return out

    # ---- bodies ----
    def check_body(self, fn: Function, is_entry: bool) -> None:
        self.func = fn
        self.loop_depth = 0
        self.is_entry = is_entry
        self.scope = _Scope(None)
        # Unique names of locals (Symbol.unique, what both emitters name them
        # by): a shadowing local gets `name_N`, and N is chosen so that no
        # local or parameter of the function is really called that (before,
        # `x_1` for an inner `x` was the very name of a real local `x_1`).
        self._declared = declared_names(fn.decl)
        self._taken = set()
        for p in fn.params:
            if p.type is not None:
                self.scope.names[p.name] = p
                self._taken.add(p.name)
        self.check_block(fn.decl.body, new_scope=True)
        if fn.ret is not None and fn.ret is not VOID and not self.terminates(fn.decl.body):
            end = fn.decl.body.end_pos or fn.decl.pos
            self.diags.error(end, f"missing return at the end of '{fn.decl.name}', which returns {fn.ret}")
        self.func = None

    def check_block(self, block: ast.Block, new_scope: bool = True, guard: ast.Expr | None = None) -> None:
        if new_scope:
            self.scope = _Scope(self.scope)
        warned = False
        for i, stmt in enumerate(block.stmts):
            if i > 0 and not warned and self.terminates(block.stmts[i - 1]):
                self.diags.warning(ast.start_pos(stmt), "unreachable code")
                warned = True
            self.check_stmt(stmt, guard if i == 0 else None)
        if new_scope:
            for sym in self.scope.names.values():
                if sym.kind == "local" and not sym.used and not sym.name.startswith("_"):
                    self.diags.warning(sym.pos, f"unused variable '{sym.name}'")
            self.scope = self.scope.parent

    def check_stmt(self, s: ast.Stmt, guard: ast.Expr | None = None) -> None:
        if isinstance(s, ast.VarDecl):
            self.check_var_decl(s)
        elif isinstance(s, ast.Assign):
            self.check_assign(s)
        elif isinstance(s, ast.If):
            self.check_condition(s.cond, "if")
            self.check_block(s.then, guard=s.cond)
            if isinstance(s.orelse, ast.Block):
                self.check_block(s.orelse)
            elif s.orelse is not None:
                self.check_stmt(s.orelse)
        elif isinstance(s, ast.While):
            self.check_condition(s.cond, "while")
            self.loop_depth += 1
            self.check_block(s.body)
            self.loop_depth -= 1
        elif isinstance(s, (ast.Break, ast.Continue)):
            if self.loop_depth == 0:
                word = "break" if isinstance(s, ast.Break) else "continue"
                self.diags.error(s.pos, f"'{word}' outside of a loop")
        elif isinstance(s, ast.Return):
            self.check_return(s, guard)
        elif isinstance(s, ast.ExprStmt):
            self.check_expr_stmt(s)
        elif isinstance(s, ast.Block):
            self.check_block(s)
        else:  # pragma: no cover
            raise TypeError(type(s).__name__)

    def check_var_decl(self, s: ast.VarDecl) -> None:
        want = self.resolve_type(s.type_expr) if s.type_expr is not None else None
        if isinstance(want, StructType):
            self.diags.error(s.type_expr.pos, f"a local cannot hold struct {want} by value; "
                             f"allocate it (sys_mmap(sizeof({want})) as *{want}) and use a pointer")
            want = None
        t = self.check_value(s.value, want)
        if want is not None and t is not None:
            self.coerce(s.value, want, f"'{s.name}'")
        ty = want if s.type_expr is not None else t
        prev = self.scope.names.get(s.name)
        if prev is not None:
            self.diags.error(s.pos, f"'{s.name}' is already declared in this block",
                             [Diagnostics.note(prev.pos, "the first declaration is here")])
        unique = s.name
        if unique in self._taken:
            n = 1
            while f"{s.name}_{n}" in self._declared or f"{s.name}_{n}" in self._taken:
                n += 1
            unique = f"{s.name}_{n}"
        self._taken.add(unique)
        sym = Symbol("local", s.name, ty, s.pos, mutable=s.mutable, unique=unique)
        s.sym = sym
        self.scope.names[s.name] = sym
        if self.func is not None:
            self.func.locals.append(sym)

    def check_assign(self, s: ast.Assign) -> None:
        t = self.check_place(s.target)
        if t is None:
            self.check_value(s.value, None)
            return
        if s.op == "=":
            if self.check_value(s.value, t) is not None:
                self.coerce(s.value, t, "the assignment")
            return
        op = s.op[:-1]
        if not isinstance(t, IntType):
            self.check_value(s.value, None)
            self.diags.error(s.pos, f"'{s.op}' needs an integer on the left, not {t}")
            return
        vt = self.check_value(s.value, I64 if op in ("<<", ">>") else t)
        if vt is None:
            return
        if op in ("<<", ">>"):
            if not isinstance(vt, IntType):
                self.diags.error(s.value.pos, f"shift count must be an integer, not {vt}")
        else:
            self.coerce(s.value, t, f"'{s.op}'")

    def check_place(self, e: ast.Expr) -> Type | None:
        """Type of an assignable place; reports what makes it not one."""
        if isinstance(e, ast.Name):
            sym = self.lookup(e)
            if sym is None:
                return None
            if sym.kind in ("local", "param", "global"):
                if not sym.mutable:
                    self.diags.error(e.pos, f"cannot assign to '{e.ident}': it is declared with 'let'; use 'var' to make it mutable",
                                     [Diagnostics.note(sym.pos, f"'{e.ident}' is declared here")])
                    return None
                e.ty = sym.type
                return sym.type
            self.diags.error(e.pos, f"cannot assign to {_kind_word(sym.kind)} '{e.ident}'")
            return None
        if isinstance(e, (ast.Index, ast.FieldAccess)) or (isinstance(e, ast.Unary) and e.op == "*"):
            t = self.check_expr(e, None)
            if isinstance(t, StructType):
                self.diags.error(e.pos, f"cannot assign a whole struct {t}; assign its fields")
                return None
            return t
        self.check_expr(e, None)
        self.diags.error(e.pos, "cannot assign to this expression: only a variable, p[i], *p or p.field can be assigned")
        return None

    def check_condition(self, cond: ast.Expr, what: str) -> None:
        t = self.check_value(cond, None)
        if t is not None and not isinstance(t, (BoolType, IntType)):
            self.diags.error(cond.pos, f"the condition of '{what}' must be a bool or an integer, not {t}")

    def check_return(self, s: ast.Return, guard: ast.Expr | None) -> None:
        fn = self.func
        ret = fn.ret
        if s.value is None:
            if ret is not None and ret is not VOID:
                self.diags.error(s.pos, f"'{fn.decl.name}' must return a value of type {ret}")
        elif ret is VOID:
            self.check_value(s.value, None)
            self.diags.error(s.value.pos, f"'{fn.decl.name}' returns no value (declare '-> T' to return one)")
        else:
            if self.check_value(s.value, ret) is not None and ret is not None:
                self.coerce(s.value, ret, "the returned value")
        if self.is_entry:
            s.site = len(self.gate_returns)
            self.gate_returns.append(GateReturn(s.site, s, guard))

    def check_expr_stmt(self, s: ast.ExprStmt) -> None:
        e = s.expr
        if isinstance(e, ast.Call):
            self.check_call(e, allow_void=True)
            return
        self.check_value(e, None)
        self.diags.warning(e.pos, "the value of this expression is not used")

    def terminates(self, s: ast.Stmt) -> bool:
        """Go's terminating statements."""
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.Block):
            return bool(s.stmts) and self.terminates(s.stmts[-1])
        if isinstance(s, ast.If):
            return s.orelse is not None and self.terminates(s.then) and self.terminates(s.orelse)
        if isinstance(s, ast.While):
            return _always_true(s.cond) and not _has_break(s.body)
        return False

    # ---- expressions ----
    def lookup(self, e: ast.Name) -> Symbol | None:
        sym = self.scope.lookup(e.ident) if self.scope else None
        if sym is None:
            sym = self.top.get(e.ident)
        if sym is None:
            names = set(self.scope.all_names()) | {n for n, s in self.top.items() if s.kind not in ("type", "struct")}
            self.diags.error(e.pos, f"undefined name '{e.ident}'" + suggest_undefined(e.ident, names, e.pos))
            return None
        e.sym = sym
        return sym

    def check_value(self, e: ast.Expr, want: Type | None) -> Type | None:
        """Check an expression used as a value (not a struct, not void)."""
        t = self.check_expr(e, want)
        if t.__class__ not in _NOT_VALUES:     # the common case, one test
            return t
        if isinstance(t, StructType):
            self.diags.error(e.pos, f"a struct ({t}) cannot be used as a value; use a pointer to it or one of its fields")
            return None
        if isinstance(t, FuncType):
            self.diags.error(e.pos, f"function '{getattr(e, 'ident', '?')}' must be called: add (...)")
            return None
        return t

    def check_expr(self, e: ast.Expr, want: Type | None) -> Type | None:
        # A module's AST may be checked again in another import graph (the
        # loader caches parses): start from a clean slate.
        e.const = None
        method = self._expr_methods.get(e.__class__)
        if method is None:
            method = self._expr_methods[e.__class__] = getattr(self, "expr_" + e.__class__.__name__)
        t = method(e, want)
        e.ty = t
        return t

    def expr_IntLit(self, e: ast.IntLit, want):
        ty = want if isinstance(want, IntType) else I64
        if e.value >= 1 << ty.bits:
            self.diags.error(e.pos, f"integer literal {e.text or e.value} does not fit in {ty}")
            e.const = 0
            return ty
        e.const = ty.wrap(e.value)
        return ty

    def expr_BoolLit(self, e: ast.BoolLit, want):
        e.const = int(e.value)
        return BOOL

    def expr_Name(self, e: ast.Name, want):
        sym = self.lookup(e)
        if sym is None:
            return None
        if sym.kind == "const":
            if sym.type is None or sym.name in self._evaluating:
                self.const_value(sym, e.pos)
            e.const = sym.value
            return sym.type
        if sym.kind in ("func", "extern"):
            return sym.type
        if sym.kind in ("type", "struct"):
            self.diags.error(e.pos, f"'{e.ident}' is a type, not a value")
            return None
        if self.func is None and sym.kind == "global":
            return sym.type
        sym.used = True
        return sym.type

    def expr_SizeOf(self, e: ast.SizeOf, want):
        t = self.resolve_type(e.target)
        if t is None:
            return I64
        if isinstance(t, StructType):
            self.complete_struct(t, e.pos)
        e.const = t.size
        return I64

    def expr_Unary(self, e: ast.Unary, want):
        op = e.op
        if op in ("-", "~"):
            t = self.check_value(e.operand, want if is_literal_expr(e.operand) else None)
            if t is None:
                return None
            if not isinstance(t, IntType):
                self.diags.error(e.pos, f"'{op}' needs an integer operand, not {t}")
                return None
            c = e.operand.const
            if c is not None:
                e.const = t.wrap(-c if op == "-" else ~c)
            return t
        if op == "!":
            t = self.check_value(e.operand, None)
            if t is not None and not isinstance(t, (IntType, BoolType)):
                self.diags.error(e.pos, f"'!' needs a bool or an integer, not {t}")
            elif e.operand.const is not None:
                e.const = int(e.operand.const == 0)
            return BOOL
        if op == "*":
            t = self.check_value(e.operand, None)
            if t is None:
                return None
            if not isinstance(t, PointerType):
                self.diags.error(e.pos, f"cannot dereference a value of type {t}: it is not a pointer")
                return None
            if t.target is VOID:
                self.diags.error(e.pos, "cannot dereference a '*void'; cast it to a typed pointer first (p as *i64)")
                return None
            return t.target
        if op == "&":
            inner = e.operand
            if isinstance(inner, ast.Name):
                self.check_expr(inner, None)
                self.diags.error(e.pos, f"cannot take the address of '{inner.ident}': locals, parameters and "
                                 "globals have no address; only memory places (&p[i], &p.f, &*p) do")
                return None
            if not (isinstance(inner, (ast.Index, ast.FieldAccess)) or (isinstance(inner, ast.Unary) and inner.op == "*")):
                self.check_expr(inner, None)
                self.diags.error(e.pos, "'&' needs a memory place: &p[i], &p.field or &*p")
                return None
            t = self.check_expr(inner, None)
            return None if t is None else PointerType(t)
        raise ValueError(op)  # pragma: no cover

    def expr_Binary(self, e: ast.Binary, want):
        op = e.op
        if op in _LOGIC_OPS:
            for side in (e.left, e.right):
                t = self.check_value(side, None)
                if t is not None and not isinstance(t, (BoolType, IntType)):
                    self.diags.error(side.pos, f"'{op}' needs bool or integer operands, not {t}")
            if e.left.const is not None and e.right.const is not None:
                a, b = e.left.const != 0, e.right.const != 0
                e.const = int(a and b) if op == "&&" else int(a or b)
            return BOOL
        lt, rt = self.check_operands(e, want)
        if lt is None or rt is None:
            return BOOL if op in _CMP_OPS else None
        if op in _CMP_OPS:
            return self.check_comparison(e, lt, rt)
        if op in ("<<", ">>"):
            if not isinstance(lt, IntType) or not isinstance(rt, IntType):
                bad = e.left if not isinstance(lt, IntType) else e.right
                self.diags.error(bad.pos, f"'{op}' needs integer operands, not {bad.ty}")
                return None
            if e.left.const is not None and e.right.const is not None:
                e.const = fold_binary(op, lt, e.left.const, e.right.const)
            return lt
        if isinstance(lt, BoolType) and isinstance(rt, BoolType) and op in ("&", "|", "^"):
            if e.left.const is not None and e.right.const is not None:
                e.const = fold_binary(op, IntType(8, False), e.left.const, e.right.const)
            return BOOL
        if not isinstance(lt, IntType) or not isinstance(rt, IntType):
            bad = e.left if not isinstance(lt, IntType) else e.right
            hint = " (pointer arithmetic goes through 'as i64')" if isinstance(bad.ty, PointerType) else ""
            self.diags.error(e.pos, f"'{op}' needs integer operands, not {bad.ty}{hint}")
            return None
        if lt != rt:
            self.mismatch(e, lt, rt)
            return None
        if e.left.const is not None and e.right.const is not None:
            v = fold_binary(op, lt, e.left.const, e.right.const)
            if v is None:
                self.diags.error(e.right.pos, "division by zero in a constant expression")
                v = 0
            e.const = v
        return lt

    def check_operands(self, e: ast.Binary, want):
        """Type both operands; a literal-only side takes the other side's type."""
        shift = e.op in ("<<", ">>")
        cmp_ = e.op in _CMP_OPS
        left_lit, right_lit = is_literal_expr(e.left), is_literal_expr(e.right)
        hint = None if cmp_ else want
        if shift:
            lt = self.check_value(e.left, hint if left_lit else None)
            rt = self.check_value(e.right, I64 if right_lit else None)
            return lt, rt
        if left_lit and not right_lit:
            rt = self.check_value(e.right, None)
            lt = self.check_value(e.left, rt if isinstance(rt, IntType) else hint)
            return lt, rt
        lt = self.check_value(e.left, hint)
        rt = self.check_value(e.right, lt if right_lit and isinstance(lt, IntType) else hint)
        return lt, rt

    def check_comparison(self, e: ast.Binary, lt: Type, rt: Type) -> Type:
        op = e.op
        if isinstance(lt, PointerType) and isinstance(rt, PointerType):
            if op not in ("==", "!="):
                self.diags.error(e.pos, f"pointers compare only with == and !=; compare 'p as i64' for '{op}'")
            elif lt != rt and VOID not in (lt.target, rt.target):
                self.diags.error(e.pos, f"cannot compare {lt} with {rt}; cast one side with 'as'")
            return BOOL
        if lt != rt:
            self.mismatch(e, lt, rt)
            return BOOL
        if not isinstance(lt, (IntType, BoolType)):
            self.diags.error(e.pos, f"cannot compare values of type {lt}")
            return BOOL
        if isinstance(lt, BoolType) and op not in ("==", "!="):
            self.diags.error(e.pos, "bools compare only with == and !=")
            return BOOL
        if e.left.const is not None and e.right.const is not None:
            e.const = int(fold_compare(op, e.left.const, e.right.const))
        return BOOL

    def mismatch(self, e: ast.Binary, lt: Type, rt: Type) -> None:
        self.diags.error(e.pos, f"mismatched types in '{e.op}': {lt} and {rt}; convert one side, "
                         f"e.g. '(...) as {lt}'")

    def expr_Cast(self, e: ast.Cast, want):
        src = self.check_value(e.expr, None)
        dst = self.resolve_type(e.target)
        if src is None or dst is None:
            return dst
        if isinstance(dst, StructType):
            self.diags.error(e.pos, f"cannot convert to struct {dst}; convert to a pointer (*{dst})")
            return None
        if not cast_allowed(src, dst):
            self.diags.error(e.pos, f"cannot convert {src} to {dst} with 'as'")
            return dst
        if e.expr.const is not None and not isinstance(dst, PointerType):
            e.const = fold_cast(e.expr.const, dst)
        return dst

    def expr_Call(self, e: ast.Call, want):
        return self.check_call(e, allow_void=False)

    def check_call(self, e: ast.Call, allow_void: bool):
        f = e.func
        if not isinstance(f, ast.Name):
            self.check_expr(f, None)
            self.diags.error(e.pos, "only a function can be called, by its name")
            for a in e.args:
                self.check_value(a, None)
            return None
        sym = self.lookup(f)
        if sym is None:
            for a in e.args:
                self.check_value(a, None)
            return None
        if sym.kind not in ("func", "extern"):
            self.diags.error(f.pos, f"'{f.ident}' is a {_kind_word(sym.kind)}, not a function; it cannot be called")
            for a in e.args:
                self.check_value(a, None)
            return None
        if sym.kind == "func" and f.ident == "main":
            self.diags.error(f.pos, "a gate ('main') cannot be called")
        if self.soft_f32 and sym.kind == "extern":
            sym = self.soft_f32_callee(f, sym)
        ftype: FuncType = sym.type
        decl: ast.FuncDecl = sym.decl
        f.ty = ftype
        if ftype is None:
            return None
        if len(e.args) != len(ftype.params):
            self.diags.error(e.pos, f"'{f.ident}' takes {len(ftype.params)} argument"
                             f"{'s' if len(ftype.params) != 1 else ''} but {len(e.args)} "
                             f"{'were' if len(e.args) != 1 else 'was'} given",
                             [Diagnostics.note(decl.pos, f"'{f.ident}' is declared here")])
        for i, a in enumerate(e.args):
            pt = ftype.params[i] if i < len(ftype.params) else None
            at = self.check_value(a, pt)
            if at is not None and pt is not None:
                self.coerce(a, pt, f"argument '{decl.params[i].name}' of '{f.ident}'")
        ret = ftype.ret
        if ret is VOID and not allow_void:
            self.diags.error(e.pos, f"'{f.ident}' returns no value")
            return None
        return ret

    def soft_f32_callee(self, f: ast.Name, sym: Symbol) -> Symbol:
        """--soft-f32: a call of a runtime float32 primitive (F32_PRIMITIVES)
        calls its .nx twin (nx_f32_add -> nx_soft_f32_add, loaded by
        frontend.check_file from nx_f32_soft.nx) instead: `f.sym` is pointed
        at the twin, so both backends see a plain nx call. Calls written in the
        twins' own module are left alone (its gate compares the two)."""
        if sym.name not in f32_primitives():
            return sym
        twin = self.top.get(soft_f32_name(sym.name))
        if twin is None or twin.kind != "func" or twin.type != sym.type:
            self.diags.error(f.pos, f"--soft-f32: no 'func {soft_f32_name(sym.name)}' with the signature "
                             f"of '{sym.name}' (expected in {SOFT_F32_MODULE})")
            return sym
        if self.func is not None and self.func.module is getattr(twin, "module", None):
            return sym
        f.sym = twin
        return twin

    def expr_Index(self, e: ast.Index, want):
        bt = self.check_value(e.base, None)
        it = self.check_value(e.index, I64 if is_literal_expr(e.index) else None)
        if it is not None and not isinstance(it, IntType):
            self.diags.error(e.index.pos, f"an index must be an integer, not {it}")
        if bt is None:
            return None
        if not isinstance(bt, PointerType):
            self.diags.error(e.pos, f"cannot index a value of type {bt}: it is not a pointer")
            return None
        if bt.target is VOID:
            self.diags.error(e.pos, "cannot index a '*void'; cast it to a typed pointer first (p as *i64)")
            return None
        return bt.target

    def expr_FieldAccess(self, e: ast.FieldAccess, want):
        bt = self.check_expr(e.base, None)
        if bt is None:
            return None
        e.through_pointer = False
        if isinstance(bt, PointerType) and isinstance(bt.target, StructType):
            st = bt.target
            e.through_pointer = True
        elif isinstance(bt, StructType):
            if isinstance(e.base, ast.Name):
                self.diags.error(e.base.pos, "a struct value cannot be held in a variable")
                return None
            st = bt
        else:
            self.diags.error(e.name_pos, f"'.{e.name}' needs a pointer to a struct, not {bt}")
            return None
        if isinstance(e.base, ast.Name) and e.base.sym is not None:
            e.base.sym.used = True
        fld = st.field(e.name)
        if fld is None:
            names = ", ".join(f.name for f in st.fields)
            self.diags.error(e.name_pos, f"struct {st.name} has no field '{e.name}'"
                             + _suggest(e.name, [f.name for f in st.fields]) + f" (fields: {names})")
            return None
        return fld.type

    # ---- conversions ----
    def coerce(self, e: ast.Expr, want: Type, what: str) -> bool:
        have = e.ty
        if have is None or want is None or have == want:
            return True
        if isinstance(want, PointerType) and want.target is VOID and isinstance(have, PointerType):
            return True
        hint = f"; write '(...) as {want}'" if cast_allowed(have, want) else ""
        if isinstance(have, IntType) and isinstance(want, PointerType) and e.const == 0:
            hint = f"; the null pointer is written '0 as {want}'"
        self.diags.error(e.pos, f"type mismatch for {what}: expected {want}, found {have}{hint}")
        return False


def _kind_word(kind: str) -> str:
    return {"const": "constant", "global": "global variable", "func": "function",
            "extern": "extern function", "local": "variable", "param": "parameter",
            "type": "type", "struct": "struct"}.get(kind, kind)


def _same_signature(a: ast.FuncDecl, b: ast.FuncDecl) -> bool:
    def text(t):
        if t is None:
            return "void"
        return "*" + text(t.target) if isinstance(t, ast.TypePointer) else t.name
    return ([text(p.type_expr) for p in a.params] == [text(p.type_expr) for p in b.params]
            and text(a.ret) == text(b.ret))


def _always_true(cond: ast.Expr) -> bool:
    return (isinstance(cond, ast.BoolLit) and cond.value) or (isinstance(cond, ast.IntLit) and cond.value != 0)


def _has_break(block: ast.Block) -> bool:
    """A `break` that leaves this loop (not one inside a nested loop)."""
    for s in block.stmts:
        if isinstance(s, ast.Break):
            return True
        if isinstance(s, ast.Block) and _has_break(s):
            return True
        if isinstance(s, ast.If):
            if _has_break(s.then):
                return True
            o = s.orelse
            if isinstance(o, ast.Block) and _has_break(o):
                return True
            if isinstance(o, ast.If) and _has_break(ast.Block(o.pos, [o])):
                return True
    return False


def _is_null_pointer(e: ast.Expr) -> bool:
    return isinstance(e, ast.Cast) and isinstance(e.ty, PointerType) and e.expr.const == 0


def check_program(graph: ModuleGraph, diags: Diagnostics, soft_f32: bool = False) -> Program:
    """soft_f32: redirect float32 primitive calls to nx_f32_soft.nx (which the
    caller has loaded into `graph`); see Checker.soft_f32_callee."""
    return Checker(graph, diags, soft_f32).check()
