"""Whole-tree figures: `nxc test TREE -q -j 2` on generated trees (bench/gen_tree.py).

    python bench/tree_bench.py                      # N = 50 and 200, random graph
    python bench/tree_bench.py --sizes 50 200 800 --graph random
    python bench/tree_bench.py --sizes 800 --graph clustered --out /tmp/trees

For each N: a fresh tree and a fresh cache folder, then four runs in order
- cold: nothing cached;
- no change: the same command again;
- leaf body edited: `gen_tree.py --edit body` on t0000.nx, the bottom
  module every chain of imports ends in (the interface stays the same);
- leaf interface edited: `gen_tree.py --edit interface` on t0000.nx (a new
  exported const);
each with wall time, CPU time (user + system of nxc and everything it ran,
compilers included: os.wait4's rusage, plus that of any process of the run
that outlived its parent, reaped here as the child subreaper and shown as
"orphans" on the row), the peak RSS of the largest process,
and the cache folder's size on disk after the run. Every run must pass all
its gates: a row of a run that failed is an error, not a figure.

The yardstick of issue 21 brackets the cold run: the sum over modules (the
tree's and the bundled ones they import) of one `cc -c` of that module's own
C, as the gates' objects are compiled (nxc/backend/c/objects.py), CPU time of
the compiler processes only, measured right before the cold run and again
right after it, on the same C files (written first, with a cache folder of
their own, so the cold run stays cold). This host's speed drifts by up to 30%
within an hour: the cold run is compared with the mean of the two, and the
drift between them is printed beside the ratios. With more than one size,
a last line says, between each size and the next, how much the cold run's
CPU grew, how much the yardstick's grew, and the ratio of the two (above 1
only when nxc's own work grows faster than the C it compiles).

Then, on the module at the top of the tree (the last one, t{N-1}.nx):
- `nxc check TOP` with no verdicts yet (every body of its closure checked),
  again (nothing changed: every body's clean verdict reused), and after a
  body edit of the leaf t0000.nx (only the leaf re-checked);
- `nxc.load(TOP)` in a fresh process (check, build for the Python API or
  take the cached build, load);
- in this process, the front end of TOP split in phases (best of 3): load
  the graph from the parse cache, the declarations of the whole closure,
  the bodies of the whole closure, the declarations again with the bodies of
  TOP alone (CPU time; the graph's load from the disk's parse cache once, the
  checker phases best of 3): what a check of one module against its imports
  costs when their declarations are collected from the ASTs
  (nxc/check/summary.py).

nxc's own bytecode is compiled first (compileall), as pip does when it
installs the wheel.

Wall time on a shared machine depends on the load; CPU time is the figure to
compare between runs made at different times.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from nxc.incremental.keys import RACY_NS  # noqa: E402  (the racy window of the module index)


def nxc_command() -> list[str]:
    return [sys.executable, "-m", "nxc"]


def folder_bytes(folder: str) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total


def _subreaper(on: bool) -> bool:
    """Linux's PR_SET_CHILD_SUBREAPER for this process: a process of the run
    whose parent ends before it is reparented here, not to init, and its CPU
    time can be counted (timed). False where it cannot be set."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    return ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0) == 0


def _reap_orphans(deadline_s: float = 10.0) -> tuple[int, float, float, int]:
    """(how many, user s, system s, how many still running after `deadline_s`)
    of the children reparented here: call it once the command was waited for
    and this process has no other child."""
    count, user, system = 0, 0.0, 0.0
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return count, user, system, 0
        if pid:
            count, user, system = count + 1, user + usage.ru_utime, system + usage.ru_stime
        elif time.monotonic() > deadline:
            left = sum(1 for entry in os.listdir("/proc") if entry.isdigit() and _parent_of(entry) == os.getpid())
            return count, user, system, left
        else:
            time.sleep(0.02)


