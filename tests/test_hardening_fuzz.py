"""issue 15: the pathological set of bench/fuzz_frontend.py, bounded, in the suite.

Every kind of deep nesting and oversized construct, line-end and Unicode
oddities, and hostile folder names: never a traceback, never a hang, and
hostile names run and pass on both backends. The long runs are
`python bench/fuzz_frontend.py --count 100000 --pathological`.
"""
from __future__ import annotations

import importlib.util
import os
import random

_spec = importlib.util.spec_from_file_location(
    "fuzz_frontend", os.path.join(os.path.dirname(__file__), "..", "bench", "fuzz_frontend.py"))
fuzz_frontend = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_frontend)


def test_pathological_inputs_give_results_or_located_errors():
    # budget: only a real hang counts (the long run's slowest input takes seconds)
    stats = fuzz_frontend.run_pathological(sizes=(10, 1000, 12_000), budget=600)
    assert stats["tried"] == 3 * len(fuzz_frontend.PATHOLOGICAL)
    assert stats["crashed"] == 0 and stats["hangs"] == 0, stats["failures"][:3]
    assert stats["diagnosed"] >= len(fuzz_frontend.PATHOLOGICAL) // 2     # past-the-limit sizes are errors


def test_line_end_and_unicode_oddities_only_ever_give_diagnostics(tmp_path):
    from nxc.check.frontend import check_file
    from nxc.diagnostics import CompileError, Diagnostics
    path = tmp_path / "odd.nx"
    inputs = fuzz_frontend.line_end_inputs(random.Random(15), 400)
    outcomes = {"clean": 0, "diagnosed": 0}
    for data in inputs:
        path.write_bytes(data)
        try:
            check_file(str(path), diags=Diagnostics())
            outcomes["clean"] += 1
        except CompileError as exc:
            outcomes["diagnosed"] += 1
            for d in exc.diagnostics:
                d.render()
    assert outcomes["clean"] and outcomes["diagnosed"]


def test_hostile_folder_names_run_and_pass():
    stats = fuzz_frontend.run_hostile_paths()
    assert stats["failures"] == [] and stats["passed"] == stats["tried"] == 2 * len(fuzz_frontend.HOSTILE_NAMES)
