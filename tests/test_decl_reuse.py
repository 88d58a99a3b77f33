"""A worker's declarations kept across gates (nxc/check/reuse.py).

check_gate takes the declarations of a module from an earlier gate of the
same process only where every name they resolve is the same symbol again;
otherwise the module is declared afresh. Each test compares with the full
path (`check_file`, or `_check_front` without reuse): the same diagnostics,
the same interface digests, the same structs, constants and signatures.
"""
from __future__ import annotations

import glob
import os
import textwrap

import pytest

from nxc.cache import cache_dir
from nxc.check import reuse
from nxc.check.frontend import check_file
from nxc.check.summary import _check_front, check_gate
from nxc.incremental.index import note_modules
from nxc.diagnostics import CompileError, Diagnostics

LEAF = """
    const N: i64 = 4
    const M: i64 = N * 2 + sizeof(Pair)
    struct Pair {
        a: i64
        b: i32
    }
    type Id = i64
    func leaf(x: Id) -> i64 {
        return x + M
    }
"""
FILES = {
    "leaf.nx": LEAF,
    "box.nx": """
        import "leaf.nx"
        struct Box {
            tag: u8
            p: Pair
        }
        func boxed(b: *Box) -> i64 {
            return b.p.a + leaf(1)
        }
    """,
    "top.nx": """
        import "box.nx"
        func main() -> i64 {
            if leaf(1) != 21 { return 1 }
            return 0
        }
    """,
    "other.nx": """
        import "leaf.nx"
        func main() -> i64 {
            if M != 24 { return 1 }
            return 0
        }
    """,
}


def write(folder, files):
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))


def shape(path, reuse_on: bool):
    """What the declarations gave, through the gate's front end with or without reuse."""
    f = _check_front(str(path), [], Diagnostics(), False, use_verdicts=False, always_root=True, reuse=reuse_on)
    p = f.program
    return (f.digests, [s.name for s in p.structs], [(s.name, s.value, str(s.type)) for s in p.consts],
            [(fn.decl.name, [str(s.type) for s in fn.params], str(fn.ret)) for fn in f.funcs],
            [s.name for s in p.externs])


def errors_of(check, path) -> list[str]:
    diags = Diagnostics()
    with pytest.raises(CompileError):
        check(str(path), [], diags)
    return [d.render() for d in diags.items]


def test_second_gate_reuses_the_shared_imports_with_the_same_results(tmp_path):
    write(tmp_path, FILES)
    assert check_gate(str(tmp_path / "top.nx"), [], Diagnostics()) is not None
    before = dict(reuse.counters)
    found = shape(tmp_path / "other.nx", True)
    assert reuse.counters["reused"] - before["reused"] == 1      # leaf.nx
    assert found == shape(tmp_path / "other.nx", False)
    assert shape(tmp_path / "top.nx", True) == shape(tmp_path / "top.nx", False)


def test_an_interface_edit_between_two_gates_gives_the_full_paths_diagnostics(tmp_path):
    write(tmp_path, FILES)
    top = tmp_path / "top.nx"
    assert check_gate(str(top), [], Diagnostics()) is not None
    # leaf() now takes two arguments: top.nx's call is wrong
    (tmp_path / "leaf.nx").write_text(textwrap.dedent(LEAF).replace("func leaf(x: Id)", "func leaf(x: Id, y: i64)"))
    assert errors_of(check_gate, top) == errors_of(check_file, top)
    assert "leaf" in errors_of(check_gate, top)[0]
    # Pair loses field a: box.nx's body is wrong (an error in an import, with its "imported from" note)
    (tmp_path / "leaf.nx").write_text(textwrap.dedent(LEAF).replace("    a: i64\n", ""))
    got = errors_of(check_gate, top)
    assert got == errors_of(check_file, top) and "box.nx" in got[0] and "imported from here" in got[0]
    # a constant of leaf.nx that no longer evaluates: an error of the declarations
    (tmp_path / "leaf.nx").write_text(textwrap.dedent(LEAF).replace("N * 2", "N * K"))
    got = errors_of(check_gate, top)
    assert got == errors_of(check_file, top) and "undefined name 'K'" in got[0]
    # and back: the gate checks clean again, with the same digests as the full path
    (tmp_path / "leaf.nx").write_text(textwrap.dedent(LEAF))
    assert check_gate(str(top), [], Diagnostics()) is not None
    assert shape(top, True) == shape(top, False)


def test_a_name_declared_again_elsewhere_is_reported_as_the_full_path_does(tmp_path):
    write(tmp_path, FILES)
    assert check_gate(str(tmp_path / "other.nx"), [], Diagnostics()) is not None     # leaf.nx kept
    write(tmp_path, {"dup.nx": "const N: i64 = 5\n", "both.nx": """
        import "dup.nx"
        import "leaf.nx"
        func main() -> i64 {
            return 0
        }
    """})
    both = tmp_path / "both.nx"
    got = errors_of(check_gate, both)
    assert got == errors_of(check_file, both) and "'N' is defined twice" in got[0]


