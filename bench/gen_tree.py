"""Synthetic trees of .nx modules, for measuring nxc on a whole code base.

    python bench/gen_tree.py OUT --modules 200 --graph random --seed 1
    python bench/gen_tree.py OUT --modules 800 --graph clustered
    python bench/gen_tree.py --edit body OUT/t0000.nx        # a body edit
    python bench/gen_tree.py --edit interface OUT/t0000.nx   # an interface edit

Each module is in the style of nx_src/: a header, consts, a struct used
through a pointer from sys_mmap, integer and float32 loops, 80-200 lines,
and a gate. It imports 1-4 earlier modules of the tree (random graph: any
earlier module; clustered: earlier modules of its own group of 25) plus the
bundled nx_f32.nx and nx_syscalls.nx, and calls a function of each.

The gate's expected values are computed here, independently of nxc: the
integer steps in Python integers (every value stays small and non-negative,
so no width question arises) and the float32 steps with numpy float32
arithmetic (IEEE round to nearest even; inputs are kept in [1, 2) and sums
short, so no NaN or infinity can occur). A gate therefore passes exactly
when nxc compiled the module right.

Edits, for incremental-build measurements, keep every gate passing:
- body: a statement that changes nothing (`acc.count = acc.count + 0`) is
  added to the module's value function; its interface is unchanged;
- interface: a new exported const is added; importers must be re-checked.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys

import numpy as np

GROUP = 25          # clustered graphs: imports stay within groups of this size
MASK = 0xFFFFFF


def f32(bits: int) -> np.float32:
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def bits(x: np.float32) -> int:
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f32_add(a: int, b: int) -> int:
    return bits(np.float32(f32(a) + f32(b)))


def f32_mul(a: int, b: int) -> int:
    return bits(np.float32(f32(a) * f32(b)))


class Spec:
    """One module's parameters; `mix`, `poly` and `value` model its functions."""

    def __init__(self, index: int, rng: random.Random, deps: list["Spec"]):
        self.index = index
        self.name = f"t{index:04d}"
        self.n = rng.randint(5, 30)
        self.mul = rng.choice([3, 5, 7, 11, 13, 17, 31, 37, 41])
        self.shift = rng.randint(1, 9)
        # a float32 scale in [1, 1.25): bits 0x3F800000 | mantissa below 2^21
        self.scale = 0x3F800000 | rng.randrange(0, 1 << 21)
        self.deps = deps
        self.extras = []        # (mul, add, count) of each padding function
        self.target_lines = rng.randint(80, 200)

    def mix(self, a: int, b: int) -> int:
        x = (a * self.mul + b) & MASK
        return x ^ (x >> self.shift)

    def poly(self, x: int) -> int:
        t = f32_mul(x, self.scale)
        return f32_mul(f32_add(t, 0x3F000000), x)        # (x * scale + 0.5) * x

    def extra(self, j: int, a: int) -> int:
        mul, add, count = self.extras[j]
        v = a
        for i in range(count):
            v = (v * mul + add + i) & MASK
        return v

    def value(self, seed: int) -> int:
        isum, fsum = seed, 0
        for i in range(self.n):
            isum = self.mix(isum + seed, i)
            fsum = f32_add(fsum, self.poly(0x3F800000 | (isum & 0x7FFFFF)))
        r = isum ^ fsum
        for j in range(len(self.extras)):
            r = self.extra(j, r & MASK)
        for d in self.deps:
            r = (r + d.mix(r & 0xFFFF, 3)) & 0xFFFFFFF
            r = r ^ d.poly(0x3F800000 | (r & 0x7FFFFF))
        return r


def render(spec: Spec, total: int, seed: int, graph: str) -> str:
    p = spec.name.upper()
    f = spec.name
    out = [f"// {f}.nx -- synthetic module {spec.index} of {total} (bench/gen_tree.py, {graph} graph, seed {seed}).",
           "//",
           "// Consts, a struct used through a pointer, integer and float32 loops, and a gate",
           "// whose expected values the generator computed without nxc.",
           "//",
           "// license_tier: ORIGINAL",
           "",
           'import "nx_f32.nx"',
           'import "nx_syscalls.nx"']
    out += [f'import "{d.name}.nx"' for d in spec.deps]
    out += ["",
            f"const {p}_N: i64 = {spec.n}",
            f"const {p}_MUL: i64 = {spec.mul}",
            f"const {p}_SHIFT: i64 = {spec.shift}",
            f"const {p}_SCALE: i64 = 0x{spec.scale:08X}",
            f"const {p}_MASK: i64 = 0x{MASK:X}",
            f"const {p}_OK: i64 = 0",
            "",
            f"struct {f.capitalize()}Acc {{",
            "    isum: i64,",
            "    fsum: i64,",
            "    count: i64",
            "}",
            "",
            "// integer mixing step: small, non-negative results",
            f"func {f}_mix(a: i64, b: i64) -> i64 {{",
            f"    var x: i64 = (a * {p}_MUL + b) & {p}_MASK",
            f"    x = x ^ (x >> {p}_SHIFT)",
            "    return x",
            "}",
            "",
            "// float32 step on x in [1, 2): (x * scale + 0.5) * x",
            f"func {f}_poly(x: i64) -> i64 {{",
            f"    let t: i64 = nx_f32_mul(x, {p}_SCALE)",
            "    return nx_f32_mul(nx_f32_add(t, NX_F32_HALF), x)",
            "}",
            "",
            f"func {f}_fill(acc: *{f.capitalize()}Acc, seed: i64) {{",
            "    var i: i64 = 0",
            f"    while i < {p}_N {{",
            f"        acc.isum = {f}_mix(acc.isum + seed, i)",
            "        let x: i64 = 0x3F800000 | (acc.isum & 0x7FFFFF)",
            f"        acc.fsum = nx_f32_add(acc.fsum, {f}_poly(x))",
            "        acc.count = acc.count + 1",
            "        i = i + 1",
            "    }",
            "}",
            ""]
    return out


