"""What the language server answers, from an index (nxc/tools/index.py):
diagnostics, hover, completion, symbols, formatting; and positions.

Positions: the index counts columns in characters (1-based); LSP clients
count UTF-16 code units by default, or UTF-8 bytes if both sides agree
(0-based). `to_lsp` / `from_lsp` convert. Locations in other files are
named through `uri_for` (the server's: the URI the editor opened a file
under, whatever the symlinks).
"""
from __future__ import annotations

import os
import re

from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from nxc.diagnostics import CompileError, Diagnostics, SourceFile
from nxc.syntax import ast
from nxc.syntax.printer import signature, type_text
from nxc.tools import checked
from nxc.tools.index import Definition, GraphIndex, Loc, Occurrence

KEYWORDS = ["import", "const", "type", "struct", "func", "extern", "let", "var", "if", "else",
            "while", "break", "continue", "return", "as", "true", "false", "sizeof"]

_KIND_SYMBOL = {"func": lsp.SymbolKind.Function, "extern": lsp.SymbolKind.Function,
                "const": lsp.SymbolKind.Constant, "global": lsp.SymbolKind.Variable,
                "type": lsp.SymbolKind.TypeParameter, "struct": lsp.SymbolKind.Struct,
                "field": lsp.SymbolKind.Field}
_KIND_COMPLETION = {"func": lsp.CompletionItemKind.Function, "extern": lsp.CompletionItemKind.Function,
                    "const": lsp.CompletionItemKind.Constant, "global": lsp.CompletionItemKind.Variable,
                    "type": lsp.CompletionItemKind.TypeParameter, "struct": lsp.CompletionItemKind.Struct,
                    "local": lsp.CompletionItemKind.Variable, "param": lsp.CompletionItemKind.Variable,
                    "field": lsp.CompletionItemKind.Field}


# ---------------------------------------------------------------- features
def diagnostics_for(gi: GraphIndex, path: str, uri_for=None) -> list[lsp.Diagnostic]:
    """Every error and warning of the document, located to the column; an
    error inside an imported module is shown on the import line that leads
    to it. `uri_for(path)`: how related locations name a file (default: its file: URI)."""
    uri_for = uri_for or from_fs_path
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
            rng = range_of(text, loc, word_length(text, loc))
            message = d.message
        else:
            chain = loaded.graph.chains.get(where) if loaded.graph is not None else None
            if not chain:
                if d.pos is None:
                    rng, message = range0(), d.message
                else:
                    continue        # a module that does not lead here (cannot happen for a graph's root)
            else:
                imp = chain[0]
                loc = Loc(path, imp.line, imp.col)
                rng = range_of(text, loc, len(text.split("\n")[imp.line - 1]) - imp.col + 1)
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
                    location=lsp.Location(uri=uri_for(n.pos.file.path),
                                          range=range_of(ntext, nloc, word_length(ntext, nloc))),
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
        name = line_of(gi.modules[occ.loc.path].text, occ.loc.line)[occ.loc.col - 1:occ.loc.col - 1 + occ.length]
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


def completions(gi: GraphIndex, path: str, line: int, col: int, include: list[str],
                text: str | None = None) -> list[lsp.CompletionItem]:
    """`text`: the document now, when `gi` is the last analysis of an older
    version (while typing): what the cursor follows is read from it, the
    names and types from `gi`."""
    mi = gi.modules[path]
    lines = (mi.text if text is None else text).split("\n")
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
            # the index of a module already walked (the document's own);
            # an imported module is not walked for a completion list
            d = gi.definitions.get(Loc(sym.pos.file.path, sym.pos.line, sym.pos.col))
            items[name] = lsp.CompletionItem(
                label=name, kind=_KIND_COMPLETION.get(sym.kind, lsp.CompletionItemKind.Text),
                detail=d.detail if d else _short_detail(sym),
                documentation=(d.doc or None) if d else None)
    for t in checked.builtin_type_names():
        items.setdefault(t, lsp.CompletionItem(label=t, kind=lsp.CompletionItemKind.TypeParameter))
    for k in KEYWORDS:
        items.setdefault(k, lsp.CompletionItem(label=k, kind=lsp.CompletionItemKind.Keyword))
    return list(items.values())


