"""A gate worker's own CPU per gate (issue 21): `run_unit` on a glob of gates
in this one process, as a worker of `nxc test` runs them (result cache off,
so every gate is checked, planned, built or taken from the build cache, and
run), with the CPU time of this process (user, system) and of its children
(compilers, linker, the gates) per gate.

    NXC_CACHE_DIR=/tmp/c python bench/gate_worker_cpu.py "/tmp/t800/t07[6-9]*.nx"
    NXC_CACHE_DIR=/tmp/c python bench/gate_worker_cpu.py "/tmp/t800/t07[6-9]*.nx" tottime   # and a profile

A fresh NXC_CACHE_DIR gives the cold figure, the same command again the
warm one, and after `python bench/gen_tree.py --edit body /tmp/t800/t0000.nx`
the relink. `@FILE` instead of the glob: the gates listed in FILE. The second argument prints a cProfile (sorted by it) of the
gates, run inside one nxc.deep thread so the profile sees everything (an argument
ending in .prof writes the profile to that file instead); a third
(`walk`, say) also prints the callers of the functions whose names match it. The
cache bounds are those of `nxc test` over the 800-module tree
(cache.expect_entries). CPU of this process only: compare runs made with the
same load, or interleave them.
"""
from __future__ import annotations

import cProfile
import glob
import pstats
import resource
import sys
import time

from nxc.cache import expect_entries, this_process_ends_with_its_run
from nxc.deep import deep
from nxc.gates import host as gate_host
from nxc.gates.collect import Item, Unit
from nxc.gates.execute import Options, run_unit, warm_up


def gate_units(arg: str) -> list[Unit]:
    """The C gates `arg` names (a glob, or @FILE: those listed in FILE, one path
    a line), as units of `nxc test` (also bench/gate_sys_profile.py's)."""
    if arg.startswith("@"):
        with open(arg[1:], encoding="utf-8") as f:
            files = [line.strip() for line in f if line.strip()]
    else:
        files = sorted(glob.glob(arg))
    if not files:
        sys.exit(f"no gates match {arg!r}")
    return [Unit(f, f, [Item(id=f, path=f, display=f, backend="c", kind="gate")]) for f in files]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    units = gate_units(sys.argv[1])
    expect_entries(800)             # as `nxc test` over the 800-module tree
    opts = Options(read_results=False, record_results=False)
    warm_up()
    # as a worker of `nxc test -j N` (nxc/gates/pool.py): the gates run from a
    # gate host, and what the process reads stands for the run
    gate_host.enable()
    this_process_ends_with_its_run()
    profile = cProfile.Profile() if len(sys.argv) > 2 else None
    t0 = time.perf_counter()
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)

    @deep
    def run_all():
        if profile is not None:
            profile.enable()
        for u in units:
            res = run_unit(u, opts)
            if not res[0].passed:
                sys.exit(f"{u.path}: {res[0].status} {res[0].message}")
        if profile is not None:
            profile.disable()
    run_all()
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    n = len(units)
    ms = lambda a, b: (b - a) / n * 1000      # noqa: E731
    print(f"{n} gates: wall {ms(t0, time.perf_counter()):.1f} ms/gate; "
          f"self user {ms(r0.ru_utime, r1.ru_utime):.1f} sys {ms(r0.ru_stime, r1.ru_stime):.1f}; "
          f"children user {ms(c0.ru_utime, c1.ru_utime):.1f} sys {ms(c0.ru_stime, c1.ru_stime):.1f} ms/gate")
    if profile is not None:
        if sys.argv[2].endswith(".prof"):       # for pstats or snakeviz later
            profile.dump_stats(sys.argv[2])
            return
        stats = pstats.Stats(profile).sort_stats(sys.argv[2])
        stats.print_stats(35)
        if len(sys.argv) > 3:
            stats.print_callers(sys.argv[3])


if __name__ == "__main__":
    main()
