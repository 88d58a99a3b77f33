"""`nxc test`: collect, select (partition, last failed), run (in a pool of
workers when -j > 1), report, remember what failed, exit status."""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field

from nxc.gates import execute, nochange, partition, recorded_run
from nxc.incremental import plan
from nxc.incremental.index import ModuleIndex
from nxc.incremental import results as results_cache
from nxc.gates.collect import UsageError, collect, group_units
from nxc.gates.execute import Options, Result
from nxc.gates.protocol import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_NO_TESTS, EXIT_OK, EXIT_USAGE
from nxc.gates.report import Reporter, write_junit
from nxc.paths import expect_entries


def options_from_args(args) -> Options:
    backend = getattr(args, "backend", "c")
    no_cache = getattr(args, "no_cache", False)
    return Options(backends=("c", "py") if backend == "both" else (backend,),
                   timeout=getattr(args, "timeout", 60.0), opt=getattr(args, "opt", "2"),
                   use_cache=not no_cache, include=list(getattr(args, "include", []) or []),
                   soft_f32=getattr(args, "soft_f32", False), checked=not getattr(args, "unchecked", False),
                   read_results=not (no_cache or getattr(args, "rerun", False)), record_results=True,
                   warnings_as_errors=getattr(args, "warnings_as", None) == "error",
                   memory_limit=memory_limit_from(getattr(args, "memory_limit", None)))


@dataclass
class Run:
    """What one round of running needs besides the items (the same for every --watch round)."""
    options: Options
    jobs: int
    verbosity: int
    json: bool
    maxfail: int                    # 0: never stop early
    durations: int | None
    junit_xml: str | None
    suite_name: str = "nxc"
    root: str = ""                  # the project root the last-failed list belongs to
    failed_first: set = field(default_factory=set)      # item keys to run first (--ff)
    notes: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)           # the fast path's counters (--json summary: "incremental")


