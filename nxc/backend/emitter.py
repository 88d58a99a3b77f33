"""What the C and Python function emitters share (in the manner of mypyc's
`Emitter`): the checked program's side tables, the shared lowering plan
(nxc/lower/plan.py), the output lines and their indentation, temporaries,
and the walk over a function body. Each backend's emitter subclasses it and
writes one `visit_<Class>` per statement and expression kind.
"""
from __future__ import annotations

from itertools import accumulate, repeat

from nxc.syntax import ast
from nxc.check.program import Function, Program
from nxc.lower.guards import CapturedOperand, captured_values
from nxc.lower.plan import ProgramPlan
from nxc.lower.f32_unbox import primitive_name


class FunctionEmitterBase(ast.NodeVisitor):
    """One function's body. Subclasses define `emit` (what one output line
    holds) and the `visit_<Class>` methods."""

    TEMP_PREFIX = "nx_t"
    INDENT = "    "

    def __init__(self, program: Program, fn: Function, gate: bool, plan: ProgramPlan):
        # `plan`: the program's lowering (nxc/lower/plan.py), run before any
        # emitter is made; an emitter runs no analysis of its own.
        self.program = program
        self.fn = fn
        self.gate = gate
        info = program.info
        self.info = info
        # The checker's tables, read as plain calls: self.ty(e), self.const(e) ...
        self.ty, self.const, self.sym, self.site_of = info.ty, info.const, info.sym, info.site
        self.plan = plan
        self.fplan = self.plan.functions[fn]
        self.order = self.plan.order
        # The gate records the operands of each return's guard while the guard
        # is evaluated (nxc/lower/guards.py): operand -> its value slot.
        self.capture_slot = self.fplan.capture_slot if gate else {}
        self.lines: list = []
        self.temps: list[tuple[str, str]] = []      # (type text, name), declared by the subclass
        self.depth = 1

    # ---- output ----
    def emit(self, text: str, line: int | None = None) -> None:   # pragma: no cover - abstract
        raise NotImplementedError

    def indentation(self, depth: int | None = None) -> str:
        """The leading white space of a line at `depth` (default: the current one)."""
        return self.INDENT * (self.depth if depth is None else depth)

    def new_temp(self, type_text: str) -> str:
        """A fresh temporary of the function, of the given (backend) type."""
        name = f"{self.TEMP_PREFIX}{len(self.temps)}"
        self.temps.append((type_text, name))
        return name

    def empty_block(self) -> None:
        """What a block with no statements needs (Python: `pass`)."""

    # ---- the walk ----
    def body(self) -> None:
        for s in self.fn.decl.body.stmts:
            self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        self.visit(s)

    def block(self, b: ast.Block) -> None:
        self.depth += 1
        n = len(self.lines)
        for s in b.stmts:
            self.stmt(s)
        if len(self.lines) == n:
            self.empty_block()
        self.depth -= 1

    # ---- evaluation order (nxc/lower/plan.py) ----
    # The plan answers for every expression of the body; one the emitter made
    # itself (none today) is asked of the plan's EvalOrder.
    def has_call(self, e) -> bool:
        known = self.fplan.order.get(e)
        return self.order.has_call(e) if known is None else known[0]

    def is_stable(self, e) -> bool:
        known = self.fplan.order.get(e)
        return self.order.is_stable(e) if known is None else known[1]

    def primitive(self, e) -> str | None:
        """The float32 primitive the call `e` is, if it is one (f32_unbox.primitive_name)."""
        if e in self.fplan.order:
            return self.fplan.primitives.get(e)
        return primitive_name(e, self.info)


def strip_outer_parens(text: str) -> str:
    """Drop one pair of parentheses around the whole text (a statement or a
    condition needs none): `(a + b)` -> `a + b`, but `(a) + (b)` stays."""
    if text.startswith("(") and text.endswith(")"):
        # The depth after each character, computed in C (map, accumulate,
        # list.index): a loop in Python here, at every level of a deep
        # expression, made emitting it n^2 slow (1,500 levels: 14 s).
        depths = list(accumulate(map(_PAREN_DELTA.get, text, repeat(0))))
        if depths.index(0) != len(text) - 1:
            return text
        return text[1:-1]
    return text


_PAREN_DELTA = {"(": 1, ")": -1}


class CapturesMixin:
    """The emitted module's record of what each gate return's guard captures."""
    captures: dict[int, list[CapturedOperand]]

    def captured(self, site: int, mask: int, raw) -> list[tuple[str, object]]:
        """(text, value) of the guard operands recorded before gate return `site`."""
        return captured_values(self.captures.get(site, []), mask, list(raw))
