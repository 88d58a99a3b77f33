"""Tests for the nx runtime: runtime/nx_runtime.h, nx_f32.py, nx_externs.py.

What is checked, and why this way:

* The C primitives (compiled from the header with plain gcc and the exact
  flags nxc uses for generated C, plus -Wall -Wextra -Werror, loaded with
  ctypes) and both Python implementations (the fast scratch-buffer set and the
  struct fallback) must be BIT-EXACT against Berkeley SoftFloat (softfloatpy,
  round-to-nearest-even) and against numpy float32.  NaN results must be
  exactly the canonical 0x7FC00000.
* Inputs: every special class (±0, subnormals, normal extremes, ±inf, qNaN,
  sNaN, tie/overflow/underflow makers) crossed pairwise, plus ~20,000 random
  TestFloat-style pairs (random sign; exponents equal/close, or arranged so
  products/quotients land at the overflow/underflow boundary; mantissas with
  long runs of ones/zeros).  The random seed is fixed (NX_F32_TEST_SEED
  overrides it) so failures reproduce.
* C arrays go through one harness call per op (a C loop), so the whole file
  runs in a few seconds; SoftFloat results are computed once and cached.
* sys_mmap / sys_munmap / sys_write are exercised through the same harness.
"""

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

softfloatpy = pytest.importorskip("softfloatpy")

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIR = ROOT / "runtime"
HEADER = RUNTIME_DIR / "nx_runtime.h"

# Flags nxc uses for generated C (the optimisation level is varied below).
GEN_FLAGS = ["-fwrapv", "-fno-strict-aliasing", "-ffp-contract=off", "-std=c11"]
WARN_FLAGS = ["-Wall", "-Wextra", "-Werror"]
CC = os.environ.get("CC") or shutil.which("gcc") or "cc"

NAN = 0x7FC00000
M32 = 0xFFFFFFFF
SEED = int(os.environ.get("NX_F32_TEST_SEED", "20240501"))
N_RANDOM = 20_000


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_nxrt_test_{name}", RUNTIME_DIR / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


nx_f32 = _load("nx_f32")
nx_externs = _load("nx_externs")

BINOPS = ["nx_f32_add", "nx_f32_sub", "nx_f32_mul", "nx_f32_div",
          "nx_f32_lt", "nx_f32_le", "nx_f32_eq"]
UNOPS = ["nx_f32_sqrt", "nx_i32_to_f32", "nx_f32_to_i32"]


# ---------------------------------------------------------------------------
# Input generation
# ---------------------------------------------------------------------------

# Every special class (signed zeros, subnormals, normal edges, ties, overflow
# and underflow makers, infinities, quiet and signalling NaNs), shared with
# the numerics tests.
from numerics_support import SPECIALS, assert_bits_equal  # noqa: E402


def _mantissas(rng, n):
    """23-bit mantissas, TestFloat-like: random, runs of ones/zeros, single
    bits, all-ones tails, near-ties."""
    kind = rng.integers(0, 9, n)
    k = rng.integers(0, 24, n)
    j = rng.integers(0, 24, n)
    rand = rng.integers(0, 1 << 23, n)
    run = (np.left_shift(np.int64(1), k) - 1) << j
    out = np.select(
        [kind <= 1, kind == 2, kind == 3, kind == 4, kind == 5, kind == 6, kind == 7],
        [rand,
         run,                                   # run of ones
         ~run,                                  # run of zeros
         np.left_shift(np.int64(1), k),         # single bit
         np.right_shift(np.int64(0x7FFFFF), k),  # low ones
         np.left_shift(np.int64(0x7FFFFF), k),  # high ones
         rand | 1 | (rand & 0x3) << 1],         # odd, low bits ones
        default=rng.choice(np.array([0, 0x7FFFFF, 0x400000, 0x3FFFFF, 1], dtype=np.int64), n),
    )
    return out & 0x7FFFFF


def _biased_exponents(rng, n):
    edge = rng.choice(np.array([0, 1, 2, 126, 127, 128, 253, 254, 255]), n)
    return np.where(rng.random(n) < 0.25, edge, rng.integers(0, 256, n))


