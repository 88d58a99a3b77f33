#!/usr/bin/env python3
"""Differential testing: generated programs on the C backend at -O0 and -O2
and on the Python backend (optionally also with --soft-f32); any difference
is a bug.

    python bench/difftest.py --count 20000 --seed 1 --save difftest-failures
    python bench/difftest.py --count 200 --seed 5 --soft-f32 --reduce

Programs come from bench/gen_program.py (seed = program number). For speed,
BATCH programs share one module (one C build per optimisation level, one
Python-backend load); each program's `run()` is called on its own in a forked
child per configuration (nxc.gates.isolate.run_isolated), so a crash or a hang costs
one batch, which is then re-run program by program. For every program that
disagrees (or whose fold check failed: the checker's constant folding and the
run-time arithmetic differ), the standalone program is saved to the --save
folder with the results of each configuration, and with --reduce also shrunk
by bench/reduce_program.py. The summary line is

    tried N programs (B batches) in S s: D disagreements, F fold mismatches, I invalid

and the exit status is 0 only when D, F and I are all 0.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:                                    # an nxc on PYTHONPATH (e.g. an older tree) wins
    import nxc  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, ".."))

import gen_program  # noqa: E402
import gen_kernels  # noqa: E402
from nxc.diagnostics import CompileError, Diagnostics  # noqa: E402
from nxc.check.frontend import check_file  # noqa: E402
from nxc.gates.isolate import run_isolated  # noqa: E402

# A configuration: (name, backend, C build ("opt" or "opt/march", nxc.backend.c.build),
# soft-f32, checked C). Every C configuration runs each program at every count of THREADS
# (nxc_set_threads on the loaded library, as the API's threads= does), the results named
# "<name>/t<count>"; the Python backend runs sys_parallel_for's chunks in order, once.
CONFIGS = [("c-O0", "c", "0", False, False),
           ("c-O2", "c", "2", False, False),                  # -O2 -march=native: vectorized (AVX2)
           ("c-x86-64", "c", "2/x86-64", False, False),       # -O2, SSE2 only: 4-lane vectors
           # checked C at -O0: its -O2 build costs three times the compile of all the others
           ("c-chk", "c", "0", False, True),
           ("py", "py", None, False, False)]
# also built with --all-configs: -O3 -march=native (the linear kernels' own build) and checked
# C at -O2 (nxc run's default)
EXTRA_CONFIGS = [("c-native", "c", "native", False, False), ("c-chk-O2", "c", "2", False, True)]
SOFT_CONFIGS = [("c-O2-soft", "c", "2", True, False)]
THREADS = (1, 2, 3, 7)
# the configurations before issue 28 (the suite's quick batch)
BASIC_CONFIGS = [c for c in CONFIGS if c[0] in ("c-O0", "c-O2", "py")]

OK, TRAP = 0, 1
KERNELS_ONLY = False          # --kernels-only: programs of bench/gen_kernels.py's loops only


def front_end(path: str, soft_f32: bool = False):
    """(program, warnings) -- raises CompileError."""
    diags = Diagnostics()
    program = check_file(path, diags=diags, soft_f32=soft_f32)
    return program, list(diags.warnings)


def front_end_text(text: str, workdir: str, soft_f32: bool = False):
    path = os.path.join(workdir, "single.nx")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return front_end(path, soft_f32)


def run_entries(program, entries: list[str], backend: str, opt: str | None,
                timeout: float, checked: bool = False,
                threads: tuple[int, ...] = (1,)) -> tuple[str, list[list[tuple[int, int]]] | str]:
    """Call each entry (func () -> i64) once per thread count, in a forked child each.

    -> ("ok", [[(status, value), ...] per thread count]) with status OK or TRAP (a
       run-time error), or (kind, message) for a crash / timeout / error of the whole
       child. The Python backend ignores `threads` (one in-order run)."""
    if backend == "c":
        import cffi
        from nxc.backend.c.build import build
        from nxc.backend.c.emit import emit_c
        emitted = emit_c(program, checked=checked)
        # ABI mode, as gate runs build (no Python.h, no wrappers: half the compile); the
        # exported nxw_<function> entry points are declared from the emitted cdef
        built = build(emitted, opt=opt, use_cache=False, abi=True)

        def call(n):
            ffi = cffi.FFI()
            ffi.cdef(emitted.cdef)
            lib = ffi.dlopen(built.path)
            if lib.nxc_set_threads(n) != n:
                raise RuntimeError(f"nxc_set_threads({n}) refused")
            out = []
            for name in entries:
                slot = ffi.new("int64_t *")
                status = getattr(lib, "nxw_" + name)(slot)
                out += [OK if status == 0 else TRAP, slot[0] if status == 0 else 0]
            return out
        try:
            # one forked child per thread count: each starts from the library's initial
            # globals (a second run in the same process would see the first one's)
            values = []
            for n in threads:
                ended = run_isolated(lambda: call(n), timeout)
                if ended.kind != "ok":
                    break
                values += ended.value
        finally:
            try:
                os.remove(built.path)
            except OSError:
                pass
    else:
        from nxc.backend.py.run import RECURSION_LIMIT
        from nxc.backend.registry import backend_for
        prepared = backend_for("py").prepare(program)

        def call():
            sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
            mod = prepared.loaded
            out = []
            for name in entries:
                try:
                    out += [OK, mod.function(name)()]
                except Exception:  # noqa: BLE001 - a located runtime error
                    out += [TRAP, 0]
            return out
        ended = run_isolated(call, timeout)
    if ended.kind != "ok":
        return ended.kind, ended.message
    data = values if backend == "c" else ended.value
    pairs = [(data[i], data[i + 1]) for i in range(0, len(data), 2)]
    per = len(entries)
    return "ok", [pairs[k * per:(k + 1) * per] for k in range(len(pairs) // per if per else 0)]


def describe(result) -> str:
    status, value = result
    if status == TRAP:
        return "runtime error"
    return f"{value} (0x{value & 0xFFFFFFFFFFFFFFFF:016X})"


def is_fold_mismatch(result) -> bool:
    status, value = result
    return status == OK and (value & gen_program.FOLD_MASK) == gen_program.FOLD_SENTINEL


def is_kernel_mismatch(result) -> bool:
    """run() returned KERNEL_SENTINEL + k: a threaded kernel's output != its scalar reference."""
    status, value = result
    return status == OK and (value & gen_program.FOLD_MASK) == gen_kernels.KERNEL_SENTINEL


