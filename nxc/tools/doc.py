"""`nxc doc PATH... -o SITE`: static HTML module pages for .nx modules.

One page per module (each module of PATHs and every module they import),
in the shape of Nishi's own module pages: the title `NAME source`, the line
`module page · N lines · B B`, the header metadata, imports and importers,
an index of functions, consts, globals, types and structs (with their
layout), the gate's last result (`--results`, from `nxc test --json`), and
the highlighted source with an anchor per line (`#L42`) and per top-level
symbol (`#fn-nx_f32_add`, `#struct-S`, `#field-S.f`, ...) where every name is
a link to its definition, in this module or another one; the errors of a
module that does not load or check, each linked to its line. `index.html`
lists the modules, and searches their symbols, with one filter box
(`index.html?q=kv` opens it filtered).

Every href is built by `href()`: relative, each path segment
percent-encoded and starting with `./` or `../`, so no file name (`#`, `?`,
`%`, `javascript:...`) can change what a link means; attributes are
HTML-escaped (the templates' autoescape, html.escape here).

Plain files: no server, no external assets (styles and the filter's script
are inside each page), so the site works from file://.

The names and links come from nxc/tools/index.py (the front end and the
checker); the colours from the `nx` Pygments lexer (nxc/tools/pygments_lexer.py).
"""
from __future__ import annotations

import html
import json
import os
import posixpath
import re
import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pygments.token import Comment, Keyword, Name, Number, Operator, String

from nxc.diagnostics import display_path
from nxc.tools.index import Definition, GraphIndex, Loc, ModuleIndex, build_index
from nxc.tools.pygments_lexer import NxLexer

TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".nxc-cache"}


class DocError(Exception):
    """A mistake on the command line (a path that is not there, no modules)."""


@dataclass
class Page:
    path: str                   # the module file (real path)
    href: str                   # its page, relative to the site root
    index: GraphIndex           # the analysis with this module as root
    results: list[dict] = field(default_factory=list)

    @property
    def module(self) -> ModuleIndex:
        return self.index.modules[self.path]

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @cached_property
    def anchors(self) -> dict[Loc, str]:
        """Definition -> its anchor on this page (`fn-NAME`, ...): one per
        top-level symbol and struct field; a second definition of a name (a
        module with errors) keeps only its line anchor."""
        out: dict[Loc, str] = {}
        taken: set[str] = set()
        for d in self.module.definitions:
            a = symbol_anchor(d)
            if a and a not in taken:
                taken.add(a)
                out[d.loc] = a
        return out

    def fragment(self, loc: Loc) -> str:
        """The anchor a link to the definition at `loc` goes to."""
        return self.anchors.get(loc) or f"L{loc.line}"


# ---------------------------------------------------------------- collection
def find_modules(paths: list[str]) -> list[str]:
    """Real paths of the .nx files named by `paths` (folders: recursively)."""
    found: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for folder, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                found += [os.path.realpath(os.path.join(folder, f)) for f in sorted(files) if f.endswith(".nx")]
        elif os.path.isfile(p):
            found.append(os.path.realpath(p))
        else:
            raise DocError(f"no such file or folder: '{p}'")
    out = list(dict.fromkeys(found))
    if not out:
        raise DocError("no .nx modules found in " + ", ".join(f"'{p}'" for p in paths))
    return out


def _page_names(modules: list[str], given: list[str], extra: list[str]) -> dict[str, str]:
    """Module path -> page path in the site: the tree of the given folders,
    and `imported/NAME.html` for imported modules outside them."""
    bases = [os.path.realpath(p if os.path.isdir(p) else os.path.dirname(p) or ".") for p in given]
    base = os.path.commonpath(bases) if bases else os.getcwd()
    out: dict[str, str] = {}
    taken: set[str] = set()
    for m in modules + extra:
        rel = os.path.relpath(m, base)
        if m in extra and (rel.startswith("..") or os.path.isabs(rel)):
            rel = os.path.join("imported", os.path.basename(m))
        page = rel[:-3] + ".html" if rel.endswith(".nx") else rel + ".html"
        stem, n = page[:-5], 2
        while page.lower() in taken or page == "index.html":
            page = f"{stem}-{n}.html"
            n += 1
        taken.add(page.lower())
        out[m] = page.replace(os.sep, "/")
    return out


