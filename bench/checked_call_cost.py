#!/usr/bin/env python3
"""The cost of a checked call in a library nxc loads: fib(30) (1.6 M calls, nothing
else) through checked and unchecked C, built as nxc builds them (a shared library,
-O2, loaded with dlopen) and called through cffi; min of N calls, thread CPU time.

    python bench/checked_call_cost.py [--runs 20] [--tree /path/to/other/nxc/tree]

With --tree, the same measurement for another nxc tree (e.g. a main checkout),
in a child process, the two taking turns twice: a ratio from one run. Unlike
bench/checked_cost.py, which links the C into an executable (where a
thread-local is one %fs-relative load), this sees what a library pays: in a
dlopen'ed library a thread-local costs a call to __tls_get_addr (docs/performance.md,
"The cost of a checked call").
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

FIB = """func fib(n: i64) -> i64 {
    if n < 2 { return n }
    return fib(n - 1) + fib(n - 2)
}

func main() -> i64 {
    if fib(30) == 832040 { return 0 }
    return 1
}
"""


def measure(tree: str, runs: int) -> dict[str, float]:
    """{"checked": ms, "unchecked": ms} for fib(30) with the nxc found in `tree`."""
    sys.path.insert(0, tree)
    import cffi
    from nxc.backend.c.build import build
    from nxc.backend.c.emit import emit_c
    from nxc.check.frontend import check_file
    from nxc.diagnostics import Diagnostics
    with tempfile.TemporaryDirectory(prefix="nx-callcost-") as tmp:
        path = os.path.join(tmp, "fib.nx")
        with open(path, "w", encoding="utf-8") as f:
            f.write(FIB)
        program = check_file(path, diags=Diagnostics())
        out = {}
        for checked in (True, False):
            emitted = emit_c(program, checked=checked)
            built = build(emitted, opt="2", use_cache=False, abi=True)
            ffi = cffi.FFI()
            ffi.cdef(emitted.cdef)
            lib = ffi.dlopen(built.path)
            slot = ffi.new("int64_t *")
            best = float("inf")
            for _ in range(runs):
                t = time.thread_time()
                status = lib.nxw_fib(30, slot)
                best = min(best, time.thread_time() - t)
                if status != 0 or slot[0] != 832040:
                    raise SystemExit(f"fib(30) gave status {status}, value {slot[0]}")
            out["checked" if checked else "unchecked"] = best * 1e3
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--tree", help="also measure the nxc of this tree (a child process), in turns")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    here = os.path.dirname(HERE)
    if args.child:                          # run in the tree to measure (its cwd)
        r = measure(os.getcwd(), args.runs)
        print(f"{r['checked']:.3f} {r['unchecked']:.3f}")
        return 0
    trees = [here] + ([os.path.abspath(args.tree)] if args.tree else [])
    with open("/proc/loadavg", encoding="utf-8") as f:
        print("load average:", " ".join(f.read().split()[:3]))
    for turn in range(2 if args.tree else 1):
        for tree in trees:
            env = dict(os.environ, PYTHONPATH=tree)
            run = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--runs", str(args.runs)],
                                 capture_output=True, text=True, env=env, cwd=tree)
            if run.returncode != 0:
                print(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "failed", file=sys.stderr)
                return 1
            chk, unchk = map(float, run.stdout.split())
            print(f"turn {turn + 1} {tree}: fib(30) checked {chk:.2f} ms, unchecked {unchk:.2f} ms, "
                  f"checked/unchecked {chk / unchk:.2f}")
    with open("/proc/loadavg", encoding="utf-8") as f:
        print("load average:", " ".join(f.read().split()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
