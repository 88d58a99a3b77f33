"""C backend: how nx spells itself in C -- types, literals, names, module ids.

Every nx name gets a prefix (nxf_, nxg_, l_, f_, nxs_) so that a function
called `exp`, `free`, `int` or `main` never collides with C or libc. Read by
the function emitter (function.py, expressions.py, checked.py) and by the
unit logic (units.py, copies.py); knows nothing of either.
"""
from __future__ import annotations

import functools
import hashlib
import os
from typing import TYPE_CHECKING

from nxc.backend.escape import c_string_body
from nxc.check.externs import sited_externs
from nxc.check.types import I64, BoolType, IntType, PointerType, StructType, Type, VoidType

if TYPE_CHECKING:       # annotations only: a run that asks the backend for its build identity does not load the AST
    from nxc.syntax import ast

_INT_C = {(8, True): "int8_t", (16, True): "int16_t", (32, True): "int32_t", (64, True): "int64_t",
          (8, False): "uint8_t", (16, False): "uint16_t", (32, False): "uint32_t", (64, False): "uint64_t"}


# Externs that take or give memory: checked builds call the runtime's
# nxrt_chk_* twin, which checks the range against the live mappings (the one
# list is runtime/nx_externs.py's SITED_EXTERNS).
CHECKED_EXTERNS = sited_externs()


def c_type(t: Type) -> str:
    if isinstance(t, IntType):
        return _INT_C[(t.bits, t.signed)]
    if isinstance(t, BoolType):
        return "_Bool"
    if isinstance(t, VoidType) or t is None:
        return "void"
    if isinstance(t, PointerType):
        return c_type(t.target) + " *"
    if isinstance(t, StructType):
        return f"struct nxs_{t.name}"
    raise TypeError(t)


def c_abi_type(t: Type) -> str:
    """Type used at the exported boundary (cffi cdef): pointers are void *."""
    return "void *" if isinstance(t, PointerType) else c_type(t)


def unsigned_of(t: IntType) -> str:
    return _INT_C[(t.bits, False)]


def c_int_literal(value: int, t: Type) -> str:
    if isinstance(t, BoolType):
        return "1" if value else "0"
    if not isinstance(t, IntType):
        t = I64
    if t.bits == 64:
        if t.signed:
            if value == -(1 << 63):
                return "(-INT64_C(9223372036854775807) - 1)"
            return f"INT64_C({value})"
        return f"UINT64_C({value})"
    if t.signed and value == -(1 << (t.bits - 1)):
        return f"(({c_type(t)})({value + 1} - 1))"
    if t.bits == 32:
        return f"(({c_type(t)}){value}{'' if t.signed else 'u'})"
    return f"(({c_type(t)}){value})"


def func_c_name(sym) -> str:
    return ("nxrt_" if sym.kind == "extern" else "nxf_") + sym.name



def module_c_id(module: ast.Module) -> str:
    """A module's id in C, unique per module path: its object registers under
    it (nx_runtime.h, nxrt_module), and its gate is nxm_main_<id>."""
    return module_c_id_of(module.source.path)


@functools.lru_cache(maxsize=16384)
def module_c_id_of(path: str) -> str:
    """module_c_id of the module at real path `path` (a function of the path
    alone: kept, asked for each unit of each gate a worker plans)."""
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])[:40]
    return f"{stem}_{hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def gate_symbol(module: ast.Module) -> str:
    """The C name of a module's gate in its object (nx names are one namespace,
    but every module may have its own `main`)."""
    return "nxm_main_" + module_c_id(module)


def access_type_name(t: Type) -> str:
    """The name of an access's type in fault messages (the Python backend's words)."""
    if isinstance(t, PointerType):
        return "ptr"
    if isinstance(t, StructType):
        return f"struct {t.name}"
    return str(t)


def c_string(s: str) -> str:
    """The body of a C string literal holding `s`."""
    return c_string_body(s)         # a path may hold quotes, newlines, `??/`, any byte
