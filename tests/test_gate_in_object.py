"""Each module's gate is compiled into its module's own object (issue 21):
a gate's build compiles no C of its own, whichever gate first compiled the
objects it links, and its report is the same.

An importing gate that compiles a module's object compiles that module's
`main` too (its checker records that gate's returns, its plan the captured
operands); the module's own gate then links that object and reports the
failed check exactly as when it compiled the object itself: the return that
fired, its line and the captured operands. The per-gate part of the library
(site bases, which main runs) is set when it is loaded (Binding), so a gate
whose objects are cached runs the linker only.
"""
from __future__ import annotations

import os

import pytest

from nxc.backend.c import objects
from nxc.backend.c.closure import import_closure
from nxc.backend.c.emit import emit_module_c
from nxc.backend.c.names import gate_symbol
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.collect import Item, Unit
from nxc.gates.execute import Options, run_unit

# A module whose gate fails at its second check, an `if` whose operands are recorded.
LOW = """
    func low_triple(x: i64) -> i64 { return x * 3 }

    func low_sum(n: i64) -> i64 {
        var s: i64 = 0
        var i: i64 = 0
        while i < n {
            s = s + i
            i = i + 1
        }
        return s
    }

    func main() -> i64 {
        if low_sum(4) != 6 { return 1 }
        let t: i64 = low_triple(5)
        if t != 16 && low_sum(3) == 3 { return 2 }
        return 0
    }
"""

HIGH = """
    import "low.nx"

    func main() -> i64 {
        if low_triple(2) != 6 { return 1 }
        return 0
    }
"""


@pytest.fixture
def tree(write_nx, tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    low = write_nx(LOW, "low.nx")
    high = write_nx(HIGH, "high.nx")
    return low, high


def gate(path: str, **kw):
    """One gate through nxc test's own worker path (check_gate, LinkedC)."""
    item = Item(id=path, path=path, display=os.path.basename(path), backend="c", kind="gate")
    [result] = run_unit(Unit(path, os.path.basename(path), [item]), Options(**kw))
    return result


def compiler_calls(monkeypatch) -> list:
    """Every compiler process the C backend runs from now on (its command line)."""
    calls = []
    real = objects._run_compiler

    def counted(cmd, direct=None):         # direct: the same run without the driver (toolchain.py)
        calls.append(list(cmd))
        real(cmd, direct)
    monkeypatch.setattr(objects, "_run_compiler", counted)
    return calls


def compiles(calls) -> list[str]:
    """The sources of the `cc -c` runs among `calls` (a link has no -c)."""
    return [os.path.basename(cmd[cmd.index("-c") + 1]) for cmd in calls if "-c" in cmd]


def names(paths) -> list[str]:
    return sorted(os.path.basename(p) for p in paths)


def report(r) -> tuple:
    return r.status, r.value, r.location, r.line, r.column, r.message, r.captured, r.report


@pytest.mark.parametrize("checked", [True, False])
def test_a_gate_reports_the_same_whichever_gate_compiled_its_object(tree, tmp_path, monkeypatch, checked):
    low, high = tree
    # The importer first: it compiles low.nx's object, low's main included.
    first = gate(high, checked=checked)
    assert first.passed and names(first.recompiled) == ["high.nx", "low.nx"], first
    calls = compiler_calls(monkeypatch)
    via_importer = gate(low, checked=checked)
    # high.nx's library holds low.nx's object: the gate runs from it, with
    # nothing compiled or linked (nxc/backend/c/hosts.py)
    assert via_importer.recompiled == [] and not via_importer.relinked
    assert calls == []
    # low.nx's own gate, in a fresh cache: it compiles its object itself
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "fresh"))
    own = gate(low, checked=checked)
    assert names(own.recompiled) == ["low.nx"]
    assert report(via_importer) == report(own)
    # ... and what it reports: the second check, its line, the captured operands
    line = 1 + [n for n, text in enumerate(open(low).read().splitlines()) if "return 2" in text][0]
    assert via_importer.status == "FAIL" and via_importer.value == 2 and via_importer.line == line
    assert [tuple(c) for c in via_importer.captured] == [("t", 15), ("low_sum(3)", 3)]


def test_a_fault_in_a_gate_compiled_by_an_importer_names_its_line_and_stack(tree, write_nx):
    low, high = tree
    low = write_nx(LOW.replace("let t: i64 = low_triple(5)", "let t: i64 = low_triple(5) / (low_sum(1) - 0)"),
                   "low.nx")
    assert gate(high).passed                # compiles low.nx's object, its main included
    r = gate(low)
    assert r.recompiled == []
    line = 1 + [n for n, text in enumerate(open(low).read().splitlines()) if "let t" in text][0]
    assert r.status == "RUNTIME-ERROR" and r.line == line and "division by zero" in r.message, r
    assert [(f["function"], f["line"]) for f in r.stack] == [("main", line)]


