"""bench/gate_work.py, bounded: a 6-module tree tested once, then its gates'
front end and link planning measured in one process as a worker runs them."""
from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")


def test_gate_work_on_a_small_tree(tmp_path):
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    subprocess.run([sys.executable, os.path.join(BENCH, "gen_tree.py"), str(tree), "--modules", "6"],
                   check=True, capture_output=True)
    env = dict(os.environ, NXC_CACHE_DIR=str(cache))
    ran = subprocess.run([sys.executable, "-m", "nxc", "test", str(tree), "-q", "-j", "2"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    out = subprocess.run([sys.executable, os.path.join(BENCH, "gate_work.py"), str(tree), "--gates", "3"],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    m = re.search(r": (\d+) gates, per gate: check_gate ([\d.]+) ms, final_program ([\d.]+) ms", out.stdout)
    assert m, out.stdout
    assert int(m.group(1)) == 3 and float(m.group(2)) > 0
    # --batch: the same gates in groups, alone and through one root importing them
    out = subprocess.run([sys.executable, os.path.join(BENCH, "gate_work.py"), str(tree), "--gates", "4",
                          "--batch", "2"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    m = re.search(r"batches of 2 \((\d+)\): alone ([\d.]+) ms a batch, as one program ([\d.]+) ms", out.stdout)
    assert m, out.stdout
    assert int(m.group(1)) == 2 and float(m.group(2)) > 0 and float(m.group(3)) > 0


def test_gate_work_refuses_an_empty_folder(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(BENCH, "gate_work.py"), str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "no .nx files" in out.stderr
