"""The one table of checked memory's faults: each kind's number and its words.

Both backends word a fault from here, so that it reads the same on either:
- the checked C runtime records a fault as numbers (nx_runtime.h: the enum
  NXRT_F_*, whose values are KINDS'), which nxc/backend/c/faults.py words;
- the Python backend's checked memory (nx_memory.py) words what it finds.
tests/test_fault_wording.py checks nx_runtime.h's enum against KINDS and
that both backends give the same words for the same fault.

Loaded by path, like nx_memory.py (the generated Python runs without nxc's
front end): no imports but the standard library.
"""
from __future__ import annotations

# kind -> its number in the C runtime's enum (NXRT_F_<KIND upper-cased>).
KINDS = {"none": 0, "null": 1, "oob": 2, "before": 3, "unmapped": 4, "misaligned": 5, "wild": 6,
         "munmap_twice": 7, "munmap_inside": 8, "munmap_unknown": 9, "stack": 10, "range": 11}

# kind (or a variant of one) -> its message, without position ("runtime
# error: " and the site are put before it). Fields: what ("read of i64"), a
# (the address), base and length (the mapping's), offset, before, below
# (bytes below null), size, depth, and the suffixes of SUFFIXES, already
# worded (mapped_at, gone), or "".
WORDS = {
    "null": "{what} through a null pointer (address 0x{a:x})",
    "null_below": "{what} through a null pointer (address 0x{a:x}, null - {below})",
    "oob": "out-of-bounds {what} at 0x{a:x}: offset {offset} of the {length}-byte mapping at 0x{base:x}{mapped_at}{gone}",
    "before": ("out-of-bounds {what} at 0x{a:x}: {before} byte(s) before the start of the {length}-byte mapping "
               "at 0x{base:x}{mapped_at}"),
    "unmapped": ("{what} at 0x{a:x} after sys_munmap: offset {offset} of the {length}-byte mapping at "
                 "0x{base:x}{mapped_at}, unmapped at {unmapped_at}"),
    "misaligned": "misaligned {what} at 0x{a:x}: the address is not a multiple of {size}",
    "wild": "{what} at 0x{a:x}: the address is outside any mapping (wild pointer)",
    "munmap_twice": "sys_munmap of 0x{a:x}: the {length}-byte mapping there was already unmapped at {unmapped_at}",
    "munmap_inside": ("sys_munmap of 0x{a:x}: not the start of a mapping (it is {offset} bytes into the "
                      "{length}-byte mapping at 0x{base:x})"),
    "munmap_unknown": "sys_munmap of 0x{a:x}: not an address sys_mmap returned",
    "stack": "stack overflow: nx function calls nested more than {depth} deep",
}

# The parts some messages end with.
SUFFIXES = {
    "mapped_at": " (mapped at {where})",                    # where the mapping was made
    "gone": ", which was unmapped at {where}",              # past a mapping that is gone
    "numpy_named": " (the numpy array passed as '{name}')",  # the Python API's argument
    "numpy": " (a numpy array passed in)",
}

# Addresses this close to null (either side) read as a null pointer plus an offset.
NULL_GUARD = 1 << 16


def fault_text(kind: str, **fields) -> str:
    """The words of fault `kind` (a key of WORDS) with `fields` filled in."""
    fields.setdefault("mapped_at", "")
    fields.setdefault("gone", "")
    return WORDS[kind].format(**fields)


def suffix(part: str, **fields) -> str:
    """The words of SUFFIXES[part] with `fields` filled in."""
    return SUFFIXES[part].format(**fields)


def null_text(what: str, a: int) -> str:
    """An access through null (plus or minus a small offset), `a` as 64 bits."""
    if a >= (1 << 64) - NULL_GUARD:
        return fault_text("null_below", what=what, a=a, below=(1 << 64) - a)
    return fault_text("null", what=what, a=a)
