"""The VS Code extension's node packages, for tests/test_textmate.py and
tests/test_vscode_package.py.

`npm ci` installs editors/vscode/package-lock.json once into a folder of its
own, outside the work tree so that a fresh clone (CI's) on the same machine
finds it again: $NXC_NPM_CACHE, else ~/.cache/nxc/editors-npm (under
$XDG_CACHE_HOME when set), in a sub-folder named by the hash of
package.json, package-lock.json and the node version, which is all that
decides what `npm ci` installs. It is installed under a temporary name and
renamed when complete, and a file lock keeps xdist workers from installing
it twice at once. The tests use it through NODE_PATH (the tokenizer) or a
symlinked node_modules (vsce, in a copy of the extension).

Without node or npm, or when `npm ci` fails, the tests are skipped saying
why, except under CI (CI=true), where they fail: CI must not go green
without having tokenized a single file.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess

import pytest

EXTENSION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "editors", "vscode")
MANIFESTS = ("package.json", "package-lock.json")


def unavailable(reason: str):
    """Skip the test, or fail it under CI."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI=true: the editor tests must run in CI)", pytrace=False)
    pytest.skip(reason)


def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        unavailable("node is not on PATH (the editor tests run the TextMate grammar and the VS Code extension under node)")
    return exe


def _cache_base() -> str:
    if os.environ.get("NXC_NPM_CACHE"):
        return os.environ["NXC_NPM_CACHE"]
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "nxc", "editors-npm")


@functools.lru_cache(maxsize=None)
def node_modules() -> str:
    """The folder of the extension's installed node packages (installing them if need be)."""
    node_exe = node()
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not on PATH (needed to install vscode-textmate, vscode-oniguruma and @vscode/vsce)")
    key = hashlib.sha256()
    for name in MANIFESTS:
        with open(os.path.join(EXTENSION, name), "rb") as f:
            key.update(name.encode() + b"\0" + f.read() + b"\0")
    version = subprocess.run([node_exe, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    key.update(version.encode())
    base = _cache_base()
    home = os.path.join(base, key.hexdigest()[:20])
    done = os.path.join(home, "node_modules")
    if os.path.isdir(done):
        return done
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(base, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isdir(done):                  # another worker installed it meanwhile
            return done
        shutil.rmtree(home, ignore_errors=True)  # an install cut short (by hand): start again
        work = f"{home}.tmp-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        for name in MANIFESTS:
            shutil.copy(os.path.join(EXTENSION, name), work)
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=work,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=900)
        if r.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            unavailable(f"npm ci of editors/vscode/package-lock.json failed (exit {r.returncode}): "
                        f"{r.stderr.strip()[-600:]}")
        os.rename(work, home)
    return done


def node_env(modules: str) -> dict[str, str]:
    """The environment for a node script of the extension: its packages on NODE_PATH."""
    return dict(os.environ, NODE_PATH=modules)
