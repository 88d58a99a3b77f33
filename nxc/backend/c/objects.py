"""C backend, separate compilation: each module compiled once to its own
object, cached; a gate links its closure's objects.

A gate's shared library is linked from
- one object per module of its import closure (units.emit_module), cached
  under `$NXC_CACHE_DIR/c/obj/` by `object_key`, which is computed before
  any C is emitted: the module's own source, a digest of the interfaces of
  its import closure, and the build configuration (nxc's code, compiler,
  flags, checked or not, the runtime's text). A module whose key is in the
  cache is neither emitted nor compiled;
- the runtime's object (runtime/nx_runtime.c), one per configuration,
  which holds the gate's report and the entry points cffi opens;
and nothing compiled for the gate itself: each module's object holds the
module's own `main` (its gate, in gate mode), and what is per gate (each
module's site base, which module's main is the gate: `Binding`) is set when
the library is loaded (nxc/backend/c/backend.py), not compiled.
The library is cached in `$NXC_CACHE_DIR/c/` by `link_key` (the objects'
keys, the binding, the flags and the linker) like any build
(nxc/backend/c/build.py). Module objects are compiled against
a precompiled nx_runtime.h of their configuration (GCC: `ensure_pch`), and
linked with gold when the compiler can (`link_flags`); docs/build.md says
what each saves.

Run-time error sites are module-local: a site id is (ordinal << 20) | local
index, where a module's ordinal is its place in the link, from 1 (set at load
time: `Binding`). A module's object therefore does not depend on which gate
links it; its site table (what each local index names) is kept beside the
object, read only to word a fault or a stack (emitted again if damaged).

Concurrent workers that need the same object (`nxc test -j`): the first
takes an exclusive lock (fcntl.flock on `<key>.lock` beside the entry) and
compiles it, the others wait on the lock and find it built. Writes are
atomic renames, so a reader never sees half an object either way.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache

from nxc.backend.c import build as c_build
from nxc.backend.c import hosts, toolchain
from nxc.backend.c.toolchain import link_flags
from nxc.backend.c.closure import import_closure
from nxc.backend.c.facts import ProgramFacts
from nxc.backend.c.names import module_c_id, module_c_id_of
from nxc.backend.c.scratch import scratch
from nxc.backend.c.sites import Site, SiteTable
from nxc.backend.c.units import GATE_CDEF, LINK_CDEF, UnitC, UnknownCopies, emit_module, emit_whole, interface_text
from nxc.backend.base import BodiesNeeded
from nxc.backend.emitter import CapturesMixin
from nxc.deep import deep
from nxc.incremental.keys import code_digest, kept_object_key, object_key_of, source_digest, source_key_digest
from nxc.incremental.records import RECORD_LISTS, write_gate_record
from nxc.cache import (cache_dir, degrade_after, discard, found_whole_before, mark_used, note_found_whole,
                       parts_digest, present, prune_due, prune_least_recent, publish, read_sealed_json,
                       scaled_bound, stamped, write_sealed_json)
from nxc.lower.guards import CAPTURE_SLOTS
from nxc.lower.effects import recorded
from nxc.lower.plan import plan_program
from nxc.paths import runtime_dir
from nxc.syntax import ast

SITE_BITS = 20                  # NXRT_SITE_BITS in runtime/nx_runtime.h
MAX_LINKED = (1 << (31 - SITE_BITS)) - 1     # module ordinals that fit a positive int32 site id
# Objects kept in the cache (each 5-50 KB); the bound grows with the tree.
MAX_OBJECTS = 4096
# Precompiled runtime headers kept (one per build configuration, ~5 MB each).
MAX_PCH = 8


# ---- keys ----
_digest = parts_digest


def build_config_text(checked: bool, opt: str, unbox_f32: bool = True) -> str:
    """Everything of the build configuration an object depends on."""
    cc = tuple(c_build.compiler())
    return "|".join([code_digest("codegen"), c_build.compiler_identity(cc), " ".join(object_flags(opt)),
                     c_build.target_identity(opt),
                     "checked" if checked else "unchecked", "unbox" if unbox_f32 else "bits"])


def closure_source_parts(linked, closure) -> tuple:
    """The conservative `closure_parts` for LinkedC: every import's own text
    and path (keys.source_key_digest): any edit recompiles its importers."""
    return tuple(source_key_digest(m.source.path, source_digest(m.source.text)) for m in closure[:-1])


def link_key(object_keys: list[str], runtime_key: str, binding_text: str, opt: str) -> str:
    """The key of a gate's library: what it links, in link order, how, and
    what its loader binds (`Binding.text`: one library per gate, although the
    binding is not in the library's bytes)."""
    return _digest("link", runtime_key, binding_text, link_flags_text(opt), *object_keys)[:24]


def link_flags_text(opt: str) -> str:
    """The flags a library of configuration `opt` is linked with."""
    return " ".join([*c_build.flags_for(opt), *link_flags()])


def object_flags(opt: str) -> list[str]:
    """Flags of `cc -c` (the build's, without -shared)."""
    return [f for f in c_build.flags_for(opt) if f != "-shared"]


# ---- the plan of one gate's link ----
@dataclass(frozen=True)
class Binding:
    """What is per gate in a linked library, given to it when it is loaded
    (runtime/nx_runtime.c, nxc_module_bind) rather than compiled: each module
    object's site base (its ordinal in the link << SITE_BITS), and the module
    whose `main` is the gate (None: the root has none)."""
    bases: tuple        # ((module_c_id, site base), ...), in link order
    root: str | None

    @property
    def text(self) -> str:
        return "\n".join([f"root {self.root}", *(f"{m} {b}" for m, b in self.bases)])


class LinkedC(CapturesMixin):
    """What a gate links, computed from the checked program without emitting
    any module's C: each module's key, the binding (site bases, the gate),
    the link's key. `whole()` is the single-file program (the Python API).

    The program is final once anything is emitted: a partial program (a gate
    worker's, nxc/check/summary.py) is first taken through LinkPlanner
    (nxc/backend/c/needs.py), which asks the worker for the bodies and
    records it needs and hands each new program in (`advance`) until it
    needs nothing; from the first emitted unit on, `advance` refuses."""

    def __init__(self, program, checked: bool, opt: str = "2", unbox_f32: bool = True, closure_parts=None):
        """closure_parts(linked, closure) -> tuple: the digests of what a
        module's C takes from each of its imports (closure: its import closure,
        itself last), which its object key covers. Default:
        `closure_interface_parts` (their interfaces: interface_text of the
        modules checked here, the records' digests for the others, found by
        LinkPlanner); `closure_source_parts` is the conservative alternative."""
        self._program = program
        self.closure_parts = closure_parts or LinkedC.closure_interface_parts
        self.checked = checked
        self.unbox_f32 = unbox_f32
        self.opt = opt
        self.captures = dict(deep(plan_program)(program).captures)     # deeply nested programs: nxc/deep.py
        self.capture_slots = CAPTURE_SLOTS
        self._whole = None
        self._facts = None
        self._planned = None
        self._sites = None
        self.interfaces: dict[str, str] = {}        # module path -> its interface digest
        # A gate's worker checks only some bodies (nxc/check/summary.py,
        # check_gate): the interface digests of the others come from records,
        # found by LinkPlanner before any key is asked for (`walked`).
        self.partial = recorded(program) is not None
        self.walked = not self.partial
        self.emitting = False                       # a unit was emitted: the program is final
        self.closures: dict[str, list] = {}         # module path -> its import closure
        self.keys: dict[str, str] = {}              # module path -> its object key (this configuration)

    @property
    def program(self):
        return self._program

    def advance(self, program) -> None:
        """Take `program`, the same one with more bodies checked or records given
        (LinkPlanner only, before anything is emitted: the backend never sees a
        program change under its emitted C)."""
        if self.emitting:
            raise RuntimeError("the program changed after its C was emitted (a bug in nxc)")
        self._program = program

    def facts(self, program=None) -> ProgramFacts:
        """The emitter's ProgramFacts of `program` (default: this link's): one
        per program, the last kept (while LinkPlanner asks for more bodies,
        each new program's answers are computed again)."""
        program = program if program is not None else self._program
        if self._facts is None or self._facts.program is not program:
            self._facts = ProgramFacts(program, checked=self.checked, unbox_f32=self.unbox_f32)
        return self._facts

    # Each module's interface digest, computed once per program.
    def interface_digest(self, module) -> str:
        d = self.interfaces.get(module.source.path)
        if d is None:
            d = self.interfaces[module.source.path] = _digest(
                module.source.path, interface_text(self.facts(), module))
        return d

    def closure_interface_parts(self, closure) -> tuple:
        """The interfaces of every module `closure[-1]` imports (interface_text):
        a body edit of a function that importers do not copy leaves them unchanged."""
        return tuple(self.interface_digest(m) for m in closure[:-1])

    def plan(self, opt: str | None = None):
        """(units, binding, runtime key, link key) for build configuration `opt`."""
        if opt is not None and opt != self.opt:
            if self.partial:        # its keys came from records under LinkPlanner's configuration
                raise RuntimeError(f"a partial program's link was planned at -O{self.opt}, not -O{opt} "
                                   "(a bug in nxc)")
            self.opt, self._planned, self._sites = opt, None, None
            self.keys = {}                  # keys of the old configuration
        if self._planned is None:
            if not self.walked:
                raise RuntimeError("a partial program's link is planned by LinkPlanner first (a bug in nxc)")
            self._planned = self._plan()
        return self._planned

    def config(self) -> str:
        return build_config_text(self.checked, self.opt, self.unbox_f32)

    def copy_key(self, fn):
        """What decides the C of copied function `fn` (copies.CopiedMemo): its
        module's object key, in a gate's worker (whose program checks only
        some bodies: a kept copy spares checking the helper's body and the
        program's effects again); None otherwise."""
        return self.keys.get(fn.module.source.path) if self.partial else None

    @deep       # interface_text walks the AST recursively
    def _plan(self):
        config = self.config()
        program = self._program
        units = []
        # Each module's gate is in its own object: a module with only a main has one too.
        compiled = ({id(fn.module) for fn in program.functions if fn is not program.entry}
                    | {id(sym.module) for sym, _ in program.globals}
                    | {id(m) for m in program.graph.modules if _has_gate(m)})
        for module in program.graph.modules:
            if id(module) not in compiled:
                continue            # nothing of its own to compile (consts, structs, externs only)
            units.append(ModuleUnit(module, self.closure_of(module), self.key_of(module, config)))
        if len(units) > MAX_LINKED:
            raise c_build.BuildError(f"a gate links at most {MAX_LINKED} modules with functions "
                                     f"({len(units)} here)")
        root = program.graph.root
        binding = Binding(tuple((module_c_id(u.module), (k + 1) << SITE_BITS) for k, u in enumerate(units)),
                          module_c_id(root) if _has_gate(root) else None)
        self.key_of(root, config)       # the gate record's key (gate_record)
        rt = runtime_key(self.checked, self.opt)
        return units, binding, rt, link_key([u.key for u in units], rt, binding.text, self.opt)

    def closure_of(self, module) -> list:
        p = module.source.path
        return self.closures.get(p) or self.closures.setdefault(p, import_closure(self._program, module))

    def key_of(self, module, config: str) -> str:
        p = module.source.path
        key = self.keys.get(p)
        if key is None:
            # The parts are gathered here and handed over as data: the
            # incremental layer computes the key without calling back.
            key = kept_object_key(module, self.closure_parts, config)
            if key is None:
                parts = self.closure_parts(self, self.closure_of(module))
                key = object_key_of(module, self.closure_parts, config, parts)
            self.keys[p] = key
        return key

    def gate_record(self, root=None) -> tuple[str, dict]:
        """(key, record) of what the gate of `root` (default: the program's root;
        nxc/backend/c/batch.py passes each module of a batch) links, beyond its
        modules' own keys (read by nxc/backend/c/recorded.py): the modules whose
        objects it links, in link order, the module whose main is the gate (its
        C id, or None), the module order of a program rooted at it (its import
        closure: the loader's order, that of the gate's warnings). Keyed by the
        root's object key, which covers the root's source and the interfaces of
        its closure, so all three are the same for every gate of that key. The
        binding follows from the first two (`binding_of`)."""
        units, _, _, _ = self.plan()
        graph = self._program.graph
        order = [m.source.path for m in (graph.modules if root is None else self.closure_of(root))]
        root = root or graph.root
        linked = {u.module.source.path for u in units}
        return self.key_of(root, self.config()), {
            "units": [p for p in order if p in linked],
            "gate": module_c_id(root) if _has_gate(root) else None,
            "modules": order}

    @property
    def units(self) -> list["ModuleUnit"]:
        return self.plan()[0]

    @property
    def binding(self) -> Binding:
        return self.plan()[1]

    @property
    def key(self) -> str:
        return self.plan()[3]

    @property
    def sites(self) -> SiteTable:
        """Every site of the link by id: each module's (read from beside its
        object when first asked for)."""
        table = self._sites
        if table is None:
            loaders = {k + 1: (lambda u=u: self.module_sites(u)) for k, u in enumerate(self.units)}
            table = self._sites = SiteTable([], loaders, SITE_BITS)      # ordinal 0: no unit
        return table

    def module_sites(self, unit: "ModuleUnit") -> list[Site]:
        found = read_sites(unit.key)
        if found is None:           # missing or damaged: the module's C says it again, and it is kept again
            found = self.emit_unit(unit).sites
            with contextlib.suppress(OSError):      # a read-only cache: said again next time
                _write_sites(unit.key, found)
        return found

    def unit_functions(self, unit: "ModuleUnit") -> list:
        """What `unit`'s C is written from: its module's functions, then its
        gate's main, if it has one (an imported module's gate is not one of
        the program's functions)."""
        own = self.facts().members(unit.module).functions
        gate = self._program.gates.get(unit.module.source.path)
        return own + ([gate.fn] if gate is not None else [])

    def emit_unit(self, unit: "ModuleUnit") -> UnitC:
        """The C of `unit`, from the final program: its bodies were checked
        before it was handed in (LinkPlanner), else BodiesNeeded."""
        self.emitting = True
        program = self._program
        path = unit.module.source.path
        if self.partial and path not in program.checked_modules:
            raise BodiesNeeded(f"{path}: its C must be emitted and its bodies were not checked", {path})
        try:
            return emit_module(self.facts(), unit.module, unit.closure, self.copy_key)
        except UnknownCopies as exc:
            raise BodiesNeeded(str(exc), {path}) from None

    def whole(self):
        """The whole program as one C file (units.emit_whole): the Python API's build."""
        if self._whole is None:
            self.emitting = True
            if self.partial:
                raise RuntimeError("a partial program cannot be emitted as one file (a bug in nxc)")
            self._whole = emit_whole(self.facts())
        return self._whole

    @property
    def text(self) -> str:
        """The program as one C file (what `nxc emit-c` prints)."""
        return self.whole().text


# ---- records: what importers need of a module whose bodies are not checked ----
# Beside nothing else: a record is a fact about a module under one object key
# (its interface digest, its functions' effects, which of them importers copy),
# valid whether or not the object is built; pruned like the objects.


def record_of(facts: ProgramFacts, module, digest: str) -> dict:
    """The record of `module` (its bodies checked in `facts.program`)."""
    own = facts.members(module).functions
    if not own:         # its interface only: no effects to compute (nor the program's fixed points)
        return {"interface": digest, **{k: [] for k in RECORD_LISTS}}
    fx, names = facts.effects, [fn.decl.name for fn in own]
    return {"interface": digest,
            **{k: [n for n in names if n in getattr(fx, k)] for k in ("may_unmap", "memory_free", "silent")},
            "copied": [fn.decl.name for fn in own if facts.is_copied(fn)]}


def binding_of(units: list[str], gate: str | None) -> Binding:
    """The Binding of a link of the modules `units` (real paths, in link
    order) whose gate is module C id `gate` (None: the root has none)."""
    return Binding(tuple((module_c_id_of(p), (k + 1) << SITE_BITS) for k, p in enumerate(units)), gate)


def _has_gate(module) -> bool:
    """The module declares a gate (`func main`), checked or not in this program."""
    # Asked of every module of every gate's graph; an AST's items do not change
    # once parsed: kept by the AST, held with it (its id stays its own).
    held = _GATES.get(id(module))
    if held is None or held[0] is not module:
        if len(_GATES) >= scaled_bound(1024):
            _GATES.clear()
        held = _GATES[id(module)] = (module, any(isinstance(item, ast.FuncDecl) and item.name == "main"
                                                 and not item.is_extern for item in module.items))
    return held[1]


_GATES: dict[int, tuple] = {}


@dataclass
class ModuleUnit:
    module: object
    closure: list
    key: str


# ---- the object cache ----
def objects_dir() -> str:
    return os.path.join(cache_dir(), "c", "obj")


_object_writes = 0


@contextlib.contextmanager
def _locked(path: str):
    """An exclusive lock on `path` (a lock file beside a cache entry)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)            # releases the lock


def _sites_path(key: str) -> str:
    return os.path.join(objects_dir(), key + ".sites")


def read_sites(key: str) -> list[Site] | None:
    """The site table kept beside object `key` (None if missing or not ours)."""
    path = _sites_path(key)
    rows = read_sealed_json(path, os.path.basename(path))
    try:
        return None if rows is None else [Site(*row) for row in rows]
    except TypeError:
        return None


def _write_sites(key: str, sites: list[Site]) -> None:
    rows = [[s.path, s.line, s.col, s.what, s.kind, s.function] for s in sites]
    path = _sites_path(key)
    write_sealed_json(path, os.path.basename(path), rows)


def ensure_object(key: str, emit, opt: str, use_cache: bool = True, checked: bool | None = None) -> tuple[str, bool]:
    """(path of object `key`, whether it was compiled now); `emit()` gives
    its UnitC when it has to be built, of configuration `checked` (its
    precompiled runtime header; None: compiled from the header)."""
    folder = objects_dir()
    target = os.path.join(folder, key + ".o")
    if use_cache and _usable(target, key):
        return target, False
    os.makedirs(folder, mode=0o700, exist_ok=True)
    with _locked(os.path.join(folder, key + ".lock")):
        if use_cache and _usable(target, key):      # another worker built it while we waited
            return target, False
        unit = emit()
        pch = ensure_pch(checked, opt) if checked is not None and use_cache else None
        _write_sites(key, unit.sites)         # before the object: a reader takes both or neither
        _compile_object(unit.text, target, opt, (), pch)
    _pruned_after_write()
    return target, True


def _usable(target: str, key: str) -> bool:
    if found_whole_before(target):          # one stat: verified by this process, the same file since
        return True
    if not present(target):                 # present: here, or fetched from a remote cache (nxc/remote/)
        return False
    if stamped(target) and present(_sites_path(key)):
        mark_used(target)                   # recently used: pruned last (keeps its verified stamp)
        note_found_whole(target)
        return True
    discard(target)                         # truncated, swapped or planted: never linked
    return False


def _compile_object(text: str | None, target: str, opt: str, defines: tuple = (), pch: str | None = None) -> None:
    """`cc -c` of C `text` (None: runtime/nx_runtime.c) into `target`, atomically;
    `pch`: the folder of the precompiled runtime header to use (ensure_pch)."""
    cc = c_build.compiler()
    work = scratch(os.path.dirname(target))         # its files renamed, never deleted (scratch.py)
    stem = os.path.splitext(os.path.basename(target))[0]
    out_tmp = os.path.join(work.folder, os.path.basename(target))
    source = os.path.join(runtime_dir(), "nx_runtime.c") if text is None else work.write("c", stem + ".c", text)
    # GCC looks for nx_runtime.h.gch in each include folder before the header: the precompiled
    # folder first, then the real header (which GCC silently falls back to if the .gch does not match).
    args = [*object_flags(opt), *defines, *(["-I", pch] if pch is not None else []), "-I", runtime_dir()]
    cmd = [*cc, *args, "-c", source, "-o", out_tmp]
    # cc1 and as without the driver when a probe showed that gives its very bytes (toolchain.py).
    plan = toolchain.plan_compile(cc, c_build.compiler_identity(tuple(cc)), args)
    if plan is not None:
        work.path("s", os.path.basename(toolchain.assembly_of(out_tmp)))
    try:
        _run_compiler(cmd, None if plan is None else toolchain.compile_commands(plan, source, out_tmp))
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(out_tmp)          # a failed compile's partial object
        raise
    publish(out_tmp, target)


# ---- the runtime header, precompiled ----
# Parsing nx_runtime.h costs every object ~15 ms of CPU at -O2: GCC compiles it once per
# configuration to a .gch and loads that in ~5 ms (docs/performance.md; the same objects).
# It depends on nothing of the file that includes it (the site table's size comes after
# it, NXRT_SITE_TABLE); a generated file includes it first, NXRT_CHECKED defined as for the .gch.
PCH_HEADER = "nx_runtime.h"


def pch_key(checked: bool, opt: str) -> str:
    return "pch-" + _digest("pch", build_config_text(checked, opt))[:24]


@lru_cache(maxsize=1)
def pch_supported() -> bool:
    """GCC only: clang neither finds a .gch by #include nor reads GCC's (it
    would compile correctly from the real header, only make .gch files in vain)."""
    ident = c_build.compiler_identity(tuple(c_build.compiler())).lower()
    return "clang" not in ident and os.environ.get("NXC_NO_PCH", "") in ("", "0")


_pch_failed: set[str] = set()           # configurations whose header did not precompile (this process)
_pch_verified: dict[str, tuple] = {}    # .gch path -> (inode, size, mtime) whose seal was checked


def ensure_pch(checked: bool, opt: str) -> str | None:
    """The folder holding the precompiled runtime header of this
    configuration, built if missing; None when there is none to use (not
    GCC, or it failed to build: objects then compile from the header)."""
    if not pch_supported():
        return None
    key = pch_key(checked, opt)
    if key in _pch_failed:
        return None
    folder = os.path.join(objects_dir(), key)
    target = os.path.join(folder, PCH_HEADER + ".gch")
    if _pch_usable(target):
        return folder
    with _locked(os.path.join(objects_dir(), key + ".lock")):
        if _pch_usable(target):         # another worker built it while we waited
            return folder
        try:
            _compile_header(target, checked, opt)
        except c_build.BuildError:
            _pch_failed.add(key)
            return None
    _prune_pch(folder)
    return folder if _pch_usable(target) else None


def _prune_pch(keep: str) -> None:
    """At most MAX_PCH precompiled headers (each about 5 MB) are kept: those
    of the configurations used last (a folder's time is its last check)."""
    parent = os.path.dirname(keep)
    try:
        found = [os.path.join(parent, n) for n in os.listdir(parent) if n.startswith("pch-") and not n.endswith(".lock")]
        found.sort(key=lambda p: os.stat(p).st_mtime, reverse=True)
    except OSError:
        return
    for old in [p for p in found if p != keep][MAX_PCH - 1:]:
        shutil.rmtree(old, ignore_errors=True)      # a compile that loses it falls back to the header


def _pch_usable(target: str) -> bool:
    """The .gch is what nxc built under that name (its seal: a .gch is loaded
    into the compiler, a planted one could put code into every object). Its
    SHA-256 (some MB) is checked once per process and file version."""
    try:
        st = os.stat(target)
    except OSError:
        return False
    version = (st.st_ino, st.st_size, st.st_mtime_ns)
    if _pch_verified.get(target) == version:
        return True
    if stamped(target):
        _pch_verified[target] = version
        with contextlib.suppress(OSError):
            os.utime(os.path.dirname(target))      # recently used: pruned last
        return True
    discard(target)
    return False


def _compile_header(target: str, checked: bool, opt: str) -> None:
    folder = os.path.dirname(target)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    defines = ["-DNXRT_CHECKED=1"] if checked else []
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        out_tmp = os.path.join(tmp, PCH_HEADER + ".gch")
        _run_compiler([*c_build.compiler(), *object_flags(opt), *defines, "-x", "c-header",
                       os.path.join(runtime_dir(), PCH_HEADER), "-o", out_tmp])
        publish(out_tmp, target)


def _run_compiler(cmd: list[str], direct: list[list[str]] | None = None) -> None:
    """Run the driver command `cmd`, or the commands `direct` that do the same
    without the driver (toolchain.py), one after the other. A failure names
    `cmd` (what a user can run again) and the direct command that failed."""
    for step in direct or [cmd]:
        proc = subprocess.run(step, capture_output=True, text=True)
        if proc.returncode != 0:
            if "No space left on device" in proc.stderr or "Read-only file system" in proc.stderr:
                raise OSError(errno.ENOSPC, "no space left on device")
            ran = "" if direct is None else "(run without the driver: failed in " + shlex.join(step) + ")\n"
            raise c_build.BuildError("the C compiler failed on code generated by nxc (this is a bug in nxc):\n"
                                     + shlex.join(cmd) + "\n" + ran + proc.stderr[-4000:])


def _pruned_after_write() -> None:
    """Past the bound, the least recently linked objects go, with their site
    tables and lock files (objects of modules that no longer exist are never
    linked again, so they are the first to go)."""
    global _object_writes
    _object_writes += 1
    if not prune_due(_object_writes):
        return
    folder = objects_dir()
    if prune_least_recent(folder, scaled_bound(MAX_OBJECTS), lambda n: n.endswith(".o")):
        try:
            names = set(os.listdir(folder))
        except OSError:
            return
        for name in names:
            stem, ext = os.path.splitext(name)
            if ext in (".sites", ".lock") and stem + ".o" not in names:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))


