"""Execution: one module (a `Unit`) checked once, then built and run on each backend.

A gate runs through nxc/gates/run.py (in its own child: a crash or a hang is
that gate's outcome); a library module passes when its code generates and,
for C, compiles. Each item becomes a `Result`, with the full explanation of
anything that did not pass (nxc/gates/report.py writes those). `nxc test`
runs units in worker processes (nxc/gates/pool.py); the pytest plugin calls
`run_unit` itself, so both front doors give the same verdicts.
"""
from __future__ import annotations

import dataclasses
import gc
import os
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable

from nxc.diagnostics import ToolError, display_path
from nxc.gates import report
from nxc.gates.collect import Item, Unit
from nxc.syntax.scan import library_kind
from nxc.gates.protocol import Status


@dataclass
class Options:
    backends: tuple = ("c",)
    timeout: float = 60.0
    opt: str = "2"
    use_cache: bool = True
    include: list = field(default_factory=list)
    timeout_flag: str = "--timeout"     # named in the TIMEOUT explanation
    soft_f32: bool = False              # --soft-f32: float32 primitives from nx_f32_soft.nx
    checked: bool = True                # C builds check memory and keep the .nx stack (--unchecked: off)
    read_results: bool = False          # take a recorded pass for a result (nxc test; not --rerun/--no-cache)
    record_results: bool = False        # record passes in the result cache (nxc/incremental/results.py)
    warnings_as_errors: bool = False    # -W error: a module with warnings does not pass
    memory_limit: int | None = None     # --memory-limit: bytes of resident memory per gate (None: none)
    # nxc test: what a check notes in the module index goes back to the runner
    # with the unit's results (Result.index_notes), which notes it in the index
    # it holds. Else (the pytest plugin) the worker notes it in the index file.
    notes_to_runner: bool = False

    def build_identity(self, backend: str) -> str:
        """The result keys' "build" part on `backend` (nxc/incremental/keys.py),
        from the Backend interface. Raises when it cannot build at all (no compiler)."""
        from nxc.backend.registry import backend_for
        return backend_for(backend, checked=self.checked).build_identity(self.opt)


@dataclass
class Result:
    id: str
    path: str
    kind: str
    backend: str
    status: Status
    value: int | None = None        # what main returned
    location: str | None = None     # path:line of the return that fired (or of the first error)
    line: int | None = None
    message: str = ""               # one line
    report: str = ""                # the full explanation, printed for every result that did not pass
    captured: list = field(default_factory=list)   # [(operand text, value)]
    # The .nx stack of a run-time error, crash or timeout, innermost first:
    # [{"file", "line", "column", "function"}] (file as the user would type it)
    stack: list = field(default_factory=list)
    seconds: float = 0.0
    front_end_seconds: float = 0.0
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    build_cached: bool | None = None
    column: int | None = None       # 1-based column at `location` (when the site has one)
    cached: bool = False            # a recorded pass of the same artefact: not run (nxc/incremental/results.py)
    warnings: list = field(default_factory=list)    # rendered warnings of the module (on its first item)
    output: str = ""                # the gate's stdout and stderr (captured, never mixed into ours; JUnit <system-out>)
    covers: int = 1                 # items this result stands for: a compile error counts once per module
    modules: list = field(default_factory=list)     # absolute paths of the modules compiled (for --watch)
    # C backend: the modules whose objects this build compiled (as the user
    # would type them), and whether the gate's library was linked (None: not
    # a separately compiled build, or nothing built: a cached result).
    recompiled: list = field(default_factory=list)
    relinked: bool | None = None
    host: str | None = None         # run from another gate's library: its link key (protocol.Outcome)
    # The modules whose bodies the worker checked (issue 21: the root's and
    # those without a clean verdict or record); in --json only with
    # NXC_DEBUG_STATS=1 (tests/test_tree_incremental.py reads it).
    checked_bodies: list = field(default_factory=list)
    # A pass's record of the files its gate opened (nxc/incremental/inputs.py), kept
    # with it in the result cache; None: not cacheable (or not a pass).
    inputs: dict | None = None
    # Options.notes_to_runner: what the check of its module notes in the module
    # index (nxc/check/summary.py, Checked.notes), on a unit's first result.
    # Noted by the runner: a worker that loaded and saved the whole index per
    # gate spent a tenth of a cold run's Python on it, and more as the tree grew.
    index_notes: dict = field(default_factory=dict)
    # Which path the planner took for it (nxc/incremental/plan.py: "cached",
    # "recorded" or "full"; "" outside nxc test's planner: the pytest plugin)
    # and why (nxc test -v, --json).
    plan: str = ""
    plan_reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == Status.PASS

    def to_json(self) -> dict:
        d = asdict(self)
        del d["modules"], d["inputs"], d["index_notes"]
        if not os.environ.get("NXC_DEBUG_STATS"):
            del d["checked_bodies"]
        d = {"event": "result", **d}
        d["captured"] = [{"text": t, "value": v} for t, v in self.captured]
        d["passed"] = self.passed
        for k in ("seconds", "front_end_seconds", "build_seconds", "run_seconds"):
            d[k] = round(d[k], 4)
        return d


