"""The walk of one unit through the runner's stages (bench/unit_walk.py), pinned.

Counts, not times: the walk of a gate after a body edit of a copied leaf
(its importers' objects are emitted again), and cold. What is pinned is
what docs/runner.md ("Data handed down, not calls back") says is done: the
worker loads the graph before checking, the checker visits the incremental
layer once between its declarations and its bodies, the backend never
calls the checker, and no more steps go back to an earlier stage than
that section's table gives.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def walk(*args: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "unit_walk.py"), *args],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("cold, most_back", [(False, 16), (True, 14)])
def test_a_unit_walks_down_the_stages_with_few_returns(cold, most_back):
    out = walk(*(["--cold"] if cold else []))
    assert "checker calls from inside the backend: 0" in out
    assert "checker calls after the first code was written: 0" in out
    found = re.search(r"stage walk \((\d+) steps, (\d+) back to an earlier stage\): (.*)", out)
    assert found, out
    back, stages = int(found.group(2)), found.group(3).split(" > ")
    # loaded, declared, keyed and read from the incremental layer in one visit, bodies checked, then the backend
    assert stages[:5] == ["syntax", "check", "incremental", "check", "backend"], stages
    assert back <= most_back, out
