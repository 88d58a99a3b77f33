"""Checker, expressions: one `visit_<Class>(e, want)` per expression kind,
giving its type (or None after an error); `want` is the type the context
expects, which integer literals take. Constant operands are folded here
(nxc/check/consts.py), so a constant expression has its value in
`info.consts`."""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.base import CheckerBase, suggest
from nxc.check.consts import CMP_OPS, LOGIC_OPS, cast_allowed, fold_binary, fold_cast, fold_compare, is_literal_expr
from nxc.check.types import BOOL, I64, VOID, BoolType, IntType, PointerType, StructType, Type


class ExprChecker(CheckerBase):
    def visit_IntLit(self, e: ast.IntLit, want):
        ty = want if isinstance(want, IntType) else I64
        if e.value >= 1 << ty.bits:
            self.diags.error(e.pos, f"integer literal {e.text or e.value} does not fit in {ty}")
            self.consts[e] = 0
            return ty
        self.consts[e] = ty.wrap(e.value)
        return ty

    def visit_BoolLit(self, e: ast.BoolLit, want):
        self.consts[e] = int(e.value)
        return BOOL

    def visit_Name(self, e: ast.Name, want):
        sym = self.lookup(e)
        if sym is None:
            return None
        if sym.kind == "const":
            if sym.type is None or sym.name in self.evaluating:
                self.const_value(sym, e.pos)
            self.consts[e] = sym.value
            return sym.type
        if sym.kind in ("func", "extern"):
            return sym.type
        if sym.kind in ("type", "struct"):
            self.diags.error(e.pos, f"'{e.ident}' is a type, not a value")
            return None
        if self.func is None and sym.kind == "global":
            return sym.type
        sym.used = True
        return sym.type

    def visit_SizeOf(self, e: ast.SizeOf, want):
        t = self.resolve_type(e.target)
        if t is None:
            return I64
        if isinstance(t, StructType):
            self.complete_struct(t, e.pos)
        self.consts[e] = t.size
        return I64

    def visit_Unary(self, e: ast.Unary, want):
        op = e.op
        if op in ("-", "~"):
            t = self.check_value(e.operand, want if is_literal_expr(e.operand) else None)
            if t is None:
                return None
            if not isinstance(t, IntType):
                self.diags.error(e.pos, f"'{op}' needs an integer operand, not {t}")
                return None
            c = self.consts.get(e.operand)
            if c is not None:
                self.consts[e] = t.wrap(-c if op == "-" else ~c)
            return t
        if op == "!":
            t = self.check_value(e.operand, None)
            if t is not None and not isinstance(t, (IntType, BoolType)):
                self.diags.error(e.pos, f"'!' needs a bool or an integer, not {t}")
            elif (c := self.consts.get(e.operand)) is not None:
                self.consts[e] = int(c == 0)
            return BOOL
        if op == "*":
            t = self.check_value(e.operand, None)
            if t is None:
                return None
            if not isinstance(t, PointerType):
                self.diags.error(e.pos, f"cannot dereference a value of type {t}: it is not a pointer")
                return None
            if t.target is VOID:
                self.diags.error(e.pos, "cannot dereference a '*void'; cast it to a typed pointer first (p as *i64)")
                return None
            return t.target
        if op == "&":
            inner = e.operand
            if isinstance(inner, ast.Name):
                self.check_expr(inner, None)
                self.diags.error(e.pos, f"cannot take the address of '{inner.ident}': locals, parameters and "
                                 "globals have no address; only memory places (&p[i], &p.f, &*p) do")
                return None
            if not (isinstance(inner, (ast.Index, ast.FieldAccess)) or (isinstance(inner, ast.Unary) and inner.op == "*")):
                self.check_expr(inner, None)
                self.diags.error(e.pos, "'&' needs a memory place: &p[i], &p.field or &*p")
                return None
            t = self.check_expr(inner, None)
            return None if t is None else PointerType(t)
        raise ValueError(op)  # pragma: no cover

    def visit_Binary(self, e: ast.Binary, want):
        op = e.op
        if op in LOGIC_OPS:
            for side in (e.left, e.right):
                t = self.check_value(side, None)
                if t is not None and not isinstance(t, (BoolType, IntType)):
                    self.diags.error(side.pos, f"'{op}' needs bool or integer operands, not {t}")
            cl, cr = self.consts.get(e.left), self.consts.get(e.right)
            if cl is not None and cr is not None:
                a, b = cl != 0, cr != 0
                self.consts[e] = int(a and b) if op == "&&" else int(a or b)
            return BOOL
        lt, rt = self.check_operands(e, want)
        if lt is None or rt is None:
            return BOOL if op in CMP_OPS else None
        if op in CMP_OPS:
            return self.check_comparison(e, lt, rt)
        consts = self.consts
        cl, cr = consts.get(e.left), consts.get(e.right)
        if op in ("<<", ">>"):
            if not isinstance(lt, IntType) or not isinstance(rt, IntType):
                bad = e.left if not isinstance(lt, IntType) else e.right
                self.diags.error(bad.pos, f"'{op}' needs integer operands, not {self.types.get(bad)}")
                return None
            if cl is not None and cr is not None:
                consts[e] = fold_binary(op, lt, cl, cr)
            return lt
        if isinstance(lt, BoolType) and isinstance(rt, BoolType) and op in ("&", "|", "^"):
            if cl is not None and cr is not None:
                consts[e] = fold_binary(op, IntType(8, False), cl, cr)
            return BOOL
        if not isinstance(lt, IntType) or not isinstance(rt, IntType):
            bad = e.left if not isinstance(lt, IntType) else e.right
            hint = " (pointer arithmetic goes through 'as i64')" if isinstance(self.types.get(bad), PointerType) else ""
            self.diags.error(e.pos, f"'{op}' needs integer operands, not {self.types.get(bad)}{hint}")
            return None
        if lt != rt:
            self.mismatch(e, lt, rt)
            return None
        if cl is not None and cr is not None:
            v = fold_binary(op, lt, cl, cr)
            if v is None:
                self.diags.error(e.right.pos, "division by zero in a constant expression")
                v = 0
            consts[e] = v
        return lt

    def check_operands(self, e: ast.Binary, want):
        """Type both operands; a literal-only side takes the other side's type."""
        shift = e.op in ("<<", ">>")
        cmp_ = e.op in CMP_OPS
        left_lit, right_lit = is_literal_expr(e.left), is_literal_expr(e.right)
        hint = None if cmp_ else want
        if shift:
            lt = self.check_value(e.left, hint if left_lit else None)
            rt = self.check_value(e.right, I64 if right_lit else None)
            return lt, rt
        if left_lit and not right_lit:
            rt = self.check_value(e.right, None)
            lt = self.check_value(e.left, rt if isinstance(rt, IntType) else hint)
            return lt, rt
        lt = self.check_value(e.left, hint)
        rt = self.check_value(e.right, lt if right_lit and isinstance(lt, IntType) else hint)
        return lt, rt

    def check_comparison(self, e: ast.Binary, lt: Type, rt: Type) -> Type:
        op = e.op
        if isinstance(lt, PointerType) and isinstance(rt, PointerType):
            if op not in ("==", "!="):
                self.diags.error(e.pos, f"pointers compare only with == and !=; compare 'p as i64' for '{op}'")
            elif lt != rt and VOID not in (lt.target, rt.target):
                self.diags.error(e.pos, f"cannot compare {lt} with {rt}; cast one side with 'as'")
            return BOOL
        if lt != rt:
            self.mismatch(e, lt, rt)
            return BOOL
        if not isinstance(lt, (IntType, BoolType)):
            self.diags.error(e.pos, f"cannot compare values of type {lt}")
            return BOOL
        if isinstance(lt, BoolType) and op not in ("==", "!="):
            self.diags.error(e.pos, "bools compare only with == and !=")
            return BOOL
        cl, cr = self.consts.get(e.left), self.consts.get(e.right)
        if cl is not None and cr is not None:
            self.consts[e] = int(fold_compare(op, cl, cr))
        return BOOL

    def mismatch(self, e: ast.Binary, lt: Type, rt: Type) -> None:
        self.diags.error(e.pos, f"mismatched types in '{e.op}': {lt} and {rt}; convert one side, "
                         f"e.g. '(...) as {lt}'")

    def visit_Cast(self, e: ast.Cast, want):
        src = self.check_value(e.expr, None)
        dst = self.resolve_type(e.target)
        if src is None or dst is None:
            return dst
        if isinstance(dst, StructType):
            self.diags.error(e.pos, f"cannot convert to struct {dst}; convert to a pointer (*{dst})")
            return None
        if not cast_allowed(src, dst):
            self.diags.error(e.pos, f"cannot convert {src} to {dst} with 'as'")
            return dst
        c = self.consts.get(e.expr)
        if c is not None and not isinstance(dst, PointerType):
            self.consts[e] = fold_cast(c, dst)
        return dst

    def visit_Index(self, e: ast.Index, want):
        bt = self.check_value(e.base, None)
        it = self.check_value(e.index, I64 if is_literal_expr(e.index) else None)
        if it is not None and not isinstance(it, IntType):
            self.diags.error(e.index.pos, f"an index must be an integer, not {it}")
        if bt is None:
            return None
        if not isinstance(bt, PointerType):
            self.diags.error(e.pos, f"cannot index a value of type {bt}: it is not a pointer")
            return None
        if bt.target is VOID:
            self.diags.error(e.pos, "cannot index a '*void'; cast it to a typed pointer first (p as *i64)")
            return None
        return bt.target

    def visit_FieldAccess(self, e: ast.FieldAccess, want):
        bt = self.check_expr(e.base, None)
        if bt is None:
            return None
        if isinstance(bt, PointerType) and isinstance(bt.target, StructType):
            st = bt.target
        elif isinstance(bt, StructType):
            if isinstance(e.base, ast.Name):
                self.diags.error(e.base.pos, "a struct value cannot be held in a variable")
                return None
            st = bt
        else:
            self.diags.error(e.name_pos, f"'.{e.name}' needs a pointer to a struct, not {bt}")
            return None
        base_sym = self.info.syms.get(e.base) if isinstance(e.base, ast.Name) else None
        if base_sym is not None:
            base_sym.used = True
        fld = st.field(e.name)
        if fld is None:
            names = ", ".join(f.name for f in st.fields)
            self.diags.error(e.name_pos, f"struct {st.name} has no field '{e.name}'"
                             + suggest(e.name, [f.name for f in st.fields]) + f" (fields: {names})")
            return None
        return fld.type