def test_a_cached_gate_build_compiles_nothing_and_a_body_edit_compiles_one_object(tree, write_nx, monkeypatch):
    low, high = tree
    assert gate(high).passed
    folder = os.path.join(objects.cache_dir(), "c")
    for name in os.listdir(folder):
        if name.startswith("_nx_") and name.endswith(".so"):
            os.remove(os.path.join(folder, name))
    calls = compiler_calls(monkeypatch)
    again = gate(high)                      # objects cached, library gone: linked again, nothing compiled
    assert again.passed and again.recompiled == [] and again.relinked
    assert compiles(calls) == [] and len(calls) == 1
    # a body edit of the imported module (of a function importers do not copy):
    # its object only, then the link (no C for the gate)
    write_nx(LOW.replace("s = s + i", "s = i + s"), "low.nx")
    calls.clear()
    edited = gate(high)
    assert edited.passed and names(edited.recompiled) == ["low.nx"] and edited.relinked
    assert len(compiles(calls)) == 1 and len(calls) == 2


def test_each_module_object_holds_its_own_gate_the_same_from_every_program(tree):
    low, high = tree
    texts = set()
    for root in (low, high):
        program = check_file(root, diags=Diagnostics())
        module = next(m for m in program.graph.modules if m.source.path == os.path.realpath(low))
        texts.add(emit_module_c(program, module, import_closure(program, module), checked=True).text)
        assert [r.site for r in program.gates[module.source.path].returns] == [0, 1, 2]
    assert len(texts) == 1
    text = texts.pop()
    symbol = gate_symbol(next(m for m in check_file(low, diags=Diagnostics()).graph.modules))
    assert f"int64_t {symbol}(void)" in text and "nxf_main" not in text and "nxc_run_main" not in text
    assert "nx_gate_site = 1;" in text and "nx_gate_captured[" in text


def test_two_gates_in_one_process_each_run_their_own_main(tree):
    low, high = tree
    # Both libraries loaded in this process: each binds its own root's main.
    from nxc.gates.run import run_gate
    a = run_gate(check_file(low, diags=Diagnostics()), "c")
    b = run_gate(check_file(high, diags=Diagnostics()), "c")
    again = run_gate(check_file(low, diags=Diagnostics()), "c")
    assert (a.status, a.value) == ("FAIL", 2) and (b.status, b.value) == ("PASS", 0)
    assert (again.status, again.value, again.gate_return.node.pos.line) == ("FAIL", 2, a.gate_return.node.pos.line)


def test_the_runtime_sizes_match_the_python_side():
    # The gate's report and the site ids live in the runtime now (no per-gate C
    # passes the sizes in): its constants must be the ones the emitters use.
    import re
    from nxc.lower.guards import CAPTURE_SLOTS
    from nxc.paths import runtime_dir
    header = open(os.path.join(runtime_dir(), "nx_runtime.h"), encoding="utf-8").read()
    assert int(re.search(r"#define NXRT_CAPTURE_SLOTS (\d+)", header).group(1)) == CAPTURE_SLOTS
    assert int(re.search(r"#define NXRT_SITE_BITS (\d+)", header).group(1)) == objects.SITE_BITS
    source = open(os.path.join(runtime_dir(), "nx_runtime.c"), encoding="utf-8").read()
    assert int(re.search(r"#define NXRT_MAX_MODULES (\d+)", source).group(1)) > objects.MAX_LINKED


def test_a_library_whose_modules_do_not_match_its_plan_is_refused(tree, monkeypatch):
    from nxc.backend.c import build as c_build
    from nxc.backend.registry import backend_for
    low, high = tree
    program = check_file(high, diags=Diagnostics())
    prepared = backend_for("c").prepare(program, purpose="gate", load=False)
    binding = prepared.emitted.binding
    wrong = objects.Binding(binding.bases[:-1] + (("nosuch_000000000000", binding.bases[-1][1]),), binding.root)
    monkeypatch.setattr(objects.LinkedC, "binding", property(lambda self: wrong))
    # A gate's library is opened (and bound) when first used in this process
    # (a gate host's child opens it instead: tests/test_gate_host.py).
    loaded = backend_for("c").load(program, prepared.emitted, prepared.built)
    with pytest.raises(c_build.BuildError, match="does not hold the modules its link planned"):
        loaded.lib
