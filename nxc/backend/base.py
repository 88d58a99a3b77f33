"""The backend interface: one object per target (C, Python).

A backend turns a checked `Program` into something that runs, in three
steps with one driver, `Backend.prepare`:

    emit(program)                  -> emitted code (EmittedC / EmittedPy)
    build(emitted, purpose, ...)   -> an artefact (a shared library; a code object)
    load(program, emitted, built)  -> a `Loaded` module

`purpose` is "gate" (run `main` once, in a forked child: the C backend
builds in cffi's ABI mode, which compiles fastest) or "api" (the Python
API calls many functions: API mode, fastest calls). A `Loaded` module runs
its gate in the current process (`run_gate()`, which returns a
`protocol.Outcome`; the gate runner forks first), calls a function with
arguments converted by nxc/api.py, and reads memory.

Arguments reach `Loaded.call` as nxc/api.py converts them: ints and bools
as themselves, pointers as ("null",), ("ptr", address) or ("array", a
C-contiguous numpy array). Results come back raw: an address as an int,
a bool as a bool; the API wraps addresses in its `Pointer` handles.

The registry (nxc/backend/registry.py) maps a name to its backend.
"""
from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field

from nxc.diagnostics import ToolError, display_path
from nxc.gates.protocol import Outcome, Site, Status


class NxRuntimeError(RuntimeError):
    """nx code stopped with a run-time error.

    The first line of str() is `path:line:col: runtime error: ...`; the .nx
    call stack follows it. `message` is that first line, `stack` the frames
    (protocol.Site: file, line, column, function), innermost first."""

    def __init__(self, message: str, stack=()):
        from nxc.diagnostics import render_stack
        self.message = message
        self.stack = tuple(stack)
        text = render_stack(self.stack)
        super().__init__(message + ("\n" + text if text else ""))


class Loaded(abc.ABC):
    """A module of one program, loaded into this process by one backend."""
    name: str                   # the backend's name: "c" or "py"

    def __init__(self, program, emitted, built):
        self.program = program
        self.emitted = emitted
        self.built = built

    @abc.abstractmethod
    def run_gate(self):
        """Run the root module's gate here and now; a `protocol.Outcome` without timings."""

    # The gate runner forks, calls run_gate in the child, and on a timeout kills it.
    # A backend that can say where the child was sets interrupt_on_timeout (the
    # child gets SIGUSR1 first) and/or answers stack_after_death().
    interrupt_on_timeout = False
    # Threads a sys_parallel_for may use (runtime/nx_threads.h); never changes a result.
    threads = 1

    def set_threads(self, n: int) -> None:
        """Use up to `n` threads in sys_parallel_for from now on (n >= 1)."""
        self.threads = max(1, int(n))

    def share_stack(self) -> None:
        """Called before the fork: make whatever the child reports its stack through."""

    def stack_after_death(self) -> tuple:
        """After the child running run_gate crashed or was stopped: where it was
        (protocol.Sites, innermost first), if this backend kept track."""
        return ()

    @abc.abstractmethod
    def run_main(self) -> int:
        """The gate's value; raises NxRuntimeError when nx code stops at a run-time check."""

    @abc.abstractmethod
    def call(self, fn, args: list):
        """Call checked function `fn` with converted `args` (see the module's docstring)."""

    @abc.abstractmethod
    def read(self, address: int, t, what: str | None = None):
        """The scalar of type `t` at `address` (an address as an int)."""

    @abc.abstractmethod
    def read_array(self, address: int, count: int, dtype):
        """A numpy copy of `count` elements of `dtype` at `address`."""


@dataclass(frozen=True)
class Needed:
    """What a backend asks of the caller before it can emit a partial program
    (a gate's worker checks only some bodies: nxc/check/summary.py,
    check_gate): the records to give the program (real path -> the record
    kept under the module's key, nxc/incremental/records.py: the effects of
    bodies not checked), the modules whose every body to check, the functions
    (of the program) whose bodies to check. Empty: nothing; the program is
    final for this backend."""
    modules: frozenset = frozenset()
    functions: tuple = ()
    records: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.modules or self.functions or self.records)


NOTHING = Needed()


