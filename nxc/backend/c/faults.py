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

import importlib.util
import os
import struct
import sys

from nxc.backend.c.sites import site_at
from nxc.diagnostics import display_path
from nxc.paths import runtime_dir
from nxc.gates.protocol import Site


def fault_table():
    """runtime/nx_faults.py: the fault kinds and their words, one table for
    both backends (loaded by path, as runtime/nx_memory.py loads it)."""
    key = "nxc_runtime_nx_faults"
    mod = sys.modules.get(key)
    if mod is None:
        spec = importlib.util.spec_from_file_location(key, os.path.join(runtime_dir(), "nx_faults.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return mod


_F = fault_table()
# Fault kinds (the enum in runtime/nx_runtime.h, from the table).
F_NONE, F_NULL, F_OOB, F_BEFORE, F_UNMAPPED, F_MISALIGNED, F_WILD = (
    _F.KINDS[k] for k in ("none", "null", "oob", "before", "unmapped", "misaligned", "wild"))
F_MUNMAP_TWICE, F_MUNMAP_INSIDE, F_MUNMAP_UNKNOWN, F_STACK, F_READONLY, F_UNMAP_KIND = (
    _F.KINDS[k] for k in ("munmap_twice", "munmap_inside", "munmap_unknown", "stack", "readonly", "unmap_kind"))
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
    # info[9]: bit 0, the mapping concerned is sys_file_map's; bit 1, the call was sys_file_unmap
    flags = int(info[9]) if len(info) > 9 else 0
    maker = "sys_file_map" if flags & 1 else "sys_mmap"
    fn = "sys_file_unmap" if flags & 2 else "sys_munmap"
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
            return _F.suffix("mapped_at", where=site_where(sites, map_site))
        if map_site <= -2:
            name = arg_name(-2 - map_site) if arg_name is not None else None
            return _F.suffix("numpy_named", name=name) if name else _F.suffix("numpy")
        return ""

    if kind == F_NULL:
        return _F.null_text(what, a)
    if kind == F_UNMAPPED:
        return _F.fault_text("unmapped", what=what, a=a, offset=a - base, length=length, base=base,
                             mapped_at=mapped_at(), unmapped_at=site_where(sites, unmap_site),
                             fn=_F.UNMAP_OF[maker])
    if kind == F_READONLY:
        return _F.fault_text("readonly", what=what, a=a, offset=a - base, length=length, base=base,
                             mapped_at=mapped_at())
    if kind == F_OOB:
        gone = "" if unmap_site < 0 else _F.suffix("gone", where=site_where(sites, unmap_site))
        return _F.fault_text("oob", what=what, a=a, offset=a - base, length=length, base=base,
                             mapped_at=mapped_at(), gone=gone)
    if kind == F_BEFORE:
        return _F.fault_text("before", what=what, a=a, before=base - a, length=length, base=base,
                             mapped_at=mapped_at())
    if kind == F_MISALIGNED:
        return _F.fault_text("misaligned", what=what, a=a, size=size)
    if kind == F_WILD:
        return _F.fault_text("wild", what=what, a=a)
    if kind == F_MUNMAP_TWICE:
        return _F.fault_text("munmap_twice", a=a, length=length, unmapped_at=site_where(sites, unmap_site), fn=fn)
    if kind == F_MUNMAP_INSIDE:
        return _F.fault_text("munmap_inside", a=a, offset=a - base, length=length, base=base, fn=fn)
    if kind == F_MUNMAP_UNKNOWN:
        return _F.fault_text("munmap_unknown", a=a, fn=fn, maker=_F.MAKER_OF[fn])
    if kind == F_UNMAP_KIND:
        return _F.fault_text("unmap_kind", a=a, length=length, fn=fn, maker=maker)
    if kind == F_STACK:
        return _F.fault_text("stack", depth=size)
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
