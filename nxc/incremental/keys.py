"""Every key and file signature of nxc's incremental layer, in one module.

A cached answer is only right if everything that can change it is in its
key. The keys, from the bottom up:

- `code_digest(scope)`: nxc's own code, the runtime and the grammar (the
  compiler's identity as far as nxc itself goes). SCOPES lists, as data,
  which folders each scope covers: "package" (everything: the result and
  verdict keys) and "codegen" (what decides the C a module becomes: object
  keys, so that an edit of the runner does not recompile every object);
- `file_signature` and `settled`: "has this file changed" (a stat's size,
  mtime, ctime, inode and device; a stat taken within RACY_NS of the file's
  last change is not trusted: git's racy-clean rule), for the module index,
  the files a gate opened and the definition finder;
- `source_digest` (a module's text) and `closure_digest` (a closure of them);
- `verdict_key` (a module's bodies checked clean, nxc/check/summary.py);
- `object_key`, `source_key_digest`, `interfaces_digest` (a module's object,
  computed before any C is emitted: nxc/backend/c/objects.py);
- the result keys of `nxc test`, `artefact_result_key` and `unit_key`, each
  `identity + PARTS`.

Result keys. `nxc test` finds a pass three ways (docs/runner.md): the
no-change fast path (from the module index: the closure's sources), the
recorded path (from the link the records give) and the full path (from the
backend's artefact). Each key is what was built (the closure's source
digests, or the artefact's key and the item's kind) and the run's parts
below, which are the same for all three. A part added here is in every key;
tests/test_result_key.py varies each option of `nxc test` and each part, and
fails when two runs that differ in one share a key.

What is not a key part says why in NOT_KEYED (an Options field that cannot
change a gate's outcome). The files a gate opens are not known before it
runs: they are recorded with the pass and checked before it is used
(nxc/incremental/inputs.py).

This module reaches no stage: a backend's build identity comes from the
run's options (`Options.build_identity`, through the Backend interface).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from nxc import __version__
from nxc.cache import ends_with_its_run, file_digest, folders_digest, kept_for_the_run, parts_digest, scaled_bound

# ---------------------------------------------------------------- nxc's own code
# scope -> (folders under the package, whether the runtime and grammar count,
# which file names count). Each scope is digested once per process.
SCOPES = {
    "package": ((), lambda name: not name.endswith((".pyc", ".pyo"))),
    "codegen": (("check", "lower", "backend", "syntax"), lambda name: name.endswith((".py", ".j2", ".h", ".c",
                                                                                        ".lark"))),
}


@lru_cache(maxsize=None)
def code_digest(scope: str = "package") -> str:
    """The digest of nxc's version and of its code in `scope` (SCOPES), with the
    runtime's text and the grammar: a key computed before anything is built
    must change whenever any of them does, released or not."""
    from nxc.paths import grammar_file, runtime_dir
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subfolders, keep = SCOPES[scope]
    folders = [os.path.join(package, d) for d in subfolders] or [package]
    return parts_digest(scope, __version__, folders_digest([*folders, runtime_dir()], package, keep),
                        file_digest(grammar_file()).hex())[:32]


# ---------------------------------------------------------------- files
# A file changed less than this long before we looked may change again
# within the same mtime tick (coarse on some file systems): not trusted.
RACY_NS = 2_000_000_000


def file_signature(st: os.stat_result) -> list[int]:
    """What says a file is the one seen before: equal signatures, taken when
    `settled`, mean the same content (nxc and editors replace or rewrite)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def settled(st: os.stat_result, at_ns: int | None = None) -> bool:
    """Whether the file's last change (mtime or ctime, which no program can
    set back) is more than RACY_NS before `at_ns` (default: now): only then
    may its signature stand for its content."""
    return (time.time_ns() if at_ns is None else at_ns) - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS


# ---------------------------------------------------------------- sources
def source_digest(text: str) -> str:
    """The digest of a module's text as the loader reads it (BOM removed).

    The runner's workers digest what they compiled with the same function,
    so a key computed from the module index equals the key a worker records."""
    # A gate's worker asks for the digest of each text of its closure some
    # three times per gate (verdict keys, object keys, the result cache), on
    # the same str objects the parse cache holds: a lookup by the text (its
    # hash is kept by the str) instead of a sha256 each time.
    found = _DIGESTS.get(text)
    if found is None:
        found = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        if len(_DIGESTS) >= scaled_bound(_DIGESTS_MIN):
            _DIGESTS.clear()
        _DIGESTS[text] = found
    return found


_DIGESTS: dict[str, str] = {}
_DIGESTS_MIN = 1024         # texts kept (bounded: at least this, twice the run's modules)


