"""Several units checked, planned and built as one program (nxc/gates/batch.py,
nxc/backend/c/batch.py): what it builds is what each unit alone builds, and
what it reports is what each unit alone reports.

Each comparison runs the same tree twice from cold, in two cache folders:
NXC_BATCH=8 (a worker takes up to eight ready units at once) and NXC_BATCH=1
(one at a time, as before batches existed).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

from nxc.backend.c.closure import import_closure
from nxc.gates.collect import Item, Unit
from nxc.gates.execute import Options, Result
from nxc.gates.protocol import Status
from nxc.syntax.loader import load_program

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAC_BYTES = 32          # a sealed cache file: its MAC (per cache folder's key), then its content


def _run(tree, cache, batch: int) -> dict[str, dict]:
    env = dict(os.environ, NXC_CACHE_DIR=str(cache), NXC_BATCH=str(batch))
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", str(tree), "--json", "-j", "2"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {r["id"]: r for r in events if r.get("event") == "result"}


def _files(cache, sub: str) -> dict[str, bytes]:
    """{name: content past its MAC} of the files under cache/sub."""
    out = {}
    top = os.path.join(cache, sub)
    for folder, _, names in os.walk(top):
        for name in names:
            if name.endswith(".lock"):
                continue
            with open(os.path.join(folder, name), "rb") as f:
                out[os.path.relpath(os.path.join(folder, name), top)] = f.read()
    return out


def _batched(results: dict) -> int:
    return sum("in a batch of" in r["plan_reason"] for r in results.values())


def _same_builds(tmp_path) -> None:
    """The two cache folders hold the same objects and the same records and verdicts."""
    # The same objects, byte for byte (their names are their keys).
    objects8, objects1 = _files(tmp_path / "c8", "c/obj"), _files(tmp_path / "c1", "c/obj")
    assert set(objects8) == set(objects1) and len(objects1) > 40
    assert [n for n in objects1 if n.endswith(".o") and objects1[n] != objects8[n]] == []
    # Their site tables are sealed: the same past the MAC. (A precompiled header differs
    # from one compile to the next, wherever it is made: not compared.)
    assert [n for n in objects1 if n.endswith(".sites") and objects1[n][MAC_BYTES:] != objects8[n][MAC_BYTES:]] == []
    # The same records (gate records among them) and verdicts, past each file's MAC; the batch
    # adds those of its import-only roots.
    for sub in ("c/records", "summaries"):
        got, want = _files(tmp_path / "c8", sub), _files(tmp_path / "c1", sub)
        assert set(want) <= set(got), sub
        assert [n for n in want if got[n][MAC_BYTES:] != want[n][MAC_BYTES:]] == [], sub


def test_a_batch_builds_and_records_what_each_gate_alone_does(tmp_path):
    tree = tmp_path / "tree"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_tree.py"), str(tree), "--modules", "40",
                    "--graph", "random", "--seed", "5"], check=True, capture_output=True)
    batched = _run(tree, tmp_path / "c8", 8)
    alone = _run(tree, tmp_path / "c1", 1)
    assert len(batched) == len(alone) == 40
    assert all(r["passed"] for r in batched.values()), [r for r in batched.values() if not r["passed"]]
    assert _batched(batched) >= 2 and _batched(alone) == 0         # how many: as units came ready
    _same_builds(tmp_path)
    # A second run of either finds every pass cached.
    again = _run(tree, tmp_path / "c8", 8)
    assert {r["plan"] for r in again.values()} == {"cached"}
    # An interface edit of the module every chain of imports ends in: every
    # verdict and object of its importers is stale, and they are batched too.
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_tree.py"), "--edit", "interface",
                    str(tree / "t0000.nx")], check=True, capture_output=True)
    batched = _run(tree, tmp_path / "c8", 8)
    alone = _run(tree, tmp_path / "c1", 1)
    assert all(r["passed"] for r in batched.values()) and _batched(batched) >= 2
    assert {i: r["status"] for i, r in batched.items()} == {i: r["status"] for i, r in alone.items()}
    _same_builds(tmp_path)


def test_gates_linked_from_records_share_one_library_per_batch(tmp_path):
    """After a body edit of the module every chain of imports ends in, every
    gate takes the recorded path; those of one batch run from one library
    linked for all of them (recorded.link_recorded_together), with the
    outcomes each gate's own library gives."""
    tree = tmp_path / "tree"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_tree.py"), str(tree), "--modules", "40",
                    "--graph", "random", "--seed", "5"], check=True, capture_output=True)
    _run(tree, tmp_path / "c8", 8)
    _run(tree, tmp_path / "c1", 1)
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_tree.py"), "--edit", "body",
                    str(tree / "t0000.nx")], check=True, capture_output=True)
    batched = _run(tree, tmp_path / "c8", 8)
    alone = _run(tree, tmp_path / "c1", 1)
    assert len(batched) == len(alone) == 40 and all(r["passed"] for r in batched.values())
    shared = [r for r in batched.values() if "of the batch linked from records" in r["plan_reason"]]
    assert len(shared) >= 2 and all(r["plan"] == "recorded" and r["host"] for r in shared), \
        {i: r["plan_reason"] for i, r in batched.items()}
    assert len({r["host"] for r in shared}) < len(shared)
    assert not any("of the batch linked from records" in r["plan_reason"] for r in alone.values())

    def outcome(r: dict) -> tuple:
        return r["status"], r["value"], r["warnings"]      # (the path each took follows what came ready when)
    assert {i: outcome(r) for i, r in batched.items()} == {i: outcome(r) for i, r in alone.items()}


