#!/usr/bin/env python3
"""All 2^32 inputs of the float32 functions of nx_f32_math.nx and nx_f32_trig.nx, C backend.

For each function, every bit pattern 0 .. 2^32-1 goes through tests/nx/f32_math_batch.nx
(batch_range: the loop and the inputs live in nx, so only results cross to Python) and is
compared with a float64 reference (tests/f32_math_support.ref64):

  max ulp    max |nx - exact| / ulp(exact) (the measure of docs/numerics.md), and where;
  > 0.5      results farther than half an ulp from the float64 value: not correctly rounded
             (a float64 reference can misjudge a result within ~2^-28 ulp of a midpoint; the
             worst cases printed are re-checked with mpmath at 100 bits);
  > 1        results more than 1 ulp off (the target is 0);
  NaN        inputs where nx and the reference disagree on NaN-ness, or nx's NaN is not the
             canonical 0x7FC00000 (must be 0).

sin, cos and tanh are symmetric by construction, so only their non-negative half is run (the
table still counts all 2^32; --no-mirror runs both halves). The negative half of rsqrt and log
is compared with NaN (-inf at -0) directly, without a reference.

Usage:
  python bench/f32_math_exhaustive.py                       # every function, ~45 CPU minutes
  python bench/f32_math_exhaustive.py sin cos --chunk-bits 22
  python bench/f32_math_exhaustive.py tanh --start 0x3E000000 --stop 0x41200000   # a range

The figures in docs/numerics.md section 5 come from the default run. Exit status 1 if a
function has a result more than 1 ulp off or a NaN mismatch.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402

import f32_math_support as fs  # noqa: E402


def confirm(name, x_bits):
    """(ulp error against mpmath at 100 bits) of nx at one input, to check a float64 worst case."""
    import nxc
    m = nxc.load(fs.ROOT_NX)
    out = np.zeros(1, np.int64)
    m.batch_range(fs.SELECTOR[name], int(x_bits), out, 1)
    exact = fs.ref_mp(name, fs.f32(np.array([x_bits])))
    return float(fs.ulp_errors(out, exact)[0])


# sin and tanh are odd, cos is even BY CONSTRUCTION (they work on |x| and set the sign last;
# tests/test_f32_math.py::test_symmetry checks it bit for bit), so their negative half is the
# mirror of the positive one and is not run again. rsqrt and log of a negative pattern return
# NaN (-inf for -0) before any arithmetic: that half is checked against those values only.
MIRRORED = {"sin", "tanh", "cos"}
NEGATIVE_NAN = {"rsqrt": 0xFF800000, "log": 0xFF800000}     # name -> result at -0


def run(name, start, stop, chunk, mod):
    sel = fs.SELECTOR[name]
    out = np.zeros(chunk, np.int64)
    worst, worst_x = -1.0, None
    over_half = over_one = nan_bad = 0
    first = start
    t0 = time.time()
    nx_time = 0.0
    while first < stop:
        n = min(chunk, stop - first)
        t = time.perf_counter()
        mod.batch_range(sel, first, out, n)
        nx_time += time.perf_counter() - t
        xs = np.arange(first, first + n, dtype=np.int64)
        if name in NEGATIVE_NAN and first >= 1 << 31:
            want = np.where(xs == 1 << 31, NEGATIVE_NAN[name], fs.NAN)
            nan_bad += int(np.count_nonzero(out[:n] != want))
            first += n
            continue
        exact = fs.ref64(name, fs.f32(xs))
        nan_bad += len(fs.nan_mismatches(out[:n], exact))
        # Where nx equals the float64 value rounded to float32 the error is <= 1/2 ulp (and
        # the max is above 1/2 anyway): measure only the others (~1%), which is most of the cost.
        with np.errstate(all="ignore"):
            rounded = fs.bits(exact.astype(np.float32))
        off = np.nonzero((out[:n] != rounded) & ~np.isnan(exact))[0]
        if len(off):
            e = fs.ulp_errors(out[:n][off], exact[off])
            i = int(np.argmax(e))
            if e[i] > worst:
                worst, worst_x = float(e[i]), first + int(off[i])
            over_half += int(np.count_nonzero(e > 0.5))
            over_one += int(np.count_nonzero(e > 1.0))
        elif worst < 0:
            worst, worst_x = 0.5, first
        first += n
    return dict(name=name, worst=worst, worst_x=worst_x, over_half=over_half, over_one=over_one,
                nan_bad=nan_bad, n=stop - start, seconds=time.time() - t0, nx_ns=nx_time / (stop - start) * 1e9)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("functions", nargs="*", default=list(fs.UNARY), help=f"some of {', '.join(fs.UNARY)}")
    ap.add_argument("--start", type=lambda s: int(s, 0), default=0)
    ap.add_argument("--stop", type=lambda s: int(s, 0), default=1 << 32)
    ap.add_argument("--chunk-bits", type=int, default=18, help="inputs per nx call, log2 (small chunks stay in cache)")
    ap.add_argument("--no-mirror", action="store_true", help="run the negative half of sin, cos, tanh too")
    ap.add_argument("--no-confirm", action="store_true", help="skip the mpmath check of the worst case")
    args = ap.parse_args(argv)
    bad = [f for f in args.functions if f not in fs.SELECTOR]
    if bad:
        ap.error(f"unknown function(s) {', '.join(bad)}; choose from {', '.join(fs.UNARY)}")
    import nxc
    mod = nxc.load(fs.ROOT_NX)
    status = 0
    print(f"{'function':9s} {'inputs':>11s} {'max ulp':>8s} {'at':>11s} {'mpmath':>8s} {'> 0.5 ulp':>11s} "
          f"{'> 1 ulp':>8s} {'NaN bad':>8s} {'ns/call':>8s}", flush=True)
    for name in args.functions:
        stop = args.stop
        if name in MIRRORED and not args.no_mirror:
            stop = min(stop, 1 << 31)
        r = run(name, args.start, stop, 1 << args.chunk_bits, mod)
        if stop != args.stop:
            r["n"] = args.stop - args.start            # the mirrored half counts: same bits
        mp_err = float("nan") if args.no_confirm or r["worst_x"] is None else confirm(name, r["worst_x"])
        print(f"{name:9s} {r['n']:11,d} {r['worst']:8.4f} 0x{r['worst_x']:08X} {mp_err:8.4f} "
              f"{r['over_half']:11,d} {r['over_one']:8,d} {r['nan_bad']:8,d} {r['nx_ns']:8.1f}", flush=True)
        if r["over_one"] or r["nan_bad"]:
            status = 1
    return status


if __name__ == "__main__":
    os.environ.setdefault("NXC_CACHE_DIR", str(ROOT / ".nxc-cache"))
    sys.exit(main())
