"""Checker, declarations: the shared namespace of the import graph, types
and struct layouts, constants (evaluated lazily, so the order of declaration
does not matter), function signatures, externs and globals."""
from __future__ import annotations

from nxc.syntax import ast
from nxc.diagnostics import Diagnostics, Pos
from nxc.check.base import CheckerBase, Scope, kind_word, suggest
from nxc.check.defined_where import missing_import
from nxc.check.externs import externs
from nxc.check.program import Function, Symbol
from nxc.check.types import (BUILTIN_TYPES, I64, VOID, BoolType, FuncType, IntType, PointerType,
                             StructField, StructType, Type, layout_struct)


class DeclChecker(CheckerBase):
    def collect_declarations(self) -> None:
        for module in self.graph.modules:
            self.collect_module(module)

    def collect_module(self, module) -> None:
        """The top-level names of one module (nxc/check/summary.py reuses a
        module's from an earlier check instead, where it can)."""
        for item in module.items:
            if isinstance(item, ast.Import):
                continue
            if isinstance(item, ast.FuncDecl) and item.name == "main" and not item.is_extern:
                continue   # every module may have its own gate; see function_signatures
            if isinstance(item, ast.TypeAlias) and item.name in BUILTIN_TYPES \
                    or isinstance(item, ast.StructDecl) and item.name in BUILTIN_TYPES:
                self.diags.error(item.pos, f"'{item.name}' is a built-in type and cannot be redefined")
                continue
            self.declare_top(item, module)

    def declare_top(self, item, module) -> None:
        name = item.name
        kind = {ast.ConstDecl: "const", ast.GlobalDecl: "global", ast.TypeAlias: "type",
                ast.StructDecl: "struct"}.get(type(item))
        if kind is None:
            kind = "extern" if item.is_extern else "func"
        prev = self.top.get(name)
        if prev is not None:
            if kind == "extern" and prev.kind == "extern" and _same_signature(prev.decl, item):
                return     # the same extern declared by two modules: one function
            self.diags.error(item.pos, f"'{name}' is defined twice",
                             [Diagnostics.note(prev.pos, f"the other definition of '{name}' is here")])
            return
        sym = Symbol(kind, name, None, item.pos, decl=item, mutable=(kind == "global"), module=module)
        self.top[name] = sym
        if kind == "type":
            self.aliases[name] = item
        elif kind == "struct":
            st = StructType(name, pos=item.pos)
            self.structs[name] = st
            self.struct_decls[name] = item

    # ---- types ----
    def resolve_type(self, texpr, allow_void: bool = False) -> Type | None:
        if isinstance(texpr, ast.TypePointer):
            target = self.resolve_type(texpr.target, allow_void=True)
            return None if target is None else PointerType(target)
        name = texpr.name
        if name in BUILTIN_TYPES:
            t = BUILTIN_TYPES[name]
            if t is VOID and not allow_void:
                self.diags.error(texpr.pos, "'void' is only allowed behind a pointer ('*void')")
                return None
            return t
        if name in self.structs:
            return self.structs[name]
        if name in self.aliases:
            t = self.alias_type(name, texpr.pos)
            if t is VOID and not allow_void:
                self.diags.error(texpr.pos, "'void' is only allowed behind a pointer ('*void')")
                return None
            return t
        sym = self.top.get(name)
        if sym is not None:
            self.diags.error(texpr.pos, f"'{name}' is a {kind_word(sym.kind)}, not a type")
            return None
        known = list(BUILTIN_TYPES) + list(self.structs) + list(self.aliases)
        hint, notes = ("", []) if self.diags.saturated() else \
            missing_import(name, texpr.pos, self.graph.include, ("struct", "type"))
        self.diags.error(texpr.pos, f"unknown type '{name}'" + (hint or suggest(name, known)), notes)
        return None

    def alias_type(self, name: str, at: Pos) -> Type | None:
        if name in self.alias_types:
            return self.alias_types[name]
        if name in self.resolving:
            self.diags.error(self.aliases[name].pos, f"type alias '{name}' refers to itself")
            self.alias_types[name] = None
            return None
        self.resolving.add(name)
        t = self.resolve_type(self.aliases[name].target, allow_void=True)
        self.resolving.discard(name)
        self.alias_types[name] = t
        return t

    def complete_struct(self, st: StructType, at: Pos) -> bool:
        if st.complete:
            return True
        decl = self.struct_decls[st.name]
        key = "struct " + st.name
        if key in self.resolving:
            self.diags.error(decl.pos, f"struct '{st.name}' contains itself; use a pointer (*{st.name}) instead")
            return False
        self.resolving.add(key)
        seen: dict[str, ast.FieldDecl] = {}
        fields = []
        for f in decl.fields:
            if f.name in seen:
                self.diags.error(f.pos, f"struct '{st.name}' has two fields named '{f.name}'",
                                 [Diagnostics.note(seen[f.name].pos, "the first one is here")])
                continue
            seen[f.name] = f
            t = self.resolve_type(f.type_expr)
            if t is None:
                continue
            if isinstance(t, StructType) and not self.complete_struct(t, f.pos):
                continue
            fields.append(StructField(f.name, t, 0, f.pos))
        if not decl.fields:
            self.diags.error(decl.pos, f"struct '{st.name}' has no fields")
        st.fields = fields
        layout_struct(st)
        self.resolving.discard(key)
        self.struct_order.append(st)
        return True

    # ---- constants ----
    def const_value(self, sym: Symbol, at: Pos) -> int | None:
        if sym.type is not None or sym.name in self.evaluating:
            if sym.name in self.evaluating:
                self.diags.error(at, f"constant '{sym.name}' depends on itself")
                sym.type = I64
            return sym.value
        self.evaluating.add(sym.name)
        decl: ast.ConstDecl = sym.decl
        want = self.resolve_type(decl.type_expr) if decl.type_expr is not None else None
        saved = (self.func, self.scope)
        self.func, self.scope = None, Scope(None)
        t = self.check_value(decl.value, want)
        self.func, self.scope = saved
        if want is not None and t is not None:
            self.coerce(decl.value, want, "the constant's value")
        ty = want or t
        if ty is not None and not isinstance(ty, (IntType, BoolType)):
            self.diags.error(decl.pos, f"constant '{sym.name}' must have an integer or bool type, not {ty}")
        elif t is not None and self.consts.get(decl.value) is None:
            self.diags.error(decl.value.pos, f"the value of constant '{sym.name}' is not a constant expression")
        sym.type = ty or I64
        value = self.consts.get(decl.value)
        sym.value = value if value is not None else 0
        self.evaluating.discard(sym.name)
        return sym.value

    # ---- functions and globals ----
    def function_signatures(self) -> list[Function]:
        funcs = []
        for module in self.graph.modules:
            self.module_signatures(module, funcs)
        return funcs

    def module_signatures(self, module, funcs: list[Function]) -> None:
        """The signatures of one module's functions and externs; appends its functions to `funcs`."""
        for item in module.items:
            if not isinstance(item, ast.FuncDecl):
                continue
            params = []
            names: dict[str, ast.Param] = {}
            for p in item.params:
                t = self.resolve_type(p.type_expr)
                if p.name in names:
                    self.diags.error(p.pos, f"parameter '{p.name}' appears twice",
                                     [Diagnostics.note(names[p.name].pos, "the first one is here")])
                names[p.name] = p
                if isinstance(t, StructType):
                    self.diags.error(p.type_expr.pos, f"parameter '{p.name}' has struct type {t}: structs are passed by pointer (*{t})")
                    t = None
                params.append(Symbol("param", p.name, t, p.pos, mutable=True, unique=p.name))
            ret = VOID if item.ret is None else self.resolve_type(item.ret)
            if isinstance(ret, StructType):
                self.diags.error(item.ret.pos, f"function '{item.name}' returns struct {ret} by value; return a pointer (*{ret})")
                ret = None
            ftype = FuncType(tuple(p.type for p in params), ret)
            if item.name == "main" and not item.is_extern:
                if item.params or ret != I64:
                    self.diags.error(item.pos, "a module's gate must be declared 'func main() -> i64'")
                sym = Symbol("func", "main", ftype, item.pos, decl=item)
            else:
                sym = self.top.get(item.name)
                if sym is None or sym.decl is not item:
                    if sym is not None and sym.kind == "extern" and item.is_extern:
                        continue            # an identical extern seen before
                    continue                # a duplicate, already reported
                sym.type = ftype
            if item.is_extern:
                self.check_extern(item, ftype)
                self.externs.append(sym)
                continue
            funcs.append(Function(sym, item, params, ret, module))

    def check_extern(self, item: ast.FuncDecl, ftype: FuncType) -> None:
        EXTERNS = externs()
        spec = EXTERNS.get(item.name)
        if spec is None:
            self.diags.error(item.pos, f"extern function '{item.name}' is not provided by the runtime"
                             + suggest(item.name, EXTERNS)
                             + " (the runtime provides: " + ", ".join(sorted(EXTERNS)) + ")")
            return
        want_params, want_ret = spec
        have_params = tuple(str(p) for p in ftype.params)
        have_ret = str(ftype.ret)
        if have_params != tuple(want_params) or have_ret != want_ret:
            sig = ", ".join(want_params)
            ret = "" if want_ret == "void" else f" -> {want_ret}"
            self.diags.error(item.pos, f"extern '{item.name}' does not match the runtime: "
                             f"it is 'extern func {item.name}({sig}){ret}'")

    def check_globals(self) -> list[tuple[Symbol, int]]:
        out = []
        for sym in self.top.values():
            if sym.kind == "global":
                self.check_global(sym, out)
        return out

    def check_global(self, sym: Symbol, out: list) -> None:
        decl: ast.GlobalDecl = sym.decl
        t = self.resolve_type(decl.type_expr)
        if isinstance(t, StructType):
            self.diags.error(decl.type_expr.pos, f"global '{sym.name}' has struct type {t}; allocate it and keep a pointer")
            t = None
        if t is None:
            return
        sym.type = t
        self.func, self.scope = None, Scope(None)
        vt = self.check_value(decl.value, t)
        if vt is not None:
            self.coerce(decl.value, t, f"the initial value of '{sym.name}'")
            if self.consts.get(decl.value) is None and not self.is_null_pointer(decl.value):
                self.diags.error(decl.value.pos, f"the initial value of global '{sym.name}' must be a constant expression")
        out.append((sym, self.consts.get(decl.value) or 0))

    def is_null_pointer(self, e: ast.Expr) -> bool:
        return (isinstance(e, ast.Cast) and isinstance(self.types.get(e), PointerType)
                and self.consts.get(e.expr) == 0)


def _same_signature(a: ast.FuncDecl, b: ast.FuncDecl) -> bool:
    def text(t):
        if t is None:
            return "void"
        return "*" + text(t.target) if isinstance(t, ast.TypePointer) else t.name
    return ([text(p.type_expr) for p in a.params] == [text(p.type_expr) for p in b.params]
            and text(a.ret) == text(b.ret))
