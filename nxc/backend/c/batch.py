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
- its gate record (objects.LinkedC.gate_record: the modules its link takes,
  in link order, which module's main is the gate, the graph's module order),
  computed as a program rooted at the module would compute it: the module
  order is the loader's, a depth-first walk of the imports in source order,
  each module after its imports (nxc/syntax/loader.py, load_program), over
  the same resolved imports (the program graph's imports).

With those, each gate takes the recorded path (nxc/backend/c/recorded.py).
"""
from __future__ import annotations

from nxc.backend.c.names import module_c_id
from nxc.backend.c.objects import LinkedC, ensure_objects, has_gate
from nxc.incremental.records import write_gate_record


def build_batch(linked: LinkedC, roots: list[str], opt: str) -> list[str]:
    """Compile the objects of the modules `roots` (real paths, modules of
    `linked`'s program) that are not in the cache and write each one's gate
    record; the paths of the modules compiled now."""
    units, _, _, _ = linked.plan(opt)
    wanted = set(roots)
    _, compiled, _ = ensure_objects(linked, [u for u in units if u.module.source.path in wanted], opt, True)
    graph = linked.program.graph
    by_path = {m.source.path: m for m in graph.modules}
    linked_paths = {u.module.source.path for u in units}
    config = linked.config()
    for root in roots:
        module = by_path[root]
        order = loader_order(root, graph.imports)
        write_gate_record(linked.key_of(module, config), {
            "units": [p for p in order if p in linked_paths],
            "gate": module_c_id(module) if has_gate(module) else None,
            "modules": order})
    return compiled


def loader_order(root: str, edges: dict[str, list[str]]) -> list[str]:
    """The modules of `root`'s closure in the order load_program(root) lists
    them: depth first from the root, imports in their order, each module
    after its imports, a module met again (or a cycle back) not walked twice."""
    seen = {root}
    order: list[str] = []
    stack = [(root, iter(edges.get(root, ())))]
    while stack:
        path, left = stack[-1]
        for found in left:
            if found not in seen:
                seen.add(found)
                stack.append((found, iter(edges.get(found, ()))))
                break
        else:
            order.append(path)
            stack.pop()
    return order
