"""Stubs for missing imports: what a ported module needs from a module we lack.

For every `import` that cannot be found, the names the module uses from it
(names no loaded module defines) are collected with the signature their uses
imply: a function's parameter types from its arguments and its result type
from how the value is used (none for a call used as a statement), a struct's
fields from the fields accessed, a constant's type from its context. The
checker is the oracle: the module is checked against the modules that exist
plus provisional stubs, the types it gives the surrounding expressions pin
the missing names, and the stubs are refined until nothing changes. Where a
use does not pin a type, `i64` is assumed and the report says so.

Built on nxc.syntax and nxc.check only.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from nxc.check.checker import check_program
from nxc.check.consts import is_literal_expr
from nxc.check.program import Info
from nxc.check.types import BUILTIN_TYPES, PointerType, StructType
from nxc.diagnostics import CompileError, Diagnostics, Pos, SourceFile
from nxc.syntax.scan import GUESSED_ORDER, STUB_MARK
from nxc.syntax import ast
from nxc.syntax.loader import ModuleGraph, load_program, read_source
from nxc.syntax.search import resolve_import
from nxc.syntax.parse import parse_source

ASSUMED = "i64"           # the type of a use that pins none
_MAX_ROUNDS = 6


@dataclass
class Slot:
    """One type to infer: the text of the type, and whether a use pinned it."""
    type: str | None = None
    pinned: bool = False

    def offer(self, ty: str | None, strong: bool) -> bool:
        """Take `ty` if it says more than what is known; True if it changed."""
        if ty is None or self.pinned:
            return False
        if strong or self.type is None:
            changed = self.type != ty or strong != self.pinned
            self.type, self.pinned = ty, strong
            return changed
        return False

    @property
    def text(self) -> str:
        return self.type or ASSUMED


@dataclass
class MissingFunc:
    name: str
    pos: Pos                               # first use
    params: list[Slot] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)
    ret: Slot = field(default_factory=Slot)
    returns_value: bool = False            # some use takes its value


@dataclass
class MissingStruct:
    name: str
    pos: Pos
    fields: dict[str, Slot] = field(default_factory=dict)


@dataclass
class MissingConst:
    """A missing value: a constant, or a global variable if the code assigns to it."""
    name: str
    pos: Pos
    slot: Slot = field(default_factory=Slot)
    assigned: bool = False

    @property
    def keyword(self) -> str:
        return "var" if self.assigned else "const"


@dataclass
class MissingType:
    """A type name used by value (not behind a pointer): not a struct, so an alias."""
    name: str
    pos: Pos


@dataclass
class MissingModule:
    path: str                              # as imported, e.g. "nx_f32_rmsnorm.nx"
    import_pos: Pos
    funcs: dict[str, MissingFunc] = field(default_factory=dict)
    structs: dict[str, MissingStruct] = field(default_factory=dict)
    consts: dict[str, MissingConst] = field(default_factory=dict)
    types: dict[str, MissingType] = field(default_factory=dict)
    guessed: set[str] = field(default_factory=set)      # names put here for want of a better owner
    # What the stub imports so that it checks on its own: the modules that
    # declare the types its declarations name (set once inference is done).
    imports: list[str] = field(default_factory=list)

    def names(self) -> set[str]:
        return set(self.funcs) | set(self.structs) | set(self.consts) | set(self.types)


@dataclass
class StubReport:
    root: str                               # the ported module's path
    missing: list[MissingModule]
    remaining: list                         # diagnostics left once the stubs are in (none when all is inferred)


def type_text(texpr) -> str:
    if isinstance(texpr, ast.TypePointer):
        return "*" + type_text(texpr.target)
    return texpr.name


def _type_exprs(module: ast.Module):
    """Every type expression written in a module, with its statement context."""
    def in_expr(e):
        if isinstance(e, (ast.Cast,)):
            yield e.target
        if isinstance(e, ast.SizeOf):
            yield e.target
        for sub in ast.subexpressions(e):
            yield from in_expr(sub)
        if isinstance(e, ast.Call):
            yield from in_expr(e.func)

    def in_stmt(s):
        if isinstance(s, ast.Block):
            for t in s.stmts:
                yield from in_stmt(t)
        elif isinstance(s, ast.VarDecl):
            if s.type_expr is not None:
                yield s.type_expr
            yield from in_expr(s.value)
        elif isinstance(s, ast.Assign):
            yield from in_expr(s.target)
            yield from in_expr(s.value)
        elif isinstance(s, ast.If):
            yield from in_expr(s.cond)
            yield from in_stmt(s.then)
            if s.orelse is not None:
                yield from in_stmt(s.orelse)
        elif isinstance(s, ast.While):
            yield from in_expr(s.cond)
            yield from in_stmt(s.body)
        elif isinstance(s, ast.Return) and s.value is not None:
            yield from in_expr(s.value)
        elif isinstance(s, ast.ExprStmt):
            yield from in_expr(s.expr)

    for item in module.items:
        if isinstance(item, ast.FuncDecl):
            for p in item.params:
                yield p.type_expr
            if item.ret is not None:
                yield item.ret
            if item.body is not None:
                yield from in_stmt(item.body)
        elif isinstance(item, ast.StructDecl):
            for f in item.fields:
                yield f.type_expr
        elif isinstance(item, (ast.ConstDecl, ast.GlobalDecl)):
            ty = getattr(item, "type_expr", None)
            if ty is not None:
                yield ty
            yield from in_expr(item.value)
        elif isinstance(item, ast.TypeAlias):
            yield item.target


def _declared_names(modules) -> set[str]:
    out = set()
    for m in modules:
        for item in m.items:
            name = getattr(item, "name", None)
            if name is not None and not isinstance(item, ast.Import):
                out.add(name)
    return out


def _squash(text: str) -> str:
    return text.replace("_", "").lower()


def _owner(name: str, missing: list[MissingModule]) -> MissingModule:
    """The missing module a name most likely comes from: the one whose stem
    shares the longest prefix with it (nx_f32_rmsnorm_apply <- nx_f32_rmsnorm.nx)."""
    if len(missing) == 1:
        return missing[0]
    def shared(m: MissingModule) -> int:
        a, b = _squash(name), _squash(os.path.splitext(os.path.basename(m.path))[0])
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n
    best = max(missing, key=lambda m: (shared(m), -missing.index(m)))
    if sum(1 for m in missing if shared(m) == shared(best)) > 1:
        best.guessed.add(name)          # no module's name says more than another's
    return best


class _Inference:
    """One module's missing names and what their uses say about them."""

    def __init__(self, root: ast.Module, deps: list[ast.Module], missing: list[MissingModule]):
        self.root, self.deps, self.missing = root, deps, missing
        self.stub_paths = {os.path.realpath(self._stub_path(m)) for m in missing}
        self.undefined: set[str] = set()
        self.changed = False

    def _stub_path(self, m: MissingModule) -> str:
        return os.path.join(os.path.dirname(self.root.source.path), m.path)

    # ---- types that no module declares ----
    def find_missing_types(self) -> None:
        known = set(BUILTIN_TYPES) | _declared_names(self.deps) | _declared_names([self.root])
        behind_pointer: dict[str, Pos] = {}
        by_value: dict[str, Pos] = {}

        def visit(t, pointer: bool):
            if isinstance(t, ast.TypePointer):
                visit(t.target, True)
            elif t.name not in known:
                (behind_pointer if pointer else by_value).setdefault(t.name, t.pos)

        for t in _type_exprs(self.root):
            visit(t, False)
        for name, pos in behind_pointer.items():
            _owner(name, self.missing).structs.setdefault(name, MissingStruct(name, pos))
        for name, pos in by_value.items():
            if name not in behind_pointer:
                _owner(name, self.missing).types.setdefault(name, MissingType(name, pos))

    # ---- one round: check against the stubs, read the uses ----
    def round(self) -> list:
        diags = Diagnostics(warnings=False)
        stubs = []
        for m in self.missing:
            src = SourceFile(self._stub_path(m), stub_text(m, self.root))
            stubs.append(parse_source(src, diags))
        modules = [*self.deps, *stubs, self.root]
        graph = ModuleGraph(self.root, modules, {m.source.path: [] for m in modules})
        self.info = Info()
        try:
            check_program(graph, diags, info=self.info)
            errors = []
        except CompileError as exc:
            errors = exc.diagnostics
        at = {(d.pos.line, d.pos.col) for d in errors
              if d.pos is not None and d.pos.file.path == self.root.source.path}
        self.error_positions = at
        self.changed = False
        for item in self.root.items:
            if isinstance(item, ast.FuncDecl) and item.body is not None:
                self.ret_text = type_text(item.ret) if item.ret is not None else None
                self.stmt(item.body)
        return errors

    def is_missing(self, e: ast.Name) -> bool:
        sym = self.info.sym(e)
        if sym is None:
            if e.ident in self.undefined or (e.pos.line, e.pos.col) in self.error_positions:
                self.undefined.add(e.ident)
                return True
            return False
        module = getattr(sym, "module", None)
        return module is not None and os.path.realpath(module.source.path) in self.stub_paths

    def stmt(self, s) -> None:
        if isinstance(s, ast.Block):
            for t in s.stmts:
                self.stmt(t)
        elif isinstance(s, ast.VarDecl):
            self.expr(s.value, type_text(s.type_expr) if s.type_expr is not None else None)
        elif isinstance(s, ast.Assign):
            self.expr(s.target, self.strong(s.value))
            self.expr(s.value, self.strong(s.target))
            if isinstance(s.target, ast.Name) and self.is_missing(s.target):
                c = _owner(s.target.ident, self.missing).consts.get(s.target.ident)
                if c is not None and not c.assigned:
                    c.assigned = self.changed = True
        elif isinstance(s, ast.If):
            self.expr(s.cond, "bool")
            self.stmt(s.then)
            if s.orelse is not None:
                self.stmt(s.orelse)
        elif isinstance(s, ast.While):
            self.expr(s.cond, "bool")
            self.stmt(s.body)
        elif isinstance(s, ast.Return) and s.value is not None:
            self.expr(s.value, self.ret_text)
        elif isinstance(s, ast.ExprStmt):
            if isinstance(s.expr, ast.Call):
                self.call(s.expr, None, statement=True)
            else:
                self.expr(s.expr, None)

    def expr(self, e, want: str | None) -> None:
        if isinstance(e, ast.Name):
            if self.is_missing(e):
                owner = _owner(e.ident, self.missing)
                if e.ident not in owner.funcs:
                    c = owner.consts.setdefault(e.ident, MissingConst(e.ident, e.pos))
                    self.changed |= c.slot.offer(want, True)
        elif isinstance(e, ast.Call):
            self.call(e, want, statement=False)
        elif isinstance(e, ast.Binary):
            if e.op in ("&&", "||"):
                self.expr(e.left, "bool")
                self.expr(e.right, "bool")
            elif e.op in ("==", "!=", "<", "<=", ">", ">="):
                self.expr(e.left, self.strong(e.right))
                self.expr(e.right, self.strong(e.left))
            elif e.op in ("<<", ">>"):
                self.expr(e.left, want)
                self.expr(e.right, None)
            else:
                self.expr(e.left, self.strong(e.right) or want)
                self.expr(e.right, self.strong(e.left) or want)
        elif isinstance(e, ast.Unary):
            if e.op == "!":
                self.expr(e.operand, "bool")
            elif e.op == "*":
                self.expr(e.operand, "*" + want if want else None)
            elif e.op == "&":
                self.expr(e.operand, want[1:] if want and want.startswith("*") else None)
            else:
                self.expr(e.operand, want)
        elif isinstance(e, ast.Cast):
            self.expr(e.expr, None)
        elif isinstance(e, ast.Index):
            self.expr(e.base, "*" + want if want else None)
            self.expr(e.index, None)
        elif isinstance(e, ast.FieldAccess):
            self.expr(e.base, None)
            bt = self.info.ty(e.base)
            if isinstance(bt, PointerType) and isinstance(bt.target, StructType):
                for m in self.missing:
                    st = m.structs.get(bt.target.name)
                    if st is not None:
                        slot = st.fields.get(e.name)
                        if slot is None:
                            slot = st.fields[e.name] = Slot()
                            self.changed = True
                        self.changed |= slot.offer(want, True)

    def strong(self, e) -> str | None:
        """The type of `e` when it pins the type of what it meets (not a literal)."""
        ty = self.info.ty(e)
        if ty is None or is_literal_expr(e) or isinstance(ty, StructType):
            return None
        return str(ty)

    def call(self, e: ast.Call, want: str | None, statement: bool) -> None:
        f = e.func
        if isinstance(f, ast.Name) and self.is_missing(f):
            owner = _owner(f.ident, self.missing)
            owner.consts.pop(f.ident, None)
            fn = owner.funcs.get(f.ident)
            if fn is None:
                fn = owner.funcs[f.ident] = MissingFunc(f.ident, f.pos)
                self.changed = True
            while len(fn.params) < len(e.args):
                fn.params.append(Slot())
                fn.param_names.append("")
                self.changed = True
            for i, a in enumerate(e.args):
                self.expr(a, None)
                # a parameter is named after the argument when that is a local
                # or a parameter (a constant's name would clash with it)
                if isinstance(a, ast.Name) and not fn.param_names[i] and \
                        getattr(self.info.sym(a), "kind", None) in ("local", "param"):
                    if a.ident not in fn.param_names:
                        fn.param_names[i] = a.ident
                a_ty = self.info.ty(a)
                weak = a_ty is None or is_literal_expr(a)
                self.changed |= fn.params[i].offer(None if a_ty is None else str(a_ty), not weak)
            if not statement:
                if not fn.returns_value:
                    fn.returns_value = True
                    self.changed = True
                self.changed |= fn.ret.offer(want, True)
            return
        params = []
        sym = self.info.sym(f) if isinstance(f, ast.Name) else None
        ftype = getattr(sym, "type", None)
        params = [str(p) for p in getattr(ftype, "params", [])]
        for i, a in enumerate(e.args):
            self.expr(a, params[i] if i < len(params) else None)


