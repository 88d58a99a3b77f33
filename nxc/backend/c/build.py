"""C backend, build stage: C text -> loadable shared library, cached.

Two ways, both through cffi, chosen by what the build is for (measured in
bench/run_bench.py, section 3b):
- gates (`nxc run`, `nxc test`): ABI mode. A shared library opened with
  `ffi.dlopen` on a six-line cdef. No Python.h, no per-function wrappers:
  the compile is about half as long, and loading costs a couple of
  milliseconds. Gates are linked from one object per module
  (nxc/backend/c/objects.py); `build` here compiles one C file (the Python
  API's program, or a test's own EmittedC).
- the Python API (`nxc.load`): API mode. cffi writes the Python-facing
  wrapper C (`ffi.emit_c_code`) and the compiler is called directly on it
  (going through setuptools cost several hundred milliseconds per build);
  loading is a plain import, and calls are fast. The artefact is cached
under the cache directory by a hash of everything that affects it: the C
text (which is derived from every module in the import graph), nxc's
version, the compiler's identity, the flags, cffi's version and the Python
ABI. Builds write to a temporary name and rename, so concurrent builds of the
same module never leave a half-written file behind.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import importlib.machinery
import importlib.util
import os
import platform
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import cffi

from nxc import __version__
from nxc.backend.c.abi import GATE_CDEF
from nxc.cache import (cache_dir, degrade_after, discard, kept_for_the_run, prune_due, prune_least_recent, present,
                       publish, read_sealed_json, scaled_bound, stamped, write_sealed_json)
from nxc.diagnostics import ToolError
from nxc.paths import runtime_dir

if TYPE_CHECKING:                   # the emitters' import costs a no-change run (abi.py)
    from nxc.backend.c.units import EmittedC

# -fwrapv: signed arithmetic wraps; -fno-strict-aliasing: nx pointers may
# alias freely; -ffp-contract=off: no fused multiply-add, which would change
# float32 rounding. Never -ffast-math. -DNX_FLAGS_CHECKED: says the three are
# given (the generated C refuses to compile without it).
BASE_FLAGS = ["-std=c11", "-fwrapv", "-fno-strict-aliasing", "-ffp-contract=off", "-DNX_FLAGS_CHECKED",
              "-fPIC", "-shared", "-fvisibility=hidden"]
# -fvect-cost-model=dynamic: at -O2 GCC 12 vectorizes only loops that need no
# run-time alias check and no scalar epilogue ("very-cheap"), which leaves out
# every loop over `n` elements of a pointer argument. The vectorizer never
# reassociates float arithmetic without -fassociative-math (which nxc never
# passes), so a vectorized loop computes each iteration's exact scalar
# sequence of IEEE operations, only several iterations per instruction.
# --param vect-max-version-for-alias-checks=64: a loop that updates several
# rows from several others (a register-blocked kernel: four accumulator rows,
# four input rows) needs more run-time overlap checks than GCC's default of
# 10 before it vectorizes; nx pointers carry no `restrict`, so those checks
# are the only way in. They run once per loop entry, not per iteration.
VECT_ALIAS = "--param=vect-max-version-for-alias-checks=64"
# -mprefer-vector-width=512: GCC's Intel tunings (skylake-avx512 ... sapphirerapids, and
# -march=native on those hosts) prefer 256-bit vectors even where AVX-512 is there, so a
# 16-lane loop of a kernel (one panel of the linear kernel, a 16-key tile of attention) became
# two 8-lane halves going through memory. The bit-exact kernels are bound by their vector
# multiplies and adds, not by the clock, so full-width vectors win: measured on a Xeon with
# AVX-512 (docs/performance.md, "The kernels on the AVX-512 host"). It changes no bits (each
# lane is still its own iteration's scalar sequence) and is ignored where the target has no
# 512-bit vectors (x86-64, v2, v3, and AVX2 hosts).
VECT_WIDE = "-mprefer-vector-width=512"
OPT_LEVELS = {
    "0": ["-O0"],
    "2": ["-O2", "-fvect-cost-model=dynamic", VECT_ALIAS, VECT_WIDE],
    "native": ["-O3", "-march=native", VECT_ALIAS, VECT_WIDE],
}
# Instruction sets a build may target (--march): the same bits on each, only
# the vector width changes (x86-64: SSE2, 4 floats; v3: AVX2, 8; v4: AVX-512, 16).
MARCHES = ("native", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
# The target of a build that names none: the host. nxc compiles on the machine
# that runs the code (the build cache is local and keyed by the host CPU, see
# host_cpu), and every target gives the same bits, so the only thing a generic
# default would buy is a 4-lane build on a 16-lane machine. `--march x86-64`
# is the portable choice (a library to copy elsewhere, valgrind, which does
# not decode AVX-512).
DEFAULT_MARCH = "native"


def build_config(opt: str = "2", march: str | None = None) -> str:
    """The one string that names a build (opt level and target) for every layer
    that passes `opt` along: "2", "native", or "2/x86-64-v3" with a target."""
    flags_for(opt)                      # validates the level
    if march is None:
        return opt
    if march not in MARCHES:
        raise ValueError(f"unknown target '{march}' (choose from {', '.join(MARCHES)})")
    return f"{opt}/{march}"


class BuildError(Exception):
    """The C compiler rejected generated code: a bug in nxc, not in the user's .nx."""