def py_backend_available() -> bool:
    try:
        import nxc.backend.py.backend  # noqa: F401
        return True
    except ImportError:
        return False


def run_unit(unit: Unit, options: Options) -> list[Result]:
    """Check, build and run one module on each of its items' backends."""
    from nxc.backend.base import BodiesNeeded
    from nxc.diagnostics import CompileError

    start = time.perf_counter()

    def result(item: Item, status: Status, **kw) -> Result:
        return Result(item.id, item.display, item.kind, item.backend, status, **kw)

    try:
        unit_check = check_unit(unit, options)
        program, warnings, diags = unit_check.program, unit_check.warnings, unit_check.diags
    except CompileError as exc:
        # One module, one error: with --backend both it is one result standing
        # for both items, so it is printed and counted once.
        # Its warnings are left out: next to an error they are mostly its echo
        # (a misspelt name leaves the right one "unused").
        return [compile_error_result(module_result(unit, Status.COMPILE_ERROR), exc.diagnostics,
                                     time.perf_counter() - start)]
    except Exception as exc:  # noqa: BLE001 - a bug in nxc: report it, keep going
        return [internal_error(result(it, Status.INTERNAL_ERROR), exc, time.perf_counter() - start)
                for it in unit.items]
    front_end = time.perf_counter() - start
    kind = "gate" if program.entry is not None else library_kind(program.graph.root.source.text)
    modules = [m.source.path for m in program.graph.modules]
    if warnings and options.warnings_as_errors:
        r = compile_error_result(module_result(unit, Status.COMPILE_ERROR), diags.warnings, front_end,
                                 what="warning{s} treated as errors (-W error)")
        r.kind, r.warnings, r.modules = kind, warnings, modules
        return _finished([r], unit_check, options)

    if unit.run_later and kind == "gate":
        t0 = time.perf_counter()
        compiled = built_for_later(unit_check, unit, options)
        if compiled is not None:    # its run comes in the second round (nxc/gates/command.py)
            r = result(unit.items[0], Status.PASS, front_end_seconds=front_end, modules=modules)
            r.plan, r.recompiled = BUILT, [display_path(p) for p in compiled]
            r.checked_bodies = [display_path(p) for p in unit_check.checked_order]
            r.build_seconds = time.perf_counter() - t0
            r.seconds = front_end + r.build_seconds
            return _finished([r], unit_check, options)
    results = []
    for item in unit.items:
        item.kind = kind
        t0 = time.perf_counter()
        r = result(item, Status.PASS, front_end_seconds=front_end, modules=modules)
        try:
            try:
                build_item(unit_check, kind, item.backend, options, r)
            except BodiesNeeded as exc:
                # An object the backend found in the cache when it said what it
                # needed left it before the build (pruned by another run), or a
                # fault's site table is missing or damaged: it says again, now
                # without it, once.
                unit_check.replan(exc.paths)
                program = unit_check.program
                r = result(item, Status.PASS, front_end_seconds=front_end, modules=modules)
                build_item(unit_check, kind, item.backend, options, r)
        except CompileError as exc:         # a backend's own limit (the Python backend's nesting)
            r = compile_error_result(result(item, Status.COMPILE_ERROR), exc.diagnostics, front_end)
        except Exception as exc:  # noqa: BLE001
            r = internal_error(r, exc, 0.0)
            r.front_end_seconds = front_end
        r.seconds = front_end + (time.perf_counter() - t0)
        results.append(r)
    if results:
        results[0].warnings = warnings      # the module's, shown once
        results[0].checked_bodies = [display_path(p) for p in unit_check.checked_order]
    note_disagreement(results)
    if options.record_results:
        from nxc.incremental.keys import source_digest
        closure = {m.source.path: source_digest(m.source.text) for m in program.graph.modules}
        record_unit_passes(closure, kind, warnings, results, options)
    return _finished(results, unit_check, options)


