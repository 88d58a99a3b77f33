"""`nxc lsp`: a language server for .nx over stdio (pygls + lsprotocol).

Every answer comes from nxc/tools/index.py, which runs the real front end
and checker (through nxc/tools/workspace.py, which lets open documents
override files on disk, also for imports, and recovers from syntax errors
by blanking the offending line). Each document is analysed as the root of
its own import graph; references and rename also analyse every .nx file of
the workspace folders, so uses in modules that import the document count.

Positions: the index counts columns in characters (1-based); LSP clients
count UTF-16 code units by default, or UTF-8 bytes if both sides agree
(0-based). `_to_lsp` / `_from_lsp` convert.
"""
from __future__ import annotations

import logging
import os
import re

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from nxc import __version__
from nxc.diagnostics import CompileError, Diagnostics, SourceFile
from nxc.tools import checked
from nxc.tools.index import Definition, GraphIndex, Loc, Occurrence, build_index
from nxc.tools.workspace import read_text

KEYWORDS = ["import", "const", "type", "struct", "func", "extern", "let", "var", "if", "else",
            "while", "break", "continue", "return", "as", "true", "false", "sizeof"]
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Files a workspace scan looks at, at most (a home folder opened by mistake
# must not make references take minutes).
MAX_WORKSPACE_FILES = 2000
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".nxc-cache"}

log = logging.getLogger("nxc.lsp")

_KIND_SYMBOL = {"func": lsp.SymbolKind.Function, "extern": lsp.SymbolKind.Function,
                "const": lsp.SymbolKind.Constant, "global": lsp.SymbolKind.Variable,
                "type": lsp.SymbolKind.TypeParameter, "struct": lsp.SymbolKind.Struct,
                "field": lsp.SymbolKind.Field}
_KIND_COMPLETION = {"func": lsp.CompletionItemKind.Function, "extern": lsp.CompletionItemKind.Function,
                    "const": lsp.CompletionItemKind.Constant, "global": lsp.CompletionItemKind.Variable,
                    "type": lsp.CompletionItemKind.TypeParameter, "struct": lsp.CompletionItemKind.Struct,
                    "local": lsp.CompletionItemKind.Variable, "param": lsp.CompletionItemKind.Variable,
                    "field": lsp.CompletionItemKind.Field}


class NxLanguageServer(LanguageServer):
    def __init__(self, include: list[str] | None = None):
        super().__init__("nxc", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.include = include or []
        self.open_paths: set[str] = set()
        # root path -> (the texts it was built from, its index)
        self._indexes: dict[str, tuple[dict[str, str], GraphIndex]] = {}

    # ---- documents and analyses ----
    def overlay(self) -> dict[str, str]:
        """The open documents' texts, by real path: they win over the files."""
        out = {}
        for path in self.open_paths:
            doc = self.workspace.get_text_document(from_fs_path(path))
            out[path] = doc.source
        return out

    def index_for(self, path: str) -> GraphIndex:
        overlay = self.overlay()
        cached = self._indexes.get(path)
        if cached is not None and all(read_text(p, overlay) == t for p, t in cached[0].items()):
            return cached[1]
        gi = build_index(path, overlay, self.include)
        self._indexes[path] = (dict(gi.loaded.texts), gi)
        return gi

    def workspace_files(self) -> list[str]:
        roots = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        if not roots and self.workspace.root_path:
            roots = [self.workspace.root_path]
        found: set[str] = set(self.open_paths)
        for root in roots:
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                for f in sorted(files):
                    if f.endswith(".nx"):
                        found.add(os.path.realpath(os.path.join(folder, f)))
                if len(found) >= MAX_WORKSPACE_FILES:
                    break
        return sorted(found)

    def publish(self, path: str) -> None:
        gi = self.index_for(path)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=from_fs_path(path), diagnostics=diagnostics_for(gi, path)))


