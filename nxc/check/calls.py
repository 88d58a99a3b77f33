"""Checker, calls: arity and argument types against the callee's
signature, and the --soft-f32 rewrite of float32 primitive calls."""
from __future__ import annotations

from nxc.syntax import ast
from nxc.diagnostics import Diagnostics
from nxc.check.base import CheckerBase, kind_word
from nxc.check.externs import f32_primitives, task_externs
from nxc.check.program import SOFT_F32_MODULE, Symbol, soft_f32_name
from nxc.check.types import I64, VOID, VOID_PTR, FuncType


class CallChecker(CheckerBase):
    def visit_Call(self, e: ast.Call, want):
        return self.check_call(e, allow_void=False)

    def check_call(self, e: ast.Call, allow_void: bool):
        f = e.func
        if not isinstance(f, ast.Name):
            self.check_expr(f, None)
            self.diags.error(e.pos, "only a function can be called, by its name")
            for a in e.args:
                self.check_value(a, None)
            return None
        sym = self.lookup(f)
        if sym is None:
            for a in e.args:
                self.check_value(a, None)
            return None
        if sym.kind not in ("func", "extern"):
            self.diags.error(f.pos, f"'{f.ident}' is a {kind_word(sym.kind)}, not a function; it cannot be called")
            for a in e.args:
                self.check_value(a, None)
            return None
        if sym.kind == "func" and f.ident == "main":
            self.diags.error(f.pos, "a gate ('main') cannot be called")
        if self.soft_f32 and sym.kind == "extern":
            sym = self.soft_f32_callee(f, sym)
        ftype: FuncType = sym.type
        decl: ast.FuncDecl = sym.decl
        self.types[f] = ftype
        if ftype is None:
            return None
        if len(e.args) != len(ftype.params):
            self.diags.error(e.pos, f"'{f.ident}' takes {len(ftype.params)} argument"
                             f"{'s' if len(ftype.params) != 1 else ''} but {len(e.args)} "
                             f"{'were' if len(e.args) != 1 else 'was'} given",
                             [Diagnostics.note(decl.pos, f"'{f.ident}' is declared here")])
        for i, a in enumerate(e.args):
            pt = ftype.params[i] if i < len(ftype.params) else None
            if i == 0 and sym.kind == "extern" and sym.name in task_externs():
                self.check_task(a, f.ident)
                continue
            at = self.check_value(a, pt)
            if at is not None and pt is not None:
                self.coerce(a, pt, f"argument '{decl.params[i].name}' of '{f.ident}'")
        ret = ftype.ret
        if ret is VOID and not allow_void:
            self.diags.error(e.pos, f"'{f.ident}' returns no value")
            return None
        return ret

    # The signature a task of sys_parallel_for must have (runtime/nx_threads.h).
    TASK_TYPE = FuncType((VOID_PTR, I64, I64), VOID)

    def check_task(self, a, callee: str) -> None:
        """The first argument of sys_parallel_for: the name of a function
        (ctx: *void, begin: i64, end: i64) with no result. .nx has no function
        values; this is the one place a function's name is an argument (the
        emitters pass its address). Its type is recorded as *void."""
        want = "func(ctx: *void, begin: i64, end: i64)"
        sym = self.lookup(a) if isinstance(a, ast.Name) else None
        if not isinstance(a, ast.Name):
            self.check_value(a, None)
            self.diags.error(a.pos, f"the first argument of '{callee}' must be the name of a function {want}")
            return
        if sym is None:
            return
        if sym.kind != "func" or a.ident == "main":
            self.diags.error(a.pos, f"the first argument of '{callee}' must be the name of a function {want}; "
                             f"'{a.ident}' is {'the gate' if a.ident == 'main' else 'a ' + kind_word(sym.kind)}")
            return
        if sym.type is not None and sym.type != self.TASK_TYPE:
            self.diags.error(a.pos, f"'{a.ident}' cannot be a task of '{callee}': it is {sym.type}, "
                             f"a task is {want} with no result",
                             [Diagnostics.note(sym.decl.pos, f"'{a.ident}' is declared here")])
            return
        self.types[a] = VOID_PTR

    def soft_f32_callee(self, f: ast.Name, sym: Symbol) -> Symbol:
        """--soft-f32: a call of a runtime float32 primitive (F32_PRIMITIVES)
        calls its .nx twin (nx_f32_add -> nx_soft_f32_add, loaded by
        frontend.check_file from nx_f32_soft.nx) instead: the symbol of `f` is
        the twin, so both backends see a plain nx call. Calls written in the
        twins' own module are left alone (its gate compares the two)."""
        if sym.name not in f32_primitives():
            return sym
        twin = self.top.get(soft_f32_name(sym.name))
        if twin is None or twin.kind != "func" or twin.type != sym.type:
            self.diags.error(f.pos, f"--soft-f32: no 'func {soft_f32_name(sym.name)}' with the signature "
                             f"of '{sym.name}' (expected in {SOFT_F32_MODULE})")
            return sym
        if self.func is not None and self.func.module is twin.module:
            return sym
        self.info.syms[f] = twin
        return twin
