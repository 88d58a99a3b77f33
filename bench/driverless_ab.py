"""The same compile and link run through the gcc driver and without it
(nxc/backend/c/toolchain.py), alternated, CPU time of each run (user and
system of the processes, from os.wait4), median and best of RUNS.

    python bench/gen_tree.py /tmp/t200 --modules 200 --graph random --seed 1
    python bench/driverless_ab.py /tmp/t200/t0010.nx --runs 30

The gate of MODULE is built once in a fresh cache (its objects, entry and
library); then its own module's object, its entry and its link are redone
RUNS times each way, into a scratch folder.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu_of(cmds: list[list[str]]) -> tuple[float, float]:
    user = system = 0.0
    for cmd in cmds:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if status != 0:
            sys.exit(f"failed: {cmd}")
        user += usage.ru_utime
        system += usage.ru_stime
    return user, system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("module", help="a .nx module with a gate")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NXC_CACHE_DIR"] = cache
        from nxc.backend.c import build as c_build
        from nxc.backend.c import objects, toolchain
        from nxc.backend.registry import backend_for
        from nxc.check.frontend import check_file
        from nxc.diagnostics import Diagnostics
        seen = {}
        real = objects._run_compiler
        scratch = os.path.join(cache, "scratch")
        os.mkdir(scratch)

        def keep(cmd, direct=None):
            """Keep a copy of the inputs of the compiles and the link of this gate."""
            if direct is None:
                return real(cmd, direct)
            if "-c" in cmd:
                source = cmd[cmd.index("-c") + 1]
                base = os.path.basename(source)
                kind = "runtime" if base == "nx_runtime.c" else "entry" if base.startswith("en-") else "module"
                copy = os.path.join(scratch, base)
                shutil.copy(source, copy)
                out = os.path.join(scratch, kind + ".o")
                plan = toolchain.plan_compile(cmd[:1], c_build.compiler_identity(tuple(cmd[:1])),
                                              cmd[1:cmd.index("-c")])
                seen[kind] = ([*cmd[:cmd.index("-c")], "-c", copy, "-o", out],
                              toolchain.compile_commands(plan, copy, out))
            else:
                seen["link"] = (cmd, direct)
            return real(cmd, direct)
        objects._run_compiler = keep
        program = check_file(args.module, diags=Diagnostics())
        backend_for("c", checked=True).prepare(program, purpose="gate", load=False)
        objects._run_compiler = real
        link_cmd, link_direct = seen["link"]
        out = os.path.join(scratch, "lib.so")
        i = link_cmd.index("-o")
        seen["link"] = ([*link_cmd[:i], "-o", out, *link_cmd[i + 2:]],
                        [[out if a == link_cmd[i + 1] else a for a in link_direct[0]]])
        for kind in ("module", "entry", "link"):
            if kind not in seen:
                continue
            driver, direct = seen[kind]
            times = {"driver": [], "direct": []}
            for _ in range(args.runs):
                times["driver"].append(cpu_of([driver]))
                times["direct"].append(cpu_of(direct))
            row = []
            for way, got in times.items():
                total = [u + s for u, s in got]
                row.append(f"{way} median {1000 * statistics.median(total):5.1f} ms (user "
                           f"{1000 * statistics.median(u for u, _ in got):5.1f}, sys "
                           f"{1000 * statistics.median(s for _, s in got):4.1f}), best {1000 * min(total):5.1f}")
            print(f"{kind:7} " + "; ".join(row), flush=True)


if __name__ == "__main__":
    main()