def _short_detail(sym) -> str:
    if sym.kind in ("func", "extern") and isinstance(sym.decl, ast.FuncDecl):
        return signature(sym.decl)
    value = f" = {sym.value}" if sym.kind == "const" and sym.value is not None else ""
    shown = {"const": "const", "global": "var", "type": "type", "struct": "struct"}.get(sym.kind, sym.kind)
    return f"{shown} {sym.name}" + (f": {sym.type}" if sym.type is not None and sym.kind != "struct" else "") + value


def _module_files(path: str, include: list[str]) -> list[tuple[str, str]]:
    from nxc.syntax.search import search_path
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
        sel = range_of(text, d.loc, len(d.name))
        end_line = max(d.end_line, d.loc.line)
        full = lsp.Range(start=lsp.Position(line=d.loc.line - 1, character=0),
                         end=lsp.Position(line=end_line - 1, character=len(line_of(text, end_line))))
        children = [lsp.DocumentSymbol(name=f.name, kind=lsp.SymbolKind.Field, detail=f.detail,
                                       range=range_of(text, f.loc, len(f.name)),
                                       selection_range=range_of(text, f.loc, len(f.name)))
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
    end = lsp.Position(line=len(lines) - 1, character=utf16(lines[-1], len(lines[-1])))
    return [lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=new)]


def line_of(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


# How the client counts columns, as agreed at `initialize` (pygls picks the
# client's first choice among utf-8, utf-16, utf-32; LSP's default is utf-16).
# One client per server process, so one setting.
ENCODING = {"name": "utf-16"}


def _unit_width(ch: str) -> int:
    name = ENCODING["name"]
    if name == "utf-8":
        return len(ch.encode("utf-8"))
    if name == "utf-32":
        return 1
    return 2 if ord(ch) > 0xFFFF else 1


def utf16(line_text: str, chars: int) -> int:
    """Column `chars` (0-based, in characters) in the client's units."""
    return sum(_unit_width(ch) for ch in line_text[:chars]) if not line_text[:chars].isascii() else chars


def to_lsp(text: str, line: int, col: int) -> lsp.Position:
    return lsp.Position(line=max(line - 1, 0), character=utf16(line_of(text, line), max(col - 1, 0)))


def from_lsp(text: str, pos: lsp.Position) -> tuple[int, int]:
    line_text = line_of(text, pos.line + 1)
    units = 0
    for i, ch in enumerate(line_text):
        if units >= pos.character:
            return pos.line + 1, i + 1
        units += _unit_width(ch)
    return pos.line + 1, len(line_text) + 1


def range_of(text: str, loc: Loc, length: int) -> lsp.Range:
    return lsp.Range(start=to_lsp(text, loc.line, loc.col), end=to_lsp(text, loc.line, loc.col + length))


def range0() -> lsp.Range:
    return lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))


def word_length(text: str, loc: Loc) -> int:
    """How much of the line a diagnostic underlines: the word (or operator) at it."""
    rest = line_of(text, loc.line)[loc.col - 1:]
    m = re.match(r"[A-Za-z_0-9]+|\"[^\"]*\"?|[-+*/%&|^!~<>=]{1,3}|\S", rest)
    return len(m.group(0)) if m else 1




def highlights(gi: GraphIndex, path: str, occ: Occurrence) -> list[lsp.DocumentHighlight]:
    """Every place in the document naming what `occ` names (the definition: Write)."""
    mi = gi.modules[path]
    out = []
    for o in mi.occurrences:
        if o.target == occ.target and o.kind != "import":
            kind = lsp.DocumentHighlightKind.Write if o.loc == o.target else lsp.DocumentHighlightKind.Read
            out.append(lsp.DocumentHighlight(range=range_of(mi.text, o.loc, o.length), kind=kind))
    return out


