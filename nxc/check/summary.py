"""Per-module check summaries: each module's interface, and clean verdicts keyed by interfaces.

Interface. What importers of a module can see (nx has one namespace over
the import graph): its type aliases, structs, function and extern
signatures, constants with their values and globals' types; as plain JSON
data, with resolved types described in full (a struct by its size, alignment
and fields with their offsets, a struct it embeds or points to described in
turn), so the digest of a module's interface changes when anything an
importer could depend on changes, even a struct of another module its
signatures only name; and does not change when a function body does.
Parameter names are not part of it (calls are positional).

Verdict. "Module M's bodies check clean" is recorded under the key
(M's source digest, the interface digests of every module of M's import
closure, nxc's own code, --soft-f32), with the warnings of M's bodies
(rendered) and M's interface digest. A module whose key has a clean verdict
is not checked again: after a body edit of a leaf only the leaf is
re-checked; after an interface edit the leaf and every module whose closure
holds it. A verdict is recorded only when M's bodies used no name from
outside M's own closure (legal, as the namespace is shared, but then M's
verdict depends on more than its closure's interfaces), when the check
showed warnings (not `-w`) and kept every one of them.

Declarations of the whole closure are still collected from the ASTs (from
the parse cache) to resolve names; in a gate's worker (`check_gate`) those
of modules an earlier gate of the same process declared are taken again
where every name they resolve is the same symbol (nxc/check/reuse.py), with
their interface digests: docs/performance.md measures both. `check_module` checks the bodies of one module only and
returns a Program with just its functions (for an emitter of that one
module); `check_incremental` is `nxc check`'s front end; `check_gate` is
that of a gate's worker in `nxc test` (C backend): the root's bodies are
always checked, and the Program is a PartialProgram whose unchecked bodies'
effects come from the records kept with their objects; the worker checks
more bodies (`Bodies`) where the backend says it must emit them
(nxc/backend/base.py, plan_bodies), before the backend emits anything: the
backend never calls the checker.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

from nxc.check.checker import Checker
from nxc.check.program import SOFT_F32_MODULE, Program
from nxc.check.reuse import DeclReuse
from nxc.deep import deep
from nxc.check.types import BoolType, FuncType, IntType, PointerType, StructType, Type, VoidType
from nxc.diagnostics import CompileError, Diagnostics
from nxc.incremental.index import note_modules
from nxc.incremental.records import Recorded, store_verdicts, verdicts_of
from nxc.syntax import ast
from nxc.syntax.loader import ModuleGraph, load_graph
from nxc.syntax.search import import_refusal, resolve_import



# ------------------------------------------------------------------ interfaces
def describe(t: Type | None, seen: set[str]):
    """A resolved type as plain data; each struct in full the first time `seen` meets it."""
    if t is None or isinstance(t, (IntType, BoolType, VoidType)):
        return None if t is None else str(t)
    if isinstance(t, PointerType):
        return ["*", describe(t.target, seen)]
    if isinstance(t, StructType):
        if t.name in seen:
            return ["struct", t.name]
        seen.add(t.name)
        return ["struct", t.name, t.size, t.align, [[f.name, describe(f.type, seen), f.offset] for f in t.fields]]
    if isinstance(t, FuncType):
        return ["func", [describe(p, seen) for p in t.params], describe(t.ret, seen)]
    return str(t)


def interface_of(checker: Checker, module: ast.Module) -> dict:
    """The interface of `module`, from a checker past its declarations phase."""
    seen: set[str] = set()
    out: dict[str, dict] = {"types": {}, "structs": {}, "funcs": {}, "externs": {}, "consts": {}, "globals": {}}
    for item in module.items:
        name = getattr(item, "name", None)
        sym = checker.top.get(name) if name is not None else None
        if sym is None or sym.decl is not item:
            continue                        # an import, a gate's main, an identical extern declared twice
        if sym.kind == "const":
            out["consts"][name] = [str(sym.type), sym.value]
        elif sym.kind == "global":
            out["globals"][name] = describe(sym.type, seen)
        elif sym.kind == "type":
            out["types"][name] = describe(checker.alias_types.get(name), seen)
        elif sym.kind == "struct":
            out["structs"][name] = describe(checker.structs[name], seen)
        elif sym.kind in ("func", "extern"):
            out["funcs" if sym.kind == "func" else "externs"][name] = describe(sym.type, seen)
    return out


# ------------------------------------------------------------------ checking
class ModuleChecker(Checker):
    """The checker, also noting which modules' top-level names each module's bodies use."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.uses: dict[str, set[str]] = {}     # module path -> paths of modules whose names its bodies used

    def _note_use(self, sym) -> None:
        if self.func is not None and sym is not None and sym.module is not None:
            self.uses.setdefault(self.func.module.source.path, set()).add(sym.module.source.path)

    def lookup(self, e: ast.Name):
        sym = super().lookup(e)
        self._note_use(sym)
        return sym

    def resolve_type(self, texpr, allow_void: bool = False):
        if self.func is not None and isinstance(texpr, ast.TypeName):
            self._note_use(self.top.get(texpr.name))
        return super().resolve_type(texpr, allow_void)


