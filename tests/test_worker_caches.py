"""The caches a long-lived worker keeps across the gates it runs (issue 21):
each keyed by what it depends on, never trusted across a change, bounded.

- import closures, computed once per graph bottom-up (nxc/backend/c/closure.py):
  the same order as one depth-first walk per module, cycles and diamonds too;
- stamps and sealed JSON entries (records, verdicts, site tables) verified
  once per file identity (nxc/cache.py): a replaced, damaged or removed
  entry is read and verified again;
- object records and verdicts, named by the key of what they say, kept once
  read (cache.read_keyed_json): by their path (another cache folder is another
  entry), afresh after a write, never when refused;
- parsed modules (nxc/syntax/loader.py) keyed by their text;
- one worker running a gate, then the same gate after an edit of an
  imported module (a body edit that makes it fail), then after the edit is
  undone: the right result each time.
"""
from __future__ import annotations

import dataclasses
import os
import textwrap

import pytest

from nxc import cache
from nxc.backend.c.closure import import_closure
from nxc.check.frontend import check_file
from nxc.gates.collect import Item, Unit
from nxc.gates.execute import Options, run_unit
from nxc.syntax import loader, search


def _write(folder, name: str, text: str) -> str:
    path = os.path.join(str(folder), name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text).lstrip("\n"))
    return path


def _reference_closure(graph, module) -> list[str]:
    """One depth-first walk from `module` over the loader's edges, each module
    after its imports (what import_closure computed per call before)."""
    order, seen = [], {module.source.path}

    def walk(p):
        for d in graph.imports.get(p, []):
            if d not in seen:
                seen.add(d)
                walk(d)
        order.append(p)
    walk(module.source.path)
    return order


def _diamond_with_cycle(folder) -> str:
    _write(folder, "a.nx", 'import "b.nx"\nfunc fa() -> i64 { return 1; }\n')
    _write(folder, "b.nx", 'import "a.nx"\nimport "c.nx"\nfunc fb() -> i64 { return 2; }\n')
    _write(folder, "c.nx", "func fc() -> i64 { return 3; }\n")
    _write(folder, "d.nx", 'import "c.nx"\nimport "a.nx"\nfunc fd() -> i64 { return 4; }\n')
    return _write(folder, "top.nx", 'import "d.nx"\nimport "b.nx"\nimport "c.nx"\n'
                                    "func main() -> i64 { return fa() + fb() + fc() + fd() - 10; }\n")


def test_import_closures_match_one_walk_per_module(tmp_path):
    program = check_file(_diamond_with_cycle(tmp_path))
    graph = program.graph
    assert len(graph.modules) == 5
    for m in graph.modules:
        assert [x.source.path for x in import_closure(program, m)] == _reference_closure(graph, m), m.source.path
    # kept with the graph: asked again, the same order (a copy the caller may change)
    first = import_closure(program, graph.root)
    first.clear()
    assert [x.source.path for x in import_closure(program, graph.root)] == _reference_closure(graph, graph.root)


def test_import_closures_under_soft_f32(tmp_path):
    program = check_file(_diamond_with_cycle(tmp_path), soft_f32=True)
    soft = [m for m in program.graph.modules if m.source.path.endswith("nx_f32_soft.nx")]
    assert soft
    for m in program.graph.modules:
        got = [x.source.path for x in import_closure(program, m)]
        want = _reference_closure(program.graph, m)
        if soft[0].source.path not in want:
            want = [soft[0].source.path, *want]
        assert got == want


