"""References and error measures for the float32 functions of nx_f32_math.nx / nx_f32_trig.nx.

Used by tests/test_f32_math.py (sampled, both backends, mpmath reference) and
bench/f32_math_exhaustive.py (all 2^32 inputs on the C backend, float64 reference).

Error measure (the one docs/numerics.md uses for exp): |nx - exact| / ulp(exact), where
ulp(exact) is the spacing of binary32 in the binade of the exact value (2^-149 below 2^-126),
an infinite nx result counts as +-2^128, and an infinite result where the exact value rounds to
infinity too is no error. A NaN is expected exactly where the exact value is undefined, and
then it must be the canonical 0x7FC00000.

The float64 reference is accurate to a few 2^-53 relative: far below the 2^-24 an ulp of
binary32 is, so a float64 distance of d ulp means d ulp up to ~2^-28 ulp. The suite's mpmath
reference (100 bits) decides the borderline cases.
"""
from __future__ import annotations

import math
import os

import numpy as np

M32 = 0xFFFFFFFF
NAN = 0x7FC00000
ROOT_NX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nx", "f32_math_batch.nx")

# name -> batch_range selector (tests/nx/f32_math_batch.nx)
SELECTOR = {"rsqrt": 0, "log": 1, "exp2": 2, "sigmoid": 3, "silu": 4, "tanh": 5, "sin": 6, "cos": 7, "exp": 8}
UNARY = tuple(SELECTOR)


def f32(b):
    return (np.asarray(b, np.int64) & M32).astype(np.uint32).view(np.float32)


def bits(x):
    return np.asarray(x, np.float32).view(np.uint32).astype(np.int64)


def ref64(name, x):
    """float64 reference of `name` at float32 values x (numpy array of float32)."""
    with np.errstate(all="ignore"):
        v = x.astype(np.float64)
        if name == "rsqrt":
            return 1.0 / np.sqrt(v)
        if name == "log":
            return np.log(v)
        if name == "exp2":
            return np.exp2(v)
        if name == "exp":
            return np.exp(v)
        if name == "sigmoid":
            return np.where(v >= 0, 1.0 / (1.0 + np.exp(-v)), np.exp(v) / (1.0 + np.exp(v)))
        if name == "silu":
            r = np.where(v >= 0, v / (1.0 + np.exp(-v)), v * np.exp(v) / (1.0 + np.exp(v)))
            return np.where(v == -np.inf, -0.0, r)
        if name == "tanh":
            return np.tanh(v)
        if name == "sin":
            return np.sin(v)
        if name == "cos":
            return np.cos(v)
    raise KeyError(name)


def ref_mp(name, xs, prec=100):
    """mpmath reference (float64 of the 100-bit value; +-inf beyond float64) at float32 values."""
    import mpmath as mp
    out = np.empty(len(xs), np.float64)
    with np.errstate(invalid="ignore"):
        values = np.asarray(xs, np.float32).astype(np.float64)
    with mp.workprec(prec):
        for i, x in enumerate(values):
            if math.isnan(x):
                out[i] = math.nan
                continue
            m = mp.mpf(x)
            try:
                if name == "rsqrt":
                    r = mp.inf if x == 0 else (mp.nan if x < 0 else 1 / mp.sqrt(m))
                    if x == 0 and math.copysign(1, x) < 0:
                        r = -mp.inf
                elif name == "log":
                    r = -mp.inf if x == 0 else (mp.nan if x < 0 else mp.log(m))
                elif name == "exp2":
                    r = mp.power(2, m)
                elif name == "exp":
                    r = mp.exp(m)
                elif name == "sigmoid":
                    r = 1 / (1 + mp.exp(-m))
                elif name == "silu":
                    r = mp.mpf(0) if m == -mp.inf else m / (1 + mp.exp(-m))
                elif name == "tanh":
                    r = mp.tanh(m)
                elif name == "sin":
                    r = mp.nan if mp.isinf(m) else mp.sin(m)
                elif name == "cos":
                    r = mp.nan if mp.isinf(m) else mp.cos(m)
                else:
                    raise KeyError(name)
                out[i] = float(r) if not mp.isnan(r) else math.nan
            except OverflowError:
                out[i] = math.inf
    return out


