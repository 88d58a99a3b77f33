"""The checked program: what the checker hands to the lowering passes and backends.

The AST stays exactly as the parser built it (the parse cache shares one
module object between checks). Everything the checker learns about a node -
an expression's type and constant value, the symbol a name refers to, the
site number of a gate's `return` - lives in the side tables of `Info`, keyed
by node identity (nodes compare by identity: `eq=False`), as mypy keeps its
expression types beside the tree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nxc.syntax import ast
from nxc.diagnostics import Pos
from nxc.paths import SOFT_F32_MODULE
from nxc.syntax.loader import ModuleGraph
from nxc.check.types import PointerType, StructType, Type

# --soft-f32 (check_program(..., soft_f32=True)): SOFT_F32_MODULE (nxc/paths.py)
# holds the float32 primitives written in .nx; the name of each one's twin there:


def soft_f32_name(primitive: str) -> str:
    """nx_f32_add -> nx_soft_f32_add, nx_i32_to_f32 -> nx_soft_i32_to_f32."""
    return "nx_soft_" + primitive[len("nx_"):]


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
    module: object = None           # top-level names: the ast.Module that declares it


class Info:
    """The checker's results, one table per kind of fact.

    Read them through the accessors (`info.ty(e)`, `info.const(e)`,
    `info.sym(name_or_var_decl)`, `info.site(ret)`): each is a dict's `get`,
    so a node the checker did not reach reads as None.
    """
    __slots__ = ("types", "consts", "syms", "sites", "ty", "const", "sym", "site")

    def __init__(self) -> None:
        self.types: dict[ast.Node, Type | None] = {}     # expression -> its type
        self.consts: dict[ast.Node, int] = {}            # expression -> its value, when constant
        self.syms: dict[ast.Node, Symbol] = {}           # Name / VarDecl -> its symbol
        self.sites: dict[ast.Node, int] = {}             # a gate's Return -> its site in that gate
        self.ty = self.types.get
        self.const = self.consts.get
        self.sym = self.syms.get
        self.site = self.sites.get

    def through_pointer(self, e: ast.FieldAccess) -> bool:
        """`p.f` with p a pointer (p.f == (*p).f), as opposed to a struct place."""
        return isinstance(self.types.get(e.base), PointerType)


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
    """One `return` of a module's gate, so a runner can name it (`site`: its
    number in that gate, from 0 in the order of the source)."""
    site: int
    node: ast.Return
    guard: ast.Expr | None          # the `if` condition that led to it, if any


@dataclass(eq=False)
class Gate:
    """A module's gate (`func main() -> i64`) whose body was checked, and its
    returns. Every module's, not only the root's: a separately compiled gate
    (nxc/backend/c/objects.py) holds each module's main in that module's own
    object, which whichever gate first needs it compiles."""
    fn: Function
    returns: list[GateReturn]


@dataclass(eq=False)
class Program:
    graph: ModuleGraph
    structs: list[StructType]       # embedded structs before their users
    consts: list[Symbol]
    globals: list[tuple[Symbol, int]]
    functions: list[Function]       # every function with a body, minus imported gates
    externs: list[Symbol]
    entry: Function | None          # the root module's `main`, if it has one
    gate_returns: list[GateReturn]  # the root's gate's (`gates[root path].returns`)
    warnings: list = field(default_factory=list)
    info: Info = field(default_factory=Info)
    # module path -> its gate, for every module whose main's body was checked
    # (imported modules' gates are not in `functions`: no program calls them)
    gates: dict[str, Gate] = field(default_factory=dict)
