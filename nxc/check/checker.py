"""The checker: a parsed module graph in, a checked `Program` out.

It resolves names across the shared namespace of the whole import graph,
resolves types and struct layouts, evaluates constants, and types every
expression. Its findings go into the side tables of `program.info`
(nxc/check/program.py); the AST is left as parsed. Both backends start from
the `Program` it returns and trust it: anything wrong is reported here, with
a position, and code generation never runs on a broken program.

Order of work: declarations of every module -> types and struct layouts ->
constants (lazily, so order of declaration does not matter) -> function
signatures -> globals -> bodies.

One class per job, assembled here: declarations (decls.py), statements
(stmts.py), expressions (exprs.py), calls and the soft-f32 rewrite
(calls.py), over the shared state of base.py; constant folding is consts.py.
"""
from __future__ import annotations

from nxc.diagnostics import Diagnostics
from nxc.syntax.loader import ModuleGraph
from nxc.check.calls import CallChecker
from nxc.check.decls import DeclChecker
from nxc.check.exprs import ExprChecker
from nxc.check.program import Function, GateReturn, Info, Program, soft_f32_name
from nxc.check.stmts import StmtChecker

# Function, GateReturn, Program and soft_f32_name live in program.py; they are
# re-exported for the modules that import them from here (api, gates/run, tests).
__all__ = ["Checker", "check_program", "Function", "GateReturn", "Program", "soft_f32_name"]


class Checker(DeclChecker, StmtChecker, ExprChecker, CallChecker):
    # ---- entry point ----
    def check(self) -> Program:
        return self.check_bodies(self.check_declarations())

    def check_declarations(self) -> list[Function]:
        """Every phase but the bodies: names, types and layouts, constants,
        signatures, globals, of every module of the graph. Returns the
        functions with a body, for `check_bodies`."""
        self.collect_declarations()
        self.diags.raise_if_errors()
        for st in list(self.structs.values()):
            self.complete_struct(st, self.struct_decls[st.name].pos)
        for name in self.aliases:
            self.alias_type(name, self.aliases[name].pos)
        funcs = self.function_signatures()
        self.const_syms = [s for s in self.top.values() if s.kind == "const"]
        for sym in self.const_syms:
            self.const_value(sym, sym.pos)
        self.globals_ = self.check_globals()
        self.diags.raise_if_errors()
        return funcs

    def check_bodies(self, funcs: list[Function], only: set[str] | None = None) -> Program:
        """Check the bodies of `funcs`; with `only` (real paths of modules),
        just those of the modules named there (nxc/check/summary.py: the
        others were checked clean before against the same interfaces), and
        the Program holds only their functions."""
        entry = None
        for fn in funcs:
            if only is not None and fn.module.source.path not in only:
                continue
            is_entry = fn.module is self.graph.root and fn.decl.name == "main"
            self.check_body(fn, is_entry)
            if fn.decl.name != "main" or fn.module is self.graph.root:
                self.functions.append(fn)
            if is_entry:
                entry = fn
        self.diags.raise_if_errors()
        return Program(self.graph, self.struct_order, self.const_syms, self.globals_, self.functions,
                       self.externs, entry, self.gate_returns, self.diags.warnings, self.info, self.gates)


def check_program(graph: ModuleGraph, diags: Diagnostics, soft_f32: bool = False,
                  info: Info | None = None) -> Program:
    """soft_f32: redirect float32 primitive calls to nx_f32_soft.nx (which the
    caller has loaded into `graph`); see CallChecker.soft_f32_callee.

    info: an `Info` to fill in; tools that read what the checker found in a
    module with errors (stubs inference, the language server) pass their own,
    since a failed check raises CompileError instead of returning a Program."""
    return Checker(graph, diags, soft_f32, info).check()
