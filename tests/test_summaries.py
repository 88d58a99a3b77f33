"""Per-module check summaries (nxc/check/summary.py): interfaces, their digests, clean verdicts.

The incremental rules, shown on a small tree through `nxc check` with
NXC_DEBUG_STATS=1 (which prints the modules whose bodies were checked and
those taken from a clean verdict): no change re-checks nothing; a body edit
of a leaf re-checks the leaf only; an interface edit re-checks the leaf and
every module whose closure holds it, and no other.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nxc.check.summary import check_incremental, check_module, interface_of, ModuleChecker
from nxc.incremental.keys import interface_digest
from nxc.syntax.loader import load_graph
from nxc.diagnostics import CompileError, Diagnostics

REPO = Path(__file__).resolve().parents[1]

LEAF = """
    const N: i64 = 4
    struct Pair {
        a: i64
        b: i32
    }
    func leaf(x: i64) -> i64 {
        return x + N
    }
"""
FILES = {
    "leaf.nx": LEAF,
    "box.nx": """
        import "leaf.nx"
        struct Box {
            p: Pair
            tag: u8
        }
        func boxed(b: *Box) -> i64 {
            return b.p.a + leaf(1)
        }
    """,
    "side.nx": """
        func side(x: i64) -> i64 {
            return x * 3
        }
    """,
    "top.nx": """
        import "box.nx"
        import "side.nx"
        func main() -> i64 {
            let unused: i64 = 0
            if side(leaf(1)) != 15 { return 1 }
            return 0
        }
    """,
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    for name, text in FILES.items():
        write(tmp_path / "t" / name, text)
    return tmp_path / "t"


def interfaces(root: Path) -> dict[str, str]:
    """Module file name -> interface digest, for the graph of top.nx."""
    diags = Diagnostics()
    graph = load_graph(str(root / "top.nx"), None, diags)
    checker = ModuleChecker(graph, diags)
    checker.check_declarations()
    return {os.path.basename(m.source.path): interface_digest(interface_of(checker, m)) for m in graph.modules}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_a_body_edit_leaves_the_interface_and_a_signature_const_or_field_edit_changes_it(tree):
    before = interfaces(tree)
    edit(tree / "leaf.nx", "return x + N", "return N + x + 0")
    assert interfaces(tree) == before                                   # a body edit
    for old, new, changed in (("leaf(x: i64) -> i64", "leaf(x: i64) -> i32", {"leaf.nx"}),  # a signature
                              ("N: i64 = 4", "N: i64 = 5", {"leaf.nx"}),                   # a const's value
                              ("b: i32", "b: i64", {"leaf.nx", "box.nx"})):               # a field: Box embeds Pair
        base = interfaces(tree)
        edit(tree / "leaf.nx", old, new)
        after = interfaces(tree)
        assert {m for m in after if after[m] != base[m]} == changed, (old, new)
        edit(tree / "leaf.nx", new, old)
    assert interfaces(tree) == before
    edit(tree / "leaf.nx", "func leaf(x: i64)", "func leaf(y: i64)")    # parameter names are not interface
    edit(tree / "leaf.nx", "return N + x + 0", "return N + y + 0")
    assert interfaces(tree) == before


def check(root: Path, cache: Path, name: str = "top.nx", *flags) -> tuple[subprocess.CompletedProcess, set, set]:
    env = dict(os.environ, NXC_CACHE_DIR=str(cache), NXC_DEBUG_STATS="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "nxc", "check", *flags, str(root / name)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    stats = next((json.loads(line[len("nxc: stats: "):]) for line in proc.stderr.splitlines()
                  if line.startswith("nxc: stats: ")), {"checked": [], "reused": []})
    ours = lambda paths: {os.path.basename(p) for p in paths if os.path.dirname(p) == str(root.resolve())}  # noqa: E731
    return proc, ours(stats["checked"]), ours(stats["reused"])


def test_what_is_rechecked_after_each_kind_of_edit(tree, tmp_path):
    cache = tmp_path / "cache"
    proc, checked, reused = check(tree, cache)
    assert proc.returncode == 0 and checked == set(FILES) and reused == set()
    warning = [line for line in proc.stderr.splitlines() if "warning:" in line]
    assert warning and "unused variable 'unused'" in warning[0]

    proc, checked, reused = check(tree, cache)                          # no change: nothing checked
    assert proc.returncode == 0 and checked == set() and reused == set(FILES)
    assert [line for line in proc.stderr.splitlines() if "warning:" in line] == warning    # shown the same

    edit(tree / "leaf.nx", "return x + N", "return N + x")              # body edit: the leaf only
    proc, checked, reused = check(tree, cache)
    assert proc.returncode == 0 and checked == {"leaf.nx"} and reused == {"box.nx", "side.nx", "top.nx"}

    edit(tree / "leaf.nx", "const N: i64 = 4", "const N: i64 = 4\nconst M: i64 = 9")    # interface edit
    proc, checked, reused = check(tree, cache)
    assert proc.returncode == 0 and checked == {"leaf.nx", "box.nx", "top.nx"} and reused == {"side.nx"}

    proc, checked, _ = check(tree, cache, "side.nx")                     # side.nx's own closure: checked clean
    assert checked == set()

    env = dict(os.environ, NXC_CACHE_DIR=str(cache), NXC_DEBUG_STATS="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "nxc", "check", "top.nx"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "top.nx:4:9: warning: unused variable 'unused'" in proc.stderr.splitlines()[0]


def test_an_error_in_an_imported_module_keeps_its_import_notes_and_is_never_a_verdict(tree, tmp_path):
    cache = tmp_path / "cache"
    check(tree, cache)
    edit(tree / "leaf.nx", "return x + N", "return x + NN")
    proc, _, _ = check(tree, cache)
    assert proc.returncode == 3
    assert "leaf.nx:7:16: error: undefined name 'NN'" in proc.stderr
    assert proc.stderr.count("note: imported from here") == 2          # top.nx -> box.nx -> leaf.nx
    proc, _, _ = check(tree, cache)
    assert proc.returncode == 3 and "undefined name 'NN'" in proc.stderr
    edit(tree / "leaf.nx", "return x + NN", "return x + N")
    proc, checked, _ = check(tree, cache)
    assert proc.returncode == 0 and checked == set()      # back to the text checked clean before: its verdict


def test_a_name_from_outside_the_own_closure_is_checked_every_time(tree, tmp_path):
    # box.nx uses side() without importing side.nx: legal (one namespace over
    # top.nx's graph), but box.nx's verdict would then depend on side.nx too.
    edit(tree / "box.nx", "return b.p.a + leaf(1)", "return b.p.a + leaf(1) + side(0)")
    cache = tmp_path / "cache"
    for _ in range(2):
        proc, checked, _ = check(tree, cache)
        assert proc.returncode == 0 and "box.nx" in checked


def test_no_warnings_flag_records_no_verdict(tree, tmp_path):
    cache = tmp_path / "cache"
    proc, checked, _ = check(tree, cache, "top.nx", "-w")
    assert proc.returncode == 0 and "warning:" not in proc.stderr and checked == set(FILES)
    proc, checked, _ = check(tree, cache)
    assert checked == set(FILES) and "unused variable 'unused'" in proc.stderr


def test_a_damaged_verdict_is_checked_again(tree, tmp_path):
    cache = tmp_path / "cache"
    check(tree, cache)
    for f in (cache / "summaries").iterdir():
        f.write_bytes(f.read_bytes()[:-3] + b"xyz")
    proc, checked, _ = check(tree, cache)
    assert proc.returncode == 0 and checked == set(FILES)


def test_check_module_checks_one_modules_bodies(tree):
    program = check_module(str(tree / "top.nx"), module=str((tree / "box.nx").resolve()))
    assert [fn.decl.name for fn in program.functions] == ["boxed"] and program.entry is None
    assert any(program.info.ty(e) is not None for e in program.info.types)
    top = check_module(str(tree / "top.nx"))
    assert [fn.decl.name for fn in top.functions] == ["main"] and top.entry is not None
    edit(tree / "side.nx", "return x * 3", "return y * 3")       # an error in a body not checked here
    assert [fn.decl.name for fn in check_module(str(tree / "top.nx")).functions] == ["main"]
    with pytest.raises(CompileError):
        check_incremental(str(tree / "top.nx"), use_verdicts=False)


def test_check_gate_reports_what_check_file_reports_and_checks_only_the_root_once_verdicts_exist(tree):
    """The front end of a gate's worker (nxc test, C backend): the same rendered
    warnings, the same compile error with its import notes, as the whole check;
    the root's bodies always checked, the others only without a verdict."""
    from nxc.check.frontend import check_file
    from nxc.check.summary import check_gate

    def whole():
        diags = Diagnostics(warnings=True)
        check_file(str(tree / "top.nx"), None, diags)
        return [d.render() for d in diags.warnings]

    edit(tree / "side.nx", "return x * 3", "let spare: i64 = 1\n    return x * 3")    # a warning in an import
    expected = whole()
    assert len(expected) == 2
    first = check_gate(str(tree / "top.nx"), None, Diagnostics(warnings=True))
    assert first.warnings == expected
    assert {os.path.basename(p) for p in first.bodies.checked_order} == set(FILES)
    again = check_gate(str(tree / "top.nx"), None, Diagnostics(warnings=True))
    assert again.warnings == expected                           # side.nx's from its verdict
    assert [os.path.basename(p) for p in again.bodies.checked_order] == ["top.nx"]
    names = {fn.decl.name for fn in again.program.functions}
    assert names == {"leaf", "boxed", "side", "main"}             # every function, bodies checked or not
    assert again.program.recorded.unchecked == {"leaf", "boxed", "side"}

    edit(tree / "leaf.nx", "return x + N", "return x + NN")
    with pytest.raises(CompileError) as gate_error:
        check_gate(str(tree / "top.nx"), None, Diagnostics(warnings=True))
    with pytest.raises(CompileError) as file_error:
        check_file(str(tree / "top.nx"), None, Diagnostics(warnings=True))
    rendered = lambda exc: [d.render() for d in exc.value.diagnostics]      # noqa: E731
    assert rendered(gate_error) == rendered(file_error)
    assert "note: imported from here" in "\n".join(rendered(gate_error))
