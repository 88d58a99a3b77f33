"""Module loading: resolve `import`s, parse every module of the graph once.

Where an import leads (the lookup order of docs/language.md) is
nxc/syntax/search.py's. Modules are keyed by their real path, so diamonds and cycles load each file
once (like C headers with include guards).
"""
from __future__ import annotations

import hashlib
import os
import pickle
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache

from nxc import __version__
from nxc.syntax import ast
from nxc.diagnostics import CompileError, Diagnostics, Pos, SourceFile, source_lines
from nxc.syntax.parse import parse_source
from nxc.deep import deep
from nxc.cache import (cache_dir, ends_with_its_run, fetched, prune_due, prune_least_recent, scaled_bound, unseal,
                       write_sealed)
from nxc.paths import SOFT_F32_MODULE, digest_of_files, grammar_file
from nxc.syntax.search import import_refusal, resolve_import, search_path


@dataclass
class ModuleGraph:
    root: ast.Module
    modules: list[ast.Module]           # dependencies first, root last
    # For each module path: the chain of imports that first reached it,
    # as (importing module path, import position) pairs; empty for the root.
    chains: dict[str, list[Pos]] = field(default_factory=dict)
    # For each module path: the paths its imports resolved to, in import order
    # (the C backend compiles each module against its own import closure).
    imports: dict[str, list[str]] = field(default_factory=dict)
    # Each module's import closure, computed once per graph by its first user
    # (nxc/backend/c/closure.py); not part of the graph's value.
    closures: object = field(default=None, compare=False, repr=False)
    # The -I folders it was loaded with: an undefined name's hint looks for
    # the module that defines it along the same search path.
    include: list[str] = field(default_factory=list, compare=False, repr=False)


def read_source(path: str, diags: Diagnostics, at: Pos | None = None) -> SourceFile | None:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        diags.error(at, f"cannot read '{path}': {exc.strerror or exc}")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        src = SourceFile(path, "")
        before = source_lines(raw[:exc.start].decode("utf-8") + "|")   # the text up to the bad byte
        line, col = len(before), len(before[-1])
        diags.error(Pos(src, line, col), f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})")
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(path, text)


# Parsed modules. A parsed module is never changed afterwards (the checker
# keeps its results in side tables: nxc/check/program.py), so one AST object
# serves every check of this process that imports the file. On disk (the
# cache folder's parse/) each is a pickle, sealed (nxc/cache.py): it is only
# unpickled once its seal shows that this user's nxc wrote it under this
# very key, so a planted or swapped file is parsed again, never run.
# Unpickling is ~8x faster than parsing, so a warm `nxc test` or a fuzzer
# does not run the parser on unchanged imports at all.
# In memory at least _PARSED_MAX, and twice the run's modules (cache.scaled_bound):
# a worker of `nxc test` meets every module of a random tree's closures, and
# past the bound each gate unpickled a sixth of its closure again.
_PARSED: "OrderedDict[str, ast.Module]" = OrderedDict()
_PARSED_MAX = 256
USE_PARSE_CACHE = True     # the front-end benchmark turns it off


def _parse_key(src: SourceFile) -> str:
    # Kept per (path, text): a gate's worker loads the same files gate after
    # gate, and the sha256 of each text was a tenth of loading its graph.
    memo_key = (_front_end_digest(), src.path, src.text)
    key = _KEYS.get(memo_key)
    if key is None:
        h = hashlib.sha256()
        for part in (__version__, _front_end_digest(), src.path, src.text):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        key = h.hexdigest()[:32]
        if len(_KEYS) >= scaled_bound(_PARSED_MAX):
            _KEYS.clear()
        _KEYS[memo_key] = key
    return key


_KEYS: dict[tuple[str, str, str], str] = {}


@lru_cache(maxsize=1)
def _front_end_digest() -> str:
    """The grammar and the code that makes and shapes ASTs: a cached pickle
    is only as good as the classes and parser that made it."""
    from nxc import diagnostics
    from nxc.syntax import depth, lalr, lexer, parse, postlex
    return digest_of_files(grammar_file(), *(m.__file__ for m in (ast, diagnostics, depth, lalr, lexer, parse, postlex)))


