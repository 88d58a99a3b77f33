"""The result cache of `nxc test`, and the last-failed list of each project.

Passing results: like `go test`, a gate that passed is reported `PASS
(cached)` and not run again while nothing that could change its outcome
changed. What that is, is listed once, as data, in nxc/incremental/keys.py:
what was built (the backend's artefact and the item's kind, or, for the
no-change fast path, the digests of the sources of the module's import
closure) and the run's parts (nxc's code and version, Python, backend,
build identity, checked, --opt/--march, --soft-f32, timeout, memory limit,
-W error). Every entry also holds the record of the files the gate opened
(nxc/incremental/inputs.py), checked before the pass is used. Failures are never
recorded, so a failing gate always runs. An entry is a small sealed JSON
file named by its key (nxc/cache.py: one this user's nxc did not write is
no pass); writing it is atomic and two runs may share the folder.

A unit entry (`u-KEY`, keys.unit_key) also holds the module's kind
and its rendered warnings, shown again as on a full run (and, since they
name files relative to the current folder, only when run from the same
folder; a module without warnings is taken from anywhere). A pass the full
path found cached is recorded under the unit key with the record it was
found with: the two keys hold the same run parts, so that is the same run.

Last failed: the ids of the items that did not pass, per project root (the
nearest folder above the current one holding `.git`, `pyproject.toml` or
`nxc.toml`, else the current folder), for `--lf` and `--ff`.
"""
from __future__ import annotations

import hashlib
import json
import os

from nxc.cache import (cache_dir, configured_dir, mark_used, prune_due, prune_least_recent, read_bytes,
                       read_sealed_json, scaled_bound, seal, unseal, write_atomically, write_sealed_json)
from nxc.incremental import inputs
from nxc.syntax.scan import KINDS      # a unit's kinds: what a pass may be of

# Passing results kept; past it the least recently used go.
MAX_RESULTS = 8192
_writes = 0


def _folder() -> str:
    return os.path.join(cache_dir(), "results")


def _read(key: str) -> dict | None:
    """The sealed payload of the entry `key` (nxc/cache.py); None: none, or not one this user's nxc wrote."""
    data = read_sealed_json(os.path.join(_folder(), key), "results/" + key, touch=True)
    return data if isinstance(data, dict) and inputs.well_formed(data.get("inputs")) else None


def passed_before(key: str) -> dict | None:
    """The input record (nxc/incremental/inputs.py) of a recorded pass under `key`
    (keys.artefact_result_key) whose files are all as they were; None: run it."""
    data = _read(key)
    if data is None or not inputs.still_holds(data["inputs"]):
        return None
    return data["inputs"]


def record_pass(key: str, record: dict, extra: dict | None = None) -> None:
    """Record a pass under `key` with its input record; a pass whose record is
    None (it touched what cannot be keyed) is not recorded."""
    global _writes
    if record is None:
        return
    write_sealed_json(os.path.join(_folder(), key), "results/" + key, {"inputs": record, **(extra or {})})
    _writes += 1
    if prune_due(_writes):
        prune_least_recent(_folder(), scaled_bound(MAX_RESULTS), lambda n: not n.startswith("."))


# ------------------------------------------------------------------ unit results
def record_unit_pass(key: str, kind: str, warnings: list[str], record: dict | None) -> None:
    # Rendered warnings name files relative to the current folder: kept with it.
    record_pass(key, record, {"kind": kind, "warnings": warnings, "cwd": os.getcwd() if warnings else None})


def unit_pass(key: str, pack: "Pack | None" = None) -> tuple[dict | None, str]:
    """({"kind", "warnings", "inputs"} of a recorded unit pass (keys.unit_key)
    whose files are as they were, "") or (None, why there is none to use: no
    entry, or one that is not what this code writes, or one whose files or
    folder differ). `pack`: the run's pack, looked in first (then the key's
    own entry, which may hold a later pass); what is found, or not, is noted in it."""
    packed = pack.held.get(key) if pack is not None else None
    found, why = _usable_pass(packed if packed is not None else _read(key), key)
    if found is None and packed is not None:
        found, why = _usable_pass(_read(key), key)
    if pack is not None:
        pack.asked[key] = found
    return found, why


