"""`nxc test`: find every .nx module, compile it, run its gate, explain the result.

Collection: every `.nx` file under the given paths. A module with
`func main() -> i64` is a gate; one without is a library module, which is an
item too: it passes when it compiles.

Execution: one unit of work per module (its front end runs once, for every
backend asked for). Units run in parallel in worker processes (`-j N`); a
worker checks, emits and builds the module (the build cache makes an
unchanged module cost no C compile) and runs its gate through
`run.execute`, which forks the gate into its own child: a segfault, an abort
or a hang is that gate's outcome, and the run goes on. Workers are forked
from a runner that has already loaded the parser and the compiler's
identity, so they start warm; a worker that dies takes only its own module
down with it.

Reporting: a line per result as it arrives (or progress letters with -q,
or one JSON object per result with --json), then every failure explained
(the `return` that fired, its source lines and the values of the operands of
its guard), then a summary whose last line is `N passed, N failed, ...`.

The pytest plugin (nxc/gates/pytest_plugin.py) runs the same units through
`run_unit`, so both front doors give the same verdicts and explanations.
"""
from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import time
import traceback
from collections import deque
from dataclasses import asdict, dataclass, field
from xml.etree import ElementTree as ET

from nxc.diagnostics import ToolError, display_path

PASS, FAIL = "PASS", "FAIL"
COMPILE_ERROR, RUNTIME_ERROR = "COMPILE-ERROR", "RUNTIME-ERROR"
CRASH, TIMEOUT, ERROR = "CRASH", "TIMEOUT", "ERROR"   # ERROR: nxc itself failed (a bug, a missing backend)

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NO_TESTS, EXIT_INTERRUPTED = 0, 1, 2, 5, 130

# Summary words, in the order the summary line lists them.
_SUMMARY = [(PASS, "passed", "passed"), (FAIL, "failed", "failed"),
            (COMPILE_ERROR, "compile error", "compile errors"), (RUNTIME_ERROR, "runtime error", "runtime errors"),
            (CRASH, "crash", "crashes"), (TIMEOUT, "timeout", "timeouts"), (ERROR, "error", "errors")]
_LETTER = {PASS: ".", FAIL: "F", COMPILE_ERROR: "E", RUNTIME_ERROR: "R", CRASH: "C", TIMEOUT: "T", ERROR: "E"}

_SIGNAL_HINT = {
    "SIGSEGV": "an invalid memory access, such as a read or write through a null pointer",
    "SIGBUS": "an invalid memory access (misaligned or beyond a mapping)",
    "SIGABRT": "the program aborted",
    "SIGFPE": "an arithmetic fault",
    "SIGILL": "an illegal instruction",
}


class UsageError(Exception):
    """A mistake on the command line (bad path, bad -k expression)."""


# ------------------------------------------------------------------ data
@dataclass
class Options:
    backends: tuple = ("c",)
    timeout: float = 60.0
    opt: str = "2"
    use_cache: bool = True
    include: list = field(default_factory=list)
    timeout_flag: str = "--timeout"     # named in the TIMEOUT explanation
    soft_f32: bool = False              # --soft-f32: float32 primitives from nx_f32_soft.nx


@dataclass
class Item:
    """One collected test: a module on one backend."""
    id: str
    path: str               # absolute
    display: str            # as the user would type it
    backend: str
    kind: str               # "gate" | "library" (from a quick look at the text; confirmed by the front end)
    main_line: int = 0      # 1-based line of `func main`, 0 if none


@dataclass
class Unit:
    """One module and the backends to run it on: the front end runs once for all."""
    path: str
    display: str
    items: list             # [Item], one per backend


