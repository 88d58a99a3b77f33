"""`--partition slice:K/N | hash:K/N`: one CI machine's share of the modules.

Modules, not items, are shared out: a module's items (one per backend) have
one front end, and their results must stay side by side. Both ways are
stable across machines as long as each runs from the same folder of the
checkout with the same paths:

- slice:K/N takes every N-th module of the collected order, starting at
  the K-th (as nextest's `count:`): shares differ in size by at most one.
- hash:K/N takes the modules whose path (as shown, `/`-separated) hashes to
  K-1 modulo N: a module stays on its machine when others are added or
  removed, at the price of less even shares.

Every module lands in exactly one of the N partitions.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from nxc.gates.collect import UsageError

_SPEC = re.compile(r"^(slice|hash):(\d+)/(\d+)$")


@dataclass(frozen=True)
class Partition:
    how: str        # "slice" | "hash"
    k: int          # 1-based
    n: int

    def __str__(self) -> str:
        return f"{self.how}:{self.k}/{self.n}"


def parse(text: str) -> Partition:
    m = _SPEC.match(text.strip())
    if not m:
        raise UsageError(f"--partition: expected slice:K/N or hash:K/N (e.g. hash:1/3), not '{text}'")
    how, k, n = m.group(1), int(m.group(2)), int(m.group(3))
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--partition {text}: K must be between 1 and N, and N at least 1")
    return Partition(how, k, n)


def module_hash(display: str) -> int:
    key = display.replace("\\", "/")
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def select(items: list, part: Partition) -> list:
    """The items of the modules in partition `part`, in collection order."""
    modules = list(dict.fromkeys(it.display for it in items))
    if part.how == "slice":
        mine = {d for i, d in enumerate(modules) if i % part.n == part.k - 1}
    else:
        mine = {d for d in modules if module_hash(d) % part.n == part.k - 1}
    return [it for it in items if it.display in mine]