@dataclass
class Built:
    path: str           # the extension module (API mode) or shared library (ABI mode)
    module_name: str
    cached: bool        # True when no compiler ran
    seconds: float
    abi_cdef: str | None = None     # ABI mode: the declarations to dlopen with


class NoCompiler(ToolError):
    """No C compiler where CC (or PATH) says: one line for the user, no traceback."""


def compiler() -> list[str]:
    """The C compiler's command: CC split like a shell would (`CC="gcc -g"`
    works), else `cc` or `gcc` from PATH. Raises NoCompiler."""
    env = os.environ.get("CC", "").strip()
    # A worker of `nxc test` asks for every object and link (some 8,000
    # times at 800 modules), and each answer searched PATH: it keeps the
    # answer for this CC and PATH until its run ends.
    return list(kept_for_the_run(_RUN_COMPILER, (env, os.environ.get("PATH", "")), lambda: _compiler(env)))


_RUN_COMPILER: dict[tuple[str, str], list[str]] = {}


def _compiler(env: str) -> list[str]:
    if env:
        try:
            cmd = shlex.split(env)
        except ValueError as exc:
            raise NoCompiler(f"cannot read CC={env!r}: {exc}") from None
        if shutil.which(cmd[0]) is None:
            raise NoCompiler(f"no C compiler: CC={env!r} names '{cmd[0]}', which is not an executable "
                             "(found neither as a path nor on PATH)")
        return cmd
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        raise NoCompiler("no C compiler: neither 'cc' nor 'gcc' is on PATH (install one, or set CC)")
    return [found]