def test_import_beside_a_link_resolves_to_its_target(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = _write(real, "lib.nx", "func f() -> i64 { return 0; }\n")
    os.symlink(target, tmp_path / "lib.nx")
    top = _write(tmp_path, "top.nx", 'import "lib.nx"\nfunc main() -> i64 { return f(); }\n')
    graph = loader.load_program(top)
    assert os.path.realpath(target) in [m.source.path for m in graph.modules]
    assert graph.imports[os.path.realpath(top)] == [os.path.realpath(target)]


def test_import_from_a_linked_search_folder_resolves_to_the_real_path(tmp_path):
    real = tmp_path / "libs"
    real.mkdir()
    lib = _write(real, "lib2.nx", "func g() -> i64 { return 0; }\n")
    os.symlink(real, tmp_path / "linked")
    app = tmp_path / "app"
    app.mkdir()
    top = _write(app, "top.nx", 'import "lib2.nx"\nfunc main() -> i64 { return g(); }\n')
    graph = loader.load_program(top, [str(tmp_path / "linked")])
    assert graph.imports[os.path.realpath(top)] == [os.path.realpath(lib)]
    # the same answer as without the load's folder memo
    found, tried = search.resolve_import("lib2.nx", str(app), [str(tmp_path / "linked")])
    assert found == os.path.realpath(lib)
    assert search.resolve_import("lib2.nx", str(app), [str(tmp_path / "linked")], {})[1] == tried


def _published(path: str, data: bytes) -> None:
    """`data` published as the cache entry `path`, stamped (as nxc builds it)."""
    with open(path + ".new", "wb") as f:
        f.write(data)
    cache.publish(path + ".new", path)


def _replaced(path: str, data: bytes) -> None:
    """`path` replaced by a rename (a new inode), without a new stamp."""
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def test_a_stamp_is_verified_again_when_the_file_changes(tmp_path):
    cache.forget_verified()
    path = str(tmp_path / "entry.bin")
    _published(path, b"first")
    assert cache.stamped(path) and cache.stamped(path)
    # replaced by another file (as any writer of nxc replaces it) without a new stamp
    _replaced(path, b"other")
    assert not cache.stamped(path)
    _published(path, b"second")
    assert cache.stamped(path)
    # damaged in place, with a new size
    with open(path, "ab") as f:
        f.write(b"!")
    assert not cache.stamped(path)
    os.remove(path)
    assert not cache.stamped(path)


def test_an_entry_found_whole_is_known_again_while_it_is_the_same_file(tmp_path):
    cache.forget_verified()
    path = str(tmp_path / "entry.o")
    _published(path, b"first")
    assert not cache.found_whole_before(path)           # never noted
    cache.note_found_whole(path)
    assert cache.found_whole_before(path)
    with open(path + ".tmp", "wb") as f:                # replaced by a rename, as nxc replaces
        f.write(b"first")
    os.replace(path + ".tmp", path)
    assert not cache.found_whole_before(path)
    cache.note_found_whole(path)
    with open(path, "ab") as f:                         # damaged in place
        f.write(b"!")
    assert not cache.found_whole_before(path)
    cache.note_found_whole(path)
    cache.forget_verified()
    assert not cache.found_whole_before(path)
    cache.note_found_whole(path)
    os.remove(path)
    assert not cache.found_whole_before(path)


def test_an_object_swapped_after_it_was_found_usable_is_never_linked(tmp_path, monkeypatch):
    """An object a worker verified once is then known by one stat; one swapped
    in by a rename afterwards (a new inode) is verified again, refused and removed."""
    from nxc.backend.c import objects
    cache.forget_verified()
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path))
    key = "o" * 32
    folder = objects.objects_dir()
    os.makedirs(folder)
    target = os.path.join(folder, key + ".o")
    _published(target, b"an object")
    cache.write_sealed_json(os.path.join(folder, key + ".sites"), key + ".sites", [])
    assert objects.usable_object(key) == target
    assert objects.usable_object(key) == target         # known: one stat
    _replaced(target, b"a planted object")
    assert objects.usable_object(key) is None
    assert not os.path.exists(target)                   # discarded