def runtime_key(checked: bool, opt: str) -> str:
    return "rt-" + _digest("runtime", build_config_text(checked, opt))[:24]


def ensure_runtime(checked: bool, opt: str, use_cache: bool = True) -> tuple[str, bool]:
    """The runtime's object for this configuration (runtime/nx_runtime.c)."""
    key = runtime_key(checked, opt)
    folder = objects_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    target = os.path.join(folder, key + ".o")
    if use_cache and present(target) and stamped(target):
        return target, False
    with _locked(os.path.join(folder, key + ".lock")):
        if use_cache and os.path.exists(target) and stamped(target):
            return target, False
        _compile_object(None, target, opt, ("-DNXRT_CHECKED",) if checked else ())
    return target, True


# ---- the link ----
@dataclass
class Linked(c_build.Built):
    """A gate's library, and what building it took. `host`: the link key of
    another gate's library that holds every object this gate needs, which it
    runs from (nxc/backend/c/hosts.py); `binding` and `site_keys` are then
    that library's, with this gate's main as the gate."""
    recompiled: list = field(default_factory=list)      # module paths whose objects were compiled now
    relinked: bool = False                              # the library was linked now
    host: str | None = None
    binding: Binding | None = None
    site_keys: tuple = ()


def find_host(object_keys: list[str], binding: Binding, runtime: str, opt: str) -> tuple | None:
    """(a library in the cache holding every one of a gate's `object_keys`,
    the binding that runs the gate from it), or None (nxc/backend/c/hosts.py)."""
    host = hosts.find_host(object_keys, binding.bases, binding.root, runtime, link_flags_text(opt), library_path)
    if host is None:
        return None
    return host, Binding(tuple((m, (k + 1) << SITE_BITS) for k, m in enumerate(host.ids)), binding.root)


