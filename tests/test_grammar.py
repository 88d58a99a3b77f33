"""The parser: statement ends, comments, literals, precedence, positions.

Syntax errors and their locations are data: tests/diagnostics/syntax/*.nx,
run by test_diagnostics_data.py."""
from __future__ import annotations

import pytest

from nxc.syntax import ast
from nxc.diagnostics import Diagnostics, SourceFile
from nxc.syntax.parse import parse_int_literal, parse_source, read_header


def parse(text: str) -> ast.Module:
    return parse_source(SourceFile("t.nx", text), Diagnostics())


def body(text: str) -> list:
    m = parse("func f() -> i64 {\n" + text + "\n}\n")
    return m.items[0].body.stmts


def test_semicolons_and_newlines_both_end_statements():
    stmts = body("var i: i64 = 0; i = i + 1\ni = 2")
    assert [type(s).__name__ for s in stmts] == ["VarDecl", "Assign", "Assign"]


def test_newlines_inside_parentheses_do_not_end_statements():
    stmts = body("let x: i64 = g(1,\n    2,\n    3)\nreturn x")
    call = stmts[0].value
    assert isinstance(call, ast.Call) and len(call.args) == 3


def test_trailing_binary_operator_continues_the_line():
    stmts = body("let x: i64 = 1 +\n  2 *\n  3\nreturn x")
    assert isinstance(stmts[0].value, ast.Binary) and stmts[0].value.op == "+"


def test_else_on_the_next_line_with_comments_between():
    stmts = body("if 1 < 2 {\n return 1\n}\n// a comment\n\n/* block */\nelse {\n return 2\n}\nreturn 3")
    assert isinstance(stmts[0], ast.If) and stmts[0].orelse is not None
    assert len(stmts) == 2


def test_multiline_block_comment_acts_as_newline():
    stmts = body("let a: i64 = 1 /* one\n two */ let b: i64 = 2\nreturn a + b")
    assert len(stmts) == 3


@pytest.mark.parametrize("text,value", [("0", 0), ("42", 42), ("0x7FFFFFFF", 0x7FFFFFFF),
                                        ("0b1011", 11), ("0xFFFFFFFFFFFFFFFF", 2**64 - 1)])
def test_integer_literals(text, value):
    assert parse_int_literal(text) == value


@pytest.mark.parametrize("text", ["0x", "0x12g", "0xz", "0x_1", "0x 1", "0x+1", "0X-1", "0x1.5", "0b102", "12ab",
                                  "0x\u0661", "0" * 30 + "x1"])
def test_bad_integer_literals(text):
    assert parse_int_literal(text) is None


def test_hex_literals_with_the_regexes_answer():
    # the hex fast path gives what the regular forms give, leading zeros and
    # lengths past 64 bits included
    for text in ("0x0", "0X00ff", "0x" + "0" * 100 + "1", "0x" + "f" * 16, "0x1" + "0" * 16, "0x" + "f" * 70,
                 "0x" + "f" * 71, "0xABCdef"):
        assert parse_int_literal(text) == _regex_int(text), text


def _regex_int(text):
    import re
    m = re.fullmatch(r"0[xX]([0-9A-Fa-f]+)", text)
    digits = m.group(1).lstrip("0")
    return int(digits or "0", 16) if len(digits) <= 70 else 1 << 64


def test_precedence_is_rust_like():
    e = body("return 1 + 2 * 3 << 1 & 7 == 6 || false")[0].value
    # || loosest, then ==, then &, then <<, then +, then *
    assert e.op == "||"
    eq = e.left
    assert eq.op == "==" and eq.left.op == "&" and eq.left.left.op == "<<"
    assert eq.left.left.left.op == "+" and eq.left.left.left.right.op == "*"


def test_as_binds_tighter_than_multiplication_and_looser_than_unary():
    e = body("return -x as i64 * 2")[0].value
    assert e.op == "*" and isinstance(e.left, ast.Cast)
    assert isinstance(e.left.expr, ast.Unary)


def test_positions_on_nodes():
    m = parse("const A: i64 = 1\n\nfunc f(x: i64) -> i64 {\n    return x + A\n}\n")
    f = m.items[1]
    assert (f.pos.line, f.pos.col) == (3, 6)
    ret = f.body.stmts[0]
    assert (ret.pos.line, ret.pos.col) == (4, 5)
    assert (ret.value.pos.line, ret.value.pos.col) == (4, 14)


def test_all_declaration_kinds_parse():
    m = parse("""import "x.nx"
const A: i64 = 0x10
type word = u32
struct P { a: i64, b: *P
  c: u8 }
extern func sys_mmap(nbytes: i64) -> *void
var g: i64 = 3
func f(p: *P) { p.a += 1; *p.b = 0 as *P; p[0].c = ~(1 as u8); g <<= 2 }
""")
    kinds = [type(i).__name__ for i in m.items]
    assert kinds == ["Import", "ConstDecl", "TypeAlias", "StructDecl", "FuncDecl", "GlobalDecl", "FuncDecl"]
    assert [f.name for f in m.items[3].fields] == ["a", "b", "c"]
    assert m.items[4].is_extern


def test_header_metadata():
    text = "// mod.nx -- a thing\n//\n// genealogy_id: kwon_2023\n// license_tier: ORIGINAL\nimport \"a.nx\"\n// lineage_id: not_header\n"
    assert read_header(text) == {"genealogy_id": "kwon_2023", "license_tier": "ORIGINAL"}


def test_empty_file_is_a_valid_module():
    assert parse("").items == []
    assert parse("// only a comment\n").items == []


def test_blanks_and_carriage_returns_at_the_end_are_fine():
    assert len(parse("func f() -> i64 { return 1 }\r\n  \t\r").items) == 1
    assert len(parse("func f() -> i64 {\r\n  return 1\r\n}\r\n").items) == 1


def test_positions_after_a_multiline_block_comment():
    m = parse("/* one\n two\n   three */ func f() -> i64 { return 1 }\n")
    assert (m.items[0].pos.line, m.items[0].pos.col) == (3, 18)      # the name


def test_long_lists_parse_in_order():
    # Left-recursive helper rules build lists in place (nxc/syntax/lalr.py): every
    # element must come out, in source order.
    stmts = body("\n".join(f"let v{i} = {i}" for i in range(3000)))
    assert [s.name for s in stmts] == [f"v{i}" for i in range(3000)]
    args = body("g(" + ", ".join(str(i) for i in range(500)) + ")")[0].expr.args
    assert [a.value for a in args] == list(range(500))
