"""C backend: a gate's link planned from the cache's records alone.

After a body edit of a module that many gates import, each of those gates
has the same root, the same interfaces and the same link plan as before; only
the edited module's object changed. Its worker would parse and check the
gate's closure (declarations), the root's bodies, and emit the root's main,
only to find every object but one already built. This plans the same link
from what earlier builds left in the cache, without reading any module:

- each module's object key, bottom-up: key(M) = object_key(M's path and
  source digest, the interface digests of M's import closure, the build
  configuration), where a module's interface digest is the one recorded
  under its key (`objects.read_record`, written whenever its bodies were
  checked with that key; modules without functions have records too);
- the gate record kept under the root's key (`LinkedC.gate_record`): which
  modules the link takes, in order, whether the root has a gate, and the
  graph's module order. The root's key covers its source and the interfaces
  of its closure, which is everything the link's make-up and its binding
  (site bases, the root's main: set at load time) depend on.

Any record or object missing or damaged gives None, and the caller takes
the full path, which writes what was missing. The inputs (source digests
and resolved imports) come from the module index (nxc/index.py), as the
no-change path's do.
"""
from __future__ import annotations

from dataclasses import dataclass

from nxc.backend.c import objects
from nxc.backend.c.closure import closure_orders
from nxc.backend.c.sites import SiteTable


@dataclass
class RecordedLink:
    key: str                # the link key (objects.link_key): the library's name and the build's identity
    objects: list[str]      # what the linker takes, in order: the modules, the runtime
    modules: list[str]      # the graph's module order (the gate's warnings are in this order)
    runtime_key: str
    site_keys: list[str]    # whose site tables the link's site ids index: each unit's (ordinals from 1)
    binding: objects.Binding    # given to the library when it is loaded (backend.bind_linked)

    def sites(self) -> SiteTable:
        """The link's sites by id, as LinkedC.sites, each table read from beside its object when first asked for."""
        loaders = {k: (lambda key=key: objects.read_sites(key) or []) for k, key in enumerate(self.site_keys, 1)}
        return SiteTable([], loaders, objects.SITE_BITS)


def plan_from_records(root: str, digests: dict[str, str], imports: dict[str, list[str]], checked: bool,
                      opt: str, unbox_f32: bool = True,
                      orders: dict[str, list[str]] | None = None) -> RecordedLink | None:
    """The link of the gate of `root` (a real path), or None when the cache
    cannot say it without the front end. digests: {real path: the index's
    source digest} of every module of the closure; imports: {real path: the
    real paths it imports, in its order}; orders: closure_orders(root,
    imports), if the caller has it. The runtime's object is built if missing
    (it depends on the configuration only)."""
    config = objects.build_config_text(checked, opt, unbox_f32)
    interfaces: dict[str, str] = {}
    keys: dict[str, str] = {}
    orders = orders or closure_orders(root, imports)
    if orders is None or set(orders) != set(digests):
        return None
    order = orders[root]
    for p in order:                             # dependencies first
        closure = orders[p]
        key = objects.object_key(objects.source_key_digest(p, digests[p]),
                                 objects.interfaces_digest(interfaces[d] for d in closure[:-1]), config)
        record = objects.read_record(key)     # verified once per worker and file (nxc/cache.py)
        if record is None:
            return None
        interfaces[p], keys[p] = record["interface"], key
    gate = objects.read_gate_record(keys[root])
    if gate is None or set(gate["modules"]) != set(order) or not set(gate["units"]) <= set(order):
        return None
    linked = [objects.usable_object(keys[p]) for p in gate["units"]]
    if None in linked:
        return None
    runtime, _ = objects.ensure_runtime(checked, opt)
    rt = objects.runtime_key(checked, opt)
    binding = objects.binding_of(gate["units"], gate["gate"])
    key = objects.link_key([keys[p] for p in gate["units"]], rt, binding.text, opt)
    return RecordedLink(key, [*linked, runtime], list(gate["modules"]), rt,
                        [keys[p] for p in gate["units"]], binding)