def note_linked(key: str, object_keys: list[str], binding: Binding, runtime: str, opt: str) -> None:
    """Index library `key`, just linked, for the gates it can host."""
    hosts.note_library(key, object_keys, binding.bases, runtime, link_flags_text(opt))


def site_table(site_keys) -> SiteTable:
    """The sites of a library linking objects `site_keys` in order (ordinals
    from 1), each table read from beside its object when first asked for."""
    loaders = {k: (lambda key=key: read_sites(key) or []) for k, key in enumerate(site_keys, 1)}
    return SiteTable([], loaders, SITE_BITS)


_link_writes = 0


def build_gate(linked: LinkedC, opt: str = "2", use_cache: bool = True) -> Linked:
    try:
        return _build_gate(linked, opt, use_cache)
    except OSError as exc:                  # read-only or full cache folder
        degrade_after(exc)
        return _build_gate(linked, opt, use_cache)


def _build_gate(linked: LinkedC, opt: str, use_cache: bool) -> Linked:
    start = time.perf_counter()
    units, binding, rt, key = linked.plan(opt)
    target, name = library_path(key)
    cdef = "\n".join(GATE_CDEF + LINK_CDEF)
    if use_cache and present(target):
        if stamped(target):
            with contextlib.suppress(OSError):
                os.utime(target)
            return Linked(target, name, True, time.perf_counter() - start, cdef)
        discard(target)
    unit_keys = [u.key for u in units]
    found = find_host(unit_keys, binding, rt, opt) if use_cache else None
    if found is not None:           # a library linked for an importer holds all of it: nothing to build
        host, hosted = found
        write_gate_record(*linked.gate_record())
        return Linked(host.path, host.name, True, time.perf_counter() - start, cdef, host=host.key,
                      binding=hosted, site_keys=host.site_keys)
    objects, recompiled, runtime = ensure_objects(linked, units, opt, use_cache)
    # Nothing is compiled for the gate: its main is in its module's object, the entry points are the
    # runtime's, site bases and which main runs are set at load (Binding): a relink is the linker alone.
    link_library(target, [*objects, runtime], opt)
    if use_cache:
        write_gate_record(*linked.gate_record())
        note_linked(key, unit_keys, binding, rt, opt)
    return Linked(target, name, False, time.perf_counter() - start, cdef, recompiled=recompiled, relinked=True)


