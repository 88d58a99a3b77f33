"""Separate compilation of gates (nxc/backend/c/objects.py): one object per
module, the same whichever gate links it; keys that change exactly when the
module's C would; one runtime state across objects; faults, traps and the
.nx stack located in whichever module they happen.
"""
from __future__ import annotations

import os
import re

import pytest

from nxc.backend.c import objects
from nxc.backend.c.closure import import_closure
from nxc.backend.c.emit import emit_module_c
from nxc.backend.c.objects import LinkedC
from nxc.backend.registry import backend_for
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute
from nxc.paths import bundled_dir

LEAF = """
    import "nx_syscalls.nx"

    struct Box { n: i64, p: *i64 }

    func leaf_twice(x: i64) -> i64 { return x * 2 }

    func leaf_sum(p: *i64, n: i64) -> i64 {
        var s: i64 = 0
        var i: i64 = 0
        while i < n {
            s = s + p[i]
            i = i + 1
        }
        return s
    }

    func leaf_div(a: i64, b: i64) -> i64 {
        var i: i64 = 0
        while i < 1 { i = i + 1 }
        return a / b
    }

    func leaf_map(n: i64) -> *i64 { return sys_mmap(n * 8) as *i64 }
"""

MID = """
    import "leaf.nx"

    func mid_total(p: *i64, n: i64) -> i64 {
        var t: i64 = 0
        var k: i64 = 0
        while k < 2 {
            t = t + leaf_sum(p, n)
            k = k + 1
        }
        return leaf_twice(t)
    }
"""

TOP = """
    import "mid.nx"

    func main() -> i64 {
        let p: *i64 = leaf_map(4)
        p[0] = 1
        p[3] = 2
        if mid_total(p, 4) != 12 { return 1 }
        return 0
    }
"""


def program(path):
    return check_file(path, diags=Diagnostics())


def unit_of(linked: LinkedC, name: str):
    return next(u for u in linked.units if os.path.basename(u.module.source.path) == name)


@pytest.fixture
def tree(write_nx):
    leaf = write_nx(LEAF, "leaf.nx")
    write_nx(MID, "mid.nx")
    top = write_nx(TOP, "top.nx")
    return leaf, top


def test_a_module_object_is_the_same_whichever_gate_links_it(tree):
    leaf, top = tree
    mid = os.path.join(os.path.dirname(top), "mid.nx")
    texts, keys = set(), set()
    for root in (leaf, mid, top):
        p = program(root)
        linked = LinkedC(p, checked=True)
        unit = unit_of(linked, "leaf.nx")
        keys.add(unit.key)
        texts.add(emit_module_c(p, unit.module, import_closure(p, unit.module), checked=True).text)
    assert len(keys) == 1 and len(texts) == 1
    # ... and it holds the leaf's own functions, hidden, not its importers' or a gate's
    text = texts.pop()
    assert re.search(r"^int64_t nxf_leaf_sum\(", text, re.M) and "nxf_mid_total" not in text
    assert "nxc_run_main" not in text and "NX_SITE(" in text


def test_keys_follow_what_the_c_depends_on(tree, write_nx):
    leaf, top = tree

    def keys_and_mid_text():
        p = program(top)
        linked = LinkedC(p, checked=True)
        mid = unit_of(linked, "mid.nx")
        return ({os.path.basename(u.module.source.path): u.key for u in linked.units},
                linked.emit_unit(mid).text)

    before, mid_before = keys_and_mid_text()
    # a body edit of a function with a loop: the leaf's key only; mid's C is the same
    write_nx(LEAF.replace("s = s + p[i]", "s = s + p[i] + 0"), "leaf.nx")
    body, mid_body = keys_and_mid_text()
    assert body["leaf.nx"] != before["leaf.nx"] and body["mid.nx"] == before["mid.nx"]
    assert mid_body == mid_before
    # a copied helper's body (mid holds a static inline copy of leaf_twice): mid's key too
    write_nx(LEAF.replace("return x * 2", "return x + x"), "leaf.nx")
    helper, mid_helper = keys_and_mid_text()
    assert helper["mid.nx"] != before["mid.nx"] and mid_helper != mid_before
    assert "static inline int64_t nxf_leaf_twice(" in mid_before
    # an interface edit (a new const): every importer's key
    write_nx(LEAF.replace("struct Box", "const LEAF_NEW: i64 = 3\n\n    struct Box"), "leaf.nx")
    iface, _ = keys_and_mid_text()
    assert iface["leaf.nx"] != before["leaf.nx"] and iface["mid.nx"] != before["mid.nx"]


def test_a_second_gate_links_the_objects_the_first_compiled(tree):
    leaf, top = tree
    mid = os.path.join(os.path.dirname(top), "mid.nx")
    first = backend_for("c").prepare(program(mid), purpose="gate", load=False).built
    # (nx_syscalls.nx has a gate, so an object of its own: compiled by the first gate of the session that links it)
    assert sorted(set(map(os.path.basename, first.recompiled)) - {"nx_syscalls.nx"}) == ["leaf.nx", "mid.nx"]
    assert first.relinked
    second = backend_for("c").prepare(program(top), purpose="gate", load=False).built
    # top.nx has only main: its own object holds it (no C is compiled for the gate itself)
    assert list(map(os.path.basename, second.recompiled)) == ["top.nx"] and second.relinked
    again = backend_for("c").prepare(program(top), purpose="gate", load=False).built
    assert again.cached and again.recompiled == [] and not again.relinked
    assert execute(program(top), "c")[0].status == "PASS"


