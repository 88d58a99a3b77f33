"""The recorded path of `nxc test`'s workers (nxc/gates/recorded_run.py).

After a body edit of a module, a gate that imports it is linked from the
records and objects earlier builds left, and run, with no parse, check or
emission of its own (its result's "checked_bodies" is empty, "relinked"
true). Only a pass is reported from there: a gate that fails after the edit
is reported by the full path, with its line and captured operands; an edit
that changes what the checker sees of a module without changing its C (a
type alias renamed) never passes on records; a damaged gate record is not
trusted; the warnings shown are the full path's.
"""
from __future__ import annotations

import os

from tree_support import nxc_test_results, write_settled

FILES = {
    "leaf.nx": """type count = i64
func f(x: i64) -> i64 {
    if x > 100 { return x }
    return x + 1
}
""",
    "mid.nx": """import "leaf.nx"
func g(x: i64) -> i64 {
    let c: count = 2
    if x > 100 { return 0 }
    return f(x) * c
}
""",
    "top.nx": """import "mid.nx"
func main() -> i64 {
    let r: i64 = g(3)
    if r != 8 { return 1 }
    return 0
}
""",
}


def _results(tree, cache: str, *args: str) -> dict[str, dict]:
    results, output = nxc_test_results(tree, cache, "-j", "1", *args, env={"NXC_DEBUG_STATS": "1"})
    assert results, output
    return results


def _tree(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, FILES)
    return tree, str(tmp_path / "cache")


def test_a_body_edit_relinks_and_reruns_the_importing_gate_without_its_front_end(tmp_path):
    tree, cache = _tree(tmp_path)
    first = _results(tree, cache)
    assert first["top"]["passed"] and first["top"]["checked_bodies"]      # cold: the full path
    write_settled(tree, {"leaf.nx": FILES["leaf.nx"].replace("return x + 1", "return 1 + x")})
    after = _results(tree, cache)
    top = after["top"]
    assert top["passed"] and not top["cached"], top
    assert top["checked_bodies"] == [] and top["relinked"] and top["recompiled"] == [], top
    # the leaf (a library module: the full path) compiled its object again; nothing else was
    assert {os.path.basename(p) for r in after.values() for p in r["recompiled"]} == {"leaf.nx"}
    # the same pass is then found by the runner itself
    again = _results(tree, cache)
    assert again["top"]["cached"]


def test_a_gate_that_fails_after_the_edit_is_reported_by_the_full_path(tmp_path):
    tree, cache = _tree(tmp_path)
    assert _results(tree, cache)["top"]["passed"]
    write_settled(tree, {"leaf.nx": FILES["leaf.nx"].replace("return x + 1", "return x + 2")})
    top = _results(tree, cache)["top"]
    assert top["status"] == "FAIL" and top["value"] == 1, top
    assert top["checked_bodies"], top                       # the full path explained it
    assert top["location"].endswith("top.nx:4") and top["message"] == f"main returned 1 at {top['location']}"
    assert ("r", 10) in [(c["text"], c["value"]) for c in top["captured"]], top["captured"]


def test_an_edit_the_checker_sees_but_not_the_c_never_passes_on_records(tmp_path):
    """Renaming the alias leaves every object key as it was (C knows no
    aliases), so the records alone would link the old objects and pass; the
    verdicts, keyed by what the checker sees, send the gate to the full path,
    which finds mid.nx using a name that no longer exists."""
    tree, cache = _tree(tmp_path)
    assert _results(tree, cache)["top"]["passed"]
    write_settled(tree, {"leaf.nx": FILES["leaf.nx"].replace("type count", "type number")})
    after = _results(tree, cache)
    assert after["top"]["status"] == "COMPILE-ERROR", after["top"]
    assert "count" in after["top"]["report"]


