"""bench/qlinear_ab.py, bounded: two copies of the quantized kernel give the same words on a
small weight, and bad arguments are refused with one error line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from nxc.paths import bundled_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "qlinear_ab.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=600)


def test_qlinear_ab_compares_two_kernels_on_the_same_words(tmp_path):
    base = tmp_path / "nx_f32_qgemm_base.nx"
    shutil.copy(os.path.join(bundled_dir(), "nx_f32_qgemm.nx"), base)
    for tokens in ("1", "3"):
        r = run(str(base), "--tokens", tokens, "--mib", "1", "--types", "q4_k,q6_k", "--repeats", "1")
        assert r.returncode == 0, r.stderr
        lines = [l for l in r.stdout.splitlines() if "same words" in l]
        assert [l.split()[1].rstrip(":") for l in lines] == ["q4_k", "q6_k"], r.stdout
        assert all("same words: yes" in l for l in lines), r.stdout
        assert all(("GB/s of" in l) == (tokens == "1") for l in lines), r.stdout


def test_qlinear_ab_refuses_bad_arguments(tmp_path):
    r = run(str(tmp_path / "missing.nx"))
    assert r.returncode != 0 and "qlinear_ab: error:" in r.stderr and "Traceback" not in r.stderr
    base = tmp_path / "base.nx"
    base.write_text("", encoding="utf-8")
    r = run(str(base), "--types", "q9_9")
    assert r.returncode != 0 and "unknown type 'q9_9'" in r.stderr and "Traceback" not in r.stderr
