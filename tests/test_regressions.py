"""Reduced cases of compiler bugs (most found by bench/difftest.py): each
tests/regressions/*.nx is a gate that must pass on the C backend at -O0 and
-O2 and on the Python backend. Each file's header says what went wrong."""
from __future__ import annotations

import glob
import os

import pytest

from nxc.diagnostics import Diagnostics
from nxc.check.frontend import check_file
from nxc.gates.run import execute
from load_bounds import GATE_BOUND

CASES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "regressions", "*.nx")))


@pytest.mark.parametrize("config", ["c-O0", "c-O2", "py"])
@pytest.mark.parametrize("path", CASES, ids=os.path.basename)
def test_regression_case_passes(path, config):
    program = check_file(path, diags=Diagnostics())
    backend = "py" if config == "py" else "c"
    outcome = execute(program, backend, opt=config[-1] if backend == "c" else "2", timeout=GATE_BOUND)[0]
    assert outcome.status == "PASS", (outcome.status, outcome.value, outcome.message)
