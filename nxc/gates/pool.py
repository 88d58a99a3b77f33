"""The worker pool of `nxc test -j N`: forked workers fed one module at a time.

Workers are forked from a runner that has already loaded the parser and
the compiler's identity (`execute.warm_up`), so they start warm; a worker
that dies takes only its own module down with it (its gate already runs in
a child of its own, forked by the worker's gate host: nxc/gates/host.py).
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
from collections import deque

from nxc.gates.collect import Item
from nxc.gates import host as gate_host
from nxc.gates.execute import Options, Result, internal_error
from nxc.gates.isolate import die_with_parent
from nxc.gates.protocol import Status
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
    while True:
        try:
            unit = conn.recv()
        except (EOFError, OSError):
            return
        if unit is None:
            return
        try:
            results = run_unit_planned(unit, options)
        except BaseException as exc:  # noqa: BLE001
            results = [internal_error(Result(it.id, it.display, it.kind, it.backend, Status.INTERNAL_ERROR), exc, 0.0)
                       for it in unit.items]
        conn.send(results)


class Pool:
    """Forked workers fed one module at a time; a dead worker costs one module."""

    def __init__(self, size: int, options: Options):
        self.ctx = multiprocessing.get_context("fork")
        self.options = options
        self.workers: dict = {}          # conn -> (process, unit or None)
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

    def run(self, units, on_results) -> None:
        """Run `units`; `on_results(results)` returns False to stop early."""
        pending = deque(units)
        for conn in list(self.workers):
            self._feed(conn, pending)
        while any(w[1] is not None for w in self.workers.values()):
            busy = [c for c, w in self.workers.items() if w[1] is not None]
            for conn in multiprocessing.connection.wait(busy):
                proc, unit = self.workers[conn]
                try:
                    results = conn.recv()
                except (EOFError, OSError):
                    proc.join(1)
                    results = [worker_died(it, proc.exitcode) for it in unit.items]
                    del self.workers[conn]
                    conn.close()
                    conn = self._spawn() if pending else None
                if conn is not None:
                    self.workers[conn][1] = None
                if not on_results(results):
                    return
                if conn is not None:
                    self._feed(conn, pending)

    def _feed(self, conn, pending: deque) -> None:
        if pending:
            unit = pending.popleft()
            self.workers[conn][1] = unit
            conn.send(unit)

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


def worker_died(item: Item, exitcode) -> Result:
    how = (f"killed by {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0
           and -exitcode in signal.valid_signals() else f"exit status {exitcode}")
    r = Result(item.id, item.display, item.kind, item.backend, Status.INTERNAL_ERROR)
    r.message = f"the worker process checking this module died ({how})"
    r.report = f"ERROR: {r.message}; this is a bug in nxc (the gate itself runs in a separate child)"
    return r


def cpu_count() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return os.cpu_count() or 1