def closure_digest(closure: dict[str, str]) -> str:
    """One digest of a closure given as {real path: source digest}."""
    # A tree's closures share most of their modules: each (path, digest)
    # is encoded once per process, not once per closure that holds it.
    # (A no-change run asks for one per unit: 800 closures of ~60 modules.)
    paths = sorted(closure)
    encoded = _ENCODED
    try:
        parts = [encoded[(path, closure[path])] for path in paths]
    except KeyError:
        if len(encoded) >= scaled_bound(_DIGESTS_MIN):
            encoded.clear()
        for path in paths:
            item = (path, closure[path])
            if item not in encoded:
                encoded[item] = path.encode("utf-8", "surrogateescape") + b"\0" + item[1].encode() + b"\0"
        parts = [encoded[(path, closure[path])] for path in paths]
    return hashlib.sha256(b"".join(parts)).hexdigest()[:32]


_ENCODED: dict[tuple[str, str], bytes] = {}


# ---------------------------------------------------------------- verdicts
VERDICT_FORMAT = "nxc-summary-1"


def verdict_key(path: str, text_digest: str, closure: set[str], digests: dict[str, str], soft_f32: bool) -> str:
    """The key of "module `path`'s bodies check clean": its text, the interface
    digests of every module of its closure, nxc's code, --soft-f32."""
    # A gate's worker asks for the key of every module of its closure, each
    # over that module's own closure: at 1,600 modules ~9,000 (path, digest)
    # pairs a gate, sorted, formatted and hashed. Looked up by exactly those
    # pairs instead (hashing a frozenset of them is a fraction of the sha256).
    pairs = frozenset((p, digests[p]) for p in closure)
    memo_key = (path, text_digest, soft_f32, pairs)
    key = _VERDICT_KEYS.get(memo_key)
    if key is None:
        key = parts_digest(VERDICT_FORMAT, code_digest("package"), "soft" if soft_f32 else "hard", path, text_digest,
                           *(f"{p}={d}" for p, d in sorted(pairs)))[:32]
        _bounded_put(_VERDICT_KEYS, memo_key, key)
    return key


_VERDICT_KEYS: dict[tuple, str] = {}


def verdict_key_in_run(path: str, text_digest: str, closure: set[str], digests: dict[str, str], soft_f32: bool) -> str:
    """verdict_key; in a worker that ends with its run (cache.ends_with_its_run)
    kept by the module's path, text and --soft-f32: within a run the loader
    resolves a module's imports once, so its closure is the same in every
    gate, and so are the interface digests of that closure (each computed
    from a module's declarations, which its text and closure decide). Even
    looked up by its pairs, the key cost a frozenset of the module's closure
    for each module of each gate: some 11,000 pairs a gate at 1,600 modules.
    The runner's planner (nxc/incremental/plan.py) computes its keys from the
    index's digests, never from this."""
    return kept_for_the_run(_RUN_VERDICT_KEYS, (path, text_digest, soft_f32),
                            lambda: verdict_key(path, text_digest, closure, digests, soft_f32), _DIGESTS_MIN)


_RUN_VERDICT_KEYS: dict[tuple, str] = {}


def _bounded_put(memo: dict, key, value) -> None:
    if len(memo) >= scaled_bound(_DIGESTS_MIN):
        memo.clear()
    memo[key] = value


