"""The planner of `nxc test`: one decision per unit, taken before any backend runs, with its reason.

A unit (one module and its backends) takes one of three paths:

- CACHED: every item has a pass recorded under its unit key (keys.unit_key:
  the closure's sources from the module index, the run's parts), whose files
  are as they were (inputs.py). Decided by the runner, before any worker
  starts; nothing of the unit is read, parsed, checked or built.
- RECORDED: a C gate whose closure has a clean verdict for every module
  under its current key (records.load_verdict) and whose link the backend
  plans from its records (Backend.plan_from_records): linked and run without
  the front end. Decided by the worker, before the backend builds anything.
- FULL: check the bodies the verdicts do not cover, emit and build the
  modules whose objects are missing, link, run.

Every decision keeps the reason it was taken (`Decision.reason`), which
`nxc test -v` prints and `--json` gives (the result's "plan" and
"plan_reason"): why a unit was not cached, why it could not be linked from
records. Nothing here falls back silently: a question this code cannot
answer (an index it cannot read, a build identity that cannot be computed
because there is no compiler) is a FULL decision whose reason says so, and
the full path reports what is wrong.

This module knows no stage: the backend comes in as a `Backend`
(nxc/backend/base.py), the run's options as the gate runner's Options.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from nxc.diagnostics import ToolError
from nxc.incremental import keys, records
from nxc.incremental import results as results_cache
from nxc.incremental.index import ClosureMemo, ModuleIndex, closure_orders

CACHED, RECORDED, FULL = "cached", "recorded", "full"


@dataclass
class Decision:
    path: str                   # CACHED, RECORDED or FULL
    reason: str                 # why, in a few words (nxc test -v, --json "plan_reason")
    passes: list = field(default_factory=list)      # CACHED: each item's recorded pass {"kind", "warnings", ...}
    modules: list = field(default_factory=list)     # CACHED: the closure's real paths
    link: object = None                             # RECORDED: the backend's plan of the link
    warnings: list = field(default_factory=list)    # RECORDED: the closure's warnings, from its verdicts


# ---------------------------------------------------------------- the runner's step
# Fewer files than this to read are read here: forking costs more than they do.
AHEAD_MIN = 16


def plan_units(units: list, options, ahead=None, index: ModuleIndex | None = None) -> tuple[
        dict[str, Decision], dict, ModuleIndex | None, results_cache.Pack | None]:
    """({unit path: Decision}, counters, the module index it read (None: none
    read), the units' pack of passes (results.Pack; None: none read), for
    `save_pack` at the end of the run) of every unit, from the module index alone. A unit not CACHED is FULL with the reason it is not cached; its
    worker may still find it RECORDED (`plan_in_worker`): the unit then
    carries the index's view of its closure (`Unit.indexed`).

    ahead(real paths) -> (entries, counters): index.fresh_entries run in
    other processes (the runner's, nxc/gates/pool.py): a cold run's index
    reads and parses every module, which alone took 16 s of CPU at 800
    modules before any worker started (issue 33); the units' files whose
    entries are stale are read and parsed there first, across the cores.
    index: the module index as this run already loaded it (for collection:
    nxc/gates/command.py), instead of loading it again."""
    if not options.read_results:
        why = "--no-cache" if not options.use_cache else "--rerun"
        return {u.path: Decision(FULL, f"{why}: no cached result is read") for u in units}, {}, None, None
    if index is None:
        index = ModuleIndex.load()      # an index it cannot read or trust is an empty one
    stale = index.stale(u.real for u in units) if ahead is not None else []
    if len(stale) >= AHEAD_MIN:
        index.adopt(*ahead(stale))
    parts: dict[str, str] = {}          # backend -> keys.run_parts_text: the same for every unit of the run
    pack = results_cache.Pack(keys.pack_locator([(u.real, tuple(it.backend for it in u.items)) for u in units]))
    decisions = {u.path: _plan_unit(u, options, index, parts, pack) for u in units}
    save_index(index)
    cached = sum(d.path == CACHED for d in decisions.values())
    return decisions, {"cached_units": cached, "sent_units": len(units) - cached, **index.counters}, index, pack


def save_pack(pack: results_cache.Pack | None, options) -> None:
    """At the end of the run: the passes of its units in their pack, for the
    next run of the same units (results.Pack)."""
    if pack is not None and options.record_results:
        pack.save()


def note_checked(index: ModuleIndex | None, notes: dict, include) -> None:
    """What a worker's check found for the module index (Result.index_notes:
    {real path: (source digest, interface digest, verdict key)}), noted by
    the runner in the index it read (saved at the end of the run: `save_index`),
    and in the units' view of each entry: a unit given out after the units of
    its closure then carries their interface digests, and its worker finds
    their verdicts without reading the index (verdict_warnings)."""
    if index is None:
        return
    for path, (text, interface, verdict) in notes.items():
        index.note(path, text, interface=interface, verdict=verdict)
        note_in_view(index.views.get(_view_key(path, include)), text, interface)


def note_in_view(view: dict | None, text: str, interface: str) -> None:
    """A module's interface digest, found by a check of its source `text`, in
    a unit's view of it (Unit.indexed; None: no view): only if the view is of
    that source."""
    if view is not None and view["digest"] == text:
        view["interface"] = interface


def save_index(index: ModuleIndex | None) -> None:
    """Write the index if it changed: after planning, and once more at the end
    of the run with what `note_checked` noted."""
    if index is not None:
        try:
            index.save()
        except OSError:
            pass                # not saving the index costs the next run's stats only


def _plan_unit(unit, options, index: ModuleIndex, parts: dict[str, str], pack: results_cache.Pack) -> Decision:
    from nxc.paths import SOFT_F32_MODULE
    real = unit.real
    extra: tuple[str, ...] = ()
    if options.soft_f32:        # the front end adds nx_f32_soft.nx as if the root imported it
        found = index.resolve(SOFT_F32_MODULE, real, options.include)
        if found is None:
            return Decision(FULL, f"--soft-f32: {SOFT_F32_MODULE} is not found from here")
        extra = (found,)
    closure = index.closure(real, options.include, extra)
    if closure is None:
        return Decision(FULL, "a module of its closure cannot be read, parsed or resolved from the index")
    paths = sorted(closure)
    digests = {path: closure[path]["digest"] for path in paths}    # in order: closure_digest's sort is then one pass
    unit_keys = []
    for item in unit.items:
        try:
            if item.backend not in parts:
                parts[item.backend] = keys.run_parts_text(options, item.backend)
            unit_keys.append(keys.unit_key(digests, item.backend, options, parts[item.backend]))
        except ToolError as exc:    # the build's identity: no compiler, ...; the full path reports it
            return Decision(FULL, f"no unit key on {item.backend}: {exc}")
    # Every item's pass is looked up, so that the pack holds each of them after the run
    found = [results_cache.unit_pass(key, pack) for key in unit_keys]
    passes = []
    for item, key, (recorded, why) in zip(unit.items, unit_keys, found):
        if recorded is None:
            if not extra:       # for the worker's recorded path (plan_in_worker)
                unit.indexed = {path: _indexed_view(index, path, entry, options.include)
                                for path, entry in closure.items()}
            return Decision(FULL, f"not cached on {item.backend}: {why}")
        passes.append(recorded)
    return Decision(CACHED, f"passed before under unit key {key[:12]}: same sources of its {len(closure)} "
                            f"module{'s' if len(closure) != 1 else ''}, options and files",
                    passes=passes, modules=paths)


def _view_key(path: str, include) -> tuple:
    """The key of a module's view in index.views (per -I search path)."""
    return (path, tuple(include or ()))


