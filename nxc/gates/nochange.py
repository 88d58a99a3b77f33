"""The no-change fast path of `nxc test`: the planner's CACHED units reported before any worker starts.

Before any worker starts, the planner (nxc/incremental/plan.py, plan_units)
decides each unit from the module index (a stat per module file when
nothing changed) and the run's configuration (keys.unit_key). A unit all of
whose items have a recorded pass under that key is reported `PASS (cached)`
here, with the warnings recorded with the pass; nothing of it is read,
parsed, checked, emitted or built. Every other unit goes to the workers
with the reason it was not cached (Unit.plan_reason), which the worker's
own decision adds to (nxc/gates/recorded_run.py). `--rerun` and
`--no-cache` (options.read_results false) send every unit.
"""
from __future__ import annotations

from nxc.gates.collect import Unit
from nxc.gates.execute import Options, Result
from nxc.gates.protocol import Status
from nxc.incremental import plan


def split_cached(units: list[Unit], options: Options, ahead=None, index=None) -> tuple[dict[str, list[Result]],
                                                                                     list[Unit], dict, object, object]:
    """({unit path: its results} of the units passed before, the units still to run, counters,
    the module index the planner read, for the notes of the units run: plan.note_checked,
    and the units' pack of passes, for plan.save_pack at the end of the run).
    ahead: how the planner reads stale modules in other processes (plan.plan_units);
    index: the module index if the run loaded it already."""
    decisions, stats, index, pack = plan.plan_units(units, options, ahead, index)
    cached, rest = {}, []
    for unit in units:
        decision = decisions[unit.path]
        if decision.path == plan.CACHED:
            cached[unit.path] = _cached_results(unit, decision)
        else:
            unit.plan_reason = decision.reason
            rest.append(unit)
    return cached, rest, stats, index, pack


def _cached_results(unit: Unit, decision: plan.Decision) -> list[Result]:
    results = []
    for n, (item, recorded) in enumerate(zip(unit.items, decision.passes)):
        item.kind = recorded["kind"]
        results.append(Result(item.id, item.display, item.kind, item.backend, Status.PASS, cached=True,
                              message="compiles" if item.kind != "gate" else "",
                              warnings=list(recorded["warnings"]) if n == 0 else [],
                              modules=list(decision.modules), plan=decision.path, plan_reason=decision.reason))
    return results
