"""The C and Python backends agree bit for bit.

Three layers:
* integer semantics, function by function: every operator at every width,
  shifts by counts >= the width, casts between every pair of types, loads and
  stores of every width, called with edge values on both backends (through
  nxc.load) and compared with each other and with a reference model here;
* whole programs covering each construct (structs, globals, control flow,
  short-circuit, evaluation order, recursion, ...) run as gates with
  `--backend both` semantics: same status, same value;
* the bundled kernels (nx_src/) on the same random inputs, output buffers
  compared word for word -- directly through the API for the attention
  kernels and nx_f32_exp, and through a .nx driver that fills inputs with an
  integer PRNG and dumps every output buffer with sys_write for the cached and
  paged attention stacks.
"""
from __future__ import annotations

import itertools
import os
import random

import numpy as np
import pytest

import nxc
from nxc.cli import main as cli_main
from nxc.diagnostics import Diagnostics
from nxc.check.frontend import check_file
from nxc.gates.run import execute
from nxc.check.types import IntType
from load_bounds import GATE_BOUND

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NX_SRC = os.path.join(ROOT, "nx_src")

INT_TYPES = [IntType(b, s) for s in (True, False) for b in (8, 16, 32, 64)]
NAMES = {str(t): t for t in INT_TYPES}


# ---------------------------------------------------------------- reference model
def wrap(t: IntType, v: int) -> int:
    return t.wrap(v)


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


REF_BINARY = {
    "add": lambda t, a, b: wrap(t, a + b),
    "sub": lambda t, a, b: wrap(t, a - b),
    "mul": lambda t, a, b: wrap(t, a * b),
    "div": lambda t, a, b: wrap(t, c_div(a, b)),
    "rem": lambda t, a, b: wrap(t, a - c_div(a, b) * b),
    "and": lambda t, a, b: wrap(t, a & b),
    "or": lambda t, a, b: wrap(t, a | b),
    "xor": lambda t, a, b: wrap(t, a ^ b),
    "lt": lambda t, a, b: a < b, "le": lambda t, a, b: a <= b,
    "gt": lambda t, a, b: a > b, "ge": lambda t, a, b: a >= b,
    "eq": lambda t, a, b: a == b, "ne": lambda t, a, b: a != b,
}
OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "and": "&", "or": "|", "xor": "^",
       "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def edge_values(t: IntType, extra: int = 6, seed: int = 0) -> list[int]:
    w = t.bits
    raw = [0, 1, -1, 2, -2, 3, 7, -7, w - 1, w, w + 1, 2 * w, 63, 64, 65, 127, 128, 255, 256,
           1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1, (1 << w) - 2, 0x5A5A5A5A5A5A5A5A]
    rng = random.Random(seed * 1000 + w * 2 + t.signed)
    raw += [rng.getrandbits(w) for _ in range(extra)]
    out = []
    for v in raw:
        v = t.wrap(v)
        if v not in out:
            out.append(v)
    return out


