#!/usr/bin/env python3
"""Every float32 input of nx_f32_silu_lanes (nx_src/nx_f32_mlp.nx) against nx_f32_silu, C backend.

nx_f32_swiglu computes silu with branch-free lanes that GCC vectorizes, for the inputs
nx_f32_silu_fits accepts (2^-25 <= |x|, x <= 20, x > -69), and with nx_f32_silu for the rest.
This runs all 2^32 bit patterns through tests/nx/silu_lanes_batch.nx (the loop in nx, only the
counts cross to Python) and prints how many the lanes take and how many of those differ from
nx_f32_silu (must be 0; exit status 1 otherwise). About a minute of CPU, unchecked C.
tests/test_silu_lanes.py runs a strided sample and the range's edges on every backend.

  python bench/silu_lanes_exhaustive.py [--chunk-bits 28]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunk-bits", type=int, default=28, help="inputs per call: 2^N (default 28)")
    args = ap.parse_args(argv)
    if not 10 <= args.chunk_bits <= 32:
        ap.error("--chunk-bits must be from 10 to 32")
    import nxc
    mod = nxc.load(str(ROOT / "tests" / "nx" / "silu_lanes_batch.nx"), checked=False)
    chunk = 1 << args.chunk_bits
    out = np.zeros(2, np.int64)
    fits = bad = 0
    first = None
    t0, c0 = time.time(), time.process_time()
    for start in range(0, 1 << 32, chunk):
        n = mod.silu_lanes_mismatches(start, chunk, 1, out)
        if n < 0:
            sys.exit("no memory for the batch")
        fits += int(out[0])
        bad += n
        if n and first is None:
            first = int(out[1])
    print(f"all 2^32 inputs in {time.time() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU "
          f"(load average {os.getloadavg()[0]:.2f})")
    print(f"taken by the lanes: {fits:,}; differing from nx_f32_silu: {bad:,}"
          + ("" if first is None else f" (first: 0x{first:08X})"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
