"""A script of bench/ loaded as a module, for the tests that call its functions."""
from __future__ import annotations

import importlib.util
import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def load_bench(name: str):
    """bench/NAME.py as module NAME (bench/ on sys.path for its own imports;
    registered in sys.modules, where its dataclasses look their module up)."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def timed_apart(cmd: list[str], timeout: float = 300) -> dict:
    """bench/tree_bench.py's `timed(cmd)` (less its output), run in a process of
    its own: it is the child subreaper while `cmd` runs and reaps every child
    it has, so it must have no child but the command's (a test process may
    hold a gate host or other children of its own)."""
    import json
    import subprocess
    script = ("import json, os, sys; sys.path.insert(0, sys.argv[1]); from tree_bench import timed; "
              "r = timed(sys.argv[2:], dict(os.environ)); r.pop('output'); print(json.dumps(r))")
    proc = subprocess.run([sys.executable, "-c", script, BENCH, *cmd], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"timed({cmd}) failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])