def finish(spec: Spec, head: list[str], rng: random.Random) -> str:
    f, p = spec.name, spec.name.upper()
    tail_fixed = 30 + 3 * len(spec.deps)
    # padding functions until the module reaches its target length
    while len(head) + tail_fixed + 12 * (len(spec.extras) + 1) <= spec.target_lines:
        spec.extras.append((rng.choice([3, 5, 9, 17, 33]), rng.randrange(1, 1000), rng.randint(2, 12)))
    for j, (mul, add, count) in enumerate(spec.extras):
        head += [f"// padding function {j}: an integer recurrence",
                 f"func {f}_extra{j}(a: i64) -> i64 {{",
                 "    var v: i64 = a",
                 "    var i: i64 = 0",
                 f"    while i < {count} {{",
                 f"        v = (v * {mul} + {add} + i) & {p}_MASK",
                 "        i = i + 1",
                 "    }",
                 "    return v",
                 "}",
                 ""]
    head += [f"func {f}_value(seed: i64) -> i64 {{",
             f"    let acc: *{f.capitalize()}Acc = sys_mmap(24) as *{f.capitalize()}Acc",
             "    acc.isum = seed",
             "    acc.fsum = 0",
             "    acc.count = 0",
             f"    {f}_fill(acc, seed)",
             "    var r: i64 = acc.isum ^ acc.fsum"]
    head += [f"    r = {f}_extra{j}(r & {p}_MASK)" for j in range(len(spec.extras))]
    for d in spec.deps:
        head += [f"    r = (r + {d.name}_mix(r & 0xFFFF, 3)) & 0xFFFFFFF",
                 f"    r = r ^ {d.name}_poly(0x3F800000 | (r & 0x7FFFFF))"]
    head += ["    sys_munmap(acc as *void, 24)",
             "    return r",
             "}",
             "",
             "// ===== Self-test (inline gate) ====================================",
             "func main() -> i64 {"]
    checks = [(f"{f}_value(1)", spec.value(1)), (f"{f}_value(77)", spec.value(77)),
              (f"{f}_mix(5, 9)", spec.mix(5, 9)), (f"{f}_poly(0x3FC00000)", spec.poly(0x3FC00000))]
    for k, (call, want) in enumerate(checks):
        head.append(f"    if {call} != 0x{want:X} {{ return {10 + k} }}")
    head += [f"    return {p}_OK", "}", ""]
    return "\n".join(head)


def pick_deps(index: int, graph: str, rng: random.Random) -> list[int]:
    if graph == "clustered":
        first = index - index % GROUP
        pool = list(range(first, index))
    else:
        pool = list(range(index))
    if not pool:
        return []
    return sorted(rng.sample(pool, min(len(pool), rng.randint(1, 4))))


def generate(out: str, modules: int, graph: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    specs: list[Spec] = []
    paths = []
    for i in range(modules):
        spec = Spec(i, rng, [specs[d] for d in pick_deps(i, graph, rng)])
        specs.append(spec)
        text = finish(spec, render(spec, modules, seed, graph), rng)
        path = os.path.join(out, spec.name + ".nx")
        with open(path, "w") as fh:
            fh.write(text)
        paths.append(path)
    return paths


def edit(path: str, kind: str) -> None:
    with open(path) as fh:
        text = fh.read()
    name = os.path.basename(path)[:-3]
    n = len(re.findall(r"EDIT_", text))
    if kind == "body":
        # a no-op statement inside the value function: same interface, new code
        text = text.replace("    sys_munmap(acc as *void, 24)\n",
                            "    acc.count = acc.count + 0\n    sys_munmap(acc as *void, 24)\n", 1)
        text = text.replace("// ===== Self-test", f"// EDIT_{n}: body\n// ===== Self-test", 1)
    else:
        text = text.replace("\nstruct ", f"\nconst {name.upper()}_EDIT_{n}: i64 = {n}\n\nstruct ", 1)
    with open(path, "w") as fh:
        fh.write(text)


def closure_sizes(out: str) -> list[int]:
    """Each module's import closure within the tree (itself included)."""
    deps = {}
    for fname in sorted(os.listdir(out)):
        if fname.endswith(".nx"):
            with open(os.path.join(out, fname)) as fh:
                deps[fname] = re.findall(r'^import "(t\d+\.nx)"', fh.read(), re.M)
    sizes = []
    for m in deps:
        seen, todo = set(), [m]
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo += deps[x]
        sizes.append(len(seen))
    return sizes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="folder to write (or, with --edit, the module to edit)")
    ap.add_argument("--modules", type=int, default=50)
    ap.add_argument("--graph", choices=("random", "clustered"), default="random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--edit", choices=("body", "interface"))
    args = ap.parse_args(argv)
    if args.edit:
        edit(args.out, args.edit)
        return 0
    if args.modules < 1:
        ap.error("--modules must be at least 1")
    paths = generate(args.out, args.modules, args.graph, args.seed)
    lines = sum(open(p).read().count("\n") for p in paths)
    sizes = closure_sizes(args.out)
    print(f"{len(paths)} modules, {lines} lines, mean import closure {sum(sizes) / len(sizes):.1f} "
          f"(tree modules only), in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
