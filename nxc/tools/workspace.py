"""Loading an import graph for tools: unsaved editor text and syntax errors.

The compiler's loader (nxc/syntax/loader.py) reads files from disk and stops
at the first syntax error of a module. An editor needs two more things: the
text of an open document replaces the file on disk (also when another module
imports it), and a module with a syntax error still yields an AST, so that
the rest of it keeps its diagnostics, definitions and completions.

Recovery, as many language servers do it: parse; on a syntax error, blank
the offending line (keeping its braces, so blocks still pair up; then the
whole line if that was not enough) and parse again, up to MAX_RECOVERIES
times. Every syntax error found on the way is reported at its real place;
the lines that were blanked are remembered so that checker errors they
caused (a name declared there is "undefined") can be left out.
"""
from __future__ import annotations

import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from nxc.cache import file_identity
from nxc.diagnostics import CompileError, Diagnostic, Diagnostics, Pos, SourceFile
from nxc.syntax import ast
from nxc.syntax.loader import ModuleGraph, parse_cached
from nxc.syntax.search import resolve_import
from nxc.syntax.parse import parse_source

MAX_RECOVERIES = 25


@dataclass
class ParsedModule:
    module: ast.Module | None        # None: the text could not be recovered
    syntax_errors: list[Diagnostic]  # at positions of the original text
    blanked: set[int]                # 1-based lines blanked to recover


@dataclass
class LoadedGraph:
    graph: ModuleGraph | None        # None when the root itself has no AST
    texts: dict[str, str]            # real path -> text that was analysed
    parsed: dict[str, ParsedModule]
    load_errors: list[Diagnostic] = field(default_factory=list)   # missing imports, unreadable files
    # (importing path, line, col of the import) -> the module file it names
    import_targets: dict[tuple[str, int, int], str] = field(default_factory=dict)


def read_text(path: str, overlay: dict[str, str] | None) -> str | None:
    """The editor's text for `path` if it is open, else the file's; None if unreadable."""
    if overlay and path in overlay:
        return overlay[path]
    return read_file(path)


# Files as last read, keyed by their signature (size, mtime, inode): a
# server reads the same unchanged modules at every edit, and the same text
# object keeps the parse cache's key cheap to hash and compare.
_FILES: "OrderedDict[str, tuple[tuple, str]]" = OrderedDict()
FILES_MAX = 4096


file_signature = file_identity       # (device, inode, size, mtime_ns), or None


def read_file(path: str) -> str | None:
    sig = file_signature(path)
    if sig is None:
        return None
    kept = _FILES.get(path)
    if kept is not None and kept[0] == sig:
        _FILES.move_to_end(path)
        return kept[1]
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    text = raw.decode("utf-8", errors="replace")
    text = text[1:] if text.startswith("\ufeff") else text
    _FILES[path] = (sig, text)
    if len(_FILES) > FILES_MAX:
        _FILES.popitem(last=False)
    return text


# A parse costs ~5 ms per 100 lines; an editor re-checks on every change, so
# the graph's unchanged modules come from here, the very objects: the
# checker leaves the AST as parsed (its findings go into side tables), and
# the checker's declaration reuse (nxc/check/reuse.py) takes a module's kept
# declarations only when it is the same AST object. Keyed by path and text;
# the least recently used go first past PARSES_MAX modules.
_PARSES: "OrderedDict[tuple[str, str], ParsedModule]" = OrderedDict()
PARSES_MAX = 1024


def parse_tolerant(path: str, text: str, saved: bool = False) -> ParsedModule:
    """saved=True: `text` is the file's on disk (not an editor's buffer),
    so its AST is the front end's, from its parse cache (nxc/syntax/loader.py
    parse_cached: this process's memory, then the cache folder's pickles),
    and is left there for it: the checker's undefined-name hint
    (nxc/check/defined_where.py) parses every module of a folder through
    that cache, and a find-references every module naming the word through
    this one, and whichever comes second parses nothing. A buffer changes
    at every key: it is parsed here only, never written to the disk cache."""
    key = (path, text)
    pm = _PARSES.get(key)
    if pm is not None:
        _PARSES.move_to_end(key)
        return pm
    pm = None
    if saved:
        try:
            pm = ParsedModule(parse_cached(SourceFile(path, text), Diagnostics()), [], set())
        except CompileError:
            pm = None               # a syntax error: recovered below
    if pm is None:
        pm = _parse_with_recovery(path, text)
    _PARSES[key] = pm
    if len(_PARSES) > PARSES_MAX:
        _PARSES.popitem(last=False)
    return pm


