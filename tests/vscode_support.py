"""The VS Code extension's node packages, for tests/test_textmate.py and
tests/test_vscode_package.py.

`npm ci` installs editors/vscode/package-lock.json into editors/vscode/node_modules
(git-ignored) once: a stamp file there records the lock file's hash and the
node version, so a changed lock file (or node) installs again. A file lock
keeps two xdist workers from running `npm ci` in the same folder at once.

Without node or npm, or when `npm ci` fails, the tests are skipped saying why,
except under CI (CI=true), where they fail: CI must not go green without
having tokenized a single file.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess

import pytest

EXTENSION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "editors", "vscode")
NODE_MODULES = os.path.join(EXTENSION, "node_modules")
STAMP = os.path.join(NODE_MODULES, ".nxc-npm-ci-stamp")


def unavailable(reason: str):
    """Skip the test, or fail it under CI."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI=true: the editor tests must run in CI)", pytrace=False)
    pytest.skip(reason)


def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        unavailable("node is not on PATH (the TextMate grammar is tested with vscode-textmate under node)")
    return exe


def _stamp_text(node_exe: str) -> str:
    with open(os.path.join(EXTENSION, "package-lock.json"), "rb") as f:
        lock = hashlib.sha256(f.read()).hexdigest()
    version = subprocess.run([node_exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    return f"package-lock.json sha256 {lock}\nnode {version}\n"


def install() -> str:
    """Install the extension's node packages if they are not there yet; return node's path."""
    node_exe = node()
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not on PATH (needed to install vscode-textmate, vscode-oniguruma and @vscode/vsce)")
    want = _stamp_text(node_exe)
    with open(os.path.join(EXTENSION, ".npm-ci.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(STAMP, encoding="utf-8") as f:
                if f.read() == want:
                    return node_exe
        except OSError:
            pass
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=EXTENSION,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
        if r.returncode != 0:
            unavailable(f"npm ci in editors/vscode failed (exit {r.returncode}): {r.stderr.strip()[-600:]}")
        with open(STAMP, "w", encoding="utf-8") as f:
            f.write(want)
    return node_exe