def ref_mp_pow(xs, ys, prec=100):
    import mpmath as mp
    out = np.empty(len(xs), np.float64)
    with mp.workprec(prec):
        for i, (x, y) in enumerate(zip(np.asarray(xs, np.float32).astype(np.float64),
                                       np.asarray(ys, np.float32).astype(np.float64))):
            out[i] = float(mp.power(mp.mpf(x), mp.mpf(y)))
    return out


def ulp_errors(ours_bits, exact):
    """|nx - exact| / ulp(exact) per element; NaN where exact is NaN (checked apart)."""
    o = f32(ours_bits).astype(np.float64)
    e = np.asarray(exact, np.float64)
    big = 2.0 ** 128
    # the exact value rounds to inf beyond the midpoint of FLT_MAX and 2^128
    over = np.abs(e) >= (2.0 ** 128 - 2.0 ** 103)
    with np.errstate(all="ignore"):
        _, ex = np.frexp(e)                  # |e| in [2^(ex-1), 2^ex); 0 for 0, inf, NaN
        top = np.clip(ex - 1, -126, 127)
        ulp = np.ldexp(1.0, top - 23)
        oc = np.where(np.isinf(o), np.sign(o) * big, o)
        ec = np.where(np.isinf(e), np.sign(e) * big, e)
        err = np.abs(oc - ec) / ulp
    err = np.where(over & np.isinf(o) & (np.sign(o) == np.sign(e)), 0.0, err)
    return np.where(np.isnan(e), np.nan, err)


def nan_mismatches(ours_bits, exact):
    """Indices where exactly one of (nx, exact) is NaN, or nx is a non-canonical NaN."""
    ob = np.asarray(ours_bits, np.int64) & M32
    o_nan = ((ob & 0x7FFFFFFF) > 0x7F800000)
    e_nan = np.isnan(np.asarray(exact, np.float64))
    return np.nonzero((o_nan != e_nan) | (o_nan & (ob != NAN)))[0]


def sample_inputs(name, n, seed):
    """n float32 bit patterns for `name`: a quarter uniform over all patterns, the rest uniform
    in value and in bits over the range where the function is not trivially 0, 1, +-inf or x."""
    rng = np.random.default_rng(seed)
    lo, hi = {"rsqrt": (0.0, 1e30), "log": (0.0, 1e30), "exp2": (-151.0, 129.0), "exp": (-105.0, 90.0),
              "sigmoid": (-105.0, 21.0), "silu": (-105.0, 21.0), "tanh": (-10.0, 10.0),
              "sin": (-50000.0, 50000.0), "cos": (-50000.0, 50000.0)}[name]
    k = n // 4
    a = rng.integers(0, 1 << 32, k, dtype=np.int64)
    b = bits(rng.uniform(lo, hi, k).astype(np.float32))
    small = max(abs(lo), abs(hi))
    c = bits((rng.uniform(-1, 1, k) * np.exp2(rng.uniform(-30, math.log2(small), k))).astype(np.float32))
    if lo >= 0:
        c &= 0x7FFFFFFF
    d = bits(rng.uniform(-4.0, 4.0, n - 3 * k).astype(np.float32))
    if lo >= 0:
        d &= 0x7FFFFFFF
    return np.concatenate([a, b, c, d])


def special_inputs():
    """Signed zeros, subnormals, extremes, infinities and NaNs."""
    v = [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
         0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x3F800000, 0xBF800000, 0x3F7FFFFF,
         0x3F800001, 0x33800000, 0x39800000, 0x3F490FDB, 0x40490FDB, 0x47200000]
    return np.array(v, np.int64)
