"""Which values a failing gate should show: the operands of its guard.

A gate fails by returning non-zero from a check such as

    if r != NX_OK { return 10 }

and the most useful thing a runner can say next to `main returned 10` is
`r = 3, NX_OK = 0`. The checker records that `if` condition as the return's
guard (check.GateReturn.guard); this module picks the operands worth showing
and writes them back as .nx text. Both backends use it, so they capture the
same operands under the same names: the backend records each operand's value
*while the condition is evaluated* (never by evaluating it a second time, which
would repeat calls and their side effects), and only the operands that were
actually evaluated are shown (`||` and `&&` short-circuit).
"""
from __future__ import annotations

from dataclasses import dataclass

from nxc.syntax import ast
from nxc.check.types import BoolType, IntType, PointerType

# How many operand values a gate records; a guard with more shows the first ones.
CAPTURE_SLOTS = 16

_CMP = {"==", "!=", "<", "<=", ">", ">="}

# Binding strength, loosest first, as in docs/language.md section 6.
_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
         "|": 4, "^": 5, "&": 6, "<<": 7, ">>": 7, "+": 8, "-": 8, "*": 9, "/": 9, "%": 9}
_PREC_AS, _PREC_UNARY, _PREC_POSTFIX = 10, 11, 12


@dataclass(frozen=True)
class CapturedOperand:
    """One operand of a gate's guard: its text, its value slot and how to show it."""
    text: str
    slot: int
    kind: str          # "int" | "uint64" | "bool" | "ptr"

    def show(self, raw: int):
        """The recorded 64-bit value, as the operand's type reads it."""
        if self.kind == "bool":
            return "true" if raw else "false"
        if self.kind == "ptr":
            return hex(raw & 0xFFFFFFFFFFFFFFFF)
        if self.kind == "uint64":
            return raw & 0xFFFFFFFFFFFFFFFF
        return raw


def guard_operands(guard: ast.Expr | None) -> list[ast.Expr]:
    """The operands of the comparisons in `guard` (through `&&`, `||`, `!`).

    A guard that is not a comparison (`if !ok`, `if f(x)`) shows itself.
    Literals (`0`, `-1`, `1 << 3`) are left out: their value is on the line.
    """
    found: list[ast.Expr] = []

    def walk(e: ast.Expr) -> None:
        if isinstance(e, ast.Binary) and e.op in ("&&", "||"):
            walk(e.left)
            walk(e.right)
        elif isinstance(e, ast.Unary) and e.op == "!":
            walk(e.operand)
        elif isinstance(e, ast.Binary) and e.op in _CMP:
            add(e.left)
            add(e.right)
        else:
            add(e)

    def add(e: ast.Expr) -> None:
        if _is_literal(e) or not _showable(e.ty):
            return
        found.append(e)

    if guard is not None:
        walk(guard)
    return found


def plan_captures(guard: ast.Expr | None) -> list[tuple[ast.Expr, CapturedOperand]]:
    """Operands of `guard` paired with the slot each one's value goes to."""
    plan = []
    for slot, e in enumerate(guard_operands(guard)[:CAPTURE_SLOTS]):
        plan.append((e, CapturedOperand(render_expr(e), slot, _kind(e.ty))))
    return plan


def captured_values(operands: list[CapturedOperand], mask: int, raw: list[int]) -> list[tuple[str, object]]:
    """(text, value) for each operand that was evaluated; repeats shown once."""
    shown, seen = [], set()
    for op in operands:
        if not (mask >> op.slot) & 1 or op.slot >= len(raw):
            continue
        pair = (op.text, op.show(raw[op.slot]))
        if pair not in seen:
            seen.add(pair)
            shown.append(pair)
    return shown


def _is_literal(e: ast.Expr) -> bool:
    if isinstance(e, ast.Name):
        return False                    # a named constant is worth showing
    if isinstance(e, (ast.IntLit, ast.BoolLit, ast.SizeOf)):
        return True
    if isinstance(e, ast.Cast):                 # `0 as *T`
        return _is_literal(e.expr)
    return e.const is not None and not _mentions_name(e)


def _mentions_name(e) -> bool:
    return isinstance(e, ast.Name) or any(_mentions_name(x) for x in ast.subexpressions(e))


def _showable(t) -> bool:
    return isinstance(t, (IntType, BoolType, PointerType))


def _kind(t) -> str:
    if isinstance(t, BoolType):
        return "bool"
    if isinstance(t, PointerType):
        return "ptr"
    if isinstance(t, IntType) and t.bits == 64 and not t.signed:
        return "uint64"
    return "int"


# ---- .nx text of an expression ----
def render_type(t) -> str:
    if isinstance(t, ast.TypePointer):
        return "*" + render_type(t.target)
    return getattr(t, "name", "?")


def render_expr(e: ast.Expr) -> str:
    """The expression as .nx source, with only the parentheses it needs."""
    return _render(e, 0)


def _render(e: ast.Expr, outer: int) -> str:
    text, prec = _render_bare(e)
    return f"({text})" if prec < outer else text


def _render_bare(e: ast.Expr) -> tuple[str, int]:
    if isinstance(e, ast.IntLit):
        return (e.text or str(e.value)), _PREC_POSTFIX + 1
    if isinstance(e, ast.BoolLit):
        return ("true" if e.value else "false"), _PREC_POSTFIX + 1
    if isinstance(e, ast.Name):
        return e.ident, _PREC_POSTFIX + 1
    if isinstance(e, ast.SizeOf):
        return f"sizeof({render_type(e.target)})", _PREC_POSTFIX + 1
    if isinstance(e, ast.Call):
        args = ", ".join(_render(a, 0) for a in e.args)
        return f"{_render(e.func, _PREC_POSTFIX)}({args})", _PREC_POSTFIX
    if isinstance(e, ast.Index):
        return f"{_render(e.base, _PREC_POSTFIX)}[{_render(e.index, 0)}]", _PREC_POSTFIX
    if isinstance(e, ast.FieldAccess):
        return f"{_render(e.base, _PREC_POSTFIX)}.{e.name}", _PREC_POSTFIX
    if isinstance(e, ast.Unary):
        return f"{e.op}{_render(e.operand, _PREC_UNARY)}", _PREC_UNARY
    if isinstance(e, ast.Cast):
        return f"{_render(e.expr, _PREC_AS)} as {render_type(e.target)}", _PREC_AS
    if isinstance(e, ast.Binary):
        p = _PREC[e.op]
        # Left-associative; comparisons do not chain, so both sides bind tighter.
        left = _render(e.left, p + 1 if p == 3 else p)
        right = _render(e.right, p + 1)
        return f"{left} {e.op} {right}", p
    return "?", 0
