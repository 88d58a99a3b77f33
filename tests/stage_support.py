"""docs/architecture.md's stage order, read as data: for tests/test_layering.py
and bench/unit_walk.py (one reading of the list, so the test and the bench
cannot disagree on which stage a file is in)."""
from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stage_order(text: str | None = None) -> list[tuple[str, list[str]]]:
    """[(stage, [path under nxc/, a folder ending in /]), ...] from the doc's
    list between the `<!-- stage-order -->` marks (default: this checkout's doc)."""
    if text is None:
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            text = f.read()
    m = re.search(r"<!-- stage-order -->\n(.*?)<!-- /stage-order -->", text, re.S)
    assert m, "docs/architecture.md has no <!-- stage-order --> list"
    order = []
    for line in m.group(1).splitlines():
        item = re.fullmatch(r"- ([\w ]+): (.+)", line.strip())
        assert item, f"not a stage line: {line!r}"
        order.append((item.group(1), re.findall(r"`([^`]+)`", item.group(2))))
    return order


def stage_of(rel: str, order) -> int | None:
    """The index of the stage holding `rel` (a path under nxc/): the longest match."""
    best = None
    for k, (_, paths) in enumerate(order):
        for p in paths:
            if rel == p or (p.endswith("/") and rel.startswith(p)):
                if best is None or len(p) > best[1]:
                    best = (k, len(p))
    return None if best is None else best[0]
