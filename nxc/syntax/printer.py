"""The .nx printer: an AST back to .nx source text.

Whole modules (`print_module`) or one expression (`expr_text`, which the
gate reports use to name a failing guard's operands). Parentheses are only
written where the parser's precedence table (nxc/syntax/parse.py) needs
them, so `(a + b) * 2` keeps its pair and `a + (b * 2)` loses it. Parsing
the printed text gives the same AST, positions aside (tests/test_printer.py
checks that over every bundled module and over generated programs).

Comments and blank lines are not in the AST and so not printed, except the
module header's `// key: value` lines (ast.Module.header). The formatter
that keeps them works on the token stream.
"""
from __future__ import annotations

from nxc.syntax import ast
from nxc.syntax.parse import (BINARY_PRECEDENCE, CAST_PRECEDENCE, COMPARISON_PRECEDENCE, POSTFIX_PRECEDENCE,
                              UNARY_PRECEDENCE)

_ATOM = POSTFIX_PRECEDENCE + 1
INDENT = "    "


def type_text(t) -> str:
    """A type as written: `i64`, `*u8`, `**Node` (`void` for no type)."""
    if t is None:
        return "void"
    if isinstance(t, ast.TypePointer):
        return "*" + type_text(t.target)
    return t.name


def signature(decl: ast.FuncDecl) -> str:
    """`func name(a: i64, p: *u8) -> i64`, as declared (`extern func` for an extern)."""
    params = ", ".join(f"{p.name}: {type_text(p.type_expr)}" for p in decl.params)
    ret = f" -> {type_text(decl.ret)}" if decl.ret is not None else ""
    return f"{'extern ' if decl.is_extern else ''}func {decl.name}({params}){ret}"


def expr_text(e: ast.Expr) -> str:
    """The expression as .nx source, with only the parentheses it needs."""
    return _EXPRS.operand(e, 0)


class _ExprPrinter(ast.NodeVisitor):
    """visit_<Class>(e) -> (text, precedence of its outermost operator)."""

    def operand(self, e: ast.Expr, outer: int) -> str:
        text, prec = self.visit(e)
        return f"({text})" if prec < outer else text

    def visit_IntLit(self, e: ast.IntLit):
        return e.text or str(e.value), _ATOM

    def visit_BoolLit(self, e: ast.BoolLit):
        return ("true" if e.value else "false"), _ATOM

    def visit_Name(self, e: ast.Name):
        return e.ident, _ATOM

    def visit_SizeOf(self, e: ast.SizeOf):
        return f"sizeof({type_text(e.target)})", _ATOM

    def visit_Call(self, e: ast.Call):
        args = ", ".join(self.operand(a, 0) for a in e.args)
        return f"{self.operand(e.func, POSTFIX_PRECEDENCE)}({args})", POSTFIX_PRECEDENCE

    def visit_Index(self, e: ast.Index):
        return f"{self.operand(e.base, POSTFIX_PRECEDENCE)}[{self.operand(e.index, 0)}]", POSTFIX_PRECEDENCE

    def visit_FieldAccess(self, e: ast.FieldAccess):
        return f"{self.operand(e.base, POSTFIX_PRECEDENCE)}.{e.name}", POSTFIX_PRECEDENCE

    def visit_Unary(self, e: ast.Unary):
        inner = self.operand(e.operand, UNARY_PRECEDENCE)
        # `& &x` written together would lex as `&&`.
        sep = " " if e.op == "&" and inner.startswith("&") else ""
        return f"{e.op}{sep}{inner}", UNARY_PRECEDENCE

    def visit_Cast(self, e: ast.Cast):
        # Left-associative: `x as i32 as i64` is (x as i32) as i64.
        return f"{self.operand(e.expr, CAST_PRECEDENCE)} as {type_text(e.target)}", CAST_PRECEDENCE

    def visit_Binary(self, e: ast.Binary):
        p = BINARY_PRECEDENCE[e.op]
        # Left-associative; comparisons do not chain, so both sides bind tighter.
        left = self.operand(e.left, p + 1 if p == COMPARISON_PRECEDENCE else p)
        right = self.operand(e.right, p + 1)
        return f"{left} {e.op} {right}", p


_EXPRS = _ExprPrinter()


