"""Shared by tests/test_numerics.py and bench/numerics_report.py: input generators,
outside references and error measures for the float32 primitives, nx_f32_exp and the
attention kernels.

References:
  * Berkeley SoftFloat 3e (softfloatpy), round to nearest even: the spec for the primitives.
  * numpy float32 (IEEE binary32 RNE with subnormals, SSE on x86-64): a vectorised second
    reference, fast enough for millions of patterns.
  * mpmath (mpmath.libmp.mpf_exp at 100 bits, rounded here to binary32 RNE with subnormals):
    the correctly rounded exp.
  * float64 numpy softmax(Q K^T * scale + mask) V with GQA grouping: the attention reference.

Every NaN result is compared as the canonical 0x7FC00000 (the nx runtime's only NaN).
"""
from __future__ import annotations

import hashlib
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BATCH_NX = str(ROOT / "tests" / "nx" / "f32_batch.nx")
NX_SRC = ROOT / "nx_src"

NAN = 0x7FC00000
M32 = 0xFFFFFFFF
U = 2.0 ** -24                       # unit roundoff of binary32

BINOPS = ("add", "sub", "mul", "div", "lt", "le", "eq")
UNOPS = ("sqrt", "i32_to_f32", "f32_to_i32")
OPS = BINOPS + UNOPS


# ---------------------------------------------------------------------------
# Loading nx modules
# ---------------------------------------------------------------------------

def load_nx(path, backend="c"):
    """nxc.load, with ImportError when the Python backend is not there yet."""
    import nxc
    return nxc.load(str(path), backend=backend)


