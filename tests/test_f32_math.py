"""Accuracy of the float32 functions of nx_f32_math.nx and nx_f32_trig.nx (issue 20).

Sampled here, against mpmath at 100 bits (tests/f32_math_support.py): every function on the C
backend over N_C inputs (a quarter uniform over all 2^32 patterns, the rest over the
function's interesting range, including sin/cos up to |x| = 50,000) plus the special values;
on the Python backend over N_PY of them, which must also be bit-identical to the C results.
The exhaustive run over all 2^32 inputs is bench/f32_math_exhaustive.py; its figures, and
the bound each function is held to here, are in docs/numerics.md section 5.
"""
from __future__ import annotations

import functools
import os

import numpy as np
import pytest

import f32_math_support as fs

SEED = int(os.environ.get("NX_NUMERICS_SEED", "20250701"))
N_C = 12_000
N_PY = 600
# the max ulp error over all 2^32 inputs (docs/numerics.md section 5), rounded up
BOUND = {"rsqrt": 0.51, "log": 0.51, "exp2": 0.53, "sigmoid": 0.53, "silu": 0.53, "tanh": 0.55,
         "sin": 0.63, "cos": 0.63, "exp": 1.0, "pow": 1.0}
FUNCS = ("rsqrt", "log", "exp2", "sigmoid", "silu", "tanh", "sin", "cos")


@pytest.fixture(scope="module")
def mod_c():
    import nxc
    return nxc.load(fs.ROOT_NX)


@pytest.fixture(scope="module")
def mod_py():
    import nxc
    return nxc.load(fs.ROOT_NX, backend="py")


@functools.lru_cache(maxsize=None)
def inputs(name, n):
    return np.concatenate([fs.special_inputs(), fs.sample_inputs(name, n, SEED)])


@functools.lru_cache(maxsize=None)
def reference(name, n):
    return fs.ref_mp(name, fs.f32(inputs(name, n)))


def run(mod, name, xs):
    out = np.zeros(len(xs), np.int64)
    getattr(mod, "batch_" + name)(np.ascontiguousarray(xs, np.int64), out, len(xs))
    return out


def check_accuracy(name, xs, out, exact):
    bad = fs.nan_mismatches(out, exact)
    assert len(bad) == 0, (f"{name}: NaN mismatch at {[hex(int(x)) for x in xs[bad[:5]]]}: "
                           f"nx gave {[hex(int(o)) for o in out[bad[:5]]]}")
    err = fs.ulp_errors(out, exact)
    e = np.where(np.isnan(err), 0.0, err)
    i = int(np.argmax(e))
    assert e[i] <= BOUND[name], (f"{name}: {e[i]:.4f} ulp at x = {int(xs[i]):#010x} "
                                 f"({float(fs.f32(xs[i]))!r}): nx {int(out[i]):#010x}, exact {exact[i]!r}")
    return e


@pytest.mark.parametrize("name", FUNCS)
def test_accuracy_c(mod_c, name):
    xs = inputs(name, N_C)
    e = check_accuracy(name, xs, run(mod_c, name, xs), reference(name, N_C))
    assert np.count_nonzero(e > 0) > len(xs) // 4       # the comparison saw real values


@pytest.mark.parametrize("name", FUNCS)
def test_python_backend_same_bits(mod_c, mod_py, name):
    xs = inputs(name, N_C)[: N_PY]
    got = run(mod_py, name, xs)
    want = run(mod_c, name, xs)
    diff = np.nonzero(got != want)[0]
    assert len(diff) == 0, (f"{name}: backends differ at {[hex(int(x)) for x in xs[diff[:5]]]}: "
                            f"py {[hex(int(v)) for v in got[diff[:5]]]} c {[hex(int(v)) for v in want[diff[:5]]]}")
    check_accuracy(name, xs, got, reference(name, N_C)[: N_PY])


def test_sin_cos_rope_arguments(mod_c):
    """RoPE angles: positions 0..40960 times theta^(-2i/d) frequencies, theta = 1e6, d = 128."""
    rng = np.random.default_rng(SEED)
    pos = rng.integers(0, 40961, 3000).astype(np.float32)
    inv = (np.float32(1e6) ** (-np.arange(0, 128, 2, dtype=np.float32) / np.float32(128))).astype(np.float32)
    xs = fs.bits((pos[:, None] * inv[None, rng.integers(0, 64, 1)]).ravel().astype(np.float32))
    xs = np.concatenate([xs, fs.bits(np.float32([40960.0, 40959.0, 32768.0, 12345.678]))])
    for name in ("sin", "cos"):
        check_accuracy(name, xs, run(mod_c, name, xs), fs.ref_mp(name, fs.f32(xs)))


def pow_inputs(n, seed):
    rng = np.random.default_rng(seed)
    k = n // 3
    x1 = rng.uniform(0, 4, k).astype(np.float32)
    y1 = rng.uniform(-30, 30, k).astype(np.float32)
    x2 = np.exp2(rng.uniform(-60, 60, k)).astype(np.float32)          # wide magnitudes
    y2 = rng.uniform(-2, 2, k).astype(np.float32)
    x3 = np.full(n - 2 * k, 1e6, np.float32)                          # RoPE: theta^(-2i/d)
    y3 = (-np.arange(n - 2 * k, dtype=np.float32) % 64 * 2 / np.float32(128)).astype(np.float32)
    return fs.bits(np.concatenate([x1, x2, x3])), fs.bits(np.concatenate([y1, y2, y3]))


@pytest.mark.parametrize("backend", ["c", "py"])
def test_pow(mod_c, mod_py, backend):
    n = 6000 if backend == "c" else 300
    xs, ys = pow_inputs(n, SEED)
    mod = mod_c if backend == "c" else mod_py
    out = np.zeros(len(xs), np.int64)
    mod.batch_pow(xs, ys, out, len(xs))
    exact = fs.ref_mp_pow(fs.f32(xs), fs.f32(ys))
    err = fs.ulp_errors(out, exact)
    i = int(np.nanargmax(err))
    assert err[i] <= BOUND["pow"], (f"pow({float(fs.f32(xs[i]))!r}, {float(fs.f32(ys[i]))!r}): "
                                    f"{err[i]:.4f} ulp")
    if backend == "py":
        want = np.zeros(len(xs), np.int64)
        mod_c.batch_pow(xs, ys, want, len(xs))
        assert np.array_equal(out, want)


def test_symmetry(mod_c):
    """sin, tanh odd and cos even bit for bit (the exhaustive bench relies on nothing else)."""
    xs = fs.sample_inputs("sin", 4000, SEED + 1) & 0x7FFFFFFF
    neg = xs | 0x80000000
    for name, odd in (("sin", True), ("tanh", True), ("cos", False)):
        a, b = run(mod_c, name, xs), run(mod_c, name, neg)
        nan = (a & 0x7FFFFFFF) > 0x7F800000
        want = np.where(nan, a, a ^ 0x80000000) if odd else a
        assert np.array_equal(b, want), name