def _finished(results: list[Result], unit_check: "UnitCheck", options: Options) -> list[Result]:
    """`results`, once what the unit's check found is kept, last, in one
    visit to the incremental layer: its clean verdicts stored, its module
    index notes noted (or carried to the runner on the first result:
    Options.notes_to_runner)."""
    from nxc.incremental.index import note_modules
    from nxc.incremental.records import store_verdicts
    try:
        store_verdicts(unit_check.verdicts)
    except OSError:             # a read-only or full cache: not keeping them costs the next run speed only
        pass
    if options.notes_to_runner:
        if results:
            results[0].index_notes = unit_check.notes
    elif unit_check.notes:
        note_modules(unit_check.notes)
    return results


# The `plan` of a first round's result: the unit's objects were built, its
# gate was not run; never reported, its figures are added to the second
# round's result of the same item (nxc/gates/command.py).
BUILT = "built"


def built_for_later(unit_check: "UnitCheck", unit: Unit, options: Options) -> list | None:
    """Build what the unit's gate needs to run later from records, without
    linking or running it (Backend.build_objects): the modules compiled;
    None: run it now. A failure to build is not reported here: the gate
    then runs now, and its build reports it."""
    from nxc.backend.registry import backend_for
    if len(unit.items) != 1 or unit_check.emitted is None:
        return None
    try:
        return backend_for(unit.items[0].backend, checked=options.checked).build_objects(
            unit_check.emitted, opt=options.opt, use_cache=options.use_cache)
    except Exception:  # noqa: BLE001 - said by the build of the run now
        return None


@dataclass
class UnitCheck:
    """What checking a unit gave its builds."""
    program: object                     # final: every body a backend emits is checked
    warnings: list                      # rendered
    diags: object                       # the Diagnostics
    checked_order: list                 # the modules whose bodies were checked (NXC_DEBUG_STATS)
    emitted: object = None              # C only: the C backend's emitted code of `program`
    # C only: the checked build's emitted code, planned when an unchecked one
    # crashed (nxc/gates/run.py, locate_crash), its bodies asked for the same way
    checked_again: Callable | None = None
    found: object = None                # C only: the partial check (check_gate) it was made final from
    options: object = None
    notes: dict = field(default_factory=dict)   # C only: what the module index is to note (Checked.notes)
    verdicts: list = field(default_factory=list)    # C only: the clean verdicts to store (Checked.verdicts)

    def replan(self, also=frozenset()) -> None:
        """Ask the C backend again what it needs, from the program as checked now
        (a build found an object missing that it was told was cached, or a
        fault's site table missing): the modules `also` are emitted too."""
        if self.found is None:
            raise RuntimeError("only a C gate worker's program is planned (a bug in nxc)")
        self.program, self.emitted = final_program(self.found, self.options, also=also)
        self.checked_order = list(self.found.bodies.checked_order)


def build_item(unit_check: "UnitCheck", kind: str, backend: str, options: Options, r: Result) -> None:
    if kind != "gate":
        compile_library(unit_check.program, backend, options, r, unit_check.emitted)
    else:
        gate_result(unit_check.program, backend, options, r, unit_check.emitted, unit_check.checked_again)


