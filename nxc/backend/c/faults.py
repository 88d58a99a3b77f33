"""C backend, checked mode: the numbers a fault leaves behind -> message and stack.

The checked runtime (runtime/nx_runtime.h, NXRT_CHECKED) records a fault as
ten integers (`nxc_fault_info`) and keeps the shadow stack as site ids; the
words are written here, from the site table (a list, or a separately
compiled gate's nxc/backend/c/sites.SiteTable), in the Python
backend's words (runtime/nx_memory.py), so that a fault reads the same on
either backend:

    oob.nx:7:17: runtime error: out-of-bounds read of i64 at 0x55d1c4e0: offset 32 of the
    32-byte mapping at 0x55d1c4c0 (mapped at oob.nx:15:19)
"""
from __future__ import annotations

import struct

from nxc.backend.c.sites import site_at
from nxc.diagnostics import display_path
from nxc.gates.protocol import Site

# Fault kinds (enum in runtime/nx_runtime.h).
F_NONE, F_NULL, F_OOB, F_BEFORE, F_UNMAPPED, F_MISALIGNED, F_WILD = 0, 1, 2, 3, 4, 5, 6
F_MUNMAP_TWICE, F_MUNMAP_INSIDE, F_MUNMAP_UNKNOWN, F_STACK = 7, 8, 9, 10
_M64 = (1 << 64) - 1


def site_where(sites, k: int) -> str:
    s = site_at(sites, k)
    if s is not None:
        return f"{display_path(s.path)}:{s.line}:{s.col}"
    return "an unknown place"


def describe(info, sites, what: str | None = None, arg_name=None) -> str:
    """The message (without position) of fault `info` (nxc_fault_info's words).

    `what` overrides the access's description (the Python API reading a field);
    `arg_name(k)` names the Python API's argument k (buffers it registered)."""
    kind, a, size, base, length, map_site, unmap_site, site = (int(x) for x in info[:8])
    a &= _M64
    base &= _M64
    s = site_at(sites, site)
    if what is None:
        what = s.what if s is not None and s.kind == "access" else "access"
        if s is not None and s.kind == "write":
            what = f"read of {size} byte{'s' if size != 1 else ''}"
            return "sys_write: " + describe(info, sites, what, arg_name)

    def mapped_at() -> str:
        if map_site >= 0:
            return f" (mapped at {site_where(sites, map_site)})"
        if map_site <= -2:
            name = arg_name(-2 - map_site) if arg_name is not None else None
            return f" (the numpy array passed as '{name}')" if name else " (a numpy array passed in)"
        return ""

    if kind == F_NULL:
        if a >= (1 << 64) - 0x10000:
            return f"{what} through a null pointer (address 0x{a:x}, null - {(1 << 64) - a})"
        return f"{what} through a null pointer (address 0x{a:x})"
    if kind == F_UNMAPPED:
        return (f"{what} at 0x{a:x} after sys_munmap: offset {a - base} of the {length}-byte mapping at "
                f"0x{base:x}{mapped_at()}, unmapped at {site_where(sites, unmap_site)}")
    if kind == F_OOB:
        gone = "" if unmap_site < 0 else f", which was unmapped at {site_where(sites, unmap_site)}"
        return (f"out-of-bounds {what} at 0x{a:x}: offset {a - base} of the {length}-byte mapping "
                f"at 0x{base:x}{mapped_at()}{gone}")
    if kind == F_BEFORE:
        return (f"out-of-bounds {what} at 0x{a:x}: {base - a} byte(s) before the start of the "
                f"{length}-byte mapping at 0x{base:x}{mapped_at()}")
    if kind == F_MISALIGNED:
        return f"misaligned {what} at 0x{a:x}: the address is not a multiple of {size}"
    if kind == F_WILD:
        return f"{what} at 0x{a:x}: the address is outside any mapping (wild pointer)"
    if kind == F_MUNMAP_TWICE:
        return (f"sys_munmap of 0x{a:x}: the {length}-byte mapping there was already unmapped at "
                f"{site_where(sites, unmap_site)}")
    if kind == F_MUNMAP_INSIDE:
        return (f"sys_munmap of 0x{a:x}: not the start of a mapping (it is {a - base} bytes into the "
                f"{length}-byte mapping at 0x{base:x})")
    if kind == F_MUNMAP_UNKNOWN:
        return f"sys_munmap of 0x{a:x}: not an address sys_mmap returned"
    if kind == F_STACK:
        return f"stack overflow: nx function calls nested more than {size} deep"
    return s.what if s is not None else "runtime error"


def trap_message(info, trap_site: int, sites) -> str:
    """`path:line:col: runtime error: ...` for a trap (a fault, or division by zero)."""
    site = int(info[7]) if int(info[0]) != F_NONE else trap_site
    trapped = site_at(sites, trap_site)
    text = describe(info, sites) if int(info[0]) != F_NONE else (
        trapped.what if trapped is not None else "runtime error")
    return f"{site_where(sites, site)}: runtime error: {text}"


def frame_of(sites, k: int) -> Site | None:
    s = site_at(sites, k)
    if s is not None:
        return Site(s.path, s.line, s.col, s.function)
    return None


def stack_from(frames, sites, fault_site: int | None = None) -> tuple[Site, ...]:
    """Frames innermost first from shadow-stack slots (outermost first).

    With `fault_site` the innermost frame is the fault's position: it replaces
    the top slot when that is the same function's (which holds its last loop or
    call), else it goes on top (a function without loops or calls keeps no
    frame: the top slot is its caller's, at the call)."""
    out = [frame_of(sites, k) for k in reversed(list(frames))]
    fault = frame_of(sites, fault_site) if fault_site is not None else None
    if fault is not None:
        if out and out[0] is not None and out[0].function == fault.function:
            out[0] = fault
        else:
            out.insert(0, fault)
    return tuple(f for f in out if f is not None)



def read_mirror(page) -> list[int]:
    """The shadow-stack slots in a page the child mirrored its stack into."""
    depth = struct.unpack_from("<i", page, 0)[0]
    cap = (len(page) // 4) - 2
    depth = max(0, min(depth, cap))
    return list(struct.unpack_from(f"<{depth}i", page, 4)) if depth else []
