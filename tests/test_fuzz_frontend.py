"""Bounded front-end fuzzing in the suite; bench/fuzz_frontend.py is the long run."""
from __future__ import annotations

import importlib.util
import os

import pytest

from nxc.diagnostics import CompileError, Diagnostics

_spec = importlib.util.spec_from_file_location(
    "fuzz_frontend", os.path.join(os.path.dirname(__file__), "..", "bench", "fuzz_frontend.py"))
fuzz_frontend = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_frontend)

FUZZ_COUNT = 400


@pytest.mark.parametrize("seed", [11, 12])
def test_mutated_and_random_inputs_only_ever_give_diagnostics(seed):
    # A fixed number of inputs, not "as many as fit in N seconds": the same
    # inputs on a loaded machine as on an idle one (a few seconds each when idle).
    stats = fuzz_frontend.fuzz(count=FUZZ_COUNT, seed=seed)
    print(f"seed {seed}: tried {stats['tried']}, clean {stats['clean']}, diagnosed {stats['diagnosed']}")
    assert stats["tried"] == FUZZ_COUNT
    assert stats["diagnosed"] > 0          # the mutations really do break things
    assert stats["clean"] > 0              # ... and do not only produce garbage
    assert stats["crashed"] == 0, stats["failures"][0][1]


def test_not_utf8_is_a_located_error(tmp_path):
    from nxc.check.frontend import check_file
    p = tmp_path / "bad.nx"
    p.write_bytes(b"func main() -> i64 {\n    return 0 // caf\xe9\n}\n")
    with pytest.raises(CompileError) as info:
        check_file(str(p), diags=Diagnostics())
    d = info.value.diagnostics[0]
    assert "not valid UTF-8" in d.message and d.pos.line == 2