def _pack(rng, exps, mants):
    signs = rng.integers(0, 2, len(exps)) << 31
    return (signs | (np.clip(exps, 0, 255).astype(np.int64) << 23) | mants).astype(np.int64)


def _random_pairs(rng, n):
    """n (a, b) pairs of float32 bit patterns in four TestFloat-ish classes."""
    cat = rng.choice(4, size=n, p=[0.2, 0.4, 0.2, 0.2])
    ea = _biased_exponents(rng, n)
    small = rng.integers(-3, 4, n)
    wide = rng.integers(-30, 31, n)
    close = ea + np.where(rng.random(n) < 0.6, small, wide)
    # result exponent near the underflow (<= 0) or overflow (>= 254) boundary
    target = np.where(rng.random(n) < 0.5, rng.integers(-26, 4, n), rng.integers(250, 259, n))
    mul_b = target - ea + 127          # ea + eb - 127 ~ target
    div_b = ea - target + 127          # ea - eb + 127 ~ target
    eb = np.select([cat == 1, cat == 2, cat == 3], [close, mul_b, div_b], default=0)
    a = _pack(rng, ea, _mantissas(rng, n))
    b = _pack(rng, eb, _mantissas(rng, n))
    uniform = cat == 0
    a[uniform] = rng.integers(0, 1 << 32, int(uniform.sum()))
    b[uniform] = rng.integers(0, 1 << 32, int(uniform.sum()))
    return a, b


def _int32_patterns(rng, n):
    """Signed int32 values (as int64), biased to rounding-relevant ones."""
    k = rng.integers(23, 32, n)
    near_pow2 = np.left_shift(np.int64(1), k) + rng.integers(-300, 300, n)
    kk = rng.integers(1, 33, n)
    jj = rng.integers(0, 32, n)
    runs = ((np.left_shift(np.int64(1), kk) - 1) << jj) & M32
    uniform = rng.integers(0, 1 << 32, n)
    ties = (np.left_shift(np.int64(1), rng.integers(24, 31, n))
            + np.left_shift(np.int64(1), rng.integers(0, 8, n)) * (2 * rng.integers(0, 64, n) + 1))
    kind = rng.integers(0, 4, n)
    v = np.select([kind == 0, kind == 1, kind == 2], [near_pow2, runs, uniform], default=ties)
    v = np.where(rng.random(n) < 0.5, -v, v) & M32
    edges = np.array([0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF,
                      0x00FFFFFF, 0x01000000, 0x01000001, 0x01000003, 0x02000002,
                      0x02000006, 0x7FFFFFC0, 0x7FFFFFBF, 0x7FFFFF80, 0x80000040],
                     dtype=np.int64)
    v = np.concatenate([edges, (-edges) & M32, v])
    return ((v ^ 0x80000000) - 0x80000000).astype(np.int64)    # sign-extend


class Data:
    def __init__(self):
        rng = np.random.default_rng(SEED)
        sa = np.repeat(SPECIALS, len(SPECIALS))
        sb = np.tile(SPECIALS, len(SPECIALS))
        ra, rb = _random_pairs(rng, N_RANDOM)
        self.a = np.ascontiguousarray(np.concatenate([sa, ra]), dtype=np.int64)
        self.b = np.ascontiguousarray(np.concatenate([sb, rb]), dtype=np.int64)
        # unary f32 inputs: specials, all random operands, and values around
        # the int32 range (exponents 120..160) for f32_to_i32
        near_int = _pack(rng, rng.integers(120, 161, 4000), _mantissas(rng, 4000))
        self.u = np.ascontiguousarray(np.unique(np.concatenate([SPECIALS, ra, rb, near_int])),
                                      dtype=np.int64)
        self.i = np.ascontiguousarray(_int32_patterns(rng, 6000), dtype=np.int64)

    def unary_input(self, op):
        return self.i if op == "nx_i32_to_f32" else self.u


@pytest.fixture(scope="module")
def data():
    return Data()


# ---------------------------------------------------------------------------
# References: SoftFloat (the spec) and numpy float32 (a second opinion)
# ---------------------------------------------------------------------------

def _canon(bits):
    bits = int(bits) & M32
    return NAN if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF else bits


