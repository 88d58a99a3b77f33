"""Two versions of the packed linear kernel side by side, in one process (issue 28).

    git show main:nx_src/nx_f32_gemm.nx > /tmp/base/nx_f32_gemm_base.nx
    python bench/linear_ab.py /tmp/base/nx_f32_gemm_base.nx --tokens 64
    python bench/linear_ab.py /tmp/base/nx_f32_gemm_base.nx --tokens 1 --kinds f16,bf16

The base file is any copy of nx_src/nx_f32_gemm.nx (its imports resolve to the bundled
modules); "new" is the bundled one. Both run unchecked C on the same packed weights and the
same X, calls alternating (base, new, numpy), median CPU time of --repeats (one thread: numpy
is held to one thread through OPENBLAS_NUM_THREADS), and the output words are compared. On a
shared machine only the ratios mean much: the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import nxc  # noqa: E402
from nxc.paths import bundled_dir  # noqa: E402

SHAPES = [(9728, 2560), (2560, 9728), (4096, 2560)]


def packed(m, Wf, kind):
    R, C = Wf.shape
    if kind == "f32":
        src, es = Wf.view(np.uint32), 4
    elif kind == "bf16":
        src, es = (Wf.view(np.uint32) >> 16).astype(np.uint16), 2
    else:
        src, es = Wf.astype(np.float16).view(np.uint16), 2
    Rp = (R + 15) // 16 * 16
    buf = np.zeros(Rp * C * es + 64, np.uint8)
    P = buf[(-buf.ctypes.data) % 64:][:Rp * C * es].view(np.uint32 if es == 4 else np.uint16)
    (m.nx_gemm_pack_u32 if es == 4 else m.nx_gemm_pack_u16)(np.ascontiguousarray(src), R, C, P)
    return P, es


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", help="a copy of nx_f32_gemm.nx to compare against")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--kinds", default="bf16,f16,f32")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not os.path.isfile(args.base):
        raise SystemExit(f"linear_ab: error: {args.base}: no such file")
    base = nxc.load(args.base, checked=False)
    new = nxc.load(os.path.join(bundled_dir(), "nx_f32_gemm.nx"), checked=False)
    T = args.tokens
    rng = np.random.default_rng(3)
    print("load average", os.getloadavg(), f"tokens {T}")
    for R, C in SHAPES:
        Wf = (rng.standard_normal((R, C)) * 0.05).astype(np.float32)
        Xf = rng.standard_normal((T, C)).astype(np.float32)
        X = Xf.view(np.uint32).astype(np.int64).ravel()
        flops = 2.0 * R * C * T
        for kind in args.kinds.split(","):
            P, es = packed(new, Wf, kind)
            Ys = {"base": np.zeros(T * R, np.int64), "new": np.zeros(T * R, np.int64)}
            fns = {}
            for lab, m in (("base", base), ("new", new)):
                if es == 4:
                    fns[lab] = lambda m=m, y=Ys[lab]: m.nx_gemm_f32(P, R, C, X, T, y)
                else:
                    fns[lab] = lambda m=m, y=Ys[lab], b=(kind == "bf16"): m.nx_gemm_u16(P, b, R, C, X, T, y)
            fns["numpy"] = lambda: Xf @ Wf.T
            ts = {k: [] for k in fns}
            for _ in range(args.repeats):
                for k, f in fns.items():
                    t0 = time.process_time()
                    f()
                    ts[k].append(time.process_time() - t0)
            med = {k: sorted(v)[len(v) // 2] for k, v in ts.items()}
            same = np.array_equal(Ys["base"], Ys["new"])
            line = (f"{R}x{C} {kind}: base {med['base'] * 1e3:.1f} ms, new {med['new'] * 1e3:.1f} ms, numpy "
                    f"{med['numpy'] * 1e3:.1f} ms; GFLOP/s {flops / med['base'] / 1e9:.1f} / "
                    f"{flops / med['new'] / 1e9:.1f} / {flops / med['numpy'] / 1e9:.1f}; new/base "
                    f"{med['new'] / med['base']:.2f}, new/numpy {med['new'] / med['numpy']:.2f}; "
                    f"same words: {'yes' if same else 'NO'}")
            if T == 1:
                line += f"; GB/s of weights {R * C * es / med['base'] / 1e9:.1f} / {R * C * es / med['new'] / 1e9:.1f}"
            print(line)
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
