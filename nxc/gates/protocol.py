"""The gate protocol: what a gate run reports, as data.

A gate runs in a forked child (nxc/gates/isolate.py). The child builds an
`Outcome` itself, where the loaded module and its tables are at hand, and
sends it to the parent pickled; nothing is formatted into a string to be
parsed back. Every front door (`nxc run`, `nxc test`, the pytest plugin,
JSON, JUnit) speaks the one `Status` vocabulary below, and the exit codes of
the command line are defined here once.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Status(str, enum.Enum):
    """A result's verdict; the value is the word users see (and JSON carries).

    A str subclass so that `status == "PASS"` holds and JSON and f-strings
    show the bare word on every supported Python (3.10 has no StrEnum).
    """
    PASS = "PASS"
    FAIL = "FAIL"                       # main returned non-zero
    RUNTIME_ERROR = "RUNTIME-ERROR"     # nx code stopped at a run-time check
    CRASH = "CRASH"                     # the gate's process died (a signal)
    TIMEOUT = "TIMEOUT"
    MEMORY_LIMIT = "MEMORY-LIMIT"       # the gate's process grew past --memory-limit (stopped, or seen at its peak)
    COMPILE_ERROR = "COMPILE-ERROR"     # the .nx module does not compile
    NO_GATE = "NO-GATE"                 # no `func main() -> i64` to run
    INTERNAL_ERROR = "ERROR"            # nxc itself failed (a bug, a missing backend)

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


# Exit statuses of the `nxc` command line: one table for every command
# (docs/errors.md#exit-statuses). A failing gate (1; its value is printed) is
# told from each tool outcome, after the shell's conventions where there is
# one (124 as timeout(1), 128+N for signal N, 130 for Ctrl-C). Nothing to run
# is a usage mistake (2), not pytest's 5, which here means the backends disagree.
RUN_PASS, RUN_FAIL, RUN_USAGE, RUN_COMPILE_ERROR, RUN_RUNTIME_ERROR = 0, 1, 2, 3, 4
RUN_MISMATCH, RUN_INTERNAL, RUN_TIMEOUT, RUN_SIGNAL_BASE = 5, 70, 124, 128
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_COMPILE_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_NO_TESTS = EXIT_USAGE

# The longest timeout a gate may be given (11.6 days): 1e20 s overflowed
# select()'s time_t, a traceback instead of a message.
MAX_TIMEOUT = 1_000_000


@dataclass(frozen=True)
class Site:
    """A place in .nx source: absolute file path, 1-based line and column, enclosing function."""
    file: str
    line: int
    column: int
    function: str


@dataclass(frozen=True)
class Outcome:
    """One gate run on one backend.

    status/value/site/stack/message/captured come from the child; the
    parent adds the timings and `gate_return` (the checker's record of the
    `return` that fired, which stays out of the pipe: it holds AST nodes).
    """
    status: Status
    value: int | None = None            # what main returned (PASS, FAIL)
    site: Site | None = None            # FAIL: the return that fired; RUNTIME-ERROR: the faulting expression
    stack: tuple[Site, ...] = ()        # innermost first, `site` included when filled; empty where unknown
    message: str = ""                   # one line; RUNTIME-ERROR: `path:line:col: runtime error: what`
    captured: list = field(default_factory=list)    # [(operand text, value)] of the fired return's guard
    gate_site: int | None = None        # index into program.gate_returns (FAIL, PASS)
    backend: str = "c"
    seconds: float = 0.0                # running the gate (the child's whole life)
    emit_seconds: float = 0.0
    build_seconds: float = 0.0
    build_cached: bool | None = None    # C backend: True when the build came from the cache
    checked: bool | None = None         # C backend: built with the memory checks and the .nx stack
    # CRASH of an unchecked build: what running the gate again checked found (the
    # stack is then that run's); TIMEOUT: empty (the stack says where it was).
    detail: str = ""
    gate_return: object = field(default=None, compare=False)
    output: str = ""                    # what the gate wrote to stdout/stderr, when captured (nxc test)
    # C backend, separately compiled gate: the modules whose objects this
    # build compiled, and whether it linked the library (False: a cached link).
    recompiled: tuple = ()
    relinked: bool | None = None
    # The link key of the library it ran from when that was linked for
    # another gate that imports it, or once for several gates of a batch
    # (nxc/backend/c/hosts.py, nxc/backend/c/batch.py); None: its own.
    host: str | None = None
    # The files the gate asked sys_file_open for, in order: ((path, opened), ...);
    # None: not known (its pass is then not cached: nxc/incremental/inputs.py).
    files: tuple | None = None

    @property
    def passed(self) -> bool:
        return self.status == Status.PASS
