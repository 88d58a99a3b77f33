"""C backend, function emitter: expressions (one method per kind), the
float32 expressions kept as C floats (nxc/lower/f32_unbox.py), integer
arithmetic at nx widths. A mixin of function.FunctionEmitter, which holds
the state it reads.
"""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.types import I64, BoolType, IntType, PointerType, Type
from nxc.lower.f32_unbox import F32_BINARY, F32_COMPARE, F32_RESULT
from nxc.backend.emitter import strip_outer_parens
from nxc.backend.c.names import c_int_literal, c_type, func_c_name, unsigned_of

# Expressions that read memory: a bool read there goes through
# nx_load_bool (module.c.j2), as a byte, since a _Bool holding 2 is undefined.
MEMORY_PLACES = frozenset({ast.Index, ast.FieldAccess, ast.Unary})


class ExpressionsMixin:
    """Expressions as C text (function.FunctionEmitter's)."""

    def cond(self, e: ast.Expr) -> str:
        return strip_outer_parens(self.expr(e))

    def expr(self, e: ast.Expr) -> str:
        if self.const(e) is not None and not isinstance(self.ty(e), PointerType):
            text = c_int_literal(self.const(e), self.ty(e))
        else:
            text = self.visit(e)
            if (self.ty(e).__class__ is BoolType and e.__class__ in MEMORY_PLACES and id(e) not in self.places
                    and (e.__class__ is not ast.Unary or e.op == "*")):
                text = f"nx_load_bool(&({text}))"
        slot = self.capture_slot.get(e)
        return text if slot is None else self.captured(e, slot, text)

    def captured(self, e: ast.Expr, slot: int, text: str) -> str:
        """`text`, with its value also stored in the gate's capture slot."""
        tmp = self.temp(self.ty(e))
        raw = f"(int64_t)(intptr_t){tmp}" if isinstance(self.ty(e), PointerType) else f"(int64_t){tmp}"
        return (f"({tmp} = {text}, nx_gate_captured[{slot}] = {raw}, "
                f"nx_gate_cap_mask |= UINT32_C({1 << slot}), {tmp})")

    def sequenced(self, first: ast.Expr, later: list[ast.Expr]) -> tuple[str | None, str]:
        """`first`, stored in a temporary when it must be evaluated before the later
        operands: a later call might change it, or it calls a function that might
        change what a later operand reads (a global, memory). C leaves the order of
        operands and of arguments unspecified; gcc evaluates `h(f(), g)` right to left."""
        text = self.expr(first)
        if self.is_stable(first):
            return None, text
        if any(self.has_call(x) for x in later) or (self.has_call(first) and not all(self.is_stable(x) for x in later)):
            tmp = self.temp(self.ty(first))
            return f"({tmp} = {text})", tmp
        return None, text

    def visit_Name(self, e: ast.Name) -> str:
        sym = self.sym(e)
        if sym in self.subst:               # an inner loop's counter, at its start (hoisted_checks)
            return self.subst[sym]
        if sym in self.float_locals:        # its bits are observed here
            return f"nxrt_f32_lane_bits(lf_{sym.unique})"
        if sym.kind in ("local", "param"):
            return f"l_{sym.unique}"
        if sym.kind == "global":
            return f"nxg_{sym.name}"
        return func_c_name(sym)

    def visit_Unary(self, e: ast.Unary) -> str:
        if e.op == "&":
            self.places.add(id(e.operand))      # its address is taken, not its value
        if self.checked and e.op in ("*", "&"):
            if e.op == "*":
                return self.checked_place(e, "read")
            if isinstance(e.operand, ast.Index):
                # C's own `&p[i]`, as unchecked C writes it: nothing is accessed, so nothing is
                # checked here (an access through the result is, wherever it points). The
                # result keeps p's provenance, so GCC still sees that a pointer into one mapping
                # does not overlap another (a fresh sys_mmap block, say) and needs no run-time
                # overlap test in the loops that use both. Computed in integers (uintptr_t), the
                # pointer could point anywhere for GCC: the lane loops of the panel kernels were
                # versioned for aliasing and ran 1.5-1.7x their unchecked time.
                pre, base = self.sequenced(e.operand.base, [e.operand.index])
                text = f"(&({base})[{self.expr(e.operand.index)}])"
                return f"({pre}, {text})" if pre else text
            return f"(({c_type(self.ty(e))}){self.address(e.operand)})"
        a = self.expr(e.operand)
        if e.op == "-":
            return f"(({c_type(self.ty(e))})(-{a}))"
        if e.op == "~":
            return f"(({c_type(self.ty(e))})(~{a}))"
        if e.op == "!":
            return f"(!{a})"
        if e.op == "*":
            return f"(*{a})"
        if e.op == "&":
            return f"(&{a})"
        raise ValueError(e.op)

    def visit_Binary(self, e: ast.Binary) -> str:
        op = e.op
        if op in ("&&", "||"):
            return f"({self.expr(e.left)} {op} {self.expr(e.right)})"
        pre, a = self.sequenced(e.left, [e.right])
        b = self.expr(e.right)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            text = f"({a} {op} {b})"
        elif isinstance(self.ty(e), BoolType):
            text = f"((_Bool)({a} {op} {b}))"
        else:
            text = self.arith(op, self.ty(e), a, b, self.ty(e.right), e.pos)
        return f"({pre}, {text})" if pre else text

    def arith(self, op: str, t: IntType, a: str, b: str, bt: Type, pos) -> str:
        ct = c_type(t)
        if op in ("/", "%"):
            fn = "div" if op == "/" else "rem"
            what = "division by zero" if op == "/" else "remainder by zero"
            return f"nx_{fn}_{t}({a}, {b}, {self.site(pos, what)})"
        if op == "<<":
            return f"(({ct})(({unsigned_of(t)}){a} << ({b} & {t.bits - 1})))"
        if op == ">>":
            return f"(({ct})({a} >> ({b} & {t.bits - 1})))"
        return f"(({ct})({a} {op} {b}))"

    def visit_Cast(self, e: ast.Cast) -> str:
        src, dst = self.ty(e.expr), self.ty(e)
        a = self.expr(e.expr)
        if src == dst:
            return a
        if isinstance(dst, BoolType):
            return f"({a} != 0)"
        if isinstance(dst, PointerType):
            if isinstance(src, PointerType):
                return f"(({c_type(dst)}){a})"
            return f"(({c_type(dst)})(intptr_t){a})"
        if isinstance(src, PointerType):
            return f"(({c_type(dst)})(intptr_t){a})"
        return f"(({c_type(dst)}){a})"

    def visit_Call(self, e: ast.Call) -> str:
        name = self.primitive(e) if self.unbox_f32 else None
        if name in F32_RESULT:
            return f"nxrt_f32_to_bits({self.float_expr(e)})"
        if name in F32_COMPARE:
            a, b = self.float_operands(e)
            return f"({a} {F32_COMPARE[name]} {b})"
        pres, args = [], []
        for i, a in enumerate(e.args):
            pre, text = self.sequenced(a, e.args[i + 1:])
            if self.checked and pre is None and self.has_call(a) and self.sym(e.func).kind != "extern":
                # The call's site must be stored after its arguments' calls
                # stored theirs: hold the argument in a temporary first.
                tmp = self.temp(self.ty(a))
                pre, text = f"({tmp} = {text})", tmp
            if pre:
                pres.append(pre)
            args.append(text)
        if self.checked:
            return self.checked_call(e, pres, args)
        call = f"{func_c_name(self.sym(e.func))}({', '.join(args)})"
        return f"({', '.join(pres)}, {call})" if pres else call

    # ---- float32 expressions (unboxed; see nxc/lower/f32_unbox.py) ----
    def float_expr(self, e: ast.Expr) -> str:
        """C `float` expression for an expression that holds float32 bits."""
        if isinstance(e, ast.Name) and self.sym(e) in self.float_locals:
            return f"lf_{self.sym(e).unique}"
        name = self.primitive(e)
        if name in F32_BINARY:
            a, b = self.float_operands(e)
            return f"({a} {F32_BINARY[name]} {b})"
        if name == "nx_f32_sqrt":
            return f"nxrt_f32_sqrtf({self.float_expr(e.args[0])})"
        if name == "nx_i32_to_f32":
            return f"((float)(int32_t){self.expr(e.args[0])})"
        if self.const(e) is not None:
            return f"nxrt_f32_from_bits({c_int_literal(self.const(e), I64)})"
        return f"nxrt_f32_from_bits({self.expr(e)})"

    def float_operands(self, e: ast.Call) -> tuple[str, str]:
        """Both operands as floats, left before right (the rule of `sequenced`)."""
        left, right = e.args
        a = self.float_expr(left)
        stable = self.is_stable(left) or (isinstance(left, ast.Name) and self.sym(left) in self.float_locals)
        if not stable and (self.has_call(right) or (self.has_call(left) and not self.is_stable(right))):
            tmp = self.new_temp("float")
            return f"({tmp} = {a}, {tmp})", self.float_expr(right)
        return a, self.float_expr(right)

    def visit_Index(self, e: ast.Index) -> str:
        if self.checked:
            return self.checked_place(e, "read")
        pre, base = self.sequenced(e.base, [e.index])
        text = f"{base}[{self.expr(e.index)}]"
        return f"(*({pre}, &{text}))" if pre else text

    def visit_FieldAccess(self, e: ast.FieldAccess) -> str:
        if self.checked:
            return self.checked_place(e, "read")
        base = self.expr(e.base)
        return f"{base}{'->' if self.info.through_pointer(e) else '.'}f_{e.name}"

    def visit_SizeOf(self, e: ast.SizeOf) -> str:   # always folded; kept for clarity
        return c_int_literal(self.const(e), I64)

    def visit_IntLit(self, e) -> str:  # pragma: no cover - always const
        return c_int_literal(self.const(e), self.ty(e))

    visit_BoolLit = visit_IntLit
