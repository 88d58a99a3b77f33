"""Where a cold gate's C build goes: the first N gates of a tree built one
after the other in this process (fresh cache folder), each compiler process
timed by kind (CPU time: user + system of the process and its children,
and each apart).

    python bench/gen_tree.py /tmp/t200 --modules 200 --graph random --seed 1
    python bench/gate_build_profile.py /tmp/t200 --gates 40

Kinds: `module` (a module's own object, its gate included: the
yardstick's share), `entry` (builds before issue 21's last step only: the
gate's own C file with the root's main and the site bases; now there is
none, the site bases and the root's main are bound at load time), `link`, `pch` (the precompiled runtime header, once per configuration),
`runtime` (nx_runtime.c, once per configuration). The last line is the
Python side of the build (planning, emitting, the cache), without the front
end. Gates run serially, so the figures are per compiler process, not what
`nxc test -j 2` takes in wall time; compare them between builds of nxc.
"""
from __future__ import annotations

import argparse
import collections
import os
import resource
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cpu(usage) -> float:
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("tree", help="a folder of .nx modules (bench/gen_tree.py)")
    ap.add_argument("--gates", type=int, default=40, help="how many gates, in name order (default 40)")
    ap.add_argument("--unchecked", action="store_true", help="unchecked builds (default: checked)")
    args = ap.parse_args()
    names = sorted(n for n in os.listdir(args.tree) if n.endswith(".nx"))[:args.gates]
    if not names:
        ap.error(f"no .nx modules in {args.tree}")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NXC_CACHE_DIR"] = cache
        from nxc.backend.c import objects
        from nxc.backend.registry import backend_for
        from nxc.check.frontend import check_file
        from nxc.diagnostics import Diagnostics
        kinds: dict[str, list] = collections.defaultdict(lambda: [0, 0.0, 0.0])     # count, user, system
        real = objects._run_compiler

        def timed(cmd, direct=None):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            real(cmd, direct)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if "c-header" in cmd:
                kind = "pch"
            elif "-c" in cmd:
                source = os.path.basename(cmd[cmd.index("-c") + 1])
                kind = "runtime" if source == "nx_runtime.c" else "entry" if source.startswith("en-") else "module"
            else:
                kind = "link"
            kinds[kind][0] += 1
            kinds[kind][1] += after.ru_utime - before.ru_utime
            kinds[kind][2] += after.ru_stime - before.ru_stime
        objects._run_compiler = timed
        python = 0.0
        for name in names:
            program = check_file(os.path.join(args.tree, name), diags=Diagnostics())
            before = resource.getrusage(resource.RUSAGE_SELF)
            backend_for("c", checked=not args.unchecked).prepare(program, purpose="gate", load=False)
            python += _cpu(resource.getrusage(resource.RUSAGE_SELF)) - _cpu(before)
    total = 0.0
    for kind, (count, user, system) in sorted(kinds.items()):
        spent = user + system
        total += spent
        print(f"{kind:8} {count:4} x {1000 * spent / count:6.1f} ms = {spent:6.2f} s "
              f"(user {1000 * user / count:5.1f} ms, system {1000 * system / count:5.1f} ms)")
    print(f"compiler processes {total:.2f} s, {1000 * total / len(names):.1f} ms per gate")
    print(f"python of the build (plan, emit, cache) {python:.2f} s, {1000 * python / len(names):.1f} ms per gate")


if __name__ == "__main__":
    main()
