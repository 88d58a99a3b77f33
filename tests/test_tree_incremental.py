"""Which gates of a tree are rebuilt, and which modules re-checked, after each kind of edit
(bench/gen_tree.py trees).

Each module is compiled once to its own object (nxc/backend/c/objects.py),
keyed by its source and the interfaces of its import closure; a gate links
its closure's objects. So after an edit of one module exactly the gates
whose closure holds it are built again (relinked), every other gate is a
cache hit, and every gate still passes; and which objects are compiled
again depends on the kind of edit: a body edit recompiles the edited module
only, an interface edit the edited module and every module importing it.
A run after no change reports every gate from the module index without
parsing anything (the `--json` summary's "incremental" counters). `nxc
check` of the top module re-checks the bodies of the edited module only
after a body edit, and of the edited module and the modules whose closure
holds it after an interface edit (NXC_DEBUG_STATS=1). Each gate's worker
checks the bodies of its own module and of the modules the edit left
without a clean verdict or record, never the rest of its closure (the
results' "checked_bodies", in --json with NXC_DEBUG_STATS=1), and none at
all when every record and verdict its gate needs is there (the recorded
path, tests/test_recorded_run.py).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "bench", "gen_tree.py")
IMPORT = re.compile(r'^import "(t\d+)\.nx"', re.M)
IN_TREE = re.compile(r'(^|/)t\d+\.nx$')


def _closures(tree: str) -> dict[str, set[str]]:
    """module -> the tree modules it imports, directly or not (itself included)."""
    direct = {}
    for name in sorted(os.listdir(tree)):
        if name.endswith(".nx"):
            with open(os.path.join(tree, name), encoding="utf-8") as f:
                direct[name[:-3]] = set(IMPORT.findall(f.read()))
    closure: dict[str, set[str]] = {}
    for m in sorted(direct):            # generated imports always point to earlier modules
        closure[m] = {m}.union(*(closure[d] for d in direct[m]))
    return closure


def _run(tree: str, cache: str, objects: dict | None = None, counters: dict | None = None) -> dict[str, bool]:
    """nxc test over the tree: module -> whether its build (or result) came from the cache.
    `objects`, if given, gets "recompiled" (the modules whose objects were
    compiled, by any gate) and "relinked" (the gates whose library was linked);
    `counters` the summary's "incremental" counters."""
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", tree, "--json", "-j", "2"],
                          capture_output=True, text=True,
                          env=dict(os.environ, NXC_CACHE_DIR=cache, NXC_DEBUG_STATS="1"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [r for r in events if r.get("event") == "result"]
    assert results and all(r["passed"] for r in results)
    name = lambda path: os.path.basename(path).split(".nx")[0].split("::")[0]     # noqa: E731
    if objects is not None:
        objects["recompiled"] = [name(p) for r in results for p in r["recompiled"]]
        objects["relinked"] = {name(r["id"]) for r in results if r["relinked"]}
        # run from the library of a gate that imports it (nxc/backend/c/hosts.py): nothing linked for it
        objects["hosted"] = {name(r["id"]) for r in results if r["host"]}
    if objects is not None:
        # each gate's worker: the modules whose bodies it checked (tree modules only)
        objects["checked"] = {name(r["id"]): {name(p) for p in r["checked_bodies"] if IN_TREE.search(p)}
                              for r in results}
    if counters is not None:
        counters.update(events[-1]["incremental"])
    # reused: the build came from the cache (not from a library an importer linked in this
    # run), or the whole result did (PASS (cached))
    return {os.path.basename(r["id"]).split(".nx")[0].split("::")[0]:
            bool((r["build_cached"] and not r["host"]) or r.get("cached")) for r in results}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("tree")
    tree = str(out / "t")
    subprocess.run([sys.executable, GEN, tree, "--modules", "6", "--graph", "random", "--seed", "3"],
                   check=True, capture_output=True)
    return tree, str(out / "cache")


def test_edits_rebuild_exactly_the_gates_whose_closure_holds_the_edited_module(tree):
    tree, cache = tree
    closures = _closures(tree)
    modules = set(closures)
    assert len(modules) == 6

    built: dict = {}
    cold = _run(tree, cache, built)
    assert set(cold) == modules and not any(cold.values())          # cold: every gate compiled
    # each module's object (the tree's and the bundled float32 modules they import) compiled exactly
    # once, whichever gates link it (-j 2: a worker that needs an object being built waits for it)
    assert len(built["recompiled"]) == len(set(built["recompiled"]))
    assert set(built["recompiled"]) & modules == modules
    # a gate that another imports runs from an importer's library (-j 2): the others link their own
    imported = {m for m in modules if any(m in closures[x] for x in modules - {m})}
    assert built["hosted"] == imported and built["relinked"] == modules - imported, built
    # each worker checked its own module's bodies, and never more than its closure
    assert all(m in checked <= closures[m] for m, checked in built["checked"].items()), built["checked"]

    counters: dict = {}
    warm = _run(tree, cache, counters=counters)
    assert all(warm.values())                                        # no change: nothing compiled,
    assert counters["sent_units"] == 0 and counters["parsed"] == 0   # nothing parsed, no worker
    assert counters["cached_units"] == len(modules)

    top = max(modules)
    assert _checked(tree, cache, top) == set()      # the gates' workers left a clean verdict for each module
    for kind, edited in (("body", "t0000"), ("interface", "t0002")):
        subprocess.run([sys.executable, GEN, "--edit", kind, os.path.join(tree, edited + ".nx")],
                       check=True, capture_output=True)
        importers = {m for m in modules if edited in closures[m]}
        rechecked = _checked(tree, cache, top)
        assert rechecked == ({edited} if kind == "body" else importers & closures[top]), (kind, rechecked)
        built = {}
        after = _run(tree, cache, built, counters)
        rebuilt = {m for m, cached in after.items() if not cached}
        assert rebuilt == importers, (kind, edited)
        assert edited in rebuilt
        # every importer linked again, or run from the library of one that was ...
        assert built["relinked"] | built["hosted"] == importers and not built["relinked"] & built["hosted"], built
        if kind == "body":                                          # ... from the one object compiled again
            assert built["recompiled"] == [edited], built
        else:                                                       # an interface: every importer's object too
            assert sorted(built["recompiled"]) == sorted(importers), built
        assert counters["sent_units"] == len(importers) and counters["parsed"] == 1     # only the edited file
        # each worker checked the bodies of its own module and of modules whose verdict or record the
        # edit changed, never the rest of its closure: after a body edit the edited module at most,
        # after an interface edit the importers of the edited module in its closure. After a body edit
        # an importer whose records were all there took the recorded path (nxc/gates/recorded_run.py):
        # linked and run without checking anything (-j 2: one that ran beside the edited module's
        # gate found the edited record missing yet, and took the full path)
        for m in importers:                                         # (the others did not run)
            checked = built["checked"][m]
            if kind == "body":
                assert checked <= {m, edited} and (m in checked or not checked), (kind, m, checked)
            else:
                assert m in checked <= {m} | (importers & closures[m]), (kind, m, checked)
        if kind == "body":
            assert any(not checked for m, checked in built["checked"].items() if m != edited), built["checked"]
    assert after["t0000"] and after["t0001"]    # earlier than t0002, so never importing it: cache hits


def _checked(tree: str, cache: str, module: str) -> set[str]:
    """`nxc check` of `module`: the tree modules whose bodies it checked (not taken from a verdict)."""
    proc = subprocess.run([sys.executable, "-m", "nxc", "check", os.path.join(tree, module + ".nx")],
                          capture_output=True, text=True,
                          env=dict(os.environ, NXC_CACHE_DIR=cache, NXC_DEBUG_STATS="1"))
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stderr.splitlines() if line.startswith("nxc: stats: "))
    checked = json.loads(line[len("nxc: stats: "):])["checked"]
    return {os.path.basename(p)[:-3] for p in checked if os.path.dirname(p) == os.path.realpath(tree)}


