"""The worker pool of `nxc test -j N`: forked workers fed one module at a time.

Workers are forked from a runner that has already loaded the parser and
the compiler's identity (`execute.warm_up`), so they start warm; a worker
that dies takes only its own module down with it (its gate already runs in
a child of its own, forked by the worker's gate host: nxc/gates/host.py).
"""
from __future__ import annotations

import os
import heapq
import signal

from nxc.cache import this_process_ends_with_its_run
from nxc.gates.collect import Item
from nxc.gates import host as gate_host
from nxc.gates.execute import Options, Result, internal_error
from nxc.gates.isolate import die_with_parent
from nxc.gates.protocol import Status
from nxc.gates.batch import batch_size, run_batch
from nxc.gates.recorded_run import run_unit_planned


def worker(conn, options: Options, inherited=(), parent_pid: int | None = None) -> None:
    die_with_parent()                   # Linux: SIGKILL when the runner dies
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the runner decides what Ctrl-C stops
    # The runner's ends of every pipe (this worker's and its peers', forked
    # into it): while a worker held them, no worker ever saw EOF when the
    # runner died, and all lived on after a SIGKILL of `nxc test -j N`.
    for c in inherited:
        c.close()
    if parent_pid is not None and os.getppid() != parent_pid:
        return                          # it died before that took effect
    # Gates' children are forked by a small host process, not by this worker,
    # which grows with the tree (nxc/gates/host.py); started here, in the main
    # thread, so that the host dies with the worker.
    gate_host.enable()
    this_process_ends_with_its_run()    # what it reads stands for the run (nxc/cache.py)
    # All of it in one nxc.deep thread, which lives as long as the worker:
    # the checker's and emitters' @deep calls then run in it directly. Each
    # of them started a thread with a 512 MiB stack of its own, four a gate,
    # 0.17 ms each and more for the stack pages faulted in again as deep as
    # the walk went (docs/performance.md, twenty-fourth session).
    from nxc.deep import run_deep
    profiles = os.environ.get("NXC_PROFILE_DIR")
    try:
        if profiles:
            run_deep(_profiled, conn, options, profiles)
        else:
            run_deep(_serve, conn, options)
    finally:
        # The host is waited for here, so that its CPU time (it loads every
        # gate's library) is counted in this worker's children and so in the
        # runner's: left to end on its own when the worker exits, it was
        # reparented to init, and `time nxc test` and the tree bench missed
        # about 2% of a cold run's CPU (docs/performance.md, 27th session).
        gate_host.disable()


def _profiled(conn, options: Options, folder: str) -> None:
    """NXC_PROFILE_DIR: the worker's cProfile, written to FOLDER/w<pid>.prof
    when it ends (merge them with pstats.Stats(*files)). Run in the worker's
    nxc.deep thread, the profile sees the checks and emitters too
    (docs/performance.md: how the index notes were found)."""
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
    try:
        _serve(conn, options)
    finally:
        profile.disable()
        profile.dump_stats(os.path.join(folder, f"w{os.getpid()}.prof"))


def _serve(conn, options: Options) -> None:
    """Run the units the runner sends until it sends None or goes away."""
    while True:
        try:
            unit = conn.recv()
        except (EOFError, OSError):
            return
        if unit is None:
            return
        if isinstance(unit, list):      # several at once (nxc/gates/batch.py): a list of results each
            try:
                conn.send(run_batch(unit, options))
            except BaseException as exc:  # noqa: BLE001
                conn.send([_failed(u, exc) for u in unit])
            continue
        try:
            results = run_unit_planned(unit, options)
        except BaseException as exc:  # noqa: BLE001
            results = _failed(unit, exc)
        conn.send(results)


def _failed(unit, exc: BaseException) -> list[Result]:
    return [internal_error(Result(it.id, it.display, it.kind, it.backend, Status.INTERNAL_ERROR), exc, 0.0)
            for it in unit.items]


