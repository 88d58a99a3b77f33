"""The recorded path of a gate's worker: link and run a gate without its front end.

A body edit of a module that hundreds of gates import leaves each of them
with the same root, the same interfaces, the same verdicts and the same
link plan; only the edited module's object is new. The full path (check_unit,
then LinkedC) would still parse and check each gate's closure and emit its
main before finding that. Here the worker takes, for a unit the runner sent
with the module index's view of its closure (Unit.indexed: source digests,
checker interface digests, resolved imports):

1. the verdict of every module of the closure under its current key
   (nxc/check/summary.py, verdict_key from the index's interface digests):
   each must say "checked clean" and give the module's warnings; then the
   full path's check would find nothing new either. A module whose
   interface digest the runner's index does not have yet (edited this
   run, checked by another worker since) is looked up in the index on disk;
2. the link, from records (nxc/backend/c/recorded.py): object keys,
   objects, the binding (site bases, the root's main), the link key;
3. the result cache under the same key as the full path's; else link (if
   the library is not cached) and run `main` in a child, as run_gate does
   (forked by the worker's gate host when it has one, nxc/gates/host.py).

A PASS is reported from here, and so are a TIMEOUT and a MEMORY-LIMIT (their
reports need no program: the .nx stack of a checked build comes from the
shadow-stack page and the site tables kept beside the objects; running such
a gate twice would double the wait). Anything else (a record or verdict
missing, a failing check, a fault, a crash, anything unexpected) sends the
unit down the full path, which explains it in full (its report needs the
checked program) and writes the records that were missing; such a gate
runs twice. --backend py/both, --soft-f32,
-W error, --no-cache and --rerun always take the full path.
"""
from __future__ import annotations

import dataclasses
import mmap
import os
import time

from nxc.gates.collect import Unit
from nxc.gates.execute import Options, Result, fill_result, record, record_unit_passes, run_unit
from nxc.gates.protocol import Outcome, Status


def run_recorded(unit: Unit, options: Options) -> list[Result] | None:
    """The unit's results when it passes on the recorded path; None: take the full path."""
    if (unit.indexed is None or options.soft_f32 or options.warnings_as_errors or not options.use_cache
            or len(unit.items) != 1 or unit.items[0].backend != "c"):
        return None
    try:
        return _run(unit, options)
    except Exception:  # noqa: BLE001 - any doubt: the full path decides, and says why
        return None


def _run(unit: Unit, options: Options) -> list[Result] | None:
    from nxc.backend.c.closure import closure_orders
    from nxc.backend.c.faults import read_mirror, stack_from
    from nxc.backend.c import objects
    from nxc.backend.c.emit import FAULT_INFO_WORDS
    from nxc.backend.c import gate_child
    from nxc.backend.c.backend import link_artefact
    from nxc.backend.c.gate_child import GateJob
    from nxc.backend.c.recorded import plan_from_records
    from nxc.cache import present, stamped
    from nxc.gates import inputs, result_key, results_cache
    from nxc.gates.run import run_job_in_host

    start = time.perf_counter()
    root = os.path.realpath(unit.path)
    indexed = unit.indexed
    if root not in indexed:
        return None
    imports = {p: e["imports"] for p, e in indexed.items()}
    orders = closure_orders(root, imports)
    if orders is None or set(orders) != set(indexed):
        return None
    warnings_of = verdict_warnings(indexed, orders)
    if warnings_of is None:
        return None
    digests = {p: e["digest"] for p, e in indexed.items()}
    link = plan_from_records(root, digests, imports, options.checked, options.opt, orders=orders)
    if link is None:
        return None
    warnings = [w for p in link.modules for w in warnings_of[p]]
    item = unit.items[0]
    r = Result(item.id, item.display, "gate", "c", Status.PASS, warnings=warnings, modules=sorted(indexed))
    r.front_end_seconds = time.perf_counter() - start
    key = result_key.artefact_result_key(link_artefact(link.key), "gate", options, "c")
    found = results_cache.passed_before(key) if options.read_results else None
    if found is not None:
        r.cached, r.inputs = True, found
    else:
        t0 = time.perf_counter()
        target, _ = objects.library_path(link.key)
        relinked = not (present(target) and stamped(target))
        if relinked:
            objects.link_library(target, link.objects, options.opt)
        r.build_seconds, r.build_cached, r.relinked = time.perf_counter() - t0, not relinked, relinked
        t0 = time.perf_counter()
        started = time.time_ns()
        # In nxc test's workers the gate host forks the child (nxc/gates/host.py):
        # the library is opened and bound there, not here.
        job = GateJob(target, tuple(link.binding.bases), link.binding.root, options.checked, 0, FAULT_INFO_WORDS)
        hosted = run_job_in_host(job, options.timeout, True, options.memory_limit)
        if hosted is not None:
            ended, page = hosted
            stack = stack_from(read_mirror(page), link.sites()) if options.checked and ended.kind == "timeout" else ()
        else:
            ended, stack = _run_forked(job, link, options)
        r.run_seconds = time.perf_counter() - t0
        if ended.kind in ("timeout", "memory"):
            if ended.kind == "timeout":
                outcome = Outcome(Status.TIMEOUT, message="the gate did not finish in time", stack=stack)
            else:
                outcome = Outcome(Status.MEMORY_LIMIT, message=f"the gate used {ended.message} of memory")
            fill_result(dataclasses.replace(outcome, seconds=r.run_seconds, build_seconds=r.build_seconds,
                                            build_cached=r.build_cached, relinked=r.relinked,
                                            output=ended.output or "", checked=options.checked),
                        None, options, r)
            r.seconds = time.perf_counter() - start
            return [r]
        if ended.kind != "ok" or ended.value[:2] != ("returned", 0):
            return None                 # the full path runs it again and explains what happened
        r.value, r.output = 0, ended.output or ""
        r.inputs = inputs.record(gate_child.parse_log(ended.value[5]), started)
        record(key, options, r)
    if options.record_results:
        record_unit_passes(digests, "gate", warnings, [r], options)
    r.seconds = time.perf_counter() - start
    return [r]