@dataclass
class Result:
    id: str
    path: str
    kind: str
    backend: str
    status: str
    value: int | None = None        # what main returned
    location: str | None = None     # path:line of the return that fired (or of the first error)
    line: int | None = None
    message: str = ""               # one line
    report: str = ""                # the full explanation, printed for every result that did not pass
    captured: list = field(default_factory=list)   # [(operand text, value)]
    seconds: float = 0.0
    front_end_seconds: float = 0.0
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    build_cached: bool | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def to_json(self) -> dict:
        d = asdict(self)
        d["captured"] = [{"text": t, "value": v} for t, v in self.captured]
        d["passed"] = self.passed
        for k in ("seconds", "front_end_seconds", "build_seconds", "run_seconds"):
            d[k] = round(d[k], 4)
        return d


# ------------------------------------------------------------------ collection
def find_modules(paths: list[str]) -> list[str]:
    """Absolute paths of the .nx files under `paths`, in a stable order, each once."""
    found, seen = [], set()

    def add(p: str) -> None:
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            found.append(os.path.abspath(p))

    for p in paths:
        if os.path.isfile(p):
            add(p)                  # named explicitly: taken whatever its suffix
        elif os.path.isdir(p):
            for folder, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not _skipped_dir(folder, d))
                for name in sorted(files):
                    if name.endswith(".nx"):
                        add(os.path.join(folder, name))
        else:
            raise UsageError(f"no such file or folder: '{p}'")
    return found


def _skipped_dir(parent: str, name: str) -> bool:
    """Hidden folders, __pycache__ and virtual environments hold no modules of the tree."""
    return (name.startswith(".") or name == "__pycache__"
            or os.path.isfile(os.path.join(parent, name, "pyvenv.cfg")))


_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_MAIN = re.compile(r"^[ \t]*func[ \t]+main[ \t]*\(", re.M)


def scan_kind(path: str) -> tuple[str, int]:
    """("gate" | "library", line of `func main`), from the text alone (no parse).

    Collection stays fast (pytest-xdist collects on every worker); the front
    end confirms the kind when the item runs.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return "library", 0
    # Blank out comments but keep the line structure, so line numbers stay right.
    text = _BLOCK_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    text = _LINE_COMMENT.sub("", text)
    m = _MAIN.search(text)
    return ("gate", text.count("\n", 0, m.start()) + 1) if m else ("library", 0)


def item_id(display: str, backend: str, backends) -> str:
    return f"{display}[{backend}]" if len(backends) > 1 else display


def collect(paths: list[str], backends=("c",), keyword: str | None = None) -> list[Item]:
    match = KeywordExpression(keyword) if keyword else None
    items = []
    for path in find_modules(paths):
        display = display_path(path)
        kind, main_line = scan_kind(path)
        for b in backends:
            item = Item(item_id(display, b, backends), path, display, b, kind, main_line)
            if match is None or match.matches(item_words(item)):
                items.append(item)
    return items


def item_words(item: Item) -> list[str]:
    name = os.path.basename(item.path)
    return [item.id, name, os.path.splitext(name)[0], item.kind, item.backend]


def group_units(items: list[Item]) -> list[Unit]:
    units: dict[str, Unit] = {}
    for it in items:
        units.setdefault(it.path, Unit(it.path, it.display, [])).items.append(it)
    return list(units.values())


class KeywordExpression:
    """`-k`: pytest's keyword expressions: words (case-insensitive substrings of
    an item's id, file name, kind or backend) combined with `and`, `or`, `not`
    and parentheses."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = re.findall(r"\(|\)|[^\s()]+", text)
        self.i = 0
        if not self.tokens:
            raise UsageError("-k: empty expression")
        self.tree = self._or()
        if self.i != len(self.tokens):
            raise UsageError(f"-k: unexpected '{self.tokens[self.i]}' in '{text}'")

    def _peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _take(self):
        tok = self._peek()
        if tok is None:
            raise UsageError(f"-k: '{self.text}' ends too early")
        self.i += 1
        return tok

    def _or(self):
        node = self._and()
        while self._peek() == "or":
            self.i += 1
            node = ("or", node, self._and())
        return node

    def _and(self):
        node = self._not()
        while self._peek() == "and":
            self.i += 1
            node = ("and", node, self._not())
        return node

    def _not(self):
        tok = self._take()
        if tok == "not":
            return ("not", self._not())
        if tok == "(":
            node = self._or()
            if self._take() != ")":
                raise UsageError(f"-k: missing ')' in '{self.text}'")
            return node
        if tok in (")", "and", "or"):
            raise UsageError(f"-k: unexpected '{tok}' in '{self.text}'")
        return ("word", tok.lower())

    def matches(self, words: list[str]) -> bool:
        low = [w.lower() for w in words]

        def ev(node) -> bool:
            op = node[0]
            if op == "word":
                return any(node[1] in w for w in low)
            if op == "not":
                return not ev(node[1])
            if op == "and":
                return ev(node[1]) and ev(node[2])
            return ev(node[1]) or ev(node[2])
        return ev(self.tree)