def _indexed_view(index: ModuleIndex, path: str, entry: dict, include) -> dict:
    """What a unit's `indexed` holds of one module: made once per module and
    run, and shared by every unit whose closure holds it (at 800 modules,
    making it per unit resolved 228,000 imports before any worker started)."""
    memo = index.views
    key = _view_key(path, include)
    view = memo.get(key)
    if view is None:
        view = memo[key] = {"digest": entry["digest"], "interface": entry.get("interface"),
                            "imports": [index.resolve(name, path, include) for name in entry["imports"]]}
    return view


# ---------------------------------------------------------------- the worker's step
def plan_in_worker(unit, options, backend) -> Decision:
    """RECORDED (with the link `backend` plans from its records and the closure's
    warnings) or FULL, with the reason, for a unit the runner did not find
    cached. backend: the Backend of the unit's one item."""
    why = _not_recordable(unit, options, backend)
    if why is not None:
        return Decision(FULL, why)
    root = unit.real
    indexed = unit.indexed
    imports = {p: e["imports"] for p, e in indexed.items()}
    orders = closure_orders(root, imports)
    if orders is None or set(orders) != set(indexed):
        return Decision(FULL, "its imports form a cycle (or reach a module the index lacks): "
                              "its keys need the front end")
    warnings_of, why = verdict_warnings(indexed, root, imports, orders)
    if warnings_of is None:
        return Decision(FULL, why)
    digests = {p: e["digest"] for p, e in indexed.items()}
    link, why = backend.plan_from_records(root, digests, imports, orders, checked=options.checked, opt=options.opt)
    if link is None:
        return Decision(FULL, why)
    warnings = [w for p in link.modules for w in warnings_of[p]]
    return Decision(RECORDED, f"clean verdicts and records for all {len(indexed)} modules of its closure",
                    link=link, warnings=warnings)


