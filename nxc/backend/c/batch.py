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

The gates of the batch that run next (the others run in the runner's second
round, from an importer's library: docs/runner.md, "One link for many
gates") mostly share their closures. Linked one gate at a time, the
1,600-module bench tree's batches gave the linker 59,454 objects for 453
gates; the union of each batch's closures is 7,491. So one library is
linked for all of them (`link_together`), and each gate finds it as it
finds an importer's library (nxc/backend/c/hosts.py): its result is still
keyed on its own link key, and what that assumes is the same (docs/runner.md,
"What the result cache assumes here").
"""
from __future__ import annotations

from nxc.backend.base import BatchBuilt
from nxc.backend.c.objects import MAX_LINKED, LinkedC, binding_of, ensure_objects, usable_object
from nxc.backend.c.recorded import link_shared
from nxc.incremental.records import write_gate_record


def build_batch(linked: LinkedC, roots: list[str], opt: str, run_next: list[str] = ()) -> BatchBuilt:
    """Compile the objects of the modules `roots` (real paths, modules of
    `linked`'s program) that are not in the cache, write each one's gate
    record, and link one library for the gates of `run_next` (link_together)."""
    units, _, _, _ = linked.plan(opt)
    wanted = set(roots)
    _, compiled, _ = ensure_objects(linked, [u for u in units if u.module.source.path in wanted], opt, True)
    by_path = {m.source.path: m for m in linked.program.graph.modules}
    for root in roots:
        write_gate_record(*linked.gate_record(by_path[root]))
    shared, why = link_together(linked, list(run_next), opt)
    return BatchBuilt(compiled, shared, why)


def link_together(linked: LinkedC, roots: list[str], opt: str) -> tuple[str | None, str]:
    """(the link key of one library holding the objects of every module of the
    import closures of `roots`, in the program's link order, with no gate of
    its own, and ""), or (None, why there is none; "" when fewer than two
    gates would share it). It is noted in the hosts' index for each gate to
    find; nothing is compiled for it: an object that is not in the cache
    (another worker is compiling it) means no shared library, and each gate
    links its own."""
    if len(roots) < 2:
        return None, ""
    units, _, runtime_key, _ = linked.plan(opt)
    by_path = {m.source.path: m for m in linked.program.graph.modules}
    wanted = set()
    for root in roots:
        wanted.update(m.source.path for m in linked.closure_of(by_path[root]))
    mine = [u for u in units if u.module.source.path in wanted]
    if len(mine) > MAX_LINKED:
        return None, f"their closures have {len(mine)} modules with objects, more than a library links"
    paths = [u.module.source.path for u in mine]
    keys = [u.key for u in mine]

    def objects_of():
        found = [usable_object(k) for k in keys]
        return found if None not in found else f"the object of {paths[found.index(None)]} is not in the cache yet"
    return link_shared(keys, objects_of, binding_of(paths, None), runtime_key, linked.checked, opt)
