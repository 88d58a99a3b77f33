#!/usr/bin/env python3
"""Full-size numerics measurements of nx code against outside references (issue 7).

The in-suite tests (tests/test_numerics.py) run smaller samples; this script runs the full
sizes and prints the figures quoted in docs/numerics.md:

  prims  every float32 primitive through tests/nx/f32_batch.nx on the C backend: N random
         TestFloat-style patterns per op (default 1,000,000) plus all special pairs, bit-exact
         against numpy float32 AND Berkeley SoftFloat 3e on every one of them; the Python
         backend on --py-n of them (if nxc.load(backend="py") works).
  exp    nx_f32_exp on --exp-n inputs (default 1,000,000) over its whole domain against the
         correctly rounded exp (mpmath, 100 bits, rounded to binary32 RNE with subnormals):
         max ulp error, where, how many results are not correctly rounded, by region.
  attn   every attention kernel at realistic shapes (32 query heads, 8 kv heads, head_dim 128,
         256 tokens; contiguous-cache and paged decode over many steps) against float64 numpy
         softmax(Q K^T * scale + mask) V: max abs error, the a-priori bound, error/bound; with
         torch installed, torch's scaled_dot_product_attention(enable_gqa=True) too.

Usage:
  python bench/numerics_report.py                    # prims + exp + attn, ~2 minutes on 2 cores
  python bench/numerics_report.py --only exp-exhaustive   # all 2^32 exp inputs, ~10 minutes
  python bench/numerics_report.py --only exp --exp-n 2000000 --jobs 2
  python bench/numerics_report.py --quick            # smaller sizes, for a smoke run

Slow references (SoftFloat, mpmath) are cached on disk (NX_NUMERICS_CACHE, default
$TMPDIR/nxc-numerics-$UID), keyed by a hash of the inputs, so a rerun only pays for nx.
Exit status 1 if anything is off (a primitive mismatch, exp above 1 ulp, an attention error
above the tolerance or the bound).
"""
from __future__ import annotations

