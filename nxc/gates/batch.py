"""Several units of `nxc test` checked, planned and built as one program, then each run on its own.

A cold gate's front end declares its whole import closure and its link plan
walks it (nxc/check/summary.py, check_gate; nxc/backend/c/needs.py), about
60 modules a gate in a random 800-module tree; gates handed out together
mostly share those modules. So a worker given several units at once
(nxc/gates/pool.py) checks the ones the planner sends down the full path
(recorded_run.decide) as ONE program:
a root module, written to a folder of its own, that imports each unit's
module (through a symbolic link to it, so every import inside their
closures resolves from the module's own folder and the run's -I exactly as
it does for the unit alone). The root has no code. The check declares the
union of the closures once, checks the bodies of each module without a
clean verdict (the units' own modules, in a cold run), stores their
verdicts; the C backend plans the link once and builds each unit's object
and gate record (Backend.build_batch). Each unit then takes its own planned
path (nxc/gates/recorded_run.py), which now finds clean verdicts and
records for its whole closure: linked and run from records.

Nothing is decided differently: the verdicts, records and objects are those
a check of each unit alone would make (the keys say what they depend on,
and tests/test_batch.py compares the objects' bytes); a unit whose gate
does not pass is run again on the full path, which explains it, as any
recorded run is. When the batch cannot be checked as one program (an error
in one module, two closures declaring the same name, a body using a name
from outside its own closure), nothing of it is kept and each unit takes
its own path as if there had been no batch; its reason says why the batch
was not made (nxc test -v, --json). `NXC_BATCH=1` turns batching
off; `NXC_BATCH=K` sets the most units a worker takes at once (default 32).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from nxc.diagnostics import display_path
from nxc.gates.execute import BUILT, Options, Result

DEFAULT_SIZE = 32        # docs/performance.md, twenty-eighth session: 8, 16 and 32 measured


def batch_size() -> int:
    """The most units a worker takes at once (NXC_BATCH; 1: no batches)."""
    try:
        return max(1, int(os.environ.get("NXC_BATCH", DEFAULT_SIZE)))
    except ValueError:
        return DEFAULT_SIZE


@dataclass
class Prepared:
    """What the batch did for its units."""
    paths: list                                 # the units' real paths, as the root imports them
    compiled: set = field(default_factory=set)  # real paths of the modules whose objects it compiled
    notes: dict = field(default_factory=dict)   # the check's index notes (Checked.notes), the root's left out
    seconds: float = 0.0
    shared: str | None = None                   # the link key of the library linked for the units run now
    unshared: str = ""                          # why there is none ("" if none was wanted)
    run_now: int = 0                            # how many of its units run now (the others: second round)


def run_batch(units: list, options: Options) -> list[list[Result]]:
    """Each unit's results, in order: those the planner sends down the full
    path checked, planned and built as one program first (when at least two are)."""
    from nxc.backend.registry import backend_for
    from nxc.gates.recorded_run import built, decide, run_unit_planned
    from nxc.incremental import plan
    backend = backend_for("c", checked=options.checked)
    decisions: dict[str, object] = {}
    for unit in units:
        if _batchable(unit, options, backend):
            decisions[unit.path] = decide(unit, options, backend)
    wanted = [u for u in units if u.path in decisions and decisions[u.path].path == plan.FULL]
    # The gates linked from records that run now share one library (a body
    # edit of a module they all import relinked each one's own).
    recorded = [u for u in units if u.path in decisions and decisions[u.path].path == plan.RECORDED
                and not u.run_later]
    shared, unshared = backend.link_recorded_together([decisions[u.path].link for u in recorded],
                                                      checked=options.checked, opt=options.opt)
    together = {u.path for u in recorded}
    prepared = prepare(wanted, options) if len(wanted) >= 2 else None
    not_made = None
    if isinstance(prepared, str):           # why the batch could not be one program
        not_made, prepared = prepared, None
    if prepared is not None:
        _note_interfaces(units, prepared.notes)
    out = []
    for unit in units:
        batched = prepared is not None and unit.real in prepared.paths
        if batched and unit.run_later:
            # Built: its run comes in the second round, which plans it from the
            # records just written (planning it here too found them, for nothing).
            results = built(unit)
        else:
            # A batched unit is planned again (its verdicts and records are there
            # now); the others keep the decision taken above.
            results = run_unit_planned(unit, options, None if batched else decisions.get(unit.path))
        if batched:
            _say_batched(results, unit, prepared, len(wanted))
        elif unit.path in together and (shared or unshared):
            said = (f"then run from one library linked for the {len(recorded)} gates of the batch linked "
                    f"from records" if shared else f"linked on its own (no library for the batch: {unshared})")
            for r in results:
                if r.plan == plan.RECORDED:
                    r.plan_reason = "; ".join(filter(None, [r.plan_reason, said]))
        elif not_made is not None and any(unit is w for w in wanted):
            for r in results:
                r.plan_reason = "; ".join(filter(None, [
                    f"not checked in a batch with {len(wanted) - 1} other units: {not_made}", r.plan_reason]))
        out.append(results)
    if prepared is not None and prepared.notes:
        # The runner notes each module's interface for the units it gives out later.
        first = next((rs[0] for rs in out if rs), None)
        if first is not None:
            first.index_notes = {**prepared.notes, **first.index_notes}
    return out


def _note_interfaces(units: list, notes: dict) -> None:
    """The interfaces the batch's check found, in each unit's view of its
    closure (as the runner notes them for the units it gives out later:
    plan.note_checked), so that its worker's planner finds their verdicts."""
    from nxc.incremental.plan import note_in_view
    for unit in units:
        for path, (text, interface, _) in notes.items():
            note_in_view(unit.indexed.get(path) if unit.indexed else None, text, interface)


