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

import weakref
from dataclasses import dataclass

from nxc.incremental.records import Recorded
from nxc.check.externs import memory_externs
from nxc.lower.may_unmap import may_unmap
from nxc.syntax import ast

# Externs that read or write memory or end a mapping (the rest are pure float32 operations).
# sys_parallel_for runs a task, which may do anything a function may.
MEMORY_EXTERNS = memory_externs()          # the one list: runtime/nx_externs.py


def recorded(program) -> Recorded | None:
    """The program's Recorded effects (None: every body was checked)."""
    return getattr(program, "recorded", None)


def checked_functions(program) -> list:
    """The program's functions whose bodies it checked (all but the recorded ones)."""
    rec = recorded(program)
    if rec is None or not rec.unchecked:
        return program.functions
    # Asked by each fixed point and plan of a gate worker's program, whose
    # functions are its whole closure's (a program is never changed: a
    # worker that checks more makes a new one).
    known = _CHECKED.get(program)
    if known is None:
        known = _CHECKED[program] = tuple(fn for fn in program.functions if fn.decl.name not in rec.unchecked)
    return known


_CHECKED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def unmapping(program) -> set[str]:
    """may_unmap over a program some of whose bodies were not checked: those
    functions' answers come from their records, the fixed point runs over the rest."""
    rec = recorded(program)
    info = program.info
    calls_of = lambda fn: body_facts(fn, info).calls     # noqa: E731
    if rec is None:
        return may_unmap(program, calls_of=calls_of)
    return may_unmap(program, checked_functions(program), rec.may_unmap, calls_of)


def body_checked(program, fn) -> bool:
    """Whether `program` checked `fn`'s body (its side tables name what it calls)."""
    rec = recorded(program)
    return rec is None or fn.decl.name not in rec.unchecked


@dataclass(frozen=True)
class BodyFacts:
    """What the analyses and the emitters ask of one checked body, found in one walk."""
    calls: frozenset            # names of the functions and externs it calls (may_unmap.calls_in)
    callees: frozenset | None   # the same, or None if some call's target is not a plain name
    touches_memory: bool        # an access, an address taken, a global assigned
    loud: bool                  # that, or a loop, a division or remainder (a trap or a hang)


def body_facts(fn, info) -> BodyFacts:
    """`fn`'s BodyFacts (its body checked, `info` the checker's tables), once
    per function: a gate's worker makes a new program each time it checks
    more bodies (nxc/check/summary.py, Bodies), and each program's fixed
    points, plan and emitters ask again about the same bodies."""
    known = _FACTS.get(fn)
    if known is not None and known[0] is info:
        return known[1]
    facts = _walk(fn.decl.body, info)
    _FACTS[fn] = (info, facts)
    return facts


_FACTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _walk(body, info) -> BodyFacts:
    calls, plain, memory, loud = set(), True, False, False
    for n in ast.nodes(body):
        if isinstance(n, ast.Call):
            s = info.sym(n.func)
            if s is None or not isinstance(n.func, ast.Name):
                plain = False
            if s is not None:
                calls.add(s.name)
        elif is_access(n) or (isinstance(n, ast.Unary) and n.op == "&"):
            memory = True
        elif isinstance(n, ast.Assign):
            if isinstance(n.target, ast.Name):
                s = info.sym(n.target)
                if s is None or s.kind not in ("local", "param"):
                    memory = True
            if n.op in ("/=", "%="):
                loud = True
        elif isinstance(n, ast.While) or (isinstance(n, ast.Binary) and n.op in ("/", "%")):
            loud = True
    return BodyFacts(frozenset(calls), frozenset(calls) if plain else None, memory, loud or memory)


def memory_free(program) -> set[str]:
    """Names of the functions and externs that touch no memory (see the module doc)."""
    return _fixed_point(program, "memory_free")


def silent(program) -> set[str]:
    """Names of the functions and externs that cannot trap, spin or touch memory."""
    return _fixed_point(program, "silent")


def _fixed_point(program, kind: str) -> set[str]:
    info = program.info
    found = {sym.name for sym in program.externs if sym.name not in MEMORY_EXTERNS}
    rec = recorded(program)
    if rec is not None:             # recorded answers for the bodies not checked here
        found |= getattr(rec, kind)
    calls = {}
    for fn in checked_functions(program):
        facts = body_facts(fn, info)
        if not (facts.loud if kind == "silent" else facts.touches_memory):
            calls[fn.decl.name] = facts.callees
    changed = True
    while changed:
        changed = False
        for name in sorted(set(calls) - found):
            if calls[name] is not None and calls[name] <= found:
                found.add(name)
                changed = True
    return found


def is_access(n) -> bool:
    """A memory place: `p[i]`, `p.f` (through a pointer or of a struct place), `*p`."""
    return isinstance(n, (ast.Index, ast.FieldAccess)) or (isinstance(n, ast.Unary) and n.op == "*")