def test_a_run_reads_and_resolves_each_module_once(tmp_path, monkeypatch):
    """A process that ends with the run (a worker of `nxc test -j N`) asks the
    loader to read, parse and resolve each module once: a module edited during
    the run is loaded as first read, with the text it was parsed from (every key
    is computed from that text); an import not found is looked for again."""
    _one_run(monkeypatch)
    top = _diamond_with_cycle(tmp_path)
    reads = []
    real_read = loader.read_source
    monkeypatch.setattr(loader, "read_source", lambda path, *a: reads.append(path) or real_read(path, *a))
    first = loader.load_program(top)
    assert len(reads) == 5
    c = os.path.join(str(tmp_path), "c.nx")
    with open(c, "a", encoding="utf-8") as f:
        f.write("func fc2() -> i64 { return 5; }\n")
    again = loader.load_program(top)
    assert len(reads) == 5                              # nothing read again
    assert [m.source.path for m in again.modules] == [m.source.path for m in first.modules]
    assert again.imports == first.imports
    kept_c = next(m for m in again.modules if m.source.path == os.path.realpath(c))
    assert "fc2" not in kept_c.source.text              # as first read, text and AST alike
    assert all(getattr(d, "name", None) != "fc2" for d in kept_c.items)
    lone = _write(tmp_path, "lone.nx", 'import "late.nx"\nfunc main() -> i64 { return 0; }\n')
    with pytest.raises(loader.CompileError):
        loader.load_program(lone)
    _write(tmp_path, "late.nx", "func late() -> i64 { return 0; }\n")
    assert [os.path.basename(m.source.path) for m in loader.load_program(lone).modules] == ["late.nx", "lone.nx"]
    monkeypatch.setattr(cache, "_ends_with_its_run", False)    # a process that outlives runs: reads afresh
    fresh = loader.load_program(top)
    assert "fc2" in next(m for m in fresh.modules if m.source.path == os.path.realpath(c)).source.text


def _one_run(monkeypatch) -> None:
    """This test's process as a worker of one run (cache.this_process_ends_with_its_run),
    with nothing kept yet, and as it was after the test."""
    from nxc.backend.c import build, closure
    from nxc.incremental import index, keys
    monkeypatch.setattr(cache, "_ends_with_its_run", False)
    cache.this_process_ends_with_its_run()
    assert cache.ends_with_its_run()
    monkeypatch.setattr(loader, "_RUN_MODULES", {})
    monkeypatch.setattr(loader, "_RUN_IMPORTS", {})
    monkeypatch.setattr(closure, "_RUN_ORDERS", {})
    monkeypatch.setattr(index, "_RUN_ORDERS", {})
    for memo in ("_RUN_OBJECT_KEYS", "_RUN_VERDICT_KEYS"):
        monkeypatch.setattr(keys, memo, {})
    monkeypatch.setattr(build, "_RUN_COMPILER", {})
    from nxc.backend.c import recorded
    from nxc.incremental import plan
    monkeypatch.setattr(recorded, "_KEYS", index.ClosureMemo())
    monkeypatch.setattr(plan, "_VERDICTS", index.ClosureMemo())
    from nxc.syntax import ast
    monkeypatch.setattr(ast, "_NODES", {})


def test_a_run_keeps_each_closure_order_once_computed(tmp_path, monkeypatch):
    """In a process that ends with its run, a module's closure order is kept by
    its AST object (graphs of later gates hold the same objects) and the
    index's orders by path: the same orders as computed afresh, not merged again."""
    from nxc.backend.c import closure
    from nxc.incremental import index
    top = _diamond_with_cycle(tmp_path)
    _one_run(monkeypatch)
    merged = []
    real_merged = closure._Closures._merged
    monkeypatch.setattr(closure._Closures, "_merged", lambda self, m: merged.append(m) or real_merged(self, m))
    for _ in range(2):
        program = check_file(top)
        for m in program.graph.modules:
            assert [x.source.path for x in import_closure(program, m)] == _reference_closure(program.graph, m)
    assert len(merged) == 5                             # the second graph's five modules: kept
    imports = {f"/m{i}.nx": [f"/m{j}.nx" for j in reversed(range(i))] for i in range(7)}
    monkeypatch.setattr(cache, "_ends_with_its_run", False)
    fresh = {p: index.closure_orders(p, imports) for p in imports}     # outside a worker: nothing kept
    assert index._RUN_ORDERS == {}                      # noqa: SLF001
    cache.this_process_ends_with_its_run()
    real_merge, merges = index.merged_orders, []
    monkeypatch.setattr(index, "merged_orders", lambda *a, **k: merges.append(1) or real_merge(*a, **k))
    assert index.closure_orders("/m3.nx", imports) == fresh["/m3.nx"]
    assert len(merges) == 4                             # m0..m3 merged once each
    assert index.closure_orders("/m6.nx", imports) == fresh["/m6.nx"]
    assert len(merges) == 7                             # m4..m6 only: m3's closure is kept
    assert index.closure_orders("/m5.nx", imports) == fresh["/m5.nx"]
    assert len(merges) == 7


