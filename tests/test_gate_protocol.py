"""The gate protocol: outcomes come back from the child as data, with structured sites."""
import json
import os
import pickle

import pytest

from nxc.backend.registry import backend_for
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.protocol import Outcome, Site, Status
from nxc.gates.run import run_gate
from load_bounds import GATE_BOUND

DIVZERO = """func helper(z: i64) -> i64 {
    return 10 / z
}

func main() -> i64 {
    if helper(2) != 5 { return 3 }
    return helper(0)
}
"""

FAILING = """func main() -> i64 {
    let x: i64 = 4
    if x != 5 { return 7 }
    return 0
}
"""


def program(path):
    return check_file(path, diags=Diagnostics(warnings=False))


def test_status_values_are_the_words_users_see():
    assert [s.value for s in Status] == ["PASS", "FAIL", "RUNTIME-ERROR", "CRASH", "TIMEOUT", "MEMORY-LIMIT",
                                         "COMPILE-ERROR", "NO-GATE", "ERROR"]
    # str subclass: plain comparisons, JSON and formatting show the bare word
    assert Status.RUNTIME_ERROR == "RUNTIME-ERROR"
    assert json.dumps({"s": Status.FAIL}) == '{"s": "FAIL"}'
    assert f"{Status.PASS:<6}|{Status.CRASH}" == "PASS  |CRASH"


def test_an_outcome_survives_the_pipe():
    site = Site("/x/m.nx", 3, 5, "main")
    o = Outcome(Status.FAIL, 7, site, stack=(site,), captured=[("x", 4)])
    assert pickle.loads(pickle.dumps(o)) == o


@pytest.mark.parametrize("backend", ["c", "py"])
def test_a_runtime_error_carries_its_site_as_data(write_nx, backend):
    path = write_nx(DIVZERO, name="div.nx")
    o = run_gate(program(path), backend, timeout=GATE_BOUND)
    assert o.status is Status.RUNTIME_ERROR, (o.status, o.message)
    assert o.site is not None
    assert os.path.samefile(o.site.file, path)
    assert (o.site.line, o.site.column, o.site.function) == (2, 15, "helper")   # the operator
    assert o.message.endswith("div.nx:2:15: runtime error: division by zero")
    # The .nx stack, innermost first: the operator in helper, then the call in main.
    assert [(f.line, f.function) for f in o.stack] == [(2, "helper"), (7, "main")]
    assert o.stack[0] == o.site


@pytest.mark.parametrize("backend", ["c", "py"])
def test_a_failed_gate_names_the_return_and_its_operands(write_nx, backend):
    path = write_nx(FAILING, name="fail.nx")
    o = run_gate(program(path), backend, timeout=GATE_BOUND)
    assert (o.status, o.value) == (Status.FAIL, 7)
    assert (o.site.line, o.site.function) == (3, "main") and os.path.samefile(o.site.file, path)
    assert o.gate_return is not None and o.gate_return.node.pos.line == 3
    assert ("x", 4) in o.captured
    assert o.backend == backend and o.seconds > 0


@pytest.mark.parametrize("backend", ["c", "py"])
def test_one_prepare_gives_a_loaded_module_that_calls_and_runs(write_nx, backend):
    path = write_nx(DIVZERO, name="div.nx")
    prog = program(path)
    prepared = backend_for(backend).prepare(prog, purpose="api")
    helper = next(fn for fn in prog.functions if fn.decl.name == "helper")
    assert prepared.loaded.call(helper, [5]) == 2
    assert prepared.emit_seconds >= 0 and prepared.build_seconds >= 0
    assert (prepared.build_cached is None) == (backend == "py")
