"""Python backend: checked memory accesses as inline Python text.

    load:   (_Vq[_a >> 3] if _SH[(_a := ADDR)] & 8 else _ld(_a, SITE))
    store:  _VQ[_a >> 3 if _SH[(_a := ADDR)] & 128 else _st(_a, SITE)] = VALUE

(a store tests the shadow's high nibble, clear in a read-only file mapping:
runtime/nx_memory.py)

A mixin of the Python FunctionEmitter (emit.py), which provides `ex`,
`value`, `site` and the checker's tables (`ty`, `const`, `info`)."""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.types import BoolType, IntType, Type
from nxc.backend.py.values import M64, py_int, size_of, strip, type_key, view_for, wrap_text


class MemoryEmitter:
    def address(self, place: ast.Expr) -> tuple[str, bool]:
        """(address text, needs a 64-bit mask) of a memory place."""
        if isinstance(place, ast.Index):
            base = self.value(place.base)
            size = size_of(self.ty(place))
            idx = place.index
            if self.const(idx) is not None:
                off = self.const(idx) * size
                if off == 0:
                    return base, False
                return (f"({base} + {py_int(off)})" if off > 0 else f"({base} - {py_int(-off)})"), \
                    off < 0
            # A 64-bit ring index (t * n + d, unwrapped) or a u64 index can take the
            # address out of [0, 2^64): mask it (C's pointer arithmetic wraps). A
            # canonical i64 index only can when |i| >= 2^61 (pointer overflow,
            # undefined in C); that ends in describe_access's wrap-around message.
            i, canon = self.ex(idx)
            mask = self.ty(idx).bits == 64 and (not canon or not self.ty(idx).signed)
            if not canon and self.ty(idx).bits < 64:
                i = wrap_text(i, self.ty(idx))
            return (f"({base} + {i})" if size == 1 else f"({base} + {i} * {size})"), mask
        if isinstance(place, ast.FieldAccess):
            st = self.ty(place.base).target if self.info.through_pointer(place) else self.ty(place.base)
            off = st.field(place.name).offset
            if self.info.through_pointer(place):
                base, mask = self.value(place.base), False
            else:
                base, mask = self.address(place.base)
            return (f"({base} + {off})" if off else base), mask
        if isinstance(place, ast.Unary) and place.op == "*":
            return self.value(place.operand), False
        raise TypeError(f"not a memory place: {type(place).__name__}")

    def load(self, place: ast.Expr) -> str:
        addr, mask = self.address(place)
        if mask:
            addr = f"{addr} & {py_int(M64)}"
        return self.load_at(strip(addr), self.ty(place), place.pos)

    def load_at(self, addr: str, t: Type, pos, fixed: bool = False) -> str:
        view, shift = view_for(t)
        var, check, idx, size, site = self.access(addr, t, pos, "r", shift, fixed)
        if isinstance(t, BoolType):     # a byte holding 2 (written as u8) reads as true
            return f"(({view}[{idx}] if {check} & {size} else _ld({var}, {site})) != 0)"
        return f"({view}[{idx}] if {check} & {size} else _ld({var}, {site}))"

    def access(self, addr: str, t: Type, pos, mode: str, shift: int, fixed: bool):
        """The pieces of a checked access: (address variable, shadow check,
        element index, access size, fault site)."""
        site = self.site(pos, mode, type_key(t))
        var = addr if fixed else "_a"
        check = f"_SH[{addr}]" if fixed else f"_SH[(_a := {addr})]"
        idx = var if shift == 0 else f"{var} >> {shift}"
        return var, check, idx, 1 << shift, site

    def store(self, place: ast.Expr, value: ast.Expr) -> str:
        text, canon = self.ex(value)
        addr, mask = self.address(place)
        if mask:
            addr = f"{addr} & {py_int(M64)}"
        return self.store_at(strip(addr), self.ty(place), place.pos, text, canon)

    def store_at(self, addr: str, t: Type, pos, text: str, canon: bool, fixed: bool = False) -> str:
        if isinstance(t, IntType) and not canon:
            text = f"{text} & {py_int(t.mask)}"
            view, shift = view_for(t, canonical=False)
        else:
            view, shift = view_for(t)
        var, check, idx, size, site = self.access(addr, t, pos, "w", shift, fixed)
        return f"{view}[{idx} if {check} & {size << 4} else _st({var}, {site})] = {strip(text)}"