def _keys(program, config: str, way=None) -> dict[str, str]:
    from nxc.backend.c.objects import LinkedC
    linked = LinkedC(program, checked=True, closure_parts=way)
    return {m.source.path: linked.key_of(m, config) for m in program.graph.modules}


def test_a_run_keeps_each_object_key_by_module_closure_digest_and_configuration(tmp_path, monkeypatch):
    """In a process that ends with its run, a module's object key is kept by
    its AST object, the way its closure is digested and the configuration:
    a later gate's link computes no closure digest again, and every key equals
    the one computed afresh; another configuration, another closure digest or
    an edited module (a new AST, once the run is over) is a key of its own."""
    from nxc.backend.c import objects
    from nxc.incremental import keys
    top = _diamond_with_cycle(tmp_path)
    fresh = _keys(check_file(top), "cfg")
    fresh_sources = _keys(check_file(top), "cfg", objects.closure_source_parts)
    assert keys._RUN_OBJECT_KEYS == {}                  # noqa: SLF001  outside a worker: nothing kept
    _one_run(monkeypatch)
    digests = []
    real_digest = objects.LinkedC.closure_interface_parts
    monkeypatch.setattr(objects.LinkedC, "closure_interface_parts",
                        lambda self, closure: digests.append(1) or real_digest(self, closure))
    assert _keys(check_file(top), "cfg") == fresh
    assert len(digests) == 5
    assert _keys(check_file(top), "cfg") == fresh       # a later gate: the same keys, none computed
    assert len(digests) == 5
    other = _keys(check_file(top), "cfg2")
    assert len(digests) == 10 and not set(other.values()) & set(fresh.values())
    assert _keys(check_file(top), "cfg", objects.closure_source_parts) == fresh_sources != fresh
    c = os.path.join(str(tmp_path), "c.nx")
    with open(c, "a", encoding="utf-8") as f:
        f.write("func fc2() -> i64 { return 5; }\n")
    # A new run (a new worker: nothing kept) sees the edit in every key: the
    # unchanged modules' ASTs are the same objects (the parse cache), so the
    # keys are kept for one run only, whose loader never reads a module again.
    monkeypatch.setattr(loader, "_RUN_MODULES", {})
    monkeypatch.setattr(keys, "_RUN_OBJECT_KEYS", {})
    edited = _keys(check_file(top), "cfg")
    assert all(edited[p] != fresh[p] for p in edited)


def test_a_run_keeps_each_verdict_key_by_path_text_and_soft_f32(tmp_path, monkeypatch):
    """In a process that ends with its run, a gate's check computes each
    module's verdict key once (its closure and their interfaces are the run's):
    later gates take it, the same key a fresh process computes; --soft-f32 and
    another text are keys of their own."""
    from nxc.check import summary
    from nxc.diagnostics import Diagnostics
    from nxc.incremental import keys
    top = _diamond_with_cycle(tmp_path)

    def gate_keys(soft: bool = False) -> dict[str, str]:
        return {p: k for p, (_, _, k) in summary.check_gate(top, [], Diagnostics(), soft_f32=soft).notes.items()}
    fresh, fresh_soft = gate_keys(), gate_keys(True)
    assert fresh_soft != fresh and keys._RUN_VERDICT_KEYS == {}     # noqa: SLF001
    _one_run(monkeypatch)
    computed = []
    real = keys.verdict_key
    monkeypatch.setattr(keys, "verdict_key", lambda *a: computed.append(a[0]) or real(*a))
    assert gate_keys() == fresh and len(computed) == 5
    assert gate_keys() == fresh and len(computed) == 5              # a later gate: all kept
    assert gate_keys(True) == fresh_soft and len(computed) == 5 + len(fresh_soft)   # with nx_f32_soft.nx
    at = next(iter(keys._RUN_VERDICT_KEYS))                         # noqa: SLF001
    assert keys.verdict_key_in_run(at[0], "another text", set(), {}, at[2]) != keys._RUN_VERDICT_KEYS[at]  # noqa: SLF001


