"""Declarations kept per worker process: a module's declarations, checked in
one gate, reused by the next gates of the same worker (issue 21).

A worker of `nxc test` checks the declarations of each gate's whole import
closure (names, types and struct layouts, constants, signatures), about 60
modules a gate in a random 800-module tree, and most of them are the same
modules with the same results in every gate. `DeclReuse` keeps, per module
(its real path, and --soft-f32), what the declaration phase made of it: its
top-level symbols with their resolved types and values, its structs (laid
out), its aliases, its signatures, the side-table entries of its constants'
expressions, its interface digest, and `refs`: every top-level name its
declarations resolved, with the very symbol it resolved to.

A kept module is taken again only when, in the new graph, it is the same
parsed module (the parse cache's AST object: same path and text), none of
its names is declared by an earlier module (a duplicate is an error the
full path reports), and every name in `refs` resolves to the same symbol
object, that is to a module that is reused too (checked to a fixed point:
a module declared afresh makes new symbols, so the modules that refer to
it are declared afresh as well). Everything its declarations computed
depends only on those symbols and its own AST, so the results are the
same objects the full path would compute again, placed in the same order
(top-level names, structs in the order the layout pass completes them,
externs, functions). Only a declaration phase without any diagnostic is
kept, so a reused module never hides an error or a warning. Globals are
checked again in every gate (a few, and their values are emitted per
module). Keyed by content, not by path alone: `nxc test --watch` is one
long-lived process in which files change; a changed file is a new AST.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from nxc.cache import scaled_bound
from nxc.check.program import Function, Symbol
from nxc.check.types import BUILTIN_TYPES, StructType
from nxc.syntax import ast

# Modules kept (a few KB each, beside their ASTs, which the parse cache keeps
# anyway); at least this many, and twice the run's modules (cache.scaled_bound).
MEMO_MIN = 256
_MEMO: "OrderedDict[tuple[str, bool], Decls]" = OrderedDict()
counters = {"reused": 0, "declared": 0}        # modules, since the process started (tests read them)


@dataclass(eq=False)
class Decls:
    """One module's declarations as a check made them."""
    module: ast.Module
    by_name: dict               # name -> its Symbol, in declaration order
    aliases: list               # (name, TypeAlias, resolved type)
    structs: list               # (name, StructType laid out, StructDecl)
    # per FuncDecl, in order: (decl, symbol or None for main, its parameters'
    # symbols, ret, type). The parameters' symbols are shared by every gate
    # that takes the module: a body check reads them and sets only `used`,
    # which is read for locals alone (the unused-variable warning).
    sigs: list
    info: tuple                 # (types, consts, syms) entries of its constants' expressions
    refs: dict                  # name -> the Symbol its declarations resolved it to
    interface: str | None = None      # its interface digest (nxc/check/summary.py)


def forget() -> None:
    """Drop every kept module (tests)."""
    _MEMO.clear()


def kept() -> int:
    return len(_MEMO)


def _declares(item) -> bool:
    """Whether collect_module gives `item` a top-level name."""
    if isinstance(item, ast.Import):
        return False
    if isinstance(item, ast.FuncDecl):
        return item.is_extern or item.name != "main"
    return True