def int_library() -> str:
    """One nx function per (operation, type), so each is called with many values."""
    parts = ['import "nx_syscalls.nx"\n']
    for t in INT_TYPES:
        T = str(t)
        for name, op in OPS.items():
            ret = "bool" if name in ("lt", "le", "gt", "ge", "eq", "ne") else T
            parts.append(f"func {name}_{T}(a: {T}, b: {T}) -> {ret} {{ return a {op} b }}")
            if ret == T:        # the compound form must give the same
                parts.append(f"func {name}eq_{T}(a: {T}, b: {T}) -> {T} {{ var x: {T} = a; x {op}= b; return x }}")
        for ct in ("i64", "u8", "i8", "u64"):
            parts.append(f"func shl_{T}_{ct}(a: {T}, n: {ct}) -> {T} {{ return a << n }}")
            parts.append(f"func shr_{T}_{ct}(a: {T}, n: {ct}) -> {T} {{ return a >> n }}")
        parts.append(f"func shleq_{T}(a: {T}, n: i64) -> {T} {{ var x: {T} = a; x <<= n; return x }}")
        parts.append(f"func shreq_{T}(a: {T}, n: u8) -> {T} {{ var x: {T} = a; x >>= n; return x }}")
        parts.append(f"func neg_{T}(a: {T}) -> {T} {{ return -a }}")
        parts.append(f"func not_{T}(a: {T}) -> {T} {{ return ~a }}")
        parts.append(f"func lnot_{T}(a: {T}) -> bool {{ return !a }}")
        parts.append(f"func tobool_{T}(a: {T}) -> bool {{ return a as bool }}")
        parts.append(f"func frombool_{T}(b: bool) -> {T} {{ return b as {T} }}")
        # Constant divisors take the Python backend's inline paths.
        for c, tag in ((7, "7"), (8, "8"), (1, "1"), (-3, "m3"), (-1, "m1")):
            if c < 0 and not t.signed:
                continue
            parts.append(f"func divc{tag}_{T}(a: {T}) -> {T} {{ return a / {c} }}")
            parts.append(f"func remc{tag}_{T}(a: {T}) -> {T} {{ return a % {c} }}")
        # Ring chains: wrapped once at the end in Python, at each step in C.
        parts.append(f"func poly_{T}(a: {T}, b: {T}) -> {T} {{ return a * b + a * a - b * 3 + (a << 5) - (b & 12) }}")
        parts.append(f"func mix_{T}(a: {T}, b: {T}) -> {T} {{ return ((a * b) >> 3) ^ ((a + b) / 7) | (a - b) % 5 }}")
        parts.append(f"func cmpchain_{T}(a: {T}, b: {T}) -> bool {{ return a * b + 1 < a - b || -a == b }}")
        # Memory of this width: store, load back, sign- or zero-extension.
        parts.append(f"""func mem_{T}(a: {T}) -> {T} {{
    let p: *{T} = sys_mmap(32) as *{T}
    p[1] = a
    let r: {T} = p[1]
    sys_munmap(p, 32)
    return r
}}""")
        for u in INT_TYPES:
            U = str(u)
            parts.append(f"func cast_{T}_{U}(a: {T}) -> {U} {{ return a as {U} }}")
            parts.append(f"func castsum_{T}_{U}(a: {T}, b: {T}) -> {U} {{ return (a + b) as {U} }}")
            parts.append(f"""func view_{T}_{U}(a: {T}) -> {U} {{
    let p: *{T} = sys_mmap(16) as *{T}
    p[0] = a
    let q: *{U} = p as *{U}
    let r: {U} = q[0]
    sys_munmap(p, 16)
    return r
}}""")
    return "\n".join(parts) + "\n"


@pytest.fixture(scope="module")
def int_modules(tmp_path_factory):
    path = tmp_path_factory.mktemp("agree") / "ints.nx"
    path.write_text(int_library())
    return nxc.load(str(path), backend="c"), nxc.load(str(path), backend="py")


def _agree(c, py, name, *args):
    a = getattr(c, name)(*args)
    b = getattr(py, name)(*args)
    assert type(a) is type(b) and a == b, f"{name}{args}: C {a!r} != Python {b!r}"
    return a


@pytest.mark.parametrize("T", [str(t) for t in INT_TYPES])
def test_binary_operators_agree_with_each_other_and_the_reference(int_modules, T):
    c, py = int_modules
    t = NAMES[T]
    vals = edge_values(t)
    for name in OPS:
        for a, b in itertools.product(vals, vals):
            if name in ("div", "rem") and b == 0:
                continue
            got = _agree(c, py, f"{name}_{T}", a, b)
            assert got == REF_BINARY[name](t, a, b), f"{name}_{T}({a}, {b}) = {got}"
            if name not in ("lt", "le", "gt", "ge", "eq", "ne"):
                assert _agree(c, py, f"{name}eq_{T}", a, b) == got