def test_a_closures_number_names_everything_down_its_imports(monkeypatch):
    """ClosureMemo.names: two modules get one number exactly when their paths,
    parts and imports' numbers (in order) are equal, all the way down; a
    change anywhere below a module is a new number for it; nothing outside a
    process that ends with its run."""
    from nxc.incremental.index import ClosureMemo
    imports = {"/c": [], "/b": ["/c"], "/a": ["/c"], "/top": ["/a", "/b"]}
    order = ["/c", "/a", "/b", "/top"]
    parts = {p: "d-" + p for p in order}
    memo = ClosureMemo()
    monkeypatch.setattr(cache, "_ends_with_its_run", False)
    assert memo.names(order, imports, parts) is None            # outside a run: nothing kept
    cache.this_process_ends_with_its_run()
    first = memo.names(order, imports, parts)
    assert len(set(first.values())) == 4
    assert memo.names(order, imports, dict(parts)) == first     # the same closure: the same numbers
    deep = memo.names(order, imports, dict(parts, **{"/c": "edited"}))
    assert all(deep[p] != first[p] for p in order)              # a part deep down: every importer too
    side = memo.names(order, imports, dict(parts, **{"/b": "edited"}))
    assert side["/c"] == first["/c"] and side["/a"] == first["/a"]
    assert side["/b"] != first["/b"] and side["/top"] != first["/top"]
    swapped = memo.names(order, dict(imports, **{"/top": ["/b", "/a"]}), parts)
    assert swapped["/top"] != first["/top"] and swapped["/a"] == first["/a"]    # import order
    moved = memo.names(["/c", "/a", "/b", "/top2"], dict(imports, **{"/top2": ["/a", "/b"]}),
                       dict(parts, **{"/top2": parts["/top"]}))
    assert moved["/top2"] != first["/top"]                      # the path


