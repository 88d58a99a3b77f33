"""C backend: a gate run from a library linked for another gate.

A gate's library links the objects of its import closure. When module Y is
imported by X, every object Y's gate needs is also in X's library, under the
same object keys (a key covers the module's source, the interfaces of its
closure and the build configuration: equal keys, the same object). So once
X's library is linked, Y's gate can run from it: the loader binds X's modules
(their site bases) and makes Y's `main` the gate (Binding), and nothing is
linked for Y. On a tree most gates are imported by another, and the runner
takes the largest closures first, so most gates find such a library: on the
800-module bench tree, 215 links instead of 800, and 2.6x fewer objects
passed to the linker (docs/runner.md, "One link for many gates").

What a gate's result is keyed on does not change: it is the gate's own link
key (its objects' keys, its binding), whichever library ran it. That rests on
an assumption docs/runner.md states: a gate's outcome does not depend on
where the linker placed its code and data among other modules' (as it does
not depend on where the loader placed the library).

The index, in `$NXC_CACHE_DIR/c/hosts/`:
- `<link key>.members`: sealed JSON of a linked library, written after it
  is published: its objects' keys in link order (the ordinals of its site
  bases), their modules' C ids, the runtime's key and the link's flags;
- `<object key>.in`: the link keys of the libraries holding that object, a
  line each, appended (one short write: whole lines under concurrent
  appends). Only a hint: a line is used only when the sealed members record
  of its link says the library holds every object the gate needs, with the
  same runtime and flags, and the library is in the cache and stamped.
"""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass

from nxc.cache import (cache_dir, mark_used, present, prune_due, prune_least_recent, read_sealed_json,
                       scaled_bound, stamped, write_atomically, write_sealed_json)

# Candidates read per lookup, the most recently linked first: a miss costs
# one small read per candidate, and the last libraries linked are the ones
# still in the cache.
MAX_CANDIDATES = 8
# Entries kept (a members record per library, a hint file per object); the
# libraries themselves are bounded by build.MAX_BUILDS.
MAX_ENTRIES = 8192
# A hint file past this size keeps its newest quarter (lines appended by
# another process meanwhile may be lost: a hint, not a record).
MAX_HINT_BYTES = 1 << 16
_KEY = re.compile(r"[0-9a-f]{24}\Z")
_writes = 0


@dataclass(frozen=True)
class Host:
    """A library that holds every object a gate needs."""
    key: str                # its link key
    path: str               # its file in the build cache
    name: str
    ids: tuple              # its modules' C ids, in link order (ordinals from 1: the site bases)
    site_keys: tuple        # the object key of each ordinal: whose site table words a fault


def hosts_dir() -> str:
    return os.path.join(cache_dir(), "c", "hosts")


def note_library(link_key: str, object_keys: list[str], bases: tuple, runtime_key: str, flags: str) -> None:
    """Index the library `link_key` just published: it links `object_keys`
    (in link order; `bases` its Binding's: (module C id, site base) each)."""
    global _writes
    folder = hosts_dir()
    with contextlib.suppress(OSError):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    name = link_key + ".members"
    if not write_sealed_json(os.path.join(folder, name), name,
                             {"keys": list(object_keys), "ids": [m for m, _ in bases], "runtime": runtime_key,
                              "flags": flags}):
        return                  # read-only or full cache: no index, no harm
    line = (link_key + "\n").encode("ascii")
    for key in object_keys:
        path = os.path.join(folder, key + ".in")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            return
        try:
            os.write(fd, line)
            if os.fstat(fd).st_size > MAX_HINT_BYTES:       # the newest lines are the ones still of use
                with open(path, "rb") as f:
                    f.seek(-MAX_HINT_BYTES // 4, os.SEEK_END)
                    write_atomically(path, f.read().split(b"\n", 1)[-1])
        except OSError:
            pass
        finally:
            os.close(fd)
    _writes += 1
    if prune_due(_writes):
        prune_least_recent(folder, scaled_bound(MAX_ENTRIES), lambda n: n.endswith((".in", ".members")))


def find_host(object_keys: list[str], bases: tuple, root: str | None, runtime_key: str, flags: str,
              library_path) -> Host | None:
    """A library in the cache that links every one of a gate's `object_keys`
    (in link order, `bases` its Binding's, `root` the C id of the module
    whose main is the gate) with runtime `runtime_key` and link flags
    `flags`; None if there is none, or no gate. library_path(link key) ->
    (path, name)."""
    ids = [m for m, _ in bases]
    if root is None or root not in ids or len(ids) != len(object_keys):
        return None
    root_key = object_keys[ids.index(root)]
    folder = hosts_dir()
    try:
        with open(os.path.join(folder, root_key + ".in"), "rb") as f:
            lines = f.read().decode("ascii", "replace").split("\n")
    except OSError:
        return None
    needed = set(object_keys)
    tried: set[str] = set()
    for link_key in reversed(lines):
        if not _KEY.match(link_key) or link_key in tried:
            continue            # a torn or foreign line, or one read already
        tried.add(link_key)
        if len(tried) > MAX_CANDIDATES:
            break
        name = link_key + ".members"
        record = read_sealed_json(os.path.join(folder, name), name)
        try:
            keys, ids = list(record["keys"]), list(record["ids"])
            same_build = record["runtime"] == runtime_key and record["flags"] == flags
        except (TypeError, KeyError):
            continue            # missing or not ours
        if not same_build or len(keys) != len(ids) or not needed <= set(keys):
            continue
        path, lib_name = library_path(link_key)
        if not (present(path) and stamped(path)):
            continue            # pruned since
        mark_used(path)
        return Host(link_key, path, lib_name, tuple(ids), tuple(keys))
    return None
