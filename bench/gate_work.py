"""A worker's front end and link planning per gate, without compiling: the
part of a cold run's per-gate work that follows the gate's import closure.

    python bench/gen_tree.py /tmp/t800 --modules 800 --graph random --seed 1
    NXC_CACHE_DIR=/tmp/c800 nxc test /tmp/t800 -q -j 2      # records, verdicts, parse cache
    NXC_CACHE_DIR=/tmp/c800 python bench/gate_work.py /tmp/t800 --gates 300 [--profile]
    NXC_CACHE_DIR=/tmp/c800 python bench/gate_work.py /tmp/t800 --gates 160 --batch 8

In one process, as a worker of `nxc test` is: it says it ends with its run
(what it reads is kept for the run: nxc/cache.py) and its GC runs with the
worker's settings after its warm-up (nxc.gates.execute.collect_less).
For every k-th module of TREE in name order (`--gates` of them), it runs
`check_gate` and then `final_program` (the backend's questions until it needs
nothing), and prints the mean CPU time of each per gate. Nothing is emitted
or compiled. Run it after a cold `nxc test` of the same tree with the same
NXC_CACHE_DIR, so that every record and verdict is there and the figure is
that of a warm worker. `--profile`: cProfile's top functions (by `--sort`),
taken in the deep thread where the checks run.

`--batch K` measures a design that does not exist yet (docs/performance.md,
twenty-seventh session): K gates checked and planned as one program. The
picked gates, in groups of K, are each run alone as above and then once
through a root module that imports the K of them (written to a temporary
folder, the tree given as its -I search folder), and the CPU of the two is
printed side by side. The batch root checks no gate's own bodies (their
clean verdicts stand for them), which a real batch would check once each;
the top module's bodies cost a tenth of its check (tree_bench's front-end
split), so the ratio is a little better than a real batch would give.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("tree", help="a folder of .nx modules (bench/gen_tree.py), tested once with this cache")
    ap.add_argument("--gates", type=int, default=300, help="how many gates (default 300)")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top functions instead")
    ap.add_argument("--sort", default="tottime", help="cProfile's sort key (default tottime)")
    ap.add_argument("--batch", type=int, default=0, metavar="K",
                    help="also compare K gates alone with the same K checked as one program (see above)")
    args = ap.parse_args(argv)

    from nxc.cache import this_process_ends_with_its_run
    from nxc.check.summary import check_gate
    from nxc.deep import run_deep
    from nxc.diagnostics import Diagnostics
    from nxc.gates.execute import Options, collect_less, final_program

    files = sorted(glob.glob(os.path.join(args.tree, "*.nx")))
    if not files:
        sys.exit(f"gate_work: no .nx files in {args.tree}")
    picked = files[::max(1, len(files) // args.gates)][:args.gates]
    this_process_ends_with_its_run()
    options = Options()

    def one(path: str, include: list[str] | None = None) -> tuple[float, float]:
        t0 = time.process_time()
        found = check_gate(path, include or [], Diagnostics(warnings=True))
        t1 = time.process_time()
        if found is None:
            sys.exit(f"gate_work: {path} cannot be checked as a gate alone (see check_gate)")
        final_program(found, options)
        return t1 - t0, time.process_time() - t1

    for path in picked[:5]:         # the imports every worker makes first
        one(path)
    collect_less()                  # the worker's GC settings, after its warm-up
    if args.profile:
        import cProfile
        import pstats

        def profiled():
            profile = cProfile.Profile()
            profile.enable()
            for path in picked:
                one(path)
            profile.disable()
            return profile
        pstats.Stats(run_deep(profiled)).sort_stats(args.sort).print_stats(40)
        return 0
    front = plan = 0.0
    for path in picked:
        a, b = one(path)
        front, plan = front + a, plan + b
    n = len(picked)
    print(f"{args.tree}: {n} gates, per gate: check_gate {front / n * 1e3:.2f} ms, "
          f"final_program {plan / n * 1e3:.2f} ms; load average {os.getloadavg()[0]:.2f}")
    if args.batch > 1:
        print(batches(picked, args.batch, args.tree, one))
    return 0


def batches(picked: list[str], k: int, tree: str, one) -> str:
    """The --batch line: the CPU of each whole group of k gates run alone
    against that of one root importing them."""
    import tempfile
    groups = [picked[i:i + k] for i in range(0, len(picked) - k + 1, k)]
    if not groups:
        sys.exit(f"gate_work: --batch {k} needs at least {k} gates (--gates)")
    alone = together = 0.0
    with tempfile.TemporaryDirectory(prefix="nxc-gate-batch-") as folder:
        for b, group in enumerate(groups):
            # Each gate once first, not timed: the first check of a module in this process
            # unpickles its AST and declares it afresh, which the root after it then found
            # done (the ratios printed before this were 0.06-0.11 lower for that alone).
            for p in group:
                one(p)
            alone += sum(sum(one(p)) for p in group)
            root = os.path.join(folder, f"batch{b}.nx")
            with open(root, "w", encoding="utf-8") as f:
                f.write("// K gates' modules, checked and planned as one program\n"
                        + "".join(f'import "{os.path.basename(p)}"\n' for p in group))
            together += sum(one(root, [tree]))
    n = len(groups)
    return (f"batches of {k} ({n}): alone {alone / n * 1e3:.1f} ms a batch, as one program "
            f"{together / n * 1e3:.1f} ms ({together / alone:.2f}); load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
