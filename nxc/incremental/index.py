"""The module index: what nxc knows about each module file, found by `stat`.

One file in the cache folder (index/modules.json, sealed like every cache
entry: nxc/cache.py), plain JSON, written atomically. Per module (its real
path): the file's signature (keys.file_signature: size, mtime, ctime, inode, device) when read, the
digest of its text, the names it imports, and
(filled by the summary checker, nxc/check/summary.py) its interface digest
and its last clean verdict's key.

With it `nxc test` computes every module's import closure, and a key over
the closure's sources, without reading or parsing unchanged files: a stat
that matches the recorded one stands for the recorded digest. Imports are
resolved again on every use (`search.resolve_import`, a few stats): a new
file earlier on the search path changes what an import names, and the index
must not hide that.

Trust rules (a wrong index must never give a wrong PASS):
- a stat that differs in any field: the file is read and digested again; if
  the digest is the recorded one the entry stays (a `touch`), otherwise the
  module is parsed again (for its imports) and the entry replaced;
- a stat taken within keys.RACY_NS of the file's last change is not recorded (a
  second write in the same timestamp tick, with the same size, would
  otherwise look unchanged: git's "racy clean" problem), so that file is
  digested again next time;
- an index that is missing, damaged, of another format or not sealed by this
  user's cache key is an empty index; a module that cannot be read, decoded,
  parsed or resolved has no closure here, and the caller takes the slow path.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from nxc.cache import (cache_dir, ends_with_its_run, file_identity, read_bytes, scaled_bound, seal, unseal,
                       write_atomically)
from nxc.deep import gc_paused
from nxc.diagnostics import CompileError, Diagnostics, SourceFile
from nxc.incremental.keys import file_signature, settled, source_digest
from nxc.orders import merged_orders
from nxc.syntax.scan import KINDS, text_kind

if TYPE_CHECKING:                   # the no-change path never parses: not imported for it (8 ms)
    from nxc.syntax import ast

FORMAT = "nxc-module-index-2"
# Entries of files this run did not look at are kept up to this many (a
# project's other trees); entries of files that no longer exist are dropped.
MAX_ENTRIES = 20000


def index_file() -> str:
    return os.path.join(cache_dir(), "index", "modules.json")


class ModuleIndex:
    """The index, loaded once per run; `save` writes it back if it changed."""

    def __init__(self, entries: dict | None = None):
        self.entries: dict[str, dict] = entries or {}
        self.touched: set[str] = set()
        self.dirty = False
        # What this run cost, for `nxc test --json` and the tests:
        # stat_hits (stat matched), digested (file read), parsed (file parsed).
        self.counters = {"stat_hits": 0, "digested": 0, "parsed": 0}
        self._resolved: dict[tuple, str | None] = {}
        self._looked: dict[str, dict | None] = {}
        self._reached: dict[tuple, frozenset | None] = {}
        self._adopted: set[str] = set()     # entries brought up to date by other processes (adopt)
        self.views: dict[tuple, dict] = {}  # the planner's per-run view of each entry (plan._indexed_view)
        self._stats: dict[str, os.stat_result] = {}    # taken by `stale`, used once by `module`
        self._real_dirs: dict[str, str] = {}            # {folder: its real path} (search.resolve_import)
        self._plain: set[str] = set()                   # real paths listed as regular files this run (note_plain)

    # ---- disk ----
    @classmethod
    def load(cls) -> "ModuleIndex":
        path = index_file()
        try:
            blob = read_bytes(path)
        except OSError:
            return cls()
        payload = unseal("index/modules.json", blob)
        if payload is None:
            return cls()                    # damaged, or not written by this user's nxc
        try:
            data = json.loads(payload)
        except ValueError:
            return cls()
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("modules"), dict):
            return cls()
        entries = {p: e for p, e in data["modules"].items() if _well_formed(p, e)}
        return cls(entries)

    def save(self) -> None:
        if not self.dirty:
            return
        kept = {p: e for p, e in self.entries.items() if p in self.touched}
        for p, e in self.entries.items():
            if len(kept) >= MAX_ENTRIES:
                break
            if p not in kept and os.path.exists(p):
                kept[p] = e
        payload = json.dumps({"format": FORMAT, "modules": kept}, separators=(",", ":")).encode()
        write_atomically(index_file(), seal("index/modules.json", payload))
        self.dirty = False

    # ---- one module ----
    def module(self, real: str) -> dict | None:
        """The entry of the module at real path `real`, brought up to date;
        None when the file cannot be read, decoded or parsed."""
        if real in self._looked:            # once per run: the run works on one snapshot
            return self._looked[real]
        self._looked[real] = entry = self._bring_up_to_date(real)
        return entry

    def _bring_up_to_date(self, real: str) -> dict | None:
        st = self._stats.pop(real, None)    # the run's snapshot of the file: one stat, not two
        if st is None:
            try:
                st = os.stat(real)
            except OSError:
                return None
        sig = file_signature(st)
        entry = self.entries.get(real)
        self.touched.add(real)
        if entry is not None and entry["stat"] == sig:
            if real in self._adopted:       # read and parsed by the process that made it: counted there
                self._adopted.discard(real)
            else:
                self.counters["stat_hits"] += 1
            return entry
        text = _read_text(real)
        if text is None:
            return None
        self.counters["digested"] += 1
        digest = source_digest(text)
        trusted = sig if settled(st) else None
        if entry is not None and entry["digest"] == digest:
            entry["stat"] = trusted
            entry.setdefault("kind", list(text_kind(text)))     # the same text: the same kind
            self.dirty = True
            return entry
        module = self._parse(real, text)
        if module is None:
            self.entries.pop(real, None)
            self.dirty = True
            return None
        entry = {"stat": trusted, "digest": digest, "imports": [i.path for i in module.imports],
                 "kind": list(text_kind(text))}
        self.entries[real] = entry
        self.dirty = True
        return entry

    def known_kind(self, real: str, scan) -> tuple[str, int] | None:
        """The kind of the module at `real` (nxc/syntax/scan.py) as its entry
        holds it, if the file's stat is the one recorded with it (under the
        racy-clean rule: an entry taken within RACY_NS of a change holds no
        stat). An entry of an older nxc, without one, takes `scan(real)`'s
        (the file read now: the stat just matched, so it is the entry's
        text). None: no entry stands for the file; collection reads it."""
        entry = self.entries.get(real)
        if entry is None or entry["stat"] is None:
            return None
        try:
            st = self._stats[real] = os.stat(real)      # the run's snapshot: `stale` and `module` take it
        except OSError:
            return None
        if file_signature(st) != entry["stat"]:
            return None
        if not _kind_well_formed(entry.get("kind")):
            entry["kind"] = list(scan(real))
            self.dirty = True
        return entry["kind"][0], entry["kind"][1]

    def stale(self, paths) -> list[str]:
        """Of the real paths `paths`, those whose file must be read (no entry,
        or its stat differs from the one recorded): what `fresh_entries` can
        do in other processes, before this index walks any closure."""
        out = []
        for real in paths:
            entry = self.entries.get(real)
            st = self._stats.get(real)      # taken at collection (known_kind), or now
            if st is None:
                try:
                    st = self._stats[real] = os.stat(real)
                except OSError:
                    continue                # its walk says so
            sig = file_signature(st)
            if entry is None or entry["stat"] != sig:
                out.append(real)
        return out

    def adopt(self, found: dict[str, dict], counters: dict[str, int]) -> None:
        """Take the entries `fresh_entries` made elsewhere ({real path:
        entry}), and what making them cost. Nothing is trusted more for it:
        each is checked against its file's stat when first looked at (`module`),
        as any recorded entry is, and read again if that differs."""
        for real, entry in found.items():
            if entry is not None and _well_formed(real, entry):
                self.entries[real] = entry
                self._adopted.add(real)
                self.dirty = True
        for k, v in counters.items():       # digested, parsed; parsed_ahead, ahead_failed
            self.counters[k] = self.counters.get(k, 0) + v

    def note(self, real: str, digest: str, **fields) -> None:
        """Add fields (interface digest, verdict key) to the entry of `real`,
        if it still holds the text whose digest is `digest`."""
        entry = self.entries.get(real)
        if entry is not None and entry["digest"] == digest and any(entry.get(k) != v for k, v in fields.items()):
            entry.update(fields)
            self.touched.add(real)
            self.dirty = True

    def _parse(self, real: str, text: str) -> ast.Module | None:
        from nxc.syntax.loader import parse_cached
        self.counters["parsed"] += 1
        try:
            return parse_cached(SourceFile(real, text), Diagnostics())
        except CompileError:
            return None                     # the worker reports it, with its position
        except Exception:  # noqa: BLE001 - any doubt: no entry, the slow path decides
            return None

    def note_plain(self, reals) -> None:
        """Real paths that this run's collection found, in their folder's
        listing, to be regular files and no links (collect.module_files)."""
        self._plain.update(reals)

    # ---- closures ----
    def resolve(self, name: str, importer: str, include: list[str] | None) -> str | None:
        from nxc.syntax.search import import_refusal, resolve_import
        key = (name, os.path.dirname(importer))
        if key not in self._resolved:
            found = None
            if import_refusal(name) is None:
                # The importer's folder is real (it is a real path's): a plain
                # name found there costs an lstat, not realpath's walk; none if
                # this run's collection listed it there as a regular file
                # (note_plain), which is what that lstat would find.
                beside = os.path.join(key[1], name)
                if beside in self._plain:
                    found = beside
                else:
                    self._real_dirs.setdefault(key[1], key[1])
                    found, _ = resolve_import(name, key[1], include, self._real_dirs)
            self._resolved[key] = found
        return self._resolved[key]

    def closure(self, root: str, include: list[str] | None = None,
                extra: tuple[str, ...] = ()) -> dict[str, dict] | None:
        """{real path: entry} of `root` and every module it imports, directly
        or not, plus `extra` modules (real paths) and their imports; None when
        any of them is unreadable, unparsable or imports what cannot be found."""
        paths: set[str] = set()
        for start in (root, *extra):
            reach = self._reach(start, include)
            if reach is None:
                return None
            paths |= reach
        return {p: self._looked[p] for p in paths}

    def _reach(self, start: str, include: list[str] | None) -> frozenset | None:
        """Every module reachable from `start` by imports (itself included).
        Remembered per start for the run (a tree's closures share most of
        their modules: 800 modules of closure 57 were 45,000 visits)."""
        key = (start, tuple(include or ()))
        if key in self._reached:
            return self._reached[key]
        seen: set[str] = set()
        stack = [start]
        result: frozenset | None = None
        while stack:
            real = stack.pop()
            if real in seen:
                continue
            done = self._reached.get((real, key[1]), False) if real != start else False
            if done is None:
                break                       # a module below cannot be resolved
            if done is not False:
                seen |= done                # a closure worked out before: take it whole
                continue
            entry = self.module(real)
            if entry is None:
                break
            seen.add(real)
            for name in entry["imports"]:
                found = self.resolve(name, real, include)
                if found is None:
                    stack = None
                    break
                if found not in seen:
                    stack.append(found)
            if stack is None:
                break
        else:
            result = frozenset(seen)
        self._reached[key] = result
        return result


def note_modules(notes: dict) -> None:
    """Note in the module index each module's source digest, interface digest
    and verdict key: notes, {real path: (those three)} (summary.Checked.notes)."""
    # A worker's gates note mostly what its earlier gates noted: while the
    # index file is the very one this process last wrote or read (same
    # identity: device, inode, size, mtime; no other process replaced it),
    # the index this process holds is that file, so it is noted into and
    # saved without loading it again (JSON of every module, each entry
    # checked: a tenth of a cold gate's front end). Another writer changes
    # the identity, and the index is loaded again.
    try:
        index, path = _noted["index"], index_file()
        if index is None or _noted["path"] != path or _noted["identity"] != file_identity(path):
            index = ModuleIndex.load()
        for p, (text, interface, verdict) in notes.items():
            index.note(p, text, interface=interface, verdict=verdict)
        index.save()
        _noted.update(index=index, path=path, identity=file_identity(path))
    except OSError:             # a read-only or full cache: not noting costs speed only
        _noted["index"] = None


_noted: dict = {"index": None, "path": None, "identity": None}      # the index as this process last read or wrote it


def fresh_entries(paths) -> tuple[dict[str, dict | None], dict[str, int]]:
    """({real path: its entry, or None when it cannot be read or parsed},
    counters) for `paths`, as a fresh index makes them (each file read,
    digested and parsed, its AST left in the parse cache): the part of a cold
    run's planning that other processes can do (ModuleIndex.adopt)."""
    index = ModuleIndex()
    with gc_paused():       # parsing keeps every node it makes (nxc/deep.py)
        return {real: index.module(real) for real in paths}, index.counters