def create_server(include: list[str] | None = None) -> NxLanguageServer:
    server = NxLanguageServer(include)

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: NxLanguageServer, params: lsp.InitializedParams):
        encoding = ls.server_capabilities.position_encoding if ls.server_capabilities else None
        _ENCODING["name"] = str(getattr(encoding, "value", encoding) or "utf-16")

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: NxLanguageServer, params: lsp.DidOpenTextDocumentParams):
        ls.open_paths.add(_path(params.text_document.uri))
        _republish(ls)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: NxLanguageServer, params: lsp.DidChangeTextDocumentParams):
        _republish(ls)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: NxLanguageServer, params: lsp.DidSaveTextDocumentParams):
        _republish(ls)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: NxLanguageServer, params: lsp.DidCloseTextDocumentParams):
        path = _path(params.text_document.uri)
        ls.open_paths.discard(path)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                          diagnostics=[]))
        _republish(ls)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: NxLanguageServer, params: lsp.DefinitionParams):
        gi, occ = _occurrence(ls, params)
        if occ is None or occ.target is None:
            return None
        if occ.kind == "import":
            return lsp.Location(uri=from_fs_path(occ.target.path), range=_range0())
        return _location(gi, ls, occ.target, len(_def_name(gi, occ)))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: NxLanguageServer, params: lsp.HoverParams):
        gi, occ = _occurrence(ls, params)
        if occ is None:
            return None
        text = hover_text(gi, occ)
        if not text:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                         range=_occ_range(gi, occ))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=[".", '"']))
    def completion(ls: NxLanguageServer, params: lsp.CompletionParams):
        path = _path(params.text_document.uri)
        gi = ls.index_for(path)
        line, col = _from_lsp(gi.modules[path].text, params.position)
        return lsp.CompletionList(is_incomplete=False, items=completions(gi, path, line, col, ls.include))

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: NxLanguageServer, params: lsp.DocumentSymbolParams):
        path = _path(params.text_document.uri)
        return document_symbols(ls.index_for(path), path)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: NxLanguageServer, params: lsp.ReferenceParams):
        gi, occ = _occurrence(ls, params)
        if occ is None or occ.target is None or occ.kind == "import":
            return []
        found = _uses(ls, occ.target, include_definition=params.context.include_declaration)
        return [_location(None, ls, loc, length) for loc, length in found]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: NxLanguageServer, params: lsp.PrepareRenameParams):
        gi, occ = _occurrence(ls, params)
        if occ is None or occ.target is None or occ.kind in ("import", "expr"):
            return None
        return _occ_range(gi, occ)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: NxLanguageServer, params: lsp.RenameParams):
        gi, occ = _occurrence(ls, params)
        if occ is None or occ.target is None or occ.kind in ("import", "expr"):
            return None
        new = params.new_name
        if not _IDENT.match(new) or new in KEYWORDS or new in checked.builtin_type_names():
            raise ValueError(f"'{new}' is not a valid .nx name")
        changes: dict[str, list[lsp.TextEdit]] = {}
        for loc, length in _uses(ls, occ.target, include_definition=True):
            text = _text_of(ls, loc.path)
            changes.setdefault(from_fs_path(loc.path), []).append(
                lsp.TextEdit(range=_range(text, loc, length), new_text=new))
        return lsp.WorkspaceEdit(changes=changes)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: NxLanguageServer, params: lsp.DocumentFormattingParams):
        path = _path(params.text_document.uri)
        text = ls.workspace.get_text_document(params.text_document.uri).source
        return format_edits(path, text)

    return server


# ---------------------------------------------------------------- features
def diagnostics_for(gi: GraphIndex, path: str) -> list[lsp.Diagnostic]:
    """Every error and warning of the document, located to the column; an
    error inside an imported module is shown on the import line that leads to it."""
    text = gi.modules[path].text if path in gi.modules else ""
    loaded = gi.loaded
    out: list[lsp.Diagnostic] = []
    items = []
    for p, pm in loaded.parsed.items():
        items += [(d, p) for d in pm.syntax_errors]
    items += [(d, d.pos.file.path if d.pos else path) for d in loaded.load_errors]
    if gi.result is not None:
        items += [(d, d.pos.file.path if d.pos else path) for d in gi.result.diagnostics
                  if not _caused_by_recovery(gi, d)]
    seen = set()
    for d, where in items:
        severity = lsp.DiagnosticSeverity.Error if d.severity == "error" else lsp.DiagnosticSeverity.Warning
        if where == path and d.pos is not None:
            loc = Loc(path, d.pos.line, d.pos.col)
            rng = _range(text, loc, _word_length(text, loc))
            message = d.message
        else:
            chain = loaded.graph.chains.get(where) if loaded.graph is not None else None
            if not chain:
                if d.pos is None:
                    rng, message = _range0(), d.message
                else:
                    continue        # a module that does not lead here (cannot happen for a graph's root)
            else:
                imp = chain[0]
                loc = Loc(path, imp.line, imp.col)
                rng = _range(text, loc, len(text.split("\n")[imp.line - 1]) - imp.col + 1)
                rel = os.path.basename(where)
                at = f"{rel}:{d.pos.line}:{d.pos.col}" if d.pos is not None else rel
                message = f"in imported module {at}: {d.message}"
        key = (rng.start.line, rng.start.character, message)
        if key in seen:
            continue
        seen.add(key)
        related = []
        for n in d.notes:
            if n.pos is not None and n.pos.file.path in gi.modules:
                ntext = gi.modules[n.pos.file.path].text
                nloc = Loc(n.pos.file.path, n.pos.line, n.pos.col)
                related.append(lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=from_fs_path(n.pos.file.path),
                                          range=_range(ntext, nloc, _word_length(ntext, nloc))),
                    message=n.message))
        out.append(lsp.Diagnostic(range=rng, message=message, severity=severity, source="nxc",
                                  related_information=related or None))
    return out


