"""What a user installs is what we test: the sdist and the wheel are built
from a clean copy of the tree (`python -m build`, which builds the wheel from
the sdist), the wheel is installed non-editable into a fresh venv, and every
bundled gate runs from another folder.

A clean copy matters: the editable install of the suite leaves
nxc.egg-info/SOURCES.txt in the tree, and setuptools takes files listed there
into the sdist, which once hid a wheel without runtime/nx_runtime.c (every C
gate then failed to compile).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# Left by an editable install, a build or a run: never part of what a user gets.
_NOT_SOURCE = {".git", ".venv", "build", "dist", ".nxc-cache", "__pycache__",
               ".pytest_cache", ".hypothesis"}


def _copy_source(dest: str) -> None:
    def ignore(folder, names):
        return [n for n in names if n in _NOT_SOURCE or n.endswith(".egg-info")]
    shutil.copytree(ROOT, dest, ignore=ignore)


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    src = str(base / "src")
    _copy_source(src)
    dist = str(base / "dist")
    _run([sys.executable, "-m", "build", "--outdir", dist, src], timeout=900)
    wheels = [f for f in os.listdir(dist) if f.endswith(".whl")]
    sdists = [f for f in os.listdir(dist) if f.endswith(".tar.gz")]
    assert len(wheels) == 1 and len(sdists) == 1, os.listdir(dist)
    return base, os.path.join(dist, wheels[0]), os.path.join(dist, sdists[0])


def _data_files():
    """Every file of the data packages the C and Python backends read at run time."""
    out = []
    for folder, prefix in (("runtime", "nxc/runtime/"), ("grammar", "nxc/grammar/"),
                           ("nx_src", "nxc/nx_src/")):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith((".c", ".h", ".py", ".lark", ".nx")):
                out.append(prefix + name)
    return out


def test_wheel_and_sdist_carry_the_runtime_and_every_bundled_module(built):
    _, wheel, sdist = built
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    missing = [f for f in _data_files() if f not in names]
    assert not missing, missing
    assert "nxc/runtime/nx_runtime.c" in names
    with tarfile.open(sdist) as t:
        members = {m.split("/", 1)[1] for m in t.getnames() if "/" in m}
    for f in ("runtime/nx_runtime.c", "runtime/nx_runtime.h", "grammar/nx.lark",
              "pyproject.toml", "README.md"):
        assert f in members, f


def test_installed_wheel_runs_every_bundled_gate_from_another_folder(built, tmp_path):
    base, wheel, _ = built
    venv = str(base / "venv")
    _run([sys.executable, "-m", "venv", venv], timeout=300)
    py = os.path.join(venv, "bin", "python")
    _run([py, "-m", "pip", "install", "-q", wheel], timeout=900)
    nxc = os.path.join(venv, "bin", "nxc")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, NXC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NXPATH", None)
    version = _run([nxc, "--version"], cwd=elsewhere, env=env, timeout=120)
    assert version.stdout.startswith("nxc ")
    where = _run([py, "-c", "from nxc.paths import bundled_dir; print(bundled_dir())"],
                 cwd=elsewhere, env=env, timeout=120).stdout.strip()
    # The installed copy, not this checkout's.
    assert where.startswith(venv) and not where.startswith(ROOT), where
    n_bundled = len([f for f in os.listdir(os.path.join(ROOT, "nx_src")) if f.endswith(".nx")])
    proc = _run([nxc, "test", "-q", "-j", "2", where], cwd=elsewhere, env=env, timeout=1800)
    assert f"{n_bundled} passed, 0 failed" in proc.stdout, proc.stdout[-3000:]