# ------------------------------------------------------------------ running one module
def py_backend_available() -> bool:
    try:
        import nxc.backend.py.run  # noqa: F401
        return True
    except ImportError:
        return False


def run_unit(unit: Unit, options: Options) -> list[Result]:
    """Check, build and run one module on each of its items' backends."""
    from nxc.diagnostics import CompileError, Diagnostics
    from nxc.check.frontend import check_file

    start = time.perf_counter()

    def result(item: Item, status: str, **kw) -> Result:
        return Result(item.id, item.display, item.kind, item.backend, status, **kw)

    try:
        program = check_file(unit.path, list(options.include), Diagnostics(warnings=False),
                             soft_f32=options.soft_f32)
    except CompileError as exc:
        return [compile_error_result(result(it, COMPILE_ERROR), exc.diagnostics,
                                     time.perf_counter() - start) for it in unit.items]
    except Exception as exc:  # noqa: BLE001 - a bug in nxc: report it, keep going
        return [internal_error(result(it, ERROR), exc, time.perf_counter() - start) for it in unit.items]
    front_end = time.perf_counter() - start
    kind = "gate" if program.entry is not None else "library"

    results = []
    for item in unit.items:
        item.kind = kind
        t0 = time.perf_counter()
        r = result(item, PASS, front_end_seconds=front_end)
        try:
            if kind == "library":
                compile_library(program, item.backend, options, r)
            else:
                run_gate(program, item.backend, options, r)
        except Exception as exc:  # noqa: BLE001
            r = internal_error(r, exc, 0.0)
            r.front_end_seconds = front_end
        r.seconds = front_end + (time.perf_counter() - t0)
        results.append(r)
    _note_disagreement(results)
    return results


def run_gate(program, backend: str, options: Options, r: Result) -> None:
    from nxc.gates.run import describe_failure, execute
    outcome = execute(program, backend, opt=options.opt, use_cache=options.use_cache, timeout=options.timeout)[0]
    r.run_seconds = outcome.seconds
    r.build_cached = outcome.build_cached
    r.build_seconds = outcome.build_seconds
    r.status = outcome.status
    r.value = outcome.value
    if outcome.status == FAIL:
        r.captured = [(str(t), v) for t, v in outcome.captured]
        gr = outcome.gate_return
        if gr is not None:
            pos = gr.node.pos
            r.location, r.line = f"{pos.file.display}:{pos.line}", pos.line
            r.message = f"main returned {outcome.value} at {r.location}"
        else:
            r.message = f"main returned {outcome.value}"
        r.report = describe_failure(outcome)
    elif outcome.status == RUNTIME_ERROR:
        r.message = outcome.message
        r.report = runtime_error_report(outcome.message)
        m = _LOCATED.match(outcome.message)
        if m:
            r.location, r.line = f"{m['path']}:{m['line']}", int(m["line"])
    elif outcome.status == CRASH:
        sig = outcome.message
        r.message = sig
        hint = _SIGNAL_HINT.get(sig)
        r.report = (f"CRASH ({sig}): the gate's process was killed by {sig}"
                    + (f" ({hint})" if hint else "") if sig.startswith("SIG")
                    else f"CRASH: the gate's process ended without a result ({sig})")
    elif outcome.status == TIMEOUT:
        r.message = f"did not finish in {options.timeout:g} s"
        r.report = (f"TIMEOUT: the gate did not finish in {options.timeout:g} s and was stopped "
                    f"({options.timeout_flag} SECONDS allows more)")
    elif outcome.status != PASS:        # NO-GATE cannot happen for a gate; be explicit anyway
        r.status = ERROR
        r.message = outcome.message or outcome.status
        r.report = f"{outcome.status}: {r.message}"


