"""C backend, unit logic: the small imported functions a unit copies in.

A unit (a module's object) holds a `static inline` copy of each small
straight-line function it calls from an import (ProgramFacts.is_copied: like
a C header's static inline functions, so that a kernel's loop can still
inline and vectorize them), transitively through the copies' own calls. The
C of a copy is kept per worker process (`COPIED`), keyed by what decides it:
a gate's worker emits the same float32 helpers into almost every root's
object, and without the kept text it would have to check their bodies and
compute the effects of its program again to write them.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from nxc.check.program import Function
from nxc.backend.c.facts import ProgramFacts
from nxc.backend.c.function import SITE_MARK, function_entry
from nxc.backend.c.sites import Site


@dataclass(frozen=True)
class CopiedC:
    """The C of a function as each unit that copies it holds it (`static
    inline`, units.emit_module), with its site numbers marked: a unit numbers
    them from where it places the copy (`placed`), so one text serves every
    unit."""
    entry: dict             # function_entry's fields; read only
    sites: tuple            # the sites its body adds, in order
    calls: frozenset        # the names its body calls (calls_in)
    structs: tuple = (frozenset(), frozenset())  # (defined, named) structs of its C (facts.structs_used)

    def placed(self, sites: list) -> dict:
        """Its template fields at the end of a unit's `sites` (which it extends)."""
        base = len(sites)
        sites.extend(self.sites)
        if not self.sites:
            return self.entry
        body = [_number_sites(line, base) if SITE_MARK in line else line for line in self.entry["body"]]
        return {**self.entry, "body": body}


def _number_sites(line: str, base: int) -> str:
    parts = line.split(SITE_MARK)        # text, index, text, index, ..., text
    for k in range(1, len(parts), 2):
        parts[k] = f"NX_SITE({base + int(parts[k])})"
    return "".join(parts)


class CopiedMemo:
    """The kept CopiedC, least recently used first, at most `bound` of them.
    Keyed by what decides a copy's C: the key of its module's object (which
    covers the module's text and path, its closure's interfaces and the
    build configuration: objects.object_key), its name, checked, unbox_f32;
    never by a path alone: a long-lived worker (`nxc test --watch`) sees
    files change."""

    def __init__(self, bound: int):
        self.bound = bound
        self.entries: "OrderedDict[tuple, CopiedC]" = OrderedDict()
        self.hits = 0
        self.stored = 0

    def get(self, key: tuple) -> "CopiedC | None":
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
            self.hits += 1
        return found

    def put(self, key: tuple, value: CopiedC) -> None:
        self.entries[key] = value
        self.entries.move_to_end(key)
        self.stored += 1
        while len(self.entries) > self.bound:
            self.entries.popitem(last=False)


# The float32 modules' copied helpers (~60) and a few per tree module a
# worker's gates import; each a few hundred bytes. One per process: it
# outlives programs, and is keyed on object keys, never on a program.
COPIED_KEPT = 2048
COPIED = CopiedMemo(COPIED_KEPT)


def copied_c(facts: ProgramFacts, fn: Function, copy_key=None, *, write: bool = True) -> "CopiedC | None":
    """`fn`'s CopiedC for a unit of `facts.program`: the kept one when
    `copy_key(fn)` (the digest that decides its C, or None) has one, else
    (`write`) written now from its checked body (and kept); None if neither."""
    digest = copy_key(fn) if copy_key is not None else None
    key = (digest, fn.decl.name, facts.checked, facts.unbox_f32)
    found = facts.found.get(key)
    if found is not None:
        return found
    if digest is not None:
        found = COPIED.get(key)
    if found is None:
        if not write or not facts.body_checked(fn):
            return None
        sites: list[Site] = []
        entry = function_entry(facts, fn, sites, site_macro=True, mark_sites=True)
        found = CopiedC(entry, tuple(sites), facts.calls_of(fn), facts.structs_of(fn))
        if digest is not None:
            COPIED.put(key, found)
    facts.found[key] = found
    return found


def walk_copies(facts: ProgramFacts, own: list[Function], copy_key, write: bool):
    """(name -> (function, its CopiedC, or None if not written), names of the other imported functions
    called, the copied functions whose C can be had neither from the kept
    copies nor from this program (bodies not checked here)) of a unit holding
    `own`, transitively through the copies' own calls. `write`: write the C
    of the checked copies not kept (else their calls are only followed: the
    caller may check more bodies first, a new program)."""
    by_name = facts.by_name
    own_names = {fn.decl.name for fn in own}
    copies: dict[str, tuple] = {}
    called: set[str] = set()
    unknown: dict[str, Function] = {}
    todo = [facts.calls_of(fn) for fn in own]
    while todo:
        for name in todo.pop():
            callee = by_name.get(name)
            if callee is None or name in own_names or name in copies or name in unknown:
                continue
            if not facts.is_copied(callee):
                called.add(name)
                continue
            c = copied_c(facts, callee, copy_key, write=write)
            if c is None:
                if not facts.body_checked(callee):
                    unknown[name] = callee
                    continue
                calls = facts.calls_of(callee)      # not written now (write=False): its calls only
            else:
                calls = c.calls
            copies[name] = (callee, c)
            todo.append(calls)
    return copies, called, list(unknown.values())


def copies_unknown(facts: ProgramFacts, own: list[Function], copy_key=None) -> list[Function]:
    """The functions a unit holding `own` copies (transitively) whose bodies
    must be checked before it is emitted: neither checked in `facts.program`
    nor kept (CopiedC, under `copy_key`)."""
    return walk_copies(facts, own, copy_key, write=False)[2]