def _parse_with_recovery(path: str, text: str) -> ParsedModule:
    original = SourceFile(path, text)
    lines = text.split("\n")
    n_real = len(lines)                 # closers appended below the text are not its lines
    blanked: set[int] = set()           # lines changed in any way
    kept_braces: set[int] = set()       # ... of which only the braces are left
    per_item: dict[int, int] = {}       # first line of a top-level item -> lines blanked in it
    errors: list[Diagnostic] = []
    reported: set[int] = set()          # top-level declarations (first lines) with an error reported
    original_lines = list(lines)
    for _ in range(MAX_RECOVERIES + 1):
        diags = Diagnostics()
        try:
            module = parse_source(SourceFile(path, "\n".join(lines)), diags)
        except CompileError:
            first = diags.errors[0]
            line = first.pos.line if first.pos is not None else 1
            col = first.pos.col if first.pos is not None else 1
            m = _NEVER_CLOSED.search(first.message)
            if m:                       # `{` left open (while typing): close it after the text
                errors.append(Diagnostic("error", Pos(original, line, col), first.message))
                lines.append(m.group(1))
                continue
            if not 1 <= line <= n_real or (line in blanked and line not in kept_braces):
                return ParsedModule(None, errors, blanked)
            at = (line, col)
            if line not in blanked:
                line = _statement_start(lines, line, col)
                if line != at[0]:       # the statement before goes on: the mistake ends that line
                    at = (line, len(original.line_text(line).rstrip()) + 1)
            start, end = _item_range(original_lines, line, n_real)
            # Panic mode (Crafting Interpreters): one syntax error per
            # top-level declaration; what follows in it is often a cascade.
            if line not in blanked and start not in reported:
                reported.add(start)
                errors.append(Diagnostic("error", Pos(original, *at), first.message))
            per_item[start] = per_item.get(start, 0) + 1
            if per_item[start] > 3:
                # Line by line is not converging here: give up this one
                # declaration, keep the rest of the module.
                for n in range(start, end + 1):
                    lines[n - 1] = " " * len(lines[n - 1])
                    blanked.add(n)
                    kept_braces.discard(n)
            elif line in kept_braces:
                kept_braces.discard(line)
                lines[line - 1] = " " * len(lines[line - 1])
            else:
                blanked.add(line)
                kept_braces.add(line)
                lines[line - 1] = "".join(c if c in "{}" else " " for c in lines[line - 1])
            continue
        # The AST's positions name the original file (same lines, same columns).
        module.source = original
        return ParsedModule(module, errors, blanked)
    return ParsedModule(None, errors, blanked)


# An opener still open at the end of the text (an opener left open before
# a later statement is reported at the opener, whose line is blanked as usual).
_NEVER_CLOSED = re.compile(r"is never closed: expected '(.)' before the end of the file")
_TOP_LEVEL = re.compile(r"(func|extern|struct|const|type|var|import)\b")


def _item_range(lines: list[str], line: int, n_real: int) -> tuple[int, int]:
    """First and last line of the top-level declaration around `line`: from
    the last line at or above it that starts one (at column 1) to the line
    before the next one."""
    start = line
    while start > 1 and not _TOP_LEVEL.match(lines[start - 1]):
        start -= 1
    end = line
    while end < n_real and not _TOP_LEVEL.match(lines[end]):
        end += 1
    return start, end


def _statement_start(lines: list[str], line: int, col: int) -> int:
    """The line to blank for an error at (line, col): the error's own line,
    unless the error is the line's first token and the line before it goes
    on: the mistake is there (`x = a +` or `p.` then a new statement), not
    in the next statement. A line goes on unless its last token can end a
    statement (Go's rule, docs/language.md: a name, keyword, literal, `)`, `]`, `}`)."""
    text = lines[line - 1]
    if text[:col - 1].strip():
        return line
    prev = line - 1
    while prev >= 1 and (not lines[prev - 1].strip() or lines[prev - 1].strip().startswith("//")):
        prev -= 1
    last = lines[prev - 1].split("//", 1)[0].rstrip()[-1:] if prev >= 1 else ""
    if last and not (last.isalnum() or last in "_)]}\""):
        return prev
    return line


def load_graph(root: str, overlay: dict[str, str] | None = None,
               include: list[str] | None = None) -> LoadedGraph:
    """Every module reachable from `root`, parsed tolerantly; the order and
    the import chains are those of nxc.syntax.loader.load_program."""
    root = os.path.realpath(root)
    texts: dict[str, str] = {}
    parsed: dict[str, ParsedModule] = {}
    order: list[ast.Module] = []
    chains: dict[str, list[Pos]] = {root: []}
    load_errors: list[Diagnostic] = []
    import_targets: dict[tuple[str, int, int], str] = {}
    # for this load only (the files may change between loads): each import
    # resolved once, and folders' real paths (resolve_import's real_dirs)
    resolved: dict[tuple[str, str], tuple] = {}
    real_dirs: dict[str, str] = {}

    def visit(real: str, at: Pos | None) -> None:
        if real in parsed:
            return
        text = read_text(real, overlay)
        if text is None:
            load_errors.append(Diagnostic("error", at, f"cannot read '{real}'"))
            parsed[real] = ParsedModule(None, [], set())
            return
        texts[real] = text
        pm = parse_tolerant(real, text, saved=not (overlay and real in overlay))
        parsed[real] = pm
        if pm.module is None:
            return
        for imp in pm.module.imports:
            key = (imp.path, os.path.dirname(real))
            if key not in resolved:
                resolved[key] = resolve_import(imp.path, key[1], include, real_dirs)
            found, tried = resolved[key]
            if found is None:
                looked = "\n".join(f"  {d}" for d in tried)
                load_errors.append(Diagnostic("error", imp.pos,
                                              f"cannot find module \"{imp.path}\"; looked in:\n{looked}"))
                continue
            import_targets[(real, imp.pos.line, imp.pos.col)] = found
            if found not in chains:
                chains[found] = chains[real] + [imp.pos]
            visit(found, imp.pos)
        order.append(pm.module)

    visit(root, None)
    root_module = parsed[root].module
    graph = ModuleGraph(root_module, order, chains) if root_module is not None else None
    return LoadedGraph(graph, texts, parsed, load_errors, import_targets)
