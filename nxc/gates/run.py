"""Running one program's gate: prepare it on a backend, run `main` in a child.

The module is built and loaded here, then the gate runs in a forked child
(nxc/gates/isolate.py): a segfault, an abort or a hang in nx code takes down
only the child, and is its outcome (CRASH with the signal's name, TIMEOUT).
The child sends back a `protocol.Outcome` built by the backend's
`run_gate`; the parent adds the timings and the checker's record of the
`return` that fired. In `nxc test`'s workers a C gate's child is forked by
the worker's gate host instead (nxc/gates/host.py: a small process, so the
fork costs little), and sends back the runtime's numbers, which
CLoaded.outcome_of words here into the same Outcome.
"""
from __future__ import annotations

import dataclasses
import sys
import time

from nxc.backend.registry import backend_for
from nxc.gates import host as gate_host
from nxc.gates.isolate import run_isolated
from nxc.gates.protocol import Outcome, Status


def run_gate(program, backend: str = "c", opt: str = "2", use_cache: bool = True,
             timeout: float | None = 60.0, verbose: bool = False, emitted=None, checked: bool = True,
             capture: bool = False, memory_limit: int | None = None, threads: int = 1,
             checked_again=None) -> Outcome:
    """The outcome of the program's gate on one backend.

    emitted: code emitted already (for a test of an emitter variant).
    checked=False: C without memory checks and .nx stack; if such a gate
    crashes, it is run again checked to say where (the outcome stays CRASH,
    with that run's finding in `detail` and its `stack`).
    capture: keep the gate's stdout/stderr in `Outcome.output` (nxc test).
    memory_limit: bytes of resident memory before it is stopped (MEMORY-LIMIT).
    threads: how many threads sys_parallel_for may use (never changes a result).
    checked_again: () -> (program, emitted) of the checked build of a gate
    worker's partial program (nxc/gates/execute.py, check_unit), if it crashes."""
    prepared = backend_for(backend, checked=checked).prepare(program, purpose="gate", opt=opt,
                                                             use_cache=use_cache, emitted=emitted)
    if verbose and prepared.build_cached is not None:
        what = "cached build" if prepared.build_cached else "C build"
        print(f"nxc: emit {1000 * prepared.emit_seconds:.1f} ms, "
              f"{what} {1000 * prepared.build_seconds:.1f} ms", file=sys.stderr)
    loaded = prepared.loaded
    loaded.set_threads(threads)
    start = time.perf_counter()
    ended, stack_after_death = _run_in_host(loaded, timeout, capture, memory_limit)
    if ended is None:       # no host here (or it failed): the child is forked from this process
        loaded.share_stack()
        ended = run_isolated(loaded.run_gate, timeout, capture=capture, memory_limit=memory_limit,
                             interrupt=loaded.interrupt_on_timeout)
        stack_after_death = loaded.stack_after_death
    seconds = time.perf_counter() - start
    if ended.kind == "ok":
        outcome = ended.value
    elif ended.kind == "timeout":
        outcome = Outcome(Status.TIMEOUT, message="the gate did not finish in time", stack=stack_after_death())
    elif ended.kind == "memory":
        outcome = Outcome(Status.MEMORY_LIMIT, message=f"the gate used {ended.message}")
    elif ended.kind == "crash":
        outcome = Outcome(Status.CRASH, message=ended.message, stack=stack_after_death())
        if backend == "c" and not checked:
            # a gate worker's partial program: its checked link asks for bodies of its own
            outcome = locate_crash(program, outcome, opt, use_cache, timeout,
                                   None if checked_again is None else checked_again())
    else:       # run_gate raised: nx code cannot make it, so nxc failed; reported as before
        outcome = Outcome(Status.RUNTIME_ERROR, message=ended.message)
    loaded.stack_after_death()          # the shared page, if still open, is closed
    gate_return = None
    if outcome.gate_site is not None and 0 <= outcome.gate_site < len(program.gate_returns):
        gate_return = program.gate_returns[outcome.gate_site]
    built = prepared.built
    return dataclasses.replace(outcome, backend=backend, seconds=seconds, gate_return=gate_return,
                               emit_seconds=prepared.emit_seconds,
                               build_seconds=getattr(built, "seconds", prepared.build_seconds),
                               build_cached=prepared.build_cached, output=ended.output,
                               recompiled=tuple(getattr(built, "recompiled", ())),
                               relinked=getattr(built, "relinked", None), host=getattr(built, "host", None),
                               checked=getattr(prepared.emitted, "checked", None) if backend == "c" else None)


def _run_in_host(loaded, timeout, capture, memory_limit):
    """(Ended with the Outcome as its value, how to read the stack after a
    crash or timeout) of the gate run by this process's gate host
    (nxc/gates/host.py); (None, None) when there is no host, it failed, or
    its child could not even open the library: then the gate runs forked
    from here, which reports whatever is wrong exactly as before."""
    job = getattr(loaded, "gate_job", lambda: None)()
    hosted = run_job_in_host(job, timeout, capture, memory_limit, interrupt=loaded.interrupt_on_timeout)
    if hosted is None:
        return None, None
    ended, page = hosted
    if ended.kind == "ok":
        ended = dataclasses.replace(ended, value=loaded.outcome_of(ended.value))
    return ended, lambda: loaded.stack_in(page)


def run_job_in_host(job, timeout, capture: bool, memory_limit, interrupt: bool = False):
    """(Ended whose value is nxc/backend/c/gate_child.py's tuple, the shared
    stack page) of a C gate job (CLoaded.gate_job) run by this process's gate
    host; None when there is none, it failed, or its child could not open the
    library (the caller then runs the gate forked from itself)."""
    host = gate_host.current() if job is not None else None
    if host is None:
        return None
    try:
        ended = host.run(job, timeout, capture, memory_limit, interrupt=interrupt)
    except gate_host.HostGone:
        return None
    if ended.kind == "error" or (ended.kind == "ok" and ended.value[0] == "page-too-small"):
        return None
    return ended, host.page


def locate_crash(program, outcome: Outcome, opt: str, use_cache: bool, timeout: float | None,
                 checked=None) -> Outcome:
    """An unchecked build crashed: run the gate again checked (`checked`: the
    final program and the emitted code of that build, when a gate worker
    planned them), and say what that run found."""
    emitted = None
    if checked is not None:
        program, emitted = checked
    again = run_gate(program, "c", opt, use_cache, timeout, checked=True, emitted=emitted)
    prefix = "the checked build (run again to locate the crash)"
    if again.status == Status.RUNTIME_ERROR:
        return dataclasses.replace(outcome, detail=f"{prefix} stopped at:\n{again.message}", stack=again.stack,
                                   site=again.site)
    if again.status == Status.CRASH:
        return dataclasses.replace(outcome, detail=f"{prefix} crashed too", stack=again.stack)
    value = "" if again.value is None else f" {again.value}"
    return dataclasses.replace(outcome, detail=f"{prefix} did not crash: {again.status}{value}")


def execute(program, backend: str = "c", opt: str = "2", use_cache: bool = True,
            timeout: float | None = 60.0, verbose: bool = False, checked: bool = True,
            threads: int = 1) -> list[Outcome]:
    """Run the program's gate on one backend, or on both ("both")."""
    outcomes = []
    for b in (("c", "py") if backend == "both" else (backend,)):
        outcomes.append(run_gate(program, b, opt, use_cache, timeout, verbose, checked=checked, threads=threads))
        if verbose:
            print(f"nxc: gate ({b}) {1000 * outcomes[-1].seconds:.1f} ms", file=sys.stderr)
    return outcomes
