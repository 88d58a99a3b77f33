"""Names and their definitions in a checked import graph, for editor tools.

From the ASTs of a graph and the checker's results (through nxc/tools/checked.py
only), one pass builds per module:
  - definitions: every top-level name, struct field, parameter and local,
    with a one-line description (a signature, a const's value, a struct's
    layout) and the `//` comment block above it;
  - occurrences: every name token with the definition it refers to (uses
    and the defining token itself), every field name after `.`, every type
    name, every import string, and operators and literals with their type;
  - scopes: the blocks of each function and the names they declare, so a
    tool can tell which locals are visible at a position.
Positions are (path, line, col), 1-based, col counted in characters.
The language server (nxc/tools/lsp.py) and the module pages (nxc/tools/doc.py)
both read this index.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field

from nxc.check.types import StructType, Type
from nxc.syntax.printer import signature, type_text
from nxc.syntax import ast
from nxc.tools import checked
from nxc.tools.workspace import LoadedGraph, load_graph


@dataclass(frozen=True, order=True)
class Loc:
    path: str
    line: int
    col: int


@dataclass
class Definition:
    loc: Loc
    name: str
    kind: str              # func extern const global type struct field param local
    detail: str            # one line: `func f(a: i64) -> i64`, `const N: i64 = 4`, ...
    doc: str = ""          # the // comment block right above, without the slashes
    type: Type | None = None
    end_line: int = 0      # last line of the declaration (a function's closing brace)
    container: str = ""    # the struct of a field, the function of a local or parameter
    layout: str = ""       # structs: size, alignment and one line per field with its offset
    inferred: bool = False  # a local declared without a type (`let x = ...`): its type was inferred
    offset: int | None = None   # fields: the offset in the struct, once laid out


@dataclass
class Occurrence:
    loc: Loc
    length: int
    kind: str              # name | field | type | import | expr
    target: Loc | None = None       # the definition it refers to
    type_text: str = ""             # the type of the expression here, if known
    value: int | None = None        # a constant expression's value
    import_path: str | None = None  # imports: the module file


@dataclass
class Scope:
    start: tuple[int, int]          # (line, col) of the `{` or of the function name
    end: tuple[int, int]            # (line, col) of the closing `}`
    names: list[tuple[str, Loc, Type | None]] = field(default_factory=list)


@dataclass
class ModuleIndex:
    path: str
    text: str
    module: ast.Module | None
    definitions: list[Definition] = field(default_factory=list)
    occurrences: list[Occurrence] = field(default_factory=list)   # sorted by position
    scopes: list[Scope] = field(default_factory=list)
    imports: list[Occurrence] = field(default_factory=list)
    _starts: list[tuple[int, int]] = field(default_factory=list, repr=False)

    def occurrence_at(self, line: int, col: int) -> Occurrence | None:
        """The occurrence whose text covers (line, col), or ends right there
        (an editor's cursor is often just after the word)."""
        i = bisect.bisect_right(self._starts, (line, col)) - 1
        best = None
        for j in (i, i - 1):
            if 0 <= j < len(self.occurrences):
                o = self.occurrences[j]
                if o.loc.line == line and o.loc.col <= col <= o.loc.col + o.length:
                    if col < o.loc.col + o.length:
                        return o
                    best = best or o
        return best

    def visible_locals(self, line: int, col: int) -> list[tuple[str, Loc, Type | None]]:
        """Parameters and locals in scope at (line, col): declared before it
        in a block that contains it; inner declarations shadow outer ones."""
        here = (line, col)
        seen: dict[str, tuple[str, Loc, Type | None]] = {}
        for scope in sorted((s for s in self.scopes if s.start <= here <= s.end), key=lambda s: s.start):
            for entry in scope.names:
                if (entry[1].line, entry[1].col) < here:
                    seen[entry[0]] = entry
        return list(seen.values())


@dataclass
class GraphIndex:
    root: str
    loaded: LoadedGraph
    result: checked.CheckResult | None
    modules: dict[str, ModuleIndex]
    definitions: dict[Loc, Definition]
    # modules not walked yet (build_index(lazy=True)): walked when a
    # definition of theirs is asked for
    unwalked: set[str] = field(default_factory=set)

    def definition(self, loc: Loc | None) -> Definition | None:
        if loc is None:
            return None
        if loc.path in self.unwalked:
            self.walk(loc.path)
        return self.definitions.get(loc)

    def walk(self, path: str) -> None:
        self.unwalked.discard(path)
        mi = self.modules[path]
        if mi.module is not None:
            _Walker(self, mi, self.result).module(mi.module)
        mi.occurrences.sort(key=lambda o: (o.loc.line, o.loc.col))
        mi._starts = [(o.loc.line, o.loc.col) for o in mi.occurrences]
        for d in mi.definitions:
            self.definitions[d.loc] = d

    def importers(self, path: str) -> list[str]:
        return sorted(p for p, m in self.modules.items()
                      if any(i.import_path == path for i in m.imports))


def build_index(root: str, overlay: dict[str, str] | None = None,
                include: list[str] | None = None, walk_imports: bool = True,
                loaded: LoadedGraph | None = None, bodies=None, lazy: bool = False) -> GraphIndex:
    """walk_imports=False indexes the root module only (the module pages
    index each module as its own root, and need no second walk of imports).
    `loaded`: the graph, when the caller loaded it already. `bodies`: as
    checked.check_graph's (default: every module's). lazy=True: the
    imported modules are walked when one of their definitions is asked for
    (a language server, at every keystroke, needs the root's only)."""
    loaded = loaded if loaded is not None else load_graph(root, overlay, include)
    result = checked.check_graph(loaded.graph, bodies) if loaded.graph is not None else None
    index = GraphIndex(os.path.realpath(root), loaded, result, {}, {})
    for path, pm in loaded.parsed.items():
        text = loaded.texts.get(path, "")
        index.modules[path] = ModuleIndex(path, text, pm.module)
        if path == index.root or (walk_imports and not lazy):
            index.walk(path)
        elif walk_imports:
            index.unwalked.add(path)
    return index


# ---------------------------------------------------------------- text helpers
_BANNER = re.compile(r"//\s*[=\-*#~]{3,}")


def doc_comment(text_lines: list[str], line: int) -> str:
    """The `//` lines right above line `line` (1-based), without the module
    header (the file's leading block) and without section banners."""
    out: list[str] = []
    i = line - 2
    while i >= 0 and text_lines[i].strip().startswith("//"):
        out.append(text_lines[i].strip())
        i -= 1
    if i < 0:                       # the block starts the file: it is the header
        return ""
    out.reverse()
    out = [s for s in out if not _BANNER.match(s)]
    return "\n".join(s[2:].removeprefix(" ") for s in out).strip()


def _loc_of(pos) -> Loc:
    return Loc(pos.file.path, pos.line, pos.col)


def _show_type(t) -> str:
    return "?" if t is None else str(t)


def struct_layout(st: StructType) -> str:
    rows = [f"size {st.size} B, align {st.align}"]
    rows += [f"  +{f.offset:<4} {f.name}: {f.type} ({f.type.size} B)" for f in st.fields]
    return "\n".join(rows)


# ---------------------------------------------------------------- the walk
class _Walker:
    def __init__(self, index: GraphIndex, mi: ModuleIndex, result: checked.CheckResult | None):
        self.index, self.mi, self.result = index, mi, result
        self.lines = mi.text.split("\n")
        self.func = ""

    def add_def(self, pos, name: str, kind: str, detail: str, **kw) -> Definition:
        d = Definition(_loc_of(pos), name, kind, detail, **kw)
        self.mi.definitions.append(d)
        self.mi.occurrences.append(Occurrence(d.loc, len(name), "name", d.loc,
                                              type_text=_show_type(d.type) if d.type is not None else ""))
        return d

    def top_loc(self, name: str, kinds: tuple[str, ...] | None = None) -> Loc | None:
        if self.result is None:
            return None
        sym = self.result.top_symbol(name)
        if sym is None or (kinds is not None and sym.kind not in kinds):
            return None
        return _loc_of(sym.pos)

    # ---- top level ----
    def module(self, m: ast.Module) -> None:
        for item in m.items:
            if isinstance(item, ast.Import):
                self.import_(item)
            elif isinstance(item, ast.FuncDecl):
                self.func_decl(item)
            elif isinstance(item, ast.ConstDecl):
                self.const_decl(item)
            elif isinstance(item, ast.GlobalDecl):
                self.global_decl(item)
            elif isinstance(item, ast.TypeAlias):
                target = self.result.alias_target(item.name) if self.result else None
                shown = f" ({target})" if target is not None and str(target) != type_text(item.target) else ""
                self.add_def(item.pos, item.name, "type", f"type {item.name} = {type_text(item.target)}{shown}",
                             doc=self.doc(item.pos.line), type=target, end_line=item.pos.line)
                self.type_expr(item.target)
            elif isinstance(item, ast.StructDecl):
                self.struct_decl(item)

    def doc(self, line: int) -> str:
        return doc_comment(self.lines, line)

    def import_(self, item: ast.Import) -> None:
        line = self.lines[item.pos.line - 1] if item.pos.line <= len(self.lines) else ""
        quoted = '"' + item.path + '"'
        col = line.find(quoted, max(item.pos.col - 1, 0)) + 1
        if col <= 0:
            return
        found = self.index.loaded.import_targets.get((self.mi.path, item.pos.line, item.pos.col))
        occ = Occurrence(Loc(self.mi.path, item.pos.line, col), len(quoted), "import",
                         Loc(found, 1, 1) if found else None, import_path=found)
        self.mi.occurrences.append(occ)
        self.mi.imports.append(occ)

    def func_decl(self, item: ast.FuncDecl) -> None:
        sym = self.result.top_symbol(item.name) if self.result else None
        ftype = sym.type if sym is not None and sym.decl is item else None
        end = item.body.end_pos.line if item.body is not None and item.body.end_pos else item.pos.line
        self.add_def(item.pos, item.name, "extern" if item.is_extern else "func", signature(item),
                     doc=self.doc(item.pos.line), type=ftype, end_line=end)
        self.func = item.name
        scope = Scope((item.pos.line, item.pos.col),
                      (item.body.end_pos.line, item.body.end_pos.col) if item.body is not None and item.body.end_pos
                      else (item.pos.line, 10 ** 6))
        for i, p in enumerate(item.params):
            pt = ftype.params[i] if ftype is not None and i < len(ftype.params) else None
            d = self.add_def(p.pos, p.name, "param", f"param {p.name}: {type_text(p.type_expr)}",
                             type=pt, container=item.name, end_line=p.pos.line)
            scope.names.append((p.name, d.loc, pt))
            self.type_expr(p.type_expr)
        if item.ret is not None:
            self.type_expr(item.ret)
        self.mi.scopes.append(scope)
        if item.body is not None:
            self.block(item.body)
        self.func = ""

    def const_decl(self, item: ast.ConstDecl) -> None:
        sym = self.result.top_symbol(item.name) if self.result else None
        mine = sym is not None and sym.decl is item
        value = sym.value if mine else checked.expr_const(self.result, item.value)
        ty = sym.type if mine else None
        shown = type_text(item.type_expr) if item.type_expr is not None else _show_type(ty)
        detail = f"const {item.name}: {shown}" + (f" = {_show_value(value, ty)}" if value is not None else "")
        self.add_def(item.pos, item.name, "const", detail, doc=self.doc(item.pos.line), type=ty,
                     end_line=item.pos.line)
        if item.type_expr is not None:
            self.type_expr(item.type_expr)
        self.expr(item.value)

    def global_decl(self, item: ast.GlobalDecl) -> None:
        sym = self.result.top_symbol(item.name) if self.result else None
        ty = sym.type if sym is not None and sym.decl is item else None
        self.add_def(item.pos, item.name, "global", f"var {item.name}: {type_text(item.type_expr)}",
                     doc=self.doc(item.pos.line), type=ty, end_line=item.pos.line)
        self.type_expr(item.type_expr)
        self.expr(item.value)

    def struct_decl(self, item: ast.StructDecl) -> None:
        st = self.result.struct(item.name) if self.result else None
        last = max([f.pos.line for f in item.fields] + [item.pos.line])
        end = last
        while end < len(self.lines) and "}" not in self.lines[end - 1][(item.pos.col if end == item.pos.line else 0):]:
            end += 1
        detail = f"struct {item.name}" + (f" (size {st.size} B, align {st.align})" if st else "")
        self.add_def(item.pos, item.name, "struct", detail, doc=self.doc(item.pos.line), type=st,
                     end_line=end, layout=struct_layout(st) if st else "")
        for f in item.fields:
            sf = st.field(f.name) if st else None
            where = f" at offset {sf.offset}, {sf.type.size} B" if sf else ""
            self.add_def(f.pos, f.name, "field", f"field {item.name}.{f.name}: {type_text(f.type_expr)}{where}",
                         doc=_trailing_or_above(self.lines, f.pos.line), type=sf.type if sf else None,
                         container=item.name, end_line=f.pos.line, offset=sf.offset if sf else None)
            self.type_expr(f.type_expr)

    def type_expr(self, t) -> None:
        while isinstance(t, ast.TypePointer):
            t = t.target
        if isinstance(t, ast.TypeName):
            target = self.top_loc(t.name, ("type", "struct"))
            self.mi.occurrences.append(Occurrence(_loc_of(t.pos), len(t.name), "type", target))

    # ---- statements ----
    def block(self, b: ast.Block) -> None:
        end = (b.end_pos.line, b.end_pos.col) if b.end_pos else (10 ** 9, 0)
        scope = Scope((b.pos.line, b.pos.col), end)
        self.mi.scopes.append(scope)
        for s in b.stmts:
            self.stmt(s, scope)

    def stmt(self, s, scope: Scope) -> None:
        if isinstance(s, ast.VarDecl):
            if s.type_expr is not None:
                self.type_expr(s.type_expr)
            self.expr(s.value)
            info = checked.declared_symbol(self.result, s)
            ty = info.type if info is not None else None
            shown = type_text(s.type_expr) if s.type_expr is not None else _show_type(ty)
            d = self.add_def(s.pos, s.name, "local", f"{'var' if s.mutable else 'let'} {s.name}: {shown}",
                             type=ty, container=self.func, end_line=s.pos.line, inferred=s.type_expr is None)
            scope.names.append((s.name, d.loc, ty))
        elif isinstance(s, ast.Assign):
            self.expr(s.target)
            self.expr(s.value)
        elif isinstance(s, ast.If):
            self.expr(s.cond)
            self.block(s.then)
            if isinstance(s.orelse, ast.Block):
                self.block(s.orelse)
            elif s.orelse is not None:
                self.stmt(s.orelse, scope)
        elif isinstance(s, ast.While):
            self.expr(s.cond)
            self.block(s.body)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                self.expr(s.value)
        elif isinstance(s, ast.ExprStmt):
            self.expr(s.expr)
        elif isinstance(s, ast.Block):
            self.block(s)

    # ---- expressions ----
    def expr(self, e) -> None:
        ty = checked.expr_type(self.result, e)
        shown = _show_type(ty) if ty is not None else ""
        const = checked.expr_const(self.result, e)
        occs = self.mi.occurrences
        if isinstance(e, ast.Name):
            info = checked.name_symbol(self.result, e)
            target = _loc_of(info.pos) if info is not None else self.top_loc(e.ident)
            occs.append(Occurrence(_loc_of(e.pos), len(e.ident), "name", target, shown, const))
            return
        if isinstance(e, ast.FieldAccess):
            self.expr(e.base)
            st = checked.struct_of_pointer(checked.expr_type(self.result, e.base))
            sf = st.field(e.name) if st is not None else None
            target = _loc_of(sf.pos) if sf is not None and sf.pos is not None else None
            occs.append(Occurrence(_loc_of(e.name_pos or e.pos), len(e.name), "field", target, shown))
            return
        if isinstance(e, ast.IntLit):
            occs.append(Occurrence(_loc_of(e.pos), len(e.text or str(e.value)), "expr", None, shown, const))
            return
        if isinstance(e, (ast.Binary, ast.Unary)):
            occs.append(Occurrence(_loc_of(e.pos), len(e.op), "expr", None, shown, const))
        elif isinstance(e, ast.Cast):
            self.type_expr(e.target)
        elif isinstance(e, ast.SizeOf):
            self.type_expr(e.target)
            return
        for sub in ast.subexpressions(e):
            self.expr(sub)
        if isinstance(e, ast.Call):
            self.expr(e.func)


def _trailing_or_above(lines: list[str], line: int) -> str:
    """A field's comment: after it on its line, else the block above it."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if "//" in text:
        return text.split("//", 1)[1].strip()
    return doc_comment(lines, line)


def _show_value(value: int, ty) -> str:
    if value is None:
        return "?"
    if str(ty) == "bool":
        return "true" if value else "false"
    if abs(value) >= 256:
        return f"{value} (0x{value & 0xFFFFFFFFFFFFFFFF:X})"
    return str(value)


# ---------------------------------------------------------------- names only
def name_uses(module: ast.Module, name: str, types: bool) -> tuple[list[Loc], bool]:
    """Where `module` spells `name` as a name the walker above records
    (an `ast.Name`; with types=True also a type name), without a check: the
    language server's references ask this of every workspace file, and a
    check and a full walk per file cost four times its parse.

    The second value says whether `name` is declared in the module as a
    parameter or a local: then some of these uses may refer to it, and the
    caller must take the checked analysis. Otherwise each use refers to
    the graph's top-level `name` (the checker looks a name up in the
    function's scopes, then at top level: nxc/check/base.py). The
    traversal follows _Walker's, node kind for node kind, so that both
    find the same places (tests/test_lsp_refs.py compares them)."""
    found: list[Loc] = []
    shadowed = False

    def type_expr(t) -> None:
        while isinstance(t, ast.TypePointer):
            t = t.target
        if types and isinstance(t, ast.TypeName) and t.name == name:
            found.append(_loc_of(t.pos))

    def expr(e) -> None:
        todo = [e]
        while todo:
            e = todo.pop()
            if isinstance(e, ast.Name):
                if e.ident == name:
                    found.append(_loc_of(e.pos))
                continue
            if isinstance(e, (ast.Cast, ast.SizeOf)):
                type_expr(e.target)
                if isinstance(e, ast.SizeOf):
                    continue
            todo.extend(ast.subexpressions(e))
            if isinstance(e, ast.Call):
                todo.append(e.func)

    def block(b: ast.Block) -> None:
        nonlocal shadowed
        todo: list = list(b.stmts)
        while todo:
            s = todo.pop()
            if isinstance(s, ast.VarDecl):
                if s.type_expr is not None:
                    type_expr(s.type_expr)
                expr(s.value)
                shadowed = shadowed or s.name == name
            elif isinstance(s, ast.Assign):
                expr(s.target)
                expr(s.value)
            elif isinstance(s, ast.If):
                expr(s.cond)
                todo.extend(s.then.stmts)
                if isinstance(s.orelse, ast.Block):
                    todo.extend(s.orelse.stmts)
                elif s.orelse is not None:
                    todo.append(s.orelse)
            elif isinstance(s, ast.While):
                expr(s.cond)
                todo.extend(s.body.stmts)
            elif isinstance(s, ast.Return):
                if s.value is not None:
                    expr(s.value)
            elif isinstance(s, ast.ExprStmt):
                expr(s.expr)
            elif isinstance(s, ast.Block):
                todo.extend(s.stmts)

    for item in module.items:
        if isinstance(item, ast.FuncDecl):
            for p in item.params:
                shadowed = shadowed or p.name == name
                type_expr(p.type_expr)
            if item.ret is not None:
                type_expr(item.ret)
            if item.body is not None:
                block(item.body)
        elif isinstance(item, (ast.ConstDecl, ast.GlobalDecl)):
            if item.type_expr is not None:
                type_expr(item.type_expr)
            expr(item.value)
        elif isinstance(item, ast.TypeAlias):
            type_expr(item.target)
        elif isinstance(item, ast.StructDecl):
            for f in item.fields:
                type_expr(f.type_expr)
    return found, shadowed


def top_definitions(module: ast.Module, name: str) -> list[tuple[Loc, str]]:
    """Each top-level declaration of `name` in `module` that the checker
    enters in the graph's namespace (nxc/check/decls.py: a `main` function
    is every module's own), with its kind."""
    out: list[tuple[Loc, str]] = []
    for item in module.items:
        if isinstance(item, ast.Import) or getattr(item, "name", None) != name:
            continue
        if isinstance(item, ast.FuncDecl):
            if item.name == "main" and not item.is_extern:
                continue
            kind = "extern" if item.is_extern else "func"
        else:
            kind = {ast.ConstDecl: "const", ast.GlobalDecl: "global", ast.TypeAlias: "type",
                    ast.StructDecl: "struct"}.get(type(item))
            if kind is None:
                continue
        out.append((_loc_of(item.pos), kind))
    return out
