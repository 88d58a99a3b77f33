"""What a C gate's child does, reduced to numbers: open the library, bind
it, run `main`, read what the runtime recorded.

The gate host (nxc/gates/host.py) forks each gate's child from a small
process that has imported nothing of nxc's compiler, so this module imports
only the standard library (ctypes: no cdef to parse, nothing else to load)
and returns plain tuples; the worker that asked turns them into an
`Outcome` with the program's site tables (CLoaded.outcome_of). The entry
points and their C types are those of emit.GATE_CDEF and LINK_CDEF
(tests/test_gate_host.py keeps the two lists in step).

The library's code is the same object code whichever process opens it, so
a gate's values and float32 bits do not depend on which path ran it.
"""
from __future__ import annotations

import ctypes
import os
from typing import NamedTuple

_I, _I32, _I64, _U32 = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint32
_P64 = ctypes.POINTER(ctypes.c_int64)
# name: (result type, argument types)
SIGNATURES = {
    "nxc_run_main": (_I, (_P64,)),
    "nxc_gate_site": (_I, ()),
    "nxc_trap_site": (_I, ()),
    "nxc_gate_captured": (_I64, (_I,)),
    "nxc_gate_captured_mask": (_U32, ()),
    "nxc_fault_info": (None, (_P64,)),
    "nxc_stack_depth": (_I, ()),
    "nxc_stack_frame": (_I, (_I,)),
    "nxc_stack_mirror": (_I, (ctypes.c_void_p, _I64)),
    "nxc_stack_bytes": (_I64, ()),
    "nxc_module_count": (_I, ()),
    "nxc_modules_bound": (_I, ()),
    "nxc_module_bind": (_I, (ctypes.c_char_p, _I32, _I)),
    "nxc_file_log": (ctypes.c_void_p, ()),
    "nxc_file_log_bytes": (_I64, ()),
    "nxc_set_threads": (_I, (_I,)),
}


class GateJob(NamedTuple):
    """One gate to run (built by CLoaded.gate_job and the recorded path)."""
    path: str                   # the shared library
    bases: tuple | None         # objects.Binding's bases ((module id, site base), ...); None: not linked
    root: str | None            # the module whose main is the gate
    checked: bool
    capture_slots: int          # how many captured operands to read back
    fault_words: int            # emit.FAULT_INFO_WORDS
    threads: int = 1            # sys_parallel_for's threads (nxc run --threads)


class _Lib:
    """The library's entry points, typed once per open."""

    def __init__(self, path: str):
        self._dll = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)

    def __getattr__(self, name: str):
        fn = getattr(self._dll, name)
        restype, argtypes = SIGNATURES[name]
        fn.restype, fn.argtypes = restype, argtypes
        setattr(self, name, fn)
        return fn


def run(job: GateJob, page) -> tuple:
    """Run one gate in this process (a gate's child). `page`: the shared page the
    shadow stack is mirrored into (None: not mirrored).

    Returns ("unbound", count, bound, failed) when the library does not hold
    the modules the link planned, ("no-gate",), ("trap", fault info, trap
    site, stack frames) or ("returned", value, gate site, captured mask,
    captured slots, file log (file_log))."""
    path, bases, root, checked, capture_slots, fault_words, threads = job
    lib = _Lib(path)
    lib.nxc_set_threads(threads)
    if bases is not None:
        failed = [m for m, base in bases if lib.nxc_module_bind(m.encode("utf-8"), base, int(m == root)) != 0]
        count, bound = lib.nxc_module_count(), lib.nxc_modules_bound()
        if failed or count != len(bases) or bound != count:
            return ("unbound", count, bound, failed)
    if checked and page is not None:
        if lib.nxc_stack_bytes() > len(page):
            return ("page-too-small", lib.nxc_stack_bytes())
        lib.nxc_stack_mirror(ctypes.addressof(ctypes.c_char.from_buffer(page)), len(page))
    out = ctypes.c_int64(0)
    status = lib.nxc_run_main(ctypes.byref(out))
    if status == 2:
        return ("no-gate",)
    if status == 1:
        info = (ctypes.c_int64 * fault_words)()
        lib.nxc_fault_info(info)
        frames = [lib.nxc_stack_frame(k) for k in range(lib.nxc_stack_depth())]
        return ("trap", list(info), lib.nxc_trap_site(), frames)
    value, site = out.value, lib.nxc_gate_site()
    mask, raw = 0, []
    if value != 0:
        raw = [lib.nxc_gate_captured(i) for i in range(capture_slots)]
        mask = lib.nxc_gate_captured_mask()
    return ("returned", value, site, mask, raw, file_log(lib))


def parse_log(raw: bytes | None) -> tuple | None:
    """file_log's bytes as ((path, opened), ...), as Outcome.files holds them; None: the log was full."""
    if raw is None:
        return None
    return tuple((os.fsdecode(entry[1:]), entry[:1] == b"1") for entry in raw.split(b"\0")[:-1])


def file_log(lib, ffi=None) -> bytes | None:
    """The runtime's log of the gate's sys_file_open calls (nx_runtime.c, read by
    parse_log); None when it overflowed. `lib`: a _Lib here, or a cffi library
    with its `ffi` (CLoaded.run_gate)."""
    n = lib.nxc_file_log_bytes()
    if n < 0:
        return None
    if n == 0:
        return b""
    if ffi is not None:
        return bytes(ffi.buffer(lib.nxc_file_log(), n))
    return ctypes.string_at(lib.nxc_file_log(), n)