def default_memory_limit() -> int:
    """A quarter of the physical memory per gate (two gates at a time use at most half)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 2 << 30


def memory_limit_from(value: int | None) -> int | None:
    """--memory-limit: None (not given) is the default, 0 is no limit."""
    if value is None:
        return default_memory_limit()
    return value or None


def main(args) -> int:
    try:
        return _main(args)
    except UsageError as exc:
        print(f"nxc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_FAIL


def _cpus() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return os.cpu_count() or 1


def _ahead(workers: int):
    """plan.plan_units's `ahead`: the pool's reading of stale index entries
    across `workers` processes (None: one worker). The pool (sockets, pickle,
    subprocess, the gate host) is imported when there is something to read:
    a run that finds nothing changed does not load it (docs/runner.md)."""
    if workers <= 1:
        return None

    def ahead(paths):
        from nxc.gates import pool
        return pool.fresh_entries_across(workers)(paths)
    return ahead


def _main(args) -> int:
    options = options_from_args(args)
    if options.timeout <= 0:
        raise UsageError("--timeout must be positive")
    jobs = args.jobs if args.jobs is not None else _cpus()
    if jobs < 0:
        raise UsageError("-j must be 0 (one per CPU) or more")
    jobs = jobs or _cpus()
    maxfail = getattr(args, "maxfail", None)
    if maxfail is not None and maxfail < 1:
        raise UsageError("--maxfail must be 1 or more")
    maxfail = maxfail or (1 if args.exitfirst else 0)
    durations = getattr(args, "durations", None)
    if durations is not None and durations < 0:
        raise UsageError("--durations must be 0 (all) or more")
    if getattr(args, "lf", False) and getattr(args, "ff", False):
        raise UsageError("--lf and --ff do not go together: --lf runs only the last failures, --ff all of them first")
    if "py" in options.backends and not execute.py_backend_available():
        raise UsageError("the Python backend (nxc.backend.py.backend) is not available in this installation; use --backend c")
    part = partition.parse(args.partition) if getattr(args, "partition", None) else None
    verbosity = (args.verbose or 0) - (args.quiet or 0)
    run = Run(options, jobs, verbosity, args.json, maxfail, durations, args.junit_xml,
              suite_name=f"nxc {part}" if part else "nxc", root=results_cache.project_root())

    junit = getattr(args, "junit_xml", None)
    if junit and os.path.isdir(junit):      # found out before running everything, not after
        raise UsageError(f"--junit-xml: '{junit}' is a folder; give the name of the file to write")
    # (--list makes no cache folder: it reads every file instead)
    index = ModuleIndex.load() if options.read_results and not args.list else None
    items = collect(args.paths or ["."], options.backends, args.keyword, index)
    if part is not None:
        items = partition.select(items, part)
    last_failed = results_cache.load_last_failed(run.root)
    if getattr(args, "lf", False) or getattr(args, "ff", False):
        failed_here = {results_cache.item_key(it.real, it.backend) for it in items} & last_failed
        if not failed_here:
            run.notes.append(f"--{'lf' if args.lf else 'ff'}: no failures recorded for these items: running all")
        elif args.lf:
            kept = [it for it in items if results_cache.item_key(it.real, it.backend) in failed_here]
            run.notes.append(f"--lf: {len(kept)} item{'s' if len(kept) != 1 else ''} that failed last time "
                             f"({len(items) - len(kept)} deselected)")
            items = kept
        else:
            run.failed_first = failed_here
            run.notes.append(f"--ff: {len(failed_here)} item{'s' if len(failed_here) != 1 else ''} "
                             f"that failed last time run first")
    if args.list:
        for it in items:
            print(it.id if verbosity < 0 else f"{it.id}  ({it.kind})")
        if verbosity >= 0:
            print(f"{len(items)} item{'s' if len(items) != 1 else ''} collected")
        return EXIT_OK if items else EXIT_NO_TESTS
    if not items:
        print("nxc test: no .nx modules found" + (f" matching -k '{args.keyword}'" if args.keyword else "")
              + (f" in partition {part}" if part else ""), file=sys.stderr)
        return EXIT_NO_TESTS
    if getattr(args, "watch", False):
        from nxc.gates import watch
        return watch.watch(args, run, items, run_round)
    status, _ = run_round(items, run, index)
    return status


def _held(r: Result, first_round: dict[str, Result]) -> bool:
    """Keep a first round's result (execute.BUILT: objects built, gate not
    run) until the item's second-round result, which then says what both
    rounds took; True: `r` was held, not to be reported."""
    if r.plan == execute.BUILT:
        first_round[r.id] = r
        return True
    built = first_round.pop(r.id, None)
    if built is not None:
        r.recompiled = built.recompiled + [p for p in r.recompiled if p not in built.recompiled]
        r.checked_bodies = built.checked_bodies + [p for p in r.checked_bodies if p not in built.checked_bodies]
        r.front_end_seconds += built.front_end_seconds
        r.build_seconds += built.build_seconds
        r.seconds += built.seconds
        if built.recompiled:
            r.build_cached = False
        # Why the first round built it (a batch: nxc/gates/batch.py) and why the second ran it as it did.
        r.plan_reason = "; ".join(filter(None, [built.plan_reason, r.plan_reason]))
    return False


def run_round(items: list, run: Run, index=None) -> tuple[int, list[Result]]:
    """Run `items` once, report, remember failures; (exit status, results).
    index: the module index as collection loaded it, for the planner (a
    later --watch round gives none: the planner loads it afresh)."""
    options = run.options
    units = group_units(items)
    if run.failed_first:
        # --ff: modules holding a last failure first, in collection order (a stable sort).
        units.sort(key=lambda u: not any(results_cache.item_key(it.real, it.backend) in run.failed_first
                                         for it in u.items))
    workers = max(1, min(run.jobs, len(units)))
    reporter = Reporter(run.verbosity, run.json, len(items))
    reporter.header(items, workers, options)
    results: list[Result] = []
    stop = {"early": False, "failures": 0}

    first_round: dict[str, Result] = {}     # item id -> what building it took (plan.second_round)

    def on_results(batch: list[Result]) -> bool:
        for r in batch:
            if r.index_notes:
                plan.note_checked(index, r.index_notes, options.include)
        batch = [r for r in batch if not _held(r, first_round)]
        for r in batch:
            results.append(r)
            reporter.result(r)
        stop["failures"] += sum(not r.passed for r in batch)
        if run.maxfail and stop["failures"] >= run.maxfail:
            stop["early"] = True
            return False
        return True

    start = time.perf_counter()
    interrupted = False
    expect_entries(len(items))      # cache bounds fit this tree (before the workers fork)
    # Units whose recorded pass is found from the module index alone: reported
    # now, nothing of them parsed or checked (nxc/gates/nochange.py).
    fast, to_run, run.stats, index, pack = nochange.split_cached(units, options, _ahead(workers), index)
    if index is not None:           # the workers' index notes come back to it (Options.notes_to_runner)
        options = dataclasses.replace(options, notes_to_runner=True)
    workers = max(1, min(run.jobs, len(to_run)))
    if to_run:
        execute.warm_up()
    try:
        if workers == 1:
            for unit in units:          # in collection order, cached or not (-x stops at the first failure)
                if not on_results(fast[unit.path] if unit.path in fast
                                  else recorded_run.run_unit_planned(unit, options)):
                    break
        elif not on_results([r for u in units for r in fast.get(u.path, [])]):
            pass
        else:
            # Each unit after the units of its closure (their objects, records
            # and verdicts are then there: a cold gate compiles its own module
            # only), the most waited for first; with --ff the last failures
            # before all (nxc/incremental/plan.py, build_order).
            # A gate that others import is built then, and run in a second
            # round from the library of one of them (one link for many gates).
            from nxc.backend.registry import backend_for
            order = plan.build_order(to_run, first=lambda u: any(
                results_cache.item_key(it.real, it.backend) in run.failed_first for it in u.items),
                later=lambda u: plan.may_run_later(u, options, backend_for(u.items[0].backend,
                                                                           checked=options.checked)))
            for u in order.units:
                why = order.reasons.get(u.path)
                if why:
                    u.plan_reason = "; ".join(filter(None, [u.plan_reason, why]))
                u.run_later = u.path in order.later
            from nxc.gates import pool          # not before: a run that finds nothing to do starts no worker
            workers_pool = pool.Pool(workers, options)
            finished = False
            try:
                workers_pool.run(order.units, on_results, order.waits)
                if not stop["early"]:
                    again = plan.second_round(order, lambda u: not any(it.id in first_round for it in u.items))
                    for u in again:
                        u.run_later = False
                    workers_pool.run(again, on_results)
                finished = not stop["early"]
            finally:
                workers_pool.close(kill=not finished)     # -x, Ctrl-C, a closed stdout: stop what still runs
    except KeyboardInterrupt:
        interrupted = True
    plan.save_index(index)          # with what the workers' checks noted (plan.note_checked)
    if not interrupted:
        plan.save_pack(pack, options)   # the passes found and recorded, for the next run of these units
    elapsed = time.perf_counter() - start
    order = result_order(items, units)
    covered = sum(r.covers for r in results)
    remember(run.root, results, {it.display: it.real for it in items})
    reporter.finish(results, order, elapsed, len(items) - covered, stop["early"], interrupted,
                    durations=run.durations, maxfail=run.maxfail, notes=run.notes, stats=run.stats)
    if run.junit_xml:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(run.junit_xml)), exist_ok=True)
            write_junit(run.junit_xml, results, order, elapsed, suite_name=run.suite_name)
        except OSError as exc:
            print(f"nxc: error: cannot write --junit-xml '{run.junit_xml}': {exc.strerror or exc}", file=sys.stderr)
            return EXIT_FAIL, results
    if interrupted:
        return EXIT_INTERRUPTED, results
    ok = results and all(r.passed for r in results) and covered == len(items)
    return (EXIT_OK if ok else EXIT_FAIL), results


def result_order(items: list, units: list) -> list[str]:
    """Result ids in collection order; a result standing for all of a module's
    items (a compile error with --backend both) sorts where its first item was."""
    multi = {u.path for u in units if len(u.items) > 1}
    order, seen = [], set()
    for it in items:
        if it.path in multi and it.path not in seen:
            seen.add(it.path)
            order.append(it.display)
        order.append(it.id)
    return order


def remember(root: str, results: list[Result], real_of: dict[str, str]) -> None:
    """Update the project's last-failed list with this round's verdicts
    (real_of: {item display path, a result's path: real path})."""
    passed, failed = set(), set()
    for r in results:
        real = real_of.get(r.path) or os.path.realpath(r.path)
        for backend in r.backend.split("+"):
            (passed if r.passed else failed).add(results_cache.item_key(real, backend))
    results_cache.save_last_failed(root, results_cache.load_last_failed(root), passed, failed)

