"""Lines of C nxc emits per module object (what `nxc test` compiles), over a tree.

    python bench/gen_tree.py /tmp/tree --modules 200 --graph random --seed 1
    python bench/c_lines.py /tmp/tree [--unchecked] [--out DIR]

Each module of the tree (and the bundled modules it imports) is emitted once,
as its own object's C (`nxc emit-c --object`: nxc.cli.module_object_c, as a
gate's worker writes it); prints the
total, the largest unit, and the .nx lines beside them. No compiler is run:
the figure is the C a cold build hands to cc1, which bounds its CPU.
`--out DIR` also writes each module's C there, as m00000.c, m00001.c, ...
(bench/tree_bench.py's yardstick compiles those).
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from nxc.cli import module_object_c  # noqa: E402
from nxc.syntax.loader import load_program  # noqa: E402


def tree_objects(tree: str, checked: bool = True):
    """(real path, its object's C) of each module of `tree` and of the bundled
    modules they import, each once, as `nxc emit-c --object` writes it
    (also bench/tree_bench.py's yardstick)."""
    done: set[str] = set()
    for name in sorted(os.listdir(tree)):
        if not name.endswith(".nx"):
            continue
        for module in load_program(os.path.join(tree, name)).modules:
            p = module.source.path
            if p not in done:
                done.add(p)
                yield p, module_object_c(p, [], checked=checked)[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", help="a folder of .nx modules (bench/gen_tree.py)")
    ap.add_argument("--unchecked", action="store_true", help="the unchecked C (default: checked, as nxc test)")
    ap.add_argument("--out", help="also write each module's C into this folder (m00000.c, ...)")
    args = ap.parse_args()
    sys.setrecursionlimit(100000)
    done: dict[str, int] = {}
    nx_lines = 0
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for p, text in tree_objects(args.tree, checked=not args.unchecked):
        if args.out:
            with open(os.path.join(args.out, f"m{len(done):05d}.c"), "w", encoding="utf-8") as f:
                f.write(text)
        done[p] = text.count("\n")
        with open(p, encoding="utf-8") as f:
            nx_lines += sum(1 for _ in f)
    big = max(done, key=done.get)
    print(f"{len(done)} modules, {nx_lines} lines of .nx -> {sum(done.values())} lines of C "
          f"(largest: {os.path.basename(big)}, {done[big]} lines); load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