def _softfloat(op, a, b=None):
    s = softfloatpy
    s.set_rounding_mode(s.RoundingMode.NEAR_EVEN)
    F = s.Float32
    fa = [F.from_bytes((int(x) & M32).to_bytes(4, "big")) for x in a]
    fb = None if b is None else [F.from_bytes((int(x) & M32).to_bytes(4, "big")) for x in b]
    arith = {"nx_f32_add": s.f32_add, "nx_f32_sub": s.f32_sub,
             "nx_f32_mul": s.f32_mul, "nx_f32_div": s.f32_div}
    cmp = {"nx_f32_lt": s.f32_lt_quiet, "nx_f32_le": s.f32_le_quiet, "nx_f32_eq": s.f32_eq}
    if op in arith:
        f = arith[op]
        out = [_canon(int.from_bytes(f(x, y).to_bytes(), "big")) for x, y in zip(fa, fb)]
    elif op in cmp:
        f = cmp[op]
        out = [int(bool(f(x, y))) for x, y in zip(fa, fb)]
    elif op == "nx_f32_sqrt":
        out = [_canon(int.from_bytes(s.f32_sqrt(x).to_bytes(), "big")) for x in fa]
    elif op == "nx_f32_to_i32":
        mm = s.RoundingMode.MIN_MAG
        out = [s.f32_to_i32(x, mm, False).to_int() for x in fa]
    elif op == "nx_i32_to_f32":
        I = s.Int32
        out = [_canon(int.from_bytes(s.i32_to_f32(I.from_int(((int(x) & M32) ^ 0x80000000) - 0x80000000)).to_bytes(), "big"))
               for x in a]
    else:
        raise AssertionError(op)
    return np.array(out, dtype=np.int64)


def _numpy(op, a, b=None):
    fa = (a & M32).astype(np.uint32).view(np.float32)
    fb = None if b is None else (b & M32).astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        if op == "nx_i32_to_f32":
            r = (a & M32).astype(np.uint32).view(np.int32).astype(np.float32)
        elif op == "nx_f32_to_i32":
            d = fa.astype(np.float64)
            return np.where(np.isnan(d) | (d >= 2.0 ** 31), 2 ** 31 - 1,
                            np.where(d < -(2.0 ** 31), -(2 ** 31),
                                     np.trunc(np.nan_to_num(d, posinf=0, neginf=0)))).astype(np.int64)
        elif op in ("nx_f32_lt", "nx_f32_le", "nx_f32_eq"):
            f = {"nx_f32_lt": np.less, "nx_f32_le": np.less_equal, "nx_f32_eq": np.equal}[op]
            return f(fa, fb).astype(np.int64)
        elif op == "nx_f32_sqrt":
            r = np.sqrt(fa)
        else:
            f = {"nx_f32_add": np.add, "nx_f32_sub": np.subtract,
                 "nx_f32_mul": np.multiply, "nx_f32_div": np.divide}[op]
            r = f(fa, fb)
    assert r.dtype == np.float32
    bits = r.view(np.uint32).astype(np.int64)
    bits[np.isnan(r)] = NAN
    return bits


@pytest.fixture(scope="module")
def reference(data):
    """op -> SoftFloat result array (computed once, shared by all tests)."""
    ref = {op: _softfloat(op, data.a, data.b) for op in BINOPS}
    ref.update({op: _softfloat(op, data.unary_input(op)) for op in UNOPS})
    return ref


# ---------------------------------------------------------------------------
# The C harness
# ---------------------------------------------------------------------------

