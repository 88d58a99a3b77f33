"""The .nx printer (nxc/syntax/printer.py): parse -> print -> parse gives the
same AST, positions aside, over every bundled module and over generated
programs (the method of pycparser's test_c_generator); and it writes only
the parentheses the precedence table needs."""
from __future__ import annotations

import glob
import os
import textwrap

import pytest

from nxc.diagnostics import Diagnostics, SourceFile
from nxc.paths import bundled_dir
from nxc.syntax import ast
from nxc.syntax.parse import parse_source
from nxc.syntax.printer import expr_text, print_module

from bench_modules import load_bench

HERE = os.path.dirname(__file__)
MODULES = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx"))) + sorted(glob.glob(os.path.join(HERE, "nx", "*.nx")))
POSITIONS = {"pos", "end_pos", "name_pos", "source"}


gen_program = load_bench("gen_program")


def parse(text: str, name: str = "<test>.nx") -> ast.Module:
    return parse_source(SourceFile(name, text), Diagnostics())


def shape(node):
    """The AST as nested tuples, without positions: what a round trip keeps."""
    if isinstance(node, list):
        return [shape(x) for x in node]
    if isinstance(node, ast.Node):
        return (type(node).__name__,) + tuple(
            (f, shape(getattr(node, f))) for f in node.__dataclass_fields__ if f not in POSITIONS)
    return node


def assert_round_trip(text: str) -> str:
    first = parse(text)
    printed = print_module(first)
    again = parse(printed, "<printed>.nx")
    assert shape(again) == shape(first)
    assert print_module(again) == printed           # printing is a fixed point
    return printed


def test_shape_sees_what_parentheses_change():
    # The comparison the round trip rests on must tell these apart.
    assert shape(parse("const A: i64 = (1 + 2) * 3")) != shape(parse("const A: i64 = 1 + 2 * 3"))
    assert shape(parse("const A: i64 = 1 + 2 * 3")) == shape(parse("const A: i64 = 1 + (2 * 3)"))


def test_there_are_modules_to_round_trip():
    names = {os.path.basename(p) for p in MODULES}
    assert {"nx_f32.nx", "nx_kvcache.nx", "nx_f32_soft.nx"} <= names


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_round_trip_bundled(path):
    with open(path, encoding="utf-8") as f:
        assert_round_trip(f.read())


@pytest.mark.parametrize("seed", range(1, 26))
def test_round_trip_generated(seed):
    assert_round_trip(gen_program.generate(seed))


@pytest.mark.parametrize("source, printed", [
    ("(a + b) * 2", "(a + b) * 2"),
    ("a + (b * 2)", "a + b * 2"),
    ("(a - b) - c", "a - b - c"),
    ("a - (b - c)", "a - (b - c)"),
    ("(a < b) == c", "(a < b) == c"),
    ("a < (b + 1)", "a < b + 1"),
    ("(a || b) && c", "(a || b) && c"),
    ("a || (b && c)", "a || b && c"),
    ("(a & 0x7F) >= -b", "a & 0x7F >= -b"),        # nx: & binds tighter than >= (not C's rule)
    ("-(a + b)", "-(a + b)"),
    ("(-a) as i64", "-a as i64"),
    ("-(a as i64)", "-(a as i64)"),
    ("(a as i32) as i64", "a as i32 as i64"),
    ("(a + b) as u8", "(a + b) as u8"),
    ("(*p)[i]", "(*p)[i]"),
    ("*(p[i])", "*p[i]"),
    ("&(p.f)", "&p.f"),
    ("(&p).f", "(&p).f"),
    ("f((a), (b + c))[0]", "f(a, b + c)[0]"),
    ("sizeof(*Node) * n", "sizeof(*Node) * n"),
    ("!(a == b)", "!(a == b)"),
    ("& &x", "& &x"),
    ("- -x", "--x"),
])
def test_minimal_parentheses(source, printed):
    e = parse(f"const A: i64 = {source}").items[0].value
    assert expr_text(e) == printed
    assert shape(parse(f"const A: i64 = {printed}").items[0].value) == shape(e)


def test_whole_module_text():
    source = textwrap.dedent("""\
        // module: printer_sample
        import "nx_syscalls.nx"
        import "nx_tier.nx"
        const N = 4
        const M: u8 = 0xFF   // comments are not in the AST
        type Word = *u64
        struct Pair { a: i64, b: *Pair }
        var counter: i64 = 0
        extern func sys_write(fd: i64, buf: *u8, n: i64) -> i64
        func step(p: *Pair, k: i64) {
            if k < 0 { return } else if k == 0 { p.a = 1 } else { p.a += k; { let t = k; p.a = t } }
            var i: i64 = 0
            while true { i = i + 1; if i > N { break } else { continue } }
            step(p.b, k - 1)
        }
        """)
    assert assert_round_trip(source) == textwrap.dedent("""\
        // module: printer_sample

        import "nx_syscalls.nx"
        import "nx_tier.nx"

        const N = 4
        const M: u8 = 0xFF

        type Word = *u64

        struct Pair {
            a: i64
            b: *Pair
        }

        var counter: i64 = 0

        extern func sys_write(fd: i64, buf: *u8, n: i64) -> i64

        func step(p: *Pair, k: i64) {
            if k < 0 {
                return
            } else if k == 0 {
                p.a = 1
            } else {
                p.a += k
                {
                    let t = k
                    p.a = t
                }
            }
            var i: i64 = 0
            while true {
                i = i + 1
                if i > N {
                    break
                } else {
                    continue
                }
            }
            step(p.b, k - 1)
        }
        """)
