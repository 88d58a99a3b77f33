"""The records of nxc's incremental layer: facts kept under a key, read back
instead of being worked out again.

- Object records (`read_record`/`write_records`, under a module's object key,
  nxc/incremental/keys.py object_key): what importers need of a module whose
  bodies a gate's worker does not check (its interface digest, its functions'
  effects, which of them importers copy). Written whenever the module's bodies
  are checked under that key (nxc/backend/c/needs.py, with objects.record_of), valid
  whether or not its object is built.
- Gate records (`read_gate_record`/`write_gate_record`, under the root's
  object key): which modules a gate's link takes, in order, whether the root
  has a gate, the graph's module order: with the object records, a gate's
  link is planned without its front end (nxc/backend/c/recorded.py).
- Verdicts (`verdicts_of`/`store_verdicts`, under keys.verdict_key): a
  module's bodies checked clean, with their rendered warnings and the
  module's interface digest (nxc/check/summary.py). The checker hands over
  what it declared in one call and gets every key and verdict back: this
  layer is given data and never calls back into the checker.

Every entry is a sealed JSON file (nxc/cache.py: one this user's nxc did not
write is no record), written atomically; a record that cannot be read is
None and the caller works the fact out again (and says why). An object
record or a verdict, once read and verified, is kept by the process
(cache.read_keyed_json: its name is the key of what it says). Pruned least
recently used, the bound growing with the tree (cache.scaled_bound).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from nxc.cache import (cache_dir, forget_kept, prune_due, prune_least_recent, read_keyed_json, read_sealed_json,
                       scaled_bound, write_sealed_json)
from nxc.incremental.keys import interface_digest, source_digest, verdict_key_in_run

RECORD_LISTS = ("may_unmap", "memory_free", "silent", "copied")
MAX_RECORDS = 4096          # object and gate records kept (as many as objects: nxc/backend/c/objects.py)
# Verdicts kept (a few hundred bytes each); past it the least recently used go.
MAX_VERDICTS = 8192
_record_writes = 0
_verdict_writes = 0


def _records_dir() -> str:
    return os.path.join(cache_dir(), "c", "records")


def read_record(key: str) -> dict | None:
    """The record kept under object key `key` (None: none, damaged, or not sealed
    by this user's nxc). Kept by this process once read (a record is what
    checking its module under that key gives): shared, never to be changed."""
    return read_keyed_json(os.path.join(_records_dir(), key + ".json"), "records/" + key, _is_record)


def _is_record(data) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("interface"), str)
            and all(isinstance(data.get(k), list) and all(isinstance(n, str) for n in data[k])
                    for k in RECORD_LISTS))


def write_records(records: list[tuple[str, dict]]) -> None:
    """Keep each (object key, record): a gate's link plan hands over all of
    its new records at once, when its planning is done."""
    for key, record in records:
        path = os.path.join(_records_dir(), key + ".json")
        forget_kept(path)
        try:
            write_sealed_json(path, "records/" + key, record, sort_keys=True)
        except OSError:
            return                  # a read-only or full cache: the modules are checked again next time
    if records:
        _pruned_records()


def read_gate_record(root_key: str) -> dict | None:
    """The gate record (LinkedC.gate_record) kept under the root's object key."""
    name = "g-" + root_key
    data = read_sealed_json(os.path.join(_records_dir(), name + ".json"), "records/" + name, touch=True)
    if not (isinstance(data, dict) and "gate" in data and (data["gate"] is None or isinstance(data["gate"], str))
            and all(isinstance(data.get(k), list) and all(isinstance(p, str) for p in data[k])
                    for k in ("units", "modules"))):
        return None
    return data


def write_gate_record(root_key: str, record: dict) -> None:
    name = "g-" + root_key
    path = os.path.join(_records_dir(), name + ".json")
    if read_gate_record(root_key) == record:
        return
    try:
        write_sealed_json(path, "records/" + name, record, sort_keys=True)
    except OSError:
        return                      # the gate takes the full path next time
    _pruned_records()


