"""Software float32 in .nx (nx_src/nx_f32_soft.nx) and the --soft-f32 build mode.

* the module's gate (every nx_soft_* function against the runtime primitive,
  bit for bit, on the special values and 100,000 random operands each) passes
  on the C backend; the Python backend runs it too slowly for the suite (about
  15 s), so here the same functions are compared with runtime/nx_f32.py on a
  few thousand operands through nxc.load(..., backend="py");
* --soft-f32 redirects every call of a runtime float32 primitive to its .nx
  twin on both backends, and every bundled gate still passes in that mode;
* the flag reaches the checker from `nxc run`, `nxc test` and `nxc.load`.
"""
from __future__ import annotations

import glob
import os
import random
import re

import pytest

import nxc
from nxc.syntax import ast
from nxc.check.checker import soft_f32_name
from nxc.cli import main as cli_main
from nxc.diagnostics import Diagnostics
from nxc.backend.c.emit import emit_c
from nxc.backend.py.emit import emit_py
from nxc.check.externs import f32_primitives
from nxc.check.frontend import check_file
from nxc.paths import bundled_dir
from nxc.gates.run import execute
from nxc.backend.py.run import runtime_modules
from load_bounds import GATE_BOUND

SOFT = os.path.join(bundled_dir(), "nx_f32_soft.nx")
GATES = sorted(p for p in glob.glob(os.path.join(bundled_dir(), "*.nx"))
               if re.search(r"^func main\(\)", open(p, encoding="utf-8").read(), re.M)
               and os.path.basename(p) != "nx_f32_soft.nx")

SPECIALS = [0x00000000, 0x00000001, 0x00000003, 0x00400000, 0x007FFFFF, 0x00800000, 0x00800001,
            0x33800000, 0x3F800000, 0x3F800001, 0x3F7FFFFF, 0x40000000, 0x40400000, 0x4B800000,
            0x4B800001, 0x4F000000, 0x7F000000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001,
            0x7FFFFFFF]
SPECIALS += [x | 0x80000000 for x in SPECIALS]


def random_f32(rng: random.Random, near: int | None = None) -> int:
    c = rng.randrange(6)
    if c == 0:
        return rng.choice(SPECIALS)
    if c == 1 and near is not None:
        e = min(max(((near >> 23) & 0xFF) + rng.randrange(-12, 13), 0), 255)
    elif c == 2:
        e = rng.randrange(4)                    # subnormals and the smallest normals
    elif c == 3:
        e = rng.randrange(250, 256)             # huge, inf, NaN
    else:
        e = rng.randrange(256)
    frac = rng.getrandbits(23)
    if rng.random() < 0.3:
        frac &= ~((1 << rng.randrange(24)) - 1)  # few low bits: exact ties
    return (rng.getrandbits(1) << 31) | (e << 23) | frac


def test_soft_float_gate_passes_on_the_c_backend():
    outcome = execute(check_file(SOFT, diags=Diagnostics()), "c", timeout=120)[0]
    assert outcome.status == "PASS", (outcome.status, outcome.value, outcome.message)


def test_soft_module_is_clean_and_self_contained():
    diags = Diagnostics()
    program = check_file(SOFT, diags=diags)
    assert diags.warnings == []
    names = {fn.decl.name for fn in program.functions} | {c.name for c in program.consts}
    assert all(n.startswith(("nx_soft_", "NX_SOFT_")) or n == "main" for n in names), names
    for prim in f32_primitives():
        assert soft_f32_name(prim) in names


@pytest.mark.parametrize("backend", ["py", "c"])
def test_soft_functions_match_the_runtime_bit_for_bit(backend):
    f32 = runtime_modules()[0]
    m = nxc.load(SOFT, backend=backend)
    rng = random.Random(20261201 if backend == "py" else 7)
    n = 1500 if backend == "py" else 20000
    pairs = [(a, b) for a in SPECIALS[::3] for b in SPECIALS[::2]]
    for _ in range(n):
        a = random_f32(rng)
        pairs.append((a, random_f32(rng, near=a)))
    for a, b in pairs:
        for op in ("add", "sub", "mul", "div", "lt", "le", "eq"):
            want = getattr(f32, f"nx_f32_{op}")(a, b)
            got = getattr(m, f"nx_soft_f32_{op}")(a, b)
            assert got == want, (op, hex(a), hex(b), hex(int(got)), hex(int(want)))
        assert m.nx_soft_f32_sqrt(a) == f32.nx_f32_sqrt(a), hex(a)
        assert m.nx_soft_f32_to_i32(a) == f32.nx_f32_to_i32(a), hex(a)
        k = rng.getrandbits(32) >> rng.randrange(32)
        k = -k if rng.random() < 0.5 else k
        assert m.nx_soft_i32_to_f32(k) == f32.nx_i32_to_f32(k), k


