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
         "munmap_twice": 7, "munmap_inside": 8, "munmap_unknown": 9, "stack": 10, "range": 11,
         "readonly": 12, "unmap_kind": 13}

# kind (or a variant of one) -> its message, without position ("runtime
# error: " and the site are put before it). Fields: what ("read of i64"), a
# (the address), base and length (the mapping's), offset, before, below
# (bytes below null), size, depth, the suffixes of SUFFIXES, already
# worded (mapped_at, gone), or "", and for the two kinds of mapping (sys_mmap's
# memory, sys_file_map's read-only file pages): fn (the call that ends a mapping:
# "sys_munmap" unless told) and maker (the call that made one: "sys_mmap" unless told).
WORDS = {
    "null": "{what} through a null pointer (address 0x{a:x})",
    "null_below": "{what} through a null pointer (address 0x{a:x}, null - {below})",
    "oob": "out-of-bounds {what} at 0x{a:x}: offset {offset} of the {length}-byte mapping at 0x{base:x}{mapped_at}{gone}",
    "before": ("out-of-bounds {what} at 0x{a:x}: {before} byte(s) before the start of the {length}-byte mapping "
               "at 0x{base:x}{mapped_at}"),
    "unmapped": ("{what} at 0x{a:x} after {fn}: offset {offset} of the {length}-byte mapping at "
                 "0x{base:x}{mapped_at}, unmapped at {unmapped_at}"),
    "misaligned": "misaligned {what} at 0x{a:x}: the address is not a multiple of {size}",
    "wild": "{what} at 0x{a:x}: the address is outside any mapping (wild pointer)",
    "munmap_twice": "{fn} of 0x{a:x}: the {length}-byte mapping there was already unmapped at {unmapped_at}",
    "munmap_inside": ("{fn} of 0x{a:x}: not the start of a mapping (it is {offset} bytes into the "
                      "{length}-byte mapping at 0x{base:x})"),
    "munmap_unknown": "{fn} of 0x{a:x}: not an address {maker} returned",
    # a store into a file's pages (sys_file_map maps them read-only)
    "readonly": ("{what} at 0x{a:x}: offset {offset} of the {length}-byte read-only file mapping at "
                 "0x{base:x}{mapped_at}"),
    # sys_munmap of a file mapping, or sys_file_unmap of sys_mmap's memory
    "unmap_kind": "{fn} of 0x{a:x}: the {length}-byte mapping there was made by {maker}, which {ender} ends",
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
    fields.setdefault("fn", "sys_munmap")
    fields.setdefault("maker", "sys_mmap")
    fields.setdefault("ender", UNMAP_OF.get(fields["maker"], "?"))
    return WORDS[kind].format(**fields)


# The call that ends each kind of mapping, by the call that made it.
UNMAP_OF = {"sys_mmap": "sys_munmap", "sys_file_map": "sys_file_unmap"}
MAKER_OF = {v: k for k, v in UNMAP_OF.items()}


def suffix(part: str, **fields) -> str:
    """The words of SUFFIXES[part] with `fields` filled in."""
    return SUFFIXES[part].format(**fields)


def null_text(what: str, a: int) -> str:
    """An access through null (plus or minus a small offset), `a` as 64 bits."""
    if a >= (1 << 64) - NULL_GUARD:
        return fault_text("null_below", what=what, a=a, below=(1 << 64) - a)
    return fault_text("null", what=what, a=a)