def closure_orders(start: str, imports: dict[str, list[str]]) -> dict[str, list[str]] | None:
    """Each module's import closure in the order the C backend's import_closure
    gives (depth first, each module after its imports, imports in their order),
    from the index's imports instead of a graph, for `start` and every module
    it reaches: {path: its closure, dependencies first, itself last}; None when
    a path reached has no entry or the imports form a cycle (the full path
    decides then). Without --soft-f32 (its callers refuse it)."""
    if start not in imports:
        return None
    kept = _RUN_ORDERS if ends_with_its_run() else None
    if kept is not None and start in kept:
        return {p: kept[p] for p in kept[start]}
    orders: dict[str, list[str]] = {}
    stack = [(start, iter(imports[start]))]
    walking = {start}
    while stack:                                # dependencies first, without recursion
        p, pending = stack[-1]
        for dep in pending:
            if dep not in orders:
                if kept is not None and dep in kept:    # its closure's orders are known: not walked
                    for q in kept[dep]:
                        if q not in orders:
                            orders[q] = kept[q]
                    continue
                if dep not in imports or dep in walking:
                    return None                 # unknown, or a cycle
                walking.add(dep)
                stack.append((dep, iter(imports[dep])))
                break
        else:
            stack.pop()
            walking.discard(p)
            orders[p] = merged_orders([orders[dep] for dep in imports[p]]) + [p]
    if kept is not None:
        kept.update(orders)
    return orders


