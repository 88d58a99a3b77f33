"""Small trees of .nx files for the runner's tests, and `nxc test --json` on them."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def write_settled(tree, files: dict) -> None:
    """Write `files` ({name: text}) into folder `tree`, dated back 10 s: the
    module index does not trust a stat taken within 2 s of a change
    (nxc/incremental/keys.py, RACY_NS), so the next run trusts them."""
    for name, text in files.items():
        (tree / name).write_text(text, encoding="utf-8")
        old = os.stat(tree / name).st_mtime - 10
        os.utime(tree / name, (old, old))


def nxc_test_results(tree, cache: str, *args: str, env: dict | None = None) -> tuple[dict[str, dict], str]:
    """({module name without .nx: its --json result}, the output for a failed
    assertion) of `nxc test TREE --json ARGS` run in `tree` with cache `cache`."""
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", str(tree), "--json", *args],
                          capture_output=True, text=True, cwd=str(tree),
                          env=dict(os.environ, NXC_CACHE_DIR=cache, **(env or {})))
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = {os.path.basename(r["id"])[:-3]: r for r in events if r.get("event") == "result"}
    return results, proc.stdout[-2000:] + proc.stderr[-2000:]
