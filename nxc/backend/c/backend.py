"""The C backend object: emit C, compile it through cffi (cached), load it, run it.

Gates build in cffi's ABI mode (a plain shared library opened with
`ffi.dlopen`), linked from one cached object per module
(nxc/backend/c/objects.py: each module compiled once, whichever gates
import it); the Python API builds the whole program as one file in API mode
(a real extension module: the fastest calls, and GCC inlines across
modules); nxc/backend/c/build.py says why.
A run-time error in nx code makes the generated C return a non-zero
status and record which site trapped; the site's position comes from the
emitter's table.

Checked (the default): every memory access is checked and the .nx call
stack kept (runtime/nx_runtime.h, NXRT_CHECKED); a fault is recorded as
numbers that nxc/backend/c/faults.py words. For a gate, the shadow stack is
mirrored into a page shared with the parent, which reads it after a crash or
a timeout (`stack_after_death`). For the Python API, each numpy argument is
registered with its real size for the duration of the call.
"""
from __future__ import annotations

import mmap

from nxc.backend import base
from nxc.backend.base import NxRuntimeError
from nxc.backend.c import build as c_build
from nxc.backend.c import faults
from nxc.backend.c import gate_child
from nxc.backend.c.names import c_abi_type, c_type
from nxc.backend.c.abi import FAULT_INFO_WORDS
from nxc.backend.c.sites import site_at
from nxc.check.types import VOID, BoolType, PointerType, Type
from nxc.incremental.keys import code_digest


def _objects():
    """nxc/backend/c/objects.py (and the emitters it imports), on first use: a no-change
    `nxc test` asks this backend for its build identity only (build.py), and the emitters'
    import (jinja2, the function emitter) was about a sixth of that run's time."""
    from nxc.backend.c import objects
    return objects


def link_artefact(link_key: str) -> str:
    """The artefact key of a gate linked under `link_key` (LinkedC.plan's, or the
    recorded path's plan_from_records): one spelling for both."""
    return "c-link-" + link_key


