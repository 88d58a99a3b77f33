"""The no-change fast path of `nxc test`: recorded passes found from the module index alone.

Before any worker starts, the runner computes each unit's key from the
module index (nxc/index.py: a stat per module file when nothing changed)
and the run's configuration (result_key.unit_key). A unit all of whose
items have a recorded pass under that key is reported `PASS (cached)` here,
with the warnings recorded with the pass; nothing of it is read, parsed,
checked, emitted or built. Every other unit goes to the workers, which take
today's path (and record their passes under the same key).

Any doubt sends a unit to the workers: a file that cannot be read or
parsed, an import that does not resolve, a configuration that cannot be
identified (no compiler), an unexpected error here. `--rerun` and
`--no-cache` (options.read_results false) skip this step.
"""
from __future__ import annotations

import os

from nxc.gates import result_key, results_cache
from nxc.gates.collect import Unit
from nxc.gates.execute import Options, Result
from nxc.gates.protocol import Status


def split_cached(units: list[Unit], options: Options) -> tuple[dict[str, list[Result]], list[Unit], dict]:
    """({unit path: its results} of the units passed before, the units still to run, counters)."""
    if not options.read_results:
        return {}, units, {}
    from nxc.index import ModuleIndex
    try:
        index = ModuleIndex.load()
        cached, rest = {}, []
        for unit in units:
            results = _cached_unit(unit, options, index)
            if results is None:
                rest.append(unit)
            else:
                cached[unit.path] = results
        index.save()
    except Exception:  # noqa: BLE001 - any doubt: the workers take the full path
        return {}, units, {}
    stats = {"cached_units": len(units) - len(rest), "sent_units": len(rest), **index.counters}
    return cached, rest, stats


def _cached_unit(unit: Unit, options: Options, index) -> list[Result] | None:
    from nxc.check.program import SOFT_F32_MODULE
    real = os.path.realpath(unit.path)
    extra: tuple[str, ...] = ()
    if options.soft_f32:        # the front end adds nx_f32_soft.nx as if the root imported it
        found = index.resolve(SOFT_F32_MODULE, real, options.include)
        if found is None:
            return None
        extra = (found,)
    closure = index.closure(real, options.include, extra)
    if closure is None:
        return None
    digests = {path: entry["digest"] for path, entry in closure.items()}
    results = []
    for n, item in enumerate(unit.items):
        try:
            key = result_key.unit_key(digests, item.backend, options)
        except Exception:  # noqa: BLE001 - no compiler, ...: the worker reports it
            return None
        recorded = results_cache.unit_passed_before(key)
        if recorded is None:
            if not extra:       # sent to a worker: what its recorded path needs (recorded_run.py)
                unit.indexed = {path: {"digest": entry["digest"], "interface": entry.get("interface"),
                                       "imports": [index.resolve(name, path, options.include)
                                                   for name in entry["imports"]]}
                                for path, entry in closure.items()}
            return None
        item.kind = recorded["kind"]
        results.append(Result(item.id, item.display, item.kind, item.backend, Status.PASS, cached=True,
                              message="compiles" if item.kind != "gate" else "",
                              warnings=list(recorded["warnings"]) if n == 0 else [],
                              modules=sorted(closure)))
    return results