class Stats:
    def __init__(self):
        self.tried = 0
        self.batches = 0
        self.disagreements: list[int] = []
        self.fold_mismatches: list[int] = []
        self.invalid: list[int] = []
        self.warned: list[int] = []
        self.traps = 0
        self.reruns = 0
        self.soft_batches = 0

    def line(self, seconds: float) -> str:
        return (f"tried {self.tried} programs ({self.batches} batches) in {seconds:.0f} s: "
                f"{len(self.disagreements)} disagreements, {len(self.fold_mismatches)} fold mismatches, "
                f"{len(self.invalid)} invalid, {len(self.warned)} with warnings, "
                f"{self.traps} runtime errors (all configs agreeing), {self.reruns} batch re-runs, "
                f"{self.soft_batches} batches also with --soft-f32")


def run_batch(seeds: list[int], configs, workdir: str, timeout: float, threads=None) -> dict:
    """{seed: {config name: (status, value) | failure text}}, or raises CompileError."""
    text, entries = gen_program.generate_batch(seeds, KERNELS_ONLY)
    path = os.path.join(workdir, f"batch_{seeds[0]}.nx")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    threads = THREADS if threads is None else threads
    results: dict[int, dict] = {s: {} for s in seeds}
    programs = {}
    for name, backend, opt, soft, checked in configs:
        if soft not in programs:
            programs[soft] = front_end(path, soft)
        program, _ = programs[soft]
        counts = threads if backend == "c" else (1,)
        kind, data = run_entries(program, entries, backend, opt, timeout, checked, counts)
        for k, n in enumerate(counts):
            label = f"{name}/t{n}" if backend == "c" else name
            for i, s in enumerate(seeds):
                results[s][label] = data[k][i] if kind == "ok" else f"{kind}: {data}"
    os.remove(path)
    forget_parse(path, text)
    return results, programs[False][1]