class Pool:
    """Forked workers fed one module at a time, or several when many are
    ready (nxc/gates/batch.py); a dead worker costs the modules it held."""

    def __init__(self, size: int, options: Options):
        # Imported here: a run that starts no worker (all cached) does not
        # pay for multiprocessing's import (9 ms of a 250 ms no-change run).
        import multiprocessing.connection
        self.ctx = multiprocessing.get_context("fork")
        self._wait = multiprocessing.connection.wait
        self.options = options
        self.batch = batch_size()
        self.workers: dict = {}          # conn -> (process, unit, list of units, or None)
        for _ in range(size):
            self._spawn()

    def _spawn(self):
        parent, child = self.ctx.Pipe()
        inherited = [parent, *self.workers]
        p = self.ctx.Process(target=worker, args=(child, self.options, inherited, os.getpid()), daemon=True)
        p.start()
        child.close()
        self.workers[parent] = [p, None]
        return parent

    def run(self, units, on_results, waits: dict | None = None) -> None:
        """Run `units` (in the order given, as far as `waits` allows: {unit
        path: unit paths it is given out after}, see plan.build_order);
        `on_results(results)` returns False to stop early."""
        pending = Schedule(units, waits or {})
        self._feed_idle(pending)
        while any(w[1] is not None for w in self.workers.values()):
            busy = [c for c, w in self.workers.items() if w[1] is not None]
            for conn in self._wait(busy):
                proc, given = self.workers[conn]
                units = given if isinstance(given, list) else [given]
                try:
                    got = conn.recv()
                    each = got if isinstance(given, list) else [got]
                except (EOFError, OSError):
                    proc.join(1)
                    each = [[worker_died(it, proc.exitcode) for it in u.items] for u in units]
                    del self.workers[conn]
                    conn.close()
                    conn = self._spawn() if pending else None
                if conn is not None:
                    self.workers[conn][1] = None
                for unit, results in zip(units, each):
                    pending.done(unit)
                    if not on_results(results):
                        return
                # Every idle worker, not only this one: finishing `unit` may
                # have made several ready at once.
                self._feed_idle(pending)

    def _feed_idle(self, pending: "Schedule") -> None:
        for conn in [c for c, w in self.workers.items() if w[1] is None]:
            self._feed(conn, pending)
        if pending and not any(w[1] is not None for w in self.workers.values()):
            # Nothing runs and nothing is ready: units that wait for each
            # other (an import cycle). The first in order goes anyway.
            pending.release()
            self._feed_idle(pending)

    def _feed(self, conn, pending: "Schedule") -> None:
        # Several units at once when many are ready, split evenly between the
        # workers: a batch's units are done together, so a big batch while
        # few are ready would leave the other workers waiting for them.
        size = min(self.batch, max(1, pending.ready_count() // len(self.workers)))
        units = [u for u in (pending.take() for _ in range(size)) if u is not None]
        if units:
            given = units if len(units) > 1 else units[0]
            self.workers[conn][1] = given
            conn.send(given)

    def close(self, kill: bool = False) -> None:
        for conn, (proc, _) in self.workers.items():
            if kill:
                proc.kill()         # its gate child follows (PR_SET_PDEATHSIG in run.py)
            else:
                try:
                    conn.send(None)
                except OSError:
                    pass
        for conn, (proc, _) in self.workers.items():
            proc.join()
            conn.close()
        self.workers.clear()


class Schedule:
    """Units given out in order, each once every unit it waits for is done
    (its results are in, whatever they are: a unit whose import failed runs
    all the same, and reports that failure as its own)."""

    def __init__(self, units, waits: dict):
        self.rank = {u.path: k for k, u in enumerate(units)}
        self.units = {u.path: u for u in units}
        self.blocked = {u.path: {p for p in waits.get(u.path, ()) if p in self.units and p != u.path}
                        for u in units}
        self.dependents: dict[str, list[str]] = {}
        for path, needs in self.blocked.items():
            for p in needs:
                self.dependents.setdefault(p, []).append(path)
        self.ready = [self.rank[p] for p, needs in self.blocked.items() if not needs]
        heapq.heapify(self.ready)
        self.left = len(units)
        self.order = list(units)

    def __bool__(self) -> bool:
        return self.left > 0

    def ready_count(self) -> int:
        return len(self.ready)

    def take(self):
        """The first unit in order that waits for nothing (None: none now)."""
        if not self.ready:
            return None
        unit = self.order[heapq.heappop(self.ready)]
        self.left -= 1
        del self.blocked[unit.path]
        return unit

    def done(self, unit) -> None:
        for p in self.dependents.pop(unit.path, ()):
            needs = self.blocked.get(p)
            if needs is not None and unit.path in needs:
                needs.discard(unit.path)
                if not needs:
                    heapq.heappush(self.ready, self.rank[p])

    def release(self) -> None:
        """Make the first unit in order ready whatever it waits for."""
        if self.blocked and not self.ready:
            path = min(self.blocked, key=self.rank.__getitem__)
            self.blocked[path].clear()
            heapq.heappush(self.ready, self.rank[path])


def worker_died(item: Item, exitcode) -> Result:
    how = (f"killed by {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0
           and -exitcode in signal.valid_signals() else f"exit status {exitcode}")
    r = Result(item.id, item.display, item.kind, item.backend, Status.INTERNAL_ERROR)
    r.message = f"the worker process checking this module died ({how})"
    r.report = f"ERROR: {r.message}; this is a bug in nxc (the gate itself runs in a separate child)"
    return r


def fresh_entries_across(jobs: int):
    """plan.plan_units's `ahead`: index.fresh_entries of the paths split over
    `jobs` forked processes (each file read, digested and parsed once, its
    AST left in the parse cache for the workers). If a process fails, the
    runner reads the files itself (what it did before this existed): the
    counters' "ahead_failed" says so."""
    def ahead(paths: list[str]) -> tuple[dict, dict]:
        from nxc.incremental.index import fresh_entries
        from nxc.syntax import parse
        try:
            parse.warm_up()             # the parser's tables once, before forking
        except Exception:  # noqa: BLE001 - the runner's own parse reports what is wrong
            return {}, {"ahead_failed": 1}
        import multiprocessing
        chunks = [paths[k::jobs] for k in range(jobs)]
        try:
            with multiprocessing.get_context("fork").Pool(jobs, initializer=_reads_ahead) as procs:
                done = procs.map(fresh_entries, chunks, chunksize=1)
        except Exception:  # noqa: BLE001 - a process died or could not start: read here instead
            return {}, {"ahead_failed": 1}
        found: dict = {}
        counters = {"parsed_ahead": 0}
        for entries, counted in done:
            found.update(entries)
            for k, v in counted.items():
                counters[k] = counters.get(k, 0) + v
            counters["parsed_ahead"] += counted.get("parsed", 0)
        return found, counters
    return ahead


def _reads_ahead() -> None:
    """A process of fresh_entries_across: it parses its share of the modules
    and ends, keeping every AST it made (the parse cache's). The cyclic GC
    would only scan them: once re-enabled after the parse (gc_paused), it
    went over all of them, ~0.4 s of CPU at 1,600 modules, to free nothing."""
    import gc
    die_with_parent()
    gc.disable()