# ---------------------------------------------------------------- stub text
def _placeholder(ty: str) -> str:
    if ty.startswith("*"):
        return f"0 as {ty}"
    if ty == "bool":
        return "false"
    return "0"


def stub_text(m: MissingModule, root: ast.Module) -> str:
    """The text of a stub module declaring exactly what `m` must provide."""
    stem = os.path.basename(root.source.path)
    out = [f"// {m.path} -- STUB written by `nxc port --stubs` for {stem}.",
           "// It declares only what that module uses, with the types its uses imply;",
           "// every function returns a placeholder (marked STUB). Replace this file",
           "// with the real module before trusting any result.",
           "//",
           "// stub_for: " + stem,
           f"{STUB_MARK} module written by `nxc port --stubs` (nxc test reports it as STUB)",
           ""]
    for path in m.imports:
        out.append(f'import "{path}"')
    if m.imports:
        out.append("")
    for t in m.types.values():
        out.append(f"type {t.name} = {ASSUMED}  // STUB: only used by value; {ASSUMED} assumed")
    for st in m.structs.values():
        fields = [f"    {name}: {slot.text}" + ("" if slot.pinned else f"  // STUB: type not pinned, {ASSUMED} assumed")
                  for name, slot in st.fields.items()] or ["    _stub_unused: i64  // STUB: no field is accessed"]
        out += [f"{GUESSED_ORDER}: first use in {stem}; the real layout may order them "
                "otherwise and have more fields",
                f"struct {st.name} {{", *fields, "}", ""]
    for c in m.consts.values():
        if c.assigned:
            out.append(f"var {c.name}: {c.slot.text} = {_placeholder(c.slot.text)}  // STUB: placeholder value")
        else:
            ty = c.slot.text if not c.slot.text.startswith("*") else ASSUMED
            out.append(f"const {c.name}: {ty} = 0  // STUB: placeholder value")
    if m.consts:
        out.append("")
    for fn in m.funcs.values():
        params = ", ".join(f"{fn.param_names[i] or f'a{i}'}: {slot.text}" for i, slot in enumerate(fn.params))
        if fn.returns_value:
            ret = fn.ret.text
            out += [f"func {fn.name}({params}) -> {ret} {{",
                    f"    return {_placeholder(ret)}  // STUB: placeholder value", "}", ""]
        else:
            out += [f"func {fn.name}({params}) {{", "    // STUB: does nothing", "}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- entry points
def missing_imports(module: ast.Module, include: list[str] | None) -> list[ast.Import]:
    here = os.path.dirname(module.source.path)
    return [imp for imp in module.imports if resolve_import(imp.path, here, include)[0] is None]


def infer_stubs(path: str, include: list[str] | None = None) -> StubReport:
    """What `path` needs from each import that cannot be found. Raises
    CompileError for syntax errors (here or in an import that exists)."""
    diags = Diagnostics(warnings=False)
    src = read_source(os.path.realpath(path), diags)
    diags.raise_if_errors()
    root = parse_source(src, diags)
    lacking = missing_imports(root, include)
    if not lacking:
        return StubReport(src.path, [], [])
    missing = [MissingModule(imp.path, imp.pos) for imp in lacking]
    deps: list[ast.Module] = []
    seen: set[str] = {src.path}
    here = os.path.dirname(src.path)
    providers: list[tuple[str, set[str]]] = []      # (an import of the root, the names its closure declares)
    for imp in root.imports:
        found, _ = resolve_import(imp.path, here, include)
        if found is None:
            continue
        closure = load_program(found, include, diags).modules
        providers.append((imp.path, _declared_names(closure)))
        for m in closure:
            if m.source.path not in seen:
                seen.add(m.source.path)
                deps.append(m)
    inference = _Inference(root, deps, missing)
    inference.find_missing_types()
    remaining: list = []
    for _ in range(_MAX_ROUNDS):
        remaining = inference.round()
        if not inference.changed:
            break
    remaining = inference.round()
    root_types = {item.name for item in root.items if isinstance(item, (ast.StructDecl, ast.TypeAlias))}
    for m in missing:
        _untie_from_root(m, root_types)
        m.imports = _stub_imports(m, missing, providers, root)
    return StubReport(src.path, missing, remaining)


def _named_types(m: MissingModule) -> list[str]:
    """The type names a stub's declarations write, in the order they appear."""
    slots = [*(s for st in m.structs.values() for s in st.fields.values()), *(c.slot for c in m.consts.values())]
    for fn in m.funcs.values():
        slots += fn.params + ([fn.ret] if fn.returns_value else [])
    out = []
    for slot in slots:
        name = slot.text.lstrip("*")
        if name not in BUILTIN_TYPES and name not in out:
            out.append(name)
    return out


def _untie_from_root(m: MissingModule, root_types: set[str]) -> None:
    """A parameter that points to a type of the ported module itself becomes
    `*void` (every pointer converts to it): importing the ported module
    from its stub would make an import cycle, which the C backend's
    separate compilation cannot build."""
    for fn in m.funcs.values():
        for slot in fn.params:
            if slot.text.startswith("*") and slot.text.lstrip("*") in root_types:
                slot.type = "*void"


def _stub_imports(m: MissingModule, missing: list[MissingModule], providers: list[tuple[str, set[str]]],
                  root: ast.Module) -> list[str]:
    """The imports a stub needs to check on its own (`nxc check STUB`, and
    `nxc test` compiling it as a library): for each type it names that it
    does not declare, the root's import whose closure declares it, else the
    stub of another missing module that does, else the ported module itself
    (an import cycle: only for a type a result or field names)."""
    out: list[str] = []
    root_names = _declared_names([root])
    for name in _named_types(m):
        if name in m.structs or name in m.types:
            continue
        path = next((p for p, names in providers if name in names), None)
        if path is None:
            path = next((o.path for o in missing if o is not m and (name in o.structs or name in o.types)), None)
        if path is None and name in root_names:
            path = os.path.basename(root.source.path)
        if path is not None and path not in out:
            out.append(path)
    return out


def describe(report: StubReport) -> str:
    """The missing-names report, one block per missing module."""
    lines = []
    for m in report.missing:
        lines.append(f"{m.import_pos}: missing module \"{m.path}\"; the ported code uses from it:")
        if not m.names():
            lines.append("    nothing (the import can be removed)")
        if os.path.basename(report.root) in m.imports:
            lines.append(f"    warning: the stub imports {os.path.basename(report.root)} for a type declared there: an "
                         "import cycle, which nxc test's C build does not handle; move that type to another module")
        for fn in m.funcs.values():
            params = ", ".join(f"{fn.param_names[i] or f'a{i}'}: {slot.text}" for i, slot in enumerate(fn.params))
            ret = f" -> {fn.ret.text}" if fn.returns_value else ""
            lines.append(f"    func {fn.name}({params}){ret}" + ("" if fn.returns_value else "   (result not used)")
                         + f"   [first use {fn.pos.line}:{fn.pos.col}]")
            lines += _guess_note(m, fn.name)
            for i, slot in enumerate(fn.params):
                if not slot.pinned:
                    lines.append(f"        argument {i + 1} does not pin its type (a literal or unknown): "
                                 f"{slot.text} assumed")
            if fn.returns_value and not fn.ret.pinned:
                lines.append(f"        the result's use does not pin its type: {fn.ret.text} assumed")
        for st in m.structs.values():
            fields = ", ".join(f"{n}: {s.text}" for n, s in st.fields.items())
            lines.append(f"    struct {st.name} {{ {fields} }}   [first use {st.pos.line}:{st.pos.col}]")
            lines += _guess_note(m, st.name)
            if st.fields:
                lines.append(f"        warning: field order guessed (the order of first use): the real {st.name} may "
                             "order its fields otherwise and have more, so its size and offsets are not the real "
                             "layout's until the real module replaces the stub")
            for n, s in st.fields.items():
                if not s.pinned:
                    lines.append(f"        field '{n}' does not pin its type: {s.text} assumed")
        for c in m.consts.values():
            lines.append(f"    {c.keyword} {c.name}: {c.slot.text}   [first use {c.pos.line}:{c.pos.col}]")
            lines += _guess_note(m, c.name)
            if not c.slot.pinned:
                lines.append(f"        its uses do not pin its type: {c.slot.text} assumed")
        for t in m.types.values():
            lines.append(f"    type {t.name}   [first use {t.pos.line}:{t.pos.col}]: used by value, "
                         f"so not a struct; {ASSUMED} assumed")
            lines += _guess_note(m, t.name)
    return "\n".join(lines)


def _guess_note(m: MissingModule, name: str) -> list[str]:
    if name in m.guessed:
        return [f"        which missing module declares '{name}' is a guess (no module name matches it better)"]
    return []


def write_stubs(report: StubReport, out_dir: str, force: bool = False) -> list[tuple[str, str]]:
    """Write one stub per missing module next to the ported module; returns
    (path, status) pairs, status "written" or "exists" (a different file kept)."""
    out = []
    diags = Diagnostics()
    root = parse_source(read_source(report.root, diags), diags)
    for m in report.missing:
        path = os.path.join(out_dir, m.path)
        text = stub_text(m, root)
        if os.path.exists(path) and not force:
            with open(path, encoding="utf-8", errors="replace") as f:
                if f.read() != text:
                    out.append((path, "exists"))
                    continue
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        out.append((path, "written"))
    return out