@pytest.mark.parametrize("T", [str(t) for t in INT_TYPES])
def test_shifts_mask_the_count_and_follow_the_sign(int_modules, T):
    c, py = int_modules
    t = NAMES[T]
    counts = [0, 1, 3, t.bits - 1, t.bits, t.bits + 1, 2 * t.bits - 1, 63, 64, 65, 127, 255]
    for a in edge_values(t):
        for n in counts:
            k = n & (t.bits - 1)
            for ct in ("i64", "u8", "i8", "u64"):
                nv = NAMES[ct].wrap(n)
                left = _agree(c, py, f"shl_{T}_{ct}", a, nv)
                right = _agree(c, py, f"shr_{T}_{ct}", a, nv)
                kk = nv & (t.bits - 1)          # the count is taken modulo the width, after its own wrap
                assert left == t.wrap(a << kk) and right == a >> kk
            assert _agree(c, py, f"shleq_{T}", a, n) == t.wrap(a << k)
            assert _agree(c, py, f"shreq_{T}", a, n & 0xFF) == a >> ((n & 0xFF) & (t.bits - 1))


@pytest.mark.parametrize("T", [str(t) for t in INT_TYPES])
def test_unary_constant_divisors_and_ring_chains(int_modules, T):
    c, py = int_modules
    t = NAMES[T]
    vals = edge_values(t, extra=20, seed=1)
    for a in vals:
        assert _agree(c, py, f"neg_{T}", a) == t.wrap(-a)
        assert _agree(c, py, f"not_{T}", a) == t.wrap(~a)
        assert _agree(c, py, f"lnot_{T}", a) is (a == 0)
        assert _agree(c, py, f"tobool_{T}", a) is (a != 0)
        for cdiv, tag in ((7, "7"), (8, "8"), (1, "1"), (-3, "m3"), (-1, "m1")):
            if cdiv < 0 and not t.signed:
                continue
            assert _agree(c, py, f"divc{tag}_{T}", a) == t.wrap(c_div(a, cdiv))
            assert _agree(c, py, f"remc{tag}_{T}", a) == t.wrap(a - c_div(a, cdiv) * cdiv)
        assert _agree(c, py, f"mem_{T}", a) == a
        for b in vals[::3]:
            _agree(c, py, f"poly_{T}", a, b)
            _agree(c, py, f"mix_{T}", a, b)
            _agree(c, py, f"cmpchain_{T}", a, b)
    for b in (False, True):
        assert _agree(c, py, f"frombool_{T}", b) == int(b)


@pytest.mark.parametrize("T", [str(t) for t in INT_TYPES])
def test_casts_between_every_pair_of_widths_and_signs(int_modules, T):
    c, py = int_modules
    t = NAMES[T]
    vals = edge_values(t, extra=4, seed=2)
    for u in INT_TYPES:
        U = str(u)
        for a in vals:
            assert _agree(c, py, f"cast_{T}_{U}", a) == u.wrap(a)
            # the same bytes seen through a pointer of the other type (little-endian)
            raw = (a & t.mask).to_bytes(8, "little")
            assert _agree(c, py, f"view_{T}_{U}", a) == u.wrap(int.from_bytes(raw[:u.size], "little"))
        for a, b in zip(vals, reversed(vals)):
            assert _agree(c, py, f"castsum_{T}_{U}", a, b) == u.wrap(t.wrap(a + b))


def test_named_integer_edge_cases_on_both_backends(int_modules):
    c, py = int_modules
    I64_MIN = -(1 << 63)
    cases = [
        ("div_i64", (-7, 2), -3), ("rem_i64", (-7, 2), -1), ("rem_i64", (7, -2), 1),
        ("div_i64", (I64_MIN, -1), I64_MIN), ("rem_i64", (I64_MIN, -1), 0),
        ("div_i8", (-128, -1), -128), ("rem_i32", (-(1 << 31), -1), 0),
        ("add_i8", (127, 1), -128), ("add_u8", (255, 1), 0), ("sub_i16", (-32768, 1), 32767),
        ("mul_u16", (65535, 65535), 1), ("add_i32", ((1 << 31) - 1, 1), -(1 << 31)),
        ("sub_u32", (0, 1), 0xFFFFFFFF), ("add_i64", ((1 << 63) - 1, 1), I64_MIN),
        ("shl_i64_i64", (1, 65), 2), ("shl_u8_i64", (1, 9), 2), ("shr_i64_i64", (-16, 66), -4),
        ("shr_u64_i64", (1 << 63, 63), 1), ("shr_i8_u8", (-128, 7), -1), ("shr_u8_i64", (0x80, 15), 1),
        ("lt_u32", (0xFFFFFFFF, 1), False), ("gt_u64", ((1 << 64) - 1, 1), True),
        ("lt_i64", (-1, 1), True), ("cast_i64_u8", (-1,), 255), ("cast_i8_u64", (-1,), (1 << 64) - 1),
        ("cast_u8_i8", (200,), -56), ("cast_u64_i32", (0xFFFFFFFF80000000,), -(1 << 31)),
        ("cast_i32_i64", (-5,), -5), ("cast_u32_i64", (0xFFFFFFFF,), 0xFFFFFFFF),
    ]
    for name, args, want in cases:
        assert _agree(c, py, name, *args) == want, name


