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
  under its key (nxc/incremental/records.py, written whenever its bodies were
  checked with that key; modules without functions have records too);
- the gate record kept under the root's key (`LinkedC.gate_record`): which
  modules the link takes, in order, whether the root has a gate, and the
  graph's module order. The root's key covers its source and the interfaces
  of its closure, which is everything the link's make-up and its binding
  (site bases, the root's main: set at load time) depend on.

Any record or object missing or damaged gives no link and the reason, and
the planner (nxc/incremental/plan.py) sends the gate down the full path,
which writes what was missing. The inputs (source digests and resolved
imports) come from the module index (nxc/incremental/index.py), as the
no-change path's do. `RecordedGate` links such a plan and runs it in a
child; the gate runner reaches both through the Backend interface
(CBackend.plan_from_records, link_recorded).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from nxc.backend.c import build as c_build
from nxc.backend.c import faults, gate_child, objects
from nxc.backend.c.emit import FAULT_INFO_WORDS
from nxc.backend.c.sites import SiteTable
from nxc.cache import present, stamped
from nxc.incremental import records
from nxc.incremental.index import ClosureMemo
from nxc.incremental.keys import interfaces_digest, object_key, source_key_digest


@dataclass
class RecordedLink:
    key: str                # the link key (objects.link_key): the library's name and the build's identity
    objects: list[str]      # what the linker takes, in order: the modules' objects (the runtime's is added)
    modules: list[str]      # the graph's module order (the gate's warnings are in this order)
    runtime_key: str
    site_keys: list[str]    # whose site tables the link's site ids index: each unit's (ordinals from 1)
    binding: objects.Binding    # given to the library when it is loaded (backend.bind_linked)

    def sites(self) -> SiteTable:
        """The link's sites by id, as LinkedC.sites, each table read from beside its object when first asked for."""
        return objects.site_table(self.site_keys)


def plan_from_records(root: str, digests: dict[str, str], imports: dict[str, list[str]],
                      orders: dict[str, list[str]], checked: bool, opt: str,
                      unbox_f32: bool = True) -> tuple[RecordedLink | None, str]:
    """(the link of the gate of `root` (a real path), "") or (None, why the
    cache cannot say it without the front end). digests: {real path: the
    index's source digest} of every module of the closure; imports: {real
    path: the real paths it imports, in its order}; orders: each one's
    import closure (nxc/incremental/index.py, closure_orders). Builds nothing."""
    config = objects.build_config_text(checked, opt, unbox_f32)
    interfaces: dict[str, str] = {}
    keys: dict[str, str] = {}
    if set(orders) != set(digests):
        return None, "the index's closure and its import orders differ"
    order = orders[root]
    # A module's key and recorded interface follow from its source digest and
    # its closure's: kept for the run by the number naming exactly those.
    numbers = _KEYS.names(order, imports, digests)
    for p in order:                             # dependencies first
        found = _KEYS.kept(numbers, p, config)
        if found is None:
            closure = orders[p]
            key = object_key(source_key_digest(p, digests[p]),
                             interfaces_digest(interfaces[d] for d in closure[:-1]), config)
            record = records.read_record(key)     # verified once per worker and file (nxc/cache.py)
            if record is None:
                return None, f"no record of {os.path.basename(p)} under its object key {key[:12]}"
            found = record["interface"], key
            _KEYS.keep(numbers, p, found, config)
        interfaces[p], keys[p] = found
    gate = records.read_gate_record(keys[root])
    if gate is None:
        return None, f"no gate record under the root's key {keys[root][:12]}"
    if set(gate["modules"]) != set(order) or not set(gate["units"]) <= set(order):
        return None, "the gate record names other modules than the index's closure"
    folder = objects.objects_dir()          # once: asked for each module of each gate planned
    linked = [objects.usable_object(keys[p], folder) for p in gate["units"]]
    if None in linked:
        missing = gate["units"][linked.index(None)]
        return None, f"the object of {os.path.basename(missing)} is not in the cache: it must be emitted"
    rt = objects.runtime_key(checked, opt)
    binding = objects.binding_of(gate["units"], gate["gate"])
    key = objects.link_key([keys[p] for p in gate["units"]], rt, binding.text, opt)
    return RecordedLink(key, linked, list(gate["modules"]), rt, [keys[p] for p in gate["units"]], binding), ""


_KEYS = ClosureMemo()       # (number, configuration) -> (recorded interface digest, object key)


def link_indexed(link: RecordedLink, checked: bool, opt: str) -> None:
    """Link `link`'s library from its objects and the runtime's (built if
    missing), and note it in the hosts' index for the gates it can host."""
    runtime, _ = objects.ensure_runtime(checked, opt)
    objects.link_library(objects.library_path(link.key)[0], [*link.objects, runtime], opt)
    objects.note_linked(link.key, link.site_keys, link.binding, link.runtime_key, opt)


def link_recorded_together(links: list[RecordedLink], checked: bool, opt: str) -> tuple[str | None, str]:
    """(the link key of one library holding the objects of every link of
    `links`, noted in the hosts' index for each of their gates to find, and
    ""), or (None, why there is none; "" when fewer than two would share it).

    After a body edit of a module that every gate imports, a worker's batch
    of gates all take the recorded path, and each linked a library of its
    own: at 800 modules, 800 links of ~60 objects, 18% of the edit's worker
    time. Each gate still runs under its own link key, from this library as
    from an importer's (nxc/backend/c/hosts.py)."""
    if len(links) < 2:
        return None, ""
    runtime_key = links[0].runtime_key
    if any(link.runtime_key != runtime_key for link in links):
        return None, "they were planned for different build configurations"
    units: dict[str, tuple[str, str]] = {}      # object key -> (object file, module C id), first seen first
    for link in sorted(links, key=lambda lk: lk.key):
        for site_key, obj, (c_id, _) in zip(link.site_keys, link.objects, link.binding.bases):
            units.setdefault(site_key, (obj, c_id))
    if len(units) > objects.MAX_LINKED:
        return None, f"their links hold {len(units)} objects, more than a library links"
    binding = objects.Binding(tuple((c_id, (k + 1) << objects.SITE_BITS)
                                    for k, (_, c_id) in enumerate(units.values())), None)
    return link_shared(list(units), lambda: [obj for obj, _ in units.values()], binding, runtime_key, checked, opt)


def link_shared(site_keys: list[str], objects_of, binding: objects.Binding, runtime_key: str, checked: bool,
                opt: str) -> tuple[str | None, str]:
    """(the link key of a library of the objects of `site_keys`, with no gate of
    its own, linked now unless the cache has it, and indexed for the gates it can
    host; ""), or (None, why not). objects_of() -> their object files in order,
    or the reason one is missing: asked only when the library must be linked.
    The last step of a batch's shared library, from a program or from records."""
    key = objects.link_key(site_keys, runtime_key, binding.text, opt)
    target, _ = objects.library_path(key)
    if present(target) and stamped(target):
        return key, ""
    found = objects_of()
    if isinstance(found, str):
        return None, found
    try:
        link_indexed(RecordedLink(key, found, [], runtime_key, site_keys, binding), checked, opt)
    except (c_build.BuildError, OSError) as exc:
        # each gate links its own, which reports what went wrong for it
        return None, f"linking it failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return key, ""


class RecordedGate:
    """A gate linked from records, ready to run in a child (the gate host's or
    one forked by the runner: nxc/gates/recorded_run.py): linked now unless the
    library is in the cache. The runtime's object is built if missing (it
    depends on the configuration only)."""

    def __init__(self, link: RecordedLink, checked: bool, opt: str):
        t0 = time.perf_counter()
        target, _ = objects.library_path(link.key)
        binding, self.site_keys, self.host = link.binding, link.site_keys, None
        self.relinked = False
        if not (present(target) and stamped(target)):
            found = objects.find_host(link.site_keys, link.binding, link.runtime_key, opt)
            if found is not None:       # an importer's library holds all of it (nxc/backend/c/hosts.py)
                host, binding = found
                target, self.site_keys, self.host = host.path, host.site_keys, host.key
            else:
                link_indexed(link, checked, opt)
                self.relinked = True
        self.build_seconds = time.perf_counter() - t0
        self.link, self.checked = link, checked
        self.job = gate_child.GateJob(target, tuple(binding.bases), binding.root, checked, 0, FAULT_INFO_WORDS)

    def run_child(self, page) -> tuple:
        """In the gate's child: run it (gate_child.run), the shadow stack mirrored into `page`."""
        return gate_child.run(self.job, page)

    def stack_of(self, page) -> tuple:
        """The .nx stack a stopped child mirrored into `page` (checked builds)."""
        return faults.stack_from(faults.read_mirror(page), objects.site_table(self.site_keys)) \
            if self.checked and page else ()

    @staticmethod
    def passed(raw: tuple) -> tuple[bool, tuple | None]:
        """(whether the child's report is main returning 0, the files it opened)."""
        if raw[:2] != ("returned", 0):
            return False, None
        return True, gate_child.parse_log(raw[5])
