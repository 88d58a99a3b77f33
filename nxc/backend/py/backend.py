"""The Python backend object: emit Python over checked memory, compile it, run it.

"Building" is compiling the generated text to a code object (no cache:
it takes milliseconds). Loading is lazy: the module's namespace, and with
it its checked memory, is made on first use, so a gate run made in a
forked child (the gate runner's way) executes the module there and leaves
the parent untouched.

numpy arrays passed to `*T` parameters live in C memory on the C backend;
here each array gets a mapping of the checked arena (kept while the module
lives, so nx code may hold on to the pointer). Before every call all such
arrays are copied into their mappings and after it back out, so the arrays
see nx code's writes as they would on the C backend.
"""
from __future__ import annotations

import hashlib
import mmap
import sys
import time
from dataclasses import dataclass

from nxc import __version__
from nxc.backend import base
from nxc.backend.py import stack as nx_stack
from nxc.backend.base import NxRuntimeError
from nxc.backend.py.emit import emit_py, type_key
from nxc.backend.py.run import (RECURSION_LIMIT, compile_py, describe_fault, execute_module, runtime_digest,
                                runtime_modules)
from nxc.check.types import BoolType


@dataclass
class CompiledPy:
    code: object            # the code object of the generated module
    seconds: float
    cached: None = None     # no build cache: compiling is cheap


class PyBackend(base.Backend):
    name = "py"

    def emit(self, program):
        return emit_py(program)

    def build(self, emitted, *, purpose: str = "gate", opt: str = "2", use_cache: bool = True):
        t0 = time.perf_counter()
        code = compile_py(emitted)
        return CompiledPy(code, time.perf_counter() - t0)

    def artefact_key(self, emitted, *, purpose: str = "gate", opt: str = "2") -> str:
        # No build cache to borrow a key from: the generated text, the runtime it
        # runs on (runtime/nx_f32.py, nx_memory.py) and nxc's version.
        h = hashlib.sha256()
        for part in (__version__, runtime_digest(), emitted.filename, emitted.text):
            h.update(part.encode("utf-8", "surrogateescape"))     # a path may hold any bytes
            h.update(b"\0")
        return "py-" + h.hexdigest()[:24]

    def load(self, program, emitted, built) -> "PyLoaded":
        return PyLoaded(program, emitted, built)

    def warm_up(self) -> None:
        runtime_modules()


