"""The .nx abstract syntax tree: typed dataclasses, a position on every node.

Built by nxc/syntax/parse.py and never changed afterwards: the checker keeps
what it learns (types, constants, symbols) in side tables of the checked
program (nxc/check/program.py `Info`), so one parsed module can be shared
by every check that imports it. `NodeVisitor` dispatches on the class name (pycparser's
`visit_<ClassName>`), so each pass is one class with one method per node kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Optional

from nxc.cache import kept_for_the_run
from nxc.diagnostics import Pos


@dataclass(eq=False, slots=True)
class Node:
    pos: Pos


# ---- types as written in the source ----
@dataclass(eq=False, slots=True)
class TypeName(Node):
    name: str


@dataclass(eq=False, slots=True)
class TypePointer(Node):
    target: "TypeExpr"


TypeExpr = Any  # TypeName | TypePointer


# ---- expressions ----
@dataclass(eq=False, slots=True)
class Expr(Node):
    # The checker's findings (type, constant value, symbol) are not kept
    # here but in the checked program's side tables (nxc/check/program.py).
    pass


@dataclass(eq=False, slots=True)
class IntLit(Expr):
    value: int
    text: str = ""


@dataclass(eq=False, slots=True)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False, slots=True)
class Name(Expr):
    ident: str


@dataclass(eq=False, slots=True)
class Unary(Expr):
    op: str        # "-" "!" "~" "*" "&"
    operand: Expr


@dataclass(eq=False, slots=True)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False, slots=True)
class Cast(Expr):
    expr: Expr
    target: TypeExpr


@dataclass(eq=False, slots=True)
class Call(Expr):
    func: Expr
    args: list[Expr]


@dataclass(eq=False, slots=True)
class Index(Expr):
    base: Expr
    index: Expr


@dataclass(eq=False, slots=True)
class FieldAccess(Expr):
    base: Expr
    name: str
    name_pos: Pos = None  # where the field name is, for "no field" errors


@dataclass(eq=False, slots=True)
class SizeOf(Expr):
    target: TypeExpr


# ---- statements ----
@dataclass(eq=False, slots=True)
class Stmt(Node):
    pass


@dataclass(eq=False, slots=True)
class Block(Stmt):
    stmts: list[Stmt]
    end_pos: Optional[Pos] = None


@dataclass(eq=False, slots=True)
class VarDecl(Stmt):
    name: str
    type_expr: Optional[TypeExpr]
    value: Expr
    mutable: bool       # var (True) or let (False)


@dataclass(eq=False, slots=True)
class Assign(Stmt):
    target: Expr
    op: str             # "=" or "+=" ...
    value: Expr


@dataclass(eq=False, slots=True)
class If(Stmt):
    cond: Expr
    then: Block
    orelse: Optional[Stmt]   # Block | If | None


@dataclass(eq=False, slots=True)
class While(Stmt):
    cond: Expr
    body: Block


@dataclass(eq=False, slots=True)
class Break(Stmt):
    pass


@dataclass(eq=False, slots=True)
class Continue(Stmt):
    pass


@dataclass(eq=False, slots=True)
class Return(Stmt):
    value: Optional[Expr]


@dataclass(eq=False, slots=True)
class ExprStmt(Stmt):
    expr: Expr


# ---- top-level declarations ----
@dataclass(eq=False, slots=True)
class Import(Node):
    path: str


@dataclass(eq=False, slots=True)
class ConstDecl(Node):
    name: str
    type_expr: Optional[TypeExpr]
    value: Expr


@dataclass(eq=False, slots=True)
class TypeAlias(Node):
    name: str
    target: TypeExpr


@dataclass(eq=False, slots=True)
class FieldDecl(Node):
    name: str
    type_expr: TypeExpr


@dataclass(eq=False, slots=True)
class StructDecl(Node):
    name: str
    fields: list[FieldDecl]


@dataclass(eq=False, slots=True)
class Param(Node):
    name: str
    type_expr: TypeExpr


@dataclass(eq=False, slots=True)
class FuncDecl(Node):
    name: str
    params: list[Param]
    ret: Optional[TypeExpr]
    body: Optional[Block]      # None for `extern func`

    @property
    def is_extern(self) -> bool:
        return self.body is None


@dataclass(eq=False, slots=True)
class GlobalDecl(Node):
    name: str
    type_expr: TypeExpr
    value: Expr


@dataclass(eq=False, slots=True)
class Module(Node):
    """One parsed .nx file."""
    source: Any                  # diagnostics.SourceFile
    items: list[Node]
    header: dict[str, str] = field(default_factory=dict)

    @property
    def imports(self) -> list[Import]:
        return [i for i in self.items if isinstance(i, Import)]


# How a node is pickled (the parse cache, nxc/syntax/loader.py, and the
# parse-ahead processes of `nxc test` pickle every module's tree): as its
# class called with its fields. A slotted dataclass's own pickling calls
# dataclasses.fields() in Python for every node, both ways; this takes
# about two thirds of the time to write and to read a module, and a third
# less space. A tree holds no cycles, so a node's fields can be pickled
# before the node itself.
def _pickled_by_fields(cls) -> None:
    names = tuple(f.name for f in fields(cls))
    get = attrgetter(*names)
    if len(names) == 1:
        cls.__reduce__ = lambda self: (cls, (get(self),))
    else:
        cls.__reduce__ = lambda self: (cls, get(self))


for _cls in [c for c in list(globals().values()) if isinstance(c, type) and issubclass(c, Node)]:
    _pickled_by_fields(_cls)
del _cls


# The children of each statement and expression class, in source order: a
# field holding one node (or None), or with `*` a list of them. `walk` and
# `subexpressions` both read it, through a step found once per class (a
# subclass takes its first listed base's, in this order), then looked up by
# the class: the checker, the lowering and the effects walk every checked
# body several times, and a chain of isinstance tests per node was most of
# the walk's time.
_CHILDREN = ((Block, ("*stmts",)), (VarDecl, ("value",)), (Assign, ("target", "value")),
             (If, ("cond", "then", "orelse")), (While, ("cond", "body")), (Return, ("value",)),
             (ExprStmt, ("expr",)), (Unary, ("operand",)), (Binary, ("left", "right")), (Cast, ("expr",)),
             (Call, ("*args",)), (Index, ("base", "index")), (FieldAccess, ("base",)))


def _children_fields(cls) -> tuple:
    for base, fields in _CHILDREN:
        if issubclass(cls, base):
            return fields
    return ()


_OPERANDS: dict = {}        # class -> its instances' subexpressions


def subexpressions(e: Expr) -> tuple:
    """The direct operand expressions of `e`, left to right."""
    get = _OPERANDS.get(e.__class__)
    if get is None:
        fields = _children_fields(e.__class__) if isinstance(e, Expr) else ()
        if not fields:
            get = lambda e: ()                                  # noqa: E731
        elif fields[0].startswith("*"):
            get = lambda e, many=attrgetter(fields[0][1:]): tuple(many(e))     # noqa: E731
        elif len(fields) == 1:
            get = lambda e, one=attrgetter(fields[0]): (one(e),)              # noqa: E731
        else:
            get = attrgetter(*fields)                           # a tuple of them
        _OPERANDS[e.__class__] = get
    return get(e)


_PUSHES: dict = {}          # class -> ((getter, is a list), ...): what walk pushes, last child first


def _pushes(cls) -> tuple:
    found = _PUSHES[cls] = tuple((attrgetter(f.lstrip("*")), f.startswith("*"))
                                 for f in reversed(_children_fields(cls)))
    return found


def walk(node):
    """Every statement and expression node inside `node` (itself included),
    outer ones first, in source order (an explicit stack: no recursion limit)."""
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    pushes = _PUSHES
    while stack:
        n = pop()
        if n is None:
            continue
        yield n
        steps = pushes.get(n.__class__)
        if steps is None:
            steps = _pushes(n.__class__)
        for get, many in steps:
            if many:
                extend(reversed(get(n)))
            else:
                push(get(n))


def conjuncts(e: Expr):
    """The operands of a chain of `&&` (`a && b && c`: a, b, c); `e` itself otherwise."""
    if isinstance(e, Binary) and e.op == "&&":
        yield from conjuncts(e.left)
        yield from conjuncts(e.right)
    else:
        yield e


def start_pos(node: Node) -> Pos:
    """Where a node's text starts (a Binary's or an Assign's own position is
    its operator).

    Casts, calls, index and field accesses already carry their start (the
    parser places them at their first child), so the walk stops there: going
    on down their left spine made parsing a chain of n postfix operations
    cost n^2 (8,000 chained field accesses took 7.5 s).
    """
    while True:
        cls = node.__class__
        if cls is Binary:
            node = node.left
        elif cls is Assign:
            node = node.target
        elif cls is ExprStmt:
            node = node.expr
        else:
            return node.pos


# walk() of a body, kept by identity (the tree is never changed): the
# lowering (plan, effects, hoist, may_unmap) and the emitter's struct scan
# each walk every checked body, about seven walks a body in a gate worker.
_NODES: dict = {}


def nodes(node) -> tuple:
    """walk(node) as a tuple. Kept for the run in a process that ends with its
    run (nxc/cache.py, kept_for_the_run: a worker of `nxc test`), under the
    node's id with the node itself held, so an id is never reused meanwhile;
    walked again each time in any other process."""
    kept = kept_for_the_run(_NODES, id(node), lambda: (node, tuple(walk(node))), least=65536)
    return kept[1]


class NodeVisitor:
    """Dispatch `visit(node, *args)` to `visit_<ClassName>`, else `generic_visit`.

    The one dispatch style of nxc's passes (the checker, both emitters). The
    method for each node class is looked up once per visitor class, so a
    visit costs a dict lookup, not a getattr on a built string.
    """
    _visit_methods: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._visit_methods = {}

    def visit(self, node, *args):
        method = self._visit_methods.get(node.__class__)
        if method is None:
            method = self.visit_method(node)
        return method(self, node, *args)

    def visit_method(self, node):
        """The function `visit` calls for this node's class (looked up once)."""
        method = getattr(type(self), "visit_" + node.__class__.__name__, None) or type(self).generic_visit
        self._visit_methods[node.__class__] = method
        return method

    def generic_visit(self, node, *args):
        raise NotImplementedError(f"{type(self).__name__} has no visit_{type(node).__name__}")
