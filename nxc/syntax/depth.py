"""The nesting limit: a parsed module deeper than MAX_DEPTH is an error.

Every later pass (checker, emitters, the parse cache's pickle) walks the AST
recursively; nxc/deep.py gives them a stack for far more than MAX_DEPTH
levels, and this check, one loop over the nodes right after parsing, makes
sure no program goes beyond: above the limit the user gets
`path:line:col: error: ... nested too deeply` at the first node past it,
never a RecursionError or a crashed interpreter (docs/language.md, Limits).
"""
from __future__ import annotations

import dataclasses

from nxc.diagnostics import Diagnostics
from nxc.syntax import ast

# Levels of the syntax tree: an `if` costs two (the `if` and its block), an
# operator, a cast, a call or a `[i]` one. 10,000 is over ten times what
# any pass managed before nxc/deep.py (97 nested ifs, 242 chained casts).
MAX_DEPTH = 10_000

_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        # Fields the parser sets (init=True), other than positions: the
        # checker's own (ty, const, sym) are not children.
        names = tuple(f.name for f in dataclasses.fields(cls)
                      if f.init and f.name != "pos" and not f.name.endswith("_pos"))
        _CHILD_FIELDS[cls] = names
    return names


def check_depth(items: list, diags: Diagnostics, limit: int = MAX_DEPTH) -> None:
    """Report (and raise) the first node of `items` nested deeper than `limit`."""
    stack = [(node, 1) for node in items if isinstance(node, ast.Node)]
    Node = ast.Node
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            diags.error(ast.start_pos(node), f"nested too deeply: more than {limit} levels of nesting "
                                             "(statements, operators, casts, calls; see docs/language.md, Limits)")
            diags.raise_if_errors()
        for name in _child_fields(node.__class__):
            value = getattr(node, name)
            if isinstance(value, Node):
                stack.append((value, depth + 1))
            elif value.__class__ is list:
                stack.extend((v, depth + 1) for v in value if isinstance(v, Node))