EFFECTS_FILES = {
    # f is silent (no memory, no loop, no division): g's C calls it without a
    # frame store and g itself takes no frame. Neither is copied into importers
    # (each has a branch), so g's C lives in mid's object alone.
    "leaf.nx": """func f(x: i64) -> i64 {
    if x > 100 { return x }
    return x + 1
}
""",
    "mid.nx": """import "leaf.nx"
func g(x: i64) -> i64 {
    if x > 100 { return 0 }
    return f(x) * 2
}
""",
    "top.nx": """import "mid.nx"
func main() -> i64 {
    if g(3) != 8 { return 1 }
    return 0
}
""",
}


def _results(tree: str, cache: str) -> dict[str, dict]:
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", tree, "--json", "-j", "1"],
                          capture_output=True, text=True,
                          env=dict(os.environ, NXC_CACHE_DIR=cache, NXC_DEBUG_STATS="1"))
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {os.path.basename(r["id"])[:-3]: r for r in events if r.get("event") == "result"}


def test_an_effect_changed_by_a_body_edit_recompiles_the_importers_that_depend_on_it(tmp_path):
    """A stale object key would be wrong code: when a body edit of a leaf changes
    what its importers' C assumed of it (here: f stops being silent), the
    importers' objects are compiled again, and a fault in f is then located
    with the whole .nx stack; a body edit that changes no effect recompiles
    the leaf alone. (The worker takes f's effects from the record kept with
    leaf's object when it does not check leaf's bodies.)"""
    tree, cache = tmp_path / "t", str(tmp_path / "cache")
    tree.mkdir()
    for name, text in EFFECTS_FILES.items():
        (tree / name).write_text(text, encoding="utf-8")
    first = _results(str(tree), cache)
    assert first["top"]["status"] == "PASS" and first["top"]["checked_bodies"]
    again = _results(str(tree), cache)              # recorded passes (or cached builds) throughout
    assert all(r["passed"] for r in again.values())

    # a body edit that keeps every effect: the leaf's object alone is compiled again
    (tree / "leaf.nx").write_text(EFFECTS_FILES["leaf.nx"].replace("return x + 1", "return 1 + x"), "utf-8")
    quiet = _results(str(tree), cache)
    assert quiet["top"]["status"] == "PASS"
    assert {os.path.basename(p) for r in quiet.values() for p in r["recompiled"]} == {"leaf.nx"}
    assert "mid.nx" not in {os.path.basename(p) for p in quiet["top"]["checked_bodies"]}

    # f now divides: it can trap, so it is no longer silent, and g's C must keep its frame
    (tree / "leaf.nx").write_text(EFFECTS_FILES["leaf.nx"].replace(
        "return x + 1", "let d: i64 = 100 / (x - 3)\n    return x + d"), "utf-8")
    loud = _results(str(tree), cache)
    recompiled = {os.path.basename(p) for r in loud.values() for p in r["recompiled"]}
    assert {"leaf.nx", "mid.nx"} <= recompiled, recompiled
    top = loud["top"]
    assert top["status"] == "RUNTIME-ERROR", top
    assert [(os.path.basename(f["file"]), f["function"], f["line"]) for f in top["stack"]] == [
        ("leaf.nx", "f", 3), ("mid.nx", "g", 4), ("top.nx", "main", 3)], top["stack"]


