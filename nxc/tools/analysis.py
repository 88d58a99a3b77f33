"""The language server's analyses: incremental and bounded in memory.

An editor asks for a check of a document at every pause in typing, and
almost everything the last check found still holds. Kept between checks:
  - file texts by file signature, parsed modules by text, the very AST
    objects (nxc/tools/workspace.py);
  - each module's declarations (nxc/check/reuse.py), taken again where every
    name they resolve is the same symbol;
  - the diagnostics of an imported module's bodies, keyed by the texts of
    its own import closure and the graph's top-level names (everything its
    bodies can see);
so a check of the document checks its own bodies (and those of an imported
module whose key changed), and walks the document only: an imported module
is walked when one of its definitions is asked for (nxc/tools/index.py).

References look at each workspace file through a name index: the file's
names and the definition each refers to, keyed by the texts of its import
graph, at most REFS_MAX files (least recently used dropped first); a file
whose text does not contain the word is not analysed at all.

Not thread-safe: the server runs every analysis on one worker thread.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from nxc.tools.index import GraphIndex, Loc, build_index
from nxc.tools.workspace import LoadedGraph, load_graph, read_text

# Imported modules' body diagnostics kept (a few entries each).
BODIES_MAX = 4096
# Files whose name index is kept (a few KB each).
REFS_MAX = 4096


class Cancelled(Exception):
    """A newer version of the document superseded this analysis."""


@dataclass
class NameIndex:
    """One file's names, as its own import graph resolves them."""
    signature: tuple
    uses: dict[str, list[tuple[Loc, int, Loc]]]     # name -> (where, length, definition)


def closures(loaded: LoadedGraph) -> dict[str, frozenset[str]]:
    """Each module's import closure (itself included), from the loaded graph."""
    edges: dict[str, list[str]] = {}
    for (importer, _line, _col), found in loaded.import_targets.items():
        edges.setdefault(importer, []).append(found)
    out: dict[str, frozenset[str]] = {}
    for start in loaded.parsed:
        seen, todo = {start}, [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        out[start] = frozenset(seen)
    return out


def graph_signature(loaded: LoadedGraph, paths=None) -> tuple:
    """The texts a result over `paths` (default: the whole graph) depends on."""
    paths = loaded.parsed if paths is None else paths
    return tuple(sorted((p, loaded.texts.get(p)) for p in paths))


class Analyzer:
    def __init__(self, include: list[str] | None = None):
        self.include = include or []
        self._bodies: "OrderedDict[tuple, list]" = OrderedDict()
        self._names: "OrderedDict[str, NameIndex]" = OrderedDict()
        self.stats = {"bodies_checked": 0, "bodies_kept": 0}

    def analyse(self, path: str, overlay: dict[str, str], cancelled=None,
                imported_bodies: bool = True, loaded: LoadedGraph | None = None) -> GraphIndex:
        """`path` as the root of its import graph; `cancelled()` is asked
        between the stages (it raises Cancelled). imported_bodies=False:
        the diagnostics of the imported modules' bodies are not wanted
        (a name index), only the root's bodies are checked. `loaded`: the
        graph, loaded already."""
        loaded = loaded if loaded is not None else load_graph(path, overlay, self.include)
        if cancelled is not None and cancelled():
            raise Cancelled
        if not imported_bodies:
            return build_index(path, loaded=loaded, bodies={path}, lazy=True)
        keys: dict[str, tuple] = {}
        kept: dict[str, list] = {}

        def bodies(top_names: list[str]) -> set[str]:
            names = frozenset(top_names)
            todo = {path}
            clos = closures(loaded)
            for p in loaded.parsed:
                if p == path:
                    continue
                keys[p] = (p, graph_signature(loaded, clos[p]), names)
                found = self._bodies.get(keys[p])
                if found is None:
                    todo.add(p)
                else:
                    self._bodies.move_to_end(keys[p])
                    kept[p] = found
            self.stats["bodies_checked"] += len(todo)
            self.stats["bodies_kept"] += len(kept)
            return todo

        gi = build_index(path, loaded=loaded, bodies=bodies, lazy=True)
        result = gi.result
        if result is not None and result.bodies_checked is not None:
            by_module: dict[str, list] = {}
            for d in result.diagnostics:
                if d.pos is not None:
                    by_module.setdefault(d.pos.file.path, []).append(d)
            for p in result.bodies_checked:
                if p != path and p in keys:
                    self._bodies[keys[p]] = by_module.get(p, [])
            while len(self._bodies) > BODIES_MAX:
                self._bodies.popitem(last=False)
            for p, ds in kept.items():
                result.diagnostics.extend(ds)
        return gi

    # ---- references
    def names_of(self, path: str, overlay: dict[str, str]) -> NameIndex:
        """The name index of `path` (as the root of its own graph)."""
        loaded = load_graph(path, overlay, self.include)
        sig = graph_signature(loaded)
        ni = self._names.get(path)
        if ni is not None and ni.signature == sig:
            self._names.move_to_end(path)
            return ni
        gi = self.analyse(path, overlay, imported_bodies=False, loaded=loaded)
        mi = gi.modules.get(gi.root)
        uses: dict[str, list[tuple[Loc, int, Loc]]] = {}
        if mi is not None:
            lines = mi.text.split("\n")
            for o in mi.occurrences:
                if o.target is None or o.kind in ("import", "expr"):
                    continue
                line = lines[o.loc.line - 1] if 0 < o.loc.line <= len(lines) else ""
                name = line[o.loc.col - 1:o.loc.col - 1 + o.length]
                uses.setdefault(name, []).append((o.loc, o.length, o.target))
        ni = NameIndex(sig, uses)
        self._names[path] = ni
        while len(self._names) > REFS_MAX:
            self._names.popitem(last=False)
        return ni

    def uses_in(self, path: str, name: str, target: Loc, overlay: dict[str, str]) -> list[tuple[Loc, int]]:
        """The places in `path` where `name` refers to the definition at `target`."""
        text = read_text(path, overlay)
        if text is None or not re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text):
            return []
        return [(loc, length) for loc, length, t in self.names_of(path, overlay).uses.get(name, ())
                if t == target]
