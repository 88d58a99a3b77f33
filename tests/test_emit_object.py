"""`nxc emit-c --object` checks a module as a gate's worker does
(nxc/cli.py, module_object_c): the declarations of its closure, its own
bodies and those its C copies in, not every body of its closure, and writes
the very C the whole check gives (emit_module_c over check_file's program),
cold and with the cache's records and verdicts there, checked and unchecked,
with --soft-f32; a module with nothing of its own to compile still gets its
file, and its warnings are printed as `nxc check` prints them."""
from __future__ import annotations

import os

import pytest

from nxc.backend.c import copies
from nxc.backend.c.closure import import_closure
from nxc.backend.c.emit import emit_module_c
from nxc.check import frontend
from nxc.check.frontend import check_file
from nxc.cli import main, module_object_c
from nxc.diagnostics import Diagnostics
from nxc.paths import bundled_dir

LIB = """
    struct Pair { a: i64, b: i64 }
    const LIMIT: i64 = 7;
    func lib_twice(x: i64) -> i64 { return x * 2; }
    func lib_first(p: *Pair) -> i64 { return p.a; }
    func lib_sum(n: i64) -> i64 {
        var s: i64 = 0;
        var i: i64 = 0;
        while i < n { s = s + lib_twice(i); i = i + 1; }
        return s;
    }
"""

MID = """
    import "lib.nx"
    func mid(x: i64) -> i64 { return lib_twice(x) + lib_sum(x); }
"""

TOP = """
    import "mid.nx"
    func main() -> i64 {
        if mid(2) != 6 { return 1; }
        if lib_twice(LIMIT) != 14 { return 2; }
        return 0;
    }
"""


def _whole_check_c(path: str, *, checked: bool = True, soft_f32: bool = False) -> str:
    program = check_file(path, diags=Diagnostics(), soft_f32=soft_f32)
    root = program.graph.root
    return emit_module_c(program, root, import_closure(program, root), checked=checked).text


def _tree(write_nx) -> list[str]:
    return [write_nx(LIB, "lib.nx"), write_nx(MID, "mid.nx"), write_nx(TOP, "top.nx")]


@pytest.mark.parametrize("checked", [True, False])
def test_the_same_c_as_the_whole_check_cold_and_warm(write_nx, tmp_path, monkeypatch, checked):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    paths = _tree(write_nx)
    for _ in range(2):                  # cold, then from the records and verdicts the first wrote
        for path in reversed(paths):    # the top first: nothing below it recorded yet
            text, warnings = module_object_c(path, [], checked=checked)
            assert text == _whole_check_c(path, checked=checked), path
            assert warnings == []


def test_the_bundled_modules_the_same_c(tmp_path, monkeypatch):
    # the seeds' closures, the model's (copied helpers across modules, externs, globals)
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    names = ["nx_qwen3.nx", "nx_f32_gqa_attention.nx", "nx_f32_linear.nx", "nx_paged_kv_gate.nx", "nx_f32.nx"]
    for name in names:
        path = os.path.join(bundled_dir(), name)
        assert module_object_c(path, [])[0] == _whole_check_c(path), name


def test_soft_f32_the_same_c(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    path = os.path.join(bundled_dir(), "nx_f32_rms_norm.nx")
    text, _ = module_object_c(path, [], soft_f32=True)
    assert text == _whole_check_c(path, soft_f32=True)
    assert text != module_object_c(path, [])[0]


def test_the_closure_bodies_are_not_all_checked(write_nx, tmp_path, monkeypatch):
    # the worker's check: the whole check is not called, and the bodies of
    # lib.nx (whose functions top's C does not copy) are not checked
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    lib, mid, top = _tree(write_nx)
    module_object_c(lib, [])         # lib's record and verdict
    module_object_c(mid, [])

    def no_whole_check(*args, **kwargs):
        raise AssertionError("emit-c --object checked the whole program")
    monkeypatch.setattr(frontend, "check_file", no_whole_check)
    from nxc.check import summary
    checked_paths = []
    real_check_gate = summary.check_gate

    def spy(path, include, diags, soft_f32=False):
        found = real_check_gate(path, include, diags, soft_f32=soft_f32)
        checked_paths.append(list(found.bodies.checked_order))
        return found
    monkeypatch.setattr(summary, "check_gate", spy)
    assert main(["emit-c", "--object", top, "-o", str(tmp_path / "top.c")]) == 0
    [order] = checked_paths
    assert os.path.realpath(top) in order and os.path.realpath(lib) not in order


def test_a_module_without_functions_gets_its_file(write_nx, capsys):
    consts = write_nx("const K: i64 = 3;\nstruct S { x: i64 }\n", "consts.nx")
    assert main(["emit-c", "--object", consts]) == 0
    out = capsys.readouterr().out
    assert out == _whole_check_c(consts)
    assert '#include "nx_runtime.h"' in out


def test_warnings_are_printed_unless_w(write_nx, capsys):
    path = write_nx("""
        func f() -> i64 {
            return 1;
            return 2;
        }
    """, "warn.nx")
    assert main(["emit-c", "--object", path]) == 0
    err = capsys.readouterr().err
    assert "warn.nx:3:5: warning: unreachable code" in err
    assert main(["emit-c", "--object", "-w", path]) == 0
    assert "warning" not in capsys.readouterr().err


def test_an_error_exits_3_with_the_diagnostic(write_nx, capsys):
    bad = write_nx("func broken() -> i64 { return nope; }\n", "bad.nx")
    assert main(["emit-c", "--object", bad]) == 3
    err = capsys.readouterr().err
    assert "bad.nx:1:31: error:" in err and "nope" in err


def test_the_same_c_after_the_gate_was_built(write_nx, tmp_path, monkeypatch):
    # the objects and the gate's library in the cache: a build would emit
    # nothing, but emit-c still needs top's bodies and those its C copies
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    lib, mid, top = _tree(write_nx)
    assert main(["test", "-q", top]) == 0
    copies.COPIED.entries.clear()       # as a new process: no helper's C kept from the build
    for path in (top, mid):
        assert module_object_c(path, [])[0] == _whole_check_c(path), path


def test_where_the_workers_check_cannot_stand_for_the_whole_one(write_nx, capsys, monkeypatch):
    # check_gate gives None (a body used a name from outside its closure, or
    # nesting too deep for it): the whole check, its warnings printed once
    from nxc.check import summary
    path = write_nx("""
        import "lib.nx"
        func f() -> i64 {
            return lib_twice(1);
            return 2;
        }
    """, "fallback.nx")
    write_nx(LIB, "lib.nx")
    real_check_gate = summary.check_gate

    def half_way(path, include, diags, soft_f32=False):
        real_check_gate(path, include, diags, soft_f32=soft_f32)     # its diagnostics, then it gives up
        return None
    monkeypatch.setattr(summary, "check_gate", half_way)
    assert main(["emit-c", "--object", path]) == 0
    out, err = capsys.readouterr()
    assert out == _whole_check_c(path)
    assert err.count("warning: unreachable code") == 1, err