def test_one_runtime_state_across_objects_and_faults_located_in_their_module(tree, write_nx):
    # mapped in leaf.nx (its object), read out of bounds in leaf.nx called from mid.nx and top.nx
    leaf, _ = tree
    top = write_nx(TOP.replace("mid_total(p, 4) != 12", "mid_total(p, 5) != 12"), "top.nx")
    outcome = execute(program(top), "c")[0]
    assert outcome.status == "RUNTIME-ERROR", outcome
    at = 1 + [n for n, line in enumerate(open(leaf).read().splitlines()) if "s = s + p[i]" in line][0]
    mapped = 1 + [n for n, line in enumerate(open(leaf).read().splitlines()) if "sys_mmap" in line][0]
    assert re.search(rf"leaf\.nx:{at}:\d+: runtime error: out-of-bounds read of i64 .* "
                     rf"\(mapped at [^ ]*leaf\.nx:{mapped}:", outcome.message), outcome.message
    assert [(os.path.basename(f.file), f.function) for f in outcome.stack] == [
        ("leaf.nx", "leaf_sum"), ("mid.nx", "mid_total"), ("top.nx", "main")]


def test_a_trap_in_an_imported_module_names_its_line(tree, write_nx):
    leaf, _ = tree
    top = write_nx('import "leaf.nx"\n\nfunc main() -> i64 {\n    return leaf_div(1, 0)\n}\n', "top.nx")
    outcome = execute(program(top), "c")[0]
    at = 1 + [n for n, line in enumerate(open(leaf).read().splitlines()) if "return a / b" in line][0]
    assert outcome.status == "RUNTIME-ERROR"
    assert re.search(rf"leaf\.nx:{at}:\d+: runtime error: division by zero", outcome.message), outcome.message
    assert [f.function for f in outcome.stack] == ["leaf_div", "main"]


def test_unchecked_gates_link_the_unchecked_runtime(tree):
    _, top = tree
    assert execute(program(top), "c", checked=False)[0].status == "PASS"
    checked = LinkedC(program(top), checked=True)
    unchecked = LinkedC(program(top), checked=False)
    assert {u.key for u in checked.units}.isdisjoint(u.key for u in unchecked.units)
    assert objects.runtime_key(True, "2") != objects.runtime_key(False, "2")


def test_every_bundled_gate_links_each_module_once(tmp_path):
    p = program(os.path.join(bundled_dir(), "nx_f32_gqa_attention.nx"))
    linked = LinkedC(p, checked=True)
    paths = [u.module.source.path for u in linked.units]
    assert len(paths) == len(set(paths)) and paths[-1] == p.graph.root.source.path
    # site bases: each module's ordinal, shifted past its local indexes, set at load time
    assert [base for _, base in linked.binding.bases] == [k << objects.SITE_BITS for k in range(1, len(paths) + 1)]
    assert linked.binding.root == linked.binding.bases[-1][0]


def test_a_damaged_object_is_rebuilt_not_linked(tree):
    _, top = tree
    built = backend_for("c").prepare(program(top), purpose="gate", load=False).built
    linked = LinkedC(program(top), checked=True)
    victim = os.path.join(objects.objects_dir(), unit_of(linked, "leaf.nx").key + ".o")
    with open(victim, "r+b") as f:
        f.write(b"\0" * 16)
    os.remove(built.path)               # force a new link
    again = backend_for("c").prepare(program(top), purpose="gate", load=False).built
    assert [os.path.basename(p) for p in again.recompiled] == ["leaf.nx"]
    assert execute(program(top), "c")[0].status == "PASS"


def test_pruning_removes_old_objects_with_their_site_tables_and_locks(monkeypatch, tmp_path):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    folder = objects.objects_dir()
    os.makedirs(folder)
    for k in range(10):
        for ext in (".o", ".o.sum", ".sites", ".lock"):
            path = os.path.join(folder, f"k{k:02d}{ext}")
            open(path, "w").close()
            os.utime(path, (1000 + k, 1000 + k))         # k00 least recently used
    monkeypatch.setattr(objects, "MAX_OBJECTS", 8)
    monkeypatch.setattr(objects, "_object_writes", 0)   # the next write looks at the folder
    objects._pruned_after_write()
    left = sorted(os.listdir(folder))
    kept = sorted(n[:-2] for n in left if n.endswith(".o"))
    assert kept == [f"k{k:02d}" for k in range(4, 10)]                 # down to 3/4 of the bound
    assert sorted(n for n in left if n.startswith(tuple(kept))) == left  # nothing of a pruned object stays


def test_the_closure_parts_are_a_parameter(tree, write_nx):
    # the conservative digest (imports' whole text): a body edit of the leaf recompiles its importers too
    _, top = tree
    keys = lambda: {os.path.basename(u.module.source.path): u.key                     # noqa: E731
                    for u in LinkedC(program(top), checked=True,
                                     closure_parts=objects.closure_source_parts).units}
    before = keys()
    write_nx(LEAF.replace("s = s + p[i]", "s = s + p[i] + 0"), "leaf.nx")
    after = keys()
    assert after["leaf.nx"] != before["leaf.nx"] and after["mid.nx"] != before["mid.nx"]
