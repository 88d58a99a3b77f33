"""The planner of `nxc test` (nxc/incremental/plan.py): one decision per unit, with its reason.

Every result says which path its unit took ("plan": cached, recorded or
full) and why ("plan_reason"), in --json and under each line of -v; no
path is taken silently. The worker's step is also asked directly, with a
backend that keeps no records and with a unit the runner could not index.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

from nxc.gates.execute import Options
from nxc.incremental import plan
from tree_support import write_settled

FILES = {
    "leaf.nx": "func f(x: i64) -> i64 {\n    if x > 100 { return x }\n    return x + 1\n}\n",
    "top.nx": 'import "leaf.nx"\nfunc main() -> i64 {\n    if f(3) != 4 { return 1 }\n    return 0\n}\n',
}


def _run(tree, cache: str, *args: str) -> tuple[dict[str, dict], str]:
    env = dict(os.environ, NXC_CACHE_DIR=cache)
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", str(tree), "--json", "-j", "1", *args],
                          capture_output=True, text=True, cwd=str(tree), env=env)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = {os.path.basename(r["id"])[:-3]: r for r in events if r.get("event") == "result"}
    assert results and "Traceback" not in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = subprocess.run([sys.executable, "-m", "nxc", "test", str(tree), "-v", "-j", "1", *args],
                          capture_output=True, text=True, cwd=str(tree), env=env).stdout
    return results, text


def test_each_result_says_which_path_its_unit_took_and_why(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, FILES)
    cache = str(tmp_path / "cache")
    cold, _ = _run(tree, cache)
    assert {r["plan"] for r in cold.values()} == {"full"}
    assert all(r["plan_reason"].startswith("not cached on c: no pass recorded under unit key u-")
               for r in cold.values()), cold

    warm, text = _run(tree, cache)
    assert {r["plan"] for r in warm.values()} == {"cached"} and all(r["cached"] for r in warm.values())
    assert "passed before under unit key u-" in warm["top"]["plan_reason"]
    assert "path: cached: passed before under unit key" in text

    write_settled(tree, {"leaf.nx": FILES["leaf.nx"].replace("return x + 1", "return 1 + x")})
    edited, text = _run(tree, cache)
    # the leaf was checked again (edited: no interface digest or verdict yet);
    # the gate above it was then linked from records
    leaf = edited["leaf"]
    assert leaf["plan"] == "full" and leaf["plan_reason"].startswith("not cached on c: no pass recorded"), leaf
    assert "leaf.nx" in leaf["plan_reason"].split("; ")[1], leaf
    top = edited["top"]
    assert top["plan"] == "recorded" and top["passed"], top
    assert "clean verdicts and records for all 2 modules" in top["plan_reason"]
    # (the -v run after it found both cached: it says so)
    assert "path: cached:" in text

    rerun, _ = _run(tree, cache, "--rerun")
    assert all(r["plan"] == "full" and r["plan_reason"].startswith("--rerun") for r in rerun.values()), rerun
    nocache, text = _run(tree, cache, "--no-cache")
    assert all(r["plan"] == "full" and "--no-cache" in r["plan_reason"] for r in nocache.values()), nocache
    assert "path: full: --no-cache" in text


def test_the_worker_step_says_why_a_unit_is_not_linked_from_records():
    options = Options(read_results=True, record_results=True)
    unit = SimpleNamespace(path="/t/top.nx", real="/t/top.nx", items=[SimpleNamespace(backend="py")], indexed=None)
    py = SimpleNamespace(name="py", plans_from_records=False)
    decision = plan.plan_in_worker(unit, options, py)
    assert decision.path == plan.FULL and "no index view of its closure" in decision.reason
    unit.indexed = {"/t/top.nx": {"digest": "0" * 32, "interface": None, "imports": []}}
    decision = plan.plan_in_worker(unit, options, py)
    assert decision.path == plan.FULL and decision.reason == "the py backend plans no link from records"
    for changed, words in ((dict(soft_f32=True), "--soft-f32"), (dict(warnings_as_errors=True), "-W error"),
                           (dict(use_cache=False), "--no-cache")):
        decision = plan.plan_in_worker(unit, Options(**changed), py)
        assert decision.path == plan.FULL and words in decision.reason, (changed, decision)
    # modules that import each other: no order of keys from the index alone
    c = SimpleNamespace(name="c", plans_from_records=True)
    unit.indexed = {"/t/top.nx": {"digest": "0" * 32, "interface": "i", "imports": ["/t/b.nx"]},
                    "/t/b.nx": {"digest": "1" * 32, "interface": "j", "imports": ["/t/top.nx"]}}
    decision = plan.plan_in_worker(unit, options, c)
    assert decision.path == plan.FULL and "cycle" in decision.reason


CHAIN = {
    "leaf.nx": "func f(x: i64) -> i64 {\n    if x > 100 { return x }\n    return x + 1\n}\n",
    "mid.nx": 'import "leaf.nx"\nfunc g(x: i64) -> i64 { return f(x) * 2 }\n'
              'func main() -> i64 {\n    if g(1) != 4 { return 1 }\n    return 0\n}\n',
    "top.nx": 'import "mid.nx"\nfunc main() -> i64 {\n    if g(3) != 8 { return 1 }\n    return 0\n}\n',
}


def test_a_check_hands_its_index_notes_to_the_runner_or_notes_them_itself(tmp_path, monkeypatch):
    # A worker of `nxc test` used to load and save the whole module index per
    # gate (a tenth of a cold run's Python at 800 modules, more as the tree
    # grew); its notes now go back with its results (Options.notes_to_runner).
    from nxc.cache import forget_verified
    from nxc.gates.collect import Item, Unit
    from nxc.gates.execute import run_unit
    from nxc.incremental import index as index_module
    from nxc.incremental.index import ModuleIndex, index_file
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, CHAIN)
    top = str(tree / "top.nx")
    for to_runner in (True, False):
        monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / f"cache-{to_runner}"))
        forget_verified()
        index_module._noted.update(index=None, path=None, identity=None)
        index = ModuleIndex()            # as the runner's planner leaves it: an entry per module
        for n in CHAIN:
            assert index.module(str(tree / n)) is not None
        index.save()
        written = os.stat(index_file()).st_mtime_ns
        unit = Unit(top, top, [Item(id=top, path=top, display="top.nx", backend="c", kind="gate")])
        [r] = run_unit(unit, Options(notes_to_runner=to_runner))
        assert r.passed, r.report
        noted = ModuleIndex.load().entries
        if to_runner:
            assert set(r.index_notes) >= {str(tree / n) for n in CHAIN}, r.index_notes
            assert all(len(v) == 3 and all(v) for v in r.index_notes.values())
            assert os.stat(index_file()).st_mtime_ns == written
            assert not any(noted[str(tree / n)].get("interface") for n in CHAIN), noted
        else:
            assert r.index_notes == {}
            for n in CHAIN:
                assert noted[str(tree / n)]["interface"] and noted[str(tree / n)]["verdict"], noted


def test_the_runner_notes_what_workers_checked_and_gives_it_to_later_units(tmp_path, monkeypatch):
    from nxc.incremental.index import ModuleIndex
    from tree_support import nxc_test_results
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, CHAIN)
    cache = str(tmp_path / "cache")
    cold, out = nxc_test_results(tree, cache, "-j", "2")
    assert set(cold) == {"leaf", "mid", "top"} and all(r["passed"] for r in cold.values()), out
    monkeypatch.setenv("NXC_CACHE_DIR", cache)
    entries = ModuleIndex.load().entries
    for n in CHAIN:                 # saved by the runner, at the end of the run
        assert entries[str(tree / n)].get("interface") and entries[str(tree / n)].get("verdict"), entries
    # After a body edit of the leaf, the runner's index has no interface digest
    # for its new text: the leaf's worker finds it, the runner notes it in the
    # view of the units given out after it, whose workers then plan their link
    # from records without reading the index.
    write_settled(tree, {"leaf.nx": CHAIN["leaf.nx"].replace("return x + 1", "return 1 + x")})
    edited, out = nxc_test_results(tree, cache, "-j", "2")
    assert edited["leaf"]["plan"] == "full", out
    for n in ("mid", "top"):
        assert edited[n]["plan"] == "recorded" and edited[n]["passed"], (n, edited[n]["plan_reason"], out)


def test_a_worker_keeps_the_clean_verdicts_of_its_check_however_its_unit_ends(tmp_path, monkeypatch):
    # A gate's worker stores what its check found when its unit is done
    # (execute._finished), not while checking. With -W error and a warning,
    # the unit ends on the whole check (check_file) instead: the clean
    # verdicts the first check found are kept all the same.
    from nxc.cache import forget_verified
    from nxc.check.summary import check_gate
    from nxc.diagnostics import Diagnostics
    from nxc.gates.collect import Item, Unit
    from nxc.gates.execute import run_unit
    from nxc.gates.protocol import Status
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, {"leaf.nx": "func leaf(x: i64) -> i64 { return x + 1 }\n",
                         "top.nx": 'import "leaf.nx"\nfunc main() -> i64 {\n    let spare: i64 = 1\n'
                                   "    if leaf(1) != 2 { return 1 }\n    return 0\n}\n"})
    top, leaf = str(tree / "top.nx"), os.path.realpath(tree / "leaf.nx")
    for w_error in (False, True):
        monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / f"cache-{w_error}"))
        forget_verified()
        unit = Unit(top, top, [Item(id=top, path=top, display="top.nx", backend="c", kind="gate")])
        [r] = run_unit(unit, Options(read_results=False, record_results=False, warnings_as_errors=w_error))
        assert r.status == (Status.COMPILE_ERROR if w_error else Status.PASS), r.report
        again = check_gate(top, [], Diagnostics(warnings=True))
        assert leaf in again.reused, (w_error, again.checked, again.reused)
