"""bench/tree_bench.py, bounded: a 5-module tree through every step, the
yardstick bracketing the cold run, and the ratio taken against the mean of
the two yardsticks (the host's speed drifts between them: docs/performance.md)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench_modules import load_bench, timed_apart

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")


def _tree_bench():
    return load_bench("tree_bench")


def _row(step, cpu, wall=float("nan")):
    return {"n": 8, "graph": "random", "step": step, "cpu": cpu, "wall": wall}


def test_ratios_against_the_mean_of_the_bracketing_yardsticks():
    tb = _tree_bench()
    rows = [_row("yardstick before the cold run: one cc -c per module (9)", 100.0),
            _row("cold", 132.0, 66.0),
            _row("yardstick after the cold run: one cc -c per module (9)", 120.0)]
    line = tb.ratios(rows)
    assert "mean of 2: 110.0 s" in line
    assert "CPU 1.200x" in line and "wall 0.600x" in line
    assert "after / before 1.200" in line


def test_yardstick_sources_leave_the_bench_cache_alone(tmp_path, monkeypatch):
    tb = _tree_bench()
    tree = tmp_path / "tree"
    subprocess.run([sys.executable, os.path.join(BENCH, "gen_tree.py"), str(tree), "--modules", "4"],
                   check=True, capture_output=True)
    user_cache = tmp_path / "bench-cache"
    monkeypatch.setenv("NXC_CACHE_DIR", str(user_cache))
    sources = tb.yardstick_sources(str(tree), str(tmp_path))
    assert len(sources) >= 4
    for path in sources:
        with open(path, encoding="utf-8") as f:
            assert "#include \"nx_runtime.h\"" in f.read()
    # The cold run that follows must find its cache empty.
    assert not user_cache.exists()


def test_small_tree_every_step(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(BENCH, "tree_bench.py"), "--sizes", "5",
                          "--no-test-edits", "--out", str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines()
    steps = [line.split("random", 1)[1].strip() for line in lines if line.startswith("   5 random")]
    assert steps[0].startswith("yardstick before the cold run")
    assert steps[1].startswith("cold ")
    assert steps[2].startswith("yardstick after the cold run")
    assert any(s.startswith("no change ") for s in steps)
    assert any(s.startswith("nxc.load(TOP) ") for s in steps)
    ratio = [line for line in lines if "cold / yardstick (mean of 2" in line]
    assert len(ratio) == 1 and "CPU " in ratio[0] and "after / before " in ratio[0]
    assert "| 5 | random | cold |" in out.stdout
    # main's last clean-up removes the moved-aside folders, the yardstick's among them
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".old-")]


def test_growth_between_sizes_against_the_yardstick():
    tb = _tree_bench()
    rows = []
    for n, cold, sticks in ((8, 100.0, (80.0, 100.0)), (16, 230.0, (190.0, 210.0))):
        rows += [dict(_row("yardstick before the cold run: x", sticks[0]), n=n),
                 dict(_row("cold", cold, 50.0), n=n),
                 dict(_row("yardstick after the cold run: x", sticks[1]), n=n)]
    (line,) = tb.growth(rows)
    assert "8 -> 16 modules (2.00x)" in line
    assert "cold CPU grew 2.300x" in line
    assert "the yardstick 2.222x" in line          # 200 / 90: the mean of each pair
    assert "cold / yardstick grew 1.035x" in line
    assert tb.growth(rows[:3]) == []               # one size: nothing to compare


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_timed_counts_the_cpu_of_a_process_that_outlived_its_parent():
    # The command exits at once; its child, reparented, burns ~0.3 s of CPU
    # after that. os.wait4 of the command alone would count none of it.
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    cmd = [sys.executable, "-c",
           f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {burn!r}])"]
    r = timed_apart(cmd)
    assert r["status"] == 0
    assert r["orphans"] == 1 and r["orphans_left"] == 0
    assert r["orphan_cpu"] >= 0.25 and r["cpu"] >= r["orphan_cpu"]
