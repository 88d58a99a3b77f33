"""Checker, statements: function bodies, scopes, assignments, returns (and
each module gate's return sites), and the flow warnings (unreachable code,
unused variables) and the missing-return error, which need the same walk."""
from __future__ import annotations

from nxc.syntax import ast
from nxc.diagnostics import Diagnostics
from nxc.check.base import CheckerBase, Scope, kind_word
from nxc.check.program import Function, Gate, GateReturn, Symbol
from nxc.check.types import I64, VOID, BoolType, IntType, StructType, Type


class StmtChecker(CheckerBase):
    def check_body(self, fn: Function, is_entry: bool) -> None:
        self.func = fn
        self.loop_depth = 0
        self.is_entry = is_entry
        # Every module's gate records its returns (not only the root's): the
        # gate is compiled into its module's object, which an importing gate
        # may be the first to build (nxc/backend/c/objects.py). The root's
        # list is `gate_returns`, what a runner names a failed check by.
        self.gate = None
        if fn.decl.name == "main":
            self.gate = self.gates[fn.module.source.path] = Gate(fn, self.gate_returns if is_entry else [])
        self.scope = Scope(None)
        # Unique names of locals (Symbol.unique, what both emitters name them
        # by): a shadowing local gets `name_N`, and N is chosen so that no
        # local or parameter of the function is really called that (before,
        # `x_1` for an inner `x` was the very name of a real local `x_1`).
        self.declared = declared_names(fn.decl)
        self.taken = set()
        for p in fn.params:
            if p.type is not None:
                self.scope.names[p.name] = p
                self.taken.add(p.name)
        self.check_block(fn.decl.body, new_scope=True)
        if fn.ret is not None and fn.ret is not VOID and not self.terminates(fn.decl.body):
            end = fn.decl.body.end_pos or fn.decl.pos
            self.diags.error(end, f"missing return at the end of '{fn.decl.name}', which returns {fn.ret}")
        self.func = None
        self.gate = None

    def check_block(self, block: ast.Block, new_scope: bool = True, guard: ast.Expr | None = None) -> None:
        if new_scope:
            self.scope = Scope(self.scope)
        warned = False
        for i, stmt in enumerate(block.stmts):
            if i > 0 and not warned and self.terminates(block.stmts[i - 1]):
                self.diags.warning(ast.start_pos(stmt), "unreachable code")
                warned = True
            self.check_stmt(stmt, guard if i == 0 else None)
        if new_scope:
            for sym in self.scope.names.values():
                if sym.kind == "local" and not sym.used and not sym.name.startswith("_"):
                    self.diags.warning(sym.pos, f"unused variable '{sym.name}'")
            self.scope = self.scope.parent

    def check_stmt(self, s: ast.Stmt, guard: ast.Expr | None = None) -> None:
        # self.visit(s, guard), inlined as in check_expr.
        method = self._visit_methods.get(s.__class__) or self.visit_method(s)
        method(self, s, guard)

    def visit_If(self, s: ast.If, guard=None) -> None:
        self.check_condition(s.cond, "if")
        self.check_block(s.then, guard=s.cond)
        if isinstance(s.orelse, ast.Block):
            self.check_block(s.orelse)
        elif s.orelse is not None:
            self.check_stmt(s.orelse)

    def visit_While(self, s: ast.While, guard=None) -> None:
        self.check_condition(s.cond, "while")
        self.loop_depth += 1
        self.check_block(s.body)
        self.loop_depth -= 1

    def visit_Break(self, s: ast.Break, guard=None) -> None:
        if self.loop_depth == 0:
            self.diags.error(s.pos, "'break' outside of a loop")

    def visit_Continue(self, s: ast.Continue, guard=None) -> None:
        if self.loop_depth == 0:
            self.diags.error(s.pos, "'continue' outside of a loop")

    def visit_Block(self, s: ast.Block, guard=None) -> None:
        self.check_block(s)

    def visit_VarDecl(self, s: ast.VarDecl, guard=None) -> None:
        want = self.resolve_type(s.type_expr) if s.type_expr is not None else None
        if isinstance(want, StructType):
            self.diags.error(s.type_expr.pos, f"a local cannot hold struct {want} by value; "
                             f"allocate it (sys_mmap(sizeof({want})) as *{want}) and use a pointer")
            want = None
        t = self.check_value(s.value, want)
        if want is not None and t is not None:
            self.coerce(s.value, want, f"'{s.name}'")
        ty = want if s.type_expr is not None else t
        prev = self.scope.names.get(s.name)
        if prev is not None:
            self.diags.error(s.pos, f"'{s.name}' is already declared in this block",
                             [Diagnostics.note(prev.pos, "the first declaration is here")])
        unique = s.name
        if unique in self.taken:
            n = 1
            while f"{s.name}_{n}" in self.declared or f"{s.name}_{n}" in self.taken:
                n += 1
            unique = f"{s.name}_{n}"
        self.taken.add(unique)
        sym = Symbol("local", s.name, ty, s.pos, mutable=s.mutable, unique=unique)
        self.info.syms[s] = sym
        self.scope.names[s.name] = sym
        if self.func is not None:
            self.func.locals.append(sym)

    def visit_Assign(self, s: ast.Assign, guard=None) -> None:
        t = self.check_place(s.target)
        if t is None:
            self.check_value(s.value, None)
            return
        if s.op == "=":
            if self.check_value(s.value, t) is not None:
                self.coerce(s.value, t, "the assignment")
            return
        op = s.op[:-1]
        if not isinstance(t, IntType):
            self.check_value(s.value, None)
            self.diags.error(s.pos, f"'{s.op}' needs an integer on the left, not {t}")
            return
        vt = self.check_value(s.value, I64 if op in ("<<", ">>") else t)
        if vt is None:
            return
        if op in ("<<", ">>"):
            if not isinstance(vt, IntType):
                self.diags.error(s.value.pos, f"shift count must be an integer, not {vt}")
        else:
            self.coerce(s.value, t, f"'{s.op}'")

    def check_place(self, e: ast.Expr) -> Type | None:
        """Type of an assignable place; reports what makes it not one."""
        if isinstance(e, ast.Name):
            sym = self.lookup(e)
            if sym is None:
                return None
            if sym.kind in ("local", "param", "global"):
                if not sym.mutable:
                    self.diags.error(e.pos, f"cannot assign to '{e.ident}': it is declared with 'let'; use 'var' to make it mutable",
                                     [Diagnostics.note(sym.pos, f"'{e.ident}' is declared here")])
                    return None
                self.types[e] = sym.type
                return sym.type
            self.diags.error(e.pos, f"cannot assign to {kind_word(sym.kind)} '{e.ident}'")
            return None
        if isinstance(e, (ast.Index, ast.FieldAccess)) or (isinstance(e, ast.Unary) and e.op == "*"):
            t = self.check_expr(e, None)
            if isinstance(t, StructType):
                self.diags.error(e.pos, f"cannot assign a whole struct {t}; assign its fields")
                return None
            return t
        self.check_expr(e, None)
        self.diags.error(e.pos, "cannot assign to this expression: only a variable, p[i], *p or p.field can be assigned")
        return None

    def check_condition(self, cond: ast.Expr, what: str) -> None:
        t = self.check_value(cond, None)
        if t is not None and not isinstance(t, (BoolType, IntType)):
            self.diags.error(cond.pos, f"the condition of '{what}' must be a bool or an integer, not {t}")

    def visit_Return(self, s: ast.Return, guard: ast.Expr | None = None) -> None:
        fn = self.func
        ret = fn.ret
        if s.value is None:
            if ret is not None and ret is not VOID:
                self.diags.error(s.pos, f"'{fn.decl.name}' must return a value of type {ret}")
        elif ret is VOID:
            self.check_value(s.value, None)
            self.diags.error(s.value.pos, f"'{fn.decl.name}' returns no value (declare '-> T' to return one)")
        else:
            if self.check_value(s.value, ret) is not None and ret is not None:
                self.coerce(s.value, ret, "the returned value")
        if self.gate is not None:
            returns = self.gate.returns
            site = self.info.sites[s] = len(returns)
            returns.append(GateReturn(site, s, guard))

    def visit_ExprStmt(self, s: ast.ExprStmt, guard=None) -> None:
        e = s.expr
        if isinstance(e, ast.Call):
            self.check_call(e, allow_void=True)
            return
        self.check_value(e, None)
        self.diags.warning(e.pos, "the value of this expression is not used")

    def terminates(self, s: ast.Stmt) -> bool:
        """Go's terminating statements."""
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.Block):
            return bool(s.stmts) and self.terminates(s.stmts[-1])
        if isinstance(s, ast.If):
            return s.orelse is not None and self.terminates(s.then) and self.terminates(s.orelse)
        if isinstance(s, ast.While):
            return _always_true(s.cond) and not _has_break(s.body)
        return False


def _always_true(cond: ast.Expr) -> bool:
    return (isinstance(cond, ast.BoolLit) and cond.value) or (isinstance(cond, ast.IntLit) and cond.value != 0)


def _has_break(block: ast.Block) -> bool:
    """A `break` that leaves this loop (not one inside a nested loop)."""
    for s in block.stmts:
        if isinstance(s, ast.Break):
            return True
        if isinstance(s, ast.Block) and _has_break(s):
            return True
        if isinstance(s, ast.If):
            if _has_break(s.then):
                return True
            o = s.orelse
            if isinstance(o, ast.Block) and _has_break(o):
                return True
            if isinstance(o, ast.If) and _has_break(ast.Block(o.pos, [o])):
                return True
    return False


def declared_names(fn: ast.FuncDecl) -> set[str]:
    """Names of the parameters and every local declared anywhere in `fn`."""
    names = {p.name for p in fn.params}
    stack = [fn.body] if fn.body is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Block):
            stack.extend(node.stmts)
        elif isinstance(node, ast.VarDecl):
            names.add(node.name)
        elif isinstance(node, ast.If):
            stack.append(node.then)
            if node.orelse is not None:
                stack.append(node.orelse)
        elif isinstance(node, ast.While):
            stack.append(node.body)
    return names
