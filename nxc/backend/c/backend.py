"""The C backend object: emit C, compile it through cffi (cached), load it, run it.

Gates build in cffi's ABI mode (a plain shared library opened with
`ffi.dlopen`: the shortest compile), the Python API in API mode (a real
extension module: the fastest calls); nxc/backend/c/build.py says why.
A run-time error in nx code makes the generated C return a non-zero
status and record which site trapped; the site's position comes from the
emitter's table.
"""
from __future__ import annotations

from nxc.backend import base
from nxc.backend.base import NxRuntimeError
from nxc.backend.c import build as c_build
from nxc.backend.c.emit import c_abi_type, c_type, emit_c
from nxc.check.types import VOID, BoolType, PointerType, Type


class CBackend(base.Backend):
    name = "c"

    def emit(self, program):
        return emit_c(program)

    def build(self, emitted, *, purpose: str = "gate", opt: str = "2", use_cache: bool = True):
        # Nothing exported that nobody calls: a gate needs its entry points
        # only. The Python API (nxc/api.py) can call every function of the
        # import closure (a bench driver calls its imports' constructors), so
        # an API build keeps them all: one build per nxc.load, not per gate.
        selected = emitted.only(() if purpose == "gate" else emitted.wrappers)
        return c_build.build(selected, opt=opt, use_cache=use_cache, abi=purpose == "gate")

    def load(self, program, emitted, built) -> "CLoaded":
        return CLoaded(program, emitted, built)

    def warm_up(self) -> None:
        c_build.warm_up()


class CLoaded(base.Loaded):
    name = "c"

    def __init__(self, program, emitted, built):
        super().__init__(program, emitted, built)
        self.lib, self.ffi = c_build.load(built)

    def _trap_site(self):
        return self.emitted.sites[self.lib.nxc_trap_site()]

    def run_gate(self):
        lib = self.lib
        out = self.ffi.new("int64_t *")
        status = lib.nxc_run_main(out)
        if status == 2:
            return base.no_gate(self.name)
        if status == 1:
            s = self._trap_site()
            return base.trapped(self.program, s.path, s.line, s.col, s.what, self.name)
        value, site = out[0], lib.nxc_gate_site()
        captured = ()
        if value != 0:
            raw = [lib.nxc_gate_captured(i) for i in range(self.emitted.capture_slots)]
            captured = self.emitted.captured(site, lib.nxc_gate_captured_mask(), raw)
        return base.returned(self.program, value, site, captured, self.name)

    def _error(self) -> NxRuntimeError:
        s = self._trap_site()
        return NxRuntimeError(f"{s.path}:{s.line}:{s.col}: runtime error: {s.what}")

    def run_main(self) -> int:
        out = self.ffi.new("int64_t *")
        if self.lib.nxc_run_main(out) != 0:
            raise self._error()
        return out[0]

    def _c_arg(self, value, keep):
        if isinstance(value, tuple):
            kind = value[0]
            if kind == "null":
                return self.ffi.NULL
            if kind == "ptr":
                return self.ffi.cast("void *", value[1])
            arr = value[1]
            keep.append(arr)
            return self.ffi.cast("void *", arr.ctypes.data)
        return value

    def call(self, fn, args: list):
        keep = []          # the arrays stay alive until the call returns
        c_args = [self._c_arg(v, keep) for v in args]
        wrapper = getattr(self.lib, "nxw_" + fn.decl.name)
        if fn.ret is VOID:
            status = wrapper(*c_args)
            result = None
        else:
            out = self.ffi.new(_out_ctype(fn.ret))
            status = wrapper(*c_args, out)
            result = out[0]
        if status != 0:
            raise self._error()
        if isinstance(fn.ret, PointerType):
            return int(self.ffi.cast("uintptr_t", result))
        if isinstance(fn.ret, BoolType):
            return bool(result)
        return result

    def read(self, address: int, t: Type):
        if address == 0:
            raise NxRuntimeError("reading a field through a null pointer")
        ct = "uintptr_t" if isinstance(t, PointerType) else c_type(t)
        value = self.ffi.cast(ct + " *", address)[0]
        return bool(value) if isinstance(t, BoolType) else int(value)

    def read_array(self, address: int, count: int, dtype):
        import numpy as np      # the API's dependency; gate runs never pay for its import
        buf = self.ffi.buffer(self.ffi.cast("char *", address), count * dtype.itemsize)
        return np.frombuffer(bytes(buf), dtype=dtype).copy()


def _out_ctype(t: Type) -> str:
    """The C type of a result slot for `t` (pointers come back as void *)."""
    return "void **" if isinstance(t, PointerType) else c_abi_type(t) + " *"
