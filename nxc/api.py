"""The Python API: load a .nx module and call its functions on numpy data.

    import numpy as np, nxc
    m = nxc.load("nx_src/nx_f32_attention.nx")          # C backend, cached build
    out = np.zeros(n * d, dtype=np.int64)
    m.nx_f32_attention(Q, K, V, n, d, scale, out, scores, probs)

Integers go in as Python ints (checked against the parameter's width), `*T`
parameters take a C-contiguous numpy array of the matching dtype (any dtype
for `*void`), a `Pointer` returned by an earlier call, or None for null.
Writes through a pointer land in the array. Pointers returned by nx
functions come back as `Pointer` handles; a handle to a struct reads its
fields by name (`seq.seq_len`). Consts are attributes. A run-time error in
nx code (a bad memory access, checked by default; division by zero) raises
`NxRuntimeError` with the .nx location and call stack.
"""
from __future__ import annotations

import inspect
import keyword
import os
from dataclasses import dataclass

import numpy as np

from nxc.backend.base import Loaded, NxRuntimeError
from nxc.backend.registry import NAMES, backend_for
from nxc.check.program import Function, Program, Symbol
from nxc.check.externs import task_externs
from nxc.check.types import BoolType, IntType, PointerType, StructType, Type, VoidType
from nxc.diagnostics import Diagnostics

__all__ = ["CompileError", "Module", "NxRuntimeError", "Pointer", "dtype_for", "load"]

from nxc.diagnostics import CompileError  # noqa: E402 - re-exported: nxc.CompileError

_DTYPES = {(8, True): np.int8, (16, True): np.int16, (32, True): np.int32, (64, True): np.int64,
           (8, False): np.uint8, (16, False): np.uint16, (32, False): np.uint32, (64, False): np.uint64}


def dtype_for(t: Type):
    """The numpy dtype matching a pointer's target type, or None for any."""
    if isinstance(t, IntType):
        return np.dtype(_DTYPES[(t.bits, t.signed)])
    if isinstance(t, BoolType):
        return np.dtype(np.bool_)
    if isinstance(t, PointerType):
        return np.dtype(np.uint64)
    return None


@dataclass(frozen=True)
class Pointer:
    """An address returned by nx code, with the type nx gave it."""
    address: int
    type: PointerType
    module: "Module"

    def __getattr__(self, name):
        target = self.type.target
        if isinstance(target, StructType):
            field = target.field(name)
            if field is not None:
                if self.address == 0:       # before the offset is added: null + 8 is still null
                    raise NxRuntimeError(f"runtime error: read of field '{name}' ({field.type}) "
                                         f"through a null pointer ({self.type})")
                return self.module._read(self.address + field.offset, field.type, f"read of field '{name}'")
            raise AttributeError(f"struct {target.name} has no field '{name}' "
                                 f"(fields: {', '.join(f.name for f in target.fields)})")
        raise AttributeError(name)

    def __bool__(self) -> bool:
        return self.address != 0

    def __int__(self) -> int:
        return self.address

    def to_numpy(self, count: int) -> np.ndarray:
        """A copy of `count` elements at this address, as the pointer's dtype."""
        dt = dtype_for(self.type.target)
        if dt is None:
            raise TypeError(f"{self.type} has no element dtype; cast first")
        return self.module._read_array(self.address, count, dt)

    def __repr__(self) -> str:
        return f"<nx pointer {self.type} at 0x{self.address:x}>"


def doc_comment(decl) -> str:
    """The `//` comment lines right above a declaration, without the slashes."""
    src, n = decl.pos.file, decl.pos.line - 1
    lines = []
    while n >= 1:
        text = src.line_text(n).strip()
        if not text.startswith("//"):
            break
        lines.append(text[2:].strip() if not text.startswith("///") else text[3:].strip())
        n -= 1
    return "\n".join(reversed(lines)).strip()


def extern_function(sym: Symbol) -> Function:
    """An `extern func` declared by the program, shaped like a checked Function
    (its parameters named as the declaration names them)."""
    params = [Symbol("param", p.name, t, p.pos) for p, t in zip(sym.decl.params, sym.type.params)]
    return Function(sym, sym.decl, params, sym.type.ret, getattr(sym, "module", None))


def python_names(names: list[str]) -> list[str]:
    """The keyword names of nx parameters in Python: an nx name that is a
    Python keyword (`or`, `class`, `lambda` are plain names in nx) takes a
    trailing underscore, as PEP 8 suggests (`or_=`), and more until unique."""
    out: list[str] = []
    for name in names:
        if keyword.iskeyword(name):
            name += "_"
            while name in names or name in out:
                name += "_"
        out.append(name)
    return out


