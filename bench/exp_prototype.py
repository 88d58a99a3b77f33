#!/usr/bin/env python3
"""Reference prototype of nx_f32_exp (nx_src/nx_f32.nx), in numpy float32.

Every step below is one binary32 operation (np.float32 arithmetic rounds to
nearest even and keeps subnormals), done in exactly the order of the .nx code,
so this function is bit-identical to the .nx nx_f32_exp.  The script measures
its error against a correctly rounded reference (mpmath, 100-bit precision,
rounded to binary32 with RNE including subnormals) over >= 1,000,000 inputs:

  * uniform in bit pattern over [-104, 89] (both signs),
  * uniform in value over [-104, 89],
  * the interesting edges (overflow / underflow thresholds, subnormal range,
    tiny |x|) and the specials (+-0, +-inf, NaN).

Usage:  python bench/exp_prototype.py [--n N] [--seed S] [--jobs J]
        python bench/exp_prototype.py --exhaustive   (all 2^32 inputs, float64 reference)
        python bench/exp_prototype.py --nx           (.nx nx_f32_exp == this, bit for bit)
        python bench/exp_prototype.py --points 0x3F800000 0xBF800000 ...

Measured: max 0.9631 ulp on the default 1.18M-input mpmath set (4.9% of results 1 ulp off the
correctly rounded value, none more); --exhaustive: max 0.9903 ulp at x = 0x428CCE63 (70.4031),
over all 2^32 inputs.

Prints the max error in ulps (|ours - exact| / ulp(exact), the ulp of the
exact result's binade, subnormal quantum 2^-149 below 2^-126) and how many
results differ from the correctly rounded one.  Exit status 1 if max > 1 ulp
or a special case is wrong.
"""
import argparse
import math
import sys
import time
from multiprocessing import Pool

import numpy as np
import mpmath

F = np.float32

# ---- constants: exactly the bit patterns used in nx_src/nx_f32.nx ----------
NX_F32_EXP_HI = 0x42B20000      # 89.0: above -> +inf (exp(88.7229) > FLT_MAX)
NX_F32_EXP_LO = 0xC2DC0000      # -110.0: below -> +0 (exp(-103.98) < 2^-150)
NX_F32_LOG2E = 0x3FB8AA3B       # log2(e) = 1.44269502
NX_F32_EXP_MAGIC = 0x4B400000   # 1.5 * 2^23: x + magic rounds x to an integer
NX_F32_LN2_HI = 0x3F318000      # 0.693359375 (9 significant bits: n*hi exact)
NX_F32_LN2_LO = 0xB95E8083      # -2.12194440e-4 = ln2 - ln2_hi
# Cephes expf polynomial: exp(r) ~ 1 + r + r^2 * P(r)
NX_F32_EXP_P0 = 0x39506967      # 1.9875691500e-4
NX_F32_EXP_P1 = 0x3AB743CE      # 1.3981999507e-3
NX_F32_EXP_P2 = 0x3C088908      # 8.3334519073e-3
NX_F32_EXP_P3 = 0x3D2AA9C1      # 4.1665795894e-2
NX_F32_EXP_P4 = 0x3E2AAAAA      # 1.6666665459e-1
NX_F32_EXP_P5 = 0x3F000000      # 5.0000001201e-1 (rounds to exactly 0.5)