class _ModulePrinter(ast.NodeVisitor):
    """visit_<Class>(node, depth): appends the node's lines to self.lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def block(self, head: str, b: ast.Block, depth: int) -> None:
        self.line(depth, f"{head} {{" if head else "{")
        for s in b.stmts:
            self.visit(s, depth + 1)
        self.line(depth, "}")

    # ---- top level ----
    def visit_Import(self, d: ast.Import, depth: int) -> None:
        self.line(depth, f'import "{d.path}"')

    def visit_ConstDecl(self, d: ast.ConstDecl, depth: int) -> None:
        self.line(depth, f"const {d.name}{_annotation(d.type_expr)} = {expr_text(d.value)}")

    def visit_TypeAlias(self, d: ast.TypeAlias, depth: int) -> None:
        self.line(depth, f"type {d.name} = {type_text(d.target)}")

    def visit_StructDecl(self, d: ast.StructDecl, depth: int) -> None:
        self.line(depth, f"struct {d.name} {{")
        for f in d.fields:
            self.line(depth + 1, f"{f.name}: {type_text(f.type_expr)}")
        self.line(depth, "}")

    def visit_GlobalDecl(self, d: ast.GlobalDecl, depth: int) -> None:
        self.line(depth, f"var {d.name}: {type_text(d.type_expr)} = {expr_text(d.value)}")

    def visit_FuncDecl(self, d: ast.FuncDecl, depth: int) -> None:
        params = ", ".join(f"{p.name}: {type_text(p.type_expr)}" for p in d.params)
        head = f"func {d.name}({params})" + ("" if d.ret is None else f" -> {type_text(d.ret)}")
        if d.is_extern:
            self.line(depth, "extern " + head)
        else:
            self.block(head, d.body, depth)

    # ---- statements ----
    def visit_VarDecl(self, s: ast.VarDecl, depth: int) -> None:
        word = "var" if s.mutable else "let"
        self.line(depth, f"{word} {s.name}{_annotation(s.type_expr)} = {expr_text(s.value)}")

    def visit_Assign(self, s: ast.Assign, depth: int) -> None:
        self.line(depth, f"{expr_text(s.target)} {s.op} {expr_text(s.value)}")

    def visit_If(self, s: ast.If, depth: int, prefix: str = "if") -> None:
        self.block(f"{prefix} {expr_text(s.cond)}", s.then, depth)
        if s.orelse is None:
            return
        self.lines.pop()                        # the `}`: `} else ...` goes on its line
        if isinstance(s.orelse, ast.If):
            self.visit_If(s.orelse, depth, prefix="} else if")
        else:
            self.block("} else", s.orelse, depth)

    def visit_While(self, s: ast.While, depth: int) -> None:
        self.block(f"while {expr_text(s.cond)}", s.body, depth)

    def visit_Break(self, s: ast.Break, depth: int) -> None:
        self.line(depth, "break")

    def visit_Continue(self, s: ast.Continue, depth: int) -> None:
        self.line(depth, "continue")

    def visit_Return(self, s: ast.Return, depth: int) -> None:
        self.line(depth, "return" if s.value is None else f"return {expr_text(s.value)}")

    def visit_ExprStmt(self, s: ast.ExprStmt, depth: int) -> None:
        self.line(depth, expr_text(s.expr))

    def visit_Block(self, s: ast.Block, depth: int) -> None:
        self.block("", s, depth)


def _annotation(t) -> str:
    return "" if t is None else f": {type_text(t)}"


def _one_line(item) -> bool:
    return isinstance(item, (ast.Import, ast.ConstDecl, ast.TypeAlias, ast.GlobalDecl)) \
        or (isinstance(item, ast.FuncDecl) and item.is_extern)


def print_module(module: ast.Module) -> str:
    """The module as .nx source: its header lines, then its items, a blank
    line between them except inside a run of one-line items of one kind
    (imports, consts, ...)."""
    out = _ModulePrinter()
    for key, value in module.header.items():
        out.line(0, f"// {key}: {value}")
    prev = None
    for item in module.items:
        together = prev is not None and type(prev) is type(item) and _one_line(prev) and _one_line(item)
        if out.lines and not together:
            out.lines.append("")
        out.visit(item, 0)
        prev = item
    return "\n".join(out.lines) + "\n"
