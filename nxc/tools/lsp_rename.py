"""Safe rename for the language server: what may be renamed, and a proof
that the renamed program means the same.

Refused, with a message the user reads (a ResponseError, code -32803
RequestFailed, never a traceback):
  - a name that is not an identifier, a keyword or a built-in type;
  - a definition in the bundled library (nx_src/ of the installed nxc) or
    outside the workspace folders: its other users are not all in view
    (rust-analyzer refuses the same);
  - a conflict: the new name is already defined where the renamed one is
    visible (a top-level name of the graph, or a parameter or local of
    the same function);
  - a capture: after the rename, some use of the new name would refer to
    the renamed definition (`v * SCALE` -> `SCALE * SCALE`), or a renamed
    use would refer to another definition.
The last two are checked by doing it: the edits are applied to copies of
the texts, every file touched is analysed again, and the edit is taken only
if it adds no error and every name refers to the same definition as before
(positions shifted by the edits on their line).
"""
from __future__ import annotations

import os
import re

from pygls.exceptions import JsonRpcException

from nxc.paths import bundled_dir
from nxc.tools import checked
from nxc.tools.index import Definition, GraphIndex, Loc, Occurrence
from nxc.tools.lsp_features import KEYWORDS
from nxc.tools.workspace import read_text

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOP = ("func", "extern", "const", "global", "type", "struct")


class RequestFailed(JsonRpcException):
    """A request refused with a reason the user reads."""
    CODE = -32803


def _under(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def renamable(gi: GraphIndex, occ: Occurrence | None, roots: list[str]) -> Definition:
    """The definition the name under the cursor refers to, if it may be renamed."""
    if occ is None or occ.target is None or occ.kind in ("import", "expr"):
        raise RequestFailed("there is no name to rename here")
    d = gi.definition(occ.target)
    if d is None:
        raise RequestFailed("the definition of this name is not known (does the module check?)")
    where = d.loc.path
    if _under(where, bundled_dir()):
        raise RequestFailed(f"'{d.name}' is defined in the bundled library ({os.path.basename(where)} in "
                            f"nxc's nx_src/): it is not renamed from an editor")
    if not any(_under(where, r) for r in roots):
        raise RequestFailed(f"'{d.name}' is defined outside the workspace folders ({where}): "
                            "its other users are not in view")
    return d


def valid_name(new: str) -> None:
    if not _IDENT.match(new):
        raise RequestFailed(f"'{new}' is not a valid .nx name (a letter or '_', then letters, digits, '_')")
    if new in KEYWORDS or new in checked.builtin_type_names():
        raise RequestFailed(f"'{new}' is not a valid .nx name: it is a keyword or a built-in type")


def check_safe(analyzer, overlay: dict[str, str], d: Definition, places: list[tuple[Loc, int]], new: str) -> None:
    """Raise RequestFailed unless renaming `d` (named at `places`) to `new`
    keeps the program's meaning. Runs on the analyses' thread."""
    old = d.name
    gi = analyzer.analyse(d.loc.path, overlay)
    if d.kind in _TOP:
        sym = gi.result.top_symbol(new) if gi.result is not None else None
        if sym is not None:
            raise RequestFailed(f"cannot rename '{old}' to '{new}': '{new}' is already defined at "
                                f"{_where(sym.pos.file.path, sym.pos.line, sym.pos.col)}")
    else:
        mi = gi.modules.get(d.loc.path)
        for other in (mi.definitions if mi is not None else []):
            if other.name == new and other.kind in ("param", "local") and other.container == d.container:
                raise RequestFailed(f"cannot rename '{old}' to '{new}': {other.kind} '{new}' is already "
                                    f"defined in '{d.container}' at {_where(*_at(other.loc))}")
    files = sorted({loc.path for loc, _ in places} | {d.loc.path})
    by_line: dict[tuple[str, int], list[int]] = {}
    for loc, _ in places:
        by_line.setdefault((loc.path, loc.line), []).append(loc.col)
    delta = len(new) - len(old)

    def moved(loc: Loc) -> Loc:
        before = sum(1 for c in by_line.get((loc.path, loc.line), ()) if c < loc.col)
        return Loc(loc.path, loc.line, loc.col + delta * before)

    def unmoved(loc: Loc) -> Loc:          # where a position after the edits was before them
        cols = by_line.get((loc.path, loc.line), ())
        before = sum(1 for c in cols if moved(Loc(loc.path, loc.line, c)).col < loc.col)
        return Loc(loc.path, loc.line, loc.col - delta * before)

    edited = dict(overlay)
    for path in files:
        text = read_text(path, overlay) or ""
        lines = text.split("\n")
        for (p, line), cols in by_line.items():
            if p != path:
                continue
            s = lines[line - 1]
            for c in sorted(cols, reverse=True):
                s = s[:c - 1] + new + s[c - 1 + len(old):]
            lines[line - 1] = s
        edited[path] = "\n".join(lines)
    renamed = {moved(loc) for loc, _ in places}
    target = moved(d.loc)
    for path in files:
        before = analyzer.analyse(path, overlay)
        after = analyzer.analyse(path, edited)
        had = {_errors_key(m, old, new) for m in _errors(before)}
        for msg, where in _errors_at(after):
            if msg not in had:
                raise RequestFailed(f"cannot rename '{old}' to '{new}': the program would not check: "
                                    f"{where}: {msg}")
        mi = after.modules.get(path)
        for o in (mi.occurrences if mi is not None else []):
            if o.kind not in ("name", "field", "type"):
                continue
            if o.loc in renamed:
                if o.target != target:
                    raise RequestFailed(f"cannot rename '{old}' to '{new}': the use at {_where(*_at(unmoved(o.loc)))} "
                                        f"would refer to another '{new}'")
            elif o.target == target and o.loc != target:
                line = mi.text.split("\n")[o.loc.line - 1]
                if line[o.loc.col - 1:o.loc.col - 1 + o.length] == new:
                    raise RequestFailed(f"cannot rename '{old}' to '{new}': '{new}' at {_where(*_at(unmoved(o.loc)))} "
                                        f"refers to another definition, and would refer to the renamed "
                                        f"{d.kind} instead")


def _errors(gi: GraphIndex) -> list[str]:
    return [m for m, _ in _errors_at(gi)]


def _errors_at(gi: GraphIndex) -> list[tuple[str, str]]:
    out = [(e.message, _where(e.pos.file.path, e.pos.line, e.pos.col) if e.pos else "")
           for pm in gi.loaded.parsed.values() for e in pm.syntax_errors]
    out += [(e.message, "") for e in gi.loaded.load_errors]
    if gi.result is not None:
        out += [(e.message, _where(e.pos.file.path, e.pos.line, e.pos.col) if e.pos else "")
                for e in gi.result.diagnostics if e.severity == "error"]
    return out


def _errors_key(message: str, old: str, new: str) -> str:
    """An error that was there before, as it reads after the rename."""
    return message.replace(f"'{old}'", f"'{new}'")


def _at(loc: Loc) -> tuple[str, int, int]:
    return loc.path, loc.line, loc.col


def _where(path: str, line: int, col: int) -> str:
    return f"{os.path.basename(path)}:{line}:{col}"