class DeclReuse:
    """Mixin for the checker (before the Checker in the bases): the
    declaration phase takes kept modules' declarations where it can, and
    keeps those it makes. Call `init_reuse()` in the constructor."""

    def init_reuse(self, enabled: bool = True) -> None:
        self.reuse_enabled = enabled
        self._decl_at: str | None = None            # the module whose declarations are being checked
        self._refs: dict[str, dict[str, Symbol]] = {}
        self._reused: dict[str, Decls] = {}
        self._made: dict[str, Decls] = {}
        self._pending: set[int] = set()             # reused structs not yet placed in struct_order
        self._collided: set[str] = set()

    # ---- where the declaration phase is: each name resolved is noted for that module
    def _within(self, path: str | None, fn, *args):
        saved, self._decl_at = self._decl_at, path
        try:
            return fn(*args)
        finally:
            self._decl_at = saved

    def _note_ref(self, name: str) -> None:
        sym = self.top.get(name)
        if sym is not None:
            self._refs.setdefault(self._decl_at, {})[name] = sym

    def lookup(self, e: ast.Name):
        sym = super().lookup(e)
        if self._decl_at is not None and self.func is None and sym is not None and self.top.get(e.ident) is sym:
            self._refs.setdefault(self._decl_at, {})[e.ident] = sym
        return sym

    def resolve_type(self, texpr, allow_void: bool = False):
        if self._decl_at is not None and isinstance(texpr, ast.TypeName) and texpr.name not in BUILTIN_TYPES:
            self._note_ref(texpr.name)
        return super().resolve_type(texpr, allow_void)

    def declare_top(self, item, module) -> None:
        if item.name in self.top:
            self._collided.add(module.source.path)      # an error or a shared extern: never kept
        super().declare_top(item, module)

    def const_value(self, sym: Symbol, at):
        if sym.type is not None or sym.module is None:
            return super().const_value(sym, at)
        return self._within(sym.module.source.path, super().const_value, sym, at)

    def alias_type(self, name: str, at):
        if name in self.alias_types:
            return self.alias_types[name]
        sym = self.top.get(name)
        where = sym.module.source.path if sym is not None and sym.module is not None else None
        return self._within(where, super().alias_type, name, at)

    def complete_struct(self, st: StructType, at) -> bool:
        if st.complete:
            if id(st) in self._pending:
                # A reused struct, placed in struct_order where the layout pass
                # would place it: after the structs it embeds.
                self._pending.discard(id(st))
                for f in st.fields:
                    if isinstance(f.type, StructType):
                        self.complete_struct(f.type, at)
                self.struct_order.append(st)
            return True
        sym = self.top.get(st.name)
        where = sym.module.source.path if sym is not None and sym.module is not None else None
        return self._within(where, super().complete_struct, st, at)

    def check_global(self, sym: Symbol, out: list) -> None:
        self._within(sym.module.source.path if sym.module is not None else None, super().check_global, sym, out)

    # ---- the phases over kept modules
    def collect_declarations(self) -> None:
        self._reused = self._usable() if self.reuse_enabled else {}
        for module in self.graph.modules:
            d = self._reused.get(module.source.path)
            if d is None:
                self._within(module.source.path, self.collect_module, module)
                continue
            counters["reused"] += 1
            self.top.update(d.by_name)
            for name, decl, t in d.aliases:
                self.aliases[name] = decl
                self.alias_types[name] = t
            for name, st, decl in d.structs:
                self.structs[name] = st
                self.struct_decls[name] = decl
                self._pending.add(id(st))
            types, consts, syms = d.info
            self.types.update(types)
            self.consts.update(consts)
            self.syms.update(syms)

    def module_signatures(self, module, funcs: list) -> None:
        d = self._reused.get(module.source.path)
        if d is None:
            self._within(module.source.path, super().module_signatures, module, funcs)
            return
        for decl, sym, params, ret, ftype in d.sigs:
            if decl.is_extern:
                self.externs.append(sym)
                continue
            if sym is None:             # a gate: its symbol is made afresh, as the full path does
                sym = Symbol("func", "main", ftype, decl.pos, decl=decl)
            funcs.append(Function(sym, decl, list(params), ret, module))

    def _usable(self) -> dict[str, Decls]:
        """The kept modules of this graph that can be taken as they are."""
        soft = self.soft_f32
        cands: dict[str, Decls] = {}
        for m in self.graph.modules:
            d = _MEMO.get((m.source.path, soft))
            if d is not None and d.module is m:
                cands[m.source.path] = d
        if not cands:
            return {}
        owner: dict[str, str] = {}          # name -> the first module declaring it (it wins)
        for m in self.graph.modules:
            p = m.source.path
            d = cands.get(p)
            names = d.by_name if d is not None else [it.name for it in m.items if _declares(it)]
            for n in names:
                if n in owner:
                    cands.pop(p, None)      # a duplicate: the full path reports it
                else:
                    owner[n] = p
        changed = True
        while changed:                      # a module declared afresh makes new symbols
            changed = False
            for p, d in list(cands.items()):
                for n, s in d.refs.items():
                    od = cands.get(owner.get(n))
                    if od is None or od.by_name.get(n) is not s:
                        del cands[p]
                        changed = True
                        break
        return cands

    def remember_declarations(self, funcs: list) -> None:
        """Keep the declarations of the modules declared afresh (only after
        a declaration phase without any diagnostic)."""
        if not self.reuse_enabled or self.diags.items:
            return
        by_decl = {id(fn.decl): fn for fn in funcs}
        soft = self.soft_f32
        for m in self.graph.modules:
            p = m.source.path
            if p in self._reused:
                _MEMO.move_to_end((p, soft))
                continue
            if p in self._collided:
                continue
            d = self._decls_of(m, by_decl)
            if d is not None:
                counters["declared"] += 1
                self._made[p] = d
                _MEMO[(p, soft)] = d
                _MEMO.move_to_end((p, soft))
        while len(_MEMO) > scaled_bound(MEMO_MIN):
            _MEMO.popitem(last=False)

    def _decls_of(self, m: ast.Module, by_decl: dict) -> Decls | None:
        by_name, aliases, structs, sigs = {}, [], [], []
        types, consts, syms = {}, {}, {}
        for item in m.items:
            if not _declares(item):
                if isinstance(item, ast.FuncDecl):      # a gate
                    fn = by_decl.get(id(item))
                    if fn is None:
                        return None
                    sigs.append((item, None, tuple(fn.params), fn.ret, fn.sym.type))
                continue
            sym = self.top.get(item.name)
            if sym is None or sym.decl is not item:
                return None
            by_name[item.name] = sym
            if isinstance(item, ast.TypeAlias):
                aliases.append((item.name, item, self.alias_types.get(item.name)))
            elif isinstance(item, ast.StructDecl):
                structs.append((item.name, self.structs[item.name], item))
            elif isinstance(item, ast.ConstDecl):
                for node in ast.walk(item.value):
                    for table, out in ((self.types, types), (self.consts, consts), (self.syms, syms)):
                        if node in table:
                            out[node] = table[node]
            elif isinstance(item, ast.FuncDecl):
                if item.is_extern:
                    sigs.append((item, sym, None, None, None))
                else:
                    fn = by_decl.get(id(item))
                    if fn is None:
                        return None
                    sigs.append((item, sym, tuple(fn.params), fn.ret, None))
        return Decls(m, by_name, aliases, structs, sigs, (types, consts, syms), dict(self._refs.get(m.source.path, {})))

    def known_interface(self, path: str) -> str | None:
        d = self._reused.get(path)
        return d.interface if d is not None else None

    def keep_interface(self, path: str, digest: str) -> None:
        d = self._made.get(path)
        if d is not None:
            d.interface = digest
