"""Python backend: integer arithmetic, division and conversions as Python
text (wrap-around kept exact through ring values; see emit.py's notes).

A mixin of the Python FunctionEmitter (emit.py), which provides `ex`,
`value`, `ring`, `site` and the checker's tables (`ty`, `const`)."""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.types import BoolType, IntType, PointerType
from nxc.backend.py.values import M64, py_int, simple, strip, to_signed_text, wrap_text


class ArithEmitter:
    def raw_pointer_compare(self, e: ast.Binary) -> str | None:
        """`(p as i64) == 0`, `(p as i64) == (q as i64)`: the cast is one-to-one, compare addresses."""
        def ptr_cast(x):
            return (isinstance(x, ast.Cast) and isinstance(self.ty(x.expr), PointerType)
                    and isinstance(self.ty(x), IntType) and self.ty(x).bits == 64)
        l, r = e.left, e.right
        if l in self.capture_slot or r in self.capture_slot:
            return None
        if ptr_cast(l) and ptr_cast(r):
            return f"({self.value(l.expr)} {e.op} {self.value(r.expr)})"
        if ptr_cast(l) and self.const(r) is not None:
            return f"({self.value(l.expr)} {e.op} {py_int(self.const(r) & M64)})"
        if ptr_cast(r) and self.const(l) is not None:
            return f"({py_int(self.const(l) & M64)} {e.op} {self.value(r.expr)})"
        return None

    def arith(self, op: str, t: IntType, a: str, ac: bool, b: str, bc: bool, bnode: ast.Expr, pos):
        """`a op b` in type t; a and b are texts (canonical when ac / bc). -> (text, canonical).

        For / % >> the caller passes a canonical `a`."""
        w = t.bits
        bconst = self.const(bnode) if bnode is not None and not isinstance(self.ty(bnode), PointerType) else None
        if op in ("+", "-", "*"):
            return f"({a} {op} {b})", False
        if op == "&":
            canon = (ac and bc) or (bconst is not None and bconst >= 0)
            return f"({a} & {b})", canon
        if op in ("|", "^"):
            return f"({a} {op} {b})", ac and bc
        if op == "<<":
            if bconst is not None:
                k = bconst & (w - 1)
                return (a, ac) if k == 0 else (f"({a} << {k})", False)
            return f"({a} << ({b} & {w - 1}))", False
        if op == ">>":
            if bconst is not None:
                k = bconst & (w - 1)
                return (a, True) if k == 0 else (f"({a} >> {k})", True)
            return f"({a} >> ({b} & {w - 1}))", True
        if op in ("/", "%"):
            if not bc:
                b = wrap_text(b, self.ty(bnode))
            return self.divide(op, t, a, b, bconst, pos), True
        raise ValueError(op)

    def divide(self, op: str, t: IntType, a: str, b: str, c: int | None, pos) -> str:
        if c is not None and c > 0:
            if not t.signed:
                if c & (c - 1) == 0:
                    k = c.bit_length() - 1
                    return f"({a} >> {k})" if op == "/" else f"({a} & {py_int(c - 1)})"
                return f"({a} {'//' if op == '/' else '%'} {py_int(c)})"
            if c == 1:
                return a if op == "/" else f"({a} and 0)"
            pyop = "//" if op == "/" else "%"
            if simple(a):
                return f"({a} {pyop} {py_int(c)} if {a} >= 0 else -(-{a} {pyop} {py_int(c)}))"
            return f"(_d {pyop} {py_int(c)} if (_d := {a}) >= 0 else -(-_d {pyop} {py_int(c)}))"
        what = "div" if op == "/" else "rem"
        fn = f"_{what}_{'i' if t.signed else 'u'}{t.bits}"
        site = self.site(pos, what)
        return f"{fn}({strip(a)}, {strip(b)}, {site})"

    def visit_Cast(self, e: ast.Cast):
        src, dst = self.ty(e.expr), self.ty(e)
        if src == dst:
            return self.ex(e.expr)
        if isinstance(dst, BoolType):
            return f"({self.value(e.expr)} != 0)", True
        if isinstance(src, BoolType):
            return f"(1 if {self.value(e.expr)} else 0)", True
        if isinstance(dst, PointerType):
            if isinstance(src, PointerType):
                return self.ex(e.expr)
            if self.const(e.expr) is not None:
                return py_int(self.const(e.expr) & M64), True
            if not src.signed and src.bits <= 64:       # zero-extension: the value is the address
                return self.value(e.expr), True
            if src.bits == 64:
                return f"({self.ring(e.expr)} & {py_int(M64)})", True
            return f"({self.value(e.expr)} & {py_int(M64)})", True
        if isinstance(src, PointerType):                # address -> integer: truncate
            text = self.value(e.expr)
            if dst.bits == 64:
                return (to_signed_text(text, dst) if dst.signed else text), True
            return wrap_text(text, dst), True
        # integer -> integer
        if dst.bits > src.bits or (dst.bits == src.bits and dst.signed == src.signed):
            v = self.value(e.expr)
            if src.signed and not dst.signed:
                return f"({v} & {py_int(dst.mask)})", True
            return v, True                              # same value (extension)
        text, canon = self.ex(e.expr)
        if canon and dst.bits == src.bits and dst.signed and not src.signed:
            return to_signed_text(text, dst), True      # same width, unsigned -> signed
        return wrap_text(text, dst), True               # truncation or same-width sign change