# A worker of `nxc test` is given views of one index, read by the runner
# before the run (nxc/incremental/plan.py): in a process that ends with its
# run (cache.ends_with_its_run), a module's imports are those of that
# index for the whole run, and so is its closure order: kept, not merged again
# for each gate that reaches it (~150 modules a gate at 1,600 modules).
_RUN_ORDERS: dict[str, list[str]] = {}


class ClosureMemo:
    """Answers about a module that follow from its closure alone, kept for the
    run by a small number naming that closure exactly.

    A worker plans each gate from the index's views (plan.verdict_warnings,
    the C backend's plan_from_records), one answer per module of the gate's
    closure, each over that module's own closure: at 1,600 modules ~150,000
    answers a run, 2-3 ms of hashing and cache lookups a gate, for ~1,600
    distinct ones (one a module: within a run its closure does not change).
    `names` gives each module of an order a number that stands for its path,
    its `parts` (whatever the answer follows from: source digest, interface
    digest, ...) and the numbers of its imports, in order;
    two modules get the same number exactly when all of that is equal, all
    the way down (a dict of those tuples, not a hash of them). An answer kept
    under a number is then the answer for any closure with that number.
    Kept only in a process that ends with its run (cache.ends_with_its_run):
    `names` gives None elsewhere, and the caller computes everything."""

    def __init__(self, least: int = 8192):
        self._numbers: dict[tuple, int] = {}
        self._answers: dict = {}        # (number, anything else it follows from) -> answer
        self._least = least

    def names(self, order: list[str], imports: dict[str, list[str]], parts: dict) -> dict[str, int] | None:
        """{module: its number} for `order` (dependencies first: closure_orders)."""
        if not ends_with_its_run():
            return None
        if len(self._numbers) >= scaled_bound(self._least):
            self._numbers.clear()       # the answers are kept by these numbers: both start over
            self._answers.clear()
        numbers = self._numbers
        out: dict[str, int] = {}
        for p in order:
            out[p] = numbers.setdefault((p, parts[p], tuple(out[d] for d in imports[p])), len(numbers))
        return out

    def kept(self, numbers: dict[str, int] | None, path: str, *more):
        """The answer kept for `path` under its number from `names` (and `more`:
        what else it follows from); None if none, or outside a run."""
        return None if numbers is None else self._answers.get((numbers[path], *more))

    def keep(self, numbers: dict[str, int] | None, path: str, answer, *more) -> None:
        """Keep `answer` for `path` (as `kept` finds it); nothing outside a run."""
        if numbers is not None:
            self._answers[(numbers[path], *more)] = answer