class Function_:
    """One nx function, callable from Python: positional or keyword arguments
    (`inspect.signature` gives the nx parameter names), the `.nx` signature
    and doc comment as its docstring."""

    def __init__(self, module: "Module", fn: Function, extern: bool = False):
        self._module = module
        self._fn = fn
        self.__name__ = self.__qualname__ = fn.decl.name
        params = ", ".join(f"{p.name}: {p.type}" for p in fn.params)
        ret = "" if isinstance(fn.ret, VoidType) else f" -> {fn.ret}"
        kind = "extern func" if extern else "func"
        self.signature_text = f"{kind} {fn.decl.name}({params}){ret}"
        doc = doc_comment(fn.decl)
        where = "provided by the nxc runtime" if extern else f"{fn.decl.pos.file.display}:{fn.decl.pos.line}"
        self.__doc__ = self.signature_text + (f"\n\n{doc}" if doc else "") + f"\n\n({where})"
        P = inspect.Parameter
        self.__signature__ = inspect.Signature(
            [P(name, P.POSITIONAL_OR_KEYWORD, annotation=str(p.type))
             for name, p in zip(python_names([p.name for p in fn.params]), fn.params)],
            return_annotation=inspect.Signature.empty if isinstance(fn.ret, VoidType) else str(fn.ret))

    def __get__(self, obj, objtype=None):
        # A method descriptor to pydoc (help(module) documents it as a routine,
        # with its signature); reading it from a module gives this object itself.
        return self

    def __call__(self, *args, **kwargs):
        fn = self._fn
        if kwargs:
            try:
                args = self.__signature__.bind(*args, **kwargs).args
            except TypeError as exc:
                raise TypeError(f"{fn.decl.name}(): {exc}") from None
        if len(args) != len(fn.params):
            raise TypeError(f"{fn.decl.name}() takes {len(fn.params)} argument"
                            f"{'s' if len(fn.params) != 1 else ''} ({len(args)} given)")
        module = self._module
        converted = [module._convert(a, p) for a, p in zip(args, fn.params)]
        result = module._backend.call(fn, converted)
        return Pointer(result, fn.ret, module) if isinstance(fn.ret, PointerType) else result

    def __repr__(self) -> str:
        return f"<nx function {self.signature_text}>"


class Module:
    """A loaded .nx module: functions and consts as attributes.

    Each load gets its own subclass holding the functions as class
    attributes, so that help(module) lists them with their signatures and
    doc comments."""

    def __new__(cls, program: Program, backend: Loaded):
        if cls is not Module:
            return super().__new__(cls)
        name = os.path.basename(program.graph.root.source.path)
        sub = type(f"nx_module_{os.path.splitext(name)[0]}", (Module,), {"__module__": "nxc.api"})
        return super().__new__(sub)

    def __init__(self, program: Program, backend: Loaded):
        self._program = program
        self._backend = backend
        self.path = program.graph.root.source.path
        self.consts = {s.name: s.value for s in program.consts}
        self.functions = {fn.decl.name: Function_(self, fn) for fn in program.functions
                          if fn is not program.entry}
        for sym in program.externs:
            if sym.name not in self.functions and sym.name not in task_externs():
                self.functions[sym.name] = Function_(self, extern_function(sym), extern=True)
        cls = type(self)
        if cls is not Module:
            for name, f in self.functions.items():
                setattr(cls, name, f)
            lines = [f"The nx module {self.path} ({backend.name} backend)."]
            doc = doc_comment_of_module(program)
            if doc:
                lines += ["", doc]
            lines += ["", "Functions:"] + [f"    {f.signature_text}" for f in self.functions.values()]
            if self.consts:
                lines += ["", "Consts:"] + [f"    {k} = {v}" for k, v in self.consts.items()]
            cls.__doc__ = "\n".join(lines)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self.functions:
            return self.functions[name]
        if name in self.consts:
            return self.consts[name]
        raise AttributeError(f"module {os.path.basename(self.path)} has no function or const '{name}'")

    def __dir__(self):
        return list(self.functions) + list(self.consts) + ["path", "consts", "functions", "main"]

    def main(self) -> int:
        """Run the module's gate in this process; returns its value."""
        if self._program.entry is None:
            raise AttributeError("this module has no gate (func main() -> i64)")
        return self._backend.run_main()

    # ---- argument conversion, shared by both backends ----
    def _convert(self, value, param):
        t, name = param.type, param.name
        if isinstance(t, IntType):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"argument '{name}' must be an integer ({t}), not {type(value).__name__}")
            value = int(value)
            lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)
            if not lo <= value <= hi:
                raise ValueError(f"argument '{name}' = {value} does not fit in {t}")
            return value
        if isinstance(t, BoolType):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"argument '{name}' must be a bool, not {type(value).__name__}")
            return bool(value)
        assert isinstance(t, PointerType)
        if value is None:
            return ("null",)
        if isinstance(value, Pointer):
            if value.module is not self:
                raise ValueError(f"argument '{name}': a pointer from another loaded module")
            if value.type != t and not isinstance(t.target, VoidType):
                raise TypeError(f"argument '{name}' must be {t}, not a {value.type} pointer")
            return ("ptr", value.address)
        if isinstance(value, np.ndarray):
            want = dtype_for(t.target)
            if isinstance(t.target, StructType):
                raise TypeError(f"argument '{name}' ({t}) takes a Pointer handle from nx code, not an array")
            if want is not None and value.dtype != want:
                raise TypeError(f"argument '{name}' ({t}) needs a numpy array of dtype {want}, not {value.dtype}")
            if not value.flags.c_contiguous:
                raise ValueError(f"argument '{name}': the array must be C-contiguous (use np.ascontiguousarray)")
            if not value.flags.writeable:
                raise ValueError(f"argument '{name}': the array must be writeable")
            return ("array", value)
        raise TypeError(f"argument '{name}' ({t}) must be a numpy array, a Pointer or None, "
                        f"not {type(value).__name__}")

    def _read(self, address: int, t: Type, what: str | None = None):
        raw = self._backend.read(address, t, what)
        if isinstance(t, PointerType):
            return Pointer(raw, t, self)
        if isinstance(t, StructType):
            raise TypeError("an embedded struct field: take its fields through the outer handle")
        return raw

    def _read_array(self, address: int, count: int, dtype) -> np.ndarray:
        return self._backend.read_array(address, count, np.dtype(dtype))

    def __repr__(self) -> str:
        return f"<nx module {self.path} ({self._backend.name})>"