class PyLoaded(base.Loaded):
    """The one in-process loader of Python-backend modules.

    Besides the `Loaded` interface: `memory` is the runtime (sys_mmap,
    read_bytes, write_bytes...), `function(name)` an nx function as a plain
    Python callable that raises the runtime's located NxRuntimeError.
    """
    name = "py"
    # On a timeout the child gets SIGUSR1 and writes its .nx stack into _page.
    interrupt_on_timeout = True

    def __init__(self, program, emitted, built):
        super().__init__(program, emitted, built)
        self._page = None
        self._ns: dict | None = None
        self._arrays: dict[int, tuple] = {}     # id(array) -> (array, address, nbytes)

    @property
    def namespace(self) -> dict:
        if self._ns is None:
            self._ns = execute_module(self.emitted, self.built.code if self.built is not None else None)
        return self._ns

    @property
    def memory(self):
        return self.namespace["_rt"]

    def set_threads(self, n: int) -> None:
        super().set_threads(n)
        self.memory.threads = self.threads

    def _located(self, exc: BaseException):
        """The runtime's NxRuntimeError (with `where`) for `exc` raised by generated code."""
        e = self.emitted
        return describe_fault(exc, e.filename, e.text, self.memory, e.line_pos)

    def function(self, name: str):
        py = self.emitted.names.get(name)
        fn = self.namespace.get(py) if py is not None else None
        if fn is None or not callable(fn):
            raise AttributeError(f"the program has no function '{name}'")

        def call(*args):
            try:
                return fn(*args)
            except Exception as exc:   # noqa: BLE001 - every fault becomes a located error
                raise self._located(exc) from None
        call.__name__ = name
        call.__doc__ = f"nx function {name} (Python backend)"
        return call

    def share_stack(self) -> None:
        if self._page is None:
            self._page = mmap.mmap(-1, 1 << 16)

    def stack_after_death(self) -> tuple:
        if self._page is None:
            return ()
        frames = nx_stack.read_timeout_report(self._page)
        self._page.close()
        self._page = None
        return tuple(frames)

    def run_gate(self):
        if self.emitted.entry is None:
            return base.no_gate(self.name)
        if self._page is not None:
            nx_stack.install_timeout_report(self._page, self.emitted)
        # Deep nx recursion is a stack overflow to report, not a RecursionError at
        # Python's default depth. Only here: the gate runner calls this in a child.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        ns = self.namespace
        rt = ns["_rt"]
        rt.threads = self.threads
        try:
            value = ns[self.emitted.entry]()
        except Exception as exc:   # noqa: BLE001 - every fault becomes a located outcome
            err = self._located(exc)
            frames = nx_stack.stack_from_traceback(exc.__traceback__, self.emitted, str(err))
            where = getattr(err, "where", None)
            if where is None:
                return base.trapped(self.program, None, 0, 0, "", self.name, message=str(err), stack=frames)
            path, line, col = where
            return base.trapped(self.program, path, line, col, err.what, self.name, message=str(err),
                                stack=frames)
        captured = ()
        if value != 0:
            slots = self.emitted.capture_slots
            cap = {k: v for k, v in rt.captured.items() if v is not None and 0 <= k < slots}
            mask = sum(1 << k for k in cap)
            captured = self.emitted.captured(rt.gate_site, mask, [_as_i64(cap.get(k, 0)) for k in range(slots)])
        opened = rt.files_opened
        return base.returned(self.program, value, rt.gate_site, captured, self.name,
                             None if opened is None else tuple(opened))

    # ---- the Python API ----
    def _error(self, exc: BaseException) -> NxRuntimeError:
        err = self._located(exc)
        return NxRuntimeError(str(err), nx_stack.stack_from_traceback(exc.__traceback__, self.emitted, str(err)))

    def _address_of(self, arr) -> int:
        entry = self._arrays.get(id(arr))
        if entry is not None and entry[0] is arr:
            return entry[1]
        nbytes = max(arr.nbytes, 1)
        addr = self.memory.sys_mmap(nbytes)
        if addr == 0:
            raise NxRuntimeError(f"cannot map {nbytes} bytes for a numpy argument in the Python backend")
        self._arrays[id(arr)] = (arr, addr, arr.nbytes)
        return addr

    def _sync_in(self) -> None:
        for arr, addr, n in self._arrays.values():
            if n:
                self.memory.arena[addr:addr + n] = arr.tobytes()

    def _sync_out(self) -> None:
        import numpy as np      # only the API passes arrays
        for arr, addr, n in self._arrays.values():
            if n:
                arr[...] = np.frombuffer(bytes(self.memory.arena[addr:addr + n]),
                                         dtype=arr.dtype).reshape(arr.shape)

    def _guarded(self, fn, args):
        self._sync_in()
        try:
            return fn(*args)
        except Exception as exc:   # noqa: BLE001
            raise self._error(exc) from None
        finally:
            self._sync_out()

    def call(self, fn, args: list):
        raw = []
        for v in args:
            if isinstance(v, tuple):
                kind = v[0]
                raw.append(0 if kind == "null" else v[1] if kind == "ptr" else self._address_of(v[1]))
            else:
                raw.append(v)
        result = self._guarded(self.namespace[self.emitted.names[fn.decl.name]], raw)
        return bool(result) if isinstance(fn.ret, BoolType) else result

    def run_main(self) -> int:
        return self._guarded(self.namespace[self.emitted.entry], ())

    def read(self, address: int, t, what: str | None = None):
        mem = runtime_modules()[1]
        fmt = mem.FORMATS[type_key(t)]
        size = mem.SIZES[fmt]
        if address == 0:
            raise NxRuntimeError("runtime error: " + mem.null_text(what or "read", 0))
        rt = self.memory
        try:
            rt.check_range(address, size)
        except Exception as exc:   # noqa: BLE001
            raise NxRuntimeError(str(exc)) from None
        if address % size:
            raise NxRuntimeError("runtime error: " + mem.fault_text("misaligned", what=f"{what or 'read'} of {type_key(t)}",
                                                                    a=address, size=size))
        value = rt.views[fmt][address // size]
        return value != 0 if type_key(t) == "bool" else int(value)     # any nonzero byte is true

    def read_array(self, address: int, count: int, dtype):
        import numpy as np
        try:
            data = self.memory.read_bytes(address, count * dtype.itemsize)
        except Exception as exc:   # noqa: BLE001
            raise NxRuntimeError(str(exc)) from None
        return np.frombuffer(data, dtype=dtype).copy()


def _as_i64(v) -> int:
    v = int(v) & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >> 63 else v
