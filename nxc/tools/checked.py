"""The one place where tools read the checker's results.

The checker keeps what it found partly in side tables (`Info`: the type and
constant value of each expression, the symbol of each name and declaration)
and partly on itself (the shared namespace, struct layouts, aliases). Tools (the language server, the module pages) go through
the functions below only, so a change in where the checker keeps its
results is fixed here and nowhere else.
"""
from __future__ import annotations

from dataclasses import dataclass

from nxc.check.checker import Checker
from nxc.check.reuse import DeclReuse
from nxc.check.types import BUILTIN_TYPES, PointerType, StructType, Type
from nxc.diagnostics import CompileError, Diagnostic, Diagnostics, Pos
from nxc.syntax import ast
from nxc.syntax.loader import ModuleGraph


@dataclass(frozen=True)
class SymbolInfo:
    """What a tool needs to know about a name's definition."""
    kind: str                 # local | param | global | const | func | extern | type | struct
    name: str
    pos: Pos                  # where it is defined (the name token)
    type: Type | None
    value: int | None         # consts
    decl: object              # the declaring AST node, when the checker kept it


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]          # errors and warnings, in report order
    _checker: Checker
    # the modules whose bodies were checked (None: none, the declarations failed)
    bodies_checked: set[str] | None = None

    def top_symbol(self, name: str) -> SymbolInfo | None:
        """A top-level name of the import graph (every module shares one namespace)."""
        sym = self._checker.top.get(name)
        return _info(sym) if sym is not None else None

    def top_names(self) -> list[str]:
        return list(self._checker.top)

    def struct(self, name: str) -> StructType | None:
        st = self._checker.structs.get(name)
        return st if st is not None and st.complete else None

    def alias_target(self, name: str) -> Type | None:
        return self._checker.alias_types.get(name)


class _ToolChecker(DeclReuse, Checker):
    """The checker taking the declarations of modules kept from earlier
    checks of this process where every name they resolve is the same symbol
    (nxc/check/reuse.py): an editor's server checks the same imported
    modules at every keystroke."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.init_reuse()


def check_graph(graph: ModuleGraph, bodies=None) -> CheckResult:
    """Run the checker; keep whatever it found even when it reports errors
    (it stops between phases: after a declaration error no body is typed).
    `bodies`: check the bodies of these modules (real paths) only; the
    declarations of every module are checked (taken again from earlier
    checks where they stand). A callable is given the graph's top-level
    names once the declarations are checked, and returns that set."""
    diags = Diagnostics()
    checker = _ToolChecker(graph, diags)
    bodies_checked = None
    try:
        funcs = checker.check_declarations()
        checker.remember_declarations(funcs)
        only = bodies(list(checker.top)) if callable(bodies) else bodies
        bodies_checked = set(only) if only is not None else {m.source.path for m in graph.modules}
        checker.check_bodies(funcs, only=only)
    except CompileError:
        pass
    except Exception as exc:  # noqa: BLE001 - the checker on a recovered (blanked) text: report, never crash the tool
        diags.error(None, f"internal error in the checker: {type(exc).__name__}: {exc}")
    return CheckResult(list(diags.items), checker, bodies_checked)


def _table(result: CheckResult | None):
    return result._checker.info if result is not None else None


def name_symbol(result: CheckResult | None, node: ast.Name) -> SymbolInfo | None:
    """What a name in an expression refers to (after checking)."""
    info = _table(result)
    sym = info.sym(node) if info is not None else None
    return _info(sym) if sym is not None else None


def declared_symbol(result: CheckResult | None, node: ast.VarDecl) -> SymbolInfo | None:
    info = _table(result)
    sym = info.sym(node) if info is not None else None
    return _info(sym) if sym is not None else None


def expr_type(result: CheckResult | None, node: ast.Expr) -> Type | None:
    info = _table(result)
    return info.ty(node) if info is not None else None


def expr_const(result: CheckResult | None, node: ast.Expr) -> int | None:
    info = _table(result)
    return info.const(node) if info is not None else None


def struct_of_pointer(t: Type | None) -> StructType | None:
    """The struct `p.f` reads when p has type `t` (a struct pointer, or an embedded struct)."""
    if isinstance(t, PointerType) and isinstance(t.target, StructType):
        return t.target
    if isinstance(t, StructType):
        return t
    return None


def builtin_type_names() -> list[str]:
    return list(BUILTIN_TYPES)


def builtin_type_size(name: str) -> int | None:
    """Bytes of a built-in type (0 for void); None if `name` is not one."""
    t = BUILTIN_TYPES.get(name)
    return None if t is None else t.size


def _info(sym) -> SymbolInfo:
    return SymbolInfo(sym.kind, sym.name, sym.pos, sym.type, sym.value, sym.decl)
