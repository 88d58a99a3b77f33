"""Stages stay in their room: no module imports a stage that comes after its
own in docs/architecture.md's stage order (the list between the
`<!-- stage-order -->` marks), imports inside functions included; and no
backend imports the checker (issue 33: the program is final before a
backend runs; tests/test_backend_never_checks.py checks that at run time)."""
from __future__ import annotations

import ast
import os

from stage_support import stage_of, stage_order

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NXC = os.path.join(ROOT, "nxc")

# Always allowed: the gate protocol's data (Status, Site, Outcome), which a
# backend's loaded module fills in when it runs a gate (docs/architecture.md).
EXCEPTIONS = {"gates/protocol.py": "the gate protocol's data, filled in by a backend's loaded module"}

# Imports against the order that are there today, each with why it is still
# there; the coordinator empties this as they are moved (issue 33). An entry
# whose import is gone must leave (test_today_lists_only_what_is_still_there).
TODAY: dict = {}     # (importer, imported): reason; empty since nxc/incremental/ landed (issue 33)


def _order():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        return stage_order(f.read())


def _target(module: str, root: str) -> str | None:
    """The file under `root` (nxc/) that `module` ("nxc.a.b") names, if any."""
    rel = module.split(".")[1:]
    for cand in ("/".join(rel) + ".py", "/".join(rel + ["__init__.py"])):
        if rel and os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def imports_against(order, root: str = NXC) -> tuple[set, list]:
    """({(importer, imported)} against the order, [files no stage holds])."""
    found, homeless = set(), []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            own = stage_of(rel, order)
            if own is None:
                homeless.append(rel)
                continue
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                for module in names:
                    if not module.startswith("nxc."):
                        continue
                    target = _target(module, root)
                    stage = stage_of(target, order) if target else None
                    if stage is not None and stage > own and target not in EXCEPTIONS:
                        found.add((rel, target))
    return found, homeless


def test_every_file_has_a_stage():
    _, homeless = imports_against(_order())
    assert not homeless, f"add these to docs/architecture.md's stage order: {homeless}"


def test_no_stage_imports_a_later_one():
    found, _ = imports_against(_order())
    new = sorted(found - set(TODAY))
    assert not new, f"imports of a later stage (docs/architecture.md, stage order): {new}"


def test_today_lists_only_what_is_still_there():
    found, _ = imports_against(_order())
    gone = sorted(set(TODAY) - found)
    assert not gone, f"no longer imported: remove from TODAY: {gone}"


def test_the_check_sees_a_late_import(tmp_path):
    (tmp_path / "check").mkdir()
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "run.py").write_text("")
    (tmp_path / "check" / "x.py").write_text("def f():\n    from nxc.gates.run import execute\n")
    order = stage_order("<!-- stage-order -->\n- check: `check/`\n- gates: `gates/`\n<!-- /stage-order -->")
    assert imports_against(order, str(tmp_path)) == ({("check/x.py", "gates/run.py")}, [])


# ---- no backend imports the checker ----
# What of nxc/check/ a backend may read: the checked program's data (its
# functions and side tables, types, the extern table), never the checker.
CHECK_DATA = {"nxc.check.program", "nxc.check.types", "nxc.check.externs"}


def checker_imports(root: str = os.path.join(NXC, "backend")) -> list[tuple[str, str]]:
    """(file, module) of every import of the checker under `root`."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in (n for n in files if n.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    mods = ([node.module] if node.module != "nxc.check" else
                            [f"nxc.check.{a.name}" for a in node.names])
                else:
                    continue
                for mod in mods:
                    if (mod == "nxc.check" or mod.startswith("nxc.check.")) and mod not in CHECK_DATA:
                        found.append((os.path.relpath(path, root), mod))
    return found


def test_no_backend_module_imports_the_checker():
    assert checker_imports() == []


def test_the_import_check_sees_a_checker_import(tmp_path):
    (tmp_path / "x.py").write_text("def f():\n    from nxc.check.summary import check_gate\n"
                                   "from nxc.check import frontend\nfrom nxc.check.types import I64\n")
    assert sorted(m for _, m in checker_imports(str(tmp_path))) == ["nxc.check.frontend", "nxc.check.summary"]
