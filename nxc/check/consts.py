"""Constant folding: the value of an operation on constants, under the
run-time rules (wrap-around to the type's width, truncating division, shift
counts masked to the width), so a folded constant equals what either backend
would compute."""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.types import BoolType, IntType, PointerType, Type

ARITH_OPS = frozenset({"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"})
CMP_OPS = frozenset({"==", "!=", "<", "<=", ">", ">="})
LOGIC_OPS = frozenset({"&&", "||"})


def is_literal_expr(e: ast.Expr) -> bool:
    """An expression of integer literals only: it takes its type from context."""
    if isinstance(e, ast.IntLit):
        return True
    if isinstance(e, ast.Unary) and e.op in ("-", "~"):
        return is_literal_expr(e.operand)
    if isinstance(e, ast.Binary) and e.op in ARITH_OPS:
        return is_literal_expr(e.left) and is_literal_expr(e.right)
    return False


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
