"""C backend: the site table a fault or a stack frame is worded from.

A single-file build numbers its sites 0..n-1 (a plain list). A separately
compiled gate (nxc/backend/c/objects.py) gives each translation unit an
ordinal and numbers a site (ordinal << bits) | local index; each module's
table is read only when one of its sites is asked for (a gate that passes
never reads any).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Site:
    """A source position a run-time error or a stack frame can name.

    `what` is the trap's message (division by zero) or, for a checked access,
    "read of i64" / "write of ptr"; `kind` says what the site is: "div",
    "access", "call", "loop", "entry" (a function's own line), "mmap",
    "munmap", "write"; `function` is the nx function the site lies in."""
    path: str
    line: int
    col: int
    what: str = "runtime error"
    kind: str = "div"
    function: str = ""


class SiteTable:
    def __init__(self, first: list, loaders: dict, bits: int):
        self._tables = {0: first}
        self._loaders = loaders          # ordinal -> () -> that unit's list of sites
        self._bits = bits

    def get(self, k: int):
        """The site with id `k`, or None."""
        if k is None or k < 0:
            return None
        ordinal, local = k >> self._bits, k & ((1 << self._bits) - 1)
        table = self._tables.get(ordinal)
        if table is None:
            loader = self._loaders.get(ordinal)
            if loader is None:
                return None
            table = self._tables[ordinal] = loader()
        return table[local] if local < len(table) else None


def site_at(sites, k: int):
    """Site `k` of a SiteTable or of a plain list (a single-file build), or None."""
    if isinstance(sites, SiteTable):
        return sites.get(k)
    return sites[k] if k is not None and 0 <= k < len(sites) else None