def test_a_damaged_gate_record_is_not_trusted(tmp_path):
    tree, cache = _tree(tmp_path)
    assert _results(tree, cache)["top"]["passed"]
    records = list((tmp_path / "cache" / "c" / "records").glob("g-*.json"))
    assert records
    for path in records:
        path.write_bytes(path.read_bytes()[:-2] + b"xx")
    write_settled(tree, {"leaf.nx": FILES["leaf.nx"].replace("return x + 1", "return 1 + x")})
    top = _results(tree, cache)["top"]
    assert top["passed"] and top["checked_bodies"], top      # the full path, which writes it again
    write_settled(tree, {"leaf.nx": FILES["leaf.nx"]})
    top = _results(tree, cache)["top"]
    assert top["passed"] and top["checked_bodies"] == [], top


def test_the_recorded_path_shows_the_warnings_the_full_path_shows(tmp_path):
    tree, cache = _tree(tmp_path)
    noisy = FILES["leaf.nx"].replace("    return x + 1", "    let unused: i64 = 4\n    return x + 1")
    write_settled(tree, {"leaf.nx": noisy})
    full = _results(tree, cache)["top"]
    assert full["passed"] and full["checked_bodies"] and any("unused" in w for w in full["warnings"]), full
    write_settled(tree, {"leaf.nx": noisy.replace("return x + 1", "return 1 + x")})
    fast = _results(tree, cache)["top"]
    assert fast["passed"] and fast["checked_bodies"] == [], fast
    assert fast["warnings"] == full["warnings"]


def test_closure_orders_from_the_index_are_import_closures_orders():
    """The recorded path computes object keys from closures built bottom-up
    from the index (closure_orders); a key is only right if each order is
    exactly import_closure's (depth first, imports in their order)."""
    import random
    from types import SimpleNamespace

    from nxc.backend.c.closure import import_closure
    from nxc.incremental.index import closure_orders
    rng = random.Random(21)
    for _ in range(200):
        n = rng.randint(1, 30)
        imports = {f"/m{i}.nx": [f"/m{rng.randrange(i)}.nx" for _ in range(rng.randint(0, min(i, 4)))] if i else []
                   for i in range(n)}
        modules = [SimpleNamespace(source=SimpleNamespace(path=p), imports=[]) for p in imports]
        program = SimpleNamespace(graph=SimpleNamespace(modules=modules, imports=imports))
        root = modules[-1]
        orders = closure_orders(root.source.path, imports)
        for m in modules:
            if m.source.path in orders:
                assert orders[m.source.path] == [d.source.path for d in import_closure(program, m)]
    assert closure_orders("/a.nx", {"/a.nx": ["/b.nx"], "/b.nx": ["/a.nx"]}) is None      # a cycle
    assert closure_orders("/a.nx", {"/a.nx": ["/b.nx"]}) is None                           # not in the index


LOOP = """func f(x: i64) -> i64 {
    var i: i64 = 0
    while i < x { i = i + 1 }
    return i + 1
}
"""
LOOP_TOP = """import "leaf.nx"
func main() -> i64 {
    if f(3) != 4 { return 1 }
    return 0
}
"""


def test_a_gate_that_hangs_after_the_edit_is_stopped_once_and_located_on_the_recorded_path(tmp_path):
    """A TIMEOUT needs no program to report (its stack comes from the shared
    page and the site tables beside the objects), so the recorded path reports
    it rather than running the gate a second time for the full path."""
    tree, cache = tmp_path / "t", str(tmp_path / "cache")
    tree.mkdir()
    write_settled(tree, {"leaf.nx": LOOP, "top.nx": LOOP_TOP})
    assert _results(tree, cache, "--timeout", "5")["top"]["passed"]
    write_settled(tree, {"leaf.nx": LOOP.replace("i = i + 1", "i = i + 0")})     # same effects: a loop either way
    top = _results(tree, cache, "--timeout", "1")["top"]
    assert top["status"] == "TIMEOUT" and top["checked_bodies"] == [] and top["relinked"], top
    assert [(os.path.basename(f["file"]), f["function"], f["line"]) for f in top["stack"]][:2] == [
        ("leaf.nx", "f", 3), ("top.nx", "main", 3)], top["stack"]
    assert "stopped in f at" in top["message"] and "--timeout" in top["report"], top