def _calls(program):
    """Every (function name, callee symbol) of the program's call sites."""
    out = []

    def walk(node, fn):
        if isinstance(node, ast.Call):
            out.append((fn, program.info.sym(node.func)))
        if isinstance(node, list):
            for x in node:
                walk(x, fn)
        elif hasattr(node, "__dataclass_fields__"):
            for k in node.__dataclass_fields__:
                if k not in ("pos", "end_pos"):
                    walk(getattr(node, k), fn)
    for fn in program.functions:
        walk(fn.decl.body, fn.decl.name)
    return out


def test_soft_mode_redirects_every_primitive_call():
    path = os.path.join(bundled_dir(), "nx_f32.nx")
    plain = check_file(path, diags=Diagnostics())
    soft = check_file(path, diags=Diagnostics(), soft_f32=True)
    prims = f32_primitives()
    assert any(sym.kind == "extern" and sym.name in prims for _, sym in _calls(plain))
    soft_calls = _calls(soft)
    assert not any(sym.kind == "extern" and sym.name in prims for _, sym in soft_calls)
    assert any(sym.name == "nx_soft_f32_mul" for fn, sym in soft_calls if fn == "nx_f32_exp")
    # the generated code changes (so does the C build's cache key); no runtime primitive is called
    c_text = emit_c(soft).text
    assert emit_c(plain).text != c_text
    assert not re.search(r"nxrt_nx_(f32|i32)_\w+\(", c_text)
    assert "nxf_nx_soft_f32_mul(" in c_text
    py_text = emit_py(soft).text
    exp_py = py_text[py_text.index("def nx_f32_exp("):]
    exp_py = exp_py[:exp_py.index("\ndef ")]
    assert "nx_soft_f32_mul(" in exp_py and "nx_f32_mul(" not in exp_py.replace("nx_soft_f32_mul(", "")


@pytest.mark.parametrize("path", GATES, ids=os.path.basename)
def test_every_bundled_gate_passes_with_soft_f32_on_the_python_backend(path):
    program = check_file(path, diags=Diagnostics(), soft_f32=True)
    outcome = execute(program, "py", timeout=120)[0]
    assert outcome.status == "PASS", (outcome.status, outcome.value, outcome.message)


@pytest.mark.parametrize("name", ["nx_f32.nx", "nx_f32_gqa_attention.nx"])
def test_bundled_gates_pass_with_soft_f32_on_the_c_backend(name):
    program = check_file(os.path.join(bundled_dir(), name), diags=Diagnostics(), soft_f32=True)
    outcome = execute(program, "c", timeout=120)[0]
    assert outcome.status == "PASS", (outcome.status, outcome.value, outcome.message)


def test_cli_run_and_test_take_soft_f32(capsys):
    cvt = os.path.join(bundled_dir(), "nx_f32_cvt.nx")
    assert cli_main(["run", "--soft-f32", "--backend", "py", cvt]) == 0
    assert cli_main(["test", "--soft-f32", "--backend", "py", "-q", "-j", "1", cvt]) == 0
    assert "1 passed" in capsys.readouterr().out


def test_api_load_soft_f32_gives_the_same_bits():
    path = os.path.join(bundled_dir(), "nx_f32.nx")
    plain = nxc.load(path, backend="py")
    soft = nxc.load(path, backend="py", soft_f32=True)
    rng = random.Random(3)
    for _ in range(200):
        x = random_f32(rng)
        assert soft.nx_f32_exp(x) == plain.nx_f32_exp(x), hex(x)


def test_soft_mode_in_a_module_that_imports_no_float_module(write_nx):
    path = write_nx("""
        func main() -> i64 {
            return 0
        }
    """)
    program = check_file(path, diags=Diagnostics(), soft_f32=True)
    assert any(fn.decl.name == "nx_soft_f32_add" for fn in program.functions)
    assert execute(program, "py", timeout=GATE_BOUND)[0].status == "PASS"
