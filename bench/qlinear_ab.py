"""Two versions of the quantized linear kernel side by side, in one process (issue 28).

    git show 776c903:nx_src/nx_f32_qgemm.nx > /tmp/base/nx_f32_qgemm_base.nx
    python bench/qlinear_ab.py /tmp/base/nx_f32_qgemm_base.nx --tokens 64
    python bench/qlinear_ab.py /tmp/base/nx_f32_qgemm_base.nx --tokens 1 --mib 1024   # from memory

The base file is any copy of nx_src/nx_f32_qgemm.nx (its imports resolve to the bundled
modules); "new" is the bundled one. Both run unchecked C on the same packed weights (random
valid blocks, tests/quant_support.py) and the same X, calls taking turns (run_bench.py's
paired_medians), median CPU time of --repeats, and the output words are compared. Shapes:
Qwen3-4B's (9728 x 2560, 2560 x 9728, 4096 x 2560), or with --mib one weight of 2560 columns
and as many rows as make it that many MiB: of 1 GiB and more (several times the last-level
cache) every call streams it from memory, as a decode step of a real model does. On a shared
machine only the ratios mean much: the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import nxc
from nxc.paths import bundled_dir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from quant_support import TYPES, random_blocks  # noqa: E402  (tests/: the blocks the tests use)
from run_bench import paired_medians  # noqa: E402

SHAPES = [(9728, 2560), (2560, 9728), (4096, 2560)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", help="a copy of nx_f32_qgemm.nx to compare against")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--types", default="q8_0,q4_k,q6_k", help="comma-separated: " + ",".join(TYPES))
    ap.add_argument("--mib", type=int, default=0, help="one weight of this many MiB instead of the shapes")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not os.path.isfile(args.base):
        raise SystemExit(f"qlinear_ab: error: {args.base}: no such file")
    names = args.types.split(",")
    for name in names:
        if name not in TYPES:
            raise SystemExit(f"qlinear_ab: error: --types: unknown type {name!r} (known: {', '.join(TYPES)})")
    if args.tokens < 1 or args.repeats < 1 or args.mib < 0:
        raise SystemExit("qlinear_ab: error: --tokens and --repeats must be >= 1, --mib >= 0")
    base = nxc.load(args.base, checked=False)
    new = nxc.load(os.path.join(bundled_dir(), "nx_f32_qgemm.nx"), checked=False)
    T = args.tokens
    rng = np.random.default_rng(7)
    print("load average", os.getloadavg(), f"tokens {T}")
    for name in names:
        t_id, qk, bb = TYPES[name]
        shapes = SHAPES
        if args.mib:
            shapes = [((args.mib << 20) // (2560 // qk * bb) // 16 * 16, 2560)]
        for R, C in shapes:
            raw = random_blocks(name, R * C // qk, rng, 0.05).reshape(R, -1)
            buf = np.zeros(new.nx_qgemm_packed_bytes(t_id, R, C), np.uint8)
            P = buf[(-buf.ctypes.data) % 64:]
            new.nx_qgemm_pack(t_id, raw, R, C, P)
            nbytes = raw.nbytes
            del raw
            X = rng.standard_normal((T, C)).astype(np.float32).view(np.uint32).astype(np.int64).ravel()
            Ys = {"base": np.zeros(T * R, np.int64), "new": np.zeros(T * R, np.int64)}
            fns = [lambda m=m, y=Ys[lab]: m.nx_qgemm(t_id, P, R, C, X, T, y)
                   for lab, m in (("base", base), ("new", new))]
            med = dict(zip(("base", "new"), paired_medians(fns, args.repeats, clock=time.process_time)))
            same = np.array_equal(Ys["base"], Ys["new"])
            flops = 2.0 * R * C * T
            line = (f"{R}x{C} {name}: base {med['base'] * 1e3:.1f} ms, new {med['new'] * 1e3:.1f} ms; GFLOP/s "
                    f"{flops / med['base'] / 1e9:.1f} / {flops / med['new'] / 1e9:.1f}; new/base "
                    f"{med['new'] / med['base']:.2f}; same words: {'yes' if same else 'NO'}")
            if T == 1:
                line += f"; GB/s of {name} bytes {nbytes / med['base'] / 1e9:.2f} / {nbytes / med['new'] / 1e9:.2f}"
            print(line, flush=True)
            del P, buf
    print("load average", os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