def _pruned_records() -> None:
    global _record_writes
    _record_writes += 1
    if prune_due(_record_writes):
        # Two records a module: its object's and its gate's. Bounded as one a
        # module, a run over 1,600 modules after an interface edit (every key
        # new) pruned the records its own first gates had just written.
        prune_least_recent(_records_dir(), scaled_bound(MAX_RECORDS, per_module=2),
                           lambda name: name.endswith(".json") and not name.startswith("."))



# ---- the effects records give a program ----
@dataclass(frozen=True)
class Recorded:
    """The effects of the functions whose bodies a program did not check
    (issue 21: a gate's worker checks the bodies of its root module and of
    the modules without a record, as nxc/backend/c/needs.py asks; every other
    module's effects come from the record kept with its object, computed when
    its bodies were checked against the same interfaces). Names only: the
    namespace is one over the import graph."""
    unchecked: frozenset = frozenset()      # functions with a body this program did not check
    may_unmap: frozenset = frozenset()      # of those: which may end a mapping (nxc/lower/may_unmap.py)
    memory_free: frozenset = frozenset()
    silent: frozenset = frozenset()
    copied: frozenset = frozenset()         # which importers copy (emit.is_copied_into_importers)


# ---- verdicts ----
def _verdict_file(key: str) -> str:
    return os.path.join(cache_dir(), "summaries", key + ".json")


def load_verdict(key: str) -> dict | None:
    """{"warnings": [...], "interface": digest} of a clean verdict; None if there
    is none, or it is damaged or not sealed by this user's nxc."""
    data = read_keyed_json(_verdict_file(key), "summaries/" + key, _is_verdict)
    if data is None:
        return None
    if data["warnings"] and data.get("cwd") != os.getcwd():
        return None             # rendered relative to another folder: check it again
    return data


def _is_verdict(data) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("warnings"), list)
            and all(isinstance(w, str) for w in data["warnings"]))


@dataclass
class Verdicts:
    """What verdicts_of found for each module of a closure (by real path)."""
    texts: dict[str, str]           # source digest (keys.source_digest)
    digests: dict[str, str]         # interface digest
    keys: dict[str, str]            # verdict key
    stored: dict[str, dict]         # the clean verdicts found (load_verdict)
    new_digests: list[str]          # the modules whose interface digest was computed here


def verdicts_of(sources: dict[str, str], interfaces: dict[str, "str | dict"], closures: dict[str, set[str]],
                soft_f32: bool, use_verdicts: bool = True) -> Verdicts:
    """The keys and clean verdicts of a checked closure's modules, from what
    the checker declared: sources, {real path: source text} in graph order;
    interfaces, each module's interface digest where the checker kept it, else
    its interface (summary.interface_of, digested here); closures, each one's
    import closure. use_verdicts False: the keys only (nothing read)."""
    digests, new = {}, []
    for p, interface in interfaces.items():
        if isinstance(interface, str):
            digests[p] = interface
        else:
            digests[p] = interface_digest(interface)
            new.append(p)
    texts = {p: source_digest(text) for p, text in sources.items()}
    keys = {p: verdict_key_in_run(p, texts[p], closures[p], digests, soft_f32) for p in texts}
    stored = {}
    if use_verdicts:
        for p, key in keys.items():
            verdict = load_verdict(key)
            if verdict is not None:
                stored[p] = verdict
    return Verdicts(texts, digests, keys, stored, new)


def store_verdicts(verdicts: list[tuple[str, list[str], str]]) -> None:
    """Keep each clean verdict (key, rendered warnings, interface digest)."""
    for key, warnings, interface in verdicts:
        store_verdict(key, warnings, interface)


def store_verdict(key: str, warnings: list[str], interface: str) -> None:
    global _verdict_writes
    forget_kept(_verdict_file(key))     # (one rendered in another folder, say)
    # Rendered warnings name files relative to the current folder: kept with it.
    write_sealed_json(_verdict_file(key), "summaries/" + key,
                      {"warnings": warnings, "interface": interface, "cwd": os.getcwd() if warnings else None})
    _verdict_writes += 1
    if prune_due(_verdict_writes):
        prune_least_recent(os.path.dirname(_verdict_file(key)), scaled_bound(MAX_VERDICTS),
                           lambda name: name.endswith(".json") and not name.startswith("."))
