"""The Python backend's run time: the runtime modules, executing generated code, locating faults.

The backend object (nxc/backend/py/backend.py) loads and runs modules with
these; generated modules import `runtime_modules` and, run as scripts,
`run_module_main`. Every fault comes back as an NxRuntimeError whose text is
`path:line:col: runtime error: ...` and whose `where` is (path, line, col):

* the checked memory and the division helpers (runtime/nx_memory.py) raise
  `NxRuntimeError` with the site of the access already in the message;
* anything else raised by generated code is located here from the traceback:
  an address beyond the arena makes the inline shadow test raise IndexError,
  and the failing subscript's column (co_positions) says which access of the
  line it was; deep recursion is a stack overflow; an internal error names the
  .nx statement it happened in. The user never sees a Python traceback.

"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from functools import lru_cache

from nxc.deep import deep
from nxc.diagnostics import CompileError, Diagnostics, Pos, SourceFile, display_path
from nxc.paths import digest_of_files, runtime_dir

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


@lru_cache(maxsize=1)
def runtime_digest() -> str:
    """A content hash of the Python runtime's files (part of the result cache's key)."""
    return digest_of_files(*(os.path.join(runtime_dir(), f"{name}.py") for name in ("nx_f32", "nx_memory", "nx_faults")))


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


def execute_module(emitted, code=None) -> dict:
    """A fresh namespace of the generated module (its own checked memory)."""
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
    where, located = _statement_where(lineno, lines, line_pos)
    if isinstance(exc, RecursionError):
        what = runtime_modules()[1].fault_text("stack", depth=sys.getrecursionlimit())
    elif isinstance(exc, MemoryError):
        what = "out of memory"
    else:
        what = f"internal error in the Python backend ({type(exc).__name__}: {exc})"
    return err_cls(f"{where}: runtime error: {what}", located, what)


def _statement_where(lineno: int, lines: list[str], line_pos) -> tuple[str, tuple | None]:
    """(`path:line:col` as shown, (path, line, col) or None) of generated line `lineno`."""
    if line_pos and lineno in line_pos:
        path, line, col = line_pos[lineno]
        return f"{display_path(path)}:{line}:{col}", (path, line, col)
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
                return f"{m2.group(1)}:{n or m2.group(2)}", None
            break
    return f"<generated python line {lineno}>", None


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