def check_unit(unit: Unit, options: Options) -> UnitCheck:
    """The check of `unit`'s module. A C-only run checks the bodies of the
    root and of the modules without a clean verdict (nxc/check/summary.py,
    check_gate), then those the C backend asks for (`final_program`): the
    per-gate work is the root's own code, not its closure's bodies. The
    Python backend runs the whole program, and -W error words each warning
    of the closure from its diagnostic: both take the whole check
    (check_file), as does a closure check_gate cannot stand for. Raises
    CompileError."""
    from nxc.check.frontend import check_file
    from nxc.check.summary import check_gate
    from nxc.diagnostics import Diagnostics
    from nxc.syntax.loader import load_graph
    include = list(options.include)
    found = None
    if all(it.backend == "c" for it in unit.items):
        diags = Diagnostics(warnings=True)
        # Down the stages: the graph loaded, then checked, planned, built, run;
        # what the check found is kept last (_finished).
        try:
            graph = load_graph(unit.path, include, diags, options.soft_f32)
        except RecursionError:
            graph = None                # check_gate says it cannot stand for check_file, which says why
        found = check_gate(unit.path, include, diags, soft_f32=options.soft_f32, keep=False, graph=graph)
        if found is not None and not (found.warnings and options.warnings_as_errors):
            program, emitted = final_program(found, options)
            again = lambda: final_program(found, dataclasses.replace(options, checked=True))    # noqa: E731
            return UnitCheck(program, found.warnings, diags, list(found.bodies.checked_order), emitted, again,
                             found, options, found.notes, found.verdicts)
    # The whole check (-W error with warnings: it says them); the clean
    # verdicts a first check found are kept all the same (_finished).
    verdicts = found.verdicts if found is not None else []
    diags = Diagnostics(warnings=True)
    program = check_file(unit.path, include, diags, soft_f32=options.soft_f32)
    return UnitCheck(program, [d.render() for d in diags.warnings], diags,
                     [m.source.path for m in program.graph.modules], verdicts=verdicts)


def final_program(found, options: Options, emit=None, also=frozenset()) -> tuple:
    """(the final program, the C backend's emitted code of it) of a gate
    worker's partial check `found` (check_gate): the backend says which
    records and bodies it needs before it can emit (Backend.plan_bodies),
    they are given and checked here, and it is asked again with the new
    program, until it needs nothing. The backend never calls the checker,
    and the program it emits does not change under it. emit: the real paths
    of the modules whose C will be emitted (default: those a build of the
    gate compiles, and the modules `also`)."""
    from nxc.backend.registry import backend_for
    program = found.bodies.program
    asking = backend_for("c", checked=options.checked).plan_bodies(program, opt=options.opt,
                                                                    use_cache=options.use_cache, emit=emit,
                                                                    also=also)
    while need := asking.needed(program):
        program = found.bodies.meet(need)
    return program, asking.emitted(program)


def record_unit_passes(closure: dict[str, str], kind: str, warnings: list[str], results: list[Result],
                       options: Options) -> None:
    """Record each pass under its unit key too (keys.unit_key): the
    digests of the sources this very check read ({real path: keys.
    source_digest}), so the runner's no-change fast path (nxc/gates/
    nochange.py) finds it from the module index alone."""
    from nxc.incremental import keys
    from nxc.incremental import results as results_cache
    for r in results:
        if r.passed and r.inputs is not None:
            try:
                results_cache.record_unit_pass(keys.unit_key(closure, r.backend, options), kind, warnings,
                                               r.inputs)
            except OSError:         # a read-only or full cache: not recording costs the next run speed only
                pass


def module_result(unit: Unit, status: Status) -> Result:
    """A result for all of a unit's items at once (a module that does not compile)."""
    first = unit.items[0]
    if len(unit.items) == 1:
        return Result(first.id, first.display, first.kind, first.backend, status)
    return Result(unit.display, unit.display, first.kind, "+".join(it.backend for it in unit.items), status,
                  covers=len(unit.items))


def prepared_or_cached(program, backend_name: str, kind: str, options: Options, r: Result, emitted=None):
    """Emit the code (unless `emitted`: the C backend's, of a final program),
    then either find a recorded pass of it (returns (None, None), `r` marked
    cached) or hand back (emitted, result key) to build and run."""
    from nxc.backend.registry import backend_for
    from nxc.incremental import keys
    from nxc.incremental import results as results_cache
    if backend_name != "c":
        emitted = None
    if not (options.read_results or options.record_results):
        return emitted, ""
    backend = backend_for(backend_name, checked=options.checked)
    t0 = time.perf_counter()
    if emitted is None:
        emitted = backend.emit(program)
    key = keys.artefact_result_key(backend.artefact_key(emitted, purpose="gate", opt=options.opt),
                                         kind, options, backend_name)
    r.build_seconds = time.perf_counter() - t0
    found = results_cache.passed_before(key) if options.read_results else None
    if found is not None:
        r.cached, r.inputs = True, found        # its files were checked: recorded with it under the unit key
        r.message = "compiles" if kind != "gate" else ""
        return None, None
    return emitted, key