def _parse_cached(src: SourceFile, diags: Diagnostics) -> ast.Module:
    if not USE_PARSE_CACHE:
        return parse_source(src, diags)
    key = _parse_key(src)
    module = _PARSED.get(key)
    if module is None:
        disk = os.path.join(cache_dir(), "parse", key + ".pickle")
        blob = _read_disk(disk)
        if blob is None and fetched(disk):      # a remote cache had it (nxc/remote/): now here
            blob = _read_disk(disk)
        module = _unpickle_module(unseal(key, blob))    # None unless this user's nxc wrote it for this key
        if module is not None and (module.source.path != src.path or module.source.text != src.text):
            module = None                       # sealed, yet for another file: never use it
        if module is None:                      # not cached, or a damaged file
            module = parse_source(src, diags)  # raises on syntax errors: nothing cached
            _store_on_disk(disk, key, pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL))
    _PARSED[key] = module
    _PARSED.move_to_end(key)
    while len(_PARSED) > _PARSED_MAX and len(_PARSED) > scaled_bound(_PARSED_MAX):
        _PARSED.popitem(last=False)
    return module


def parse_cached(src: SourceFile, diags: Diagnostics) -> ast.Module:
    """The AST of `src`, from this process's or the disk's parse cache when
    there (the module index, nxc/incremental/index.py, parses a changed file this way).
    Raises CompileError."""
    return _parse_cached(src, diags)


# The disk copy is bounded: every module a user or a tool ever checked would
# otherwise stay there (a fuzzing run alone leaves tens of thousands); see
# paths.prune_least_recent.
DISK_MAX_FILES = 4096
_store_count = 0


