"""What a gate's child process costs: fork from a worker-sized Python process,
the child's run (its page faults), its exit.

    python bench/gen_tree.py /tmp/t200 --modules 200 --graph random --seed 1
    python bench/gate_child_profile.py /tmp/t200 --gates 40 --runs 200

The first GATES modules of the tree are checked and built in this process
(as a worker of `nxc test` does, so its heap is a worker's size), then their
gates are run RUNS times in all, round robin, each through
nxc.gates.run (run_isolated: fork, capture, the shared stack page). Printed
per run: CPU of this process (user, system: the fork is system time of the
parent), CPU of the children (user, system: their page faults and exit),
their minor page faults, and the parent's resident size. Compare builds of
nxc in one session (PYTHONPATH=... for the other build).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("tree", help="a folder of .nx modules (bench/gen_tree.py)")
    ap.add_argument("--gates", type=int, default=40, help="how many gates, in name order (default 40)")
    ap.add_argument("--ballast", type=int, default=0,
                    help="MB of extra small Python objects held by the worker (a bigger tree's worker heap)")
    ap.add_argument("--runs", type=int, default=200, help="gate runs in all (default 200)")
    args = ap.parse_args()
    names = sorted(n for n in os.listdir(args.tree) if n.endswith(".nx"))[:args.gates]
    if not names:
        ap.error(f"no .nx modules in {args.tree}")
    with tempfile.TemporaryDirectory() as cache:
        os.environ.setdefault("NXC_CACHE_DIR", cache)
        from nxc.backend.registry import backend_for
        from nxc.check.frontend import check_file
        from nxc.deep import deep
        from nxc.diagnostics import Diagnostics
        import nxc.gates.isolate as isolate
        print(f"nxc from {os.path.dirname(os.path.dirname(os.path.dirname(isolate.__file__)))}")

        def run_gate(loaded, timeout):
            # what nxc.gates.run.run_gate does around the child, the build aside
            loaded.share_stack()
            ended = isolate.run_isolated(loaded.run_gate, timeout, capture=True, memory_limit=None,
                                         interrupt=loaded.interrupt_on_timeout)
            loaded.stack_after_death()
            return ended
        loaded = []
        for name in names:
            program = deep(check_file)(os.path.join(args.tree, name), diags=Diagnostics())
            loaded.append(backend_for("c", checked=True).prepare(program, purpose="gate").loaded)
        ballast = [{"k": [k, str(k)]} for k in range(args.ballast * 2500)]     # about 400 B each
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        for lo in loaded[:2]:                   # warm: first runs page in the libraries
            run_gate(lo, timeout=60)
        self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        for k in range(args.runs):
            result = run_gate(loaded[k % len(loaded)], timeout=60)
            if result.kind != "ok" or getattr(result.value, "value", None) != 0:
                sys.exit(f"gate {names[k % len(loaded)]} did not pass: {result}")
        self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    del ballast
    n = args.runs
    ms = lambda a, b: 1000 * (a - b) / n      # noqa: E731
    print(f"worker peak RSS {rss:.0f} MB; per gate run: parent user {ms(self1.ru_utime, self0.ru_utime):.2f} ms "
          f"sys {ms(self1.ru_stime, self0.ru_stime):.2f} ms; child user {ms(kids1.ru_utime, kids0.ru_utime):.2f} ms "
          f"sys {ms(kids1.ru_stime, kids0.ru_stime):.2f} ms, "
          f"{(kids1.ru_minflt - kids0.ru_minflt) / n:.0f} minor faults")


if __name__ == "__main__":
    main()