def _batchable(unit, options: Options, backend) -> bool:
    """A C unit the planner could link from records once its modules are checked."""
    from nxc.incremental.plan import may_run_later
    return len(unit.items) == 1 and unit.items[0].backend == "c" and may_run_later(unit, options, backend)


def prepare(units: list, options: Options) -> Prepared | str:
    """Check, plan and build `units` as one program; or why it could not be
    (each unit then takes its own path, which reports whatever stopped it)."""
    from nxc.backend.registry import backend_for
    from nxc.check.summary import check_gate
    from nxc.diagnostics import CompileError, Diagnostics
    from nxc.gates.execute import final_program
    start = time.perf_counter()
    paths = [u.real for u in units]
    if len(set(paths)) != len(paths):
        return "two of them are one module"
    try:
        folder = tempfile.mkdtemp(prefix="nxc-batch-")
    except OSError as exc:
        return f"no temporary folder for its root module: {exc}"
    try:
        lines = []
        for k, path in enumerate(paths):
            name = f"u{k}.nx"
            os.symlink(path, os.path.join(folder, name))
            lines.append(f'import "{name}"\n')
        root = os.path.join(folder, "batch.nx")
        with open(root, "w", encoding="utf-8") as f:
            f.write("// the modules of several gates, checked as one program (nxc/gates/batch.py)\n"
                    + "".join(lines))
        found = check_gate(root, list(options.include), Diagnostics(warnings=True))
        if found is None:
            return "a body uses a name from outside its own closure, or nests too deeply"
        _, emitted = final_program(found, options, emit=paths)
        run_now = [u.real for u in units if not u.run_later]
        built = backend_for("c", checked=options.checked).build_batch(emitted, paths, opt=options.opt,
                                                                      run_next=run_now)
        if built is None:
            return "the backend builds no batch"
        root_real = os.path.realpath(root)
        notes = {p: n for p, n in found.notes.items() if p != root_real}
        return Prepared(paths, set(built.compiled), notes, time.perf_counter() - start, built.shared,
                        built.unshared, len(run_now))
    except CompileError as exc:
        first = exc.diagnostics[0].message if exc.diagnostics else "an error"
        return f"they do not compile as one program ({first})"
    except Exception as exc:  # noqa: BLE001 - no symbolic links, a bug in nxc: each unit's own path runs
        return f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _say_batched(results: list[Result], unit, prepared: Prepared, size: int) -> None:
    """What the batch did for `unit`, on its results: its bodies checked, its
    object compiled, its share of the batch's time, and why it took its path."""
    from nxc.incremental.plan import FULL, RECORDED
    mine = display_path(unit.path)
    share = prepared.seconds / size
    for r in results:
        if mine not in r.checked_bodies:
            r.checked_bodies = [mine, *r.checked_bodies]
        if unit.real in prepared.compiled and mine not in r.recompiled:
            r.recompiled = [mine, *r.recompiled]
            r.build_cached = False
        r.front_end_seconds += share
        r.seconds += share
        if r.plan in (RECORDED, BUILT):
            # The unit was checked, emitted and built (as the full path does),
            # with others: its gate then ran from records.
            if r.plan == RECORDED:
                r.plan = FULL
            if prepared.shared is not None and r.host == prepared.shared:
                then = f"then run from one library linked for the {prepared.run_now} gates of the batch that run now"
            elif prepared.unshared and not unit.run_later:
                then = f"then linked from records on its own (no library for the batch: {prepared.unshared})"
            else:
                then = "then linked from records"
            r.plan_reason = "; ".join(filter(None, [
                f"checked, emitted and built in a batch of {size} as one program, {then}", r.plan_reason]))
