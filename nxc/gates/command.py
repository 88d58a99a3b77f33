"""`nxc test`: collect, run (in a pool of workers when -j > 1), report, exit status."""
from __future__ import annotations

import os
import sys
import time

from nxc.gates import execute, pool
from nxc.gates.collect import UsageError, collect, group_units
from nxc.gates.execute import Options, Result
from nxc.gates.protocol import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_NO_TESTS, EXIT_OK, EXIT_USAGE
from nxc.gates.report import Reporter, write_junit


def options_from_args(args) -> Options:
    backend = getattr(args, "backend", "c")
    return Options(backends=("c", "py") if backend == "both" else (backend,),
                   timeout=getattr(args, "timeout", 60.0), opt=getattr(args, "opt", "2"),
                   use_cache=not getattr(args, "no_cache", False), include=list(getattr(args, "include", []) or []),
                   soft_f32=getattr(args, "soft_f32", False), checked=not getattr(args, "unchecked", False))


def main(args) -> int:
    try:
        return _main(args)
    except UsageError as exc:
        print(f"nxc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_FAIL


def _main(args) -> int:
    options = options_from_args(args)
    if options.timeout <= 0:
        raise UsageError("--timeout must be positive")
    jobs = args.jobs if args.jobs is not None else pool.cpu_count()
    if jobs < 0:
        raise UsageError("-j must be 0 (one per CPU) or more")
    jobs = jobs or pool.cpu_count()
    if "py" in options.backends and not execute.py_backend_available():
        raise UsageError("the Python backend (nxc.backend.py.backend) is not available in this installation; use --backend c")
    verbosity = (args.verbose or 0) - (args.quiet or 0)

    items = collect(args.paths or ["."], options.backends, args.keyword)
    if args.list:
        for it in items:
            print(it.id if verbosity < 0 else f"{it.id}  ({it.kind})")
        if verbosity >= 0:
            print(f"{len(items)} item{'s' if len(items) != 1 else ''} collected")
        return EXIT_OK if items else EXIT_NO_TESTS
    if not items:
        print("nxc test: no .nx modules found" + (f" matching -k '{args.keyword}'" if args.keyword else ""),
              file=sys.stderr)
        return EXIT_NO_TESTS

    units = group_units(items)
    workers = max(1, min(jobs, len(units)))
    reporter = Reporter(verbosity, args.json, len(items))
    reporter.header(items, workers, options)
    results: list[Result] = []
    stop = {"early": False}

    def on_results(batch: list[Result]) -> bool:
        for r in batch:
            results.append(r)
            reporter.result(r)
        if args.exitfirst and any(not r.passed for r in batch):
            stop["early"] = True
            return False
        return True

    start = time.perf_counter()
    interrupted = False
    execute.warm_up()
    try:
        if workers == 1:
            for unit in units:
                if not on_results(execute.run_unit(unit, options)):
                    break
        else:
            # Biggest modules first: their front ends are the long poles.
            ordered = sorted(units, key=lambda u: -_size(u.path))
            workers_pool = pool.Pool(workers, options)
            finished = False
            try:
                workers_pool.run(ordered, on_results)
                finished = not stop["early"]
            finally:
                workers_pool.close(kill=not finished)     # -x, Ctrl-C, a closed stdout: stop what still runs
    except KeyboardInterrupt:
        interrupted = True
    elapsed = time.perf_counter() - start
    order = [it.id for it in items]
    reporter.finish(results, order, elapsed, len(items) - len(results), stop["early"], interrupted)
    if args.junit_xml:
        write_junit(args.junit_xml, results, order, elapsed)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if results and all(r.passed for r in results) and len(results) == len(items) else EXIT_FAIL


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