class CBackend(base.Backend):
    name = "c"

    def __init__(self, checked: bool = True):
        self.checked = checked

    def emit(self, program):
        # Nothing is emitted yet: a gate build emits only the modules whose
        # objects are not cached (nxc/backend/c/objects.py), the Python API
        # the whole program as one file (LinkedC.whole).
        return _objects().LinkedC(program, checked=self.checked)

    def plan_bodies(self, program, *, opt: str = "2", use_cache: bool = True, emit=None, also=frozenset()):
        # A gate worker's partial program: the link asks for the records and
        # bodies it needs (nxc/backend/c/needs.py); a whole one needs nothing.
        from nxc.backend.c.needs import LinkPlanner
        return LinkPlanner(self, program, checked=self.checked, opt=opt, use_cache=use_cache, emit=emit,
                           also=also)

    def object_text(self, emitted, module_path: str) -> str:
        """The C of the object of the module at real path `module_path` in
        `emitted` (this backend's emitted code of a final program, LinkedC):
        `nxc emit-c --object`. A module with nothing of its own to compile
        (consts, structs, externs) has no object in a link; its file is
        written all the same."""
        for unit in emitted.units:
            if unit.module.source.path == module_path:
                return emitted.emit_unit(unit).text
        [module] = [m for m in emitted.program.graph.modules if m.source.path == module_path]
        return emitted.emit_unit(_objects().ModuleUnit(module, emitted.closure_of(module), "")).text

    def build(self, emitted, *, purpose: str = "gate", opt: str = "2", use_cache: bool = True):
        if isinstance(emitted, _objects().LinkedC):
            if purpose == "gate":
                return _objects().build_gate(emitted, opt=opt, use_cache=use_cache)
            emitted = emitted.whole()
        # A single file (the Python API; a test's own EmittedC). Nothing exported
        # that nobody calls: a gate needs its entry points only. The Python API
        # (nxc/api.py) can call every function of the import closure (a bench
        # driver calls its imports' constructors), so an API build keeps them
        # all. The API stays one file: GCC then inlines any kernel's helpers
        # across modules, as the GQA and paged figures need.
        selected = emitted.only(() if purpose == "gate" else emitted.wrappers)
        return c_build.build(selected, opt=opt, use_cache=use_cache, abi=purpose == "gate")

    def artefact_key(self, emitted, *, purpose: str = "gate", opt: str = "2") -> str:
        # The build cache's own key: for a gate, the link's (its objects' keys,
        # which cover sources, interfaces, compiler, flags, versions, runtime).
        if isinstance(emitted, _objects().LinkedC):
            if purpose == "gate":
                return link_artefact(emitted.plan(opt)[3])
            emitted = emitted.whole()
        return "c-" + c_build.cache_key(emitted, opt, "abi" if purpose == "gate" else "api")

    def load(self, program, emitted, built) -> "CLoaded":
        if isinstance(emitted, _objects().LinkedC) and not isinstance(built, _objects().Linked):
            emitted = emitted.whole()           # built from the single file: its sites
        return CLoaded(program, emitted, built)

    plans_from_records = True

    def plan_from_records(self, root, digests, imports, orders, *, checked, opt):
        from nxc.backend.c.recorded import plan_from_records
        return plan_from_records(root, digests, imports, orders, checked, opt)

    def recorded_artefact_key(self, link) -> str:
        return link_artefact(link.key)

    def link_recorded_together(self, links, *, checked, opt):
        from nxc.backend.c.recorded import link_recorded_together
        return link_recorded_together(links, checked, opt)

    def link_recorded(self, link, *, checked, opt):
        from nxc.backend.c.recorded import RecordedGate
        return RecordedGate(link, checked, opt)

    def build_objects(self, emitted, *, opt: str = "2", use_cache: bool = True) -> list | None:
        if not use_cache or not isinstance(emitted, _objects().LinkedC):
            return None
        return _objects().build_objects(emitted, opt)

    def build_batch(self, emitted, roots: list[str], *, opt: str = "2", run_next: list[str] = ()):
        if not isinstance(emitted, _objects().LinkedC):
            return None
        from nxc.backend.c.batch import build_batch
        return build_batch(emitted, roots, opt, run_next)

    def build_identity(self, opt: str) -> str:
        import importlib.machinery

        import cffi
        return "|".join((self.name, cffi.__version__, c_build.compiler_identity(tuple(c_build.compiler())),
                         " ".join(c_build.flags_for(opt)), c_build.target_identity(opt),
                         importlib.machinery.EXTENSION_SUFFIXES[0]))

    def warm_up(self) -> None:
        c_build.warm_up()
        code_digest("codegen")


def bind_linked(lib, binding: "objects.Binding") -> None:
    """A linked gate's per-gate part, set before anything runs: each module
    object's site base and which module's main is the gate (nothing of it is
    compiled: nx_runtime.c, nxc_module_bind). Binding the same library again
    (loaded twice in one process) sets the same values."""
    failed = [m for m, base in binding.bases
              if lib.nxc_module_bind(m.encode("utf-8"), base, int(m == binding.root)) != 0]
    count, bound = lib.nxc_module_count(), lib.nxc_modules_bound()
    if failed or count != len(binding.bases) or bound != count:
        raise c_build.BuildError(unbound_message(count, bound, len(binding.bases), failed))


def unbound_message(count: int, bound: int, planned: int, failed: list) -> str:
    return (f"a gate's library does not hold the modules its link planned (this is a bug "
            f"in nxc): {count} registered, {bound} of {planned} bound"
            + (f", not found: {', '.join(failed[:5])}" if failed else ""))