def _parent_of(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def timed(cmd: list[str], env: dict) -> dict:
    """Run `cmd`; wall, CPU, peak RSS, output. CPU is that of the whole process
    tree: os.wait4's rusage covers only the processes waited for, down the
    tree, so the bench is the child subreaper during the run and adds the CPU
    of any process of the run that outlived its parent ("orphans"; nxc's gate
    hosts were, until each worker waited for its own: 2% of a cold run)."""
    reaper = _subreaper(True)
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = proc.stdout.read().decode("utf-8", "replace")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        orphans, o_user, o_sys, left = _reap_orphans() if reaper else (0, 0.0, 0.0, 0)
    finally:
        if reaper:
            _subreaper(False)
    user, system = usage.ru_utime + o_user, usage.ru_stime + o_sys
    return {"wall": wall, "cpu": user + system, "user": user, "sys": system, "rss_mb": usage.ru_maxrss / 1024,
            "orphans": orphans, "orphan_cpu": o_user + o_sys, "orphans_left": left,
            "status": proc.returncode, "output": out}


def bench_tree(n: int, graph: str, seed: int, out_dir: str, jobs: int, yardstick: bool = True,
               test_edits: bool = True) -> list[dict]:
    tree = os.path.join(out_dir, f"tree{n}-{graph}")
    cache = os.path.join(out_dir, f"cache{n}-{graph}")
    # The last run's tree and cache are moved aside, and removed once every
    # size is done: removing their ~20,000 files here made each file the cold
    # run then creates cost ~10x the kernel's CPU (ext4 without a journal
    # skips, one by one, the inodes freed in the last minutes: perf showed
    # `recently_deleted`; docs/performance.md). A user's cold run does not
    # follow the removal of a whole cache.
    for old in (tree, cache):
        if os.path.lexists(old):
            os.replace(old, os.path.join(out_dir, f".old-{os.getpid()}-{time.time_ns()}-{os.path.basename(old)}"))
    gen = [sys.executable, os.path.join(HERE, "gen_tree.py")]
    made = subprocess.run(gen + [tree, "--modules", str(n), "--graph", graph, "--seed", str(seed)],
                          check=True, capture_output=True, text=True)
    print("# " + (made.stdout + made.stderr).strip().replace("\n", "\n# "), flush=True)
    # A stat taken within keys.RACY_NS of a file's change is not recorded in the module index (the
    # file could change again in the same timestamp tick), so a tree indexed right after it was
    # written has every file read and digested again by the next run: 0.5 s instead of 0.25 s for
    # the first no-change run at 800 modules. A user's tree was not all written in the last two
    # seconds: the runs start once the tree is older than that.
    time.sleep(RACY_NS / 1e9 + 0.1)
    env = dict(os.environ, NXC_CACHE_DIR=cache)
    # As a user's install runs: Python keeps nxc's bytecode (this machine's environment sets
    # PYTHONDONTWRITEBYTECODE, which made every run compile nxc's ~140 modules: +80 ms a run)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    test = nxc_command() + ["test", tree, "-q", "-j", str(jobs)]
    leaf = os.path.join(tree, "t0000.nx")
    top = os.path.join(tree, f"t{n - 1:04d}.nx")
    rows = []
    steps = [("cold", None, test), ("no change", None, test),
             ("top body edited (imported by none)", ("body", top), test), ("leaf body edited", ("body", leaf), test),
             ("leaf interface edited", ("interface", leaf), test),
             ("nxc check TOP, no verdicts", None, nxc_command() + ["check", top]),
             ("nxc check TOP, no change", None, nxc_command() + ["check", top]),
             ("nxc check TOP, leaf body edited", ("body", leaf), nxc_command() + ["check", top]),
             ("nxc.load(TOP)", None, [sys.executable, "-c", f"import nxc; nxc.load({top!r})"])]
    if not test_edits:      # --no-test-edits: the two `nxc test` runs after an edit of t0000 are left out
        steps = [st for st in steps if not (st[1] and st[1][1] == leaf and st[2] is test)]
    sources = yardstick_sources(tree, out_dir) if yardstick else None
    if sources is not None:
        rows.append(own_c_yardstick(sources, n, graph, "before the cold run"))
    for step, edit, cmd in steps:
        if edit:
            subprocess.run(gen + ["--edit", *edit], check=True, capture_output=True)
        r = timed(cmd, env)
        if r["status"] != 0:
            sys.exit(f"{step} run of the {n}-module tree failed (exit {r['status']}):\n{r['output'][-3000:]}")
        r.update(n=n, graph=graph, step=step, cache_mb=folder_bytes(cache) / 1e6)
        rows.append(r)
        print(f"{n:>4} {graph:<9} {step:<32} wall {r['wall']:7.1f} s  cpu {r['cpu']:7.1f} s "
              f"(user {r['user']:6.1f} s, sys {r['sys']:5.1f} s)  "
              f"rss {r['rss_mb']:6.0f} MB  cache {r['cache_mb']:7.1f} MB"
              + (f"  orphans {r['orphans']} ({r['orphan_cpu']:.1f} s cpu)" if r["orphans"] else "")
              + (f"  {r['orphans_left']} still running" if r["orphans_left"] else ""), flush=True)
        if step == "cold" and sources is not None:
            rows.append(own_c_yardstick(sources, n, graph, "after the cold run"))
            print(ratios(rows), flush=True)
    split = front_end_split(top, cache)
    print(f"# {n} {graph}: front end of {os.path.basename(top)} (closure {split['modules']} modules): "
          + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in split.items() if k != "modules"), flush=True)
    return rows


