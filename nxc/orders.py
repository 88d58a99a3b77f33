"""The rule an import closure's order follows, shared by the stages that build one.

A module's closure is depth first from the module, each module after its
imports, imports in the order the module lists them. The C backend builds
it from the loaded graph (nxc/backend/c/closure.py) and the module index
from its recorded imports (nxc/incremental/index.py); both must give the
same order, since object keys digest the closure in it, so both merge with
this one function. It is neither stage's work: common code, like the cache.
"""
from __future__ import annotations


def merged_orders(orders: list[list], key=lambda item: item) -> list:
    """A module's depth-first closure order, without the module itself, from
    its imports' own orders in import order: once the walk is done with an
    import, everything that import reaches has been met, so each next import
    adds exactly the modules of its order not met yet, in that order.
    key(item): what identifies an item (default: the item itself)."""
    out, seen = [], set()
    for sub in orders:
        for item in sub:
            k = key(item)
            if k not in seen:
                seen.add(k)
                out.append(item)
    return out