def load_results(path: str | None) -> dict[str, list[dict]]:
    """`nxc test --json` lines, by the real path of the module they are about."""
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise DocError(f"cannot read results '{path}': {exc.strerror or exc}") from None
    out: dict[str, list[dict]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            if isinstance(r, dict) and r.get("event", "result") != "result":
                continue        # the run's final {"event": "summary"} line is about no module
            mod = r["path"]
        except (ValueError, KeyError, TypeError):
            raise DocError(f"{path}:{n}: not a result line of 'nxc test --json'") from None
        # `path` is as the runner was given it: relative to where it ran
        # (usually here), else to the results file.
        for cand in (mod, os.path.join(os.path.dirname(os.path.abspath(path)), mod)):
            if os.path.exists(cand):
                mod = cand
                break
        out.setdefault(os.path.realpath(mod), []).append(r)
    return out


# ---------------------------------------------------------------- rendering
_CLASS = ((Comment.Special, "cm meta"), (Comment, "cm"), (Keyword.Type, "ty"), (Keyword.Constant, "lit"),
          (Keyword, "kw"), (Name.Function, "fn"), (Name.Class, "ty"), (Name.Constant, "cn"), (Name, "nm"),
          (String, "str"), (Number, "num"), (Operator, "op"))


_CLASS_OF: dict = {}


def _css_class(tok) -> str:
    cls = _CLASS_OF.get(tok)
    if cls is None:
        cls = next((c for t, c in _CLASS if tok in t), "")
        _CLASS_OF[tok] = cls
    return cls


_ANCHOR_PREFIX = {"func": "fn", "extern": "fn", "const": "const", "global": "global", "type": "type",
                  "struct": "struct", "field": "field"}
SYMBOL_KINDS = ("func", "extern", "struct", "const", "global", "type")      # what the index searches


def symbol_anchor(d: Definition) -> str:
    """`fn-nx_f32_add`, `struct-NxPagedSeq`, `field-NxPagedSeq.seq_len`, ...;
    "" for a parameter or a local (they are linked to their line)."""
    prefix = _ANCHOR_PREFIX.get(d.kind)
    if prefix is None:
        return ""
    return f"{prefix}-{d.container}.{d.name}" if d.kind == "field" else f"{prefix}-{d.name}"


def href(from_page: str, to_page: str, fragment: str = "") -> str:
    """The link from one page of the site to another (site-relative paths,
    `/`-separated), and to an anchor on it. Relative, and never a scheme:
    each path segment is percent-encoded (`:` `#` `?` `%` `<` quotes and
    spaces included), and a path starts with `./` or `../`, so a module
    named `javascript:alert(1).nx` links to `./javascript%3Aalert%281%29.html`."""
    frag = "#" + quote(fragment, safe="") if fragment else ""
    if from_page == to_page and frag:
        return frag
    rel = posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")
    # A file name that is not UTF-8 keeps its bytes (surrogateescape), percent-encoded.
    path = "/".join(seg if seg == ".." else quote(seg, safe="", errors="surrogateescape") for seg in rel.split("/"))
    return (path if path.startswith("../") else "./" + path) + frag


def render_source(page: Page, pages: dict[str, Page]) -> list[str]:
    """The module's text as one HTML string per line: highlighted, and each
    name a link to its definition (`page.html#L42`)."""
    mi = page.module
    # (line, col) -> (length, opening tag); the tag wraps that token's text
    marks: dict[tuple[int, int], tuple[int, str]] = {}
    for o in mi.occurrences:
        if o.target is None or o.kind == "expr":
            continue
        if o.loc == o.target:                       # the defining token itself: its anchor
            anchor = page.anchors.get(o.loc)
            ident = f' id="{html.escape(anchor)}"' if anchor else ""
            marks[(o.loc.line, o.loc.col)] = (o.length, f'<span class="def"{ident}>')
            continue
        target_page = pages.get(o.target.path)
        if target_page is None:
            continue
        if o.kind == "import":
            link = href(page.href, target_page.href)
        else:
            link = href(page.href, target_page.href, target_page.fragment(o.target))
        d = target_page.index.definition(o.target)
        title = d.detail if d is not None else os.path.basename(o.target.path)
        marks[(o.loc.line, o.loc.col)] = (o.length, f'<a href="{html.escape(link)}" title="{html.escape(title)}">')
    lines: list[str] = [""]
    line, col = 1, 1
    for tok, value in NxLexer().get_tokens(mi.text):
        cls = _css_class(tok)
        for i, part in enumerate(value.split("\n")):
            if i > 0:
                lines.append("")
                line, col = line + 1, 1
            if not part:
                continue
            text = html.escape(part)
            mark = marks.get((line, col))
            if mark is not None and mark[0] == len(part):
                text = mark[1] + text + ("</span>" if mark[1].startswith("<span") else "</a>")
            if cls:
                text = f'<span class="{cls}">{text}</span>'
            lines[-1] += text
            col += len(part)
    if mi.text.endswith("\n"):
        lines.pop()          # the newline ends the last line; it starts none
    return lines


def _gate_summary(results: list[dict]) -> list[dict]:
    out = []
    for r in results:
        out.append({"status": r.get("status", "?"), "backend": r.get("backend", ""),
                    "kind": r.get("kind", ""), "seconds": r.get("seconds"),
                    "message": r.get("message", ""), "line": r.get("line"), "passed": bool(r.get("passed"))})
    return out


def _module_context(page: Page, pages: dict[str, Page]) -> dict:
    mi = page.module
    text = mi.text
    defs = mi.definitions
    fields: dict[str, list] = {}
    for d in defs:
        if d.kind == "field":
            fields.setdefault(d.container, []).append(d)
    st_layout = {}
    if page.index.result is not None:
        for d in defs:
            if d.kind == "struct":
                st = page.index.result.struct(d.name)
                if st is not None:
                    st_layout[d.name] = st
    imports = []
    for o in mi.imports:
        target = pages.get(o.import_path) if o.import_path else None
        imports.append({"name": os.path.basename(o.import_path) if o.import_path else _written(text, o),
                        "href": href(page.href, target.href) if target else None})
    importers = []
    for p in sorted(pages.values(), key=lambda p: p.href):
        if any(i.import_path == page.path for i in p.module.imports):
            importers.append({"name": p.name, "href": href(page.href, p.href)})
    header = mi.module.header if mi.module is not None else {}
    return {
        "name": page.name,
        "display": display_path(page.path),
        "n_lines": len(text.splitlines()),
        "n_bytes": len(text.encode("utf-8")),
        "header": header,
        "summary": _summary(text),
        "imports": imports,
        "importers": importers,
        "functions": [d for d in defs if d.kind in ("func", "extern")],
        "consts": [d for d in defs if d.kind == "const"],
        "globals": [d for d in defs if d.kind == "global"],
        "types": [d for d in defs if d.kind == "type"],
        "structs": [(d, st_layout.get(d.name)) for d in defs if d.kind == "struct"],
        "results": _gate_summary(page.results),
        "errors": page_errors(page, pages),
        "lines": render_source(page, pages),
        "index_href": href(page.href, "index.html"),
        "fragment": page.fragment,
    }


def _written(text: str, o) -> str:
    """An import's string as written (a module that was not found)."""
    line = text.split("\n")[o.loc.line - 1] if 0 < o.loc.line <= text.count("\n") + 1 else ""
    return line[o.loc.col - 1:o.loc.col - 1 + o.length].strip('"') or "?"


def page_errors(page: Page, pages: dict[str, Page]) -> list[dict]:
    """What `nxc check` would say about the module, each item linked to its
    line: syntax errors, imports that cannot be loaded, checker errors and
    warnings; those inside an imported module are said to be there and
    linked to its page. A file with syntax errors shows those only (as
    `nxc check` does; the checker saw it with the bad lines blanked)."""
    gi = page.index
    syntax = {p: pm.syntax_errors for p, pm in gi.loaded.parsed.items() if pm.syntax_errors}
    diags = [d for errs in syntax.values() for d in errs] + list(gi.loaded.load_errors)
    if gi.result is not None:
        diags += [d for d in gi.result.diagnostics if d.pos is None or d.pos.file.path not in syntax]
    out, seen = [], set()
    for d in diags:
        where = d.pos.file.path if d.pos is not None else page.path
        key = (where, d.pos and d.pos.line, d.pos and d.pos.col, d.message)
        if key in seen:
            continue
        seen.add(key)
        item = {"severity": d.severity, "message": d.message, "where": "", "href": None, "module": ""}
        if d.pos is not None:
            item["where"] = f"{d.pos.line}:{d.pos.col}"
            target = pages.get(where)
            if target is not None:
                item["href"] = href(page.href, target.href, f"L{d.pos.line}")
            if where != page.path:
                item["module"] = os.path.basename(where)
        out.append(item)
    # this module's own first, in line order; then the imported modules'
    out.sort(key=lambda e: (e["module"] != "", e["module"], [int(x) for x in e["where"].split(":") if x]))
    return out


_META_LINE = re.compile(r"//\s*[a-z][a-z0-9_]*:\s+\S")      # as nxc.syntax.parse reads the header


def _summary(text: str) -> str:
    """The header's first paragraph, without the file name it starts with
    (it ends at a blank `//` line or at the `// key: value` metadata)."""
    words = []
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("//") or not line[2:].strip() or _META_LINE.match(line):
            break
        words.append(line[2:].strip())
    first = " ".join(words)
    if " -- " in first[:80]:
        first = first.split(" -- ", 1)[1]
    return first if len(first) <= 300 else first[:297].rsplit(" ", 1)[0] + " ..."


def index_symbols(page: Page) -> list[dict]:
    """The module's top-level symbols as the index's search lists them:
    each linked to its anchor on the module's page."""
    out = []
    for d in page.module.definitions:
        if d.kind in SYMBOL_KINDS:
            doc = d.doc.strip().split("\n", 1)[0] if d.doc else ""
            out.append({"name": d.name, "kind": d.kind,
                        "module": page.name, "detail": d.detail, "doc": doc,
                        "href": href("index.html", page.href, page.fragment(d.loc))})
    return out


def build_site(paths: list[str], out: str, results_file: str | None = None,
               include: list[str] | None = None) -> list[Page]:
    """Write the site; the pages, in index order."""
    roots = find_modules(paths)
    results = load_results(results_file)
    indexes: dict[str, GraphIndex] = {}
    queue, extra = list(roots), []
    while queue:
        path = queue.pop(0)
        if path in indexes:
            continue
        indexes[path] = build_index(path, include=include, walk_imports=False)
        for o in indexes[path].modules[path].imports:
            if o.import_path and o.import_path not in indexes and o.import_path not in queue:
                queue.append(o.import_path)
                if o.import_path not in roots:
                    extra.append(o.import_path)
    names = _page_names(roots, paths, extra)
    pages = {p: Page(p, names[p], indexes[p], results.get(p, [])) for p in roots + extra}
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["j2", "html"]),
                      trim_blocks=True, lstrip_blocks=True)
    module_t = env.get_template("module.html.j2")
    for page in pages.values():
        target = os.path.join(out, page.href)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8", errors="replace") as f:     # undecodable name bytes shown as ?
            f.write(module_t.render(**_module_context(page, pages)))
    rows, symbols = [], []
    for page in sorted(pages.values(), key=lambda p: p.href):
        mi = page.module
        symbols += index_symbols(page)
        rows.append({"name": page.name, "href": href("index.html", page.href), "display": display_path(page.path),
                     "n_lines": len(mi.text.splitlines()), "n_bytes": len(mi.text.encode("utf-8")),
                     "summary": _summary(mi.text), "imported": page.path in extra,
                     "n_functions": sum(d.kind == "func" for d in mi.definitions),
                     "results": _gate_summary(page.results)})
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8", errors="replace") as f:
        f.write(env.get_template("index.html.j2").render(
            rows=rows, with_results=bool(results),
            symbols=sorted(symbols, key=lambda r: (r["name"].lower(), r["name"], r["module"]))))
    return list(pages.values())


def main(args) -> int:
    """`nxc doc` (nxc/cli.py parses the arguments)."""
    start = time.perf_counter()
    try:
        pages = build_site(args.paths, args.output, args.results, args.include)
    except DocError as exc:
        print(f"nxc: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:          # the output folder cannot be made or written
        print(f"nxc: error: cannot write the site to '{args.output}': {exc.strerror or exc}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - start
    print(f"wrote {len(pages)} module page{'s' if len(pages) != 1 else ''} and index.html "
          f"to {args.output} in {seconds:.2f} s")
    return 0