def run_batch(mod, op, a, b=None):
    """out = batch_<op>(a[, b]) through the nx driver module; int64 arrays in and out."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    out = np.zeros(len(a), dtype=np.int64)
    f = getattr(mod, "batch_" + op)
    if b is None:
        f(a, out, len(a))
    else:
        f(a, np.ascontiguousarray(b, dtype=np.int64), out, len(a))
    return out


# ---------------------------------------------------------------------------
# Inputs: special classes and TestFloat-style biased random patterns
# ---------------------------------------------------------------------------

_SPECIAL_MAGNITUDES = [
    0x00000000,                                      # zero
    0x00000001, 0x00000002, 0x00000003, 0x00000005,  # smallest subnormals
    0x000FFFFF, 0x00400000, 0x00400001, 0x007FFFFE, 0x007FFFFF,  # subnormals
    0x00800000, 0x00800001, 0x00FFFFFF, 0x01000000,  # smallest normals
    0x7F7FFFFF, 0x7F7FFFFE, 0x7F000000, 0x7E800000,  # largest normals, 2^127, 2^126
    0x3F800000, 0x3F800001, 0x3F7FFFFF, 0x3F7FFFFE,  # 1 and neighbours
    0x3FC00000, 0x3FFFFFFF, 0x40000000, 0x40400000,  # 1.5, 2-ulp, 2, 3
    0x41200000, 0x40490FDB, 0x3DCCCCCD,              # 10, pi, 0.1
    0x33800000, 0x33800001, 0x33FFFFFF, 0x34000000,  # 2^-24 (1 + it ties), 2^-23
    0x34400000,                                      # 3*2^-24 (1 + it ties, rounds up)
    0x3F800800, 0x3F801800, 0x3F800001,              # (1+2^-12)^2 is a tie
    0x1A000000, 0x1A400000, 0x1A800000,              # squares/products underflow at 2^-150
    0x20000000, 0x1F800000, 0x5F800000, 0x5F7FFFFF,  # 2^-63, 2^-64, 2^64: products at the edges
    0x4B800000, 0x4B800001, 0x4B7FFFFF,              # 2^24 neighbourhood
    0x4EFFFFFF, 0x4F000000, 0x4F000001,              # around 2^31 (f32_to_i32 limits)
    0x3F000000, 0x3EFFFFFF, 0x3F400000,              # 0.5, below, 0.75
    0x7F800000,                                      # infinity
    0x7FC00000, 0x7FFFFFFF, 0x7FC00001,              # quiet NaNs
    0x7F800001, 0x7FA00000, 0x7FBFFFFF,              # signalling NaNs
]
SPECIALS = np.array(sorted({m | s for m in _SPECIAL_MAGNITUDES for s in (0, 0x80000000)}),
                    dtype=np.int64)

_EDGE_EXPONENTS = np.array([0, 1, 2, 3, 22, 23, 24, 25, 103, 104, 125, 126, 127, 128, 129,
                            150, 151, 229, 230, 251, 252, 253, 254, 255])


def mantissas(rng, n):
    """23-bit fractions the way TestFloat picks them: mostly structured (runs of ones or of
    zeros at a random place, single bits, all-ones tails and heads, near-halfway patterns),
    a fifth uniformly random."""
    r = rng.integers(0, 1 << 62, n)          # one draw, sliced into the fields below
    kind = (r & 0xFF) % 10
    k = ((r >> 8) & 0xFF) % 23 + 1
    j = ((r >> 16) & 0xFF) % 23
    rand = (r >> 24) & 0x7FFFFF
    fixed = np.array([0, 0x7FFFFF, 0x400000, 0x3FFFFF, 1, 0x7FFFFE], np.int64)[(r >> 47) % 6]
    run = ((np.int64(1) << k) - 1) << j
    out = np.select(
        [kind <= 1, kind == 2, kind == 3, kind == 4, kind == 5, kind == 6, kind == 7, kind == 8],
        [rand,
         run,                                           # run of ones
         ~run,                                          # run of zeros inside ones
         np.int64(1) << j,                              # one bit
         np.int64(0x7FFFFF) >> k,                       # low ones
         (np.int64(0x7FFFFF) << k),                     # high ones, low zeros
         rand | 1,                                      # odd
         run ^ (rand & 0xFF)],                          # run with a noisy tail
        default=fixed,
    )
    return out & 0x7FFFFF


def exponents(rng, n):
    """Biased exponent fields: a third from the table of edges, the rest uniform."""
    return np.where(rng.random(n) < 0.33, rng.choice(_EDGE_EXPONENTS, n), rng.integers(0, 256, n))


def pack(rng, exps, mants, signs=None):
    if signs is None:
        signs = rng.integers(0, 2, len(exps))
    return ((signs.astype(np.int64) << 31) | (np.clip(exps, 0, 255).astype(np.int64) << 23)
            | mants).astype(np.int64)


def biased_floats(rng, n):
    e, m = exponents(rng, n), mantissas(rng, n)
    m = np.where((e == 255) & (rng.random(n) < 0.3), 0, m)        # more infinities
    return pack(rng, e, m)


def _short_odd(rng, bits):
    """Odd integers with exactly `bits` significant bits (bits >= 1)."""
    bits = np.asarray(bits, dtype=np.int64)
    top = np.int64(1) << (bits - 1)
    low = rng.integers(0, 1 << 23, len(bits)) & (top - 1)
    return top | low | 1


def _from_significand(rng, sig, bits, exp_field):
    """float32 pattern of sig * 2^(...) where sig has `bits` significant bits (<= 24):
    the value 1.xxx with the significand left-aligned into the 23-bit fraction."""
    frac = (sig << (24 - bits)) & 0x7FFFFF
    return pack(rng, exp_field, frac)


def random_pairs(op, rng, n):
    """n (a, b) pairs of float32 patterns, biased for `op` the way TestFloat is."""
    a = biased_floats(rng, n)
    b = biased_floats(rng, n)
    ea = (a >> 23) & 0xFF
    cls = rng.integers(0, 10, n)
    sb = rng.integers(0, 2, n)
    if op in ("add", "sub", "lt", "le", "eq"):
        # exponents equal / close / just past the alignment width
        delta = np.select([cls <= 2, cls <= 4], [rng.integers(-3, 4, n), rng.integers(-27, 28, n)],
                          default=0)
        b = np.where(cls <= 4, pack(rng, ea + delta, mantissas(rng, n), sb), b)
        # near-cancellation: b = a with a few low bits changed (sign random)
        near = (a & 0x7FFFFFFF) ^ rng.integers(0, np.int64(1) << rng.integers(1, 12, n))
        b = np.where(cls == 5, near | (sb << 31), b)
        # ties: b is exactly half an ulp of a (or half an ulp plus a sticky bit)
        half = pack(rng, ea - 24, np.where(rng.random(n) < 0.5, 0, mantissas(rng, n)), sb)
        b = np.where(cls == 6, half, b)
        if op in ("lt", "le", "eq"):
            # equal, negated, one ulp apart
            b = np.select([cls == 7, cls == 8], [a, a ^ 0x80000000], default=b)
            b = np.where(cls == 9, (a + rng.integers(-2, 3, n)) & M32, b)
    elif op == "mul":
        # result exponent near the underflow / overflow boundaries, or anywhere
        target = np.select([cls <= 2, cls <= 4], [rng.integers(-26, 4, n), rng.integers(248, 259, n)],
                           default=rng.integers(0, 255, n))
        b = np.where(cls <= 5, pack(rng, np.minimum(target - ea + 127, 254), mantissas(rng, n), sb), b)
        # exact ties: k1- and k2-bit odd significands with k1 + k2 in {25, 26}
        k1 = rng.integers(2, 24, n)
        k2 = np.minimum(np.maximum(np.where(rng.random(n) < 0.5, 25, 26) - k1, 2), 24)
        s1, s2 = _short_odd(rng, k1), _short_odd(rng, k2)
        ta = _from_significand(rng, s1, k1, ea)
        tb = _from_significand(rng, s2, k2, np.where(cls == 9, 127 - ea + rng.integers(-25, 2, n),
                                                     rng.integers(1, 255, n)))
        a = np.where(cls >= 8, ta, a)
        b = np.where(cls >= 8, tb, b)
    elif op == "div":
        target = np.select([cls <= 2, cls <= 4], [rng.integers(-26, 4, n), rng.integers(248, 259, n)],
                           default=rng.integers(0, 255, n))
        b = np.where(cls <= 5, pack(rng, np.minimum(ea - target + 127, 254), mantissas(rng, n), sb), b)
        # exactly representable quotients: a = b * q with q short
        q = _short_odd(rng, rng.integers(1, 12, n)).astype(np.float64)
        with np.errstate(all="ignore"):
            fb = f32(b).astype(np.float64)
            prod = (fb * q * np.exp2(rng.integers(-20, 21, n))).astype(np.float32)
        a = np.where(cls >= 8, bits(prod), a)
    # a slice of completely uniform patterns
    uni = rng.random(n) < 0.12
    a = np.where(uni, rng.integers(0, 1 << 32, n), a)
    b = np.where(uni & (rng.random(n) < 0.9), rng.integers(0, 1 << 32, n), b)
    return a.astype(np.int64) & M32, b.astype(np.int64) & M32


def random_unary(op, rng, n):
    """n inputs for a unary op (int32 values, sign-extended, for i32_to_f32)."""
    cls = rng.integers(0, 8, n)
    if op == "i32_to_f32":
        kk = rng.integers(1, 33, n)
        jj = rng.integers(0, 32, n)
        runs = ((np.int64(1) << kk) - 1) << jj
        p2 = np.int64(1) << rng.integers(23, 32, n)
        near_pow2 = p2 + rng.integers(-300, 300, n)
        # exactly halfway between two floats: 25+ significant bits ending in ...1000
        sig_bits = rng.integers(25, 32, n)
        tie = ((np.int64(1) << (sig_bits - 1)) + (rng.integers(0, 1 << 23, n) << (sig_bits - 24))
               + (np.int64(1) << (sig_bits - 25)))
        v = np.select([cls <= 1, cls == 2, cls == 3, cls == 4], [runs, near_pow2, tie, rng.integers(0, 1 << 32, n)],
                      default=rng.integers(-5000, 5000, n))
        v = np.where(rng.random(n) < 0.5, -v, v) & M32
        edges = np.array([0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0x00FFFFFF,
                          0x01000000, 0x01000001, 0x01000003, 0x02000002, 0x02000006, 0x7FFFFFC0,
                          0x7FFFFFBF, 0x7FFFFF80, 0x80000040], dtype=np.int64)
        v = np.concatenate([edges, (-edges) & M32, v])[:max(n, 2 * len(edges))]
        return ((v ^ 0x80000000) - 0x80000000).astype(np.int64)
    x = biased_floats(rng, n)
    if op == "sqrt":
        # perfect squares (exact results) and squares of 24-bit values (results within a
        # hair of a float), both exponent parities
        m = rng.integers(1, 1 << 12, n).astype(np.float64)
        with np.errstate(all="ignore"):
            sq = (m * m * np.exp2(2 * rng.integers(-70, 60, n) + rng.integers(0, 2, n))).astype(np.float32)
            w = (rng.integers(1 << 23, 1 << 24, n).astype(np.float64) * np.exp2(-23.0)) ** 2
            near = (w * np.exp2(rng.integers(-120, 120, n))).astype(np.float32)
        x = np.select([cls <= 1, cls == 2], [bits(sq), bits(near)], default=x)
        x = np.where(rng.random(n) < 0.1, x | 0x80000000, x & 0x7FFFFFFF)   # some negatives
    elif op == "f32_to_i32":
        # exponents around the int32 range, values near +-0.5/1 and the +-2^31 edges
        near_int = pack(rng, rng.integers(120, 161, n), mantissas(rng, n))
        edge = (np.array([0x4EFFFFFF, 0x4F000000, 0xCF000000, 0x3F000000, 0x3F800000], np.int64)[
            rng.integers(0, 5, n)] + rng.integers(-40, 41, n)) & 0x7FFFFFFF
        edge |= rng.integers(0, 2, n) << 31
        x = np.select([cls <= 3, cls == 4], [near_int, edge], default=x)
    uni = rng.random(n) < 0.12
    x = np.where(uni, rng.integers(0, 1 << 32, n), x)
    return x.astype(np.int64) & M32


def special_inputs(op):
    """Every special paired with every special (binary) / every special (unary)."""
    if op in BINOPS:
        return np.repeat(SPECIALS, len(SPECIALS)), np.tile(SPECIALS, len(SPECIALS))
    if op == "i32_to_f32":
        return ((SPECIALS ^ 0x80000000) - 0x80000000).astype(np.int64), None
    return SPECIALS.copy(), None


def op_inputs(op, n, seed):
    """Specials first, then n random inputs: (a, b) (b is None for unary ops)."""
    rng = np.random.default_rng([seed, OPS.index(op)])
    sa, sb = special_inputs(op)
    if op in BINOPS:
        ra, rb = random_pairs(op, rng, n)
        return np.concatenate([sa, ra]), np.concatenate([sb, rb])
    return np.concatenate([sa, random_unary(op, rng, n)]), None


def _is_tie(r64):
    """r64 (float64, exact) lies exactly halfway between two adjacent float32 values."""
    with np.errstate(all="ignore"):
        f = r64.astype(np.float32)
        g = np.nextafter(f, np.where(r64 > f.astype(np.float64), np.float32(np.inf), np.float32(-np.inf)))
        lo, hi = f.astype(np.float64), g.astype(np.float64)
        return np.isfinite(r64) & np.isfinite(hi) & (r64 != lo) & (2 * r64 == lo + hi)


def coverage(op, a, b=None):
    """How many inputs fall in each class that matters for rounding (for the coverage test)."""
    fa = f32(a)
    ea = (np.asarray(a) >> 23) & 0xFF
    if op == "i32_to_f32":
        v = np.asarray(a, np.int64)
        return {"n": len(a), "inexact": int((v.astype(np.float32).astype(np.int64) != v).sum()),
                "ties": int(_is_tie(v.astype(np.float64)).sum()),
                "negative": int((v < 0).sum()), "int32_min_max": int(((v == -2**31) | (v == 2**31 - 1)).sum())}
    c = {"n": len(a),
         "nan_operand": int(np.isnan(fa).sum() + (0 if b is None else np.isnan(f32(b)).sum())),
         "inf_operand": int(np.isinf(fa).sum() + (0 if b is None else np.isinf(f32(b)).sum())),
         "zero_operand": int((fa == 0).sum()),
         "subnormal_operand": int(((ea == 0) & (np.asarray(a) & 0x7FFFFF != 0)).sum())}
    if op in ("add", "sub", "mul", "div"):
        fb = f32(b)
        eb = (np.asarray(b) >> 23) & 0xFF
        with np.errstate(all="ignore"):
            x, y = fa.astype(np.float64), fb.astype(np.float64)
            r64 = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y}[op]
            r32 = {"add": fa + fb, "sub": fa - fb, "mul": fa * fb, "div": fa / fb}[op]
        fin = np.isfinite(fa) & np.isfinite(fb)
        c["overflow"] = int((fin & np.isinf(r32)).sum())
        c["underflow"] = int((fin & (r64 != 0) & (np.abs(r64) < 2.0 ** -126)).sum())
        c["underflow_to_zero"] = int((fin & (r64 != 0) & (r32 == 0)).sum())
        if op in ("add", "sub", "mul"):
            exact = fin & ((np.abs(ea - eb) <= 28) if op != "mul" else True)
            c["ties"] = int((exact & _is_tie(r64)).sum())
        if op in ("add", "sub"):
            c["cancellation"] = int((fin & (r64 != 0) & (np.abs(r64) < np.maximum(np.abs(x), np.abs(y)) * 2.0 ** -10)).sum())
        c["exact_zero"] = int((fin & (r64 == 0) & (x != 0)).sum())
    elif op in ("lt", "le", "eq"):
        c["equal"] = int((fa == f32(b)).sum())
        c["one_ulp_apart"] = int((np.abs(np.asarray(a) - np.asarray(b)) == 1).sum())
    elif op == "sqrt":
        with np.errstate(all="ignore"):
            r = np.sqrt(fa)
            c["exact"] = int((np.isfinite(r) & (r.astype(np.float64) ** 2 == fa.astype(np.float64)) & (fa > 0)).sum())
            c["negative"] = int((fa < 0).sum())
    elif op == "f32_to_i32":
        with np.errstate(all="ignore"):
            c["out_of_range"] = int(((fa >= 2.0 ** 31) | (fa < -(2.0 ** 31))).sum())
            c["fractional"] = int((np.isfinite(fa) & (np.trunc(fa) != fa)).sum())
    return c


# ---------------------------------------------------------------------------
# bits <-> float32
# ---------------------------------------------------------------------------

def f32(b):
    return (np.asarray(b, dtype=np.int64) & M32).astype(np.uint32).view(np.float32)


def bits(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)


def canon(b):
    """Canonicalise NaN patterns to 0x7FC00000."""
    b = np.asarray(b, dtype=np.int64) & M32
    return np.where(((b & 0x7F800000) == 0x7F800000) & ((b & 0x7FFFFF) != 0), NAN, b)


# ---------------------------------------------------------------------------
# References for the primitives
# ---------------------------------------------------------------------------

def numpy_ref(op, a, b=None):
    fa = f32(a)
    fb = None if b is None else f32(b)
    with np.errstate(all="ignore"):
        if op == "i32_to_f32":
            r = (np.asarray(a, np.int64) & M32).astype(np.uint32).view(np.int32).astype(np.float32)
        elif op == "f32_to_i32":
            d = fa.astype(np.float64)
            return np.where(np.isnan(d) | (d >= 2.0 ** 31), 2 ** 31 - 1,
                            np.where(d < -(2.0 ** 31), -(2 ** 31),
                                     np.trunc(np.nan_to_num(d, posinf=0, neginf=0)))).astype(np.int64)
        elif op in ("lt", "le", "eq"):
            return {"lt": np.less, "le": np.less_equal, "eq": np.equal}[op](fa, fb).astype(np.int64)
        elif op == "sqrt":
            r = np.sqrt(fa)
        else:
            r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](fa, fb)
    assert r.dtype == np.float32
    out = r.view(np.uint32).astype(np.int64)
    out[np.isnan(r)] = NAN
    return out


def _sf_chunk(args):
    op, a, b = args
    import softfloatpy as s
    s.set_rounding_mode(s.RoundingMode.NEAR_EVEN)
    F = s.Float32
    fb_ = F.from_bytes
    conv = lambda xs: [fb_((int(x) & M32).to_bytes(4, "big")) for x in xs]  # noqa: E731
    dec = lambda r: int.from_bytes(r.to_bytes(), "big")                      # noqa: E731
    if op in ("add", "sub", "mul", "div"):
        f = {"add": s.f32_add, "sub": s.f32_sub, "mul": s.f32_mul, "div": s.f32_div}[op]
        out = [dec(f(x, y)) for x, y in zip(conv(a), conv(b))]
    elif op in ("lt", "le", "eq"):
        f = {"lt": s.f32_lt_quiet, "le": s.f32_le_quiet, "eq": s.f32_eq}[op]
        out = [int(bool(f(x, y))) for x, y in zip(conv(a), conv(b))]
    elif op == "sqrt":
        out = [dec(s.f32_sqrt(x)) for x in conv(a)]
    elif op == "f32_to_i32":
        mm = s.RoundingMode.MIN_MAG
        out = [s.f32_to_i32(x, mm, False).to_int() for x in conv(a)]
    elif op == "i32_to_f32":
        I = s.Int32
        out = [dec(s.i32_to_f32(I.from_int(((int(x) & M32) ^ 0x80000000) - 0x80000000))) for x in a]
    else:
        raise AssertionError(op)
    out = np.array(out, dtype=np.int64)
    return out if op in ("lt", "le", "eq", "f32_to_i32") else canon(out)


def softfloat_ref(op, a, b=None, jobs=1):
    """Berkeley SoftFloat 3e, RNE (f32_to_i32: round toward zero, no exact flag), NaN canonical.
    About 1-3 us per element."""
    a = [int(x) for x in np.asarray(a, np.int64)]
    bl = None if b is None else [int(x) for x in np.asarray(b, np.int64)]
    if jobs <= 1 or len(a) < 50_000:
        return _sf_chunk((op, a, bl))
    from multiprocessing import Pool
    k = jobs * 8
    step = -(-len(a) // k)
    parts = [(op, a[i:i + step], None if bl is None else bl[i:i + step]) for i in range(0, len(a), step)]
    with Pool(jobs) as pool:
        return np.concatenate(pool.map(_sf_chunk, parts))


# ---------------------------------------------------------------------------
# An on-disk cache for slow references (keyed by a hash of the inputs)
# ---------------------------------------------------------------------------

def cache_dir() -> Path:
    d = os.environ.get("NX_NUMERICS_CACHE") or os.path.join(
        tempfile.gettempdir(), f"nxc-numerics-{os.getuid() if hasattr(os, 'getuid') else 'u'}")
    Path(d).mkdir(parents=True, exist_ok=True)
    return Path(d)


def cached(tag, inputs, compute):
    """compute() -> int64 array, cached under cache_dir() by `tag` and the input arrays' bytes.
    NX_NUMERICS_NO_CACHE=1 recomputes."""
    h = hashlib.sha256(tag.encode())
    for x in inputs:
        if x is not None:
            h.update(np.ascontiguousarray(x, dtype=np.int64).tobytes())
    path = cache_dir() / f"{tag}-{h.hexdigest()[:24]}.npy"
    if path.exists() and not os.environ.get("NX_NUMERICS_NO_CACHE"):
        try:
            return np.load(path)
        except (OSError, ValueError):
            pass
    out = np.asarray(compute(), dtype=np.int64)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, out)
    os.replace(tmp, path)
    return out


# ---------------------------------------------------------------------------
# exp: inputs and the correctly rounded reference
# ---------------------------------------------------------------------------

EXP_OVERFLOW_X = 0x42B17218     # 88.7228394: the smallest x with exp(x) rounding to +inf
EXP_SUBNORMAL_X = 0xC2AEAC50    # -87.3365479 ~ ln(2^-126): the first x with a subnormal result
EXP_MIN_SUB_X = 0xC2CE8ED0      # -103.278931 ~ ln(2^-149): exp rounds to 2^-149
EXP_ZERO_X = 0xC2CFF1B5         # -103.972084 ~ ln(2^-150): the first x whose exp rounds to +0

EXP_SPECIALS = {
    0x00000000: 0x3F800000, 0x80000000: 0x3F800000,      # exp(+-0) = 1
    0x7F800000: 0x7F800000, 0xFF800000: 0x00000000,      # exp(+inf) = inf, exp(-inf) = +0
    0x7FC00000: NAN, 0xFFC00000: NAN, 0x7F800001: NAN, 0xFFFFFFFF: NAN, 0x7FBFFFFF: NAN,
    0x7F7FFFFF: 0x7F800000, 0xFF7FFFFF: 0x00000000,      # +-FLT_MAX
    0x00000001: 0x3F800000, 0x80000001: 0x3F800000,      # +-2^-149 -> 1
}


def exp_inputs(n, seed):
    """At least n distinct finite float32 patterns spread over exp's whole domain:
    30% uniform over all finite bit patterns (huge |x| -> inf / 0, tiny |x| -> 1),
    20% uniform in bits over [-104, 89], 25% uniform in value over [-104, 89],
    25% dense windows around the thresholds (overflow 88.7228, the subnormal onset -87.3365,
    the smallest subnormal -103.279, round-to-zero -103.972, the early exits 89 / -110, 0, +-1,
    the |x| < 2^-24 range)."""
    rng = np.random.default_rng([seed, 0xE4])
    x = np.zeros(0, np.int64)
    draw = n
    while len(x) < n:                          # windows repeat: draw until n distinct
        x = np.unique(np.concatenate([x, _exp_draw(rng, draw)]))
        draw = max(1000, int((n - len(x)) * 1.5))
    return x.astype(np.int64)


def _exp_draw(rng, n):
    n_all, n_bits, n_val = int(n * 0.30), int(n * 0.20), int(n * 0.25)
    n_win = n - n_all - n_bits - n_val
    allf = rng.integers(0, 1 << 32, n_all)
    hi, lo = 0x42B20000, 0xC2D00000           # 89, -104
    pos = rng.integers(0, hi + 1, n_bits // 2)
    neg = rng.integers(0x80000000, lo + 1, n_bits - n_bits // 2)
    val = bits(rng.uniform(-104.0, 89.0, n_val).astype(np.float32))
    centres = np.array([EXP_OVERFLOW_X, EXP_SUBNORMAL_X, EXP_MIN_SUB_X, EXP_ZERO_X,
                        0x42B20000, 0xC2DC0000, 0x00000000, 0x80000000, 0x3F800000, 0xBF800000,
                        0x33800000, 0xB3800000, 0x42B00000, 0xC2B40000], dtype=np.int64)
    widths = np.array([3000, 3000, 3000, 3000, 500, 500, 2000, 2000, 500, 500, 500, 500,
                       50000, 50000], dtype=np.int64)
    pick = rng.integers(0, len(centres), n_win)
    win = centres[pick] + rng.integers(-widths[pick], widths[pick] + 1)
    # keep windows inside their sign's half (patterns, not values, are offset)
    win = np.where((win < 0) | (win > M32) | ((win ^ centres[pick]) & 0x80000000 != 0), centres[pick], win)
    x = np.concatenate([allf, pos, neg, val, win]) & M32
    return x[(x & 0x7F800000) != 0x7F800000]


def _exp_ref_chunk(xs):
    """(correctly rounded binary32 bits, exact value as float64 (inf when >= 2^1024),
    log2 of the ulp of the exact value's binade) for finite float32 patterns xs."""
    from mpmath import libmp
    mpf_exp, from_float = libmp.mpf_exp, libmp.from_float
    out = np.empty((len(xs), 3), dtype=np.float64)
    for i, xb in enumerate(xs):
        x = float(np.array([xb & M32], np.uint32).view(np.float32)[0])
        sign, man, e, bc = mpf_exp(from_float(x), 100, "n")
        top = e + bc - 1                       # floor(log2 v)
        qe = max(top - 23, -149)               # binary32 quantum at v
        shift = qe - e
        if shift <= 0:
            q = man << (-shift)
        elif shift > bc:                       # man < 2^bc <= half a quantum: rounds to 0
            q = 0
        else:
            q = man >> shift
            rem = man & ((1 << shift) - 1)
            half = 1 << (shift - 1)
            if rem > half or (rem == half and (q & 1)):
                q += 1
        # q * 2^qe is the RNE binary32 value (q may have carried to 2^24)
        if q == 0:
            cr = 0
        else:
            val = math.ldexp(q, qe) if qe < 200 else math.inf
            cr = 0x7F800000 if val >= 2.0 ** 128 else int(bits(np.float32(val)))
        v64 = math.inf if top >= 1023 else (0.0 if top < -1100 else math.ldexp(man, e))
        out[i] = (cr, v64, qe)
    return out


def exp_reference(xs, jobs=1, use_cache=True):
    """Correctly rounded exp for finite float32 patterns: (cr_bits int64, exact float64, ulp).
    mpmath costs ~15 us per input; results are cached on disk (see cached())."""
    xs = np.asarray(xs, np.int64)

    def compute():
        xl = [int(x) for x in xs]
        if jobs <= 1 or len(xl) < 50_000:
            r = _exp_ref_chunk(xl)
        else:
            from multiprocessing import Pool
            step = -(-len(xl) // (jobs * 8))
            with Pool(jobs) as pool:
                r = np.concatenate(pool.map(_exp_ref_chunk, [xl[i:i + step] for i in range(0, len(xl), step)]))
        return np.ascontiguousarray(r).view(np.int64)

    raw = cached("exp-cr-mpmath100", [xs], compute) if use_cache else compute()
    r = np.ascontiguousarray(raw).view(np.float64).reshape(len(xs), 3)
    with np.errstate(over="ignore"):
        return r[:, 0].astype(np.int64), r[:, 1], np.exp2(r[:, 2])


def exp_ulp_errors(ours, cr, exact, ulp):
    """|ours - exact| / ulp(exact) per element (inf counts as 2^128; both infinite -> 0)."""
    o = f32(ours).astype(np.float64)
    both_inf = np.isinf(o) & (np.asarray(cr) == 0x7F800000)
    o = np.where(np.isinf(o), 2.0 ** 128, o)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(o - exact) / ulp
    return np.where(both_inf, 0.0, err)


# ---------------------------------------------------------------------------
# Attention: float64 reference, a-priori error bound, error summary
# ---------------------------------------------------------------------------

def attention_ref(Q, K, V, n_heads, n_kv_heads, head_dim, scale, causal, want_parts=False):
    """float64 softmax(Q_h K_g^T * scale + mask) V_g per query head h, g = h // (n_heads/n_kv_heads).

    Q: [n_q, n_heads*head_dim], K, V: [n_k, n_kv_heads*head_dim] (any float dtype; converted
    exactly to float64). The mask is offset-causal (query i is position n_k - n_q + i and sees
    keys j <= that) when causal, none otherwise. A query that sees no key gets a zero row.
    Returns out [n_q, n_heads*head_dim] (and, with want_parts, per-head S and P)."""
    n_q, n_k = Q.shape[0], K.shape[0]
    group = n_heads // n_kv_heads
    Qh = np.asarray(Q, np.float64).reshape(n_q, n_heads, head_dim).transpose(1, 0, 2)
    Kh = np.asarray(K, np.float64).reshape(n_k, n_kv_heads, head_dim).transpose(1, 0, 2)
    Vh = np.asarray(V, np.float64).reshape(n_k, n_kv_heads, head_dim).transpose(1, 0, 2)
    Kg, Vg = np.repeat(Kh, group, axis=0), np.repeat(Vh, group, axis=0)
    S = np.matmul(Qh, Kg.transpose(0, 2, 1)) * float(scale)
    vis = visible_mask(n_q, n_k, causal)
    Sm = np.where(vis, S, -np.inf)
    m = Sm.max(axis=2, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.where(vis, np.exp(Sm - m), 0.0)
    den = E.sum(axis=2, keepdims=True)
    P = E / np.where(den > 0, den, 1.0)
    O = np.matmul(P, Vg)
    out = O.transpose(1, 0, 2).reshape(n_q, n_heads * head_dim)
    if want_parts:
        return out, dict(Qh=Qh, Kg=Kg, Vg=Vg, S=S, P=P, vis=vis)
    return out


def visible_mask(n_q, n_k, causal):
    if not causal:
        return np.ones((n_q, n_k), dtype=bool)
    q_pos = n_k - n_q + np.arange(n_q)
    return np.arange(n_k)[None, :] <= q_pos[:, None]


def gamma(k):
    return k * U / (1 - k * U)


def attention_bound(parts, head_dim, scale, exp_ulps=1.0):
    """First-order a-priori forward error bound of the kernels' documented op order, per output
    element, from the reference quantities (u = 2^-24, gamma_k = k u / (1 - k u)):

      score   |s^_j - s_j| <= e_j = gamma_(d+1) * scale * sum_d |q_d k_jd|   (d products, d-1
              sequential adds from +0, one multiply by the float32 scale)
      exp arg x_j = s^_j - m rounded once: relative error u |s_j - m| inside exp;
              nx_f32_exp is within `exp_ulps` ulp: relative 2^-23 * exp_ulps
      so the unnormalised weight w^_j = w_j * r_j with |ln r_j| <= a_j = e_j + u|s_j - m| + 2u*exp_ulps
      (the max m is selected exactly, and shifts every weight alike);
      sum     n_vis positive terms from +0: gamma_(n_vis); divide: u
      =>      |p^_j - p_j| <= p_j * (exp(a_j + max_k a_k + gamma_(n_vis) + u) - 1) =: p_j eps_j
      output  sum_j p^_j V_jd from +0: gamma_(n_vis) * sum_j p^_j |V_jd|
      =>      |o^_d - o_d| <= sum_j p_j |V_jd| (eps_j + gamma_(n_vis) (1 + eps_j))
    Subnormal weights add at most n_vis * 2^-149 * max|V| absolute, which is included."""
    Qh, Kg, Vg, S, P, vis = (parts[k] for k in ("Qh", "Kg", "Vg", "S", "P", "vis"))
    absdot = np.matmul(np.abs(Qh), np.abs(Kg).transpose(0, 2, 1)) * abs(float(scale))
    e = gamma(head_dim + 1) * absdot
    Sm = np.where(vis, S, -np.inf)
    m = Sm.max(axis=2, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    a = np.where(vis, e + U * np.abs(S - m) + 2 * U * exp_ulps, 0.0)
    n_vis = vis.sum(axis=1)[None, :, None].astype(np.float64)           # per query row
    g = (n_vis * U) / (1 - n_vis * U)
    eps = np.expm1(a + a.max(axis=2, keepdims=True) + g + U)
    eps = np.where(vis, eps, 0.0)
    absV = np.abs(Vg)
    bound = np.matmul(P * (eps + g * (1 + eps)), absV)
    bound += n_vis * 2.0 ** -149 * (1.0 + absV.max(axis=1, keepdims=True))
    n_q = Qh.shape[1]
    return bound.transpose(1, 0, 2).reshape(n_q, -1)


def torch_sdpa(Q, K, V, n_heads, n_kv_heads, head_dim, scale, causal):
    """torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True) in float64, with
    the kernels' offset-causal mask passed explicitly (torch's is_causal aligns the mask to the
    top left when n_q != n_k; the kernels align it to the bottom right, as a KV cache needs)."""
    import torch
    n_q, n_k = Q.shape[0], K.shape[0]
    q = torch.from_numpy(np.asarray(Q, np.float64).reshape(n_q, n_heads, head_dim).transpose(1, 0, 2).copy())
    k = torch.from_numpy(np.asarray(K, np.float64).reshape(n_k, n_kv_heads, head_dim).transpose(1, 0, 2).copy())
    v = torch.from_numpy(np.asarray(V, np.float64).reshape(n_k, n_kv_heads, head_dim).transpose(1, 0, 2).copy())
    mask = torch.from_numpy(visible_mask(n_q, n_k, causal)) if causal else None
    o = torch.nn.functional.scaled_dot_product_attention(
        q[None], k[None], v[None], attn_mask=mask, scale=float(scale), enable_gqa=True)
    return o[0].numpy().transpose(1, 0, 2).reshape(n_q, n_heads * head_dim)


def error_stats(got, ref, bound=None):
    """max |got - ref|, max relative to max|ref| (per the whole tensor), max ratio to bound."""
    err = np.abs(np.asarray(got, np.float64) - ref)
    out = {"max_abs": float(err.max()), "max_ref": float(np.abs(ref).max()),
           "mean_abs": float(err.mean()), "nonfinite": int((~np.isfinite(got)).sum())}
    if bound is not None:
        out["max_bound"] = float(bound.max())
        out["max_ratio"] = float((err / np.maximum(bound, 1e-300)).max())
    return out


# ---------------------------------------------------------------------------
# Attention drivers: one call per kernel, float32 numpy in, float32 numpy out
# ---------------------------------------------------------------------------

def f32_scale(head_dim):
    """1/sqrt(head_dim) rounded to float32 (the value the kernels get); as a float."""
    return float(np.float32(1.0 / math.sqrt(head_dim)))


def to_nx(x):
    return bits(np.ascontiguousarray(x, dtype=np.float32).ravel())


def run_single(mod, Q, K, V, scale):
    n, d = Q.shape
    out, sr, pr = (np.zeros(k, np.int64) for k in (n * d, n, n))
    st = mod.nx_f32_attention(to_nx(Q), to_nx(K), to_nx(V), n, d, int(bits(np.float32(scale))), out, sr, pr)
    assert st == mod.NX_F32_ATTN_OK, st
    return f32(out).reshape(n, d)


def run_multi(mod, Q, K, V, scale, causal):
    n_q, d = Q.shape
    n_k = K.shape[0]
    out = np.full(n_q * d, 0x7FC00000, np.int64)     # poison: every slot must be written
    st = mod.nx_f32_attn_multi(to_nx(Q), to_nx(K), to_nx(V), n_q, n_k, d, int(causal),
                               int(bits(np.float32(scale))), out)
    assert st == mod.NX_F32_AM_OK, st
    return f32(out).reshape(n_q, d)


def run_gqa(mod, Q, K, V, n_heads, n_kv_heads, head_dim, scale):
    n = Q.shape[0]
    out = np.full(n * n_heads * head_dim, 0x7FC00000, np.int64)
    st = mod.nx_f32_gqa_attention(to_nx(Q), to_nx(K), to_nx(V), n, n_heads, n_kv_heads, head_dim,
                                  int(bits(np.float32(scale))), out)
    assert st == mod.NX_F32GQA_OK, st
    return f32(out).reshape(n, n_heads * head_dim)


class CachedStack:
    """Drives nx_f32_attn_with_cache (kind="cache") or nx_f32_attn_with_paged (kind="paged")
    through a multi-layer schedule of steps, following the caller contract of docs/kv-cache.md:
    ensure_append once per step, attn per layer, advance once after all layers."""

    def __init__(self, mod, kind, n_layers, n_heads, n_kv_heads, head_dim, max_len,
                 block_size=16, n_blocks=None):
        self.mod, self.kind = mod, kind
        self.n_layers, self.n_heads, self.n_kv_heads, self.head_dim = n_layers, n_heads, n_kv_heads, head_dim
        if kind == "cache":
            self.cache = mod.nx_kvc_new(n_layers, n_kv_heads, head_dim, max_len)
            assert self.cache
        else:
            n_blocks = n_blocks or -(-max_len // block_size) + 1
            self.pool = mod.nx_pkv_pool_new(n_layers, n_kv_heads, head_dim, block_size, n_blocks)
            assert self.pool
            self.seq = mod.nx_pkv_seq_new(self.pool)
            assert self.seq

    @property
    def seq_len(self):
        return (self.cache if self.kind == "cache" else self.seq).seq_len

    def step(self, Qs, Ks, Vs, scale, causal=1):
        """Qs[l]: [n, n_heads*head_dim], Ks[l]/Vs[l]: [n, n_kv_heads*head_dim] per layer.
        Returns the per-layer outputs [n, n_heads*head_dim] (float32)."""
        m = self.mod
        n = Qs[0].shape[0]
        if self.kind == "cache":
            assert m.nx_kvc_ensure_append(self.cache, n) == m.NX_KVC_OK
        else:
            assert m.nx_pkv_ensure_append(self.seq, n) == m.NX_PKV_OK
        outs = []
        sc = int(bits(np.float32(scale)))
        for layer in range(self.n_layers):
            out = np.full(n * self.n_heads * self.head_dim, 0x7FC00000, np.int64)
            args = (to_nx(Qs[layer]), to_nx(Ks[layer]), to_nx(Vs[layer]), n, self.n_heads,
                    self.n_kv_heads, self.head_dim)
            if self.kind == "cache":
                st = m.nx_f32_attn_with_cache(*args, self.cache, layer, causal, sc, out)
                assert st == m.NX_F32_AC_OK, st
            else:
                st = m.nx_f32_attn_with_paged(*args, self.seq, layer, causal, sc, out)
                assert st == m.NX_F32_AP_OK, st
            outs.append(f32(out).reshape(n, -1))
        if self.kind == "cache":
            assert m.nx_kvc_advance(self.cache, n) == m.NX_KVC_OK
        else:
            assert m.nx_pkv_advance(self.seq, n) == m.NX_PKV_OK
        return outs

    def close(self):
        if self.kind == "cache":
            self.mod.nx_kvc_free(self.cache)
        else:
            self.mod.nx_pkv_seq_free(self.seq)
            self.mod.nx_pkv_pool_free(self.pool)


def run_cached_schedule(mod, kind, schedule, n_layers, n_heads, n_kv_heads, head_dim, seed,
                        block_size=16, causal=1, on_step=None):
    """Run `schedule` (a list of token counts: prefill then decode steps) through the cached
    kernel `kind`; compare each step and layer with the float64 reference over every row so
    far. Returns the list of (step, layer, n, total_k, got, ref, bound) unless on_step is given
    (then on_step is called with that tuple and nothing is kept)."""
    rng = np.random.default_rng(seed)
    total = sum(schedule)
    stack = CachedStack(mod, kind, n_layers, n_heads, n_kv_heads, head_dim, total, block_size)
    scale = f32_scale(head_dim)
    Khist = [np.zeros((0, n_kv_heads * head_dim), np.float32) for _ in range(n_layers)]
    Vhist = [np.zeros((0, n_kv_heads * head_dim), np.float32) for _ in range(n_layers)]
    results = []
    try:
        for step, n in enumerate(schedule):
            Qs = [rng.standard_normal((n, n_heads * head_dim), dtype=np.float32) for _ in range(n_layers)]
            Ks = [rng.standard_normal((n, n_kv_heads * head_dim), dtype=np.float32) for _ in range(n_layers)]
            Vs = [rng.standard_normal((n, n_kv_heads * head_dim), dtype=np.float32) for _ in range(n_layers)]
            assert stack.seq_len == sum(schedule[:step])
            outs = stack.step(Qs, Ks, Vs, scale, causal)
            for layer in range(n_layers):
                Khist[layer] = np.concatenate([Khist[layer], Ks[layer]])
                Vhist[layer] = np.concatenate([Vhist[layer], Vs[layer]])
                ref, parts = attention_ref(Qs[layer], Khist[layer], Vhist[layer], n_heads, n_kv_heads,
                                           head_dim, scale, causal, want_parts=True)
                bound = attention_bound(parts, head_dim, scale)
                item = (step, layer, n, Khist[layer].shape[0], outs[layer], ref, bound,
                        (Qs[layer], Khist[layer], Vhist[layer]))
                if on_step is not None:
                    on_step(item)
                else:
                    results.append(item)
    finally:
        stack.close()
    return results


def assert_bits_equal(op, got, want, a, b=None, what=""):
    """Fail listing the first mismatching float32 results as bit patterns."""
    got, want = np.asarray(got, np.int64), np.asarray(want, np.int64)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        lines = []
        for i in bad[:10]:
            args = f"{int(a[i]) & M32:#010x}" + ("" if b is None else f", {int(b[i]) & M32:#010x}")
            lines.append(f"  {op}({args}) = {int(got[i]):#x}, expected {int(want[i]):#x}")
        pytest.fail(f"{what}{op}: {len(bad)}/{len(got)} mismatches\n" + "\n".join(lines))