def yardstick_sources(tree: str, out_dir: str) -> list[str]:
    """The C file of each module's object (`nxc emit-c --object`'s text:
    nxc.cli.module_object_c, the text a whole check of its program gives,
    tests/test_emit_object.py), written under `out_dir` by bench/c_lines.py
    with a cache folder of its own: the bench's cache stays empty for the
    cold run. Not timed. The folder goes with main's last clean-up (removing
    files now would slow the runs that follow: bench_tree's comment)."""
    folder = os.path.join(out_dir, f".old-{os.getpid()}-{time.time_ns()}-yardstick")
    os.makedirs(folder)
    env = dict(os.environ, NXC_CACHE_DIR=os.path.join(folder, "cache"))
    c_dir = os.path.join(folder, "c")          # made by c_lines.py --out
    subprocess.run([sys.executable, os.path.join(HERE, "c_lines.py"), tree, "--out", c_dir], env=env, cwd=ROOT,
                   check=True, stdout=subprocess.DEVNULL)
    return [os.path.join(c_dir, name) for name in sorted(os.listdir(c_dir))]


def own_c_yardstick(sources: list[str], n: int, graph: str, when: str) -> dict:
    """CPU seconds of one `cc -c` of each of `sources` (nxc's object flags),
    compiler processes only."""
    import resource
    from nxc.backend.c.build import compiler
    from nxc.backend.c.objects import object_flags
    from nxc.paths import runtime_dir
    cpu = 0.0
    lines = 0
    for c_file in sources:
        with open(c_file, encoding="utf-8") as f:
            lines += sum(1 for _ in f)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([*compiler(), *object_flags("2"), "-I", runtime_dir(), "-c", c_file,
                        "-o", c_file + ".o"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"{n:>4} {graph:<9} {'yardstick ' + when:<32} cpu {cpu:7.1f} s  "
          f"({len(sources)} modules, {lines} lines of C; load {os.getloadavg()[0]:.2f})", flush=True)
    return {"n": n, "graph": graph, "step": f"yardstick {when}: one cc -c per module ({len(sources)})",
            "wall": float("nan"), "cpu": cpu, "rss_mb": float("nan"), "cache_mb": float("nan")}


def ratios(rows: list[dict]) -> str:
    """The cold run against the mean of the yardsticks that bracket it."""
    cold = next(r for r in rows if r["step"] == "cold")
    sticks = [r["cpu"] for r in rows if r["step"].startswith("yardstick")]
    mean = sum(sticks) / len(sticks)
    return (f"# {cold['n']} {cold['graph']}: cold / yardstick (mean of {len(sticks)}: {mean:.1f} s): "
            f"CPU {cold['cpu'] / mean:.3f}x, wall {cold['wall'] / mean:.3f}x; "
            f"yardstick after / before {sticks[-1] / sticks[0]:.3f} (the host's drift meanwhile)")


def growth(rows: list[dict]) -> list[str]:
    """Between each size and the next: how much the cold run's CPU grew, how
    much the yardstick's did (the C a module compiles to, and the host's
    drift between the two sizes' runs), and the ratio of the two: above 1
    when nxc's own work grows faster than the C it compiles (issue 33's
    target: the cold CPU grows at most 2.0x from 800 to 1,600 modules)."""
    by_n: dict = {}
    for r in rows:
        if r["step"] == "cold":
            by_n.setdefault(r["n"], {})["cold"] = r["cpu"]
        elif r["step"].startswith("yardstick"):
            by_n.setdefault(r["n"], {}).setdefault("sticks", []).append(r["cpu"])
    sizes = sorted(n for n, v in by_n.items() if "cold" in v)
    out = []
    for a, b in zip(sizes, sizes[1:]):
        cold = by_n[b]["cold"] / by_n[a]["cold"]
        line = f"# {a} -> {b} modules ({b / a:.2f}x): cold CPU grew {cold:.3f}x"
        if by_n[a].get("sticks") and by_n[b].get("sticks"):
            stick = statistics.fmean(by_n[b]["sticks"]) / statistics.fmean(by_n[a]["sticks"])
            line += f", the yardstick {stick:.3f}x; cold / yardstick grew {cold / stick:.3f}x"
        out.append(line)
    return out


def front_end_split(top: str, cache: str) -> dict:
    """Seconds of each phase of TOP's front end, best of 3, in this process
    (the parse cache of `cache` is warm after the runs above)."""
    os.environ["NXC_CACHE_DIR"] = cache
    from nxc.check.checker import Checker
    from nxc.syntax.loader import load_graph
    from nxc.diagnostics import Diagnostics
    best: dict = {}
    for round_ in range(3):
        t0 = time.process_time()
        diags = Diagnostics()
        graph = load_graph(top, None, diags)
        t1 = time.process_time()
        full = Checker(graph, diags)
        funcs = full.check_declarations()
        t2 = time.process_time()
        full.check_bodies(funcs)
        t3 = time.process_time()
        one = Checker(graph, Diagnostics())
        one.check_bodies(one.check_declarations(), only={graph.root.source.path})
        t4 = time.process_time()
        if round_ == 0:             # from the disk's parse cache; later rounds hit this process's copy
            best["load graph (parse cache on disk)"] = t1 - t0
        for k, v in (("declarations", t2 - t1), ("all bodies", t3 - t2),
                     ("declarations + TOP's bodies", t4 - t3)):
            best[k] = min(best.get(k, v), v)
        best["modules"] = len(graph.modules)
    return best


def markdown(rows: list[dict]) -> str:
    lines = ["| N | graph | run | wall | CPU | peak RSS | cache on disk |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["wall"] != r["wall"]:          # the yardstick: compiler CPU only
            lines.append(f"| {r['n']} | {r['graph']} | {r['step']} | | {r['cpu']:.1f} s | | |")
            continue
        lines.append(f"| {r['n']} | {r['graph']} | {r['step']} | {r['wall']:.1f} s | {r['cpu']:.1f} s "
                     f"| {r['rss_mb']:.0f} MB | {r['cache_mb']:.1f} MB |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 200], help="tree sizes (default: 50 200)")
    ap.add_argument("--graph", choices=("random", "clustered"), default="random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join("/tmp", "nxc-tree-bench"),
                    help="where trees and their cache folders go (default: /tmp/nxc-tree-bench)")
    ap.add_argument("--no-yardstick", action="store_true", help="skip the sum of one cc -c per module")
    ap.add_argument("--no-test-edits", action="store_true",
                    help="leave out the `nxc test` runs after the leaf edits (each about a cold run while a "
                         "gate's C holds its closure); the `nxc check` rows after an edit stay")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    # nxc's bytecode first, as pip writes it when it installs the wheel: the
    # runs below keep it (bench_tree drops PYTHONDONTWRITEBYTECODE), but the
    # first of them would otherwise count compiling every module it imports.
    import compileall
    compileall.compile_dir(os.path.join(ROOT, "nxc"), quiet=1)
    from nxc.gates.batch import batch_size
    print(f"# nxc test takes up to {batch_size()} ready units at once (NXC_BATCH; docs/runner.md)", flush=True)
    rows = []
    for n in args.sizes:
        rows += bench_tree(n, args.graph, args.seed, args.out, args.jobs, not args.no_yardstick,
                           test_edits=not args.no_test_edits)
    for line in growth(rows):
        print(line)
    print()
    print(markdown(rows))
    for name in os.listdir(args.out):
        if name.startswith(".old-"):
            shutil.rmtree(os.path.join(args.out, name), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
