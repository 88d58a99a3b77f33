"""Every Python package under nxc/ is listed in pyproject.toml, so a
non-editable install has it (a missing nxc.tools would break `nxc` itself)."""
from __future__ import annotations

import os
import tomllib

ROOT = os.path.join(os.path.dirname(__file__), "..")


def test_every_nxc_package_is_installed():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = set()
    for folder, dirs, files in os.walk(os.path.join(ROOT, "nxc")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if "__init__.py" in files:
            found.add(os.path.relpath(folder, ROOT).replace(os.sep, "."))
    assert "nxc.tools" in found
    assert found <= listed, sorted(found - listed)