def _run_forked(job, link, options: Options):
    """(Ended, stack after a timeout) of the gate run in a child forked from
    here, which does what a gate host's child does (gate_child.run)."""
    from nxc.backend.c import gate_child
    from nxc.backend.c.faults import read_mirror, stack_from
    from nxc.gates.host import PAGE_BYTES
    from nxc.gates.isolate import run_isolated
    # Checked C mirrors its .nx stack into a page shared with us, read if
    # the child is stopped (CLoaded.share_stack does the same).
    page = mmap.mmap(-1, PAGE_BYTES) if job.checked else None
    try:
        ended = run_isolated(lambda: gate_child.run(job, page), options.timeout, capture=True,
                             memory_limit=options.memory_limit)
        stack = stack_from(read_mirror(page), link.sites()) if page is not None and ended.kind == "timeout" else ()
    finally:
        if page is not None:
            page.close()
    return ended, stack


# Interface digests noted in the index on disk by other workers, by (module,
# source digest): read once, not once per gate.
_noted: dict[tuple[str, str], str] = {}
MAX_REMEMBERED = 20000


def verdict_warnings(indexed: dict, orders: dict[str, list[str]]) -> dict[str, list[str]] | None:
    """{module: its bodies' warnings} from the clean verdict of every module of
    the closure under its current key; None if any is missing. orders: each
    module's import closure (closure_orders)."""
    from nxc.check.summary import load_verdict, verdict_key
    interfaces = {p: e.get("interface") or _noted.get((p, e["digest"])) for p, e in indexed.items()}
    if None in interfaces.values():
        # Edited this run: another worker may have checked it since the runner
        # read the index (a worker notes each module it checks there). What
        # it noted is kept here, so that the gates that follow (after a body
        # edit of a leaf: all of them) do not read the index again.
        from nxc.index import ModuleIndex
        for p, e in ModuleIndex.load().entries.items():
            if e.get("interface") is not None:
                if len(_noted) >= MAX_REMEMBERED:
                    _noted.clear()
                _noted[(p, e["digest"])] = e["interface"]
        interfaces = {p: d or _noted.get((p, indexed[p]["digest"])) for p, d in interfaces.items()}
        if None in interfaces.values():
            return None
    out = {}
    for p, e in indexed.items():
        key = verdict_key(p, e["digest"], set(orders[p]), interfaces, False)
        verdict = load_verdict(key)         # verified once per worker and file (nxc/cache.py)
        if verdict is None or verdict.get("interface") != interfaces[p]:
            return None
        out[p] = verdict["warnings"]
    return out


def run_unit_recorded_first(unit: Unit, options: Options) -> list[Result]:
    """What the runner's workers run for each unit: the recorded path, else the full one."""
    return run_recorded(unit, options) or run_unit(unit, options)