HARNESS_C = r"""
#include <stdio.h>          /* the header must work after system headers too */
#include "nx_runtime.h"

void h_bin(int op, const int64_t *a, const int64_t *b, int64_t *out, size_t n);
void h_un(int op, const int64_t *a, int64_t *out, size_t n);
void *h_mmap(int64_t nbytes);
void h_bits(int lane, const int64_t *a, int64_t *out, size_t n);
int64_t h_munmap(void *p, int64_t nbytes);
int64_t h_write(int64_t fd, void *buf, int64_t n);

void h_bin(int op, const int64_t *a, const int64_t *b, int64_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (op) {
        case 0: out[i] = nxrt_nx_f32_add(a[i], b[i]); break;
        case 1: out[i] = nxrt_nx_f32_sub(a[i], b[i]); break;
        case 2: out[i] = nxrt_nx_f32_mul(a[i], b[i]); break;
        case 3: out[i] = nxrt_nx_f32_div(a[i], b[i]); break;
        case 4: out[i] = nxrt_nx_f32_lt(a[i], b[i]); break;
        case 5: out[i] = nxrt_nx_f32_le(a[i], b[i]); break;
        case 6: out[i] = nxrt_nx_f32_eq(a[i], b[i]); break;
        default: out[i] = -12345; break;
        }
    }
}

void h_un(int op, const int64_t *a, int64_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (op) {
        case 0: out[i] = nxrt_nx_f32_sqrt(a[i]); break;
        case 1: out[i] = nxrt_nx_i32_to_f32(a[i]); break;
        case 2: out[i] = nxrt_nx_f32_to_i32(a[i]); break;
        default: out[i] = -12345; break;
        }
    }
}

/* a float's bits, through either canonicalising store of the emitted C */
void h_bits(int lane, const int64_t *a, int64_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float f = nxrt_f32_from_bits(a[i]);
        out[i] = lane ? nxrt_f32_lane_bits(f) : nxrt_f32_to_bits(f);
    }
}

void *h_mmap(int64_t nbytes) { return nxrt_sys_mmap(nbytes); }
int64_t h_munmap(void *p, int64_t nbytes) { return nxrt_sys_munmap(p, nbytes); }
int64_t h_write(int64_t fd, void *buf, int64_t n) { return nxrt_sys_write(fd, buf, n); }
"""

OPT_VARIANTS = {"O2": ["-O2"], "O0": ["-O0"], "O3-native": ["-O3", "-march=native"]}