def ensure_objects(linked: LinkedC, units: list, opt: str, use_cache: bool) -> tuple[list, list, str]:
    """(the objects of `units`, the module paths of those compiled now, the
    runtime's object), each compiled unless it is in the cache."""
    recompiled = []
    objects = []
    for unit in units:
        path, compiled = ensure_object(unit.key, lambda u=unit: linked.emit_unit(u), opt, use_cache, linked.checked)
        objects.append(path)
        if compiled:
            recompiled.append(unit.module.source.path)
    runtime, _ = ensure_runtime(linked.checked, opt, use_cache)
    return objects, recompiled, runtime


def build_objects(linked: LinkedC, opt: str = "2") -> list[str]:
    """What a later run of the gate from records needs (nxc/backend/c/recorded.py):
    its objects and its gate record; nothing linked (CBackend.build_objects).
    The module paths whose objects were compiled now."""
    units, _, _, key = linked.plan(opt)
    target, _ = library_path(key)
    recompiled = [] if present(target) and stamped(target) else ensure_objects(linked, units, opt, True)[1]
    write_gate_record(*linked.gate_record())
    return recompiled


def library_path(key: str) -> tuple[str, str]:
    """(path, name) of the gate library of link key `key`."""
    name = f"_nx_{key}"
    return os.path.join(cache_dir(), "c", name + ".so"), name