def bottom_cycle(waiting: list[str], imported: dict[str, set[str]], known) -> list[str]:
    """Of modules that all wait for an import's interface digest (`waiting`,
    real paths; imported: each one's import closure without itself; known:
    the modules whose digests are known), those of a cycle of imports that
    waits for nothing outside itself, in `waiting`'s order. One exists: the
    waiting modules' imports form a graph whose bottom component is that (a
    key is computed bottom-up, and a cycle's members each need the others')."""
    for p in waiting:
        unknown = {d for d in imported[p] if d not in known}
        if all(p in imported.get(d, ()) for d in unknown):     # each one it waits for waits for it
            return [w for w in waiting if w in unknown or w == p]
    raise RuntimeError("import closures out of order")      # cannot happen: the closures are transitive


def _read_text(path: str) -> str | None:
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text[1:] if text.startswith("\ufeff") else text


def _well_formed(path, entry) -> bool:
    """An entry of the expected shape (anything else is dropped, not trusted)."""
    if not (isinstance(path, str) and isinstance(entry, dict)):
        return False
    stat_ = entry.get("stat")
    return ((stat_ is None or (isinstance(stat_, list) and len(stat_) == 5 and all(type(x) is int for x in stat_)))
            and isinstance(entry.get("digest"), str)
            and isinstance(entry.get("imports"), list) and all(isinstance(i, str) for i in entry["imports"])
            and ("kind" not in entry or _kind_well_formed(entry["kind"])))


def _kind_well_formed(kind) -> bool:
    return (isinstance(kind, list) and len(kind) == 2 and kind[0] in KINDS
            and type(kind[1]) is int and kind[1] >= 0)