def _compile(args, src_text, out, tmp):
    src = tmp / (out.stem + ".c")
    src.write_text(src_text)
    cmd = [CC, *args, "-I", str(RUNTIME_DIR), str(src), "-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc, cmd


@pytest.fixture(scope="module", params=list(OPT_VARIANTS))
def clib(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nxrt_" + request.param)
    so = tmp / f"harness_{request.param.replace('-', '_')}.so"
    args = [*OPT_VARIANTS[request.param], *GEN_FLAGS, *WARN_FLAGS, "-fPIC", "-shared"]
    proc, cmd = _compile(args, HARNESS_C, so, tmp)
    assert proc.returncode == 0 and not proc.stderr.strip(), \
        f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    lib = ctypes.CDLL(str(so))
    P = ctypes.c_void_p
    lib.h_bin.argtypes = [ctypes.c_int, P, P, P, ctypes.c_size_t]
    lib.h_bin.restype = None
    lib.h_un.argtypes = [ctypes.c_int, P, P, ctypes.c_size_t]
    lib.h_un.restype = None
    lib.h_bits.argtypes = [ctypes.c_int, P, P, ctypes.c_size_t]
    lib.h_bits.restype = None
    lib.h_mmap.argtypes = [ctypes.c_int64]
    lib.h_mmap.restype = P
    lib.h_munmap.argtypes = [P, ctypes.c_int64]
    lib.h_munmap.restype = ctypes.c_int64
    lib.h_write.argtypes = [ctypes.c_int64, P, ctypes.c_int64]
    lib.h_write.restype = ctypes.c_int64
    return lib


def c_run(lib, op, a, b=None):
    a = np.ascontiguousarray(a, dtype=np.int64)
    out = np.empty_like(a)
    if op in BINOPS:
        b = np.ascontiguousarray(b, dtype=np.int64)
        lib.h_bin(BINOPS.index(op), a.ctypes.data, b.ctypes.data, out.ctypes.data, len(a))
    else:
        lib.h_un(UNOPS.index(op), a.ctypes.data, out.ctypes.data, len(a))
    return out


# ---------------------------------------------------------------------------
# float32 tests
# ---------------------------------------------------------------------------

def test_inputs_cover_the_special_classes(data):
    fa = (data.a & M32).astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        prod = np.abs(fa * (data.b & M32).astype(np.uint32).view(np.float32))
    assert len(data.a) >= N_RANDOM + len(SPECIALS) ** 2
    assert np.isnan(fa).sum() > 100 and np.isinf(fa).sum() > 100
    assert ((prod > 0) & (prod < np.float32(2.0 ** -126))).sum() > 500   # underflow
    assert np.isinf(prod).sum() > 500                                      # overflow


@pytest.mark.parametrize("op", BINOPS + UNOPS)
def test_numpy_agrees_with_softfloat(op, data, reference):
    """Sanity of the two references against each other."""
    if op in BINOPS:
        assert_bits_equal(op, _numpy(op, data.a, data.b), reference[op], data.a, data.b, "numpy: ")
    else:
        x = data.unary_input(op)
        assert_bits_equal(op, _numpy(op, x), reference[op], x, None, "numpy: ")


@pytest.mark.parametrize("op", BINOPS + UNOPS)
def test_c_bit_exact(op, clib, data, reference):
    if op in BINOPS:
        assert_bits_equal(op, c_run(clib, op, data.a, data.b), reference[op], data.a, data.b, "C: ")
    else:
        x = data.unary_input(op)
        assert_bits_equal(op, c_run(clib, op, x), reference[op], x, None, "C: ")


@pytest.mark.parametrize("impl", ["_sc_", "_st_", ""])
@pytest.mark.parametrize("op", BINOPS + UNOPS)
def test_python_bit_exact(op, impl, data, reference):
    f = getattr(nx_f32, impl + op)
    if op in BINOPS:
        got = [int(f(x, y)) for x, y in zip(data.a.tolist(), data.b.tolist())]
        assert_bits_equal(op, got, reference[op], data.a, data.b, f"Python {impl or 'public'}: ")
    else:
        x = data.unary_input(op)
        got = [f(v) for v in x.tolist()]
        assert_bits_equal(op, got, reference[op], x, None, f"Python {impl or 'public'}: ")


@pytest.mark.parametrize("impl", ["_sc_", "_st_"])
def test_python_result_types(impl):
    g = lambda n: getattr(nx_f32, impl + n)  # noqa: E731
    for op in ("nx_f32_lt", "nx_f32_le", "nx_f32_eq"):
        assert g(op)(0x3F800000, 0x40000000) in (True, False)
        assert type(g(op)(0x3F800000, 0x40000000)) is bool
    for op in ("nx_f32_add", "nx_f32_sub", "nx_f32_mul", "nx_f32_div"):
        r = g(op)(0x3F800000, 0x40000000)
        assert type(r) is int and 0 <= r < 2 ** 32
    assert g("nx_f32_to_i32")(0xC0E00000) == -7            # sign-extended
    assert g("nx_i32_to_f32")(-7) == 0xC0E00000
    assert g("nx_f32_sqrt")(0x80000000) == 0x80000000      # sqrt(-0) = -0
    assert g("nx_f32_div")(0x3F800000, 0x80000000) == 0xFF800000
    assert g("nx_f32_div")(0x80000000, 0x00000000) == NAN


def test_public_python_impl_is_the_fast_one_here():
    # CPython with a GIL: the scratch-buffer set must pass its self-check.
    assert nx_f32.IMPL == "scratch"
    assert nx_f32.nx_f32_add is nx_f32._sc_nx_f32_add


def test_upper_bits_are_ignored(clib, data):
    """Only the low 32 bits are the operand, in C and in Python."""
    rng = np.random.default_rng(SEED + 1)
    n = 3000
    a, b = data.a[-n:], data.b[-n:]
    junk_a = a | (rng.integers(1, 1 << 31, n) << 32)
    junk_b = b - (rng.integers(1, 1 << 31, n) << 32)      # negative i64s
    for op in BINOPS:
        want = c_run(clib, op, a, b)
        assert_bits_equal(op, c_run(clib, op, junk_a, junk_b), want, junk_a, junk_b, "C junk: ")
        for impl in ("_sc_", "_st_"):
            f = getattr(nx_f32, impl + op)
            got = [int(f(x, y)) for x, y in zip(junk_a.tolist(), junk_b.tolist())]
            assert_bits_equal(op, got, want, junk_a, junk_b, f"Python {impl} junk: ")
    for op in UNOPS:
        x = data.unary_input(op)[:n]
        junk = x ^ (rng.integers(1, 1 << 31, len(x)) << 32)
        want = c_run(clib, op, x)
        assert_bits_equal(op, c_run(clib, op, junk), want, junk, None, "C junk: ")
        for impl in ("_sc_", "_st_"):
            f = getattr(nx_f32, impl + op)
            assert_bits_equal(op, [f(v) for v in junk.tolist()], want, junk, None, f"Python {impl} junk: ")


def test_lane_bits_equal_to_bits(clib, data):
    """The two ways the emitted C stores a float's bits (nxrt_f32_to_bits, a conditional, and
    nxrt_f32_lane_bits, masks: what lets GCC vectorize a loop around a kernel's column loop) give
    the same words: the input's low 32 bits, every NaN (either sign, any payload, signalling)
    as 0x7FC00000."""
    a = np.ascontiguousarray(np.concatenate([data.a, data.b]), dtype=np.int64)
    got = {}
    for lane in (0, 1):
        out = np.empty_like(a)
        clib.h_bits(lane, a.ctypes.data, out.ctypes.data, len(a))
        got[lane] = out
    want = np.array([_canon(x) for x in a.tolist()], dtype=np.int64)
    nans = ((a & 0x7F800000) == 0x7F800000) & ((a & 0x7FFFFF) != 0)
    assert nans.sum() > 100 and (~nans).sum() > 100
    assert np.array_equal(got[0], want)
    assert np.array_equal(got[1], want)


def test_named_cases(clib):
    """A few hand-checked results, readable when something regresses."""
    cases = [
        ("nx_f32_add", 0x3F800000, 0x33800000, 0x3F800000),  # 1 + 2^-24: tie -> even
        ("nx_f32_add", 0x3F800001, 0x33800000, 0x3F800002),  # tie -> even (up)
        ("nx_f32_add", 0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000),  # overflow -> inf
        ("nx_f32_add", 0x7F800000, 0xFF800000, NAN),         # inf - inf
        ("nx_f32_add", 0x00000001, 0x80000001, 0x00000000),  # exact zero is +0
        ("nx_f32_add", 0x80000000, 0x80000000, 0x80000000),  # -0 + -0
        ("nx_f32_sub", 0x00800000, 0x007FFFFF, 0x00000001),  # subnormal kept
        ("nx_f32_mul", 0x3F800800, 0x3F800800, 0x3F801000),  # (1+2^-12)^2 tie
        ("nx_f32_mul", 0x1A000000, 0x1A000000, 0x00000000),  # 2^-150: tie -> 0
        ("nx_f32_mul", 0x1A400000, 0x1A400000, 0x00000001),  # 2.25*2^-150 -> min sub
        ("nx_f32_mul", 0x3F7FFFFF, 0x00800000, 0x00800000),  # rounds up to min normal
        ("nx_f32_mul", 0x7F800000, 0x00000000, NAN),         # inf * 0
        ("nx_f32_mul", 0xFFFFFFFF, 0x3F800000, NAN),         # NaN payload dropped
        ("nx_f32_mul", 0x7F800001, 0x3F800000, NAN),         # sNaN
        ("nx_f32_div", 0x3F800000, 0x40400000, 0x3EAAAAAB),  # 1/3
        ("nx_f32_div", 0x3F800000, 0x00000000, 0x7F800000),
        ("nx_f32_div", 0xBF800000, 0x00000000, 0xFF800000),
        ("nx_f32_div", 0x3F800000, 0x80000000, 0xFF800000),
        ("nx_f32_div", 0x00000000, 0x00000000, NAN),
        ("nx_f32_div", 0x7FC00000, 0x00000000, NAN),
        ("nx_f32_div", 0x7F800000, 0x80000000, 0xFF800000),
        ("nx_f32_div", 0x00000001, 0x7F7FFFFF, 0x00000000),
        ("nx_f32_lt", 0x80000000, 0x00000000, 0),
        ("nx_f32_le", 0x80000000, 0x00000000, 1),
        ("nx_f32_eq", 0x80000000, 0x00000000, 1),
        ("nx_f32_eq", 0x7FC00000, 0x7FC00000, 0),
        ("nx_f32_le", 0x7FC00000, 0x3F800000, 0),
        ("nx_f32_lt", 0xFF800000, 0x7F800000, 1),
        ("nx_f32_sqrt", 0x80000000, None, 0x80000000),
        ("nx_f32_sqrt", 0xBF800000, None, NAN),
        ("nx_f32_sqrt", 0xFF800000, None, NAN),
        ("nx_f32_sqrt", 0x7F800000, None, 0x7F800000),
        ("nx_f32_sqrt", 0x40000000, None, 0x3FB504F3),
        ("nx_f32_sqrt", 0x00000001, None, 0x1A3504F3),       # sqrt(2^-149)
        ("nx_i32_to_f32", 0x01000001, None, 0x4B800000),     # 2^24+1 -> tie -> even
        ("nx_i32_to_f32", 0x01000003, None, 0x4B800002),
        ("nx_i32_to_f32", 0x7FFFFFFF, None, 0x4F000000),
        ("nx_i32_to_f32", 0x80000000, None, 0xCF000000),
        ("nx_i32_to_f32", -1, None, 0xBF800000),
        ("nx_f32_to_i32", 0x7FC00000, None, 2147483647),
        ("nx_f32_to_i32", 0xFFC00000, None, 2147483647),
        ("nx_f32_to_i32", 0x7F800000, None, 2147483647),
        ("nx_f32_to_i32", 0xFF800000, None, -2147483648),
        ("nx_f32_to_i32", 0x4F000000, None, 2147483647),     # 2^31
        ("nx_f32_to_i32", 0xCF000000, None, -2147483648),    # -2^31 exactly
        ("nx_f32_to_i32", 0xCF000001, None, -2147483648),
        ("nx_f32_to_i32", 0x4EFFFFFF, None, 2147483520),
        ("nx_f32_to_i32", 0xBFFFFFFF, None, -1),             # -1.99.. -> -1
        ("nx_f32_to_i32", 0x3F7FFFFF, None, 0),
    ]
    for op, a, b, want in cases:
        args = (a,) if b is None else (a, b)
        c = c_run(clib, op, np.array([a]), None if b is None else np.array([b]))[0]
        py = [int(getattr(nx_f32, p + op)(*args)) for p in ("_sc_", "_st_")]
        assert [int(c)] + py == [want] * 3, (op, hex(a), b, c, py, want)


# ---------------------------------------------------------------------------
# memory / write
# ---------------------------------------------------------------------------

def test_sys_mmap_zeroed_aligned_and_reusable(clib):
    sizes = [1, 2, 7, 15, 16, 17, 100, 4096, 65537, 1 << 20, (3 << 20) + 5, 64 << 20]
    for rounds in range(3):              # freed-then-reused memory is zero too
        blocks = []
        for n in sizes:
            p = clib.h_mmap(n)
            assert p, f"sys_mmap({n}) failed"
            assert p % 16 == 0, f"sys_mmap({n}) = {p:#x} is not 16-byte aligned"
            view = (ctypes.c_ubyte * n).from_address(p)
            assert not np.frombuffer(view, dtype=np.uint8).any(), f"sys_mmap({n}) not zeroed"
            ctypes.memset(p, 0xA5, n)    # dirty it before release
            blocks.append((p, n))
        for p, n in blocks:
            assert clib.h_munmap(p, n) == 0


@pytest.mark.parametrize("n", [0, -1, -(2 ** 63), 2 ** 50, 2 ** 62, 2 ** 63 - 1])
def test_sys_mmap_failure_returns_null(clib, n):
    assert clib.h_mmap(n) is None          # ctypes maps a NULL c_void_p to None


def test_sys_munmap_null(clib):
    assert clib.h_munmap(None, 0) == 0
    assert clib.h_munmap(None, 123) == 0


def test_sys_write(clib, capfd):
    msg = b"nx runtime: hello\n"
    buf = ctypes.create_string_buffer(msg, len(msg))
    assert clib.h_write(1, buf, len(msg)) == len(msg)
    assert clib.h_write(2, buf, 3) == 3
    assert clib.h_write(1, buf, 0) == 0
    out, err = capfd.readouterr()
    assert out == msg.decode() and err == msg[:3].decode()
    for fd, n in [(0, 1), (3, 1), (-1, 1), (1, -1), (2 ** 40 + 1, 1)]:
        assert clib.h_write(fd, buf, n) == -1
    assert clib.h_write(1, None, 5) == -1
    out, err = capfd.readouterr()
    assert out == "" and err == ""


# ---------------------------------------------------------------------------
# the header on its own, and the externs table
# ---------------------------------------------------------------------------

USE_ALL_C = r"""
#include "nx_runtime.h"
#include "nx_runtime.h"     /* include guard */
int main(void)
{
    int64_t acc = 0;
    void *p = nxrt_sys_mmap(64);
    acc += nxrt_nx_f32_add(1, 2) + nxrt_nx_f32_sub(1, 2) + nxrt_nx_f32_mul(1, 2)
         + nxrt_nx_f32_div(1, 2) + nxrt_nx_f32_sqrt(1) + nxrt_nx_f32_lt(1, 2)
         + nxrt_nx_f32_le(1, 2) + nxrt_nx_f32_eq(1, 2) + nxrt_nx_i32_to_f32(1)
         + nxrt_nx_f32_to_i32(1) + nxrt_f32_to_bits(nxrt_f32_from_bits(5))
         + nxrt_f32_lane_bits(nxrt_f32_from_bits(6));
    acc += nxrt_sys_munmap(p, 64) + nxrt_sys_write(1, "", 0);
    return (int)(acc & 1);
}
"""


@pytest.mark.parametrize("extra", [[], ["-Wpedantic", "-Wconversion", "-Wshadow", "-Wfloat-equal",
                                        "-Wstrict-prototypes", "-Wcast-qual"]])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_header_compiles_warning_free(tmp_path, opt, extra):
    proc, cmd = _compile([opt, *GEN_FLAGS, *WARN_FLAGS, *extra], USE_ALL_C, tmp_path / "use_all", tmp_path)
    assert proc.returncode == 0 and not proc.stderr.strip(), f"{' '.join(cmd)}\n{proc.stderr}"


@pytest.mark.parametrize("bad", ["-ffast-math", "-ffinite-math-only"])
def test_header_refuses_fast_math(tmp_path, bad):
    proc, _ = _compile(["-O2", *GEN_FLAGS, bad, "-c"], USE_ALL_C, tmp_path / "fast.o", tmp_path)
    assert proc.returncode != 0 and "strict IEEE-754" in proc.stderr


_C_TYPES = {"i64": "int64_t", "bool": "_Bool", "*void": "void *", "*u8": "uint8_t *", "*u16": "uint16_t *",
            "*u32": "uint32_t *"}


def test_externs_table_matches_header_and_python():
    # the thread pool's externs are declared in the header nx_runtime.h includes
    text = HEADER.read_text() + (HEADER.parent / "nx_threads.h").read_text()
    EXTERNS = nx_externs.EXTERNS
    assert set(BINOPS + UNOPS) <= EXTERNS.keys()
    for name, (params, result) in EXTERNS.items():
        cname = nx_externs.c_name(name)
        assert cname == "nxrt_" + name
        # inline in the header, or declared there (NXRT_API) and defined in nx_runtime.c
        m = re.search(r"(?:static inline|NXRT_API)\s+(.+?)\s*\b" + re.escape(cname) + r"\(([^)]*)\)", text)
        assert m, f"{cname} missing from nx_runtime.h"
        ret = m.group(1).replace(" *", "*").replace("*", " *").strip()
        assert ret == _C_TYPES[result], (name, ret)
        got = [re.sub(r"\s*\b\w+$", "", p.strip()).replace(" *", "*").replace("*", " *").strip()
               for p in m.group(2).split(",")] if m.group(2).strip() != "void" else []
        if name in nx_externs.TASK_EXTERNS:     # the task: a function's address, declared *void in nx
            assert got[0] == "nxrt_task_fn", (name, got)
            got[0] = _C_TYPES["*void"]
        assert got == [_C_TYPES[t] for t in params], (name, got)
    for name in nx_externs.F32_PRIMITIVES:
        assert callable(getattr(nx_f32, name)), name
        params, result = EXTERNS[name]
        kinds, rkind = nx_externs.F32_OPERAND_KINDS[name]
        assert len(kinds) == len(params)
        assert (result == "bool") == (rkind == "bool")
    assert not {"sys_mmap", "sys_munmap", "sys_write"} & nx_externs.F32_PRIMITIVES
    with pytest.raises(KeyError):
        nx_externs.c_name("nope")
