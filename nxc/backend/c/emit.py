"""C backend, text stage: checked Program -> C11 source text (the front door).

Each call here runs the program's lowering first (facts.ProgramFacts) and
hands it to the emitter:
- emit_c: the whole program as one file (nxc emit-c, the Python API);
- emit_module_c: one module's own object (nxc emit-c --object);
- interface_text: what an importer's C can depend on of a module.
A caller that emits many files of one program (objects.py, a gate's link)
makes one ProgramFacts and calls units.py and copies.py itself, so the
answers about the program are computed once.

Where the parts are: names.py (C spellings of types, literals, names),
facts.py (the lowering and every per-program answer), function.py with
expressions.py and checked.py (one function's body), copies.py (the small
imported functions a unit copies in), units.py (which functions, structs,
globals and prototypes go in a file; the gate's entry points).
"""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.program import Program
from nxc.backend.c.facts import ProgramFacts
from nxc.backend.c.units import (FAULT_INFO_WORDS, GATE_CDEF, LINK_CDEF, EmittedC, UnitC, emit_module,
                                 emit_whole)
from nxc.backend.c.units import interface_text as _interface_text

__all__ = ["emit_c", "emit_module_c", "interface_text", "EmittedC", "UnitC", "GATE_CDEF", "LINK_CDEF",
           "FAULT_INFO_WORDS"]


def emit_c(program: Program, unbox_f32: bool = True, checked: bool = False) -> EmittedC:
    """The whole program as one C file. unbox_f32=False writes every float32
    primitive as a runtime call on bits (the plain path the unboxed code must
    agree with, bit for bit); checked=True checks every memory access and
    keeps the .nx call stack (runtime/nx_runtime.h, NXRT_CHECKED)."""
    return emit_whole(ProgramFacts(program, checked=checked, unbox_f32=unbox_f32))


def emit_module_c(program: Program, module: ast.Module, closure: list[ast.Module], *, checked: bool = False,
                  unbox_f32: bool = True, copy_key=None) -> UnitC:
    """The C file of `module`'s own object (units.emit_module); `closure`: its
    import closure, dependencies first (closure.import_closure)."""
    return emit_module(ProgramFacts(program, checked=checked, unbox_f32=unbox_f32), module, closure, copy_key)


def interface_text(program: Program, module: ast.Module, *, checked: bool = False, unbox_f32: bool = True) -> str:
    """units.interface_text of `module` in `program`."""
    return _interface_text(ProgramFacts(program, checked=checked, unbox_f32=unbox_f32), module)