@lru_cache(maxsize=None)
def compiler_identity(cc: tuple[str, ...]) -> str:
    """The compiler's `--version` line and its arguments, part of every cache key.

    Asking the compiler costs a process start (several ms), which would be
    most of a warm run's cost: the answer is remembered in the cache folder,
    keyed by the compiler executable's path, size and modification time,
    sealed as every entry is (a damaged one is asked again: it is part of
    every key, so it must not be read wrong).
    """
    exe = shutil.which(cc[0]) or cc[0]
    args = shlex.join(cc[1:])
    try:
        st = os.stat(os.path.realpath(exe))
        stamp = f"{os.path.realpath(exe)}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        stamp = None
    memo = None
    if stamp is not None:
        digest = hashlib.sha256(stamp.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        memo = os.path.join(cache_dir(), "c", "toolchain", f"ident-{digest}.json")
        found = read_sealed_json(memo, os.path.basename(memo))
        if isinstance(found, str) and found and "\n" not in found:
            return found + "|" + args
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
        ident = out.stdout.splitlines()[0] if out.stdout else exe
    except (OSError, subprocess.SubprocessError):
        return exe + "|" + args
    if memo is not None:
        write_sealed_json(memo, os.path.basename(memo), ident)
    return ident + "|" + args


def flags_for(opt: str) -> list[str]:
    """Compiler flags of a build configuration (see build_config)."""
    level_name, _, march = opt.partition("/")
    try:
        level = OPT_LEVELS[level_name]
    except KeyError:
        raise ValueError(f"unknown optimisation level '{level_name}' (choose from {', '.join(OPT_LEVELS)})")
    if not march:
        march = DEFAULT_MARCH
    if march not in MARCHES:
        raise ValueError(f"unknown target '{march}' (choose from {', '.join(MARCHES)})")
    # an explicit target replaces the level's own -march (native's)
    return BASE_FLAGS + [f for f in level if not f.startswith("-march=")] + [f"-march={march}"]


def cache_key(emitted: EmittedC, opt: str, mode: str = "api") -> str:
    h = hashlib.sha256()
    for part in (__version__, cffi.__version__, compiler_identity(tuple(compiler())), mode,
                 "checked" if emitted.checked else "unchecked",
                 " ".join(flags_for(opt)), target_identity(opt),
                 importlib.machinery.EXTENSION_SUFFIXES[0],
                 _runtime_header_text(), emitted.cdef, emitted.text):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def target_identity(opt: str) -> str:
    """What the flags of `opt` leave unsaid about the code they make: for a
    host build (-march=native) the host's CPU, else nothing. Part of every
    key of something compiled (build cache, objects, the runtime's object)."""
    return host_cpu() if "-march=native" in flags_for(opt) else ""


@lru_cache(maxsize=1)
def host_cpu() -> str:
    """What -march=native means on this machine, for the cache key: the CPU's
    model and feature flags. A cache folder shared between machines (a network
    home, a CI cache) then never hands an AVX-512 build to a CPU without it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    wanted = ("vendor_id", "model name", "flags", "Features", "CPU implementer", "CPU part")
    seen: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        name = name.strip()
        if sep and name in wanted and name not in seen:
            seen[name] = value.strip()
    if not seen:
        return f"{platform.machine()}|{platform.processor()}"
    return "|".join(f"{k}={v}" for k, v in sorted(seen.items()))


@lru_cache(maxsize=1)
def _runtime_header_text() -> str:
    """The runtime's text: the headers and the C files a single-file build includes."""
    parts = []
    for name in ("nx_runtime.h", "nx_runtime.c", "nx_threads.h", "nx_threads.c"):
        with open(os.path.join(runtime_dir(), name), encoding="utf-8") as f:
            parts.append(f.read())
    return "\0".join(parts)


# Built modules kept in the cache folder; past it the least recently used go
# (paths.prune_least_recent). A build is ~60-200 KB. The bound grows with
# the tree a run works on (paths.scaled_bound).
MAX_BUILDS = 1024
_build_count = 0


def warm_up() -> None:
    """Read the runtime header and identify the compiler now (both cached for
    the process): the runner calls this before forking its workers."""
    _runtime_header_text()
    compiler_identity(tuple(compiler()))


def build(emitted: EmittedC, opt: str = "2", use_cache: bool = True, abi: bool = False) -> Built:
    """Compile (or find in the cache) `emitted`; abi=True for gate runs only.

    A cached build is used only when its sidecar (nxc/cache.py) shows it is
    exactly the file this key built; anything else is removed and rebuilt.
    A cache folder that cannot be written degrades to a temporary one.
    """
    start = time.perf_counter()
    key = cache_key(emitted, opt, "abi" if abi else "api")
    name = f"_nx_{key}"
    suffix = ".so" if abi else importlib.machinery.EXTENSION_SUFFIXES[0]
    abi_cdef = "\n".join(GATE_CDEF) if abi else None
    target = os.path.join(cache_dir(), "c", name + suffix)
    if use_cache and present(target):             # here, or fetched from a remote cache (nxc/remote/)
        if stamped(target):
            try:
                os.utime(target)                # recently used: pruned last
            except OSError:
                pass
            return Built(target, name, True, time.perf_counter() - start, abi_cdef)
        discard(target)                         # truncated, swapped or planted: never loaded
    try:
        target = _compile(emitted, opt, abi, name, suffix)
    except OSError as exc:                     # read-only or full cache folder
        degrade_after(exc)
        target = _compile(emitted, opt, abi, name, suffix)
    return Built(target, name, False, time.perf_counter() - start, abi_cdef)


def _compile(emitted: EmittedC, opt: str, abi: bool, name: str, suffix: str) -> str:
    global _build_count
    folder = os.path.join(cache_dir(), "c")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    target = os.path.join(folder, name + suffix)
    cc = compiler()
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        c_file = os.path.join(tmp, name + ".c")
        if abi:
            with open(c_file, "w", encoding="utf-8") as f:
                f.write(emitted.text)
        else:
            ffi = cffi.FFI()
            ffi.cdef(emitted.cdef)
            ffi.set_source(name, emitted.text)
            with contextlib.redirect_stdout(io.StringIO()):   # cffi says "generating ..."
                ffi.emit_c_code(c_file)
        out_tmp = os.path.join(tmp, os.path.basename(target))
        includes = ["-I", runtime_dir()] + ([] if abi else ["-I", sysconfig.get_paths()["include"]])
        cmd = [*cc, *flags_for(opt), *includes, c_file, "-o", out_tmp, "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            if _out_of_space(proc.stderr):
                raise OSError(errno.ENOSPC, "no space left on device")
            raise BuildError("the C compiler failed on code generated by nxc (this is a bug in nxc):\n"
                             + shlex.join(cmd) + "\n" + proc.stderr[-4000:])
        publish(out_tmp, target)     # atomic: readers see all or nothing
    _build_count += 1
    if prune_due(_build_count):
        prune_least_recent(folder, scaled_bound(MAX_BUILDS), lambda n: n.startswith("_nx_") and n.endswith((".so", ".pyd")))
    return target


def _out_of_space(stderr: str) -> bool:
    """The compiler (or its assembler, linker) could not write its output."""
    return "No space left on device" in stderr or "Read-only file system" in stderr


_loaded: dict[str, object] = {}


def _abi_ffi(cdef: str):
    """An FFI object for `cdef` without parsing C at run time.

    cffi's out-of-line ABI mode: the declarations are parsed once, when the
    small Python module that holds them is generated into the cache; after
    that, getting the FFI is an import (parsing a cdef takes ~25 ms).
    """
    ffi = _abi_ffis.get(cdef)
    if ffi is not None:
        return ffi
    digest = hashlib.sha256((cffi.__version__ + cdef).encode()).hexdigest()[:16]
    name = f"_nx_ffi_{digest}"
    path = os.path.join(cache_dir(), "c", name + ".py")
    if not stamped(path):                       # missing, truncated or not ours: generate it
        try:
            path = _write_ffi_module(name, cdef)
        except OSError as exc:
            degrade_after(exc)
            path = _write_ffi_module(name, cdef)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _abi_ffis[cdef] = ffi = module.ffi
    return ffi


def _write_ffi_module(name: str, cdef: str) -> str:
    folder = os.path.join(cache_dir(), "c")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, name + ".py")
    gen = cffi.FFI()
    gen.cdef(cdef)
    gen.set_source(name, None)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".ffi-", suffix=".py")
    os.close(fd)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            gen.emit_python_code(tmp)
        publish(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


_abi_ffis: dict[str, object] = {}


@dataclass
class _Opened:
    """An ABI-mode library, shaped like an imported cffi module."""
    lib: object
    ffi: object


def _dlopen(ffi, path: str):
    """ffi.dlopen(path). cffi encodes the name as strict UTF-8: a cache folder
    whose name holds other bytes (surrogateescape) is opened through a file
    descriptor instead (Linux: /proc/self/fd; the loader knows the library by
    its inode, so a second open is the same library)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        if not os.path.isdir("/proc/self/fd"):
            raise
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return ffi.dlopen(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
    return ffi.dlopen(path)


def load(built: Built):
    """Import the extension (or dlopen the library); returns cffi's `lib` and `ffi`."""
    mod = _loaded.get(built.path)
    if mod is None and built.abi_cdef is not None:
        ffi = _abi_ffi(built.abi_cdef)
        lib = _dlopen(ffi, built.path)
        _loaded[built.path] = mod = _Opened(lib, ffi)
    if mod is None:
        spec = importlib.util.spec_from_file_location(built.module_name, built.path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _loaded[built.path] = mod
    return mod.lib, mod.ffi