def record(key: str | None, options: Options, r: Result) -> None:
    from nxc.incremental import results as results_cache
    if key and options.record_results and r.passed:
        results_cache.record_pass(key, r.inputs)


def gate_result(program, backend: str, options: Options, r: Result, emitted=None, checked_again=None) -> None:
    """Run the gate on `backend`; fill `r` from its outcome (emitted,
    checked_again: the C backend's code of the final program and of its
    checked build, from check_unit)."""
    from nxc.gates.run import run_gate
    emitted, key = prepared_or_cached(program, backend, "gate", options, r, emitted)
    if key is None:
        return
    emit_seconds = r.build_seconds
    started = time.time_ns()
    outcome = run_gate(program, backend, opt=options.opt, use_cache=options.use_cache, timeout=options.timeout,
                       emitted=emitted, checked=options.checked,
                       capture=True, memory_limit=options.memory_limit,
                       checked_again=checked_again if backend == "c" else None)
    fill_result(outcome, program, options, r, key, emit_seconds, started)


def fill_result(outcome, program, options: Options, r: Result, key: str | None = None,
                emit_seconds: float = 0.0, started_ns: int = 0) -> None:
    """Status, message and report of `r` from a gate's outcome (nxc test, the
    pytest plugin and nxc run explain an outcome the same way); a pass is
    recorded in the result cache under `key` when the run records results,
    with the record of the files the gate opened (the gate started at
    time.time_ns() `started_ns`), if they can be keyed."""
    from nxc.diagnostics import display_path
    from nxc.incremental import inputs
    r.stack = [{"file": display_path(f.file), "line": f.line, "column": f.column, "function": f.function}
               for f in outcome.stack]
    r.run_seconds = outcome.seconds
    r.build_cached = outcome.build_cached
    r.recompiled = [display_path(p) for p in outcome.recompiled]
    r.relinked = outcome.relinked
    r.host = outcome.host
    r.build_seconds = outcome.build_seconds + emit_seconds
    r.status = outcome.status
    r.value = outcome.value
    r.output = outcome.output or ""                     # captured stdout/stderr of the gate
    status = outcome.status
    r.inputs = inputs.record(outcome.files, started_ns) if status == Status.PASS and key else None
    record(key, options, r)
    if outcome.site is not None:
        r.column = outcome.site.column
    if status == Status.FAIL:
        r.captured = list(outcome.captured)
        if outcome.site is not None:
            r.location, r.line = report.location(outcome.site), outcome.site.line
            r.message = f"main returned {outcome.value} at {r.location}"
        else:
            r.message = f"main returned {outcome.value}"
        r.report = report.describe_failure(outcome, report.sources_of(program))
    elif status == Status.RUNTIME_ERROR:
        r.message = outcome.message
        r.report = report.runtime_error_report(outcome, report.sources_of(program))
        if outcome.site is not None:
            r.location, r.line = report.location(outcome.site), outcome.site.line
    elif status == Status.CRASH:
        r.message = outcome.message
        r.report = report.crash_report(outcome, report.sources_of(program))
        if outcome.site is not None:
            r.location, r.line = report.location(outcome.site), outcome.site.line
    elif status == Status.TIMEOUT:
        r.message = f"did not finish in {options.timeout:g} s"
        r.report = report.timeout_report(outcome, options.timeout, options.timeout_flag)
        if outcome.stack:
            top = outcome.stack[0]
            r.location, r.line = report.location(top), top.line
            r.message += f", stopped in {top.function} at {r.location}"
    elif status == Status.MEMORY_LIMIT:
        r.message = f"{outcome.message} (--memory-limit {options.memory_limit >> 20} MiB)"
        r.report = f"MEMORY-LIMIT: {outcome.message} (--memory-limit SIZE allows more, 0 none)"
    elif status != Status.PASS:        # NO-GATE cannot happen for a gate; be explicit anyway
        r.status = Status.INTERNAL_ERROR
        r.message = outcome.message or str(status)
        r.report = f"{status}: {r.message}"
    if r.output and status != Status.PASS:
        r.report += "\n---- the gate's output (stdout and stderr) ----\n" + r.output.rstrip("\n")