GATE = "func {name}_v() -> i64 {{ return {v} }}\nfunc main() -> i64 {{\n    if {name}_v() != {v} {{ return 1 }}\n" \
       "    return {ret}\n}}\n"


def test_what_a_batch_reports_is_what_each_unit_alone_reports(tmp_path):
    """Failing gates, a compile error, two modules that declare the same name
    (one program cannot hold both: the batch gives way to each unit's own
    path) and warnings, among passing gates."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for k in range(10):
        (tree / f"p{k}.nx").write_text(GATE.format(name=f"p{k}", v=k + 10, ret=0))
    (tree / "fails.nx").write_text(GATE.format(name="fails", v=7, ret=3))
    (tree / "broken.nx").write_text("func main() -> i64 {\n    return undefined_name\n}\n")
    (tree / "same_a.nx").write_text("func same() -> i64 { return 1 }\nfunc main() -> i64 { return same() - 1 }\n")
    (tree / "same_b.nx").write_text("func same() -> i64 { return 2 }\nfunc main() -> i64 { return same() - 2 }\n")
    (tree / "warns.nx").write_text("func main() -> i64 {\n    let unused: i64 = 5\n    return 0\n}\n")
    (tree / "crash.nx").write_text("func main() -> i64 {\n    let p: *i64 = 0 as *i64\n    p[0] = 1\n"
                                   "    return 0\n}\n")
    batched = _run(tree, tmp_path / "c8", 8)
    alone = _run(tree, tmp_path / "c1", 1)
    assert _batched(batched) >= 2
    # No gate imports another: the gates of a batch ran from one library linked
    # for all of them (nxc/backend/c/batch.py, link_together), which reports
    # every outcome, the fault's location and stack included, as each gate's
    # own library does.
    shared = [r for r in batched.values() if "run from one library linked for the" in r["plan_reason"]]
    assert len(shared) >= 2 and all(r["host"] for r in shared)
    assert len({r["host"] for r in shared}) < len(shared)
    assert all(r["host"] is None for r in alone.values())
    assert batched[str(tree / "crash.nx")]["status"] == "RUNTIME-ERROR"

    def outcome(r: dict) -> tuple:
        return r["status"], r["value"], r["location"], r["message"], r["warnings"], r["stack"]
    assert {i: outcome(r) for i, r in batched.items()} == {i: outcome(r) for i, r in alone.items()}
    by_name = {os.path.basename(i)[:-3]: r for i, r in batched.items()}
    assert by_name["fails"]["status"] == "FAIL" and by_name["fails"]["value"] == 3
    assert by_name["broken"]["status"] == "COMPILE-ERROR"
    assert by_name["same_a"]["passed"] and by_name["same_b"]["passed"]
    assert by_name["warns"]["warnings"] and by_name["warns"]["passed"]


def test_a_gate_records_its_modules_in_the_order_load_program_gives(tmp_path):
    """A batch writes each gate's record with its modules in the order a
    program rooted at that gate lists them: its import closure's order in the
    batch program (LinkedC.gate_record), which must be the loader's."""
    tree = tmp_path / "tree"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_tree.py"), str(tree), "--modules", "30",
                    "--graph", "random", "--seed", "11"], check=True, capture_output=True)
    names = sorted(n for n in os.listdir(tree) if n.endswith(".nx"))
    root = tree / "all.nx"
    root.write_text("".join(f'import "{n}"\n' for n in names))
    whole = SimpleNamespace(graph=load_program(str(root)))
    by_path = {m.source.path: m for m in whole.graph.modules}
    for n in names:
        path = os.path.realpath(tree / n)
        closure = [m.source.path for m in import_closure(whole, by_path[path])]
        assert closure == [m.source.path for m in load_program(path).modules], n


