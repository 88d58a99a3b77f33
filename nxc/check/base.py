"""What every part of the checker shares: its state, scopes, name lookup,
the expression entry points (`check_expr`, `check_value`) and coercion.

The checker is one object assembled from one class per job (nxc/check/checker.py):
declarations (decls.py), statements (stmts.py), expressions (exprs.py),
calls and the soft-f32 rewrite (calls.py). They dispatch on the node class
through `ast.NodeVisitor` (`visit_<Class>`), and write what they learn into
the side tables of `Info` (program.py), never into the AST.
"""
from __future__ import annotations

import difflib

from nxc.syntax import ast
from nxc.diagnostics import Diagnostics
from nxc.syntax.loader import ModuleGraph
from nxc.check.defined_where import missing_import
from nxc.check.suggest import suggest_undefined
from nxc.check.consts import cast_allowed
from nxc.check.program import Function, Gate, GateReturn, Info, Symbol
from nxc.check.types import VOID, FuncType, IntType, PointerType, StructType, Type

_NOT_VALUES = (StructType, FuncType)      # types an expression has but a value cannot


def suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def kind_word(kind: str) -> str:
    return {"const": "constant", "global": "global variable", "func": "function",
            "extern": "extern function", "local": "variable", "param": "parameter",
            "type": "type", "struct": "struct"}.get(kind, kind)


class Scope:
    def __init__(self, parent: "Scope | None"):
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


class CheckerBase(ast.NodeVisitor):
    def __init__(self, graph: ModuleGraph, diags: Diagnostics, soft_f32: bool = False,
                 info: Info | None = None):
        self.graph = graph
        self.diags = diags
        self.soft_f32 = soft_f32
        self.info = Info() if info is None else info
        self.types = self.info.types
        self.consts = self.info.consts
        self.syms = self.info.syms
        self.top: dict[str, Symbol] = {}          # the shared namespace
        self.aliases: dict[str, ast.TypeAlias] = {}
        self.alias_types: dict[str, Type] = {}
        self.structs: dict[str, StructType] = {}
        self.struct_decls: dict[str, ast.StructDecl] = {}
        self.struct_order: list[StructType] = []
        self.functions: list[Function] = []
        self.externs: list[Symbol] = []
        self.gate_returns: list[GateReturn] = []     # the root's gate's returns
        self.gates: dict[str, Gate] = {}              # module path -> its checked gate
        self.resolving: set[str] = set()
        self.evaluating: set[str] = set()
        # per-function state
        self.func: Function | None = None
        self.scope: Scope | None = None
        self.is_entry = False
        self.gate: Gate | None = None       # check_body of a module's main: its returns are recorded
        self.loop_depth = 0
        self.declared: set[str] = set()      # check_body: every local and parameter name
        self.taken: set[str] = set()         # check_body: unique names given so far

    # ---- names ----
    def lookup(self, e: ast.Name) -> Symbol | None:
        sym = self.scope.lookup(e.ident) if self.scope else None
        if sym is None:
            sym = self.top.get(e.ident)
        if sym is None:
            if self.diags.saturated():      # only counted: no suggestion to work out
                self.diags.error(e.pos, f"undefined name '{e.ident}'")
                return None
            names = set(self.scope.all_names()) | {n for n, s in self.top.items() if s.kind not in ("type", "struct")}
            # a module on the search path that defines the very name: a missing import, not a typo
            hint, notes = missing_import(e.ident, e.pos, self.graph.include, ("func", "extern", "const", "global"))
            self.diags.error(e.pos, f"undefined name '{e.ident}'" + (hint or suggest_undefined(e.ident, names, e.pos)),
                             notes)
            return None
        self.syms[e] = sym
        return sym

    # ---- expressions: the entry points ----
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
        # self.visit(e, want), inlined: this runs once per expression.
        method = self._visit_methods.get(e.__class__)
        if method is None:
            method = self.visit_method(e)
        t = method(self, e, want)
        self.types[e] = t
        return t

    # ---- conversions ----
    def coerce(self, e: ast.Expr, want: Type, what: str) -> bool:
        have = self.types.get(e)
        if have is None or want is None or have == want:
            return True
        if isinstance(want, PointerType) and want.target is VOID and isinstance(have, PointerType):
            return True
        hint = f"; write '(...) as {want}'" if cast_allowed(have, want) else ""
        if isinstance(have, IntType) and isinstance(want, PointerType) and self.consts.get(e) == 0:
            hint = f"; the null pointer is written '0 as {want}'"
        self.diags.error(e.pos, f"type mismatch for {what}: expected {want}, found {have}{hint}")
        return False
