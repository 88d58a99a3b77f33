"""The Python API: calling nx functions on numpy buffers."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import nxc
from nxc.diagnostics import CompileError

ROOT = os.path.join(os.path.dirname(__file__), "..")

LIB = """
extern func sys_mmap(nbytes: i64) -> *void
struct Pair { left: i64, right: u8, next: *Pair }
const ANSWER: i64 = 42
func fill(p: *i64, n: i64, v: i64) { var i: i64 = 0; while i < n { p[i] = v + i; i = i + 1 } }
func sum_u8(p: *u8, n: i64) -> u64 { var s: u64 = 0; var i: i64 = 0; while i < n { s = s + (p[i] as u64); i = i + 1 }; return s }
func make_pair(l: i64) -> *Pair { let p: *Pair = sys_mmap(sizeof(Pair)) as *Pair; p.left = l; p.right = 7; p.next = p; return p }
func pair_left(p: *Pair) -> i64 { return p.left }
func is_null(p: *void) -> bool { return p == (0 as *void) }
func divide(a: i64, b: i64) -> i64 { return a / b }
func narrow(x: i8) -> i8 { return x + 1 }
"""

BACKENDS = ["c", "py"]


@pytest.fixture(params=BACKENDS)
def lib(request, write_nx):
    return nxc.load(write_nx(LIB, name="lib.nx"), backend=request.param)


def test_writes_through_pointers_are_visible(lib):
    arr = np.zeros(5, np.int64)
    lib.fill(arr, 5, 10)
    assert arr.tolist() == [10, 11, 12, 13, 14]


def test_other_widths_and_results(lib):
    assert lib.sum_u8(np.array([200, 100, 1], np.uint8), 3) == 301
    assert lib.narrow(127) == -128
    assert lib.ANSWER == 42 and lib.consts["ANSWER"] == 42


def test_pointer_handles_and_struct_fields(lib):
    p = lib.make_pair(5)
    assert isinstance(p, nxc.Pointer) and p
    assert (p.left, p.right) == (5, 7)
    assert p.next.left == 5
    assert lib.pair_left(p) == 5
    assert lib.is_null(None) is True and lib.is_null(p) is False
    with pytest.raises(AttributeError, match="no field 'middle'"):
        p.middle


def test_bad_arguments_are_clear(lib):
    arr = np.zeros(4, np.int64)
    with pytest.raises(TypeError, match=r"takes 3 arguments \(2 given\)"):
        lib.fill(arr, 4)
    with pytest.raises(TypeError, match="dtype int64, not int32"):
        lib.fill(arr.astype(np.int32), 4, 0)
    with pytest.raises(ValueError, match="C-contiguous"):
        lib.fill(np.zeros(8, np.int64)[::2], 4, 0)
    with pytest.raises(TypeError, match="must be an integer"):
        lib.fill(arr, "4", 0)
    with pytest.raises(ValueError, match="does not fit in i8"):
        lib.narrow(300)


def test_runtime_error_names_the_line(lib):
    with pytest.raises(nxc.NxRuntimeError, match=r"lib\.nx:9:\d+: runtime error: division by zero"):
        lib.divide(1, 0)
    assert lib.divide(-7, 2) == -3        # the module still works afterwards


def test_compile_error_is_raised_not_printed(write_nx):
    with pytest.raises(CompileError, match="undefined name"):
        nxc.load(write_nx("func f() -> i64 { return nope }\n", name="bad.nx"))


def test_loading_twice_reuses_the_build(write_nx):
    from nxc.backend.c.backend import CLoaded  # noqa: F401 - the C build is what is cached
    path = write_nx(LIB, name="lib.nx")
    first = nxc.load(path)
    second = nxc.load(path)
    assert second._backend.built.cached and second._backend.built.path == first._backend.built.path


def test_f32_bit_conversions_round_trip():
    values = np.array([0.0, -0.0, 1.0, -2.5, np.inf, 1e-45], np.float32)
    bits = nxc.f32.to_bits(values)
    assert bits.dtype == np.int64 and bits[2] == 0x3F800000 and bits[1] == 0x80000000
    assert (bits >= 0).all() and (bits < 2**32).all()
    assert np.array_equal(nxc.f32.from_bits(bits).view(np.uint32), values.view(np.uint32))


def test_docs_example_runs(monkeypatch):
    """docs/python-api.md's example, exactly as written."""
    text = open(os.path.join(ROOT, "docs", "python-api.md"), encoding="utf-8").read()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(ROOT)
    exec(compile(code, "docs/python-api.md", "exec"), {})