class BodiesNeeded(ToolError):
    """A build found it must emit a body the program it was given does not
    hold checked: an object the planner found in the cache left it before the
    build (pruned by another run), or a fault is worded from a site table that
    is missing or damaged. `paths`: the modules whose C is to be emitted (real
    paths). The caller plans the bodies again, those modules' included."""

    def __init__(self, message: str, paths=()):
        super().__init__(message)
        self.paths = frozenset(paths)


class BodyPlan:
    """The bodies a backend needs checked, asked before it emits anything
    (docs/runner.md, "The program is final before the backend runs"): the
    caller, which may call both the checker and the backend (the gate
    worker, nxc/gates/execute.py), asks `needed(program)`, does what it says
    (a new program), and asks again with that, until nothing is asked; then
    `emitted(program)` is the backend's emitted code of that final program.
    This default is that of a backend that emits the whole program: every
    module with a body not checked, at once."""

    def __init__(self, backend: "Backend"):
        self.backend = backend

    def needed(self, program) -> Needed:
        # Imported here: the lowering brings the AST's classes, which a run
        # that only asks a backend for its build identity (a no-change run) does not need.
        from nxc.lower.effects import recorded
        rec = recorded(program)
        if rec is None or not rec.unchecked:
            return NOTHING
        return Needed(modules=frozenset(fn.module.source.path for fn in program.functions
                                        if fn.decl.name in rec.unchecked))

    def emitted(self, program):
        if self.needed(program):
            raise RuntimeError("emitted before the program holds every body it needs (a bug in nxc)")
        return self.backend.emit(program)


@dataclass
class BatchBuilt:
    """What Backend.build_batch did for several gates checked as one program."""
    compiled: list                  # real paths of the modules whose objects were compiled now
    shared: str | None = None       # a library linked once for the gates that run next (its link key), or None
    unshared: str = ""              # why there is no such library ("" when there is, or none was wanted)


@dataclass
class Prepared:
    """What `Backend.prepare` made, and how long each step took."""
    emitted: object
    built: object
    loaded: Loaded | None
    emit_seconds: float
    build_seconds: float
    build_cached: bool | None       # None: the backend has no build cache (Python)


