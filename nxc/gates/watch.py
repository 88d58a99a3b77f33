"""`nxc test --watch`: after the run, rerun what a change to a .nx file affects.

The files are polled (their modification time and size, every
`--watch-interval` seconds): no extra dependency, and it works the same on
every file system. What a change affects comes from the import graph each
module's front end resolved in the last round (`Result.modules`): a module is
rerun when it or any module it imports changed. A module that did not
compile has no graph to go by, so any change reruns it; a new .nx file under
the paths is collected and run. Ctrl-C ends the watch; the exit status is the
last round's.
"""
from __future__ import annotations

import os
import sys
import time

from nxc.gates import partition
from nxc.gates.collect import collect, find_modules
from nxc.gates.protocol import EXIT_INTERRUPTED, EXIT_OK


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def snapshot(paths: list[str], extra) -> dict:
    """realpath -> (mtime, size) of every .nx file under `paths` and of `extra`
    (imported modules that live elsewhere, e.g. with -I)."""
    try:
        files = find_modules(paths)
    except Exception:  # noqa: BLE001 - a PATH that went away: watch what is left
        files = []
    found = {os.path.realpath(p) for p in files} | set(extra)
    return {p: _stamp(p) for p in found}


def affected(items: list, changed: set, graphs: dict) -> list:
    """The items whose module or one of its imports changed (all of a module
    without a known graph)."""
    out = []
    for it in items:
        real = os.path.realpath(it.path)
        graph = graphs.get(real)
        if real in changed or not graph or graph & changed:
            out.append(it)
    return out


def watch(args, run, items: list, run_round) -> int:
    """Run `items`, then each affected set on every change; `run_round(items, run)`
    is nxc test's one round (passed in: this module sits below command.py)."""
    paths = args.paths or ["."]
    limit = getattr(args, "watch_iterations", None)
    interval = max(float(getattr(args, "watch_interval", 0.5) or 0.5), 0.01)
    part = partition.parse(args.partition) if getattr(args, "partition", None) else None
    say = sys.stderr if run.json else sys.stdout
    graphs: dict[str, set] = {}

    def one_round(selected: list) -> int:
        status, results = run_round(selected, run)
        for r in results:
            real = os.path.realpath(r.path)
            graphs[real] = {os.path.realpath(m) for m in r.modules}
        return status

    before = snapshot(paths, ())
    status = one_round(items)
    if status == EXIT_INTERRUPTED:      # Ctrl-C during a round (run_round caught it) ends the watch too
        return status
    run.notes = []              # --lf/--ff notes belonged to the first round
    run.failed_first = set()
    rounds = 0
    try:
        while limit is None or rounds < limit:
            extra = set().union(*graphs.values()) if graphs else set()
            print(f"watching {len(before)} .nx file{'s' if len(before) != 1 else ''} under "
                  f"{' '.join(paths)} for changes (Ctrl-C to stop)", file=say, flush=True)
            while True:
                time.sleep(interval)
                now = snapshot(paths, extra)
                changed = {p for p in set(before) | set(now) if before.get(p) != now.get(p)}
                if changed:
                    before = now
                    break
            current = collect(paths, run.options.backends, args.keyword)
            if part is not None:
                current = partition.select(current, part)
            selected = affected(current, changed, graphs)
            names = ", ".join(sorted(os.path.relpath(p) for p in changed))
            print(f"\nchanged: {names}: {len(selected)} item{'s' if len(selected) != 1 else ''} affected",
                  file=say, flush=True)
            rounds += 1
            if selected:
                status = one_round(selected)
                if status == EXIT_INTERRUPTED:
                    break
            for gone in [p for p in graphs if not os.path.exists(p)]:
                del graphs[gone]
    except KeyboardInterrupt:           # Ctrl-C while waiting for a change
        pass
    print("\nwatch ended", file=say, flush=True)
    return status if status is not None else EXIT_OK
