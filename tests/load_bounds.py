"""Time bounds for tests whose gate must finish: a bound against a hang, never
the verdict. A gate's --timeout is wall-clock time, and on a loaded machine (2
cores shared by several suites) a gate runs many times slower than alone: the
Python backend's nx_f32_soft.nx gate hit the 60 s default. A test that expects
PASS, FAIL or a run-time error therefore gives its gate GATE_BOUND, not the
default; a test that expects TIMEOUT keeps a short timeout on a gate that never
ends (its verdict does not depend on the load either).

NXC_TEST_TIME_SCALE multiplies the bound on a slower machine still."""
from __future__ import annotations

import os

SCALE = float(os.environ.get("NXC_TEST_TIME_SCALE", "1") or 1)
GATE_BOUND = 900.0 * SCALE          # seconds
