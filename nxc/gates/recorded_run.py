"""What a worker of `nxc test` runs for each unit: the planner's decision, then that path.

The runner decided the unit is not cached (nxc/incremental/plan.py,
plan_units; its reason travels with the unit). Here the worker asks the
planner for the rest of the decision, before any backend builds anything
(plan_in_worker): RECORDED when every module of the closure has a clean
verdict under its current key and the backend plans the link from its
records (Backend.plan_from_records), else FULL (check_unit, then the
backend's emit -> build -> load: nxc/gates/execute.py).

On the recorded path the gate is linked (unless its library is cached) and
run in a child, as run_gate does (forked by the worker's gate host when it
has one, nxc/gates/host.py), all through the Backend interface
(link_recorded). A PASS is reported from here, and so are a TIMEOUT and a
MEMORY-LIMIT (their reports need no program: the .nx stack of a checked
build comes from the shadow-stack page and the site tables kept beside the
objects; running such a gate twice would double the wait). Any other end (a
failing check, a fault, a crash) needs the checked program to be explained:
the unit then takes the full path, which runs the gate again, and its
result's plan_reason says so.
"""
from __future__ import annotations

import dataclasses
import mmap
import time

from nxc.gates.collect import Unit
from nxc.gates.execute import BUILT, Options, Result, fill_result, record, record_unit_passes, run_unit
from nxc.gates.protocol import Outcome, Status
from nxc.incremental import plan


def run_unit_planned(unit: Unit, options: Options, decision: plan.Decision | None = None) -> list[Result]:
    """The unit's results on the path the planner decides (`decision`, when the
    caller asked it already: nxc/gates/batch.py), each saying which and why."""
    from nxc.backend.registry import backend_for
    backend = backend_for(unit.items[0].backend, checked=options.checked)
    if decision is None:
        decision = decide(unit, options, backend)
    if decision.path == plan.RECORDED:
        if unit.run_later:          # nothing to build: it runs in the second round (nxc/gates/command.py)
            return built(unit)
        results = _run_recorded(unit, options, backend, decision)
        if results is not None:
            return _planned(results, decision.path, "; ".join(filter(None, [decision.reason, unit.plan_reason])))
        decision = plan.Decision(plan.FULL, "linked from records, the gate did not pass: run again on the "
                                            "full path, whose checked program explains it")
    reason = "; ".join(filter(None, [unit.plan_reason, decision.reason]))
    return _planned(run_unit(unit, options), plan.FULL, reason)


def built(unit: Unit) -> list[Result]:
    """A first round's result of a unit whose objects and records are built:
    its gate runs in the second round (execute.BUILT, nxc/gates/command.py)."""
    item = unit.items[0]
    return [Result(item.id, item.display, "gate", item.backend, Status.PASS, plan=BUILT)]


def decide(unit: Unit, options: Options, backend) -> plan.Decision:
    """The planner's decision for `unit` in its worker (plan.plan_in_worker)."""
    try:
        return plan.plan_in_worker(unit, options, backend)
    except Exception as exc:  # noqa: BLE001 - a bug in the planner: the full path decides, and it is said
        return plan.Decision(plan.FULL, f"internal error in the planner: {type(exc).__name__}: {exc}")


def _planned(results: list[Result], path: str, reason: str) -> list[Result]:
    for r in results:
        if r.plan != BUILT:         # a first round's: its plan says so (command.py holds it)
            r.plan, r.plan_reason = path, reason
    return results


def _run_recorded(unit: Unit, options: Options, backend, decision) -> list[Result] | None:
    """The unit's results on the recorded path; None: it did not pass (the full path explains it)."""
    from nxc.incremental import inputs, keys
    from nxc.incremental import results as results_cache

    start = time.perf_counter()
    link, indexed = decision.link, unit.indexed
    item = unit.items[0]
    r = Result(item.id, item.display, "gate", item.backend, Status.PASS, warnings=decision.warnings,
               modules=sorted(indexed))
    r.front_end_seconds = time.perf_counter() - start
    key = keys.artefact_result_key(backend.recorded_artefact_key(link), "gate", options, item.backend)
    found = results_cache.passed_before(key) if options.read_results else None
    if found is not None:
        r.cached, r.inputs = True, found
    else:
        gate = backend.link_recorded(link, checked=options.checked, opt=options.opt)
        r.build_seconds, r.build_cached, r.relinked = gate.build_seconds, not gate.relinked, gate.relinked
        r.host = gate.host
        t0 = time.perf_counter()
        started = time.time_ns()
        ended, stack = _run_child(gate, options)
        r.run_seconds = time.perf_counter() - t0
        if ended.kind in ("timeout", "memory"):
            if ended.kind == "timeout":
                outcome = Outcome(Status.TIMEOUT, message="the gate did not finish in time", stack=stack)
            else:
                outcome = Outcome(Status.MEMORY_LIMIT, message=f"the gate used {ended.message}")
            fill_result(dataclasses.replace(outcome, seconds=r.run_seconds, build_seconds=r.build_seconds,
                                            build_cached=r.build_cached, relinked=r.relinked, host=r.host,
                                            output=ended.output or "", checked=options.checked),
                        None, options, r)
            r.seconds = time.perf_counter() - start
            return [r]
        passed, files = gate.passed(ended.value) if ended.kind == "ok" else (False, None)
        if not passed:
            return None
        r.value, r.output = 0, ended.output or ""
        r.inputs = inputs.record(files, started)
        record(key, options, r)
    if options.record_results:
        record_unit_passes({p: e["digest"] for p, e in indexed.items()}, "gate", decision.warnings, [r], options)
    r.seconds = time.perf_counter() - start
    return [r]


def _run_child(gate, options: Options):
    """(Ended, the .nx stack after a timeout) of the gate run by this worker's
    gate host, or in a child forked from here when there is none."""
    from nxc.gates.host import PAGE_BYTES
    from nxc.gates.isolate import run_isolated
    from nxc.gates.run import run_job_in_host
    hosted = run_job_in_host(gate.job, options.timeout, True, options.memory_limit)
    if hosted is not None:
        ended, page = hosted
        return ended, gate.stack_of(page) if ended.kind == "timeout" else ()
    # Checked C mirrors its .nx stack into a page shared with us, read if
    # the child is stopped (CLoaded.share_stack does the same).
    page = mmap.mmap(-1, PAGE_BYTES) if options.checked else None
    try:
        ended = run_isolated(lambda: gate.run_child(page), options.timeout, capture=True,
                             memory_limit=options.memory_limit)
        return ended, gate.stack_of(page) if ended.kind == "timeout" else ()
    finally:
        if page is not None:
            page.close()
