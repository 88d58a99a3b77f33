"""C backend: what several gates need to be linked from records, built from one program.

A worker of `nxc test` may check several gates' modules as one program
(nxc/gates/batch.py: a root that imports them, checked and planned once, so
that the closure their gates share is declared and planned once instead of
once per gate). From that program's emitted code (a LinkedC whose root is
that import-only root) this builds, for each gate's module:

- its object, exactly the object a check of the gate alone would compile:
  an object's C depends on its module, the interfaces of its import closure
  and the build configuration only (its key says so, objects.py), never on
  the root of the program it was emitted from; tests/test_batch.py compares
  the bytes;
- its gate record (objects.LinkedC.gate_record, for that module), as a
  program rooted at the module makes it: its modules in the order of its
  import closure, which is the loader's order (tests/test_batch.py).

With those, each gate takes the recorded path (nxc/backend/c/recorded.py).
"""
from __future__ import annotations

from nxc.backend.c.objects import LinkedC, ensure_objects
from nxc.incremental.records import write_gate_record


def build_batch(linked: LinkedC, roots: list[str], opt: str) -> list[str]:
    """Compile the objects of the modules `roots` (real paths, modules of
    `linked`'s program) that are not in the cache and write each one's gate
    record; the paths of the modules compiled now."""
    units, _, _, _ = linked.plan(opt)
    wanted = set(roots)
    _, compiled, _ = ensure_objects(linked, [u for u in units if u.module.source.path in wanted], opt, True)
    by_path = {m.source.path: m for m in linked.program.graph.modules}
    for root in roots:
        write_gate_record(*linked.gate_record(by_path[root]))
    return compiled
