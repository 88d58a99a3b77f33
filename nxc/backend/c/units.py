"""C backend, unit logic: which functions, structs, globals and prototypes go
in one C file, around the bodies the function emitter writes (function.py).

Two kinds of file:
- the whole program as one file (`emit_whole`: nxc emit-c, the Python API),
  with an API wrapper per function (`EmittedC.only` keeps those a build needs);
- one module's own object (`emit_module`: a separately compiled gate links
  one per module of its closure), with the small imported functions it copies
  (copies.py), the prototypes of the others it calls, the structs and globals
  of its import closure, and its gate (`main`, as gate_symbol(module)).
The fixed file skeleton (includes, trap support, division helpers, entry
points) is the jinja2 template templates/module.c.j2 (mypyc's split:
templates for the skeleton, an emitter for code). `interface_text` is what
an importer's C can depend on of a module (objects.py keys objects on it).

Every function takes the ProgramFacts of its program (facts.py): the
lowering is run there, before any C is written.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from nxc import __version__
from nxc.backend.c.abi import FAULT_INFO_WORDS, GATE_CDEF, LINK_CDEF  # noqa: F401  (re-exported)
from nxc.syntax import ast
from nxc.check.program import Function
from nxc.check.types import VOID, PointerType, StructType
from nxc.check.externs import task_externs
from nxc.lower.guards import CAPTURE_SLOTS, CapturedOperand
from nxc.backend.emitter import CapturesMixin
from nxc.backend.escape import comment_text
from nxc.backend.skeleton import template
from nxc.backend.c.copies import walk_copies
from nxc.backend.c.facts import ProgramFacts, struct_of
from nxc.backend.c.function import function_entry, signature
from nxc.backend.c.names import CHECKED_EXTERNS, c_abi_type, c_int_literal, c_type, gate_symbol, module_c_id
from nxc.backend.c.sites import Site
from nxc.deep import deep


@dataclass
class EmittedC(CapturesMixin):
    text: str               # core + every function's API wrapper (what emit_c's callers compile)
    cdef: str               # declarations of the exported entry points, for cffi
    sites: list[Site]       # index -> position, for trap messages
    exports: list[Function] = field(default_factory=list)
    # gate return site -> the guard operands whose values the gate records
    captures: dict[int, list[CapturedOperand]] = field(default_factory=dict)
    capture_slots: int = CAPTURE_SLOTS
    checked: bool = False   # built with the memory checks and the shadow stack
    # The program without any nxw_ wrapper (gate entry points only), and each
    # function's wrapper: a wrapper makes its function and all it calls
    # reachable, so gcc compiles the whole import closure again for every
    # importer; `only` keeps the ones a build needs.
    core: str = ""
    wrappers: dict[str, dict] = field(default_factory=dict)  # name -> its wrappers.c.j2 fields

    def only(self, names) -> "EmittedC":
        """This program with the wrappers of `names` only (() for a gate build)."""
        names = [n for n in names if n in self.wrappers]
        wrapper_t = template("wrappers.c.j2") if names else None
        text = self.core + "".join(wrapper_t.render(exports=[self.wrappers[n]]) for n in names)
        cdef = "\n".join([*GATE_CDEF, *(f"int nxw_{n}({self.wrappers[n]['params']});" for n in names)]) + "\n"
        keep = set(names)
        return EmittedC(text, cdef, self.sites, [f for f in self.exports if f.decl.name in keep],
                        self.captures, self.capture_slots, self.checked, self.core,
                        {n: self.wrappers[n] for n in names})



_INT_TYPES = [("i8", "int8_t", "uint8_t", 8, True), ("i16", "int16_t", "uint16_t", 16, True),
              ("i32", "int32_t", "uint32_t", 32, True), ("i64", "int64_t", "uint64_t", 64, True),
              ("u8", "uint8_t", "uint8_t", 8, False), ("u16", "uint16_t", "uint16_t", 16, False),
              ("u32", "uint32_t", "uint32_t", 32, False), ("u64", "uint64_t", "uint64_t", 64, False)]


def _struct_entry(st) -> dict:
    return {"name": st.name, "size": st.size, "fields": [(c_type(f.type), f.name, f.offset) for f in st.fields]}


def _global_entry(sym, value: int, storage: str = "static ") -> dict:
    return {"type": c_type(sym.type), "name": sym.name, "storage": storage,
            "init": c_int_literal(value, sym.type) if not isinstance(sym.type, PointerType) else "0"}


def _render(program, *, unit: str, about: str, functions: list, sites: list, checked: bool,
            structs: list, declared: list, globals_: list, extern_globals: list = (), imported: list = (),
            module_id: str = "", gate: str | None = None, int_types: list = _INT_TYPES) -> str:
    return template("module.c.j2").render(
        version=__version__, root=comment_text(os.path.basename(about)), unit=unit, structs=structs, declared=declared,
        globals=globals_, extern_globals=extern_globals, imported=imported, functions=functions,
        has_entry=program.entry is not None, module_id=module_id, gate=gate,
        site_count=max(len(sites), 1), checked=checked, fault_words=FAULT_INFO_WORDS,
        int_types=int_types)


@deep    # deeply nested programs recurse deeply (nxc/deep.py)
def emit_whole(facts: ProgramFacts) -> EmittedC:
    """The whole program as one C file (nxc emit-c, the Python API).

    facts.unbox_f32=False writes every float32 primitive as a runtime call on
    bits (the plain path the unboxed code must agree with, bit for bit).
    `text` has every function's wrapper; `only(names)` keeps the ones a build
    needs (a gate build needs none).
    facts.checked: every memory access checked and the .nx call stack kept
    (runtime/nx_runtime.h, NXRT_CHECKED)."""
    program, checked = facts.program, facts.checked
    sites: list[Site] = []
    captures = dict(facts.plan.captures)
    functions = [function_entry(facts, fn, sites) for fn in program.functions]
    structs = [_struct_entry(st) for st in program.structs]
    globals_ = [_global_entry(sym, value) for sym, value in program.globals]
    exports = []
    for fn in program.functions:
        if fn is program.entry:
            continue
        params = [f"{c_abi_type(p.type)} a{i}" for i, p in enumerate(fn.params)]
        call_args = [f"({c_type(p.type)})a{i}" for i, p in enumerate(fn.params)]
        if fn.ret is not VOID:
            params.append(f"{c_abi_type(fn.ret)} *out")
        exports.append({"name": fn.decl.name, "params": ", ".join(params) or "void",
                        "call": f"nxf_{fn.decl.name}({', '.join(call_args)})",
                        "returns": fn.ret is not VOID,
                        "ret_abi": c_abi_type(fn.ret)})
    # The externs the program declares are callable through the Python API too
    # (`nxc.load("nx_f32.nx").nx_f32_add`): a wrapper calls the runtime's.
    for sym in program.externs:
        if sym.name in task_externs():
            continue                # its task is a function's name: no use from Python
        ftype = sym.type
        params = [f"{c_abi_type(t)} a{i}" for i, t in enumerate(ftype.params)]
        call_args = [f"({c_type(t)})a{i}" for i, t in enumerate(ftype.params)]
        soft = "nx_soft_" + sym.name[len("nx_"):]           # --soft-f32: the .nx primitive instead
        if sym.name in CHECKED_EXTERNS and checked:
            call = f"nxrt_chk_{sym.name}({', '.join(call_args + ['-1'])})"     # site -1: the Python API
        elif any(fn.decl.name == soft for fn in program.functions):
            call = f"nxf_{soft}({', '.join(call_args)})"
        else:
            call = f"nxrt_{sym.name}({', '.join(call_args)})"
        if ftype.ret is not VOID:
            params.append(f"{c_abi_type(ftype.ret)} *out")
        exports.append({"name": sym.name, "params": ", ".join(params) or "void", "call": call,
                        "returns": ftype.ret is not VOID, "ret_abi": c_abi_type(ftype.ret)})
    core = _render(program, unit="whole", about=program.graph.root.source.path, functions=functions, sites=sites,
                   checked=checked, structs=structs, declared=[st["name"] for st in structs], globals_=globals_)
    exported = [fn for fn in program.functions if fn is not program.entry]
    bare = EmittedC(core, "", sites, exported, captures, CAPTURE_SLOTS, checked, core,
                    {x["name"]: x for x in exports})
    return bare.only(bare.wrappers)


# ---- separate compilation: one C file per module ----
@dataclass
class UnitC:
    """One translation unit of a separately compiled gate (a module's object):
    its C text and its sites, numbered from 0 (its ordinal in the link is
    added at run time)."""
    text: str
    sites: list[Site]


class UnknownCopies(RuntimeError):
    """A unit copies in a function whose body its program did not check and
    whose C is not kept (LinkPlanner asks for those bodies first: needs.py)."""


def _unit_parts(facts: ProgramFacts, own: list[Function], closure: list[ast.Module], copy_key=None):
    """What a unit holding `own` declares around it: the small straight-line
    imported functions it copies (ProgramFacts.is_copied: like a C header's
    static inline functions, so that a kernel's loop can still inline and
    vectorize them) as their CopiedC, the prototypes of the
    other imported functions it calls, the structs of its import closure it
    uses (dependencies first) and those it only names (a forward declaration
    each), and the position of a declaration in the closure's order.

    A struct is defined in full when a function of the unit (its own, its
    gate, a copy) holds a value of it or reads a field of it
    (facts.structs_used), and so is every struct such a struct embeds by
    value; a struct only named (a pointer a function passes along, an
    imported function's prototype, a global's type, a pointer field of a
    defined struct) is declared (C needs no layout for a pointer). What decides the
    choice is the unit's own bodies and its closure's interfaces (the
    layouts, the signatures, the copies' C): the object key's parts."""
    by_name = facts.by_name
    copies, called, unknown = walk_copies(facts, own, copy_key, write=True)
    if unknown:         # the gate worker checks their bodies first, as LinkPlanner asks (needs.py)
        raise UnknownCopies(f"copied functions neither checked nor kept: {sorted(fn.decl.name for fn in unknown)}")
    order = {m.source.path: k for k, m in enumerate(closure)}
    position = lambda pos: (order.get(pos.file.path, len(order)), pos.line, pos.col)   # noqa: E731
    copied = sorted(copies.values(), key=lambda c: position(c[0].decl.pos))
    imported = [signature(by_name[n], "extern") for n in sorted(called)]
    members = [facts.members(m) for m in closure]
    visible = {st.name: st for ms in members for st in ms.structs}
    uses = [facts.structs_of(fn) for fn in own] + [c.structs for _, c in copied]
    used = set().union(*(defined for defined, _ in uses))
    structs = _in_dependency_order([visible[n] for n in used if n in visible], position)
    named = [f.type for st in structs for f in st.fields]
    named += [t for n in called for t in [by_name[n].ret, *(p.type for p in by_name[n].params)]]
    named += [sym.type for ms in members for sym, _ in ms.globals]
    declared = ({st.name for st in structs} | {st.name for st in map(struct_of, named) if st is not None}
                | set().union(*(names for _, names in uses)))
    declared = sorted((visible[n] for n in declared if n in visible), key=lambda st: position(st.pos))
    return [c for _, c in copied], imported, structs, declared, position


def _in_dependency_order(structs: list, position) -> list:
    """`structs` in declaration order, each after the structs it embeds by value."""
    done: set[int] = set()
    out = []

    def visit(st):
        if id(st) in done:
            return
        done.add(id(st))
        for f in st.fields:
            if isinstance(f.type, StructType):
                visit(f.type)
        out.append(st)
    for st in sorted(structs, key=lambda st: position(st.pos)):
        visit(st)
    return out


@deep
def emit_module(facts: ProgramFacts, module: ast.Module, closure: list[ast.Module], copy_key=None) -> UnitC:
    """The C file of one module's own functions and its gate (its `main`, if
    any, in gate mode, as `gate_symbol(module)`), for an object that every
    gate importing the module links; the module's gate runs when the module is
    the root (the loader says so: nx_runtime.c, nxc_module_bind).

    `closure`: the module's import closure, dependencies first (nxc/backend/c/
    closure.py). The text depends only on the module and that closure, never
    on the gate that links it: sites and gate return numbers are module-local
    (NX_SITE; GateReturn.site), structs and globals are those of the closure,
    in its order. `facts.program` must have checked the module's main if it
    has one (program.gates), and the bodies of the functions the unit copies
    that are not kept under `copy_key` (copies.copies_unknown): `copy_key(fn)`
    is the digest that decides a copied function's C (its module's object
    key), or None."""
    program, checked = facts.program, facts.checked
    gate = program.gates.get(module.source.path)
    mine = facts.members(module)
    own = mine.functions
    mains = [gate.fn] if gate is not None else []
    copied, imported, structs, declared, position = _unit_parts(facts, own + mains, closure, copy_key)
    sites: list[Site] = []
    functions = ([c.placed(sites) for c in copied]
                 + [function_entry(facts, fn, sites, linkage="module", site_macro=True) for fn in own]
                 + [function_entry(facts, fn, sites, linkage="module", name=gate_symbol(module), site_macro=True)
                    for fn in mains])
    others = sorted((g for m in closure if m is not module for g in facts.members(m).globals),
                    key=lambda g: position(g[0].pos))
    text = _render(program, unit="module", about=module.source.path, functions=functions, sites=sites,
                   checked=checked, structs=[_struct_entry(st) for st in structs],
                   declared=[st.name for st in declared],
                   globals_=[_global_entry(sym, value, "") for sym, value in mine.globals],
                   extern_globals=[_global_entry(sym, value, "") for sym, value in others],
                   imported=imported, module_id=module_c_id(module), gate=gate_symbol(module) if mains else None,
                   int_types=_division_types(functions))
    return UnitC(text, sites)


def _division_types(functions: list) -> list:
    """The rows of _INT_TYPES whose division helpers (module.c.j2: nx_div_T,
    nx_rem_T) the unit's functions call: a module's object holds only those."""
    text = "\n".join(line for f in functions for line in f["body"])
    return [row for row in _INT_TYPES if f"nx_div_{row[0]}(" in text or f"nx_rem_{row[0]}(" in text]


def interface_text(facts: ProgramFacts, module: ast.Module) -> str:
    """What the C of a module that imports `module` can depend on, as text:
    its functions' signatures and their effects (whether a call may end a
    mapping, touches memory, can fail or spin: the checked code of a caller
    forgets its caches, hoists checks, keeps a frame by them), the C of the
    small straight-line functions importers copy (ProgramFacts.is_copied,
    with their sites' positions), its structs' layouts, its globals, consts
    and externs. A body edit of any other function leaves it unchanged, so
    importers are not recompiled.
    A gate's worker computes it only for the modules whose bodies it checked;
    the others' digests come from the records kept with their objects
    (LinkedC in objects.py)."""
    members = facts.members(module)
    fx = None                   # a module without functions needs no effects (nor the program's fixed points)
    parts = []
    for fn in members.functions:
        fx = fx or facts.effects
        name = fn.decl.name
        parts.append(f"fn {signature(fn, 'extern')} unmaps={name in fx.may_unmap} "
                     f"memory_free={name in fx.memory_free} silent={name in fx.silent}")
        if facts.is_copied(fn):
            sites: list[Site] = []
            entry = function_entry(facts, fn, sites, site_macro=True)
            parts.append(f"body {entry['line']} {entry['path']}\n" + "\n".join(entry["body"]) + "\n"
                         + repr([(s.path, s.line, s.col, s.what, s.kind, s.function) for s in sites]))
    for st in members.structs:
        parts.append(f"struct {st.name} {st.size} {[(c_type(f.type), f.name, f.offset) for f in st.fields]}")
    for sym, value in members.globals:
        parts.append(f"global {sym.name} {sym.type} {value}")
    for sym in members.consts:
        parts.append(f"const {sym.name} {sym.type} {sym.value}")
    for sym in members.externs:
        parts.append(f"extern {sym.name} {sym.type}")
    return "\n".join(parts)