def test_a_changed_symbol_behind_a_kept_module_declares_it_afresh(tmp_path):
    write(tmp_path, FILES)
    top = tmp_path / "top.nx"
    assert check_gate(str(top), [], Diagnostics()) is not None
    # A kept entry that does not hold any more (damaged, or a symbol it
    # resolved was replaced): it must not be taken.
    entry = reuse._MEMO[(os.path.realpath(tmp_path / "box.nx"), False)]
    entry.refs = {**entry.refs, "Pair": object()}
    before = dict(reuse.counters)
    assert shape(top, True) == shape(top, False)
    assert reuse.counters["declared"] > before["declared"]


def test_the_kept_modules_stay_bounded(tmp_path, monkeypatch):
    from nxc import cache
    monkeypatch.setattr(cache, "_working_set", 0)           # scaled_bound(n) is n
    monkeypatch.setattr(reuse, "MEMO_MIN", 3)
    reuse.forget()
    files = {f"m{i}.nx": f"const C{i}: i64 = {i}\nfunc main() -> i64 {{\n    return 0\n}}\n" for i in range(8)}
    write(tmp_path, files)
    for name in files:
        assert check_gate(str(tmp_path / name), [], Diagnostics()) is not None
        assert reuse.kept() <= 3
    assert reuse.kept() == 3


def test_a_damaged_verdict_falls_back_to_checking_the_bodies(tmp_path):
    write(tmp_path, FILES)
    top = tmp_path / "top.nx"
    first = check_gate(str(top), [], Diagnostics())
    damaged = []
    for f in glob.glob(os.path.join(cache_dir(), "summaries", "*.json")):
        with open(f, "r+b") as fh:
            fh.write(b"garbage")
        damaged.append(f)
    assert damaged
    again = check_gate(str(top), [], Diagnostics())
    assert again is not None and again.interfaces == first.interfaces
    assert set(again.checked) >= {os.path.realpath(tmp_path / n) for n in ("leaf.nx", "box.nx")}


def test_the_digest_memos_give_the_digest_and_stay_bounded(monkeypatch):
    import hashlib

    from nxc.incremental import keys as index
    from nxc.diagnostics import SourceFile
    from nxc.syntax import loader
    monkeypatch.setattr(index, "_DIGESTS_MIN", 4)
    monkeypatch.setattr(loader, "_PARSED_MAX", 4)
    from nxc import cache
    monkeypatch.setattr(cache, "_working_set", 0)           # scaled_bound(n) is n
    texts = [f"const C: i64 = {i}\n" for i in range(20)]
    for text in texts + texts:
        assert index.source_digest(text) == hashlib.sha256(text.encode()).hexdigest()[:32]
        assert len(index._DIGESTS) <= 4
    keys = {loader._parse_key(SourceFile(f"/x/{i}.nx", t)) for i, t in enumerate(texts)}
    assert len(keys) == len(texts) and len(loader._KEYS) <= 4
    assert loader._parse_key(SourceFile("/x/0.nx", texts[0])) == loader._parse_key(SourceFile("/x/0.nx", texts[0][:]))


def test_the_index_is_loaded_again_only_when_a_gate_has_new_notes_or_another_process_wrote_it(tmp_path, monkeypatch):
    from nxc.incremental.index import ModuleIndex, index_file
    write(tmp_path, FILES)
    top = str(tmp_path / "top.nx")
    index = ModuleIndex()
    for p in ("leaf.nx", "box.nx", "top.nx"):       # entries for the modules, as the runner makes them
        index.module(os.path.realpath(tmp_path / p))
    index.save()
    loads = []
    real_load = ModuleIndex.load.__func__
    monkeypatch.setattr(ModuleIndex, "load", classmethod(lambda cls: loads.append(1) or real_load(cls)))

    def check_and_note():
        # as a gate's check outside `nxc test`'s runner notes it (the pytest
        # plugin: nxc/gates/execute.py, run_unit; the runner notes its
        # workers' notes itself, tests/test_plan.py)
        found = check_gate(top, [], Diagnostics())
        assert found is not None
        note_modules(found.notes)
    check_and_note()
    assert loads and ModuleIndex.load().module(os.path.realpath(top)).get("interface")
    n = len(loads)
    check_and_note()
    assert len(loads) == n                          # the same notes, the same file: not loaded again
    blob = open(index_file(), "rb").read()          # another process rewrites the index
    os.remove(index_file())
    open(index_file(), "wb").write(blob)
    check_and_note()
    assert len(loads) == n + 1
