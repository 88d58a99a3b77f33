"""Running the Python backend: load the generated module, run a gate, locate faults.

`run_gate_py` runs the gate in a forked child (nxc/gates/run.py's `run_isolated`),
like the C backend, so a runaway gate is stopped by the timeout. Every fault
comes back as `path:line:col: runtime error: ...`:

* the checked memory and the division helpers (runtime/nx_memory.py) raise
  `NxRuntimeError` with the site of the access already in the message;
* anything else raised by generated code is located here from the traceback:
  an address beyond the arena makes the inline shadow test raise IndexError,
  and the failing subscript's column (co_positions) says which access of the
  line it was; deep recursion is a stack overflow; an internal error names the
  .nx statement it happened in. The user never sees a Python traceback.

`load_py(program)` loads the module in this process for the Python API:
`mod.<nx function>(...)` calls it with the same error reporting, and
`mod.memory` is the runtime (sys_mmap / read_bytes / write_bytes ...).
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
import time
from functools import lru_cache

from nxc.deep import deep
from nxc.diagnostics import CompileError, Diagnostics, Pos, SourceFile, display_path
from nxc.paths import runtime_dir
from nxc.gates.run import FAIL, Outcome, outcome_from, run_isolated

RECURSION_LIMIT = 200_000

_SUBSCRIPT_TAIL = re.compile(r"\s*&\s*\d+\s+else\s+_(ld|st)\((_a|_p),\s*(\d+)\)")
_LINE_COMMENT = re.compile(r"#\s*line\s+(\d+)\s*$")


@lru_cache(maxsize=1)
def runtime_modules():
    """(nx_f32, nx_memory): the Python runtime, loaded from the runtime folder."""
    mods = []
    for name in ("nx_f32", "nx_memory"):
        key = f"nxc_runtime_{name}"
        mod = sys.modules.get(key)
        if mod is None:
            spec = importlib.util.spec_from_file_location(key, os.path.join(runtime_dir(), f"{name}.py"))
            mod = importlib.util.module_from_spec(spec)
            sys.modules[key] = mod
            spec.loader.exec_module(mod)
        mods.append(mod)
    return tuple(mods)


def NxRuntimeError():
    return runtime_modules()[1].NxRuntimeError


@deep       # CPython's compiler recurses over the generated code
def compile_py(emitted):
    """The code object of the generated module; a program nested deeper than
    CPython's parser allows is a located CompileError (see python_limit)."""
    try:
        return compile(emitted.text, emitted.filename, "exec")
    except (SyntaxError, RecursionError, MemoryError) as exc:
        error = python_limit(emitted, exc)
        if error is None:
            raise                       # not a nesting limit: a bug in the emitter
        raise error from None


# CPython's own limits on source text (its tokenizer and compiler): the
# generated Python cannot nest deeper, whatever the stack (the C backend can).
_PY_LIMITS = ("too many nested parentheses", "too many levels of indentation",
              "too many statically nested blocks", "maximum recursion depth", "too complex")


def python_limit(emitted, exc: BaseException):
    """A CompileError at the .nx statement whose generated Python hit one of
    CPython's nesting limits, or None if `exc` is not that."""
    text = str(getattr(exc, "msg", None) or exc)
    if not isinstance(exc, MemoryError) and not any(s in text for s in _PY_LIMITS):
        return None
    lineno = getattr(exc, "lineno", None) or 0
    before = [n for n in emitted.line_pos if n <= lineno]
    site = emitted.line_pos[max(before)] if before else next(iter(emitted.line_pos.values()), None)
    pos = None
    if site is not None:
        path, line, col = site
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                src = SourceFile(path, f.read())
        except OSError:
            src = SourceFile(path, "")
        pos = Pos(src, line, col)
    diags = Diagnostics()
    diags.error(pos, f"nested too deeply for the Python backend ({text}: CPython allows 200 nested "
                     "parentheses, 100 levels of indentation, 20 nested loops); the C backend runs it")
    return CompileError(diags.errors)


def _exec(emitted, code=None) -> dict:
    ns = {"__name__": "nxc_py_module", "__file__": emitted.filename, "__builtins__": __builtins__}
    exec(code or compile_py(emitted), ns)
    return ns