def forget_parse(path: str, text: str) -> None:
    """Drop the batch's entry from the on-disk parse cache (each batch is parsed once)."""
    try:
        from nxc.syntax import loader
        from nxc.diagnostics import SourceFile
        from nxc.paths import cache_dir
        key = loader._parse_key(SourceFile(os.path.realpath(path), text))
        os.remove(os.path.join(cache_dir(), "parse", key + ".pickle"))
    except (AttributeError, ImportError, OSError, TypeError):
        pass


def run_single(seed: int, configs, workdir: str, timeout: float, threads=None) -> dict:
    return run_batch([seed], configs, workdir, timeout, threads)[0][seed]


def verdict(res: dict) -> str:
    """"same", "fold" or "differ" (a kernel that differs from its reference is a "differ")."""
    values = list(res.values())
    if any(isinstance(v, str) for v in values) or len(set(values)) > 1:
        return "differ"
    if is_kernel_mismatch(values[0]):
        return "differ"
    if is_fold_mismatch(values[0]):
        return "fold"
    return "same"


def save_case(folder: str, seed: int, res: dict, kind: str, reduce: bool, configs) -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{kind}_{seed}.nx")
    with open(path, "w", encoding="utf-8") as f:
        f.write(gen_program.generate(seed, KERNELS_ONLY))
    with open(path[:-3] + ".json", "w", encoding="utf-8") as f:
        json.dump({"seed": seed, "kind": kind,
                   "results": {k: (v if isinstance(v, str) else describe(v)) for k, v in res.items()}}, f, indent=1)
    if reduce:
        import reduce_program
        # the Python backend and the configurations that differ from it (two at most: each
        # candidate runs on every one), or all of them agreeing on a kernel/fold sentinel
        ref = res.get("py")
        names = ["py"] + [k for k, v in res.items() if k != "py" and v != ref][:2]
        sentinel = ref is not None and not isinstance(ref, str) and (is_kernel_mismatch(ref) or is_fold_mismatch(ref))
        if len(names) == 1:
            names.append(next(k for k in res if k != "py"))
        out = reduce_program.reduce_file(path, path[:-3] + ".reduced.nx", configs=names,
                                         fold=(kind == "fold" or sentinel), verbose=False)
        print(f"    reduced to {out}", flush=True)
    return path


def main(argv: list[str] | None = None) -> int:
    global KERNELS_ONLY, THREADS
    saved = KERNELS_ONLY, THREADS
    try:
        return _main(argv)
    finally:
        KERNELS_ONLY, THREADS = saved          # a caller in the same process (the tests) is unchanged