def test_a_damaged_record_is_not_trusted_and_a_module_using_names_outside_its_closure_takes_the_whole_check(tmp_path):
    """Records are sealed cache files: one that was tampered with is ignored
    (its module's bodies are checked again, and the gate still passes). A
    module whose bodies use a name of a module it does not import (legal: one
    namespace) has no verdict, so its gate's worker checks the whole closure,
    as check_file would, and the results are the same."""
    tree, cache = tmp_path / "t", str(tmp_path / "cache")
    tree.mkdir()
    for name, text in EFFECTS_FILES.items():
        (tree / name).write_text(text, encoding="utf-8")
    first = _results(str(tree), cache)
    assert first["top"]["passed"]
    records = tmp_path / "cache" / "c" / "records"
    damaged = sorted(records.iterdir())
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:-3] + b"xyz")
    (tree / "top.nx").write_text(EFFECTS_FILES["top.nx"].replace("!= 8", "!= 8 + 0"), "utf-8")
    again = _results(str(tree), cache)
    assert again["top"]["passed"]
    assert {os.path.basename(p) for p in again["top"]["checked_bodies"]} >= {"top.nx", "mid.nx", "leaf.nx"}

    # side.nx calls f (leaf.nx) without importing it: only top's closure makes that legal
    (tree / "side.nx").write_text("func h(x: i64) -> i64 {\n    if x > 100 { return 0 }\n    return f(x) + 1\n}\n",
                                  "utf-8")
    (tree / "top.nx").write_text('import "side.nx"\n' + EFFECTS_FILES["top.nx"].replace(
        "    return 0\n}", "    if h(3) != 5 { return 2 }\n    return 0\n}"), "utf-8")
    wide = _results(str(tree), cache)
    assert wide["top"]["passed"], wide["top"]
    assert {os.path.basename(p) for p in wide["top"]["checked_bodies"]} >= {"top.nx", "mid.nx", "leaf.nx", "side.nx"}


