"""Golden outputs: the C and Python that `nxc emit-c` / `nxc emit-py` write for
the small modules in tests/golden/*.nx, compared line for line with
tests/golden/NAME.c and NAME.py.

A difference is not necessarily a bug: it shows, in review, what a change to an
emitter did to the generated code. When the change is intended, regenerate
every golden file with one command and commit the diff:

    .venv/bin/python tests/test_golden.py --update

(`NXC_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py` does the same.)
The outputs are normalised so they do not depend on the checkout: the absolute
folder of the .nx file becomes `<golden>`, the nxc version `<version>`, and
relative paths are taken from tests/golden/.
Each golden module is also a gate that must pass on both backends, so a golden
file never records wrong code.
"""
from __future__ import annotations

import contextlib
import difflib
import glob
import io
import os
import sys

import pytest

from nxc import __version__, cli

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
MODULES = sorted(glob.glob(os.path.join(HERE, "*.nx")))
TARGETS = {"c": "emit-c", "py": "emit-py"}


def emitted(path: str, target: str) -> str:
    """What `nxc emit-c|emit-py path` prints, normalised."""
    out, err = io.StringIO(), io.StringIO()
    # from the module's folder, so the relative paths in comments do not depend on the caller's
    here = os.getcwd()
    os.chdir(os.path.dirname(path))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main([TARGETS[target], path])
    finally:
        os.chdir(here)
    assert status == 0, err.getvalue()
    return out.getvalue().replace(os.path.dirname(path), "<golden>").replace(f"nxc {__version__}", "nxc <version>")


def golden_path(path: str, target: str) -> str:
    return path[: -len(".nx")] + "." + target


def update() -> list[str]:
    written = []
    for path in MODULES:
        for target in TARGETS:
            with open(golden_path(path, target), "w", encoding="utf-8") as f:
                f.write(emitted(path, target))
            written.append(golden_path(path, target))
    return written


def test_there_are_golden_modules():
    assert len(MODULES) >= 2


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_output_matches_the_golden_file(path, target):
    text = emitted(path, target)
    if os.environ.get("NXC_UPDATE_GOLDEN"):
        with open(golden_path(path, target), "w", encoding="utf-8") as f:
            f.write(text)
    with open(golden_path(path, target), encoding="utf-8") as f:
        want = f.read()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                            "golden", "emitted", n=2))
        pytest.fail(f"{os.path.basename(golden_path(path, target))} differs "
                    f"(if intended: python tests/test_golden.py --update):\n{diff[:6000]}")


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_golden_module_is_a_passing_gate(path, capsys):
    assert cli.main(["run", "--backend", "both", path]) == 0, capsys.readouterr().err


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_golden.py --update   (rewrites tests/golden/*.c and *.py)")
    for name in update():
        print("wrote", os.path.relpath(name))