def _caused_by_recovery(gi: GraphIndex, d) -> bool:
    """A checker complaint that only exists because recovery blanked a line:
    it quotes a name written on a blanked line, or is a missing return."""
    if d.pos is None:
        return False
    pm = gi.loaded.parsed.get(d.pos.file.path)
    if pm is None or not pm.blanked:
        return False
    if d.message.startswith("missing return"):
        return True
    lines = gi.loaded.texts.get(d.pos.file.path, "").split("\n")
    words = set()
    for n in pm.blanked:
        if 0 < n <= len(lines):
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", lines[n - 1]))
    return any(q in words for q in re.findall(r"'([A-Za-z_][A-Za-z0-9_]*)'", d.message))


def hover_text(gi: GraphIndex, occ: Occurrence) -> str:
    if occ.kind == "import":
        if occ.import_path is None:
            return ""
        mi = gi.modules.get(occ.import_path)
        header = mi.module.header if mi is not None and mi.module is not None else {}
        lines = [f"module `{os.path.basename(occ.import_path)}`", "", f"`{occ.import_path}`"]
        lines += [f"- {k}: {v}" for k, v in header.items()]
        return "\n".join(lines)
    d = gi.definition(occ.target)
    if d is None and occ.kind == "type":
        name = _line(gi.modules[occ.loc.path].text, occ.loc.line)[occ.loc.col - 1:occ.loc.col - 1 + occ.length]
        size = checked.builtin_type_size(name)
        return f"built-in type `{name}`" + (f" ({size} B)" if size else "") if size is not None else ""
    if d is None:
        if occ.type_text:
            value = f" = {occ.value}" if occ.value is not None else ""
            return f"```nx\n{occ.type_text}{value}\n```"
        return ""
    out = [f"```nx\n{d.detail}\n```"]
    if d.kind in ("local", "param", "field", "global") and occ.type_text and occ.type_text not in d.detail:
        out.append(f"type: `{occ.type_text}`")
    if d.layout:
        out.append("```\n" + d.layout + "\n```")
    if d.doc:
        out.append(d.doc)
    where = os.path.basename(d.loc.path)
    out.append(f"*{where}:{d.loc.line}*")
    return "\n\n".join(out)


def completions(gi: GraphIndex, path: str, line: int, col: int, include: list[str]) -> list[lsp.CompletionItem]:
    mi = gi.modules[path]
    lines = mi.text.split("\n")
    before = lines[line - 1][:col - 1] if 0 < line <= len(lines) else ""
    m = re.search(r'^\s*import\s+"([^"]*)$', before)
    if m:
        return [lsp.CompletionItem(label=name, kind=lsp.CompletionItemKind.File, detail=folder)
                for name, folder in _module_files(path, include)]
    chain = _dotted_chain(before)
    if chain is not None:
        st = _resolve_chain(gi, mi, chain, line, col)
        if st is None:
            return []
        return [lsp.CompletionItem(label=f.name, kind=lsp.CompletionItemKind.Field,
                                   detail=f"{f.type}  (+{f.offset})") for f in st.fields]
    items: dict[str, lsp.CompletionItem] = {}
    for name, loc, ty in mi.visible_locals(line, col):
        d = gi.definition(loc)
        items[name] = lsp.CompletionItem(label=name, kind=lsp.CompletionItemKind.Variable,
                                         detail=d.detail if d else str(ty))
    if gi.result is not None:
        for name in gi.result.top_names():
            if name in items:
                continue
            sym = gi.result.top_symbol(name)
            d = gi.definition(Loc(sym.pos.file.path, sym.pos.line, sym.pos.col))
            items[name] = lsp.CompletionItem(
                label=name, kind=_KIND_COMPLETION.get(sym.kind, lsp.CompletionItemKind.Text),
                detail=d.detail if d else sym.kind,
                documentation=(d.doc or None) if d else None)
    for t in checked.builtin_type_names():
        items.setdefault(t, lsp.CompletionItem(label=t, kind=lsp.CompletionItemKind.TypeParameter))
    for k in KEYWORDS:
        items.setdefault(k, lsp.CompletionItem(label=k, kind=lsp.CompletionItemKind.Keyword))
    return list(items.values())