def compile_library(program, backend: str, options: Options, r: Result) -> None:
    """A library module passes when its code generates and (for C) compiles."""
    t0 = time.perf_counter()
    if backend == "c":
        from nxc.backend.c.build import build
        from nxc.backend.c.emit import emit_c
        built = build(emit_c(program), opt=options.opt, use_cache=options.use_cache, abi=True)
        r.build_cached, r.build_seconds = built.cached, built.seconds
    else:
        from nxc.backend.py.emit import emit_py
        text = emit_py(program).text
        compile(text, program.graph.root.source.path + ".py", "exec")
        r.build_seconds = time.perf_counter() - t0
    r.message = "compiles"


def compile_error_result(r: Result, diagnostics, seconds: float) -> Result:
    r.seconds = r.front_end_seconds = seconds
    if diagnostics:
        first = diagnostics[0]
        r.message = first.render().splitlines()[0]
        if first.pos is not None:
            r.location, r.line = f"{first.pos.file.display}:{first.pos.line}", first.pos.line
    n = len(diagnostics)
    r.report = "\n".join(d.render() for d in diagnostics) + f"\n{n} error{'s' if n != 1 else ''}: the module does not compile"
    return r


def internal_error(r: Result, exc: BaseException, seconds: float) -> Result:
    r.status = ERROR
    r.seconds = seconds
    from nxc.backend.c.build import BuildError
    if isinstance(exc, BuildError):
        r.message = "the C compiler rejected the generated code (a bug in nxc)"
        r.report = str(exc)
    elif isinstance(exc, ToolError):        # no compiler, ...: the user's setup, one line
        r.message = str(exc)
        r.report = f"ERROR: {exc}"
    elif isinstance(exc, ImportError) and ("run_py" in str(exc) or "emit_py" in str(exc)):
        r.message = "the Python backend is not available"
        r.report = f"ERROR: {r.message}: {exc}"
    else:
        r.message = f"internal error in nxc: {type(exc).__name__}: {exc}"
        r.report = (f"ERROR: {r.message}\n(this is a bug in nxc, not in the .nx code; the traceback helps a report)\n"
                    + "".join(traceback.format_exception(exc)))
    return r


_LOCATED = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): ")


def runtime_error_report(message: str) -> str:
    """The run-time error, with its source line and a caret when it names one."""
    lines = [f"RUNTIME-ERROR {message}"]
    m = _LOCATED.match(message)
    if m:
        try:
            with open(m["path"], encoding="utf-8", errors="replace") as f:
                src = f.read().splitlines()
            n, col = int(m["line"]), int(m["col"])
            if 1 <= n <= len(src):
                lines.append(f" >{n:5d} | {src[n - 1]}")
                lines.append(" " * 10 + " " * (col - 1) + "^")
        except OSError:
            pass
    return "\n".join(lines)


def _note_disagreement(results: list[Result]) -> None:
    """--backend both: say so when the backends do not agree on a module."""
    if len(results) < 2 or len({(r.status, r.value) for r in results}) == 1:
        return
    note = "backends disagree: " + "; ".join(
        f"{r.backend}: {r.status}{'' if r.value is None else ' ' + str(r.value)}" for r in results)
    for r in results:
        if not r.passed:
            r.report = (r.report + "\n" if r.report else "") + note


