"""The pytest plugin: `.nx` gates and library modules as pytest items."""
from __future__ import annotations

import importlib.metadata
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nx_gate_fixtures import EXPECTED, line_of, write_tree

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[1]
PASSED = sum(s == "PASS" for s in EXPECTED.values())
FAILED = len(EXPECTED) - PASSED


def plugin_args() -> list[str]:
    """Installed (pip install -e .), the pytest11 entry point loads the plugin
    and naming it again would register it twice; otherwise name it."""
    installed = any(ep.value == "nxc.gates.pytest_plugin"
                    for ep in importlib.metadata.entry_points(group="pytest11"))
    return ["-p", "no:cacheprovider"] + ([] if installed else ["-p", "nxc.gates.pytest_plugin"])


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    # One folder for every test: the generated C names the .nx paths (#line),
    # so a stable folder keeps the builds cached from one test to the next.
    return Path(write_tree(tmp_path_factory.mktemp("plugin-gates")))


@pytest.fixture
def gates(pytester, tree, monkeypatch):
    """pytester, running inside the shared tree of .nx modules."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.chdir(tree)
    return pytester


def test_collects_gates_and_library_modules(gates):
    result = gates.runpytest(*plugin_args(), "--collect-only", "-q")
    out = result.stdout.str()
    assert "fail.nx::main" in out and "lib.nx::compile" in out and "pass.nx::main" in out
    result.stdout.fnmatch_lines([f"{len(EXPECTED)} tests collected*"])


def test_testpaths_collect_no_nx_unless_asked(gates):
    # A bare `pytest` that takes its paths from testpaths (as nxc's own suite
    # does, with .nx fixtures in tests/nx/) leaves .nx files alone...
    result = gates.runpytest(*plugin_args(), "-o", "testpaths=.", "--collect-only", "-q")
    assert ".nx::" not in result.stdout.str()
    # ...unless the project says so.
    result = gates.runpytest(*plugin_args(), "-o", "testpaths=.", "-o", "nx_collect=always", "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"{len(EXPECTED)} tests collected*"])


def test_failures_show_nx_source_not_a_traceback(gates):
    result = gates.runpytest(*plugin_args(), "--nx-timeout", "1.5")
    result.assert_outcomes(passed=PASSED, failed=FAILED)
    n = line_of("fail.nx", "return 10")
    result.stdout.fnmatch_lines([
        "*_ fail.nx: gate [[]c[]] _*",
        f"FAIL main returned 10 at fail.nx:{n}",
        f" >{n:5d} |     if r != NX_OK {{ return 10 }}",
        "*r = 3",
        "*NX_OK = 0",
    ])
    out = result.stdout.str()
    assert "crash.nx:3:5: runtime error: write of i64 through a null pointer" in out
    assert "TIMEOUT: the gate did not finish in 1.5 s" in out and "--nx-timeout" in out
    assert "compile_error.nx:3:12: error: undefined name 'coutn'" in out
    assert "Traceback" not in out and "runner.py" not in out and "def runtest" not in out


def test_keyword_selection(gates):
    result = gates.runpytest(*plugin_args(), "-k", "fail or lib")
    result.assert_outcomes(passed=1, failed=1)
    result = gates.runpytest(*plugin_args(), "-k", "library")      # the kind is a keyword
    result.assert_outcomes(passed=1)


def test_junitxml(gates):
    xml = gates.path / "report.xml"     # pytester's own folder; the run is in the tree
    result = gates.runpytest(*plugin_args(), "-k", "pass or fail", f"--junitxml={xml}")
    result.assert_outcomes(passed=1, failed=1)
    cases = {c.get("classname"): c for c in ET.parse(xml).getroot().iter("testcase")}
    failure = cases["fail.nx"].find("failure")
    assert "main returned 10" in failure.get("message") and "r = 3" in failure.text
    assert cases["pass.nx"].find("failure") is None
    # xunit2 (pytest's default, junit-10.xsd) has no testcase <properties>: the
    # message and text carry the value and operands. xunit1 keeps the properties.
    assert not list(cases["fail.nx"].iter("property"))
    result = gates.runpytest(*plugin_args(), "-k", "fail", f"--junitxml={xml}", "-o", "junit_family=xunit1")
    cases = {c.get("classname"): c for c in ET.parse(xml).getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["fail.nx"].iter("property")}
    assert props["nx_value"] == "10" and props["nx_captured r"] == "3"


def test_xdist_spreads_gates_across_workers(gates):
    pytest.importorskip("xdist")
    result = gates.runpytest_subprocess(*plugin_args(), "-n", "2", "--nx-timeout", "1.5", timeout=240)
    result.assert_outcomes(passed=PASSED, failed=FAILED)
    out = result.stdout.str()
    assert "FAIL main returned 10" in out and "r = 3" in out
    assert "Traceback" not in out


def test_backend_both_gives_an_item_per_backend(gates):
    result = gates.runpytest(*plugin_args(), "--nx-backend", "both", "-k", "pass or fail", "-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*pass.nx::main[[]c[]] PASSED*", "*pass.nx::main[[]py[]] PASSED*"])


def test_unchecked_option(gates):
    result = gates.runpytest(*plugin_args(), "--nx-unchecked", "-k", "crash")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "CRASH (SIGSEGV)" in out and "the checked build (run again to locate the crash) stopped at:" in out


def test_a_stub_is_skipped_not_passed(pytester, monkeypatch):
    # a module `nxc port --stubs` wrote compiles, but it is no pass: pytest shows it as skipped
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    (pytester.path / "nx_gone.nx").write_text(
        "// nxc-stub: module written by `nxc port --stubs` (nxc test reports it as STUB)\n"
        "func nx_gone_f() -> i64 {\n    return 0  // STUB: placeholder value\n}\n", encoding="utf-8")
    result = pytester.runpytest(*plugin_args(), "-o", "nx_collect=always", "-rs", "nx_gone.nx")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*STUB: a stub written by 'nxc port --stubs'*"])


@pytest.mark.parametrize("value", ["nan", "inf", "0", "1e20"])
def test_nx_timeout_must_be_positive_finite_and_bounded(gates, value):
    # Before: nan passed the check (nan <= 0 is false) and 1e20 reached
    # select() as an OverflowError inside the run.
    result = gates.runpytest(*plugin_args(), "--nx-timeout", value)
    assert result.ret != 0
    out = result.stdout.str() + result.stderr.str()
    assert "--nx-timeout must be a positive, finite number of seconds" in out and "Traceback" not in out