def _usable_pass(data: dict | None, key: str) -> tuple[dict | None, str]:
    if data is None:
        return None, f"no pass recorded under unit key {key[:12]}"
    if not (data.get("kind") in KINDS
            and isinstance(data.get("warnings"), list) and all(isinstance(w, str) for w in data["warnings"])):
        return None, "the recorded entry is not a unit pass"
    if data["warnings"] and data.get("cwd") != os.getcwd():
        return None, "its warnings were recorded from another folder"     # they would name files from there
    if not inputs.still_holds(data["inputs"]):
        return None, "a file the gate opened changed since its pass"
    return data, ""


# ------------------------------------------------------------------ packs
class Pack:
    """The unit passes of one run's units in one sealed file, `pack-LOCATOR`
    (keys.pack_locator: the run's units), as {unit key: the unit entry's
    content}.

    A no-change run of 800 gates read 800 unit entries, a third of its time;
    and where the page cache does not hold them (this project's CI machines
    drop it within a minute), that many reads from disk. The pack is one read.
    It changes nothing of what a pass means: a pass is found under its unit
    key, and checked (its kind, warnings, folder, and the files the gate
    opened) as one read from its own entry is (unit_pass). Only passes are
    packed, taken from the unit entries the run found or the workers wrote
    (`save`); a unit whose key is not in the pack is looked up in its own
    entry. The pack is this machine's: not given to the remote cache."""

    def __init__(self, locator: str):
        self.name = "results/pack-" + locator
        self.path = os.path.join(_folder(), "pack-" + locator)
        self.held = self._load()            # {unit key: entry content}, as the last run of these units left it
        self.asked: dict[str, dict | None] = {}     # unit key this run asked for -> the pass it took, if any

    def _load(self) -> dict:
        try:
            payload = unseal(self.name, read_bytes(self.path))
        except OSError:
            return {}
        try:
            data = json.loads(payload.decode("utf-8", "surrogateescape")) if payload is not None else None
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("passes"), dict):
            return {}
        mark_used(self.path)        # pruned with the entries, least recently used first
        return {k: v for k, v in data["passes"].items() if isinstance(v, dict) and inputs.well_formed(v.get("inputs"))}

    def save(self) -> bool:
        """Pack the passes now recorded under the unit keys this run asked for:
        the pass it took, or, for a key whose pass it did not take (none, or
        one whose folder or files differ: the unit ran), its entry as it is
        now, which the unit's worker may just have written; written only if
        that differs from what was loaded. Returns whether it wrote."""
        passes = {}
        for key, taken in self.asked.items():
            data = taken if taken is not None else _read(key)
            if data is not None and data.get("kind") in KINDS:
                passes[key] = data
        if passes == self.held:
            return False
        return write_atomically(self.path, seal(self.name, json.dumps({"passes": passes}).encode(
            "utf-8", "surrogateescape")))


# ------------------------------------------------------------------ last failed
ROOT_MARKERS = (".git", "pyproject.toml", "nxc.toml")


def project_root(start: str | None = None) -> str:
    here = os.path.realpath(start or os.getcwd())
    folder = here
    while True:
        if any(os.path.exists(os.path.join(folder, m)) for m in ROOT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return here
        folder = parent


def _state_file(root: str) -> str:
    digest = hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:16]  # any bytes a path holds
    return os.path.join(cache_dir(), "state", f"lastfailed-{digest}.json")


def item_key(real: str, backend: str) -> str:
    """An item as the state remembers it: real path (collect.Item.real) and backend
    (ids depend on the folder nxc test ran from, and on --backend)."""
    return f"{real}[{backend}]"


def load_last_failed(root: str) -> set[str]:
    if not os.path.isdir(configured_dir()):
        return set()            # nothing recorded; and reading must not create the cache (nxc test --list)
    try:
        with open(_state_file(root), encoding="utf-8") as f:
            data = json.load(f)
        return set(data.get("failed", []))
    except (OSError, ValueError, AttributeError):
        return set()


def save_last_failed(root: str, previous: set[str], ran_passed: set[str], ran_failed: set[str]) -> set[str]:
    """As pytest: items that failed before and did not run this time stay failed."""
    failed = (previous - ran_passed) | ran_failed
    if failed == previous:
        return failed           # as it was (or nothing, as no file says): a run that changed nothing writes nothing
    data = {"root": root, "failed": sorted(failed)}
    write_atomically(_state_file(root), json.dumps(data, indent=1).encode("utf-8"))
    return failed