class GateChecker(DeclReuse, ModuleChecker):
    """ModuleChecker taking the declarations of modules kept from earlier
    gates of this process (nxc/check/reuse.py): a gate's worker."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.init_reuse()


def module_closures(graph: ModuleGraph, include: list[str] | None, soft_f32: bool) -> dict[str, set[str]]:
    """For each module of the graph: the real paths of its own import closure
    (itself included; with soft_f32 the soft float32 module's too)."""
    direct: dict[str, list[str]] = {}
    resolved: dict[tuple, str | None] = {}
    paths = {m.source.path for m in graph.modules}
    edges = graph.imports or {}
    for m in graph.modules:
        known = edges.get(m.source.path)
        if known is not None:           # as the loader resolved them (not looked up again)
            direct[m.source.path] = [p for p in known if p in paths]
            continue
        folder = os.path.dirname(m.source.path)
        out = []
        for imp in m.imports:
            key = (imp.path, folder)
            if key not in resolved:
                resolved[key] = (resolve_import(imp.path, folder, include)[0]
                                 if import_refusal(imp.path) is None else None)
            if resolved[key] in paths:
                out.append(resolved[key])
        direct[m.source.path] = out
    extra: set[str] = set()
    if soft_f32:
        soft = next((m.source.path for m in graph.modules if os.path.basename(m.source.path) == SOFT_F32_MODULE), None)
        if soft is not None:
            extra = _reach(soft, direct)
    closures: dict[str, set[str]] = {}
    for m in graph.modules:          # dependencies first: reuse the closures of the imports
        p = m.source.path
        c = {p} | extra
        for d in direct[p]:
            c |= closures.get(d) or _reach(d, direct)
        closures[p] = c
    return closures


def _reach(start: str, direct: dict[str, list[str]]) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        p = stack.pop()
        if p not in seen:
            seen.add(p)
            stack.extend(direct.get(p, ()))
    return seen


@dataclass
class Checked:
    program: Program        # its functions: only those of the modules checked now (`checked`)
    warnings: list[str]                             # rendered, in graph order: stored ones and new ones
    checked: list[str] = field(default_factory=list)    # modules whose bodies were checked now
    reused: list[str] = field(default_factory=list)     # modules taken from a clean verdict
    interfaces: dict[str, str] = field(default_factory=dict)   # module -> interface digest
    bodies: "Bodies | None" = None      # check_gate: the bodies checked so far, and more on demand
    # check_gate: what the module index is to note of each module of the
    # closure, {real path: (source digest, interface digest, verdict key)}:
    # the caller notes it (index.note_modules), or hands it to whoever holds the
    # index (`nxc test`'s runner: nxc/incremental/plan.py, note_checked).
    notes: dict = field(default_factory=dict)
    # check_gate: the clean verdicts found, [(key, rendered warnings, interface
    # digest)], for the caller to store (records.store_verdicts) once its gate is done
    verdicts: list = field(default_factory=list)


@deep
def check_incremental(path: str, include: list[str] | None = None, diags: Diagnostics | None = None,
                      soft_f32: bool = False, use_verdicts: bool = True) -> Checked:
    """Check `path` and its imports, re-checking only the bodies of modules
    without a clean verdict for their current source and closure interfaces.
    Raises CompileError (an error in an imported module with its "imported
    from here" notes, as check_file)."""
    from nxc.check.frontend import check_file
    from nxc.deep import gc_paused
    diags = diags or Diagnostics()
    try:
        with gc_paused():           # as check_file: the front end frees nothing until it is done
            return _check_incremental(path, include, diags, soft_f32, use_verdicts)
    except RecursionError:
        # Past what nxc/deep.py's stack holds: check_file says so as one error.
        check_file(path, include, Diagnostics(), soft_f32)
        raise


@dataclass
class _Front:
    """What an incremental check found: the graph, the checker past the bodies
    it checked, and each module's keys, verdicts and new warnings."""
    graph: ModuleGraph
    checker: "ModuleChecker"
    funcs: list
    program: Program
    closures: dict
    digests: dict
    stored: dict
    todo: set
    warnings: list
    notes: dict             # Checked.notes
    verdicts: list          # Checked.verdicts


def _check_front(path, include, diags, soft_f32, use_verdicts, always_root: bool = False,
                 reuse: bool = False, graph: ModuleGraph | None = None) -> _Front:
    """Declarations of the whole closure, then the bodies of the modules
    without a clean verdict (and the root's too with `always_root`: a gate's
    worker needs them to emit its main); records the new clean verdicts.
    `reuse`: take the declarations and interface digests of modules kept by
    earlier checks of this process where they stand (nxc/check/reuse.py).
    graph: `path`'s graph as syntax.loader.load_graph gave it (default: loaded here)."""
    from nxc.check.frontend import add_import_notes
    if graph is None:
        graph = load_graph(path, include, diags, soft_f32)
    checker = (GateChecker if reuse else ModuleChecker)(graph, diags, soft_f32)
    try:
        funcs = checker.check_declarations()
    except CompileError:
        add_import_notes(graph, diags)
        raise
    if reuse:
        checker.remember_declarations(funcs)
    interfaces: dict[str, "str | dict"] = {}
    for m in graph.modules:
        p = m.source.path
        digest = checker.known_interface(p) if reuse else None
        interfaces[p] = digest if digest is not None else interface_of(checker, m)
    closures = module_closures(graph, include, soft_f32)
    # Keys and verdicts in one call, from the data declared (texts, interfaces, closures)
    found = verdicts_of({m.source.path: m.source.text for m in graph.modules}, interfaces, closures, soft_f32,
                        use_verdicts)
    texts, digests, keys, stored = found.texts, found.digests, found.keys, found.stored
    if reuse:
        for p in found.new_digests:
            checker.keep_interface(p, digests[p])
    todo = {p for p in texts if p not in stored}
    if always_root:
        todo.add(graph.root.source.path)
    try:
        program = checker.check_bodies(funcs, only=todo)
    except CompileError:
        add_import_notes(graph, diags)
        raise
    new_warnings: dict[str, list[str]] = {}
    placed = True
    for d in diags.warnings:
        if d.pos is None:
            placed = False              # a warning of no module: no verdict could show it again
        else:
            new_warnings.setdefault(d.pos.file.path, []).append(d.render())
    complete = diags.show_warnings and not diags.dropped["warning"] and placed
    verdicts = []                       # clean verdicts to store (_Front.verdicts)
    for p in todo:
        if p in stored and stored[p]["warnings"] == new_warnings.get(p, []):
            continue                    # the root of a gate, checked again: its verdict stands
        if complete and checker.uses.get(p, set()) <= closures[p]:
            verdicts.append((keys[p], new_warnings.get(p, []), digests[p]))
    warnings = []
    for m in graph.modules:
        p = m.source.path
        # a module checked now shows what this check found (the root of a gate always)
        warnings += new_warnings.get(p, []) if p in todo else stored[p]["warnings"]
    if not diags.show_warnings:
        warnings = []
    notes = {p: (texts[p], digests[p], keys[p]) for p in texts}
    return _Front(graph, checker, funcs, program, closures, digests, stored, todo, warnings, notes, verdicts)


def _check_incremental(path, include, diags, soft_f32, use_verdicts) -> Checked:
    f = _check_front(path, include, diags, soft_f32, use_verdicts)
    store_verdicts(f.verdicts)
    note_modules(f.notes)
    order = [m.source.path for m in f.graph.modules]
    return Checked(f.program, f.warnings, [p for p in order if p in f.todo], [p for p in order if p in f.stored],
                   f.digests)


# ------------------------------------------------------------------ a gate's worker
@dataclass(eq=False)
class PartialProgram(Program):
    """A Program whose `functions` are every function of the closure, but only
    some of whose bodies were checked (`bodies.checked`): what the others'
    callers need of them (effects, whether importers copy them) is in
    `recorded`, from the records kept with their modules' objects
    (nxc/incremental/records.py), and `checked_modules` names the modules
    whose every body it checked. It is data only: the gate worker that made
    it checks more bodies through `Bodies`, where the backend asks
    (nxc/backend/base.py, BodyPlan), and gets a new PartialProgram each time;
    the backend reads one, never checks one."""
    recorded: Recorded | None = None
    checked_modules: frozenset = frozenset()


class Bodies:
    """The bodies of a gate's closure checked so far, and more on demand."""

    def __init__(self, front: _Front):
        self.checker, self.funcs = front.checker, front.funcs
        self.base = front.program
        root = front.graph.root
        # every function, in the order a whole check lists them (an imported gate's main is not one)
        self.functions = [fn for fn in front.funcs if fn.decl.name != "main" or fn.module is root]
        order = [m.source.path for m in front.graph.modules]
        self.checked = set(front.todo)
        self.checked_order = [p for p in order if p in front.todo]   # for NXC_DEBUG_STATS
        self.done = {id(fn) for fn in front.funcs if fn.module.source.path in self.checked}
        # the names of the functions not checked yet, kept as bodies are (each view holds them)
        self.unchecked = {fn.decl.name for fn in self.functions if id(fn) not in self.done}
        self.records: dict[str, dict] = {}      # module path -> its record (records.py), unchecked modules
        self._program: PartialProgram | None = None

    @property
    def program(self) -> "PartialProgram":
        """A Program over what is checked and recorded now (a new object after
        each change, so the emitters' per-program caches start afresh)."""
        if self._program is None:
            self._program = self._view()
        return self._program

    def check(self, paths) -> bool:
        """Check every body of the modules `paths` not checked yet (each has a
        clean verdict: no diagnostics are kept); whether any was."""
        paths = set(paths) - self.checked
        if not paths:
            return False
        self.check_functions([fn for fn in self.funcs if fn.module.source.path in paths])
        self.checked |= paths
        self.checked_order += sorted(paths)
        return True

    def check_functions(self, fns) -> bool:
        """Check the bodies of functions `fns` not checked yet (the small
        helpers an emitted unit copies in: their modules' other bodies are not
        needed); whether any was."""
        todo = [fn for fn in fns if fn.module.source.path not in self.checked and id(fn) not in self.done]
        if not todo:
            return False
        saved = self.checker.diags
        self.checker.diags = Diagnostics(warnings=False)
        root = self.checker.graph.root
        try:
            for fn in todo:
                self.done.add(id(fn))
                if fn.decl.name != "main" or fn.module is root:
                    self.unchecked.discard(fn.decl.name)
                self.checker.check_body(fn, fn.module is root and fn.decl.name == "main")
            self.checker.diags.raise_if_errors()
        finally:
            self.checker.diags = saved
        self._program = None
        return True

    def note_records(self, records: dict) -> bool:
        """Take the records {module path: record} a backend read for modules
        whose bodies are not checked here (their effects); whether any was new."""
        new = {p: r for p, r in records.items() if self.records.get(p) != r}
        if not new:
            return False
        self.records.update(new)
        self._program = None
        return True

    def meet(self, needed) -> "PartialProgram":
        """The program after doing what a backend asked (nxc/backend/base.py,
        Needed: records to take, modules and functions to check)."""
        self.note_records(needed.records)
        self.check(needed.modules)
        self.check_functions(needed.functions)
        return self.program

    def _view(self) -> "PartialProgram":
        recs = [r for p, r in self.records.items() if p not in self.checked]
        pick = lambda what: frozenset(n for r in recs for n in r[what])     # noqa: E731
        recorded = Recorded(frozenset(self.unchecked), pick("may_unmap"), pick("memory_free"), pick("silent"),
                            pick("copied"))
        base = {f.name: getattr(self.base, f.name) for f in fields(Program)}
        base["functions"] = list(self.functions)
        return PartialProgram(**base, recorded=recorded, checked_modules=frozenset(self.checked))


@deep
def check_gate(path: str, include: list[str] | None, diags: Diagnostics, soft_f32: bool = False,
               keep: bool = True, graph: ModuleGraph | None = None) -> Checked | None:
    """The front end of one gate in `nxc test`'s worker (nxc/gates/execute.py),
    C backend: declarations of the whole closure, the bodies of the root and
    of every module without a clean verdict (errors and warnings exactly as
    check_file reports them, warnings of the others from their verdicts).
    The Program is a PartialProgram, and `bodies` checks more of it: the
    caller checks the bodies of a module without a record, or whose object
    must be emitted, as the backend asks (Bodies.meet), before it emits.
    Raises CompileError. None when this cannot stand for check_file (a
    module's bodies used a name from outside its own closure, so more than its
    closure decides its C; too deeply nested): the caller checks the whole
    program then. keep: store the new clean verdicts now; False: the caller
    stores Checked.verdicts (records.store_verdicts) when its gate is done,
    as `nxc test`'s worker does with the rest of what it keeps. graph: the
    import graph, loaded by the caller (syntax.loader.load_graph); default:
    loaded here."""
    from nxc.deep import gc_paused
    try:
        with gc_paused():
            f = _check_front(path, include, diags, soft_f32, use_verdicts=True, always_root=True, reuse=True,
                             graph=graph)
    except RecursionError:
        return None
    stands = all(f.checker.uses.get(p, set()) <= f.closures[p] for p in f.todo)
    if keep or not stands:              # stored now: no Checked carries them to a caller that keeps them
        store_verdicts(f.verdicts)
        f.verdicts = []
    if not stands:
        return None
    bodies = Bodies(f)
    order = [m.source.path for m in f.graph.modules]
    return Checked(bodies.program, f.warnings, list(bodies.checked_order),
                   [p for p in order if p not in f.todo], f.digests, bodies, f.notes, f.verdicts)


@deep
def check_module(path: str, include: list[str] | None = None, diags: Diagnostics | None = None,
                 soft_f32: bool = False, module: str | None = None) -> Program:
    """Check the declarations of `path`'s whole closure and the bodies of one
    module only (`module`, a real path; default `path` itself): the Program
    holds that module's functions and their side tables, for an emitter of
    that one module. Raises CompileError."""
    from nxc.check.frontend import add_import_notes
    diags = diags or Diagnostics()
    graph = load_graph(path, include, diags, soft_f32)
    checker = Checker(graph, diags, soft_f32)
    try:
        return checker.check_bodies(checker.check_declarations(), only={module or graph.root.source.path})
    except CompileError:
        add_import_notes(graph, diags)
        raise