# One BLAS thread: the references are many small matmuls, and on a shared 2-core machine
# OpenBLAS threads spin against each other (10x slower). Must be set before numpy loads.
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("NXC_CACHE_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "nxcache-numerics"))

import numpy as np  # noqa: E402

import numerics_support as ns  # noqa: E402

ATTN_ATOL = 1e-5     # the same tolerance as tests/test_numerics.py


def hr(title):
    print(f"\n== {title} " + "=" * max(0, 76 - len(title)), flush=True)


def load_py(path):
    try:
        return ns.load_nx(path, backend="py")
    except ImportError as exc:
        print(f"  (Python backend not available: {exc})")
        return None


# ---------------------------------------------------------------------------
def report_primitives(args):
    hr(f"float32 primitives through nx (C backend): {args.n:,} random patterns per op + specials")
    mod = ns.load_nx(ns.BATCH_NX)
    py = load_py(ns.BATCH_NX) if args.py_n else None
    ok = True
    print(f"  {'op':11s} {'inputs':>10s} {'!=numpy':>8s} {'!=SoftFloat':>11s} {'py n':>7s} {'py !=':>6s}"
          f"  {'nx s':>6s} {'sf s':>6s}  coverage")
    for op in ns.OPS:
        a, b = ns.op_inputs(op, args.n, args.seed)
        t0 = time.time()
        got = ns.run_batch(mod, op, a, b)
        t_nx = time.time() - t0
        bad_np = int((got != ns.numpy_ref(op, a, b)).sum())
        t0 = time.time()
        sf = ns.cached(f"softfloat-{op}", [a, b], lambda: ns.softfloat_ref(op, a, b, jobs=args.jobs))
        t_sf = time.time() - t0
        bad_sf = int((got != sf).sum())
        py_n, bad_py = "-", "-"
        if py is not None:
            k = len(ns.special_inputs(op)[0]) + args.py_n
            gp = ns.run_batch(py, op, a[:k], None if b is None else b[:k])
            py_n, bad_py = k, int((gp != sf[:k]).sum())
            ok &= bad_py == 0
        ok &= bad_np == 0 and bad_sf == 0
        ns_ = len(ns.special_inputs(op)[0])
        cov = ns.coverage(op, a[ns_:], None if b is None else b[ns_:])
        keys = [k for k in ("ties", "overflow", "underflow", "underflow_to_zero", "cancellation", "equal",
                            "exact", "inexact", "out_of_range", "nan_operand", "subnormal_operand") if k in cov]
        cs = ", ".join(f"{k} {cov[k]:,}" for k in keys)
        print(f"  {op:11s} {len(a):>10,} {bad_np:>8} {bad_sf:>11} {py_n!s:>7} {bad_py!s:>6}  {t_nx:6.3f} {t_sf:6.1f}  {cs}",
              flush=True)
        if bad_np or bad_sf:
            i = int(np.nonzero((got != sf) | (got != ns.numpy_ref(op, a, b)))[0][0])
            print(f"    first mismatch: a={int(a[i]):#010x} b={'-' if b is None else hex(int(b[i]))} "
                  f"nx={int(got[i]):#x} softfloat={int(sf[i]):#x}")
    print("  PASS" if ok else "  FAIL")
    return ok


# ---------------------------------------------------------------------------
def report_exp(args):
    hr(f"nx_f32_exp vs correctly rounded exp (mpmath 100 bits): >= {args.exp_n:,} inputs")
    mod = ns.load_nx(ns.BATCH_NX)
    x = ns.exp_inputs(args.exp_n, args.seed)
    t0 = time.time()
    cr, exact, ulp = ns.exp_reference(x, jobs=args.jobs)
    t_ref = time.time() - t0
    t0 = time.time()
    ours = ns.run_batch(mod, "exp", x)
    t_nx = time.time() - t0
    err = ns.exp_ulp_errors(ours, cr, exact, ulp)
    i = int(np.argmax(err))
    not_cr = int((ours != cr).sum())
    far = int((np.abs(ours - cr) > 1).sum())
    fx = ns.f32(x).astype(np.float64)
    print(f"  {len(x):,} distinct finite inputs; reference {t_ref:.1f}s (cached after the first run), nx {t_nx:.3f}s")
    print(f"  max error {err[i]:.4f} ulp at x = {int(x[i]):#010x} ({float(fx[i])!r}): nx {int(ours[i]):#010x}, "
          f"correctly rounded {int(cr[i]):#010x}")
    print(f"  {not_cr:,} results ({100 * not_cr / len(x):.2f}%) are 1 ulp off the correctly rounded one; "
          f"{far} are further")
    regions = [
        ("x > 88.72 (overflow)", fx >= ns.f32(ns.EXP_OVERFLOW_X)),
        ("normal results", (cr >= 0x00800000) & (cr < 0x7F800000)),
        ("subnormal results", (cr > 0) & (cr < 0x00800000)),
        ("results rounding to 0", cr == 0),
        ("|x| < 2^-24", np.abs(fx) < 2.0 ** -24),
        ("-104 < x < 89", (fx > -104) & (fx < 89)),
    ]
    for name, m in regions:
        if m.any():
            print(f"    {name:24s} n={int(m.sum()):>9,}  max {err[m].max():.4f} ulp  not CR {int((ours[m] != cr[m]).sum()):,}")
    hist = np.histogram(err[np.isfinite(err)], bins=[0, 0.25, 0.5, 0.51, 0.6, 0.7, 0.8, 0.9, 1.0, np.inf])[0]
    print("  histogram (ulp): " + ", ".join(f"{lo}-{hi}: {c:,}" for lo, hi, c in
                                           zip([0, .25, .5, .51, .6, .7, .8, .9, 1.0], [.25, .5, .51, .6, .7, .8, .9, 1.0, "inf"], hist)))
    bad_sp = 0
    xs = np.array(list(ns.EXP_SPECIALS), np.int64)
    want = np.array(list(ns.EXP_SPECIALS.values()), np.int64)
    got_sp = ns.run_batch(mod, "exp", xs)
    bad_sp = int((got_sp != want).sum())
    print(f"  special values (+-0, +-inf, NaNs, +-FLT_MAX, +-2^-149): {len(xs) - bad_sp}/{len(xs)} exact")
    py = load_py(ns.BATCH_NX) if args.py_n else None
    bad_py = 0
    if py is not None:
        sub = x[:: max(1, len(x) // args.py_n)]
        bad_py = int((ns.run_batch(py, "exp", sub) != ns.run_batch(mod, "exp", sub)).sum())
        print(f"  Python backend on {len(sub):,} of the inputs: {bad_py} differ from the C backend")
    ok = err[i] <= 1.0 and far == 0 and bad_sp == 0 and bad_py == 0
    print("  PASS" if ok else "  FAIL")
    return ok


def report_exp_exhaustive(args):
    """nx_f32_exp (C backend, through nx) on every one of the 2^32 bit patterns. Where the
    correctly rounded result is trivial it must be exactly that (|x| < 2^-25: 1; x >= 128: inf;
    x <= -128: +0; NaN: the canonical NaN); everywhere else (|x| in [2^-25, 128), 537M inputs)
    against numpy's float64 exp (error < 1e-15 relative, i.e. < 2^-26 of a float32 ulp: far
    below what is measured). About 5-10 minutes on one core."""
    hr("nx_f32_exp on all 2^32 inputs (float64 exp as the reference where it is not trivial)")
    mod = ns.load_nx(ns.BATCH_NX)
    max_err, arg, n_diff, n_far, n_trivial_bad, t0 = 0.0, None, 0, 0, 0, time.time()
    step = 1 << 22
    two128 = 2.0 ** 128
    for start in range(0, 1 << 32, step):
        xb = np.arange(start, start + step, dtype=np.int64)
        ours = ns.run_batch(mod, "exp", xb)
        ef = (xb >> 23) & 0xFF
        neg = xb >= 0x80000000
        nan = (ef == 255) & ((xb & 0x7FFFFF) != 0)
        tiny = ef < 102                                   # |x| < 2^-25
        big = (ef >= 134) & ~nan                          # |x| >= 128, or inf
        want = np.select([nan, tiny, big & ~neg, big & neg], [ns.NAN, 0x3F800000, 0x7F800000, 0], -1)
        triv = want >= 0
        n_trivial_bad += int((ours[triv] != want[triv]).sum())
        rest = ~triv
        if not rest.any():
            continue
        xr, orr = xb[rest], ours[rest]
        with np.errstate(all="ignore"):
            v = np.exp(ns.f32(xr).astype(np.float64))
            o = ns.f32(orr).astype(np.float64)
            qe = np.maximum(np.floor(np.log2(v)) - 23, -149)
            err = np.abs(np.where(np.isinf(o), two128, o) - v) / np.exp2(qe)
            err = np.where(np.isinf(o) & (v >= two128 - 2.0 ** 103), 0.0, err)
            rounded = ns.bits(v.astype(np.float32))
        n_diff += int((orr != rounded).sum())
        n_far += int((np.abs(orr - rounded) > 1).sum())
        i = int(np.argmax(err))
        if err[i] > max_err:
            max_err, arg = float(err[i]), (int(xr[i]), int(orr[i]), int(rounded[i]))
        if start % (1 << 28) == 0:
            print(f"  ... {start >> 22}/1024 chunks, max so far {max_err:.4f} ulp ({time.time() - t0:.0f}s)",
                  flush=True)
    b, o, r = arg
    print(f"  max error {max_err:.4f} ulp at x = {b:#010x} ({float(ns.f32(b))!r}): nx {o:#010x}, "
          f"float64 exp rounded {r:#010x}")
    print(f"  trivial inputs (|x| < 2^-25, |x| >= 128, inf, NaN) not exactly right: {n_trivial_bad}")
    print(f"  the other 536,870,912 inputs: {n_diff:,} differ from float64-exp rounded to float32 "
          f"(= the correctly rounded result barring double rounding), {n_far} by more than 1 ulp "
          f"({time.time() - t0:.0f}s)")
    ok = max_err <= 1.0 and n_far == 0 and n_trivial_bad == 0
    print("  PASS" if ok else "  FAIL")
    return ok


# ---------------------------------------------------------------------------
class AttnTable:
    def __init__(self):
        self.ok = True
        self.rows = {}
        print(f"  {'kernel / case':44s} {'max|err|':>9s} {'max|ref|':>8s} {'bound':>8s} {'err/bnd':>7s} {'s':>6s}")

    def add(self, kernel, case, got, ref, bound, secs, torch_ref=None):
        st = ns.error_stats(got, ref, bound)
        good = st["max_abs"] <= ATTN_ATOL and st["max_ratio"] <= 1.0 and st["nonfinite"] == 0
        extra = ""
        if torch_ref is not None:
            te = float(np.abs(got - torch_ref).max())
            extra = f"  torch: |nx-torch| {te:.2e}, |torch-numpy| {float(np.abs(torch_ref - ref).max()):.1e}"
            good &= te <= ATTN_ATOL
        self.ok &= good
        r = self.rows.setdefault(kernel, [0.0, 0.0])
        r[0] = max(r[0], st["max_abs"])
        r[1] = max(r[1], st["max_ratio"])
        print(f"  {kernel + ' ' + case:44s} {st['max_abs']:9.2e} {st['max_ref']:8.2f} {st['max_bound']:8.1e} "
              f"{st['max_ratio']:7.4f} {'-' if secs is None else f'{secs:.2f}':>6s}{extra}{'' if good else '  <-- FAIL'}", flush=True)

    def summary(self):
        print("  per kernel: " + "; ".join(f"{k} max {v[0]:.2e} (err/bound {v[1]:.4f})" for k, v in self.rows.items()))


def _torch(args, *a):
    if not args.torch:
        return None
    try:
        return ns.torch_sdpa(*a)
    except TypeError:                       # torch < 2.5 (no enable_gqa)
        return None


def report_attention(args):
    hq, hkv, d = 32, 8, 128
    n = args.tokens
    hr(f"attention kernels vs float64 numpy (tolerance {ATTN_ATOL:g} and the a-priori bound)")
    try:
        import torch  # noqa: F401
        args.torch = True
        print(f"  torch {torch.__version__}: also comparing with scaled_dot_product_attention(enable_gqa=True)")
    except ImportError:
        args.torch = False
        print("  torch not installed: torch comparison skipped")
    rng = np.random.default_rng([args.seed, 77])
    sc = ns.f32_scale(d)
    tab = AttnTable()
    R = ns.NX_SRC

    m = ns.load_nx(R / "nx_f32_attention.nx")
    Q, K, V = (rng.standard_normal((n, d), dtype=np.float32) for _ in range(3))
    t0 = time.time()
    got = ns.run_single(m, Q, K, V, sc)
    t = time.time() - t0
    ref, parts = ns.attention_ref(Q, K, V, 1, 1, d, sc, False, True)
    tab.add("single", f"{n}x{n} d{d}", got, ref, ns.attention_bound(parts, d, sc), t,
            _torch(args, Q, K, V, 1, 1, d, sc, False))

    m = ns.load_nx(R / "nx_f32_attn_multi.nx")
    for n_q, n_k, causal in ((n, n, 1), (1, n, 1), (64, n, 1), (n, n, 0), (n // 2, n // 4, 1)):
        Q = rng.standard_normal((n_q, d), dtype=np.float32)
        K, V = (rng.standard_normal((n_k, d), dtype=np.float32) for _ in range(2))
        t0 = time.time()
        got = ns.run_multi(m, Q, K, V, sc, causal)
        t = time.time() - t0
        ref, parts = ns.attention_ref(Q, K, V, 1, 1, d, sc, causal, True)
        tr = _torch(args, Q, K, V, 1, 1, d, sc, causal) if n_q <= n_k else None
        tab.add("multi", f"q{n_q} k{n_k} causal={causal}", got, ref, ns.attention_bound(parts, d, sc), t, tr)

    m = ns.load_nx(R / "nx_f32_gqa_attention.nx")
    Q = rng.standard_normal((n, hq * d), dtype=np.float32)
    K, V = (rng.standard_normal((n, hkv * d), dtype=np.float32) for _ in range(2))
    t0 = time.time()
    got = ns.run_gqa(m, Q, K, V, hq, hkv, d, sc)
    t = time.time() - t0
    ref, parts = ns.attention_ref(Q, K, V, hq, hkv, d, sc, False, True)
    tab.add("gqa", f"{hq}q/{hkv}kv d{d} {n} tok", got, ref, ns.attention_bound(parts, d, sc), t,
            _torch(args, Q, K, V, hq, hkv, d, sc, False))

    prefill = n // 2
    schedule = [prefill] + [1] * (n - prefill - 8) + [8]
    outs = {}
    for kind, name in (("cache", "nx_f32_attn_with_cache.nx"), ("paged", "nx_f32_attn_paged.nx")):
        m = ns.load_nx(R / name)
        worst = {"max_abs": 0.0, "max_ratio": 0.0}
        keep = []
        t0 = time.time()

        def on_step(item, kind=kind, worst=worst, keep=keep):
            step, layer, n_q, total_k, got, ref, bound, (Qs, Kh, Vh) = item
            st = ns.error_stats(got, ref, bound)
            worst["max_abs"] = max(worst["max_abs"], st["max_abs"])
            worst["max_ratio"] = max(worst["max_ratio"], st["max_ratio"])
            keep.append(ns.bits(got))
            if step == 0 or step == len(schedule) - 1 or (layer == 0 and step % 32 == 0):
                tr = _torch(args, Qs, Kh, Vh, hq, hkv, d, sc, True)
                tab.add(kind, f"step {step} layer {layer} q{n_q} k{total_k}", got, ref, bound, None, tr)
            elif st["max_abs"] > ATTN_ATOL or st["max_ratio"] > 1:
                tab.add(kind, f"step {step} layer {layer} q{n_q} k{total_k}", got, ref, bound, None)

        ns.run_cached_schedule(m, kind, schedule, args.layers, hq, hkv, d, seed=[args.seed, 78],
                               block_size=16, on_step=on_step)
        outs[kind] = keep
        print(f"  {kind}: {len(schedule)} steps x {args.layers} layers (prefill {prefill}, "
              f"{len(schedule) - 2} single-token decodes, a chunk of 8) to {n} tokens: "
              f"max |err| {worst['max_abs']:.2e}, max err/bound {worst['max_ratio']:.4f}, "
              f"{time.time() - t0:.1f}s", flush=True)
        tab.rows.setdefault(kind, [0.0, 0.0])
        tab.rows[kind] = [max(tab.rows[kind][0], worst["max_abs"]), max(tab.rows[kind][1], worst["max_ratio"])]
        tab.ok &= worst["max_abs"] <= ATTN_ATOL and worst["max_ratio"] <= 1.0
    same = all((x == y).all() for x, y in zip(outs["cache"], outs["paged"]))
    print(f"  paged == contiguous bit for bit at every step and layer: {same}")
    tab.ok &= same
    tab.summary()
    print("  PASS" if tab.ok else "  FAIL")
    return tab.ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["prims", "exp", "attn", "exp-exhaustive"], action="append",
                    help="run only these parts (repeatable); exp-exhaustive is never run by default")
    ap.add_argument("--n", type=int, default=1_000_000, help="random patterns per primitive")
    ap.add_argument("--py-n", type=int, default=20_000, help="Python backend sample (0: skip)")
    ap.add_argument("--exp-n", type=int, default=1_000_000, help="exp inputs")
    ap.add_argument("--tokens", type=int, default=256, help="attention sequence length")
    ap.add_argument("--layers", type=int, default=2, help="layers of the cached decode runs")
    ap.add_argument("--seed", type=int, default=20250701, help="the tests' default seed")
    ap.add_argument("--jobs", type=int, default=2, help="processes for SoftFloat / mpmath")
    ap.add_argument("--quick", action="store_true", help="100k patterns, 100k exp inputs, 64 tokens")
    args = ap.parse_args()
    if args.quick:
        args.n, args.exp_n, args.tokens = 100_000, 100_000, 64
    parts = args.only or ["prims", "exp", "attn"]
    t0 = time.time()
    print(f"nxc numerics report: seed {args.seed}, cache {ns.cache_dir()}")
    ok = True
    if "prims" in parts:
        ok &= report_primitives(args)
    if "exp" in parts:
        ok &= report_exp(args)
    if "attn" in parts:
        ok &= report_attention(args)
    if "exp-exhaustive" in parts:
        ok &= report_exp_exhaustive(args)
    print(f"\n{'ALL PASS' if ok else 'FAILURES'} ({time.time() - t0:.0f}s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