def test_division_by_zero_traps_on_both_backends_at_the_same_place(int_modules):
    c, py = int_modules
    for name, what in (("div_i64", "division by zero"), ("rem_u8", "remainder by zero"),
                       ("diveq_i16", "division by zero"), ("remeq_u64", "remainder by zero")):
        with pytest.raises(nxc.NxRuntimeError, match=what) as ec:
            getattr(c, name)(5, 0)
        with pytest.raises(nxc.NxRuntimeError, match=what) as ep:
            getattr(py, name)(5, 0)
        where_c = str(ec.value).split(": runtime error")[0]
        where_py = str(ep.value).split(": runtime error")[0]
        assert where_c.split(":")[-2:] == where_py.split(":")[-2:]        # same line and column


# ---------------------------------------------------------------- whole programs
def run_both(path: str):
    program = check_file(path, diags=Diagnostics(warnings=False))
    c, py = execute(program, "both", timeout=GATE_BOUND)
    assert (c.status, c.value) == (py.status, py.value), f"C: {c.status} {c.value} {c.message} / " \
        f"Python: {py.status} {py.value} {py.message}"
    if c.gate_return is not None or py.gate_return is not None:
        assert c.gate_return.site == py.gate_return.site
    return c, py


PROGRAMS = {
    "structs": """
import "nx_syscalls.nx"
struct Inner { a: u8, b: i64, c: u16 }
struct Outer { tag: i8, inner: Inner, flag: bool, next: *Outer, vals: i32 }
func main() -> i64 {
    if sizeof(Inner) != 24 || sizeof(Outer) != 56 { return 1 }
    let p: *Outer = sys_mmap(sizeof(Outer) * 3) as *Outer
    var i: i64 = 0
    while i < 3 {
        p[i].tag = (i - 2) as i8
        p[i].inner.a = (200 + i) as u8
        p[i].inner.b = -1000000000000 * i
        p[i].inner.c = (65535 - i) as u16
        p[i].flag = i % 2 == 1
        p[i].vals = -7 * (i as i32)
        i += 1
    }
    p[0].next = &p[2]
    let q: *Inner = &p[1].inner
    if q.a != 201 || q.b != -1000000000000 { return 2 }
    if p[0].next.tag != 0 || p[0].next.inner.c != 65533 { return 3 }
    let raw: *u8 = p as *u8
    if raw[56 + 8 + 8] != 0 { return 4 }           // p[1].inner.b low byte
    let pi: *i64 = &p[2].inner.b
    *pi += 5
    if p[2].inner.b != -1999999999995 { return 5 }
    if !p[1].flag || p[2].flag { return 6 }
    if (&p[1].inner as i64) - (p as i64) != 64 { return 7 }
    var h: i64 = 0
    i = 0
    while i < 3 {
        h = h * 31 + (p[i].tag as i64) + (p[i].inner.a as i64) + p[i].inner.b + (p[i].inner.c as i64) + (p[i].vals as i64)
        i += 1
    }
    return h
}
""",
    "globals_and_order": """
var trace: i64 = 0
var count: i32 = 0
var gp: *i64 = 0 as *i64
func note(x: i64) -> i64 { trace = trace * 10 + x; count += 1; return x }
func bump() -> i64 { trace = trace + 1000; return 1 }
func pair(a: i64, b: i64, c: i64) -> i64 { return a * 100 + b * 10 + c }
func main() -> i64 {
    let buf: *i64 = sys_mmap(64) as *i64
    gp = buf
    // operands and arguments left to right
    let s: i64 = note(1) - note(2) * note(3)
    if trace != 123 || s != -5 { return 1 }
    trace = 0
    if pair(note(4), note(5), note(6)) != 456 || trace != 456 { return 2 }
    // a global read before a call that changes it
    trace = 7
    let t: i64 = trace + bump()
    if t != 8 { return 3 }
    // assignment: the value before the place; compound: value, then place once
    trace = 0
    buf[note(1)] = note(2)
    if buf[1] != 2 || trace != 21 { return 4 }
    trace = 0
    buf[note(3)] += note(4)
    if buf[3] != 4 || trace != 43 { return 5 }
    gp[0] = 11
    *gp *= 3
    if buf[0] != 33 { return 6 }
    count <<= 2
    return (count as i64) * 1000 + trace
}
extern func sys_mmap(nbytes: i64) -> *void
""",
    "short_circuit": """
var calls: i64 = 0
func t() -> bool { calls += 1; return true }
func f() -> bool { calls += 100; return false }
func main() -> i64 {
    if f() && t() { return 1 }
    if !(t() || f()) { return 2 }
    let x: i64 = 0
    let b: bool = x != 0 && 10 / x > 1
    if b { return 3 }
    let c: bool = (f() || t()) && (t() && !f())
    if !c { return 4 }
    var k: i64 = 5
    if k && calls { k = 6 }
    return calls * 10 + k
}
""",
    "control_flow": """
func classify(x: i64) -> i64 {
    if x < 0 { return -1 } else if x == 0 { return 0 } else if x < 10 { return 1 } else { return 2 }
}
func main() -> i64 {
    var total: i64 = 0
    var i: i64 = -5
    while true {
        i += 1
        if i > 30 { break }
        if i % 3 == 0 { continue }
        var j: u8 = 250
        while j != 3 {
            j += 1
            if j == 1 { continue }
            total += j as i64
        }
        total = total * 3 + classify(i)
    }
    { let inner: i64 = 4; total += inner }
    { let inner: i64 = 5; total -= inner }
    return total
}
""",
    "recursion": """
func fib(n: i32) -> i32 { if n < 2 { return n }; return fib(n - 1) + fib(n - 2) }
func even(n: i64) -> bool { if n == 0 { return true }; return odd(n - 1) }
func odd(n: i64) -> bool { if n == 0 { return false }; return even(n - 1) }
func depth(n: i64) -> i64 { if n == 0 { return 0 }; return depth(n - 1) + 1 }
func main() -> i64 {
    if fib(20) != 6765 { return 1 }
    if !even(1000) || odd(1000) { return 2 }
    if depth(20000) != 20000 { return 3 }
    return 0
}
""",
    "bools_and_bytes": """
import "nx_syscalls.nx"
func main() -> i64 {
    let p: *bool = sys_mmap(4) as *bool
    p[0] = true
    p[1] = 3 > 4
    p[2] = p[0] ^ p[1]
    p[3] = !p[2] | p[0]
    let b: *u8 = p as *u8
    if b[0] != 1 || b[1] != 0 || b[2] != 1 || b[3] != 1 { return 1 }
    let s: *i8 = p as *i8
    s[1] = -2
    let h: *i16 = p as *i16
    if h[0] != -511 { return 2 }            // bytes 01 FE
    let w: *u32 = p as *u32
    if w[0] != 0x0101FE01 { return 3 }
    var acc: u64 = 0xCBF29CE484222325
    var i: i64 = 0
    while i < 4 {
        acc = (acc ^ (b[i] as u64)) * 0x100000001B3
        i += 1
    }
    return (acc >> 1) as i64
}
""",
    "wrapping_addresses": """
import "nx_syscalls.nx"
func main() -> i64 {
    let p: *i64 = sys_mmap(64) as *i64
    p[0] = 41
    let q: *i64 = ((p as i64) + 8) as *i64
    let minus_one: u64 = 0xFFFFFFFFFFFFFFFF
    if q[minus_one] != 41 { return 1 }             // q - 8, wrapping at 64 bits
    let big: i64 = 0x7FFFFFFFFFFFFFFF
    p[big + big + 2] = 42                          // the i64 index wraps to 0
    if p[0] != 42 { return 2 }
    let k: i32 = -1
    if q[k] != 42 { return 3 }
    if (&q[-1] as i64) != (p as i64) { return 4 }
    let n: *i64 = 0 as *i64
    if &n[2] as i64 != 16 { return 5 }
    return 0
}
""",
    "write_output": """
import "nx_syscalls.nx"
func main() -> i64 {
    let s: *u8 = sys_mmap(6) as *u8
    s[0] = 104; s[1] = 105; s[2] = 33; s[3] = 10
    if sys_write(1, s, 4) != 4 { return 1 }
    if sys_write(7, s, 4) != -1 { return 2 }
    if sys_write(1, 0 as *void, 0) != 0 { return 3 }
    return 0
}
""",
    # Found by bench/difftest.py: the C float32 unboxing pass took an i16 local whose only
    # assignment was `v = v` for a float (nxc/lower/f32_unbox.py recorded assignments of any type).
    "self_assignment_i16": """
func main() -> i64 {
    var ck: u64 = 0x1234567890ABCDEF
    var v: i16 = ~(ck as i16)
    v = v
    ck = (ck ^ (v as u64)) * 0x100000001B3
    if ck != 0x9AEEEDDDD443FE4D { return 1 }
    return 0
}
""",
    "failing_gate": """
func main() -> i64 {
    let x: i64 = 3
    if x == 3 && x * 2 == 7 { return 10 }
    if x != 4 { return 20 }
    return 0
}
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_give_the_same_result_on_both_backends(write_nx, name, capfd):
    c, py = run_both(write_nx(PROGRAMS[name], name=f"{name}.nx"))
    if name == "write_output":
        assert capfd.readouterr().out == "hi!\n" * 2
    if name == "failing_gate":
        assert c.status == "FAIL" and c.value == 20
        assert c.captured == py.captured == [("x", 3)]
    elif name in ("structs", "globals_and_order", "short_circuit", "control_flow", "bools_and_bytes"):
        assert c.status == "FAIL" and abs(c.value) > 100         # a checksum (early checks return < 10)
    else:
        assert c.status == "PASS"


@pytest.mark.parametrize("path", sorted(f for f in os.listdir(NX_SRC) if f.endswith(".nx")))
def test_bundled_gates_pass_with_backend_both(path, capsys):
    full = os.path.join(NX_SRC, path)
    program = check_file(full, diags=Diagnostics(warnings=False))
    if program.entry is None:
        return  # a library module: checking it clean (above) is the test
    assert cli_main(["run", "--backend", "both", "-w", "--timeout", str(GATE_BOUND), full]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- kernels on random inputs
def f32_bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)


def random_f32(rng, n: int, scale: float = 1.0) -> np.ndarray:
    return f32_bits(rng.standard_normal(n) * scale)


@pytest.fixture(scope="module")
def kernels():
    mods = {}
    for name in ("nx_f32_attention.nx", "nx_f32_attn_multi.nx", "nx_f32_gqa_attention.nx", "nx_f32.nx"):
        path = os.path.join(NX_SRC, name)
        # bundled modules: a missing one is a failure, not a reason to skip
        mods[name] = (nxc.load(path, backend="c"), nxc.load(path, backend="py"))
    return mods


def _words_equal(a: np.ndarray, b: np.ndarray, what: str) -> None:
    bad = np.flatnonzero(a != b)
    assert bad.size == 0, f"{what}: {bad.size} words differ, first at {bad[0]}: C 0x{int(a[bad[0]]):X} " \
                          f"Python 0x{int(b[bad[0]]):X}"


def test_attention_kernel_on_random_inputs(kernels):
    c, py = kernels["nx_f32_attention.nx"]
    rng = np.random.default_rng(2024)
    for n, d, spread in ((1, 1, 1.0), (5, 4, 1.0), (7, 8, 3.0), (12, 16, 10.0)):
        Q, K, V = (random_f32(rng, n * d, spread) for _ in range(3))
        scale = int(f32_bits(np.float32(1 / np.sqrt(d))))
        outs = []
        for m in (c, py):
            out, sr, pr = np.zeros(n * d, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
            assert m.nx_f32_attention(Q.copy(), K.copy(), V.copy(), n, d, scale, out, sr, pr) == 0
            outs.append((out, sr, pr))
        for k, what in enumerate(("out", "score_row", "prob_row")):
            _words_equal(outs[0][k], outs[1][k], f"attention n={n} d={d} {what}")
        assert np.any(outs[0][0] != 0)


def _kernel_on_both(c, py, name, out_len, args, Q, K, V, label):
    """Run kernel `name`(*args(Q, K, V), out) on both backends on copies of
    the same inputs; it must return 0 and write the same words."""
    outs = []
    for m in (c, py):
        out = np.zeros(out_len, np.int64)
        assert getattr(m, name)(*args(Q.copy(), K.copy(), V.copy()), out) == 0
        outs.append(out)
    _words_equal(outs[0], outs[1], label)


def test_multi_query_attention_kernel_on_random_inputs(kernels):
    c, py = kernels["nx_f32_attn_multi.nx"]
    rng = np.random.default_rng(7)
    for n_q, n_k, d, causal in ((1, 1, 2, 0), (3, 7, 4, 1), (6, 6, 8, 1), (4, 9, 5, 0)):
        Q = random_f32(rng, n_q * d, 2.0)
        K, V = random_f32(rng, n_k * d, 2.0), random_f32(rng, n_k * d, 2.0)
        scale = int(f32_bits(np.float32(1 / np.sqrt(d))))
        _kernel_on_both(c, py, "nx_f32_attn_multi", n_q * d,
                        lambda Q, K, V: (Q, K, V, n_q, n_k, d, causal, scale), Q, K, V,
                        f"attn_multi n_q={n_q} n_k={n_k} d={d} causal={causal}")


def test_gqa_attention_kernel_on_random_inputs(kernels):
    c, py = kernels["nx_f32_gqa_attention.nx"]
    rng = np.random.default_rng(11)
    for n, hq, hkv, d in ((3, 4, 2, 4), (5, 6, 3, 2), (2, 8, 1, 8)):
        Q = random_f32(rng, n * hq * d)
        K, V = random_f32(rng, n * hkv * d), random_f32(rng, n * hkv * d)
        scale = int(f32_bits(np.float32(1 / np.sqrt(d))))
        _kernel_on_both(c, py, "nx_f32_gqa_attention", n * hq * d,
                        lambda Q, K, V: (Q, K, V, n, hq, hkv, d, scale), Q, K, V,
                        f"gqa n={n} hq={hq} hkv={hkv} d={d}")


def test_f32_exp_and_helpers_on_random_bit_patterns(kernels):
    c, py = kernels["nx_f32.nx"]
    rng = np.random.default_rng(5)
    specials = [0, 0x80000000, 0x3F800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 1, 0x80000001,
                0x42B20000, 0xC2DC0000, 0x42B17218, 0xC2CFF1B5, 0x7F7FFFFF]
    xs = specials + [int(v) for v in rng.integers(0, 1 << 32, 300)] + \
        [int(v) for v in random_f32(rng, 300, 30.0)]
    for name in ("nx_f32_exp", "nx_f32_neg", "nx_f32_abs", "nx_f32_is_nan"):
        got_c = [getattr(c, name)(x) for x in xs]
        got_py = [getattr(py, name)(x) for x in xs]
        assert got_c == got_py, name
    for name in ("nx_f32_max", "nx_f32_min", "nx_f32_gt", "nx_f32_ne"):
        pairs = list(zip(xs, reversed(xs)))
        assert [getattr(c, name)(a, b) for a, b in pairs] == [getattr(py, name)(a, b) for a, b in pairs], name


CACHE_DRIVER = """
// Random-input driver: the contiguous-cache and paged attention stacks, every output dumped.
import "nx_f32_attn_with_cache.nx"
import "nx_f32_attn_paged.nx"

const L: nx_int = 2
const H: nx_int = 4
const KVH: nx_int = 2
const HD: nx_int = 8
const SCALE: i64 = 0x3EB504F3             // 1/sqrt(8)

var state: u64 = SEED

func rnd() -> u64 {                        // xorshift64*
    state = state ^ (state >> 12)
    state = state ^ (state << 25)
    state = state ^ (state >> 27)
    return state * 0x2545F4914F6CDD1D
}

// a float32 with a random sign and mantissa, magnitude in [2^-4, 2^2)
func rnd_f32() -> i64 {
    let r: u64 = rnd()
    let e: u64 = 0x7B + (r >> 40) % 6
    return ((r >> 63) << 31 | e << 23 | (r & 0x7FFFFF)) as i64
}

func fill(p: *i64, n: nx_int) {
    var i: nx_int = 0
    while i < n { p[i] = rnd_f32(); i = i + 1 }
}

func main() -> i64 {
    let cache: *NxKvCache = nx_kvc_new(L, KVH, HD, 32)
    let pool: *NxPagedPool = nx_pkv_pool_new(L, KVH, HD, 4, 16)
    let seq: *NxPagedSeq = nx_pkv_seq_new(pool)
    if cache == (0 as *NxKvCache) || seq == (0 as *NxPagedSeq) { return 1 }
    let Q: *i64 = sys_mmap(8 * H * HD * 8) as *i64
    let K: *i64 = sys_mmap(8 * KVH * HD * 8) as *i64
    let V: *i64 = sys_mmap(8 * KVH * HD * 8) as *i64
    let outC: *i64 = sys_mmap(8 * H * HD * 8) as *i64
    let outP: *i64 = sys_mmap(8 * H * HD * 8) as *i64
    let steps: *i64 = sys_mmap(6 * 8) as *i64
    steps[0] = 3; steps[1] = 1; steps[2] = 4; steps[3] = 2; steps[4] = 1; steps[5] = 5
    var s: i64 = 0
    while s < 6 {
        let n: nx_int = steps[s]
        if nx_kvc_ensure_append(cache, n) != 0 { return 2 }
        if nx_pkv_ensure_append(seq, n) != NX_PKV_OK { return 3 }
        var layer: nx_int = 0
        while layer < L {
            fill(Q, n * H * HD)
            fill(K, n * KVH * HD)
            fill(V, n * KVH * HD)
            if nx_f32_attn_with_cache(Q, K, V, n, H, KVH, HD, cache, layer, 1, SCALE, outC) != 0 { return 4 }
            if nx_f32_attn_with_paged(Q, K, V, n, H, KVH, HD, seq, layer, 1, SCALE, outP) != 0 { return 5 }
            sys_write(1, outC, n * H * HD * 8)
            sys_write(1, outP, n * H * HD * 8)
            layer = layer + 1
        }
        nx_kvc_advance(cache, n)
        nx_pkv_advance(seq, n)
        s = s + 1
    }
    return 0
}
"""


def _run_capturing_fd1(program, backend: str, tmp_path):
    """Run the gate with file descriptor 1 sent to a file; (outcome, bytes written)."""
    out = tmp_path / f"fd1-{backend}.bin"
    with open(out, "wb") as f:
        saved = os.dup(1)
        os.dup2(f.fileno(), 1)
        try:
            outcome = execute(program, backend, timeout=300)[0]
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    return outcome, out.read_bytes()


@pytest.mark.parametrize("seed", [0x9E3779B97F4A7C15, 12345])
def test_cached_and_paged_attention_on_random_inputs_word_for_word(write_nx, tmp_path, seed):
    path = write_nx(CACHE_DRIVER.replace("SEED", str(seed)), name="cache_driver.nx")
    program = check_file(path, diags=Diagnostics(warnings=False))
    dumps = {}
    for backend in ("c", "py"):
        outcome, data = _run_capturing_fd1(program, backend, tmp_path)
        assert outcome.status == "PASS", (backend, outcome.status, outcome.value, outcome.message)
        dumps[backend] = np.frombuffer(data, dtype=np.int64)
    words = sum(n * 4 * 8 for n in (3, 1, 4, 2, 1, 5)) * 2 * 2      # tokens x H*HD x layers x (C, P)
    assert dumps["c"].size == dumps["py"].size == words
    _words_equal(dumps["c"], dumps["py"], "cached/paged attention outputs")
    assert np.count_nonzero(dumps["c"]) > words // 2