def _main(argv: list[str] | None) -> int:
    global KERNELS_ONLY, THREADS
    ap = argparse.ArgumentParser(description="Differential testing of nxc's backends on generated programs.")
    ap.add_argument("--count", type=int, default=100, help="programs to try (default 100)")
    ap.add_argument("--seed", type=int, default=1, help="first program seed (default 1)")
    ap.add_argument("--batch", type=int, default=20, help="programs per module (default 20)")
    ap.add_argument("--soft-f32", action="store_true", help="also run C -O2 with --soft-f32")
    ap.add_argument("--soft-every", type=int, default=1, metavar="K",
                    help="with --soft-f32: only every K-th batch (default 1: all)")
    ap.add_argument("--save", default="difftest-failures", metavar="DIR",
                    help="folder for disagreeing programs (default difftest-failures/)")
    ap.add_argument("--reduce", action="store_true", help="shrink each saved program (slow)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per batch and configuration")
    ap.add_argument("--json", metavar="FILE", help="write the final counts as JSON to FILE")
    ap.add_argument("--kernels-only", action="store_true",
                    help="programs of issue 28's threaded kernel loops only (gen_program.py --kernels-only)")
    ap.add_argument("--all-configs", action="store_true", help="also C -O3 -march=native")
    ap.add_argument("--threads", default="1,2,3,7", metavar="N,N,..",
                    help="thread counts every C configuration runs at (default 1,2,3,7)")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    KERNELS_ONLY = args.kernels_only
    try:
        THREADS = tuple(int(n) for n in args.threads.split(",") if n.strip())
    except ValueError:
        ap.error(f"--threads: not a list of numbers: {args.threads}")
    if not THREADS or min(THREADS) < 1:
        ap.error("--threads: counts must be >= 1")

    configs = CONFIGS + (EXTRA_CONFIGS if args.all_configs else []) + (SOFT_CONFIGS if args.soft_f32 else [])
    stats = Stats()
    start = time.time()
    last_report = start
    with tempfile.TemporaryDirectory(prefix="nx-difftest-") as workdir:
        os.environ.setdefault("NXC_CACHE_DIR", os.path.join(workdir, "cache"))
        seed = args.seed
        end = args.seed + args.count
        while seed < end:
            seeds = list(range(seed, min(seed + args.batch, end)))
            seed = seeds[-1] + 1
            stats.batches += 1
            batch_configs = configs if stats.batches % max(args.soft_every, 1) == 1 % max(args.soft_every, 1) \
                else [c for c in configs if not c[3]]
            try:
                results, warnings = run_batch(seeds, batch_configs, workdir, args.timeout)
            except CompileError:
                # a generator bug: find the invalid programs, run the others together
                valid = []
                for s in seeds:
                    try:
                        front_end_text(gen_program.generate(s, KERNELS_ONLY), workdir)
                        valid.append(s)
                    except CompileError as exc:
                        stats.invalid.append(s)
                        print(f"  INVALID program {s}: {exc.diagnostics[0].render().splitlines()[0]}", flush=True)
                try:
                    results, warnings = run_batch(valid, batch_configs, workdir, args.timeout) if valid else ({}, [])
                except CompileError:
                    results, warnings = None, []
            if warnings:
                stats.warned.append(seeds[0])
                if not args.quiet:
                    print(f"  warnings in batch {seeds[0]}: {warnings[0].render().splitlines()[0]}", flush=True)
            if results is None or any(isinstance(v, str) for r in results.values() for v in r.values()):
                # a crash / timeout somewhere: program by program
                stats.reruns += 1
                results = {}
                for s in seeds:
                    if s in stats.invalid:
                        continue
                    try:
                        results[s] = run_single(s, batch_configs, workdir, args.timeout)
                    except CompileError as exc:
                        stats.invalid.append(s)
                        print(f"  INVALID program {s}: {exc.diagnostics[0].render().splitlines()[0]}", flush=True)
            for s, res in results.items():
                stats.tried += 1
                v = verdict(res)
                if v == "same" and list(res.values())[0][0] == TRAP:
                    stats.traps += 1
                if v == "same":
                    continue
                (stats.disagreements if v == "differ" else stats.fold_mismatches).append(s)
                print(f"  {'DISAGREEMENT' if v == 'differ' else 'FOLD MISMATCH'} program {s}: "
                      + ", ".join(f"{k}={v if isinstance(v, str) else describe(v)}" for k, v in res.items()),
                      flush=True)
                path = save_case(args.save, s, res, "fold" if v == "fold" else "differ", args.reduce,
                                 batch_configs)
                print(f"    saved {path}", flush=True)
            now = time.time()
            stats.soft_batches += any(c[3] for c in batch_configs)
            if not args.quiet and now - last_report > 30:
                last_report = now
                print("  " + stats.line(now - start), flush=True)
    elapsed = time.time() - start
    print(stats.line(elapsed), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"tried": stats.tried, "batches": stats.batches, "seconds": round(elapsed, 1),
                       "first_seed": args.seed, "configs": [c[0] for c in configs],
                       "disagreements": stats.disagreements, "fold_mismatches": stats.fold_mismatches,
                       "invalid": stats.invalid, "warned_batches": stats.warned, "runtime_errors": stats.traps,
                       "soft_f32_batches": stats.soft_batches, "batch_size": args.batch},
                      f, indent=1)
    return 0 if not (stats.disagreements or stats.fold_mismatches or stats.invalid) else 1


if __name__ == "__main__":
    sys.exit(main())