class CLoaded(base.Loaded):
    name = "c"

    def __init__(self, program, emitted, built):
        super().__init__(program, emitted, built)
        self.checked = bool(getattr(emitted, "checked", False))
        self._opened = None
        self._host_sites = None
        # A gate's linked library is opened in this process only when it is
        # used here: a gate run through the gate host (nxc/gates/host.py) is
        # opened by the host's child alone, so a worker does not map every
        # library it ran (three mappings each, and each mapping costs every
        # later fork). Any other build is opened now, as before.
        if not isinstance(built, _objects().Linked):
            self._open()
        self._page = None               # the shadow stack shared with a gate's child
        self._arg_names: list[str] = []

    def _open(self):
        if self._opened is None:
            lib, ffi = c_build.load(self.built)
            if isinstance(self.built, _objects().Linked):
                bind_linked(lib, self.binding)
            self._opened = (lib, ffi)
            if self.threads != 1:
                lib.nxc_set_threads(self.threads)
        return self._opened

    @property
    def binding(self):
        """What the loader binds: the gate's own link plan, or the library's
        that hosts it (a gate run from an importer's library: nxc/backend/c/hosts.py)."""
        hosted = getattr(self.built, "binding", None)
        return hosted if hosted is not None else self.emitted.binding

    @property
    def sites(self):
        """The sites of the library that runs, by id (the host's when hosted)."""
        if getattr(self.built, "host", None) is not None:
            if self._host_sites is None:
                self._host_sites = _objects().site_table(self.built.site_keys)
            return self._host_sites
        return self.emitted.sites

    @property
    def lib(self):
        return self._open()[0]

    @property
    def ffi(self):
        return self._open()[1]

    def gate_job(self) -> "gate_child.GateJob | None":
        """What a gate host's child needs to run this gate (nxc/backend/c/gate_child.py,
        `run`): the library, its binding, and the sizes to read back; None when
        the library is not a plain shared library (an API-mode extension)."""
        if getattr(self.built, "abi_cdef", None) is None:
            return None
        binding = self.binding if isinstance(self.built, _objects().Linked) else None
        return gate_child.GateJob(self.built.path, None if binding is None else tuple(binding.bases),
                                  None if binding is None else binding.root, self.checked,
                                  self.emitted.capture_slots, FAULT_INFO_WORDS, self.threads)

    # ---- faults and the stack ----
    def _fault(self):
        """(message, innermost site index, stack) of the trap that just happened."""
        return self._worded_fault(*self._fault_numbers())

    def _fault_numbers(self) -> tuple:
        """(fault info words, trap site, stack frames) the runtime recorded of the trap that just happened."""
        info = self.ffi.new(f"int64_t[{FAULT_INFO_WORDS}]")
        self.lib.nxc_fault_info(info)
        frames = [self.lib.nxc_stack_frame(k) for k in range(self.lib.nxc_stack_depth())]
        return list(info), self.lib.nxc_trap_site(), frames

    def _worded_fault(self, info: list, trap_site: int, frames: list):
        """(message, innermost site index, stack) from the numbers the runtime recorded."""
        sites = self.sites
        if info[0] != faults.F_NONE:
            site = int(info[7])
            text = faults.describe(info, sites, arg_name=self._arg_name)
            message = f"{faults.site_where(sites, site)}: runtime error: {text}"
        else:
            site = trap_site
            message = faults.trap_message(info, trap_site, sites)
        return message, site, faults.stack_from(frames, sites, site)

    def _arg_name(self, k: int):
        return self._arg_names[k] if 0 <= k < len(self._arg_names) else None

    def stack_after_death(self) -> tuple:
        if self._page is None:
            return ()
        frames = faults.read_mirror(self._page)
        self._page.close()
        self._page = None
        return faults.stack_from(frames, self.sites)

    def stack_in(self, page) -> tuple:
        """The .nx stack a stopped child mirrored into `page` (the gate host's)."""
        return faults.stack_from(faults.read_mirror(page), self.sites) if self.checked else ()

    def set_threads(self, n: int) -> None:
        super().set_threads(n)
        if self._opened is not None:
            self.lib.nxc_set_threads(self.threads)

    def run_gate(self):
        lib = self.lib
        lib.nxc_set_threads(self.threads)
        if self._page is not None:          # forked from the runner, which made the page
            lib.nxc_stack_mirror(self.ffi.from_buffer(self._page), len(self._page))
        out = self.ffi.new("int64_t *")
        status = lib.nxc_run_main(out)
        if status == 2:
            return self.outcome_of(("no-gate",))
        if status == 1:
            return self.outcome_of(("trap", *self._fault_numbers()))
        value, site = out[0], lib.nxc_gate_site()
        mask, raw = 0, []
        if value != 0:
            raw = [lib.nxc_gate_captured(i) for i in range(self.emitted.capture_slots)]
            mask = lib.nxc_gate_captured_mask()
        return self.outcome_of(("returned", value, site, mask, raw, gate_child.file_log(lib, self.ffi)))

    def outcome_of(self, raw: tuple):
        """The `protocol.Outcome` of what a gate's run recorded (run_gate here,
        or nxc/backend/c/gate_child.py in a gate host's child: the same tuple)."""
        kind = raw[0]
        if kind == "no-gate":
            return base.no_gate(self.name)
        if kind == "trap":
            message, k, stack = self._worded_fault(*raw[1:])
            s = site_at(self.sites, k)
            if s is None:
                return base.trapped(self.program, None, 0, 0, "", self.name, message=message, stack=stack)
            return base.trapped(self.program, s.path, s.line, s.col, s.what, self.name, message=message,
                                stack=stack)
        if kind == "unbound":
            count, bound, failed = raw[1:]
            raise c_build.BuildError(unbound_message(count, bound, len(self.binding.bases), failed))
        if kind != "returned":
            raise ValueError(f"a gate's child reported {kind!r}")
        value, site, mask, raw_slots, files = raw[1:]
        captured = self.emitted.captured(site, mask, raw_slots) if value != 0 else ()
        return base.returned(self.program, value, site, captured, self.name, gate_child.parse_log(files))

    def share_stack(self) -> None:
        """Before forking a gate's child: a page the child mirrors its shadow stack into."""
        if self.checked and self._page is None:
            self._page = mmap.mmap(-1, self.lib.nxc_stack_bytes())

    def _error(self) -> NxRuntimeError:
        message, _, stack = self._fault()
        return NxRuntimeError(message, stack)

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
        # The count is the library's, and two loads of one program share one library: each
        # call sets its own module's (nxc.load(..., threads=N) is per module, as documented).
        self.lib.nxc_set_threads(self.threads)
        if self.checked:
            # The arrays are valid memory for this call only, with their real sizes.
            self._arg_names = [p.name for p in fn.params]
            for k, v in enumerate(args):
                if isinstance(v, tuple) and v[0] == "array":
                    if self.lib.nxc_buf_register(c_args[k], v[1].nbytes, k) != 0:
                        self.lib.nxc_buf_clear()
                        raise ValueError(f"{fn.decl.name}(): more numpy arrays than the checked runtime "
                                         "registers per call (64)")
        try:
            if fn.ret is VOID:
                status = wrapper(*c_args)
                result = None
            else:
                out = self.ffi.new(_out_ctype(fn.ret))
                status = wrapper(*c_args, out)
                result = out[0]
        finally:
            if self.checked:
                self.lib.nxc_buf_clear()
        if status != 0:
            raise self._error()
        if isinstance(fn.ret, PointerType):
            return int(self.ffi.cast("uintptr_t", result))
        if isinstance(fn.ret, BoolType):
            return bool(result)
        return result

    def _probe(self, address: int, size: int, align: int, what: str) -> None:
        """Checked mode: raise unless [address, address + size) is live memory."""
        if self.lib.nxc_probe(self.ffi.cast("void *", address), size, align) != 0:
            info = self.ffi.new(f"int64_t[{FAULT_INFO_WORDS}]")
            self.lib.nxc_fault_info(info)
            raise NxRuntimeError(f"runtime error: {faults.describe(list(info), self.sites, what=what)}")

    def read(self, address: int, t: Type, what: str | None = None):
        if address == 0:
            raise NxRuntimeError("runtime error: " + faults.fault_table().null_text(what or "read", 0))
        if isinstance(t, BoolType):     # the byte: any nonzero byte is true (docs/language.md)
            if self.checked:
                self._probe(address, 1, 1, f"{what or 'read'} ({t})")
            return self.ffi.cast("uint8_t *", address)[0] != 0
        ct = "uintptr_t" if isinstance(t, PointerType) else c_type(t)
        if self.checked:
            size = self.ffi.sizeof(ct)
            self._probe(address, size, size, f"{what or 'read'} ({t})")
        return int(self.ffi.cast(ct + " *", address)[0])

    def read_array(self, address: int, count: int, dtype):
        import numpy as np      # the API's dependency; gate runs never pay for its import
        if self.checked and count > 0:
            self._probe(address, count * dtype.itemsize, dtype.itemsize,
                        f"read of {count} {dtype} element{'s' if count != 1 else ''}")
        buf = self.ffi.buffer(self.ffi.cast("char *", address), count * dtype.itemsize)
        return np.frombuffer(bytes(buf), dtype=dtype).copy()


def _out_ctype(t: Type) -> str:
    """The C type of a result slot for `t` (pointers come back as void *)."""
    return "void **" if isinstance(t, PointerType) else c_abi_type(t) + " *"
