"""Which values a failing gate should show: the operands of its guard.

A gate fails by returning non-zero from a check such as

    if r != NX_OK { return 10 }

and the most useful thing a runner can say next to `main returned 10` is
`r = 3, NX_OK = 0`. The checker records that `if` condition as the return's
guard (check.GateReturn.guard); this module picks the operands worth showing
and writes them back as .nx text (nxc/syntax/printer.py). Both backends use it, so they capture the
same operands under the same names: the backend records each operand's value
*while the condition is evaluated* (never by evaluating it a second time, which
would repeat calls and their side effects), and only the operands that were
actually evaluated are shown (`||` and `&&` short-circuit).
"""
from __future__ import annotations

from dataclasses import dataclass

from nxc.syntax import ast
from nxc.syntax.printer import expr_text
from nxc.check.types import BoolType, IntType, PointerType

# How many operand values a gate records; a guard with more shows the first ones.
CAPTURE_SLOTS = 16

_CMP = {"==", "!=", "<", "<=", ">", ">="}


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


def guard_operands(guard: ast.Expr | None, info) -> list[ast.Expr]:
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
        if _is_literal(e, info) or not _showable(info.ty(e)):
            return
        found.append(e)

    if guard is not None:
        walk(guard)
    return found


def plan_captures(guard: ast.Expr | None, info) -> list[tuple[ast.Expr, CapturedOperand]]:
    """Operands of `guard` paired with the slot each one's value goes to."""
    plan = []
    for slot, e in enumerate(guard_operands(guard, info)[:CAPTURE_SLOTS]):
        plan.append((e, CapturedOperand(expr_text(e), slot, _kind(info.ty(e)))))
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


def _is_literal(e: ast.Expr, info) -> bool:
    if isinstance(e, ast.Name):
        return False                    # a named constant is worth showing
    if isinstance(e, (ast.IntLit, ast.BoolLit, ast.SizeOf)):
        return True
    if isinstance(e, ast.Cast):                 # `0 as *T`
        return _is_literal(e.expr, info)
    return info.const(e) is not None and not _mentions_name(e)


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