# ------------------------------------------------------------------ parallel execution
def _warm_up() -> None:
    """Load what every worker needs before forking them, so each starts warm."""
    from nxc.backend.c import build
    from nxc.check import frontend  # noqa: F401 - imported for its import cost
    from nxc.gates import run  # noqa: F401
    from nxc.syntax import parse
    for warm in (parse.warm_up, build.warm_up):
        try:
            warm()
        except Exception:  # noqa: BLE001 - the real call will report it
            pass


def _worker(conn, options: Options) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the runner decides what Ctrl-C stops
    while True:
        try:
            unit = conn.recv()
        except (EOFError, OSError):
            return
        if unit is None:
            return
        try:
            results = run_unit(unit, options)
        except BaseException as exc:  # noqa: BLE001
            results = [internal_error(Result(it.id, it.display, it.kind, it.backend, ERROR), exc, 0.0)
                       for it in unit.items]
        conn.send(results)


class _Pool:
    """Forked workers fed one module at a time; a dead worker costs one module."""

    def __init__(self, size: int, options: Options):
        self.ctx = multiprocessing.get_context("fork")
        self.options = options
        self.workers: dict = {}          # conn -> (process, unit or None)
        for _ in range(size):
            self._spawn()

    def _spawn(self):
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker, args=(child, self.options), daemon=True)
        p.start()
        child.close()
        self.workers[parent] = [p, None]
        return parent

    def run(self, units, on_results) -> None:
        """Run `units`; `on_results(results)` returns False to stop early."""
        pending = deque(units)
        for conn in list(self.workers):
            self._feed(conn, pending)
        while any(w[1] is not None for w in self.workers.values()):
            busy = [c for c, w in self.workers.items() if w[1] is not None]
            for conn in multiprocessing.connection.wait(busy):
                proc, unit = self.workers[conn]
                try:
                    results = conn.recv()
                except (EOFError, OSError):
                    proc.join(1)
                    results = [_worker_died(it, proc.exitcode) for it in unit.items]
                    del self.workers[conn]
                    conn.close()
                    conn = self._spawn() if pending else None
                if conn is not None:
                    self.workers[conn][1] = None
                if not on_results(results):
                    return
                if conn is not None:
                    self._feed(conn, pending)

    def _feed(self, conn, pending: deque) -> None:
        if pending:
            unit = pending.popleft()
            self.workers[conn][1] = unit
            conn.send(unit)

    def close(self, kill: bool = False) -> None:
        for conn, (proc, _) in self.workers.items():
            if kill:
                proc.kill()         # its gate child follows (PR_SET_PDEATHSIG in run.py)
            else:
                try:
                    conn.send(None)
                except OSError:
                    pass
        for conn, (proc, _) in self.workers.items():
            proc.join()
            conn.close()
        self.workers.clear()


def _worker_died(item: Item, exitcode) -> Result:
    how = (f"killed by {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0
           and -exitcode in signal.valid_signals() else f"exit status {exitcode}")
    r = Result(item.id, item.display, item.kind, item.backend, ERROR)
    r.message = f"the worker process checking this module died ({how})"
    r.report = f"ERROR: {r.message}; this is a bug in nxc (the gate itself runs in a separate child)"
    return r


def cpu_count() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return os.cpu_count() or 1