def test_a_run_keeps_each_recorded_plan_answer_by_its_closures_number(tmp_path, monkeypatch):
    """The worker's plan of a link from records (plan.plan_in_worker): in a
    process that ends with its run, each module's verdict and object key are
    kept by the number of its closure (ClosureMemo); later gates get the very
    decisions a fresh process makes, and a view with an edited module, or
    another interface digest, is never answered from what was kept."""
    from nxc.backend.registry import backend_for
    from nxc.gates import collect
    from nxc.incremental import keys, plan, records
    from tree_support import nxc_test_results, write_settled
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, {
        "leaf.nx": "func f(x: i64) -> i64 { return x + 1 }\n",
        "mid.nx": 'import "leaf.nx"\nfunc g(x: i64) -> i64 { return f(x) * 2 }\n'
                  "func main() -> i64 { return g(1) - 4 }\n",
        "top.nx": 'import "mid.nx"\nfunc main() -> i64 { return g(3) - 8 }\n'})
    cold, out = nxc_test_results(tree, str(tmp_path / "cache"), "-j", "1")
    assert len(cold) == 3 and all(r["passed"] for r in cold.values()), out
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    cache.forget_verified()
    options = Options(read_results=True, record_results=True)
    backend = backend_for("c", checked=True)

    def decisions(units=None):
        if units is None:       # the runner's views of a fresh index (a memory limit: none cached)
            units = collect.group_units(collect.collect([str(tree)]))
            plan.plan_units(units, dataclasses.replace(options, memory_limit=1), None, None)
        return units, {os.path.basename(u.path): plan.plan_in_worker(u, options, backend) for u in units}

    def summary(found):
        return {n: (d.path, d.link.key if d.link else None, d.warnings) for n, d in found.items()}
    units, fresh = decisions()
    assert {d.path for d in fresh.values()} == {plan.RECORDED}, {n: d.reason for n, d in fresh.items()}
    _one_run(monkeypatch)
    looked = []
    real_verdict_key, real_read_record = keys.verdict_key, records.read_record
    monkeypatch.setattr(keys, "verdict_key", lambda *a: looked.append(a[0]) or real_verdict_key(*a))
    monkeypatch.setattr(records, "read_record", lambda k: looked.append(k) or real_read_record(k))
    assert summary(decisions(units)[1]) == summary(fresh)
    first = len(looked)
    assert first == 2 * 3                   # each module's verdict key and record: once, for all three units
    assert summary(decisions(units)[1]) == summary(fresh) and len(looked) == first     # kept: none again
    other = {u.path: plan.plan_in_worker(u, dataclasses.replace(options, opt="0"), backend) for u in units}
    assert all(d.path == plan.FULL for d in other.values()), other     # -O0: no records kept answer for it
    # Another interface digest in the leaf's view: its verdict (and each
    # importer's) is looked up again, and not found.
    for u in units:
        for p, view in u.indexed.items():
            if p.endswith("leaf.nx"):
                view["interface"] = "another"
    again = decisions(units)[1]
    assert all(d.path == plan.FULL for d in again.values()) and len(looked) > first, \
        {n: d.reason for n, d in again.items()}
    # An edited leaf (a new text in the views): nothing kept answers for it.
    write_settled(tree, {"leaf.nx": "func f(x: i64) -> i64 { return 1 + x }\n"})
    edited = decisions()[1]
    assert all(d.path == plan.FULL for d in edited.values()), {n: d.reason for n, d in edited.items()}


def test_a_run_keeps_the_compiler_found_for_its_cc_and_path(tmp_path, monkeypatch):
    """A worker keeps the compiler command found for CC and PATH: either one
    changed is looked up again; a process that outlives runs looks each time."""
    from nxc.backend.c import build
    _one_run(monkeypatch)
    bin_a, bin_b = tmp_path / "a", tmp_path / "b"
    for folder in (bin_a, bin_b):
        folder.mkdir()
        tool = folder / "cc"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(bin_a))
    assert build.compiler() == [str(bin_a / "cc")]
    (bin_a / "cc").unlink()
    assert build.compiler() == [str(bin_a / "cc")]      # kept for this run
    monkeypatch.setenv("PATH", str(bin_b))
    assert build.compiler() == [str(bin_b / "cc")]
    monkeypatch.setenv("CC", "cc -g")
    assert build.compiler() == ["cc", "-g"]
    monkeypatch.setattr(cache, "_ends_with_its_run", False)
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(bin_a))
    with pytest.raises(build.NoCompiler):
        build.compiler()                                # looked up again: gone


def test_sealed_json_is_read_again_after_a_change(tmp_path):
    cache.forget_verified()
    path = str(tmp_path / "r.json")
    cache.write_sealed_json(path, "r", {"a": [1]})
    got = cache.read_sealed_json(path, "r")
    assert got == {"a": [1]}
    got["a"].append(2)                              # the caller's own copy
    assert cache.read_sealed_json(path, "r") == {"a": [1]}
    assert cache.read_sealed_json(path, "other name") is None
    cache.write_sealed_json(path, "r", {"a": [3]})
    assert cache.read_sealed_json(path, "r", touch=True) == {"a": [3]}
    with open(path, "r+b") as f:                    # planted: same size, not sealed
        data = bytearray(f.read())
        data[-2] ^= 1
        f.seek(0)
        f.write(bytes(data))
    os.utime(path, ns=(0, 0))                       # (in place: only the time tells)
    assert cache.read_sealed_json(path, "r") is None
    os.remove(path)
    assert cache.read_sealed_json(path, "r") is None


