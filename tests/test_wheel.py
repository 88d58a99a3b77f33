"""A release a porter can install: the sdist and the wheel are built with
`python -m build` (the wheel from the sdist, so the sdist must hold what a
build needs), the wheel is installed NON-editable into a fresh venv, and
that venv's `nxc` runs every bundled gate from another folder with a fresh
cache (so the C runtime must come from the wheel, not from this checkout).

The venv gets nxc from the wheel only (`--no-deps --no-index`); its
dependencies come from this environment's site-packages through a .pth file
(no network). The editable nxc of this environment stays out of reach: a
path listed in a .pth is put on sys.path after the venv's own site-packages,
and the .pth files inside it are not processed. The test asserts that the
nxc that ran is the installed one.

It takes about a minute (most of it compiling the bundled gates); it is not
skipped when `build` is missing: `build` is in the test extra.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOUND = 900          # seconds: a bound against a hang, not a time any step must keep

# What a C build and the checker read at run time, beside the Python modules.
NEEDED_DATA = ["nxc/runtime/nx_runtime.c", "nxc/runtime/nx_runtime.h", "nxc/grammar/nx.lark",
               "nxc/backend/templates/module.c.j2", "nxc/backend/templates/wrappers.c.j2",
               "nxc/backend/templates/module.py.j2", "nxc/tools/templates/module.html.j2"]


def _run(cmd, **kw):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=BOUND, **kw)
    assert proc.returncode == 0, f"$ {' '.join(cmd)}\nexit {proc.returncode}\n{proc.stdout[-4000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    import build  # noqa: F401 - in the test extra; fail loudly if it is missing
    src = tmp_path_factory.mktemp("src")
    # A copy of the tracked files only: the build writes egg-info and build/
    # into its source folder, which must not be this checkout.
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, stdout=subprocess.PIPE,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if name.startswith(("tests/", "bench/", ".ci/")) or not os.path.isfile(os.path.join(ROOT, name)):
            continue
        os.makedirs(os.path.join(src, os.path.dirname(name)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, name), os.path.join(src, name))
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build backend (setuptools) of this environment, no download
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)])
    sdist = [f for f in os.listdir(out) if f.endswith(".tar.gz")]
    wheel = [f for f in os.listdir(out) if f.endswith(".whl")]
    assert len(sdist) == 1 and len(wheel) == 1, os.listdir(out)
    return os.path.join(out, sdist[0]), os.path.join(out, wheel[0])


def test_the_sdist_holds_what_a_build_needs(dists):
    sdist, _ = dists
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for name in ("pyproject.toml", "README.md", "runtime/nx_runtime.c", "runtime/nx_runtime.h",
                 "grammar/nx.lark", "nx_src/nx_f32.nx", "nxc/backend/templates/module.c.j2"):
        assert name in names, f"{name} is not in the sdist"
    bundled = {n for n in os.listdir(os.path.join(ROOT, "nx_src")) if n.endswith(".nx")}
    assert {f"nx_src/{n}" for n in bundled} <= names


def test_the_wheel_holds_the_runtime_and_metadata(dists):
    _, wheel = dists
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for name in NEEDED_DATA:
        assert name in names, f"{name} is not in the wheel"
    bundled = {n for n in os.listdir(os.path.join(ROOT, "nx_src")) if n.endswith(".nx")}
    assert {f"nxc/nx_src/{n}" for n in bundled} <= names
    # what a PyPI page shows: the README as the description, classifiers, keywords
    assert "Description-Content-Type: text/markdown" in meta
    assert "Classifier: Programming Language :: Python :: 3" in meta
    assert "Keywords:" in meta
    assert "Requires-Python: >=3.10" in meta


def test_the_installed_wheel_runs_every_bundled_gate(dists, tmp_path):
    _, wheel = dists
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    vpy = str(venv / "bin" / "python")
    site = _run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    # this environment's dependencies (lark, cffi, numpy...), after the venv's own packages
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    with open(os.path.join(site, "_nxc_test_deps.pth"), "w") as f:
        f.write("\n".join(sorted(deps)) + "\n")
    _run([sys.executable, "-m", "pip", "--python", vpy, "install", "-q", "--no-deps", "--no-index", wheel]
         if _pip_has_python_option() else
         [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site, wheel])
    elsewhere = tmp_path / "elsewhere"     # not this checkout, whose nxc/ `python -c` would import
    elsewhere.mkdir()
    where = _run([vpy, "-c", "import nxc, os; print(os.path.dirname(nxc.__file__))"], cwd=elsewhere).strip()
    assert where == os.path.join(site, "nxc"), f"nxc came from {where}, not the installed wheel"
    assert os.path.isfile(os.path.join(where, "runtime", "nx_runtime.c"))

    env = dict(os.environ, NXC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NXPATH", None)
    env.pop("PYTHONPATH", None)
    nxc = str(venv / "bin" / "nxc")
    assert _run([nxc, "--version"], cwd=elsewhere, env=env).strip() == f"nxc {_version()}"
    out = _run([nxc, "test", os.path.join(where, "nx_src"), "-q"], cwd=elsewhere, env=env)
    bundled = len([n for n in os.listdir(os.path.join(where, "nx_src")) if n.endswith(".nx")])
    assert f"{bundled} passed, 0 failed" in out, out
    # a gate run through `nxc run` too (the single-file C build that includes nx_runtime.c)
    _run([nxc, "run", os.path.join(where, "nx_src", "nx_f32_div.nx")], cwd=elsewhere, env=env)


def _pip_has_python_option() -> bool:
    out = subprocess.run([sys.executable, "-m", "pip", "--version"], stdout=subprocess.PIPE, text=True).stdout
    major = int(out.split()[1].split(".")[0])
    return major >= 22


def _version() -> str:
    import nxc
    return nxc.__version__