def compile_library(program, backend: str, options: Options, r: Result, emitted=None) -> None:
    """A library module passes when its code generates and (for C) compiles."""
    from nxc.backend.registry import backend_for
    from nxc.incremental import inputs
    emitted, key = prepared_or_cached(program, backend, "library", options, r, emitted)
    if key is None:
        return
    prepared = backend_for(backend, checked=options.checked).prepare(program, purpose="gate", opt=options.opt,
                                            use_cache=options.use_cache, load=False, emitted=emitted)
    r.build_cached = prepared.build_cached
    r.recompiled = [display_path(p) for p in getattr(prepared.built, "recompiled", ())]
    r.relinked = getattr(prepared.built, "relinked", None)
    if prepared.build_cached is None:       # nothing cached: generating is the build
        r.build_seconds += prepared.emit_seconds + prepared.build_seconds
    else:
        r.build_seconds = prepared.built.seconds
    r.message = "compiles"
    r.inputs = inputs.NO_FILES              # nothing ran: no file was opened
    record(key, options, r)


def compile_error_result(r: Result, diagnostics, seconds: float,
                         what: str = "error{s}: the module does not compile") -> Result:
    r.seconds = r.front_end_seconds = seconds
    if diagnostics:
        first = diagnostics[0]
        r.message = first.render().splitlines()[0]
        if first.pos is not None:
            r.location, r.line = f"{first.pos.file.display}:{first.pos.line}", first.pos.line
            r.column = first.pos.col
    n = len(diagnostics)
    r.report = "\n".join(d.render() for d in diagnostics) + f"\n{n} " + what.format(s="s" if n != 1 else "")
    return r


def internal_error(r: Result, exc: BaseException, seconds: float) -> Result:
    r.status = Status.INTERNAL_ERROR
    r.seconds = seconds
    from nxc.backend.c.build import BuildError
    if isinstance(exc, BuildError):
        r.message = "the C compiler rejected the generated code (a bug in nxc)"
        r.report = str(exc)
    elif isinstance(exc, ToolError):        # no compiler, ...: the user's setup, one line
        r.message = str(exc)
        r.report = f"ERROR: {exc}"
    elif isinstance(exc, ImportError) and "backend.py" in str(exc):
        r.message = "the Python backend is not available"
        r.report = f"ERROR: {r.message}: {exc}"
    else:
        r.message = f"internal error in nxc: {type(exc).__name__}: {exc}"
        r.report = (f"ERROR: {r.message}\n(this is a bug in nxc, not in the .nx code; the traceback helps a report)\n"
                    + "".join(traceback.format_exception(exc)))
    return r


def note_disagreement(results: list[Result]) -> None:
    """--backend both: say so when the backends do not agree on a module."""
    if len(results) < 2 or len({(r.status, r.value) for r in results}) == 1:
        return
    note = "backends disagree: " + "; ".join(
        f"{r.backend}: {r.status}{'' if r.value is None else ' ' + str(r.value)}" for r in results)
    for r in results:
        if not r.passed:
            r.report = (r.report + "\n" if r.report else "") + note


def warm_up() -> None:
    """Load what every worker needs before forking them, so each starts warm."""
    from nxc.backend.registry import backend_for
    from nxc.check import frontend  # noqa: F401 - imported for its import cost
    from nxc.gates import run  # noqa: F401
    from nxc.syntax import parse
    for warm in (parse.warm_up, backend_for("c").warm_up):
        try:
            warm()
        except Exception:  # noqa: BLE001 - the real call will report it
            pass
    collect_less()


# A worker allocates millions of small objects per gate (ASTs, types, C
# text) and keeps many (parsed modules, records): at Python's default
# thresholds the cyclic GC ran about 2.6 times a gate and took about a sixth
# of a worker's CPU on a cold tree (bench/gate_worker_cpu.py). A young
# generation of 100,000 objects runs it a few times per hundred gates; what
# the runner loaded before forking is frozen (never scanned again, and not
# copied into each worker by the collector's writes).
GC_THRESHOLDS = (100_000, 20, 20)


def collect_less() -> None:
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