def _dies_on_a_batch(conn, options, inherited=(), parent_pid=None):
    """A pool worker that serves single units and dies when given several."""
    for c in inherited:
        c.close()
    while True:
        got = conn.recv()
        if got is None:
            return
        if isinstance(got, list):
            os._exit(3)
        conn.send([Result(it.id, it.display, it.kind, it.backend, Status.PASS) for it in got.items])


def test_a_worker_that_dies_holding_a_batch_costs_its_units_each_reported(tmp_path, monkeypatch):
    from nxc.gates import pool
    monkeypatch.setenv("NXC_BATCH", "4")
    monkeypatch.setattr(pool, "worker", _dies_on_a_batch)
    units = []
    for k in range(12):
        path = str(tmp_path / f"m{k}.nx")
        units.append(Unit(path, f"m{k}.nx", [Item(path + "::main", path, f"m{k}.nx", "c", "gate")]))
    got: list[Result] = []
    workers = pool.Pool(2, Options())
    try:
        workers.run(units, lambda results: got.extend(results) or True)
    finally:
        workers.close()
    assert sorted(r.id for r in got) == sorted(u.items[0].id for u in units)     # each once
    died = [r for r in got if r.status == Status.INTERNAL_ERROR]
    assert died and all("died (exit status 3)" in r.message for r in died)
    # The first two batches (4 units each: 12 ready, 2 workers) died whole; the last unit,
    # given out alone, ran.
    assert len(died) >= 8 and any(r.passed for r in got)


def _units(folder, texts: dict[str, str]) -> list:
    units = []
    for name, text in texts.items():
        path = folder / name
        path.write_text(text)
        units.append(Unit(str(path), name, [Item(str(path) + "::main", str(path), name, "c", "gate")]))
    return units


def test_a_batch_that_cannot_be_one_program_says_why(tmp_path, monkeypatch):
    from nxc.gates.batch import Prepared, prepare
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "a").mkdir()
    ok = _units(tmp_path / "a", {"x.nx": GATE.format(name="x", v=1, ret=0), "y.nx": GATE.format(name="y", v=2, ret=0)})
    made = prepare(ok, Options())
    assert isinstance(made, Prepared) and set(made.compiled) == {u.real for u in ok}, made
    (tmp_path / "b").mkdir()
    same = _units(tmp_path / "b", {"s1.nx": "func same() -> i64 { return 1 }\nfunc main() -> i64 { return 0 }\n",
                                   "s2.nx": "func same() -> i64 { return 2 }\nfunc main() -> i64 { return 0 }\n"})
    why = prepare(same, Options())
    assert isinstance(why, str) and "do not compile as one program" in why and "same" in why, why
    (tmp_path / "c").mkdir()
    broken = _units(tmp_path / "c", {"ok.nx": GATE.format(name="ok", v=1, ret=0),
                                     "bad.nx": "func main() -> i64 { return nowhere }\n"})
    why = prepare(broken, Options())
    assert isinstance(why, str) and "nowhere" in why, why
    assert prepare([ok[0], ok[0]], Options()) == "two of them are one module"


def test_a_unit_built_in_a_batch_and_run_in_the_second_round_says_both():
    """A gate another unit imports is built in the first round (here in a
    batch) and run in the second: its one reported result says why each
    round took its path, as it sums what both took."""
    from nxc.gates.command import _held
    from nxc.gates.execute import BUILT
    first_round: dict = {}
    built = Result("t.nx", "t.nx", "gate", "c", Status.PASS, plan=BUILT, checked_bodies=["t.nx"],
                   plan_reason="checked, emitted and built in a batch of 3 as one program, then linked from records")
    assert _held(built, first_round)
    ran = Result("t.nx", "t.nx", "gate", "c", Status.PASS, plan="recorded",
                 plan_reason="clean verdicts and records for all 2 modules of its closure")
    assert not _held(ran, first_round) and first_round == {}
    assert ran.plan_reason == ("checked, emitted and built in a batch of 3 as one program, then linked from records; "
                               "clean verdicts and records for all 2 modules of its closure")
    assert ran.checked_bodies == ["t.nx"]