def test_a_touch_keeps_the_entry_verified_and_marks_it_used(tmp_path):
    cache.forget_verified()
    path = str(tmp_path / "r.json")
    cache.write_sealed_json(path, "r", {"x": 1})
    os.utime(path, (1_000_000, 1_000_000))          # long unused
    assert cache.read_sealed_json(path, "r", touch=True) == {"x": 1}
    assert os.stat(path).st_mtime > 1_000_000       # marked used
    held = cache._sealed[path]                      # noqa: SLF001 - the memo under test
    assert held[0][3] == os.stat(path).st_mtime_ns  # and still known, under its new time


RECORD = {"interface": "d1", "may_unmap": [], "memory_free": ["f"], "silent": [], "copied": []}


def test_a_record_is_kept_once_read(tmp_path, monkeypatch):
    from nxc.incremental import records
    cache.forget_verified()
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "a"))
    key = "k" * 32
    records.write_records([(key, RECORD)])
    assert records.read_record(key) == RECORD
    path = os.path.join(str(tmp_path / "a"), "c", "records", key + ".json")
    os.remove(path)
    assert records.read_record(key) == RECORD           # kept: not looked at again
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "b"))
    assert records.read_record(key) is None             # kept by path: another cache has none
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "a"))
    records.write_records([(key, dict(RECORD, interface="d2"))])
    assert records.read_record(key)["interface"] == "d2"    # a write is read afresh
    cache.forget_verified()
    os.remove(path)
    assert records.read_record(key) is None


def test_a_run_keeps_the_records_it_writes_past_the_default_bound(tmp_path, monkeypatch):
    """Two records a module (its object's and its gate's): a run over N modules
    whose keys are all new (an interface edit) keeps the 2N it writes, and
    prunes the older ones first."""
    from nxc.incremental import records
    cache.forget_verified()
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(records, "MAX_RECORDS", 2)
    monkeypatch.setattr(records, "_record_writes", 0)
    monkeypatch.setattr(records, "prune_due", lambda writes: writes == 12)     # one look, after the last write
    monkeypatch.setattr(cache, "_working_set", 0)
    cache.expect_entries(3)                     # a tree of three modules
    gate = {"gate": None, "units": [], "modules": []}
    for run in ("old", "new"):
        for m in range(3):
            key = f"{run}{m}".ljust(32, "k")
            records.write_records([(key, RECORD)])
            records.write_gate_record(key, gate)
            if run == "old":
                for name in (key, "g-" + key):
                    os.utime(os.path.join(str(tmp_path), "c", "records", name + ".json"), (1, 1))
    cache.forget_verified()
    for m in range(3):
        key = f"new{m}".ljust(32, "k")
        assert records.read_record(key) == RECORD and records.read_gate_record(key) == gate


def test_a_refused_record_is_not_kept(tmp_path, monkeypatch):
    from nxc.incremental import records
    cache.forget_verified()
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path))
    key = "p" * 32
    path = os.path.join(str(tmp_path), "c", "records", key + ".json")
    os.makedirs(os.path.dirname(path))
    cache.write_sealed_json(path, "records/" + "q" * 32, RECORD)     # sealed, for another key
    assert records.read_record(key) is None
    cache.write_sealed_json(path, "records/" + key, {"interface": 1})    # sealed, not a record
    assert records.read_record(key) is None
    cache.write_sealed_json(path, "records/" + key, RECORD)
    assert records.read_record(key) == RECORD


def test_a_verdict_stored_again_is_read_afresh(tmp_path, monkeypatch):
    from nxc.incremental import records
    cache.forget_verified()
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    monkeypatch.chdir(tmp_path / "x")
    records.store_verdict("v" * 32, ["m.nx:1:1: warning: w"], "d")
    assert records.load_verdict("v" * 32)["cwd"] == str(tmp_path / "x")
    monkeypatch.chdir(tmp_path / "y")
    assert records.load_verdict("v" * 32) is None       # rendered in another folder
    records.store_verdict("v" * 32, ["m.nx:1:1: warning: w"], "d")
    assert records.load_verdict("v" * 32)["cwd"] == str(tmp_path / "y")