def folding_ranges(gi: GraphIndex, path: str) -> list[lsp.FoldingRange]:
    """Blocks and struct bodies over more than one line, and comment blocks of 3+ lines."""
    mi = gi.modules.get(path)
    if mi is None:
        return []
    spans = {(s.start[0], s.end[0]) for s in mi.scopes if s.end[0] < 10 ** 6}
    spans |= {(d.loc.line, d.end_line) for d in mi.definitions if d.kind == "struct"}
    out = [lsp.FoldingRange(start_line=a - 1, end_line=b - 1) for a, b in sorted(spans) if b > a]
    lines = mi.text.split("\n")
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("//"):
            j += 1
        if j - i >= 3:
            out.append(lsp.FoldingRange(start_line=i, end_line=j - 1, kind=lsp.FoldingRangeKind.Comment))
        i = max(j, i + 1)
    return out


def signature_help(gi: GraphIndex, text: str, line: int, col: int) -> lsp.SignatureHelp | None:
    """The signature of the call the cursor is in, with the argument it is at."""
    before = "\n".join(text.split("\n")[:line - 1] + [line_of(text, line)[:col - 1]])
    depth, commas, i = 0, 0, len(before) - 1
    while i >= 0:
        ch = before[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                if ch == "(":
                    break
                return None
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        elif ch in "{};":
            return None
        i -= 1
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", before[:max(i, 0)])
    if i < 0 or not m or gi.result is None:
        return None
    sym = gi.result.top_symbol(m.group(1))
    if sym is None or not isinstance(sym.decl, ast.FuncDecl):
        return None
    params = [lsp.ParameterInformation(label=f"{p.name}: {type_text(p.type_expr)}") for p in sym.decl.params]
    return lsp.SignatureHelp(signatures=[lsp.SignatureInformation(label=signature(sym.decl), parameters=params)],
                             active_signature=0, active_parameter=min(commas, max(len(params) - 1, 0)))


def top_level_symbols(path: str, text: str, query: str, uri: str) -> list[lsp.WorkspaceSymbol]:
    """A module's top-level names containing `query` (any case), from its parse only."""
    from nxc.tools.workspace import parse_tolerant
    module = parse_tolerant(path, text).module
    if module is None:
        return []
    q = query.lower()
    out = []
    for item in module.items:
        name = getattr(item, "name", None)
        if not name or isinstance(item, ast.Import) or q not in name.lower():
            continue
        kind = ("extern" if item.is_extern else "func") if isinstance(item, ast.FuncDecl) else \
            {ast.ConstDecl: "const", ast.GlobalDecl: "global", ast.TypeAlias: "type",
             ast.StructDecl: "struct"}.get(type(item), "func")
        loc = Loc(path, item.pos.line, item.pos.col)
        out.append(lsp.WorkspaceSymbol(name=name, kind=_KIND_SYMBOL[kind],
                                       location=lsp.Location(uri=uri, range=range_of(text, loc, len(name)))))
    return out


# ---------------------------------------------------------------- semantic tokens
TOKEN_TYPES = ["function", "variable", "parameter", "type", "struct", "property"]
TOKEN_MODIFIERS = ["declaration", "readonly", "defaultLibrary"]
_TOKEN_OF_KIND = {"func": "function", "extern": "function", "const": "variable", "global": "variable",
                  "local": "variable", "param": "parameter", "type": "type", "struct": "struct",
                  "field": "property"}


def semantic_tokens(gi: GraphIndex, path: str, bundled: str) -> list[int]:
    """The names of the document, each typed by what it refers to (LSP's
    relative encoding: line delta, start delta, length, type, modifiers)."""
    mi = gi.modules.get(path)
    if mi is None:
        return []
    data: list[int] = []
    last_line = last_char = 0
    for o in mi.occurrences:
        if o.target is None or o.kind not in ("name", "field", "type"):
            continue
        d = gi.definitions.get(o.target)        # the document's own (walked); imported: the checker's symbol
        if d is not None:
            kind = d.kind
        else:
            name = line_of(mi.text, o.loc.line)[o.loc.col - 1:o.loc.col - 1 + o.length]
            sym = gi.result.top_symbol(name) if gi.result is not None else None
            kind = "field" if o.kind == "field" else (sym.kind if sym is not None else "")
        token = _TOKEN_OF_KIND.get(kind)
        if token is None:
            continue
        mods = (1 if o.loc == o.target else 0) | (2 if kind == "const" else 0) | \
            (4 if o.target.path.startswith(bundled) else 0)
        start = to_lsp(mi.text, o.loc.line, o.loc.col)
        end = to_lsp(mi.text, o.loc.line, o.loc.col + o.length)
        dl = start.line - last_line
        data += [dl, start.character - (last_char if dl == 0 else 0), end.character - start.character,
                 TOKEN_TYPES.index(token), mods]
        last_line, last_char = start.line, start.character
    return data


# ---------------------------------------------------------------- code actions
_UNDEFINED = re.compile(r"undefined name '([A-Za-z_][A-Za-z0-9_]*)'")


def import_fixes(path: str, text: str, diagnostics: list[lsp.Diagnostic], folders: list[str],
                 read) -> list[lsp.CodeAction]:
    """"add the import": for each undefined name of `diagnostics`, each module
    of `folders` (the document's folder, then the import search path: where
    an `import "x.nx"` is found) that defines it at top level."""
    out = []
    imported = set(re.findall(r'^\s*import\s+"([^"]+)"', text, re.M))
    for diag in diagnostics:
        m = _UNDEFINED.search(diag.message)
        if not m:
            continue
        name, seen = m.group(1), set()
        for folder in folders:
            try:
                files = sorted(f for f in os.listdir(folder) if f.endswith(".nx"))
            except OSError:
                continue
            for f in files:
                full = os.path.realpath(os.path.join(folder, f))
                if f in seen or f in imported or full == path:
                    continue
                seen.add(f)
                body = read(full)
                if body is None or name not in body:
                    continue
                if any(s.name == name for s in top_level_symbols(full, body, name, "")):
                    out.append(lsp.CodeAction(
                        title=f'add the import "{f}" (defines {name})', kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diag], is_preferred=len(out) == 0,
                        edit=lsp.WorkspaceEdit(changes={"": [_import_edit(text, f)]})))
    return out


