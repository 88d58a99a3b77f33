"""Python backend: how nx values are written as Python text (see the notes on
canonical and ring values at the top of emit.py), shared by its emitters."""
from __future__ import annotations

import re

from nxc.backend.emitter import strip_outer_parens
from nxc.check.types import BoolType, IntType, PointerType, Type

M64 = (1 << 64) - 1

_VIEW = {(8, True): ("_Vb", 0), (8, False): ("_VB", 0), (16, True): ("_Vh", 1), (16, False): ("_VH", 1),
         (32, True): ("_Vi", 2), (32, False): ("_VI", 2), (64, True): ("_Vq", 3), (64, False): ("_VQ", 3)}


def type_key(t: Type) -> str:
    """The runtime's name for the type of an access (nx_memory.FORMATS)."""
    if isinstance(t, PointerType):
        return "ptr"
    if isinstance(t, BoolType):
        return "bool"
    return str(t)


def view_for(t: Type, canonical: bool = True) -> tuple[str, int]:
    """(view name, log2 size) for loads/stores of t; non-canonical stores use the unsigned view."""
    if isinstance(t, PointerType):
        return "_VQ", 3
    if isinstance(t, BoolType):
        return "_Vz", 0
    return _VIEW[(t.bits, t.signed and canonical)]


def py_int(v: int) -> str:
    if -4096 <= v <= 65535:
        return str(v)
    return f"-0x{-v:X}" if v < 0 else f"0x{v:X}"


def literal(value: int, t: Type) -> str:
    if isinstance(t, BoolType):
        return "True" if value else "False"
    return py_int(value)


def wrap_text(text: str, t: Type) -> str:
    """Canonical value of type t from a ring value `text`."""
    if not isinstance(t, IntType):
        return text
    if not t.signed:
        return f"({text} & {py_int(t.mask)})"
    h = 1 << (t.bits - 1)
    return (f"(_r if {py_int(-h)} <= (_r := {text}) < {py_int(h)} "
            f"else ((_r + {py_int(h)}) & {py_int(t.mask)}) - {py_int(h)})")


def to_signed_text(text: str, t: IntType) -> str:
    """Signed value of type t from an unsigned value of the same width (already in range)."""
    h = 1 << (t.bits - 1)
    if simple(text):
        return f"({text} if {text} < {py_int(h)} else {text} - {py_int(1 << t.bits)})"
    return f"(_r if (_r := {text}) < {py_int(h)} else _r - {py_int(1 << t.bits)})"


# Statement level needs no outer parentheses.
strip = strip_outer_parens


def simple(text: str) -> bool:
    return re.fullmatch(r"-?[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+|-?0x[0-9A-Fa-f]+", text) is not None


def size_of(t: Type) -> int:
    return t.size