def test_worker_memos_stay_bounded(tmp_path, monkeypatch):
    cache.forget_verified()
    monkeypatch.setattr(cache, "_VERIFIED_MAX", 5)
    for k in range(12):
        p = str(tmp_path / f"e{k}.json")
        cache.write_sealed_json(p, "e", k)
        assert cache.read_sealed_json(p, "e") == k
        b = str(tmp_path / f"o{k}.bin")
        with open(b + ".new", "wb") as f:
            f.write(bytes([k]))
        cache.publish(b + ".new", b)
        assert cache.stamped(b)
        assert cache.read_keyed_json(p, "e", lambda data: True) == k
    assert len(cache._sealed) <= 5 and len(cache._stamps) <= 5 and len(cache._kept) <= 5   # noqa: SLF001
    cache.forget_verified()


def test_parsed_modules_stay_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "_PARSED_MAX", 4)
    monkeypatch.setattr(cache, "_working_set", 0)
    for k in range(10):
        loader.load_program(_write(tmp_path, f"m{k}.nx", f"func f{k}() -> i64 {{ return {k}; }}\n"))
    assert len(loader._PARSED) <= 4                 # noqa: SLF001


@pytest.mark.parametrize("backend", ["c"])
def test_an_edit_between_two_gates_of_one_worker(tmp_path, backend):
    """One process runs the gate, then the gate after a body edit of an imported
    module (it now fails), then after the edit is undone (it passes again)."""
    lib = _write(tmp_path, "lib.nx", "func value() -> i64 { return 7; }\nfunc other() -> i64 { return 1; }\n")
    mid = _write(tmp_path, "mid.nx", 'import "lib.nx"\nfunc twice() -> i64 { return 2 * value(); }\n')
    top = _write(tmp_path, "top.nx", 'import "mid.nx"\n'
                                     "func main() -> i64 {\n    if twice() != 14 { return 1; }\n    return 0;\n}\n")
    with open(lib, encoding="utf-8") as f:
        good = f.read()

    def run():
        unit = Unit(top, top, [Item(id=top, path=top, display=top, backend=backend, kind="gate")])
        [r] = run_unit(unit, Options(read_results=False, record_results=False))
        return r

    assert run().passed
    with open(lib, "w", encoding="utf-8") as f:
        f.write(good.replace("return 7;", "return 8;"))
    r = run()
    assert not r.passed and r.value == 1, r.message
    with open(lib, "w", encoding="utf-8") as f:
        f.write(good)
    assert run().passed


def test_a_run_walks_each_body_once_and_holds_what_it_walked(tmp_path, monkeypatch):
    """ast.nodes: walk()'s nodes in walk()'s order; in a worker of one run the
    same tuple again for the same node (held, so its id is not reused while
    kept), and for another node with the same text its own; outside a run a
    fresh walk each time."""
    from nxc.syntax import ast
    path = tmp_path / "m.nx"
    path.write_text("func f(a: i64) -> i64 {\n    var s: i64 = 0\n    while s < a { s = s + 1 }\n    return s\n}\n"
                    "func main() -> i64 { return f(3) - 3 }\n")
    body = check_file(str(path)).graph.root.items[0].body
    from nxc.diagnostics import Diagnostics
    twin = loader.parse_source(loader.read_source(str(path), Diagnostics()), Diagnostics()).items[0].body   # apart
    walked = tuple(ast.walk(body))
    assert len(walked) > 5
    monkeypatch.setattr(cache, "_ends_with_its_run", False)
    monkeypatch.setattr(ast, "_NODES", {})
    first = ast.nodes(body)
    assert first == walked and ast.nodes(body) is not first and not ast._NODES
    _one_run(monkeypatch)
    kept = ast.nodes(body)
    assert kept == walked and ast.nodes(body) is kept and ast._NODES[id(body)][0] is body
    other = ast.nodes(twin)
    assert other is not kept and all(a is not b for a, b in zip(other, kept)) and len(other) == len(kept)