def link_library(target: str, objects: list[str], opt: str) -> None:
    """Link `objects` (the modules', the runtime's) into the gate library `target`, atomically."""
    folder = os.path.dirname(target)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    # A file of a name of its own beside the target, renamed into place (a
    # temporary folder would cost a mkdir and an rmtree per gate).
    out_tmp = os.path.join(folder, f".build-{os.getpid()}-{os.urandom(6).hex()}-{os.path.basename(target)}")
    try:
        cc = c_build.compiler()
        before = [*c_build.flags_for(opt), *link_flags()]
        cmd = [*cc, *before, *objects, "-o", out_tmp, "-lm"]
        # ld without the driver and collect2 when a probe showed it gives the
        # driver's very bytes (nxc/backend/c/toolchain.py).
        plan = toolchain.plan_link(cc, c_build.compiler_identity(tuple(cc)), before, ["-lm"])
        _run_compiler(cmd, None if plan is None else [toolchain.link_command(plan, objects, out_tmp)])
        publish(out_tmp, target)
    finally:
        with contextlib.suppress(OSError):
            os.remove(out_tmp)          # (gone already when published)
    global _link_writes
    _link_writes += 1
    if prune_due(_link_writes):
        prune_least_recent(folder, scaled_bound(c_build.MAX_BUILDS),
                           lambda n: n.startswith("_nx_") and n.endswith((".so", ".pyd")))


def usable_object(key: str, folder: str | None = None) -> str | None:
    """The path of object `key` if in the cache, whole and stamped (else None); folder: objects_dir()."""
    target = os.path.join(folder or objects_dir(), key + ".o")
    return target if _usable(target, key) else None


def awaited_object(key: str) -> str | None:
    """usable_object(key), once no other worker is compiling it: one that
    holds its lock now (ensure_object) is waited for, as the build would wait
    for it, so that a link planned now does not ask for the bodies of an
    object another worker is about to publish (nxc/backend/c/needs.py)."""
    found = usable_object(key)
    if found is not None:
        return found
    try:
        fd = os.open(os.path.join(objects_dir(), key + ".lock"), os.O_RDWR)
    except OSError:
        return None                 # never locked: nobody is compiling it
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None             # nobody holds it: it is not being compiled
        except BlockingIOError:
            fcntl.flock(fd, fcntl.LOCK_EX)      # being compiled: wait for it
    finally:
        os.close(fd)                # releases the lock
    return usable_object(key)