def interface_digest(interface: dict) -> str:
    """The digest of a module's interface as the summary checker describes it
    (plain JSON data: nxc/check/summary.py, interface_of)."""
    text = json.dumps([VERDICT_FORMAT, interface], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# ---------------------------------------------------------------- objects
def source_key_digest(path: str, text_digest: str) -> str:
    """A module's own text and path (its #line directives and sites name it),
    from source_digest of its text, so that a key can be computed from the
    module index without reading the file."""
    return parts_digest(path, text_digest)


def interfaces_digest(interface_digests) -> str:
    """The closure digest of a module from its imports' interface digests, in
    import-closure order."""
    # Asked for each module of each gate's closure (see verdict_key): looked
    # up by the sequence itself, a tuple of strings whose hashes Python keeps.
    sequence = tuple(interface_digests)
    found = _INTERFACES.get(sequence)
    if found is None:
        found = parts_digest(*sequence)
        _bounded_put(_INTERFACES, sequence, found)
    return found


_INTERFACES: dict[tuple, str] = {}


def object_key(module_source_digest: str, imports_digest: str, config: str) -> str:
    """The one key of a module's object: its source, the interfaces of its
    import closure (`imports_digest`: a parameter, so that a better digest of
    the imports' interfaces can be swapped in), the build configuration."""
    return parts_digest("object", module_source_digest, imports_digest, config)[:32]


def object_key_of(module, way, config: str, import_digests) -> str:
    """`module`'s object key under `config` (object_key): its source, and
    `import_digests`, the digests of what its C takes from each import, in
    import-closure order, computed `way` (the caller gathers them: this
    layer is handed data, it does not call back into the backend). In a
    worker that ends with its run (cache.ends_with_its_run) the key is kept
    by the module's AST object for kept_object_key: the loader keeps one per
    module and run, and the import digests are each the digest recorded
    under that module's own key, the same in every gate of the run. Not
    beyond it: an unchanged module is the same AST object in the next run too
    (the parse cache), whose imports may have changed."""
    key = object_key(source_key_digest(module.source.path, source_digest(module.source.text)),
                     interfaces_digest(import_digests), config)
    if ends_with_its_run():
        _bounded_put(_RUN_OBJECT_KEYS, (module, way, config), key)
    return key


def kept_object_key(module, way, config: str) -> str | None:
    """The key object_key_of gave `module` under `config` with its imports
    digested `way`, earlier in this run; None if there is none (or the
    process outlives its run). A gate of a 1,600-module tree asks for some
    150 keys, each over its module's closure."""
    return _RUN_OBJECT_KEYS.get((module, way, config)) if ends_with_its_run() else None


_RUN_OBJECT_KEYS: dict[tuple, str] = {}     # (module, way, config) -> key: the module held, by identity


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class Part:
    name: str
    value: Callable[[object, str], object]      # (Options, backend) -> a JSON value
    why: str


def _nxc_code(options, backend) -> str:
    return code_digest("package")


def _build(options, backend) -> str:
    return options.build_identity(backend)


def _py_largest_mapping(options, backend):
    """What the Python runtime takes for its largest mapping (runtime/nx_memory.py,
    _default_max_mapping): NXC_PY_MMAP_MAX, else the physical memory."""
    if backend != "py":
        return None
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = None
    return [os.environ.get("NXC_PY_MMAP_MAX", ""), phys]


PARTS: tuple[Part, ...] = (
    Part("nxc_version", lambda o, b: __version__, "another nxc is another compiler"),
    Part("nxc_code", _nxc_code, "every file of the package, the runtime and the grammar: the runner's own "
         "rules (timeout, output bound, memory polling) and the code generators"),
    Part("python", lambda o, b: sys.version, "the Python backend runs on it; cffi builds for its ABI"),
    Part("backend", lambda o, b: b, "C and Python are two implementations"),
    Part("build", _build, "the C compiler's identity, flags, target, cffi, the ABI suffix"),
    Part("py_largest_mapping", _py_largest_mapping, "Python backend: a sys_mmap past it fails"),
    Part("checked", lambda o, b: bool(o.checked), "--unchecked: a bad access may pass or crash"),
    Part("opt", lambda o, b: str(o.opt), "--opt and --march (the build configuration '2/x86-64')"),
    Part("soft_f32", lambda o, b: bool(o.soft_f32), "--soft-f32: other float32 primitives"),
    Part("timeout", lambda o, b: float(o.timeout), "a slow gate passes under a long timeout only"),
    Part("memory_limit", lambda o, b: o.memory_limit, "a gate that passed with more memory may not with less"),
    Part("warnings_as_errors", lambda o, b: bool(o.warnings_as_errors), "-W error: a warning fails the module"),
)

# Options fields that are not key parts, and why none can change an outcome.
NOT_KEYED = {
    "backends": "each item has one backend: the 'backend' part",
    "use_cache": "whether builds are reused: the same build either way (--no-cache reads no result at all)",
    "include": "-I changes what an import resolves to: the closure's paths (no-change key) and the "
               "artefact (full path) hold the result of resolving",
    "timeout_flag": "the option named in a TIMEOUT's explanation; only failures, which are never cached",
    "read_results": "whether cached results are read",
    "record_results": "whether passes are recorded",
    "notes_to_runner": "where a worker's module index notes go (the runner, or the index file)",
}


def run_parts(options, backend: str) -> dict[str, object]:
    """{part name: value} of the run on `backend`. Raises what the backend
    raises when it cannot build at all (no compiler)."""
    return {p.name: p.value(options, backend) for p in PARTS}


def run_parts_text(options, backend: str) -> str:
    """run_parts as the keys hash it: the planner computes it once per run and
    backend, not once per unit (800 JSON encodings were 5% of a no-change run)."""
    return json.dumps(run_parts(options, backend), sort_keys=True)


def _key(prefix: str, identity: tuple[str, ...], options, backend: str, parts_text: str | None = None) -> str:
    if parts_text is None:
        parts_text = run_parts_text(options, backend)
    return prefix + parts_digest(*identity, parts_text)[:32]


def artefact_result_key(artefact_key: str, kind: str, options, backend: str) -> str:
    """The full and the recorded paths' key: the built artefact (Backend.artefact_key,
    or link_artefact of a link from records), the item's kind and the run's parts."""
    return _key("", ("artefact", artefact_key, kind), options, backend)


def unit_key(closure: dict[str, str], backend: str, options, parts_text: str | None = None) -> str:
    """The no-change path's key of one module's pass on `backend`: its closure's
    sources ({real path: source_digest}) and the run's parts (parts_text:
    run_parts_text(options, backend) when the caller has it)."""
    return _key("u-", ("sources", closure_digest(closure)), options, backend, parts_text)


def pack_locator(units: list[tuple[str, tuple[str, ...]]]) -> str:
    """Where the passes of a run's units are packed (results.Pack): its units
    as (real path, backends), in any order. Not a key: each pass in the pack
    is under its unit key, checked as a unit entry is; the locator only lets
    runs of the same units find one file instead of one per unit."""
    return parts_digest("pack", *(f"{real}\0{','.join(backends)}" for real, backends in sorted(units)))[:32]