def _module_files(path: str, include: list[str]) -> list[tuple[str, str]]:
    from nxc.syntax.loader import search_path
    out, seen = [], set()
    for folder in [os.path.dirname(path), *search_path(include)]:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for n in names:
            if n.endswith(".nx") and n not in seen and os.path.join(folder, n) != path:
                seen.add(n)
                out.append((n, folder))
    return out


def _dotted_chain(before: str) -> list[str] | None:
    """`p.next.` -> ['p', 'next'] (then complete a field); `q[i].` -> ['q', '[]'];
    None when the cursor is not right after a `.` (plus a partial name)."""
    m = re.search(r"\.\s*[A-Za-z0-9_]*$", before)
    if not m:
        return None
    s = before[:m.start()]
    parts: list[str] = []
    while True:
        s = s.rstrip()
        if s.endswith("]"):
            depth, i = 0, len(s) - 1
            while i >= 0:
                depth += {"]": 1, "[": -1}.get(s[i], 0)
                if depth == 0:
                    break
                i -= 1
            if i < 0:
                return None
            parts.append("[]")
            s = s[:i]
            continue
        n = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", s)
        if not n:
            return None
        parts.append(n.group(0))
        s = s[:n.start()].rstrip()
        if s.endswith("."):
            s = s[:-1]
            continue
        break
    parts.reverse()
    return parts if parts and parts[0] != "[]" else None


def _resolve_chain(gi: GraphIndex, mi, chain: list[str], line: int, col: int):
    """The struct whose fields follow `chain.`, from the types the checker found."""
    first = chain[0]
    t = None
    for name, loc, ty in mi.visible_locals(line, col):
        if name == first:
            t = ty
    if t is None and gi.result is not None:
        sym = gi.result.top_symbol(first)
        t = sym.type if sym is not None else None
    for part in chain[1:]:
        if part == "[]":
            t = getattr(t, "target", None)
            continue
        st = checked.struct_of_pointer(t)
        f = st.field(part) if st is not None else None
        t = f.type if f is not None else None
    return checked.struct_of_pointer(t)


def document_symbols(gi: GraphIndex, path: str) -> list[lsp.DocumentSymbol]:
    mi = gi.modules.get(path)
    if mi is None:
        return []
    text = mi.text
    by_struct: dict[str, list[Definition]] = {}
    for d in mi.definitions:
        if d.kind == "field":
            by_struct.setdefault(d.container, []).append(d)
    out = []
    for d in mi.definitions:
        if d.kind not in _KIND_SYMBOL or d.kind == "field":
            continue
        sel = _range(text, d.loc, len(d.name))
        end_line = max(d.end_line, d.loc.line)
        full = lsp.Range(start=lsp.Position(line=d.loc.line - 1, character=0),
                         end=lsp.Position(line=end_line - 1, character=len(_line(text, end_line))))
        children = [lsp.DocumentSymbol(name=f.name, kind=lsp.SymbolKind.Field, detail=f.detail,
                                       range=_range(text, f.loc, len(f.name)),
                                       selection_range=_range(text, f.loc, len(f.name)))
                    for f in by_struct.get(d.name, [])] if d.kind == "struct" else None
        out.append(lsp.DocumentSymbol(name=d.name, kind=_KIND_SYMBOL[d.kind], detail=d.detail,
                                      range=full, selection_range=sel, children=children))
    return out


def format_edits(path: str, text: str) -> list[lsp.TextEdit]:
    """The whole document, formatted by `nxc fmt` (nxc/tools/fmt.py), as one
    edit; none when it is already formatted or does not parse (its
    diagnostics say why)."""
    from nxc.tools.fmt import format_source
    try:
        new = format_source(SourceFile(path, text), Diagnostics())
    except CompileError:
        return []
    if new == text:
        return []
    lines = text.split("\n")
    end = lsp.Position(line=len(lines) - 1, character=_utf16(lines[-1], len(lines[-1])))
    return [lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=new)]


