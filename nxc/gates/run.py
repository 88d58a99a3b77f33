"""Running one program's gate: prepare it on a backend, run `main` in a child.

The module is built and loaded here, then the gate runs in a forked child
(nxc/gates/isolate.py): a segfault, an abort or a hang in nx code takes down
only the child, and is its outcome (CRASH with the signal's name, TIMEOUT).
The child sends back a `protocol.Outcome` built by the backend's
`run_gate`; the parent adds the timings and the checker's record of the
`return` that fired.
"""
from __future__ import annotations

import dataclasses
import sys
import time

from nxc.backend.registry import backend_for
from nxc.gates.isolate import run_isolated
from nxc.gates.protocol import Outcome, Status


def run_gate(program, backend: str = "c", opt: str = "2", use_cache: bool = True,
             timeout: float | None = 60.0, verbose: bool = False, emitted=None,
             capture: bool = False, memory_limit: int | None = None) -> Outcome:
    """The outcome of the program's gate on one backend.

    emitted: code emitted already (for a test of an emitter variant).
    capture: keep the gate's stdout/stderr in `Outcome.output` (nxc test).
    memory_limit: bytes of resident memory before it is stopped (MEMORY-LIMIT)."""
    prepared = backend_for(backend).prepare(program, purpose="gate", opt=opt, use_cache=use_cache, emitted=emitted)
    if verbose and prepared.build_cached is not None:
        what = "cached build" if prepared.build_cached else "C build"
        print(f"nxc: emit {1000 * prepared.emit_seconds:.1f} ms, "
              f"{what} {1000 * prepared.build_seconds:.1f} ms", file=sys.stderr)
    start = time.perf_counter()
    ended = run_isolated(prepared.loaded.run_gate, timeout, capture=capture, memory_limit=memory_limit)
    seconds = time.perf_counter() - start
    if ended.kind == "ok":
        outcome = ended.value
    elif ended.kind == "timeout":
        outcome = Outcome(Status.TIMEOUT, message="the gate did not finish in time")
    elif ended.kind == "memory":
        outcome = Outcome(Status.MEMORY_LIMIT, message=f"the gate used {ended.message} of memory")
    elif ended.kind == "crash":
        outcome = Outcome(Status.CRASH, message=ended.message)
    else:       # run_gate raised: nx code cannot make it, so nxc failed; reported as before
        outcome = Outcome(Status.RUNTIME_ERROR, message=ended.message)
    gate_return = None
    if outcome.gate_site is not None and 0 <= outcome.gate_site < len(program.gate_returns):
        gate_return = program.gate_returns[outcome.gate_site]
    built = prepared.built
    return dataclasses.replace(outcome, backend=backend, seconds=seconds, gate_return=gate_return,
                               emit_seconds=prepared.emit_seconds,
                               build_seconds=getattr(built, "seconds", prepared.build_seconds),
                               build_cached=prepared.build_cached, output=ended.output)


def execute(program, backend: str = "c", opt: str = "2", use_cache: bool = True,
            timeout: float | None = 60.0, verbose: bool = False) -> list[Outcome]:
    """Run the program's gate on one backend, or on both ("both")."""
    outcomes = []
    for b in (("c", "py") if backend == "both" else (backend,)):
        outcomes.append(run_gate(program, b, opt, use_cache, timeout, verbose))
        if verbose:
            print(f"nxc: gate ({b}) {1000 * outcomes[-1].seconds:.1f} ms", file=sys.stderr)
    return outcomes
