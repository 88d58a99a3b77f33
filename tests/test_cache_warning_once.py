"""issue 31: the full-cache warning is printed once per `nxc` run, not once per
worker process (`nxc test` with 2 workers printed it twice)."""
from __future__ import annotations

import os
import subprocess
import sys

from nxc import cache

DEGRADE = "from nxc import cache; cache.degrade('cannot write to the cache folder (no space left on device)')"


def _worker(env) -> str:
    return subprocess.run([sys.executable, "-c", DEGRADE], env=env, capture_output=True, text=True).stderr


def test_the_workers_of_one_run_warn_once(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    with cache.one_run():
        run = os.environ[cache.RUN_ID_ENV]
        outputs = [_worker(dict(os.environ)) for _ in range(3)]
    assert sum(out.count("nxc: warning:") for out in outputs) == 1, outputs
    assert cache.RUN_ID_ENV not in os.environ
    assert not os.path.exists(cache._marker(run, str(tmp_path / "cache")))     # the run cleaned up


def test_without_a_run_each_process_warns(tmp_path):
    env = dict(os.environ, NXC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop(cache.RUN_ID_ENV, None)
    assert all("nxc: warning:" in _worker(env) for _ in range(2))
