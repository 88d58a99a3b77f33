"""Which module on the search path defines a name.

An undefined name that a module on the search path defines exactly (a
bundled `nx_f32_div` without `import "nx_f32_div.nx"`) is a missing import,
not a typo: the checker says which module and what import to add
(`missing_import`), and `nxc info --where NAME` lists every definition
(`definitions_of`).

The search path is the one an import of the module would take
(nxc/syntax/loader.py): the importing module's folder, each -I folder, each
NXPATH folder, the bundled nx_src/; the modules are the `.nx` files directly
in those folders (an import by file name). What each module defines is kept
in the module index (nxc/incremental/index.py) as its entry's "defines", so it goes with
the digest of the text it was read from: an edited file's entry is replaced
(found by its stat), and the names are read again from its AST; a warm
look is a stat per module. In a process the answer is also kept per stat
signature, except for a file changed within nxc.incremental.keys.RACY_NS of the look
(a second edit in the same timestamp tick could keep the signature).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from nxc.diagnostics import CompileError, Diagnostics, Pos, SourceFile, display_path
from nxc.syntax import ast
from nxc.syntax.loader import parse_cached, read_source
from nxc.syntax.search import search_path


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str               # func | extern | struct | type | const | global
    import_name: str        # what `import "..."` names it with, from the importing folder
    path: str               # the module file
    line: int
    col: int
    detail: str             # `func nx_f32_div(a: i64, b: i64) -> i64`, `struct NxWeight`, ...

    @property
    def where(self) -> str:
        return f"{display_path(self.path)}:{self.line}"

    def pos(self) -> Pos:
        """Its position, with the file's text to quote (read now)."""
        src = read_source(self.path, Diagnostics(warnings=False)) or SourceFile(self.path, "")
        return Pos(src, self.line, self.col)


# real path -> (stat signature, {name: [kind, line, col, detail]}); see the module doc
_KEPT: dict[str, tuple[list[int], dict[str, list]]] = {}
_KEPT_MAX = 4096


def search_folders(importer_dir: str, include: list[str] | None) -> list[str]:
    out: list[str] = []
    for d in [os.path.abspath(importer_dir), *search_path(include)]:
        if d not in out:
            out.append(d)
    return out


def definitions_of(name: str, importer_dir: str, include: list[str] | None = None) -> list[Definition]:
    """Every top-level definition of `name` by a module on the search path of
    a module in `importer_dir`, in search order (the first is what an import
    by that file name would find)."""
    out: list[Definition] = []
    taken: set[str] = set()         # file names: an earlier folder's module hides a later one's
    index = _LazyIndex()
    for folder in search_folders(importer_dir, include):
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".nx") and e.is_file())
        except OSError:
            continue
        for file_name in names:
            if file_name in taken:
                continue
            taken.add(file_name)
            path = os.path.join(folder, file_name)
            found = _module_names(path, index).get(name)
            if found is not None:
                kind, line, col, detail = found
                out.append(Definition(name, kind, file_name, path, line, col, detail))
    index.save()
    return out


def missing_import(name: str, pos: Pos | None, include: list[str] | None,
                   kinds: tuple[str, ...]) -> tuple[str, list]:
    """(`; defined in "m.nx": add import "m.nx"`, [a note at the definition])
    when a module on the search path of the module at `pos` defines `name`
    as one of `kinds`; ("", []) otherwise."""
    if pos is None:
        return "", []
    try:
        found = [d for d in definitions_of(name, os.path.dirname(pos.file.path), include)
                 if d.kind in kinds and os.path.realpath(d.path) != os.path.realpath(pos.file.path)]
        if not found:
            return "", []
        first = found[0]
        also = [f'"{d.import_name}"' for d in found[1:]]
        more = f" (also defined in {', '.join(also)})" if also else ""
        note = Diagnostics.note(first.pos(), f"'{name}' is defined here")
    except Exception:  # noqa: BLE001 - a hint that cannot be worked out is left out, never a crash
        return "", []
    return f'; defined in "{first.import_name}": add import "{first.import_name}"{more}', [note]


class _LazyIndex:
    """The module index, loaded at the first module not known in this process."""

    def __init__(self):
        self.index = None

    def get(self):
        if self.index is None:
            from nxc.incremental.index import ModuleIndex
            self.index = ModuleIndex.load()
        return self.index

    def save(self) -> None:
        if self.index is not None:
            try:
                self.index.save()
            except OSError:
                pass                # not recording costs the next look time only


def _module_names(path: str, index: _LazyIndex) -> dict[str, list]:
    """{name: [kind, line, col, detail]} of one module file ({} if it cannot
    be read or parsed)."""
    from nxc.incremental.keys import file_signature, settled, source_digest
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return {}
    sig = file_signature(st)
    kept = _KEPT.get(real)
    if kept is not None and kept[0] == sig:
        return kept[1]
    entry = index.get().module(real)
    if entry is None:
        return {}                   # unreadable or does not parse
    names = entry.get("defines")
    if not _well_formed(names):
        diags = Diagnostics(warnings=False)
        src = read_source(real, diags)
        if src is None:
            return {}
        try:
            names = top_level_names(parse_cached(src, diags))
        except CompileError:
            return {}
        index.get().note(real, source_digest(src.text), defines=names)     # only if the entry has that text
    if settled(st):
        if len(_KEPT) >= _KEPT_MAX:
            _KEPT.clear()
        _KEPT[real] = (sig, names)
    return names


def _well_formed(names) -> bool:
    return isinstance(names, dict) and all(
        isinstance(v, list) and len(v) == 4 and isinstance(v[0], str) and type(v[1]) is int and type(v[2]) is int
        and isinstance(v[3], str) for v in names.values())


def top_level_names(module: ast.Module) -> dict[str, list]:
    """{name: [kind, line, col, detail]} of what a module defines for its
    importers (a gate's `main` is dropped on import, so it is not one)."""
    from nxc.syntax.printer import signature, type_text
    out: dict[str, list] = {}

    def add(item, kind: str, detail: str) -> None:
        if item.name not in out:
            out[item.name] = [kind, item.pos.line, item.pos.col, detail]

    for item in module.items:
        if isinstance(item, ast.FuncDecl):
            if item.name != "main":
                add(item, "extern" if item.is_extern else "func", signature(item))
        elif isinstance(item, ast.StructDecl):
            add(item, "struct", f"struct {item.name}")
        elif isinstance(item, ast.TypeAlias):
            add(item, "type", f"type {item.name} = {type_text(item.target)}")
        elif isinstance(item, ast.ConstDecl):
            ty = f": {type_text(item.type_expr)}" if item.type_expr is not None else ""
            add(item, "const", f"const {item.name}{ty}")
        elif isinstance(item, ast.GlobalDecl):
            add(item, "global", f"var {item.name}: {type_text(item.type_expr)}")
    return out
