"""A cold `nxc test -j 2`: each unit after the units of its closure (issue 33).

The pool's schedule (nxc/gates/pool.py, Schedule) gives a unit out only
when every unit it waits for is done, the first ready in rank order; the
planner's build_order (nxc/incremental/plan.py) makes each unit wait for the
units of the tree modules its closure holds, the most waited-for first.
Then, over a generated tree (bench/gen_tree.py), counted through the
object builds' emit callback (objects.ensure_object calls it, under the
object's lock, exactly when it compiles): no object is compiled twice, a
gate compiles no object of another unit of the run, the objects and the
results are those of a serial run; an object that fails to build is
reported by every gate that links it, while the others pass; and a run
killed half way leaves a cache the next run builds on.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from nxc.gates.pool import Schedule
from nxc.incremental.plan import build_order

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "bench", "gen_tree.py")
IN_TREE = re.compile(r"(^|/)(t\d+)\.nx$")


# ---------------------------------------------------------------- the schedule alone
def _units(*paths):
    return [SimpleNamespace(path=p, real=p, indexed=None) for p in paths]


def _drain(schedule: Schedule, finish_order=None) -> list[str]:
    """The paths in the order a single worker is given them."""
    out = []
    while schedule:
        unit = schedule.take()
        if unit is None:
            schedule.release()
            continue
        out.append(unit.path)
        schedule.done(unit)
    return out


def test_schedule_gives_a_unit_out_only_after_what_it_waits_for():
    a, b, c, d = _units("a", "b", "c", "d")
    # In rank order d first, but d waits for b and c, which wait for a.
    s = Schedule([d, c, b, a], {"d": {"b", "c"}, "c": {"a"}, "b": {"a"}})
    assert s.take() is a and s.take() is None       # b, c, d wait
    s.done(a)
    assert [s.take(), s.take(), s.take()] == [c, b, None]   # rank order among the ready
    s.done(b)
    assert s.take() is None                          # d still waits for c
    s.done(c)
    assert s.take() is d and not s


def test_schedule_releases_a_cycle_in_rank_order():
    a, b, c = _units("a", "b", "c")
    s = Schedule([a, b, c], {"a": {"b"}, "b": {"a"}, "c": {"a"}})
    assert s.take() is None
    assert _drain(s) == ["a", "b", "c"]


def test_build_order_waits_for_the_closure_and_ranks_by_fan_in(tmp_path):
    paths = {}
    for name in ("base", "mid", "top", "alone"):
        paths[name] = str(tmp_path / f"{name}.nx")
        (tmp_path / f"{name}.nx").write_text("// x\n")
    real = {k: os.path.realpath(v) for k, v in paths.items()}
    bundled = "/somewhere/nx_f32.nx"                # not a unit of the run: waited for by none
    units = [SimpleNamespace(path=paths[n], real=real[n], indexed={real[m]: {} for m in closure} | {bundled: {}})
             for n, closure in (("top", ("top", "mid", "base")), ("alone", ("alone",)),
                                ("mid", ("mid", "base")), ("base", ("base",)))]
    order = build_order(units)
    assert [os.path.basename(u.path) for u in order.units] == ["base.nx", "mid.nx", "top.nx", "alone.nx"]
    assert order.waits[paths["top"]] == {paths["mid"], paths["base"]}
    assert order.waits[paths["base"]] == set() and order.waits[paths["alone"]] == set()
    assert "after the 2 units of its closure" in order.reasons[paths["top"]]
    assert "before 2 whose closures hold it" in order.reasons[paths["base"]]
    assert paths["alone"] not in order.reasons
    # --ff: a last failure waits for nothing and goes first.
    first = build_order(units, first=lambda u: u.path == paths["top"])
    assert first.units[0].path == paths["top"] and first.waits[paths["top"]] == set()


# ---------------------------------------------------------------- whole runs
def _tree(tmp_path, n: int, seed: int) -> str:
    tree = str(tmp_path / "tree")
    subprocess.run([sys.executable, GEN, tree, "--modules", str(n), "--seed", str(seed)], check=True,
                   capture_output=True)
    return tree


def _closures(tree: str) -> dict[str, set[str]]:
    """module -> the tree modules of its closure (itself included)."""
    direct = {}
    for name in sorted(os.listdir(tree)):
        if name.endswith(".nx"):
            with open(os.path.join(tree, name), encoding="utf-8") as f:
                direct[name[:-3]] = set(re.findall(r'^import "(t\d+)\.nx"', f.read(), re.M))
    closure: dict[str, set[str]] = {}
    for m in sorted(direct):            # generated imports point to earlier modules
        closure[m] = {m}.union(*(closure[d] for d in direct[m]))
    return closure


def _name(path: str) -> str:
    found = IN_TREE.search(path)
    return found.group(2) if found else os.path.basename(path)


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """Every object emitted for a build (= compiled: ensure_object emits only
    then), logged by pid across the forked workers; `fail` names modules
    whose object build fails as a compiler failure would."""
    from nxc.backend.c import build as c_build
    from nxc.backend.c import objects
    log = tmp_path / "compiled.log"
    state = SimpleNamespace(log=log, fail=set())
    real_ensure = objects.ensure_object

    def ensure_object(key, emit, *args, **kw):
        def logged():
            unit = emit()
            module = _module_of(unit.text)
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()} {key} {module}\n")
            if module in state.fail:
                raise c_build.BuildError(f"the C compiler failed on code generated by nxc: {module} (planted)")
            return unit
        return real_ensure(key, logged, *args, **kw)

    monkeypatch.setattr(objects, "ensure_object", ensure_object)
    return state


def _module_of(c_text: str) -> str:
    """The tree module whose own C this is: the one whose gate it holds
    (names.gate_symbol: nxm_main_<module C id>); "other" for a bundled one."""
    found = set(re.findall(r"\bnxm_main_(t\d{4})_[0-9a-f]{12}\b", c_text))
    assert len(found) <= 1, found
    return found.pop() if found else "other"


def _compiled(state) -> list[tuple[str, str, str]]:
    if not state.log.exists():
        return []
    return [tuple(line.split()) for line in state.log.read_text().splitlines()]


def _nxc_test(tree: str, cache: str, jobs: int, capsys) -> list[dict]:
    from nxc.cli import main
    os.environ["NXC_CACHE_DIR"] = cache
    capsys.readouterr()
    main(["test", tree, "--json", "-j", str(jobs)])
    out = capsys.readouterr().out
    return [e for e in map(json.loads, (l for l in out.splitlines() if l.startswith("{")))
            if e.get("event") == "result"]


def test_cold_tree_each_object_once_and_as_a_serial_run(tmp_path, counted, capsys, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "unused"))
    tree = _tree(tmp_path, 12, 3)
    closures = _closures(tree)
    results = _nxc_test(tree, str(tmp_path / "cache2"), 2, capsys)
    assert len(results) == 12 and all(r["passed"] for r in results), [r["message"] for r in results]
    compiled = _compiled(counted)
    keys = [k for _, k, _ in compiled]
    assert len(keys) == len(set(keys)), "an object compiled twice"
    assert {m for _, _, m in compiled} >= set(closures), compiled
    assert len({pid for pid, _, _ in compiled}) == 2, "the objects were not built across both workers"
    for r in results:
        # Each gate compiles its own module's object, and no other unit's:
        # those were built before it was given out (and the bundled ones by
        # whichever gate came first).
        own = _name(r["id"])
        assert {_name(p) for p in r["recompiled"] if IN_TREE.search(p)} <= {own}, r
        assert "after the" in r["plan_reason"] or closures[own] == {own}, r["plan_reason"]
    # The same objects and results as one worker in collection order.
    serial = _nxc_test(tree, str(tmp_path / "cache1"), 1, capsys)
    assert [(r["id"], r["status"], r["value"]) for r in sorted(serial, key=lambda r: r["id"])] == \
           [(r["id"], r["status"], r["value"]) for r in sorted(results, key=lambda r: r["id"])]
    objs = lambda c: sorted(n for n in os.listdir(os.path.join(c, "c", "obj")) if n.endswith(".o"))
    assert objs(str(tmp_path / "cache1")) == objs(str(tmp_path / "cache2"))


def test_a_failing_object_is_reported_by_every_gate_that_links_it(tmp_path, counted, capsys, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "unused"))
    tree = _tree(tmp_path, 12, 3)
    closures = _closures(tree)
    broken = "t0002"
    assert 1 < sum(broken in c for c in closures.values()) < len(closures)
    counted.fail = {broken}
    results = _nxc_test(tree, str(tmp_path / "cache"), 2, capsys)
    assert len(results) == 12
    for r in results:
        if broken in closures[_name(r["id"])]:
            assert r["status"] == "ERROR" and "rejected the generated code" in r["message"], r
            assert f"{broken} (planted)" in r["report"]
        else:
            assert r["passed"], r


def test_a_killed_cold_run_leaves_a_cache_the_next_run_builds_on(tmp_path):
    tree = _tree(tmp_path, 16, 5)
    cache = str(tmp_path / "cache")
    env = dict(os.environ, NXC_CACHE_DIR=cache)
    proc = subprocess.Popen([sys.executable, "-m", "nxc", "test", tree, "-q", "-j", "2"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    obj = os.path.join(cache, "c", "obj")
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.isdir(obj) and sum(n.endswith(".o") for n in os.listdir(obj)) >= 6:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)     # the runner, its workers, their compilers
    finally:
        proc.wait()
    kept = {n for n in os.listdir(obj) if n.endswith(".o")}
    again = subprocess.run([sys.executable, "-m", "nxc", "test", tree, "--json", "-j", "2"], env=env,
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stdout[-3000:]
    results = [json.loads(l) for l in again.stdout.splitlines() if '"event": "result"' in l]
    assert len(results) == 16 and all(r["passed"] for r in results)
    rebuilt = [_name(p) for r in results for p in r["recompiled"]]
    assert len(rebuilt) == len(set(rebuilt))
    after = {n for n in os.listdir(obj) if n.endswith(".o")}
    assert kept <= after and len(after) - len(kept) == len(rebuilt), (len(kept), len(after), rebuilt)


# ---------------------------------------------------------------- the cold index, made elsewhere
def test_adopted_entries_are_checked_against_the_file_as_any_entry_is(tmp_path, monkeypatch):
    from nxc.incremental.index import ModuleIndex, fresh_entries
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    base = tmp_path / "base.nx"
    top = tmp_path / "top.nx"
    base.write_text("func one() -> i64 {\n    return 1\n}\n")
    top.write_text('import "base.nx"\n\nfunc main() -> i64 {\n    return one() - 1\n}\n')
    from nxc.incremental.keys import RACY_NS
    time.sleep(RACY_NS / 1e9 + 0.2)     # settled (the racy-clean rule): their stats may be recorded
    paths = [os.path.realpath(str(top)), os.path.realpath(str(base))]
    index = ModuleIndex()
    assert index.stale(paths) == paths
    found, counters = fresh_entries(paths)
    assert counters["parsed"] == 2 and found[paths[0]]["imports"] == ["base.nx"]
    index.adopt(found, counters)
    assert index.stale(paths) == []
    assert set(index.closure(paths[0])) == set(paths)
    assert index.counters["parsed"] == 2 and index.counters["stat_hits"] == 0    # counted where it was made
    # A file changed after its entry was made elsewhere: read and parsed again here.
    again = ModuleIndex()
    again.adopt(*fresh_entries(paths))
    top.write_text('import "base.nx"\n\nfunc main() -> i64 {\n    return one() - 2 + 1\n}\n')
    assert again.stale(paths) == [paths[0]]
    assert again.module(paths[0])["digest"] != found[paths[0]]["digest"]
    assert again.counters["parsed"] == 3