def doc_comment_of_module(program) -> str:
    """The `//` comment block a module's file starts with."""
    src = program.graph.root.source
    lines = []
    for n in range(1, len(src.text.splitlines()) + 1):
        text = src.line_text(n).strip()
        if not text.startswith("//"):
            break
        lines.append(text[2:].strip())
    return "\n".join(lines).strip()


def find_module(path: str, include: list[str] | None = None) -> str:
    """`path` itself if it is a file; else a bare name (`nx_f32.nx`, or `nx_f32`)
    looked up as an import is: in each include folder, NXPATH, then the bundled
    nx_src/."""
    if os.path.isfile(path) or os.path.dirname(path):
        return path
    from nxc.syntax.search import search_path
    names = [path] if path.endswith(".nx") else [path, path + ".nx"]
    for folder in search_path(include):
        for name in names:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                return candidate
    return path                 # the front end reports it as missing


def load(path: str, backend: str = "c", include: list[str] | None = None, opt: str = "2",
         soft_f32: bool = False, checked: bool = True, march: str | None = None, threads: int = 1) -> Module:
    """Check, build (or reuse the cached build) and load a .nx module.

    checked=True (default; C backend): memory accesses are checked, numpy
    arguments registered with their sizes for each call, and a fault raises
    NxRuntimeError with the .nx position and stack; checked=False is the fast
    path, where a bad access may crash the interpreter (the Python backend is
    always checked).
    march: the C target ("x86-64", "x86-64-v3", "x86-64-v4", "native"; None =
    native, the host's instruction set); part of the cache key, the same bits
    on each; "x86-64" for a build that runs on any x86-64 CPU.
    threads: how many threads the module's sys_parallel_for calls may use
    (default 1); every result is the same bits for any count.
    soft_f32=True: the float32 primitives are the .nx integer code of
    nx_src/nx_f32_soft.nx instead of the runtime's (bit-identical, no FPU).
    Raises diagnostics.CompileError for mistakes in the .nx code.
    """
    from nxc.check.frontend import check_file
    if backend not in NAMES:
        raise ValueError(f"backend must be 'c' or 'py', not {backend!r}")
    if march is not None:
        from nxc.backend.c.build import build_config
        opt = build_config(opt, march)
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 256:
        raise ValueError(f"threads must be an integer from 1 to 256, not {threads!r}")
    program = check_file(find_module(path, include), include, Diagnostics(warnings=False), soft_f32=soft_f32)
    prepared = backend_for(backend, checked=checked).prepare(program, purpose="api", opt=opt)
    prepared.loaded.set_threads(threads)
    return Module(program, prepared.loaded)
