"""What a call can do, for the checked C backend: touch memory, trap, spin.

Two sets of function names, each a fixed point over the call graph (a
recursive function is in neither):

- `memory_free`: the function reads and writes no memory (no access, no
  address taken, no global assigned) and calls only such functions and the
  externs that touch no memory (float32 primitives). Calling one cannot end
  a mapping or change memory, so a loop that calls one may still have its
  checks hoisted (nxc/lower/hoist.py).
- `silent`: memory-free, and besides has no loop and no division or
  remainder (the only other traps), calling only silent functions: it can
  neither fail nor hang. A call of one needs no shadow-stack store (nothing
  can happen in it that a stack would locate), and a function whose only
  calls are silent takes no frame of its own (nx_f32_max calling
  nx_f32_is_nan stays as small, and as inlinable, as in an unchecked build).
"""
from __future__ import annotations

from dataclasses import dataclass

from nxc.lower.may_unmap import may_unmap
from nxc.syntax import ast

# Externs that read or write memory or end a mapping (the rest are pure float32 operations).
MEMORY_EXTERNS = frozenset({"sys_mmap", "sys_munmap", "sys_write", "sys_file_open", "sys_file_read",
                            "sys_file_close", "sys_file_size"})


@dataclass(frozen=True)
class Recorded:
    """The effects of the functions whose bodies a program did not check
    (issue 21: a gate's worker checks the bodies of its root module and of
    the modules without a record, nxc/backend/c/objects.py; every other
    module's effects come from the record kept with its object, computed when
    its bodies were checked against the same interfaces). Names only: the
    namespace is one over the import graph."""
    unchecked: frozenset = frozenset()      # functions with a body this program did not check
    may_unmap: frozenset = frozenset()      # of those: which may end a mapping (nxc/lower/may_unmap.py)
    memory_free: frozenset = frozenset()
    silent: frozenset = frozenset()
    copied: frozenset = frozenset()         # which importers copy (emit.is_copied_into_importers)


def recorded(program) -> Recorded | None:
    """The program's Recorded effects (None: every body was checked)."""
    return getattr(program, "recorded", None)


def checked_functions(program) -> list:
    """The program's functions whose bodies it checked (all but the recorded ones)."""
    rec = recorded(program)
    if rec is None or not rec.unchecked:
        return program.functions
    return [fn for fn in program.functions if fn.decl.name not in rec.unchecked]


def unmapping(program) -> set[str]:
    """may_unmap over a program some of whose bodies were not checked: those
    functions' answers come from their records, the fixed point runs over the rest."""
    rec = recorded(program)
    if rec is None:
        return may_unmap(program)
    return may_unmap(program, checked_functions(program), rec.may_unmap)


def memory_free(program) -> set[str]:
    """Names of the functions and externs that touch no memory (see the module doc)."""
    return _fixed_point(program, lambda body, info: _touches_memory(body, info))


def silent(program) -> set[str]:
    """Names of the functions and externs that cannot trap, spin or touch memory."""
    def loud(body, info):
        return _touches_memory(body, info) or any(
            isinstance(n, ast.While) or (isinstance(n, ast.Binary) and n.op in ("/", "%")) or
            (isinstance(n, ast.Assign) and n.op in ("/=", "%=")) for n in ast.walk(body))
    return _fixed_point(program, loud, "silent")


def _fixed_point(program, disqualified, kind: str = "memory_free") -> set[str]:
    info = program.info
    found = {sym.name for sym in program.externs if sym.name not in MEMORY_EXTERNS}
    rec = recorded(program)
    if rec is not None:             # recorded answers for the bodies not checked here
        found |= getattr(rec, kind)
    calls = {}
    for fn in checked_functions(program):
        if not disqualified(fn.decl.body, info):
            calls[fn.decl.name] = _callees(fn.decl.body, info)
    changed = True
    while changed:
        changed = False
        for name in sorted(set(calls) - found):
            if calls[name] is not None and calls[name] <= found:
                found.add(name)
                changed = True
    return found


def _touches_memory(body, info) -> bool:
    for n in ast.walk(body):
        if is_access(n) or (isinstance(n, ast.Unary) and n.op == "&"):
            return True
        if isinstance(n, ast.Assign) and isinstance(n.target, ast.Name):
            s = info.sym(n.target)
            if s is None or s.kind not in ("local", "param"):
                return True
    return False


def _callees(body, info):
    """Names a body calls, or None if some call's target is not a plain name."""
    out = set()
    for n in ast.walk(body):
        if isinstance(n, ast.Call):
            s = info.sym(n.func) if isinstance(n.func, ast.Name) else None
            if s is None:
                return None
            out.add(s.name)
    return out


def is_access(n) -> bool:
    """A memory place: `p[i]`, `p.f` (through a pointer or of a struct place), `*p`."""
    return isinstance(n, (ast.Index, ast.FieldAccess)) or (isinstance(n, ast.Unary) and n.op == "*")