def may_run_later(unit, options, backend) -> bool:
    """Whether the unit's gate can be built in one round and run from records
    in a later one (build_order's `later`). backend: that of its one item."""
    return len(unit.items) == 1 and _not_recordable(unit, options, backend) is None


def _not_recordable(unit, options, backend) -> str | None:
    if options.soft_f32:
        return "--soft-f32 takes the full path"
    if options.warnings_as_errors:
        return "-W error words each warning from its diagnostic: the full path"
    if not options.use_cache:
        return "--no-cache: nothing is read from the cache"
    if len(unit.items) != 1:
        return "more than one backend: one front end for all"
    if unit.indexed is None:
        return "no index view of its closure (see the runner's reason)"
    if not backend.plans_from_records:
        return f"the {backend.name} backend plans no link from records"
    return None


def verdict_warnings(indexed: dict, root: str, imports: dict[str, list[str]],
                     orders: dict[str, list[str]]) -> tuple[dict[str, list[str]] | None, str]:
    """({module: its bodies' warnings}, "") from the clean verdict of every
    module of the closure of `root` under its current key; (None, why) if one
    is missing. imports: each module's, resolved; orders: each module's
    import closure (closure_orders)."""
    # The interface digests are the runner's: those of its index, and those
    # the checks of this run found, noted in the views of the units given out
    # after them (note_checked). The index file holds nothing more: the
    # workers of this run do not write it, and it used to be read here for
    # each unit whose own module had never been checked (every unit of a cold
    # run: 800 loads of the whole index at 800 modules, to find nothing).
    interfaces = {p: e.get("interface") for p, e in indexed.items()}
    unknown = sorted(p for p, d in interfaces.items() if d is None)
    if unknown:
        return None, f"no interface digest yet for {_name(unknown[0])}" + _more(unknown)
    # A verdict follows from the module's text and the interfaces of its
    # closure: kept for the run by the number naming exactly those.
    numbers = _VERDICTS.names(orders[root], imports, {p: (e["digest"], interfaces[p]) for p, e in indexed.items()})
    out = {}
    for p, e in indexed.items():
        found = _VERDICTS.kept(numbers, p)
        if found is None:
            key = keys.verdict_key(p, e["digest"], set(orders[p]), interfaces, False)
            verdict = records.load_verdict(key)         # verified once per worker and file (nxc/cache.py)
            if verdict is None:
                return None, f"no clean verdict for {_name(p)} under its current key"
            if verdict.get("interface") != interfaces[p]:
                return None, f"the verdict of {_name(p)} holds another interface"
            found = verdict["warnings"]
            _VERDICTS.keep(numbers, p, found)
        out[p] = found
    return out, ""