def b2f(b):
    return np.array([b & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]


def f2b(f):
    return int(np.array([f], dtype=np.float32).view(np.uint32)[0])


def check_constants():
    """The hex constants above are the float32 roundings of the decimal values."""
    want = {
        NX_F32_LOG2E: 1.0 / math.log(2.0),
        NX_F32_LN2_HI: 0.693359375,
        NX_F32_LN2_LO: -2.12194440e-4,
        NX_F32_EXP_P0: 1.9875691500e-4, NX_F32_EXP_P1: 1.3981999507e-3,
        NX_F32_EXP_P2: 8.3334519073e-3, NX_F32_EXP_P3: 4.1665795894e-2,
        NX_F32_EXP_P4: 1.6666665459e-1, NX_F32_EXP_P5: 5.0000001201e-1,
        NX_F32_EXP_MAGIC: 1.5 * 2.0 ** 23, NX_F32_EXP_HI: 89.0, NX_F32_EXP_LO: -110.0,
    }
    for bits, val in want.items():
        assert f2b(F(val)) == bits, (hex(bits), hex(f2b(F(val))), val)


def exp_bits(xb):
    """Vectorised nx_f32_exp on an array of uint32 bit patterns -> uint32 bits.

    Mirrors the .nx code op for op (see nx_f32.nx, func nx_f32_exp)."""
    xb = np.asarray(xb, dtype=np.uint32)
    x = xb.view(np.float32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        t = x * b2f(NX_F32_LOG2E)
        tm = t + b2f(NX_F32_EXP_MAGIC)
        n = tm.view(np.uint32).astype(np.int64) - NX_F32_EXP_MAGIC
        nf = tm - b2f(NX_F32_EXP_MAGIC)
        r = x - nf * b2f(NX_F32_LN2_HI)
        r = r - nf * b2f(NX_F32_LN2_LO)
        z = r * r
        p = b2f(NX_F32_EXP_P0)
        p = p * r + b2f(NX_F32_EXP_P1)
        p = p * r + b2f(NX_F32_EXP_P2)
        p = p * r + b2f(NX_F32_EXP_P3)
        p = p * r + b2f(NX_F32_EXP_P4)
        p = p * r + b2f(NX_F32_EXP_P5)
        p = p * z
        p = p + r
        p = p + F(1.0)
        n1 = n >> 1                      # arithmetic shift: floor(n / 2)
        n2 = n - n1
        n1 = np.clip(n1, -126, 127)      # only for lanes the .nx never reaches
        n2 = np.clip(n2, -126, 127)
        s1 = ((n1 + 127) << 23).astype(np.uint32).view(np.float32)
        s2 = ((n2 + 127) << 23).astype(np.uint32).view(np.float32)
        y = (p * s1) * s2
    out = y.view(np.uint32).copy()
    # early exits, in the .nx order: NaN, > 89 -> inf, < -110 -> 0
    isnan = (xb & 0x7FFFFFFF) > 0x7F800000
    with np.errstate(invalid="ignore"):
        big = x > b2f(NX_F32_EXP_HI)
        small = x < b2f(NX_F32_EXP_LO)
    out[small] = 0
    out[big] = 0x7F800000
    out[isnan] = 0x7FC00000
    return out


def exp_bits_scalar(xb):
    """Scalar version, literally one np.float32 op per .nx call."""
    x = b2f(xb)
    if (xb & 0x7FFFFFFF) > 0x7F800000:
        return 0x7FC00000
    if b2f(NX_F32_EXP_HI) < x:
        return 0x7F800000
    if x < b2f(NX_F32_EXP_LO):
        return 0
    with np.errstate(over="ignore", under="ignore"):
        t = x * b2f(NX_F32_LOG2E)
        tm = t + b2f(NX_F32_EXP_MAGIC)
        n = f2b(tm) - NX_F32_EXP_MAGIC
        nf = tm - b2f(NX_F32_EXP_MAGIC)
        r = x - nf * b2f(NX_F32_LN2_HI)
        r = r - nf * b2f(NX_F32_LN2_LO)
        z = r * r
        p = b2f(NX_F32_EXP_P0)
        for c in (NX_F32_EXP_P1, NX_F32_EXP_P2, NX_F32_EXP_P3, NX_F32_EXP_P4, NX_F32_EXP_P5):
            p = p * r + b2f(c)
        p = p * z
        p = p + r
        p = p + F(1.0)
        n1 = n >> 1
        n2 = n - n1
        y = (p * b2f((n1 + 127) << 23)) * b2f((n2 + 127) << 23)
    return f2b(y)


# ---- correctly rounded reference -------------------------------------------
def ref_one(xb):
    """(correctly rounded binary32 bits of exp(x), exact value as float64,
    ulp of the exact value's binade).  x must be finite."""
    mpmath.mp.prec = 100
    x = float(b2f(xb))
    v = mpmath.exp(mpmath.mpf(x))
    sign, man, e, bc = v._mpf_          # v = man * 2^e, man odd, bc bits
    assert sign == 0 and man > 0
    top = e + bc - 1                    # floor(log2 v)
    qe = max(top - 23, -149)            # binary32 quantum at v
    shift = qe - e
    if shift <= 0:
        q = man << (-shift)
    else:
        q = man >> shift
        rem = man & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and (q & 1)):
            q += 1
    val = math.ldexp(q, qe) if qe < 1000 else math.inf
    if val >= 2.0 ** 128:
        bits = 0x7F800000
    else:
        bits = f2b(F(val))
        assert float(b2f(bits)) == val
    v64 = float(v) if top < 1024 else math.inf
    return bits, v64, math.ldexp(1.0, qe)


def ref_chunk(xbs):
    return [ref_one(int(b)) for b in xbs]


def ulp_error(ours_bits, v64, ulp, cr_bits=None):
    o = float(b2f(ours_bits))
    if math.isinf(o) and cr_bits == 0x7F800000:
        return 0.0                      # both overflow: exact
    if math.isinf(o):
        # overflow: count inf as 2^128 (one ulp above FLT_MAX when the
        # exact value is just above FLT_MAX)
        o = 2.0 ** 128
    return abs(o - v64) / ulp


def make_inputs(n, seed):
    rng = np.random.default_rng(seed)
    lo_neg = f2b(F(-104.0))           # 0xC2D00000
    hi_pos = f2b(F(89.0))             # 0x42B20000
    k = n // 2
    # uniform in bits: positive [0, 89] and negative [-0, -104]
    pos = rng.integers(0, hi_pos + 1, size=k // 2, dtype=np.uint64)
    neg = rng.integers(0x80000000, lo_neg + 1, size=k - k // 2, dtype=np.uint64)
    # uniform in value over [-104, 89]
    val = rng.uniform(-104.0, 89.0, size=n - k).astype(np.float32).view(np.uint32)
    edges = []
    for c, w in ((88.72283, 20000), (-87.33654, 20000), (-103.27893, 20000),
                 (-103.972, 20000), (-96.0, 5000), (0.0, 5000), (1.0, 2000), (-1.0, 2000)):
        b = f2b(F(c))
        edges.extend(range(b - w, b + w))
    edges = [e for e in edges if 0 <= e <= 0xFFFFFFFF and not (0x7F800000 <= (e & 0x7FFFFFFF))]
    xb = np.concatenate([pos.astype(np.uint32), neg.astype(np.uint32), val,
                         np.array(edges, dtype=np.uint32)])
    return np.unique(xb)


SPECIALS = {
    0x00000000: 0x3F800000,   # exp(+0) = 1
    0x80000000: 0x3F800000,   # exp(-0) = 1
    0x7F800000: 0x7F800000,   # exp(+inf) = +inf
    0xFF800000: 0x00000000,   # exp(-inf) = +0
    0x7FC00000: 0x7FC00000,   # NaN -> canonical NaN
    0xFFC00000: 0x7FC00000,
    0x7F800001: 0x7FC00000,   # signalling NaN pattern -> canonical
    0xFFFFFFFF: 0x7FC00000,
    0x42C80000: 0x7F800000,   # exp(100) = +inf
    0x7F7FFFFF: 0x7F800000,   # exp(FLT_MAX) = +inf
    0xC3480000: 0x00000000,   # exp(-200) = +0
    0xFF7FFFFF: 0x00000000,   # exp(-FLT_MAX) = +0
    0xC2D00000: 0x00000000,   # exp(-104) < 2^-150 -> +0
    0xC2DA0000: 0x00000000,   # exp(-109) -> +0
}


def exhaustive(chunk_bits=24):
    """Every one of the 2^32 inputs, against numpy's float64 exp (|rel err| < 2^-50, i.e.
    < 2^-26 float32 ulp, far below what matters here). Returns (max ulp error, argmax, number of
    results that differ from the float64 value rounded to float32)."""
    max_err, arg, n_diff = 0.0, None, 0
    step = 1 << chunk_bits
    two128 = 2.0 ** 128
    for start in range(0, 1 << 32, step):
        xb = np.arange(start, start + step, dtype=np.uint64).astype(np.uint32)
        x = xb.view(np.float32)
        fin = np.isfinite(x)
        xb, x = xb[fin], x[fin]
        ours = exp_bits(xb)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            v = np.exp(x.astype(np.float64))
            o = ours.view(np.float32).astype(np.float64)
            e = np.floor(np.log2(np.maximum(v, 1e-300)))
            qe = np.maximum(e - 23, -149)
            ulp = np.exp2(qe)
            o = np.where(np.isinf(o), two128, o)
            err = np.abs(o - v) / ulp          # (nan where v = inf: replaced below)
            # both overflow (exact >= FLT_MAX + half an ulp): no error
            err = np.where((o == two128) & (v >= two128 - 2.0 ** 103), 0.0, err)
            n_diff += int(np.count_nonzero(ours != v.astype(np.float32).view(np.uint32)))
        i = int(np.argmax(err))
        if err[i] > max_err:
            max_err, arg = float(err[i]), (int(xb[i]), int(ours[i]))
    return max_err, arg, n_diff


def nx_exp_function():
    """The compiled .nx nx_f32_exp (nxc's C backend, through its cffi export), as a
    function bits -> bits.  Uses nxc's internal API (frontend, emit_c, build_c)."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from nxc.check.frontend import check_file
    from nxc.backend.c.emit import emit_c
    from nxc.backend.c.build import build, load
    lib, ffi = load(build(emit_c(check_file(os.path.join(root, "nx_src", "nx_f32.nx")))))
    out = ffi.new("int64_t *")
    f = lib.nxw_nx_f32_exp

    def nx_exp(b):
        if f(b, out) != 0:
            raise RuntimeError("nx_f32_exp trapped")
        return int(out[0])
    return nx_exp


def compare_nx(n_random, seed):
    """.nx nx_f32_exp vs this prototype, bit for bit, on the measurement set, the specials and
    n_random random 32-bit patterns.  Returns the number of mismatches."""
    nx_exp = nx_exp_function()
    rng = np.random.default_rng(seed)
    xb = np.concatenate([make_inputs(1_000_000, seed),
                         np.array(sorted(SPECIALS), dtype=np.uint32),
                         rng.integers(0, 1 << 32, size=n_random, dtype=np.uint64).astype(np.uint32)])
    proto = exp_bits(xb).tolist()
    mism = 0
    for b, p in zip(xb.tolist(), proto):
        o = nx_exp(b)
        if o != p:
            mism += 1
            if mism <= 10:
                print(f"MISMATCH x={b:#010x} nx={o:#010x} prototype={p:#010x}")
    print(f".nx nx_f32_exp vs prototype: {len(xb)} inputs, {mism} mismatches")
    return mism


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--points", nargs="*", help="hex bit patterns to print")
    ap.add_argument("--exhaustive", action="store_true",
                    help="all 2^32 inputs against numpy's float64 exp (about 10 minutes)")
    ap.add_argument("--nx", action="store_true",
                    help="compare the compiled .nx nx_f32_exp with this prototype bit for bit "
                         "(then the prototype's error figures are the .nx's)")
    args = ap.parse_args()
    check_constants()

    if args.nx:
        return 1 if compare_nx(3_000_000, args.seed) else 0

    if args.exhaustive:
        t0 = time.time()
        max_err, (b, o), n_diff = exhaustive()
        print(f"exhaustive: max error {max_err:.4f} ulp at x={b:#010x} ({float(b2f(b))!r}) "
              f"ours={o:#010x}; {n_diff} results differ from float64-exp rounded to float32; "
              f"{time.time() - t0:.0f}s")
        print("PASS" if max_err <= 1.0 else "FAIL")
        return 0 if max_err <= 1.0 else 1

    if args.points:
        for p in args.points:
            xb = int(p, 16)
            ours = int(exp_bits(np.array([xb], dtype=np.uint32))[0])
            assert ours == exp_bits_scalar(xb)
            if (xb & 0x7FFFFFFF) >= 0x7F800000:
                print(f"x={xb:#010x} ours={ours:#010x}")
                continue
            cr, v64, ulp = ref_one(xb)
            print(f"x={xb:#010x} ({float(b2f(xb))!r}) ours={ours:#010x} cr={cr:#010x} "
                  f"err={ulp_error(ours, v64, ulp, cr):.4f} ulp exact={v64!r}")
        return 0

    bad = 0
    for xb, want in SPECIALS.items():
        got = int(exp_bits(np.array([xb], dtype=np.uint32))[0])
        got_s = exp_bits_scalar(xb)
        if got != want or got_s != want:
            print(f"SPECIAL FAIL x={xb:#010x} got={got:#010x}/{got_s:#010x} want={want:#010x}")
            bad += 1

    xb = make_inputs(args.n, args.seed)
    print(f"{len(xb)} distinct finite inputs", flush=True)
    ours = exp_bits(xb)
    # spot-check the vectorised form against the scalar one
    for i in range(0, len(xb), max(1, len(xb) // 2000)):
        assert int(ours[i]) == exp_bits_scalar(int(xb[i])), hex(int(xb[i]))

    t0 = time.time()
    chunks = np.array_split(xb, max(1, args.jobs * 16))
    with Pool(args.jobs) as pool:
        refs = [r for part in pool.map(ref_chunk, chunks) for r in part]
    print(f"reference computed in {time.time() - t0:.1f}s", flush=True)

    max_err, arg_max, n_diff, n_diff2 = 0.0, None, 0, 0
    for b, o, (cr, v64, ulp) in zip(xb.tolist(), ours.tolist(), refs):
        e = ulp_error(o, v64, ulp, cr)
        if e > max_err:
            max_err, arg_max = e, (b, o, cr)
        if o != cr:
            n_diff += 1
            if abs(o - cr) > 1:
                n_diff2 += 1
    b, o, cr = arg_max
    print(f"max error {max_err:.4f} ulp at x={b:#010x} ({float(b2f(b))!r}): "
          f"ours={o:#010x} correctly rounded={cr:#010x}")
    print(f"{n_diff} of {len(xb)} results not correctly rounded "
          f"({100.0 * n_diff / len(xb):.3f}%), {n_diff2} off by more than 1 ulp")
    ok = max_err <= 1.0 and bad == 0 and n_diff2 == 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
