"""Resolved types of the checked program, and their C-compatible layout.

Aliases (`type nx_int = i64`) are resolved away by the checker, so two types
are equal exactly when these objects compare equal. Struct layout follows C's
natural alignment, so the C backend's structs and the Python backend's
offsets agree (the C output asserts it with _Static_assert).
"""
from __future__ import annotations

from dataclasses import dataclass, field


class Type:
    size = 0
    align = 1

    @property
    def is_int(self) -> bool:
        return False

    @property
    def is_pointer(self) -> bool:
        return False


@dataclass(frozen=True)
class IntType(Type):
    bits: int
    signed: bool

    @property
    def is_int(self) -> bool:
        return True

    @property
    def size(self) -> int:
        return self.bits // 8

    @property
    def align(self) -> int:
        return self.bits // 8

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    def wrap(self, value: int) -> int:
        """The value this type holds for the mathematical integer `value`."""
        value &= self.mask
        if self.signed and value >> (self.bits - 1):
            value -= 1 << self.bits
        return value

    def __str__(self) -> str:
        return f"{'i' if self.signed else 'u'}{self.bits}"


@dataclass(frozen=True)
class BoolType(Type):
    size = 1
    align = 1

    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class VoidType(Type):
    """Only ever seen behind a pointer (`*void`) or as "no result"."""

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class PointerType(Type):
    target: Type
    size = 8
    align = 8

    @property
    def is_pointer(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"*{self.target}"


@dataclass(eq=False)
class StructField:
    name: str
    type: Type
    offset: int
    pos: object = None


@dataclass(eq=False)
class StructType(Type):
    """Identity is the declaration: two structs with one name cannot exist."""
    name: str
    fields: list[StructField] = field(default_factory=list)
    size: int = 0
    align: int = 1
    pos: object = None
    complete: bool = False

    def field(self, name: str) -> StructField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return id(self)


@dataclass(frozen=True)
class FuncType(Type):
    params: tuple[Type, ...]
    ret: Type

    def __str__(self) -> str:
        ps = ", ".join(str(p) for p in self.params)
        return f"func({ps}) -> {self.ret}"


I8, I16, I32, I64 = (IntType(b, True) for b in (8, 16, 32, 64))
U8, U16, U32, U64 = (IntType(b, False) for b in (8, 16, 32, 64))
BOOL = BoolType()
VOID = VoidType()
VOID_PTR = PointerType(VOID)

BUILTIN_TYPES: dict[str, Type] = {
    "i8": I8, "i16": I16, "i32": I32, "i64": I64,
    "u8": U8, "u16": U16, "u32": U32, "u64": U64,
    "bool": BOOL, "void": VOID,
}


def layout_struct(st: StructType) -> None:
    """C's rule: each field at the next multiple of its alignment."""
    offset, align = 0, 1
    for f in st.fields:
        a = max(f.type.align, 1)
        offset = (offset + a - 1) // a * a
        f.offset = offset
        offset += f.type.size
        align = max(align, a)
    st.size = (offset + align - 1) // align * align
    st.align = align
    st.complete = True
