"""Every kind of cache entry, damaged, leaves every outcome as it was.

The bounded version of `bench/cache_damage.py` (the whole sweep: every file
of a warm cache, five kinds of damage, three runs each): one file of each
kind of entry (objects, their stamps and site tables, libraries, records,
verdicts, parsed modules, results, the pack, the module index, the toolchain
memos, the secret key, ...), flipped and with non-UTF-8 bytes in front, and
a `--rerun` run on both backends. Each must give every item the outcome of
the undamaged run, the same exit code, the fault still located, and no
traceback. Before, a damaged linker memo made every C gate an ERROR, and a
compiler identity memo that was not UTF-8 a traceback (this test found both
on the code before 9bad37f; tests/test_c_build_overhead.py pins them); a
damaged site table an ERROR (tests/test_hardening_cache.py).
"""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_each_kind_of_cache_entry_damaged_changes_no_outcome(tmp_path):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "cache_damage.py"), "--quick",
                           "--keep", str(tmp_path / "work")], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    items, files = int(last.split(" items;")[0]), int(last.split("; ")[1].split(" cache files")[0])
    assert items == 10 and files >= 40, last        # both backends' five items; the cache really was warm
    assert last.endswith(": 0 differ"), last