# ------------------------------------------------------------------ reporting
class Reporter:
    def __init__(self, verbosity: int, json_lines: bool, total: int, out=None):
        self.verbosity = verbosity
        self.json = json_lines
        self.total = total
        self.out = out or sys.stdout
        self.done = 0
        self.width = len(str(total))
        self.letters_on_line = 0

    def say(self, text: str = "", end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    def header(self, items: list[Item], workers: int, options: Options) -> None:
        if self.json or self.verbosity < 0:
            return
        modules = len({it.path for it in items})
        gates = len({it.path for it in items if it.kind == "gate"})
        self.say(f"nxc test: {modules} module{'s' if modules != 1 else ''} ({gates} gate{'s' if gates != 1 else ''}, "
                 f"{modules - gates} librar{'ies' if modules - gates != 1 else 'y'}), "
                 f"backend {'+'.join(options.backends)}, {workers} worker{'s' if workers != 1 else ''}, "
                 f"timeout {options.timeout:g} s{'' if options.use_cache else ', no cache'}"
                 f"{', soft f32' if options.soft_f32 else ''}")

    def result(self, r: Result) -> None:
        self.done += 1
        if self.json:
            self.say(json.dumps(r.to_json()))
            return
        if self.verbosity < 0:
            self.say(_LETTER.get(r.status, "?"), end="")
            self.letters_on_line += 1
            if self.letters_on_line >= 70 or self.done == self.total:
                self.say(f" [{self.done}/{self.total}]")
                self.letters_on_line = 0
            return
        what = r.message if not r.passed else ("library, compiles" if r.kind == "library" else "gate")
        line = f"[{self.done:{self.width}d}/{self.total}] {r.status:<13} {r.id}  {what} ({r.seconds:.2f}s)"
        if self.verbosity > 0:
            build = ("" if r.build_cached is None else
                     f", build {'cached' if r.build_cached else 'compiled'} {r.build_seconds:.2f}s")
            line += f"\n{' ' * (2 * self.width + 4)}front end {r.front_end_seconds:.2f}s{build}, run {r.run_seconds:.3f}s"
        self.say(line)

    def finish(self, results: list[Result], order: list[str], elapsed: float, not_run: int,
               stopped_early: bool, interrupted: bool) -> None:
        failed = [r for r in results if not r.passed]
        rank = {id_: i for i, id_ in enumerate(order)}
        failed.sort(key=lambda r: rank.get(r.id, 0))
        stream = sys.stderr if self.json else self.out
        write = (lambda s: (stream.write(s + "\n"), stream.flush()))
        if failed and not self.json:
            write("")
            write(" FAILURES ".center(78, "="))
            for r in failed:
                write(f" {r.id} [{r.status}] ".center(78, "_"))
                write(r.report or f"{r.status}: {r.message}")
                write("")
        builds = [r for r in results if r.build_cached is not None]
        if builds and self.verbosity >= 0:
            compiled = sum(not r.build_cached for r in builds)
            write(f"C builds: {compiled} compiled, {len(builds) - compiled} from the cache")
        if interrupted:
            write(f"interrupted: {not_run} not run")
        elif stopped_early and not_run:
            write(f"stopped after the first failure (-x): {not_run} not run")
        write(summary_line(results, elapsed))


def summary_line(results: list[Result], elapsed: float | None = None) -> str:
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = []
    for status, one, many in _SUMMARY:
        n = counts.get(status, 0)
        if n or status in (PASS, FAIL):
            parts.append(f"{n} {one if n == 1 else many}")
    text = ", ".join(parts)
    return text if elapsed is None else f"{text} in {elapsed:.2f}s"


def write_junit(path: str, results: list[Result], order: list[str], elapsed: float) -> None:
    rank = {id_: i for i, id_ in enumerate(order)}
    results = sorted(results, key=lambda r: rank.get(r.id, 0))
    failures = sum(r.status in (FAIL, RUNTIME_ERROR, CRASH, TIMEOUT) for r in results)
    errors = sum(r.status in (COMPILE_ERROR, ERROR) for r in results)
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name="nxc", tests=str(len(results)), failures=str(failures),
                          errors=str(errors), skipped="0", time=f"{elapsed:.3f}")
    for r in results:
        stem = os.path.splitext(r.path)[0].replace(os.sep, ".").lstrip(".")
        case = ET.SubElement(suite, "testcase", classname=stem, name=r.id, file=r.path,
                             time=f"{r.seconds:.3f}")
        if r.line:
            case.set("line", str(r.line))
        if r.passed:
            continue
        props = ET.SubElement(case, "properties")       # before <failure>, as the JUnit schema orders them
        ET.SubElement(props, "property", name="backend", value=r.backend)
        if r.value is not None:
            ET.SubElement(props, "property", name="value", value=str(r.value))
        for text, value in r.captured:
            ET.SubElement(props, "property", name=f"captured: {text}", value=str(value))
        tag = "error" if r.status in (COMPILE_ERROR, ERROR) else "failure"
        el = ET.SubElement(case, tag, message=f"{r.status}: {r.message}", type=r.status)
        el.text = r.report
    ET.indent(suites)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