# ---------------------------------------------------------------- helpers
def _republish(ls: NxLanguageServer) -> None:
    # Another open document may import the one that changed: all of them.
    for path in sorted(ls.open_paths):
        try:
            ls.publish(path)
        except Exception:  # noqa: BLE001 - one document's failure must not stop the server
            log.exception("diagnostics for %s failed", path)


def _uses(ls: NxLanguageServer, target: Loc, include_definition: bool) -> list[tuple[Loc, int]]:
    """Every occurrence of the definition at `target` in the workspace's modules."""
    found: dict[Loc, int] = {}
    roots = ls.workspace_files()
    if target.path not in roots:
        roots.append(target.path)
    for root in roots:
        gi = ls.index_for(root)
        mi = gi.modules.get(root)
        if mi is None:
            continue
        for o in mi.occurrences:
            if o.target == target and o.kind != "import" and (include_definition or o.loc != target):
                found[o.loc] = o.length
    return sorted(found.items())


def _occurrence(ls: NxLanguageServer, params) -> tuple[GraphIndex, Occurrence | None]:
    path = _path(params.text_document.uri)
    gi = ls.index_for(path)
    mi = gi.modules.get(path)
    if mi is None:
        return gi, None
    line, col = _from_lsp(mi.text, params.position)
    return gi, mi.occurrence_at(line, col)


def _def_name(gi: GraphIndex, occ: Occurrence) -> str:
    d = gi.definition(occ.target)
    return d.name if d is not None else "x" * occ.length


def _text_of(ls: NxLanguageServer, path: str) -> str:
    return read_text(path, ls.overlay()) or ""


def _location(gi: GraphIndex | None, ls: NxLanguageServer, loc: Loc, length: int) -> lsp.Location:
    text = gi.modules[loc.path].text if gi is not None and loc.path in gi.modules else _text_of(ls, loc.path)
    return lsp.Location(uri=from_fs_path(loc.path), range=_range(text, loc, length))


def _occ_range(gi: GraphIndex, occ: Occurrence) -> lsp.Range:
    return _range(gi.modules[occ.loc.path].text, occ.loc, occ.length)


def _path(uri: str) -> str:
    return os.path.realpath(to_fs_path(uri))


def _line(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


# How the client counts columns, as agreed at `initialize` (pygls picks the
# client's first choice among utf-8, utf-16, utf-32; LSP's default is utf-16).
# One client per server process, so one setting.
_ENCODING = {"name": "utf-16"}


def _unit_width(ch: str) -> int:
    name = _ENCODING["name"]
    if name == "utf-8":
        return len(ch.encode("utf-8"))
    if name == "utf-32":
        return 1
    return 2 if ord(ch) > 0xFFFF else 1


def _utf16(line_text: str, chars: int) -> int:
    """Column `chars` (0-based, in characters) in the client's units."""
    return sum(_unit_width(ch) for ch in line_text[:chars]) if not line_text[:chars].isascii() else chars


def _to_lsp(text: str, line: int, col: int) -> lsp.Position:
    return lsp.Position(line=max(line - 1, 0), character=_utf16(_line(text, line), max(col - 1, 0)))


def _from_lsp(text: str, pos: lsp.Position) -> tuple[int, int]:
    line_text = _line(text, pos.line + 1)
    units = 0
    for i, ch in enumerate(line_text):
        if units >= pos.character:
            return pos.line + 1, i + 1
        units += _unit_width(ch)
    return pos.line + 1, len(line_text) + 1


def _range(text: str, loc: Loc, length: int) -> lsp.Range:
    return lsp.Range(start=_to_lsp(text, loc.line, loc.col), end=_to_lsp(text, loc.line, loc.col + length))


def _range0() -> lsp.Range:
    return lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))


def _word_length(text: str, loc: Loc) -> int:
    """How much of the line a diagnostic underlines: the word (or operator) at it."""
    rest = _line(text, loc.line)[loc.col - 1:]
    m = re.match(r"[A-Za-z_0-9]+|\"[^\"]*\"?|[-+*/%&|^!~<>=]{1,3}|\S", rest)
    return len(m.group(0)) if m else 1


def serve(include: list[str] | None = None) -> int:
    """Run the server on stdin/stdout until the client says exit."""
    logging.basicConfig(level=logging.WARNING, format="nxc lsp: %(message)s")
    create_server(include).start_io()
    return 0
