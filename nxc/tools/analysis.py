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

References (uses_in) look at each workspace file in three steps, each
only when the one before could not answer:
  1. the text: a file that does not contain the word outside its comments
     and strings names it nowhere (no parse);
  2. names only (FAST_REFS): for a top-level definition, the file's import
     graph is loaded (parsed, the parses kept as for checks; a saved
     file's through the front end's parse cache, workspace.parse_tolerant) but not
     checked: where exactly one module of it declares the name, at the
     definition, and the file declares no parameter or local of that name,
     every `Name` spelled so refers to it (nxc/tools/index.py name_uses);
     a local or parameter is only ever named in its own file, a field
     only after a `.` (a file without one before the word does not use it);
  3. the checked name index: the file's names and the definition each
     refers to, keyed by the texts of its import graph, at most REFS_MAX
     files (least recently used dropped first). Taken for the definition's
     own file, a field in a file with a `.` before the word, a file whose
     graph has a syntax error or a missing import, a name declared twice,
     or shadowed by a parameter or local.
Steps 1 and 2 give the answer step 3 would (tests/test_lsp_refs.py compares
them on every bundled module); NXC_LSP_SLOW_REFS=1 turns step 2 off.

Not thread-safe: the server runs every analysis on one worker thread.
"""
from __future__ import annotations

import os
import re
from collections import OrderedDict
from dataclasses import dataclass

from nxc.tools import checked
from nxc.tools.index import GraphIndex, Loc, build_index, name_uses, top_definitions
from nxc.syntax.search import resolve_import
from nxc.tools.workspace import LoadedGraph, load_graph, parse_tolerant, read_text

# Imported modules' body diagnostics kept (a few entries each).
BODIES_MAX = 4096
# Files whose name index is kept (a few KB each).
REFS_MAX = 4096
# Step 2 of references (see above); off only to compare it with step 3.
FAST_REFS = os.environ.get("NXC_LSP_SLOW_REFS", "") in ("", "0")
TOP_KINDS = ("func", "extern", "const", "global", "type", "struct")
# What a comment or a string literal covers (grammar/nx.lark: STRING has
# no escapes); blanked before looking for the word. An unclosed `/*` or `"`
# is left in: the file is then analysed, never wrongly skipped.
_HIDDEN = re.compile(r'"[^"\n]*"|//[^\n]*|/\*[\s\S]*?\*/')


def names_word(text: str, name: str) -> bool:
    """`text` has `name` as a word outside its comments and strings (a
    file without it cannot name the definition)."""
    if name not in text:            # most files: a scan in C, 50 times faster than the regex's
        return False
    word = re.compile(r"\b" + re.escape(name) + r"\b", re.ASCII)   # a name is ASCII word characters
    return word.search(text) is not None and word.search(_HIDDEN.sub(" ", text)) is not None


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

    def uses_in(self, path: str, name: str, target: Loc, overlay: dict[str, str],
                kind: str | None = None) -> list[tuple[Loc, int]]:
        """The places in `path` where `name` refers to the definition at
        `target`; `kind`: the definition's (index.Definition.kind), which
        lets a top-level one take the names-only step."""
        return self.search(name, target, overlay, kind).uses_in(path)

    def search(self, name: str, target: Loc, overlay: dict[str, str], kind: str | None = None) -> "Search":
        """One references request: the files it reads are read once for all
        the workspace files it is asked about (see Search)."""
        return Search(self, name, target, overlay, kind)

    def checked_uses(self, path: str, name: str, target: Loc, overlay: dict[str, str]) -> list[tuple[Loc, int]]:
        """Step 3 (module doc)."""
        self.stats["refs_checked"] = self.stats.get("refs_checked", 0) + 1
        return [(loc, length) for loc, length, t in self.names_of(path, overlay).uses.get(name, ())
                if t == target]


class Search:
    """The uses of one definition, file by file (one references request).

    Each module file the names-only step meets is read, parsed (through
    workspace.parse_tolerant's cache) and its imports resolved once per
    request, not once per workspace file whose graph contains it: a graph
    of 25 modules per file made that a third of the cost. Within a request
    the files are taken as they were when first read; the next request
    reads them again."""

    def __init__(self, analyzer: Analyzer, name: str, target: Loc, overlay: dict[str, str], kind: str | None):
        self.analyzer, self.name, self.target, self.overlay, self.kind = analyzer, name, target, overlay, kind
        # path -> (its AST, the real paths it imports, the definitions of
        # `name` it declares), or None: unreadable, a syntax error or an
        # import not found (then only the checked index is trusted)
        self._modules: dict[str, tuple | None] = {}
        self._real_dirs: dict[str, str] = {}
        self._resolved: dict[tuple[str, str], str | None] = {}

    def uses_in(self, path: str) -> list[tuple[Loc, int]]:
        text = read_text(path, self.overlay)
        if text is None or not names_word(text, self.name):
            return []
        if FAST_REFS and self.kind is not None:
            fast = self.fast_uses(path)
            if fast is not None:
                self.analyzer.stats["refs_fast"] = self.analyzer.stats.get("refs_fast", 0) + 1
                return fast
        return self.analyzer.checked_uses(path, self.name, self.target, self.overlay)

    def fast_uses(self, path: str) -> list[tuple[Loc, int]] | None:
        """Step 2 (module doc): the answer without a check, or None where
        only the checked index can tell."""
        name, target, kind = self.name, self.target, self.kind
        path = os.path.realpath(path)
        if kind in ("local", "param"):
            return [] if path != target.path else None
        if kind == "field":
            # a field is named after a `.` (ast.FieldAccess) or where its
            # struct declares it: a file with no `.` then the word (comments
            # and strings blanked) does not use it; one that has it is checked
            if path == target.path:
                return None
            after_dot = re.compile(r"\.\s*" + re.escape(name) + r"\b", re.ASCII)
            return [] if after_dot.search(_HIDDEN.sub(" ", read_text(path, self.overlay) or "")) is None else None
        if kind not in TOP_KINDS or path == target.path or name == "main" \
                or name in checked.builtin_type_names():
            return None
        # the import closure, as load_graph would walk it
        seen, todo = {path}, [path]
        defs: list[tuple[Loc, str]] = []
        while todo:
            node = self._module(todo.pop())
            if node is None:
                return None
            _module, imports, declared = node
            defs.extend(declared)
            for nxt in imports:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        if not defs:
            return []                   # the name is not the definition's anywhere in this graph
        if len(defs) > 1:
            return None                 # defined twice (or one extern twice): the checker's choice
        if defs[0][0] != target:
            return []                   # another definition of that name is the one in view here
        found, shadowed = name_uses(self._modules[path][0], name, types=defs[0][1] in ("type", "struct"))
        if shadowed:
            return None
        return [(loc, len(name)) for loc in found]

    def _module(self, real: str) -> tuple | None:
        if real in self._modules:
            return self._modules[real]
        node = None
        text = read_text(real, self.overlay)
        pm = parse_tolerant(real, text, saved=real not in self.overlay) if text is not None else None
        if pm is not None and pm.module is not None and not pm.syntax_errors and not pm.blanked:
            imports: list[str] = []
            for imp in pm.module.imports:
                key = (imp.path, os.path.dirname(real))
                if key not in self._resolved:
                    self._resolved[key] = resolve_import(imp.path, key[1], self.analyzer.include,
                                                         self._real_dirs)[0]
                found = self._resolved[key]
                if found is None:
                    imports = None
                    break
                imports.append(found)
            if imports is not None:
                node = (pm.module, imports, top_definitions(pm.module, self.name))
        self._modules[real] = node
        return node