_VERDICTS = ClosureMemo()       # a module's clean verdict's warnings, by its closure's number


def _name(path: str) -> str:
    return os.path.basename(path)


def _more(paths: list) -> str:
    return f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""


# ---------------------------------------------------------------- the order of the workers' units
@dataclass
class BuildOrder:
    """The order the workers take the units not cached, cold trees first in mind.

    A gate's first build compiles the object of every module of its closure
    that is not in the cache (nxc/backend/c/objects.py). Handed out in any
    order, two workers walking closures that share most of their modules
    wait on each other's object locks, and the first gate of a big closure
    compiles all of it alone (issue 33: m0693, 71 objects in one worker).
    Instead a unit waits (`waits`) for the units of the modules its closure
    imports, so that when it runs their objects, records and clean verdicts
    are there and it compiles and checks its own module only; among the
    units ready, the one most others wait for goes first (`rank`), then the
    biggest closure. `reasons` says, per unit, what it waited for (`-v`,
    `--json` plan_reason)."""
    units: list                                     # in rank order
    waits: dict = field(default_factory=dict)       # unit path -> {unit paths it waits for}
    reasons: dict = field(default_factory=dict)     # unit path -> a few words
    later: set = field(default_factory=set)         # unit paths run in the second round (`build_order`)


def build_order(units: list, first=lambda unit: False, later=lambda unit: False) -> BuildOrder:
    """The BuildOrder of `units` (Unit.indexed: the index's view of each
    closure; a unit without one waits for nothing and is waited for by the
    units whose closures name it). first(unit): true for units that go
    before all others whatever they wait for (--ff: the last failures).

    later(unit): true for a unit whose gate may run from another gate's
    library (a C gate whose run can be planned from records). Such a unit
    that others of the run import builds its objects and records in the
    first round, in this order, and runs in a second round, after every
    gate that imports it has been linked, from one of their libraries
    (nxc/backend/c/hosts.py): one link serves many gates."""
    by_real = {u.real: u for u in units}
    waits: dict[str, set] = {}
    fan_in = {u.path: 0 for u in units}
    for u in units:
        if first(u) or not u.indexed:
            waits[u.path] = set()
            continue
        real = u.real
        needs = {by_real[p].path for p in u.indexed if p != real and p in by_real}
        waits[u.path] = needs
        for p in needs:
            fan_in[p] += 1
    ranked = sorted(units, key=lambda u: (not first(u), -fan_in[u.path], -len(u.indexed or ()),
                                          -_file_size(u.path)))
    reasons = {}
    deferred = {u.path for u in units if fan_in[u.path] and not first(u) and later(u)}
    for u in units:
        n, m = len(waits[u.path]), fan_in[u.path]
        if n or m:
            after = f"after the {n} unit{'s' if n != 1 else ''} of its closure" if n else ""
            before = f"before {m} whose closure{'s hold' if m != 1 else ' holds'} it" if m else ""
            reasons[u.path] = ("built " + ", ".join(filter(None, [after, before]))
                               + ("; run after them, from one of their libraries" if u.path in deferred else ""))
    return BuildOrder(ranked, waits, reasons, deferred)


def second_round(order: BuildOrder, reported) -> list:
    """The units of `order.later` that the first round built without running
    (reported(unit): its results came in), biggest closure first: each
    runs from the library of a gate that imports it, which the first round
    linked."""
    left = [u for u in order.units if u.path in order.later and not reported(u)]
    left.sort(key=lambda u: -len(u.indexed or ()))
    return left


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
