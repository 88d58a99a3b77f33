"""Shared fixtures: an isolated build cache, and helpers to compile .nx text."""
from __future__ import annotations

import os
import textwrap

import pytest

from nxc.diagnostics import CompileError, Diagnostics
from nxc.check.frontend import check_file


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    # Tests never touch the user's cache; one cache per test session (and per
    # xdist worker) keeps repeated builds of the same program warm.
    if "NXC_CACHE_DIR" not in os.environ:
        os.environ["NXC_CACHE_DIR"] = str(tmp_path_factory.mktemp("nxc-cache"))


@pytest.fixture(autouse=True)
def _no_working_set_from_earlier_tests(monkeypatch):
    # An in-process `nxc test` over a tree raises every cache bound to twice its
    # modules (nxc/cache.py, expect_entries) for the rest of the process: in an
    # xdist worker that would silently lift the bounds later tests prune against.
    from nxc import cache
    monkeypatch.setattr(cache, "_working_set", 0)


@pytest.fixture
def write_nx(tmp_path):
    """write_nx(source, name="t.nx") -> path of a .nx file holding `source`."""
    def write(source: str, name: str = "t.nx") -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return str(path)
    return write


def compile_errors(path: str) -> list:
    """The error diagnostics of checking `path` (empty when it is clean)."""
    try:
        check_file(path, diags=Diagnostics())
    except CompileError as exc:
        return exc.diagnostics
    return []