class Backend(abc.ABC):
    name: str

    @abc.abstractmethod
    def emit(self, program):
        """The program's code for this target (a final program: every body it
        emits checked; a partial one goes through `plan_bodies` first)."""

    def plan_bodies(self, program, *, opt: str = "2", use_cache: bool = True, emit=None,
                    also=frozenset()) -> BodyPlan:
        """What this backend needs checked of `program` before it emits it, as a
        `BodyPlan` the caller asks until it needs nothing (the backend never
        calls the checker itself). emit: the real paths of the modules whose
        code will be emitted, when the caller knows (`nxc emit-c --object`);
        default: what a build needs, and the modules `also` (BodiesNeeded.paths)."""
        return BodyPlan(self)

    @abc.abstractmethod
    def build(self, emitted, *, purpose: str = "gate", opt: str = "2", use_cache: bool = True):
        """A loadable artefact of `emitted`, with `.cached` and `.seconds`."""

    @abc.abstractmethod
    def load(self, program, emitted, built) -> Loaded:
        """The artefact loaded into this process."""

    @abc.abstractmethod
    def artefact_key(self, emitted, *, purpose: str = "gate", opt: str = "2") -> str:
        """A digest naming what `build` makes of `emitted`: equal keys, equal behaviour.

        The gate runner's result cache (nxc/incremental/results.py) keys passing
        results on it, so it must cover everything that can change how the
        built code runs (generated text, runtime, flags, nxc's version)."""

    def build_identity(self, opt: str) -> str:
        """What of the build, besides nxc's code and the sources, can change how
        a gate behaves (the result keys' "build" part, nxc/incremental/keys.py).
        Raises what the backend raises when it cannot build at all (no compiler)."""
        return self.name

    # The recorded path (nxc/incremental/plan.py): a backend that keeps records
    # of what it built can plan a gate's link from them, without the front end.
    plans_from_records = False

    def plan_from_records(self, root: str, digests: dict, imports: dict, orders: dict, *, checked: bool,
                          opt: str) -> tuple:
        """(a plan of the gate of module `root`, "") from the cache's records
        alone, or (None, why not): digests {real path: source digest},
        imports {real path: [real paths]}, orders: each module's import closure."""
        return None, f"the {self.name} backend keeps no records"

    def recorded_artefact_key(self, link) -> str:
        """artefact_key of what a plan from records builds (the result cache's key)."""
        raise NotImplementedError(f"the {self.name} backend plans no link from records")

    def link_recorded_together(self, links: list, *, checked: bool, opt: str) -> tuple:
        """(the key of one library linked for the gates of the plans from records
        `links`, each of which link_recorded then runs from, and ""), or (None,
        why there is none; "" when none was wanted). This default links none."""
        return None, ""

    def link_recorded(self, link, *, checked: bool, opt: str):
        """The gate of a plan from records, built, ready to run in a child:
        .job (for the gate host), .run_child(page), .stack_of(page),
        .passed(raw), .build_seconds, .relinked, .host (the link key of the library
        of another gate it runs from, or None)."""
        raise NotImplementedError(f"the {self.name} backend plans no link from records")

    def build_objects(self, emitted, *, opt: str = "2", use_cache: bool = True) -> list | None:
        """Build and record what a gate's later run from records needs, without
        linking or running it (`nxc test` runs a gate that other gates import
        after them, from one of their libraries: nxc/backend/c/hosts.py): the
        paths of the modules compiled now. None: nothing was built, run the
        gate now."""
        return None

    def build_batch(self, emitted, roots: list[str], *, opt: str = "2", run_next: list[str] = ()) -> BatchBuilt | None:
        """Several gates checked as one program (nxc/gates/batch.py): from its
        emitted code, build and record what each of `roots` (real paths of
        modules with gates) needs to be linked from records, as build_objects
        does for one gate; and, for the gates among them that run next
        (`run_next`), what lets them share one link if the backend can. None:
        this backend builds no batch (each gate then takes its own path)."""
        return None

    def warm_up(self) -> None:
        """Pay one-time costs now (the gate runner calls this before forking workers)."""

    def prepare(self, program, *, purpose: str = "gate", opt: str = "2", use_cache: bool = True,
                emitted=None, load: bool = True) -> Prepared:
        """emit -> build -> load, timed: the one place that sequence is written.

        emitted: code emitted already (a test's variant of the emitter);
        load=False stops after the build (a library module only has to compile).
        """
        t0 = time.perf_counter()
        if emitted is None:
            emitted = self.emit(program)
        t1 = time.perf_counter()
        built = self.build(emitted, purpose=purpose, opt=opt, use_cache=use_cache)
        t2 = time.perf_counter()
        loaded = self.load(program, emitted, built) if load else None
        return Prepared(emitted, built, loaded, t1 - t0, t2 - t1, getattr(built, "cached", None))


def function_at(program, path: str, line: int) -> str:
    """The name of the function of `program` whose body holds `path:line` ("" if none):
    the one that starts last at or before the line (function bodies do not nest)."""
    best, best_line = "", 0
    for fn in program.functions:
        pos = fn.decl.pos
        if pos.file.path == path and best_line <= pos.line <= line:
            best, best_line = fn.decl.name, pos.line
    return best


# ---- outcomes, as both backends' run_gate build them ----
def returned(program, value: int, gate_site: int, captured, backend: str, files: tuple | None) -> Outcome:
    """main returned `value` through gate return number `gate_site` (-1: unknown);
    files: what the runtime logged of sys_file_open ((path, opened), ...; None: unknown)."""
    site = None
    if 0 <= gate_site < len(program.gate_returns):
        pos = program.gate_returns[gate_site].node.pos
        site = Site(pos.file.path, pos.line, pos.col, program.entry.decl.name)
    return Outcome(Status.PASS if value == 0 else Status.FAIL, value, site, message="",
                   captured=[(str(t), v) for t, v in captured], gate_site=gate_site, backend=backend,
                   files=files)


def trapped(program, path: str | None, line: int, col: int, what: str, backend: str,
            message: str | None = None, stack=()) -> Outcome:
    """nx code stopped at a run-time check at path:line:col (path None: nowhere known)."""
    if path is None:
        return Outcome(Status.RUNTIME_ERROR, message=message or f"runtime error: {what}", backend=backend,
                       stack=tuple(stack))
    site = Site(path, line, col, function_at(program, path, line))
    text = message or f"{display_path(path)}:{line}:{col}: runtime error: {what}"
    return Outcome(Status.RUNTIME_ERROR, site=site, stack=tuple(stack), message=text, backend=backend)


def no_gate(backend: str) -> Outcome:
    return Outcome(Status.NO_GATE, message="the module has no 'func main() -> i64'", backend=backend)