_DID_YOU_MEAN = re.compile(r"^undefined name '([A-Za-z_][A-Za-z0-9_]*)'; did you mean '([A-Za-z_][A-Za-z0-9_]*)'\?")


def did_you_mean_fixes(diagnostics: list[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    """The checker's `did you mean 'y'?` of an undefined name, as an edit of its range."""
    out = []
    for diag in diagnostics:
        m = _DID_YOU_MEAN.match(diag.message)
        if m:
            out.append(lsp.CodeAction(title=f"change '{m.group(1)}' to '{m.group(2)}'",
                                      kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag], is_preferred=True,
                                      edit=lsp.WorkspaceEdit(changes={"": [lsp.TextEdit(range=diag.range,
                                                                                        new_text=m.group(2))]})))
    return out


def _import_edit(text: str, module: str) -> lsp.TextEdit:
    """A line `import "module"` after the last import (or after the header comment block)."""
    lines = text.split("\n")
    at = 0
    for i, line in enumerate(lines):
        if line.startswith("import "):
            at = i + 1
    if at == 0:
        while at < len(lines) and lines[at].startswith("//"):
            at += 1
        if at and at < len(lines) and not lines[at].strip():
            at += 1
    pos = lsp.Position(line=at, character=0)
    return lsp.TextEdit(range=lsp.Range(start=pos, end=pos), new_text=f'import "{module}"\n')


# ---------------------------------------------------------------- inlay hints
def inlay_hints(gi: GraphIndex, path: str, first: int, last: int) -> list[lsp.InlayHint]:
    """Lines first..last (1-based): the inferred type after a local declared
    without one (`let n = 4` shows `: i64`); a struct field's offset and
    size at the end of its line."""
    mi = gi.modules.get(path)
    if mi is None:
        return []
    out = []
    for d in mi.definitions:
        if not first <= d.loc.line <= last:
            continue
        if d.kind == "local" and d.inferred and d.type is not None:
            out.append(lsp.InlayHint(position=to_lsp(mi.text, d.loc.line, d.loc.col + len(d.name)),
                                     label=f": {d.type}", kind=lsp.InlayHintKind.Type))
        elif d.kind == "field" and d.offset is not None and d.type is not None:
            code = line_of(mi.text, d.loc.line).split("//", 1)[0].rstrip()
            out.append(lsp.InlayHint(position=to_lsp(mi.text, d.loc.line, len(code) + 1),
                                     label=f"+{d.offset}, {d.type.size} B", padding_left=True))
    return out