def _read_disk(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            blob = f.read()
        os.utime(path)                          # recently used: pruned last
    except OSError:
        return None
    return blob


def _store_on_disk(path: str, key: str, pickled: bytes) -> None:
    global _store_count
    write_sealed(path, key, pickled)
    _store_count += 1
    if prune_due(_store_count):
        prune_parse_cache(os.path.dirname(path))


def prune_parse_cache(folder: str, keep: int | None = None) -> int:
    """Keep at most `keep` (default DISK_MAX_FILES) parsed modules in `folder`."""
    return prune_least_recent(folder, scaled_bound(DISK_MAX_FILES) if keep is None else keep,
                              lambda name: name.endswith(".pickle") and not name.startswith("grammar-"))


def _unpickle_module(blob: bytes | None) -> ast.Module | None:
    """The AST of a cached pickle; None if there is none or it is damaged."""
    if blob is None:
        return None
    try:
        module = pickle.loads(blob)
    except Exception:  # noqa: BLE001 - a damaged cache file costs a parse, nothing else
        return None
    return module if isinstance(module, ast.Module) else None


# ---- what one run's worker has read ----
# A worker of `nxc test -j N` loads the import closure of every gate it is
# given: at 1,600 modules, ~150 modules a gate, each an open and a read, a
# digest of its text and an lstat per import (~700,000 system calls a
# worker, 8-12 us each on a virtual machine). In a process that ends with
# its run (cache.ends_with_its_run: a worker says so), each module is read,
# parsed and its imports resolved once per run. A file edited during the run
# is then tested as the worker first read it; every key a gate records is
# computed from the text it used (module.source.text), so nothing is
# recorded under the wrong key, and the next run sees the edit. An import
# not found is looked for again.
_RUN_MODULES: dict[str, tuple] = {}         # real path -> (module, its imports)
_RUN_IMPORTS: dict[tuple, tuple] = {}       # (name, importer folder, (-I, NXPATH)) -> (found, tried)


def load_program(path: str, include: list[str] | None = None,
                 diags: Diagnostics | None = None) -> ModuleGraph:
    """Parse `path` and everything it imports. Raises CompileError."""
    diags = diags or Diagnostics()
    root_path = os.path.realpath(path)
    if not os.path.isfile(root_path):
        diags.error(None, f"no such file: '{path}'")
        diags.raise_if_errors()
    by_path: dict[str, ast.Module] = {}
    order: list[ast.Module] = []
    chains: dict[str, list[Pos]] = {root_path: []}
    edges: dict[str, list[str]] = {}

    # Depth first, each module after its imports, with an explicit stack: a
    # chain of 1,000 imports was 1,000 nested calls (a RecursionError).
    failed: set[str] = set()
    real_dirs: dict[str, str] = {}      # this load's folders and their real paths (resolve_import)
    kept, resolved = (_RUN_MODULES, _RUN_IMPORTS) if ends_with_its_run() else (None, None)
    searched = (tuple(include or ()), os.environ.get("NXPATH", "")) if resolved is not None else None
    stack: list[list] = [[root_path, [], None, None]]      # [path, chain, import pos, imports left]
    while stack:
        frame = stack[-1]
        real, chain, at, pending = frame
        if pending is None:
            if real in by_path or real in failed:
                stack.pop()
                continue
            read = kept.get(real) if kept is not None else None
            if read is None:
                src = read_source(real, diags, at)
                if src is None:
                    failed.add(real)
                    stack.pop()
                    continue
                before = len(diags.errors)
                try:
                    module = _parse_cached(src, diags)
                except CompileError:
                    _attach_chain(diags, before, chain)
                    failed.add(real)
                    stack.pop()
                    continue
                read = (module, tuple(module.imports))
                if kept is not None:
                    kept[real] = read
            module = read[0]
            by_path[real] = module      # before its imports: a cycle back to it stops here
            frame[3] = pending = iter(read[1])
        folder = os.path.dirname(real)
        for imp in pending:
            hit = resolved.get((imp.path, folder, searched)) if resolved is not None else None
            if hit is None:
                refusal = import_refusal(imp.path)
                if refusal is not None:
                    _add_chain_notes(diags.error(imp.pos, refusal), chain)
                    continue
                real_dirs.setdefault(folder, folder)     # the folder of a real path
                hit = resolve_import(imp.path, folder, include, real_dirs)
                if resolved is not None and hit[0] is not None:
                    resolved[(imp.path, folder, searched)] = hit
            found, tried = hit
            if found is None:
                looked = "\n".join(f"  {d}" for d in tried)
                d = diags.error(imp.pos, f"cannot find module \"{imp.path}\"; looked in:\n{looked}")
                _add_chain_notes(d, chain)
                # the importing module's name: `src` is the last module read,
                # a dependency when this frame resumes after its earlier imports
                importer = by_path[real].source.display
                d.notes.append(Diagnostics.note(None, f"'nxc port --stubs {importer}' lists what it uses from "
                                                      f"\"{imp.path}\", with signatures, and writes a stub"))
                continue
            if found not in edges.setdefault(real, []):
                edges[real].append(found)
            if found not in chains:
                chains[found] = chain + [imp.pos]
            if found not in by_path and found not in failed:
                stack.append([found, chains[found], imp.pos, None])
                break
        else:
            order.append(by_path[real])    # after its imports: dependencies first
            stack.pop()

    diags.raise_if_errors()
    return ModuleGraph(by_path[root_path], order, chains, edges, include=list(include or ()))


@deep       # its first caller may be a gate's worker, before any checker's deep stack
def load_graph(path: str, include: list[str] | None, diags: Diagnostics, soft_f32: bool = False) -> ModuleGraph:
    """The import graph of `path` as the checker sees it (with --soft-f32, the
    soft float32 module added). Raises CompileError."""
    graph = load_program(path, include, diags)
    if soft_f32:
        _load_soft_f32(graph, path, include, diags)
    return graph


def _load_soft_f32(graph: ModuleGraph, path: str, include: list[str] | None,
                   diags: Diagnostics) -> None:
    """--soft-f32: add nx_f32_soft.nx to the graph, as if the root imported it
    (same lookup: the root's folder, -I, NXPATH, then the bundled nx_src/)."""
    found, _ = resolve_import(SOFT_F32_MODULE, os.path.dirname(os.path.realpath(path)), include)
    if found is None:
        diags.error(None, f"--soft-f32: cannot find {SOFT_F32_MODULE}")
        diags.raise_if_errors()
    have = {os.path.realpath(m.source.path) for m in graph.modules}
    if os.path.realpath(found) in have:
        return
    soft = load_program(found, include, diags)
    extra = [m for m in soft.modules if os.path.realpath(m.source.path) not in have]
    graph.modules[:0] = extra               # dependencies before their users
    for m in extra:
        graph.chains.setdefault(m.source.path, [])


def _add_chain_notes(d, chain: list[Pos]) -> None:
    for pos in reversed(chain):
        d.notes.append(Diagnostics.note(pos, "imported from here"))


def _attach_chain(diags: Diagnostics, start: int, chain: list[Pos]) -> None:
    for d in diags.errors[start:]:
        _add_chain_notes(d, chain)
