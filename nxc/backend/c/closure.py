"""C backend, separate compilation: a module's own import closure.

A module's object must be the same whichever gate links it, so everything
its C text holds besides its own code (structs, extern globals, the
interfaces its key covers) comes from its own import closure, in an order
fixed by the module alone: depth first from the module, each module after
its imports, imports in the order the module lists them. (The graph's
`modules` order is the root's, which differs between gates.)
"""
from __future__ import annotations

import os
from operator import attrgetter

from nxc.check.program import SOFT_F32_MODULE, Program
from nxc.syntax import ast
from nxc.cache import ends_with_its_run
from nxc.orders import merged_orders


# A module's identity in an order: its real path.
_PATH = attrgetter("source.path")


def _imports_of(graph, module: ast.Module, by_path: dict) -> list[ast.Module]:
    """The modules `module` imports, as the loader resolved them."""
    edges = getattr(graph, "imports", None) or {}
    paths = edges.get(module.source.path)
    if paths is not None:
        return [by_path[p] for p in paths if p in by_path]
    # A graph built without its edges (nxc.tools' stub graphs): resolve each
    # import as the loader does, the importer's folder first, then any module
    # of the graph that the name ends.
    out = []
    for imp in module.imports:
        here = os.path.realpath(os.path.join(os.path.dirname(module.source.path), imp.path))
        found = by_path.get(here)
        if found is None:
            tail = os.sep + os.path.normpath(imp.path)
            found = next((m for m in graph.modules if m.source.path.endswith(tail)), None)
        if found is not None and found not in out:
            out.append(found)
    return out


def import_closure(program: Program, module: ast.Module) -> list[ast.Module]:
    """`module` and every module it imports, directly or not, dependencies
    first, the module last; under --soft-f32 the module of the float32
    primitives too (calls are redirected there without an import)."""
    return list(_closures_of(program.graph).get(module))


class _Closures:
    """Every module's import closure of one graph, each computed once: a gate
    asks for the closure of every module of its own (~100 calls per gate), and
    one depth-first walk each was a quarter of the worker's front-end time."""

    def __init__(self, graph):
        self.graph = graph
        self.by_path = {m.source.path: m for m in graph.modules}
        self.raw: dict[str, list[ast.Module]] = {}
        # --soft-f32 redirects float32 primitive calls to nx_f32_soft.nx without an
        # import; whenever that module is in the graph it counts as imported
        # (conservative: a module that does not call it only declares more).
        self.soft = next((m for m in graph.modules if os.path.basename(m.source.path) == SOFT_F32_MODULE), None)
        self.done: dict[str, list[ast.Module]] = {}
        kept = _RUN_ORDERS if ends_with_its_run() else None
        for m in graph.modules:             # dependencies first (the loader's order)
            held = kept.get(id(m)) if kept is not None else None
            if held is not None and held[0] is m:
                self.raw[m.source.path] = held[1]
                continue
            order = self.raw[m.source.path] = self._merged(m) or self._walk(m)
            if kept is not None:
                kept[id(m)] = (m, order)

    def get(self, module: ast.Module) -> list[ast.Module]:
        p = module.source.path
        found = self.done.get(p)
        if found is None:
            order = self.raw.get(p) if self.by_path.get(p) is module else None
            if order is None:               # not a module of this graph's list: walk it
                order = self._walk(module)
            if self.soft is not None and all(m is not self.soft for m in order):
                order = [self.soft, *order]
            found = self.done[p] = order
        return found

    def _merged(self, module: ast.Module) -> list[ast.Module] | None:
        """The depth-first order from `module`, from its imports' orders: once the
        walk is done with an import, everything that import reaches is seen, so
        the next import adds exactly its own order's modules not seen yet. None
        when an import's order is not known yet or reaches `module` (a cycle:
        the walk then differs, see `_walk`)."""
        subs = [self.raw.get(dep.source.path) for dep in _imports_of(self.graph, module, self.by_path)]
        if None in subs:
            return None
        order = merged_orders(subs, key=_PATH)
        if any(m.source.path == module.source.path for m in order):
            return None
        return order + [module]

    def _walk(self, module: ast.Module) -> list[ast.Module]:
        """Depth first from `module`, each module after its imports."""
        graph, by_path = self.graph, self.by_path
        order: list[ast.Module] = []
        seen: set[str] = {module.source.path}
        stack = [(module, iter(_imports_of(graph, module, by_path)))]
        while stack:
            m, pending = stack[-1]
            for dep in pending:
                if dep.source.path not in seen:
                    seen.add(dep.source.path)
                    stack.append((dep, iter(_imports_of(graph, dep, by_path))))
                    break
            else:
                order.append(m)
                stack.pop()
        return order


# In a process that ends with its run (nxc/cache.py), the loader gives a
# module the same AST object and the same resolved imports in every graph: its closure is then the same in every gate's
# graph, and is kept by that object (a worker of a 1,600-module tree merged
# ~150 closures a gate). The module is held with it, so its id stays its own.
_RUN_ORDERS: dict[int, tuple] = {}


def _closures_of(graph) -> _Closures:
    """The graph's closures, kept with it (rebuilt if its module list changed:
    --soft-f32 adds a module after loading)."""
    memo = getattr(graph, "closures", None)
    shape = (len(graph.modules), id(graph.modules[0]) if graph.modules else 0)
    if not isinstance(memo, _Closures) or memo.shape != shape:
        memo = _Closures(graph)
        memo.shape = shape
        try:
            graph.closures = memo
        except AttributeError:              # a graph that takes no attribute: computed per call
            pass
    return memo