def test_an_object_missing_beside_its_record_is_emitted_from_bodies_checked_then(tmp_path):
    """A record can outlive its object (pruned, or deleted by hand): the worker
    then finds the module's digest in the record, so it did not check its
    bodies, and checks them when the object must be compiled again."""
    tree, cache = tmp_path / "t", str(tmp_path / "cache")
    tree.mkdir()
    for name, text in EFFECTS_FILES.items():
        (tree / name).write_text(text, encoding="utf-8")
    assert _results(str(tree), cache)["top"]["passed"]
    for path in (tmp_path / "cache" / "c" / "obj").glob("*.o"):
        path.unlink()
    for path in (tmp_path / "cache" / "c").glob("_nx_*.so"):
        path.unlink()
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", str(tree / "top.nx"), "--json", "--rerun"],
                          capture_output=True, text=True,
                          env=dict(os.environ, NXC_CACHE_DIR=cache, NXC_DEBUG_STATS="1"))
    top = next(json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"event": "result"'))
    assert top["passed"], top
    assert {"leaf.nx", "mid.nx"} <= {os.path.basename(p) for p in top["recompiled"]}
    assert {"leaf.nx", "mid.nx"} <= {os.path.basename(p) for p in top["checked_bodies"]}


CYCLE_FILES = {
    "a.nx": 'import "b.nx"\n\nfunc fa(x: i64) -> i64 {\n    if x > 100 { return 0 }\n    return x + 1\n}\n\n'
            'func main() -> i64 {\n    if fb(1) != 3 { return 1 }\n    return 0\n}\n',
    "b.nx": 'import "a.nx"\n\nfunc fb(x: i64) -> i64 {\n    return fa(x) + 1\n}\n\n'
            'func main() -> i64 {\n    if fa(1) != 2 { return 1 }\n    return 0\n}\n',
    "c.nx": 'import "a.nx"\n\nfunc main() -> i64 {\n    if fb(5) != 7 { return 1 }\n    return 0\n}\n',
}


def test_modules_that_import_each_other_are_planned_built_and_rebuilt(tmp_path):
    """a.nx and b.nx import each other (legal: imports are de-duplicated like
    guarded headers), c.nx imports the cycle. Each one's object key needs the
    other's interface digest, so neither can be found in the records first:
    the worker checks the cycle's bodies and keys it from them (once this
    was an internal error, "import closures out of order"). A body edit in
    the cycle is then seen by every gate that links it."""
    tree, cache = tmp_path / "t", str(tmp_path / "cache")
    tree.mkdir()
    for name, text in CYCLE_FILES.items():
        (tree / name).write_text(text, encoding="utf-8")
    first = _results(str(tree), cache)
    assert {n: r["status"] for n, r in first.items()} == {"a": "PASS", "b": "PASS", "c": "PASS"}, first
    again = _results(str(tree), cache)
    assert all(r["passed"] and r["cached"] for r in again.values()), again
    (tree / "a.nx").write_text(CYCLE_FILES["a.nx"].replace("return x + 1", "return x + 2"), "utf-8")
    edited = _results(str(tree), cache)
    assert {n: r["status"] for n, r in edited.items()} == {"a": "FAIL", "b": "FAIL", "c": "FAIL"}, edited
    assert {os.path.basename(p) for r in edited.values() for p in r["recompiled"]} == {"a.nx"}
    assert "fa(1) = 3" in edited["b"]["report"]
