"""Follow one `Unit` through `nxc.gates.execute.run_unit`, in-process, and say how it walks nxc's modules.

    python bench/unit_walk.py [--cold] [--show N]

A three-module tree is made in a temporary folder (leaf <- mid <- top, top
a gate); its gate runs once untraced (verdicts, records, objects in a
cache of its own), then the leaf's body is edited (a helper importers copy:
its importers' objects change) and the top gate runs again through
run_unit under sys.setprofile. (--cold: the traced run is the first one,
after `warm_up`, as the runner calls it before it forks its workers.) A
module imported on the way (its body run once per process) is not a step.

Every call of a function of nxc/ is attributed to its module (nxc/...py).
Printed:
- modules: the nxc modules the walk visits;
- visits: calls from one nxc module into another (consecutive calls into
  the same module from the same caller module counted once: the walk's
  steps), and returns: the steps into a module the walk had left (not on
  the call stack, visited before);
- upward calls: a call from a module of one stage into a module of an
  earlier stage of docs/architecture.md's stage order (the backend calling
  the checker, say): what "goes down the stages without returning" forbids.
  Calls into the data every stage reads (`DATA`: the checked program's
  tables, the AST, the gate protocol's records, the common modules) are not
  the earlier stage's work and are not counted.

The figures depend on the tree and on what the cache holds; they are for
comparing two versions of nxc side by side on the same scenario (run the
script from each checkout: PYTHONPATH=<checkout>).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from stage_support import stage_of, stage_order  # noqa: E402  (tests/: the layering test's reading)

# A copied helper (straight-line): a body edit changes its importers' C.
LEAF = "func leaf_twice(x: i64) -> i64 { return x * 2 }\n"
MID = ('import "leaf.nx"\n'
       "func mid(x: i64) -> i64 {\n    if x > 100 { return 0 }\n    return leaf_twice(x) + 1\n}\n")
TOP = 'import "mid.nx"\nfunc main() -> i64 {\n    if mid(3) != 7 { return 1 }\n    return 0\n}\n'

# Read by every stage: data, not a stage's work (see the docstring).
def stage_order_of(root: str) -> list[tuple[str, list[str]]]:
    """The stage order of the tree `root` whose nxc is traced (PYTHONPATH may name another)."""
    with open(os.path.join(root, "docs", "architecture.md"), encoding="utf-8") as f:
        return stage_order(f.read())


DATA = {"check/program.py", "check/types.py", "check/externs.py", "syntax/ast.py", "gates/protocol.py",
        "__init__.py", "diagnostics.py", "paths.py", "deep.py", "cache.py", "f32.py"}


# The stages whose work a unit goes through, in the pipeline's order; the
# gate runner and the front doors drive them (they are not counted as steps).
WORK = ("syntax", "incremental", "check", "lower", "backend")
# A call of one of these: a unit's code is being written (interface_text, in
# the same file, is not: the C backend asks it while it plans a link).
EMITTING = {("backend/c/units.py", "emit_module"), ("backend/c/units.py", "emit_whole"),
            ("backend/py/emit.py", "emit_py")}


class Walk:
    """The profile hook: the module of each nxc frame, and the steps between
    modules. One stack for every thread: nxc/deep.py runs work in a thread of
    its own while the caller waits, so its frames continue the caller's."""

    def __init__(self, nxc_dir: str, order):
        self.nxc_dir = nxc_dir + os.sep
        self.order = order
        self.names = [name for name, _ in order]
        self.rel: dict[str, str | None] = {}
        self.stack: list[tuple] = []        # (frame, its nxc module or None)
        self.visited: set[str] = set()
        self.steps = 0
        self.returns = 0
        self.last_step = None
        self.returned_to: Counter = Counter()
        self.from_backend: Counter = Counter()      # checker calls with a backend frame on the stack
        self.after_emitting = 0                     # checker calls once code was being written
        self.emitting = False
        self.stages: list[str] = []                 # the walk over the work stages, collapsed
        self.importing = 0                          # modules being imported, nested

    def module(self, frame) -> str | None:
        path = frame.f_code.co_filename
        rel = self.rel.get(path, "")
        if rel == "":
            rel = self.rel[path] = path[len(self.nxc_dir):] if path.startswith(self.nxc_dir) else None
        return rel

    def stage(self, rel: str) -> str | None:
        k = stage_of(rel, self.order)
        name = None if k is None else self.names[k]
        return name if name in WORK and rel not in DATA else None

    def __call__(self, frame, event, arg):
        if event == "return":
            if self.stack and self.stack[-1][0] is frame:
                if frame.f_code.co_name == "<module>":
                    self.importing -= 1
                self.stack.pop()
            return
        if event != "call":
            return
        if self.importing or frame.f_code.co_name == "<module>":
            # A module being imported (once per process): not a step of the unit.
            self.importing += frame.f_code.co_name == "<module>"
            self.stack.append((frame, None))
            return
        callee = self.module(frame)
        caller = next((m for _, m in reversed(self.stack) if m is not None), None)
        on_stack = {m for _, m in self.stack}
        self.stack.append((frame, callee))
        if callee is None:
            return
        if (callee, frame.f_code.co_name) in EMITTING:
            self.emitting = True
        if callee.startswith("check/") and callee not in DATA:
            if any(m is not None and m.startswith("backend/") for m in on_stack):
                self.from_backend[callee] += 1
            if self.emitting:
                self.after_emitting += 1
        stage = self.stage(callee)
        if stage is not None and (not self.stages or self.stages[-1] != stage):
            self.stages.append(stage)
        if caller is None or callee == caller:
            self.visited.add(callee)
            return
        if (caller, callee) != self.last_step:
            self.steps += 1
            if callee in self.visited and callee not in on_stack:
                self.returns += 1
                self.returned_to[callee] += 1
        self.last_step = (caller, callee)
        self.visited.add(callee)

    def stage_returns(self) -> int:
        """Steps of the stage walk into a stage before the latest one entered."""
        rank = {name: k for k, name in enumerate(WORK)}
        out, top = 0, -1
        for s in self.stages:
            if rank[s] < top:
                out += 1
            top = max(top, rank[s])
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true", help="trace the first run (nothing cached)")
    ap.add_argument("--show", type=int, default=8, help="how many upward calls and returns to list")
    args = ap.parse_args()
    import nxc
    root = os.path.dirname(os.path.dirname(os.path.abspath(nxc.__file__)))
    with tempfile.TemporaryDirectory(prefix="unit-walk-") as tmp:
        os.environ["NXC_CACHE_DIR"] = os.path.join(tmp, "cache")
        for name, text in (("leaf.nx", LEAF), ("mid.nx", MID), ("top.nx", TOP)):
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        from nxc.gates.collect import Item, Unit
        from nxc.gates.execute import Options, run_unit, warm_up
        top = os.path.join(tmp, "top.nx")

        def unit():
            return Unit(top, "top.nx", [Item(id=top, path=top, display="top.nx", backend="c", kind="gate")])
        options = Options(read_results=False, record_results=False)
        if args.cold:
            warm_up()
        else:
            [r] = run_unit(unit(), options)
            assert r.passed, r.report
            with open(os.path.join(tmp, "leaf.nx"), "w", encoding="utf-8") as f:
                f.write(LEAF.replace("x * 2", "x + x"))
        walk = Walk(os.path.join(root, "nxc"), stage_order_of(root))
        threading.setprofile(walk)          # nxc/deep.py's threads
        sys.setprofile(walk)
        try:
            [r] = run_unit(unit(), options)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
        assert r.passed, r.report
    print(f"nxc at {root} ({'cold' if args.cold else 'after a body edit of a copied leaf'}; "
          f"checked bodies: {', '.join(os.path.basename(p) for p in r.checked_bodies)}; "
          f"recompiled: {', '.join(os.path.basename(p) for p in r.recompiled) or '-'})")
    print(f"modules: {len(walk.visited)}; visits: {walk.steps}; returns to a module it had left: {walk.returns}")
    print("  most returned to: " + ", ".join(f"{m} {n}" for m, n in walk.returned_to.most_common(args.show)))
    print(f"checker calls from inside the backend: {sum(walk.from_backend.values())}"
          + "".join(f"\n  {n:6d}  {m}" for m, n in walk.from_backend.most_common(args.show)))
    print(f"checker calls after the first code was written: {walk.after_emitting}")
    print(f"stage walk ({len(walk.stages)} steps, {walk.stage_returns()} back to an earlier stage): "
          + " > ".join(walk.stages[:40]) + (" ..." if len(walk.stages) > 40 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
