"""The cost of checked C on one gate, without Python in the measurement.

    python bench/checked_cost.py [GATE.nx] [--runs N] [--callgrind] [-D NAME=VALUE ...]

Emits the gate's C checked and unchecked (`nxc emit-c`), appends a small
driver, builds both with nxc's -O2 flags and runs each N times in turns: each
run forks a child that times `main()` in its own thread CPU time
(CLOCK_THREAD_CPUTIME_ID, so a busy machine disturbs it little). Prints the
minimum and median per build and the checked/unchecked ratio of the minima.
--callgrind also counts the instructions of one run of each (valgrind; the
process start-up, ~0.15 M instructions, is included), from builds with
-mno-avx512f added (valgrind 3.19 stops at the first AVX-512 instruction, which
-march=native emits on this machine; a run that does not pass is an error). -D passes a macro to
the checked build only, for experiments such as -D NXRT_QUARANTINE_BYTES=0
(no quarantine: not a supported mode, it misses use-after-unmap).
bench/run_bench.py (section 2b) measures the same gate through the Python API.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from nxc.backend.c.build import compiler, flags_for  # noqa: E402
from nxc.paths import bundled_dir, runtime_dir  # noqa: E402

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100, i;
    if (n == 0) {                       /* one run in this process (for callgrind) */
        int64_t r = -1;
        return nxc_run_main(&r) || r != 0;
    }
    double *us = mmap(NULL, sizeof(double) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    for (i = 0; i < n; i++) {
        pid_t pid = fork();
        int status;
        if (pid == 0) {
            struct timespec a, b;
            int64_t r = -1;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
            int trapped = nxc_run_main(&r);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
            us[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
            _exit(trapped || r != 0);
        }
        waitpid(pid, &status, 0);
        if (status != 0) {
            fprintf(stderr, "the gate did not pass\n");
            return 1;
        }
    }
    qsort(us, n, sizeof *us, by_value);
    printf("%.1f %.1f\n", us[0], us[n / 2]);
    return 0;
}
"""


def build(gate: str, checked: bool, out_dir: str, defines: list[str], extra: tuple[str, ...] = (),
          tag: str = "") -> str:
    args = [sys.executable, "-m", "nxc", "emit-c", gate] + ([] if checked else ["--unchecked"])
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    c_file = os.path.join(out_dir, f"{'checked' if checked else 'unchecked'}{tag}.c")
    with open(c_file, "w", encoding="utf-8") as f:
        f.write(text + DRIVER)
    exe = c_file[:-2]
    flags = [x for x in flags_for("2") if x not in ("-shared", "-fPIC", "-fvisibility=hidden", "-std=c11")]
    subprocess.run([*compiler(), *flags, "-std=gnu11", "-g", *(["-D" + d for d in defines] if checked else []),
                    *extra, "-I", runtime_dir(), c_file, "-o", exe, "-lm"], check=True)
    return exe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gate", nargs="?", default=os.path.join(bundled_dir(), "nx_paged_kv_gate.nx"))
    ap.add_argument("--runs", type=int, default=200, help="runs of each build per round (default 200)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, the builds taking turns (default 3)")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="a macro for the checked build")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exes = {"checked": build(args.gate, True, tmp, args.defines), "unchecked": build(args.gate, False, tmp, [])}
        best = {k: [] for k in exes}
        for r in range(args.rounds):
            for k in (exes if r % 2 == 0 else reversed(list(exes))):
                lo, med = map(float, subprocess.run([exes[k], str(args.runs)], check=True, capture_output=True,
                                                    text=True).stdout.split())
                best[k].append(lo)
                print(f"round {r + 1}: {k:9s} min {lo:8.1f} us  median {med:8.1f} us")
        c, u = min(best["checked"]), min(best["unchecked"])
        print(f"main() CPU time, min: checked {c:.1f} us / unchecked {u:.1f} us = {c / u:.3f}")
        if args.callgrind:
            counts = {}
            for k in exes:
                exe = build(args.gate, k == "checked", tmp, args.defines, ("-mno-avx512f",), "-cg")
                out = os.path.join(tmp, f"cg.{k}")
                proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", exe, "0"],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"callgrind: the {k} run did not pass (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
                counts[k] = int(re.search(r"Collected : (\d+)", proc.stderr).group(1))
            print(f"instructions, one run: checked {counts['checked'] / 1e6:.2f} M / unchecked "
                  f"{counts['unchecked'] / 1e6:.2f} M = {counts['checked'] / counts['unchecked']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