# ------------------------------------------------------------------ the command
def options_from_args(args) -> Options:
    backend = getattr(args, "backend", "c")
    return Options(backends=("c", "py") if backend == "both" else (backend,),
                   timeout=getattr(args, "timeout", 60.0), opt=getattr(args, "opt", "2"),
                   use_cache=not getattr(args, "no_cache", False), include=list(getattr(args, "include", []) or []),
                   soft_f32=getattr(args, "soft_f32", False))


def main(args) -> int:
    try:
        return _main(args)
    except UsageError as exc:
        print(f"nxc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_FAIL


def _main(args) -> int:
    options = options_from_args(args)
    if options.timeout <= 0:
        raise UsageError("--timeout must be positive")
    jobs = args.jobs if args.jobs is not None else cpu_count()
    if jobs < 0:
        raise UsageError("-j must be 0 (one per CPU) or more")
    jobs = jobs or cpu_count()
    if "py" in options.backends and not py_backend_available():
        raise UsageError("the Python backend (nxc.backend.py.run) is not available in this installation; use --backend c")
    verbosity = (args.verbose or 0) - (args.quiet or 0)

    items = collect(args.paths or ["."], options.backends, args.keyword)
    if args.list:
        for it in items:
            print(it.id if verbosity < 0 else f"{it.id}  ({it.kind})")
        if verbosity >= 0:
            print(f"{len(items)} item{'s' if len(items) != 1 else ''} collected")
        return EXIT_OK if items else EXIT_NO_TESTS
    if not items:
        print("nxc test: no .nx modules found" + (f" matching -k '{args.keyword}'" if args.keyword else ""),
              file=sys.stderr)
        return EXIT_NO_TESTS

    units = group_units(items)
    workers = max(1, min(jobs, len(units)))
    reporter = Reporter(verbosity, args.json, len(items))
    reporter.header(items, workers, options)
    results: list[Result] = []
    stop = {"early": False}

    def on_results(batch: list[Result]) -> bool:
        for r in batch:
            results.append(r)
            reporter.result(r)
        if args.exitfirst and any(not r.passed for r in batch):
            stop["early"] = True
            return False
        return True

    start = time.perf_counter()
    interrupted = False
    _warm_up()
    try:
        if workers == 1:
            for unit in units:
                if not on_results(run_unit(unit, options)):
                    break
        else:
            # Biggest modules first: their front ends are the long poles.
            ordered = sorted(units, key=lambda u: -_size(u.path))
            pool = _Pool(workers, options)
            finished = False
            try:
                pool.run(ordered, on_results)
                finished = not stop["early"]
            finally:
                pool.close(kill=not finished)     # -x, Ctrl-C, a closed stdout: stop what still runs
    except KeyboardInterrupt:
        interrupted = True
    elapsed = time.perf_counter() - start
    order = [it.id for it in items]
    reporter.finish(results, order, elapsed, len(items) - len(results), stop["early"], interrupted)
    if args.junit_xml:
        write_junit(args.junit_xml, results, order, elapsed)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if results and all(r.passed for r in results) and len(results) == len(items) else EXIT_FAIL


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