# ---------------------------------------------------------------- fault location
def describe_fault(exc: BaseException, filename: str, text: str, rt, line_pos: dict | None = None):
    """A located NxRuntimeError for an exception raised by generated code."""
    err_cls = runtime_modules()[1].NxRuntimeError
    if isinstance(exc, err_cls):
        return exc
    tb = exc.__traceback__
    last = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            last = tb
        tb = tb.tb_next
    lines = text.split("\n")
    if last is None:
        return err_cls(f"runtime error: internal error in the Python backend: {type(exc).__name__}: {exc}")
    lineno = last.tb_lineno
    frame = last.tb_frame
    if isinstance(exc, IndexError):
        try:
            pos = list(frame.f_code.co_positions())[last.tb_lasti // 2]
            src = lines[pos[0] - 1] if pos[0] else ""
            m = _SUBSCRIPT_TAIL.match(src, pos[3]) if pos[3] is not None else None
        except (IndexError, TypeError, ValueError):
            m = None
        if m is not None and m.group(2) in frame.f_locals:
            return rt.describe_access(frame.f_locals[m.group(2)], int(m.group(3)))
    where = _statement_where(lineno, lines, line_pos)
    if isinstance(exc, RecursionError):
        what = f"stack overflow: nx function calls nested more than {sys.getrecursionlimit()} deep"
    elif isinstance(exc, MemoryError):
        what = "out of memory"
    else:
        what = f"internal error in the Python backend ({type(exc).__name__}: {exc})"
    return err_cls(f"{where}: runtime error: {what}")


def _statement_where(lineno: int, lines: list[str], line_pos) -> str:
    if line_pos and lineno in line_pos:
        path, line, col = line_pos[lineno]
        return f"{display_path(path)}:{line}:{col}"
    # A standalone file: the nearest `# line N` above, in the function's file.
    n = None
    for i in range(lineno - 1, -1, -1):
        s = lines[i] if i < len(lines) else ""
        m = _LINE_COMMENT.search(s)
        if m and n is None:
            n = m.group(1)
        if s.startswith("def "):
            m2 = re.search(r"#\s*(.*):(\d+)\s*$", s)
            if m2:
                return f"{m2.group(1)}:{n or m2.group(2)}"
            break
    return f"<generated python line {lineno}>"


# ---------------------------------------------------------------- gates
def run_gate_py(program, timeout: float | None) -> Outcome:
    from nxc.backend.py.emit import emit_py
    emitted = emit_py(program)
    code = compile_py(emitted)

    def call():
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        ns = _exec(emitted, code)
        rt = ns["_rt"]
        if emitted.entry is None:
            return 2, 0, -1, -1
        try:
            value = ns[emitted.entry]()
        except Exception as exc:   # noqa: BLE001 - every fault becomes a located message
            raise describe_fault(exc, emitted.filename, emitted.text, rt, emitted.line_pos) from None
        cap = {k: v for k, v in rt.captured.items() if v is not None and 0 <= k < emitted.capture_slots}
        mask = sum(1 << k for k in cap)
        raw = [_as_i64(cap.get(k, 0)) for k in range(emitted.capture_slots)]
        return (0, value, rt.gate_site, -1, mask, *raw)

    start = time.perf_counter()
    kind, data = run_isolated(call, timeout)
    outcome = outcome_from(program, kind, data, "py", time.perf_counter() - start, lambda site: "")
    if outcome.status == FAIL:
        outcome.captured = emitted.captured(data[2], data[4], data[5:])
    return outcome


def _as_i64(v) -> int:
    v = int(v) & 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >> 63 else v


def run_module_main(ns: dict) -> int:
    """`python generated.py`: run the gate, print a failure, return an exit status."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    rt = ns["_rt"]
    main = ns.get("main")
    if main is None:
        print("nxc: this module has no gate (func main() -> i64)", file=sys.stderr)
        return 1
    filename = ns.get("__file__", "")
    try:
        with open(filename, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        text = ""
    try:
        value = main()
    except Exception as exc:  # noqa: BLE001
        print(describe_fault(exc, main.__code__.co_filename, text, rt), file=sys.stderr)
        return 1
    if value == 0:
        print("PASS")
        return 0
    site = rt.gate_site
    where = ""
    if 0 <= site:
        where = f" (gate return #{site})"
    print(f"FAIL main returned {value}{where}", file=sys.stderr)
    return value if 1 <= value <= 255 else 1


# ---------------------------------------------------------------- in-process API
class PyModule:
    """A loaded Python-backend module: nx functions as attributes, `memory` the runtime."""

    def __init__(self, program, emitted, ns):
        self.program = program
        self.emitted = emitted
        self.namespace = ns
        self.memory = ns["_rt"]

    def function(self, name: str):
        py = self.emitted.names.get(name)
        fn = self.namespace.get(py) if py is not None else None
        if fn is None or not callable(fn):
            raise AttributeError(f"the program has no function '{name}'")
        emitted, rt = self.emitted, self.memory

        def call(*args):
            try:
                return fn(*args)
            except Exception as exc:   # noqa: BLE001
                raise describe_fault(exc, emitted.filename, emitted.text, rt, emitted.line_pos) from None
        call.__name__ = name
        call.__doc__ = f"nx function {name} (Python backend)"
        return call

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self.function(name)

    def run_gate(self) -> tuple[int, int]:
        """(value, gate return site) of the root module's gate, in this process."""
        if self.emitted.entry is None:
            raise AttributeError("the module has no gate")
        value = self.function("main")()
        return value, self.memory.gate_site


def load_py(program) -> PyModule:
    """Emit and load a checked program in this process (nx functions become callable)."""
    from nxc.backend.py.emit import emit_py
    emitted = emit_py(program)
    return PyModule(program, emitted, _exec(emitted))


class PyBackend:
    """The Python backend behind nxc.api.Module (`nxc.load(path, backend="py")`).

    numpy arrays passed to `*T` parameters live in C memory on the C backend;
    here each array gets a mapping of the checked arena (kept while the module
    lives, so nx code may hold on to the pointer). Before every call all such
    arrays are copied into their mappings and after it back out, so the
    arrays see nx code's writes as they would on the C backend.
    """
    name = "py"

    def __init__(self, program):
        from nxc.backend.py.emit import emit_py
        self.program = program
        self.emitted = emit_py(program)
        self.ns = _exec(self.emitted)
        self.rt = self.ns["_rt"]
        self.module = None
        self._arrays: dict[int, tuple] = {}     # id(array) -> (array, address, nbytes)

    def _error(self, exc: BaseException):
        from nxc.api import NxRuntimeError as ApiError
        err = describe_fault(exc, self.emitted.filename, self.emitted.text, self.rt, self.emitted.line_pos)
        return ApiError(str(err))

    def _address_of(self, arr) -> int:
        entry = self._arrays.get(id(arr))
        if entry is not None and entry[0] is arr:
            return entry[1]
        nbytes = max(arr.nbytes, 1)
        addr = self.rt.sys_mmap(nbytes)
        if addr == 0:
            from nxc.api import NxRuntimeError as ApiError
            raise ApiError(f"cannot map {nbytes} bytes for a numpy argument in the Python backend")
        self._arrays[id(arr)] = (arr, addr, arr.nbytes)
        return addr

    def _sync_in(self) -> None:
        for arr, addr, n in self._arrays.values():
            if n:
                self.rt.arena[addr:addr + n] = arr.tobytes()

    def _sync_out(self) -> None:
        import numpy as np
        for arr, addr, n in self._arrays.values():
            if n:
                arr[...] = np.frombuffer(bytes(self.rt.arena[addr:addr + n]), dtype=arr.dtype).reshape(arr.shape)

    def call(self, fn, converted, original):
        from nxc.check.types import BoolType, PointerType
        args = []
        for v in converted:
            if isinstance(v, tuple):
                kind = v[0]
                args.append(0 if kind == "null" else v[1] if kind == "ptr" else self._address_of(v[1]))
            else:
                args.append(v)
        pyfn = self.ns[self.emitted.names[fn.decl.name]]
        self._sync_in()
        try:
            result = pyfn(*args)
        except Exception as exc:   # noqa: BLE001
            raise self._error(exc) from None
        finally:
            self._sync_out()
        if isinstance(fn.ret, PointerType):
            from nxc.api import Pointer
            return Pointer(result, fn.ret, self.module)
        if isinstance(fn.ret, BoolType):
            return bool(result)
        return result

    def run_main(self) -> int:
        self._sync_in()
        try:
            return self.ns[self.emitted.entry]()
        except Exception as exc:   # noqa: BLE001
            raise self._error(exc) from None
        finally:
            self._sync_out()

    def read(self, address: int, t):
        from nxc.api import NxRuntimeError as ApiError
        from nxc.backend.py.emit import type_key
        mem = runtime_modules()[1]
        fmt = mem.FORMATS[type_key(t)]
        size = mem.SIZES[fmt]
        if address == 0:
            raise ApiError("reading a field through a null pointer")
        try:
            self.rt.check_range(address, size)
        except Exception as exc:   # noqa: BLE001
            raise ApiError(str(exc)) from None
        if address % size:
            raise ApiError(f"runtime error: misaligned read of {type_key(t)} at 0x{address:x}")
        value = self.rt.views[fmt][address // size]
        return value != 0 if type_key(t) == "bool" else int(value)     # any nonzero byte is true

    def read_array(self, address: int, count: int, dtype):
        import numpy as np
        from nxc.api import NxRuntimeError as ApiError
        try:
            data = self.rt.read_bytes(address, count * dtype.itemsize)
        except Exception as exc:   # noqa: BLE001
            raise ApiError(str(exc)) from None
        return np.frombuffer(data, dtype=dtype).copy()
