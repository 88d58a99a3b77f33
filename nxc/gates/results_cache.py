"""The result cache of `nxc test`, and the last-failed list of each project.

Passing results: like `go test`, a gate that passed with the same built
artefact, on the same backend, with the same timeout and run-time flags, is
reported `PASS (cached)` and not run again. This is safe because a gate is
deterministic by construction: nx code has no I/O, clock or randomness but
what the runtime gives it (memory from `sys_mmap`), so the same artefact run
the same way returns the same value. The key is the backend's
`artefact_key` (for C the build cache's key: the generated C, which is
derived from every module in the import graph, the runtime header, the
compiler's identity, the flags, nxc's and cffi's versions; for Python the
digest of the generated text and of the runtime's files) together with the
backend, the mode, the timeout and nxc's version. Failures are never
recorded, so a failing gate always runs. An entry is an empty file named
by the key: writing it is atomic and two runs may share the folder.

Unit results (the no-change fast path, docs/runner.md): a module's pass on
one backend is also recorded under a key that needs no front end at all:
the digests of the sources of its import closure (read through the module
index, nxc/index.py: a stat per file when nothing changed), nxc's own code
(every file of the package, the runtime and the grammar: a changed nxc is a
changed compiler), the Python version, the build configuration (compiler
identity, flags, checked or not, cffi) and the run's mode (with -W error and
the memory limit). Behaviour is a function of those,
so a unit whose key has a recorded pass is reported `PASS (cached)` by the
runner before any worker starts. Such an entry (`u-KEY`) holds the module's
kind and its rendered warnings, shown again as on a full run (and, since
they name files relative to the current folder, only when run from the
same folder; a module without warnings is taken from anywhere).

Last failed: the ids of the items that did not pass, per project root (the
nearest folder above the current one holding `.git`, `pyproject.toml` or
`nxc.toml`, else the current folder), for `--lf` and `--ff`.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

from nxc import __version__
from nxc.cache import cache_dir, configured_dir, prune_due, prune_least_recent, scaled_bound, write_atomically
from nxc.index import closure_digest, toolchain_digest

# Passing results kept; past it the least recently used go. An entry is 0 bytes.
MAX_RESULTS = 8192
_writes = 0


def _folder() -> str:
    return os.path.join(cache_dir(), "results")


def result_key(artefact_key: str, backend: str, kind: str, mode: tuple) -> str:
    """The key of one passing result: artefact, backend, item kind and the run's mode
    (timeout and run-time flags; see `mode_of`)."""
    h = hashlib.sha256()
    for part in (__version__, artefact_key, backend, kind, json.dumps(list(mode))):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def mode_of(options) -> tuple:
    """What of the run's options can change a verdict beyond the artefact itself.

    The timeout (a slow gate passes under a long one only); soft-f32 and the
    optimisation level (already in the C artefact's key, kept here for the
    Python backend); checked or unchecked C (also in the C text; kept for clarity)."""
    return (float(options.timeout), bool(options.soft_f32), str(options.opt),
            not options.checked)


def passed_before(key: str) -> bool:
    path = os.path.join(_folder(), key)
    if not os.path.exists(path):
        return False
    try:
        os.utime(path)          # recently used: pruned last
    except OSError:
        pass
    return True


def record_pass(key: str, payload: bytes = b"") -> None:
    global _writes
    write_atomically(os.path.join(_folder(), key), payload)
    _writes += 1
    if prune_due(_writes):
        prune_least_recent(_folder(), scaled_bound(MAX_RESULTS), lambda n: not n.startswith("."))


# ------------------------------------------------------------------ unit results
def build_identity(backend: str, options) -> str:
    """What of the build, besides nxc and the sources, can change a gate's behaviour.
    Raises what the backend raises when it cannot build at all (no compiler)."""
    if backend != "c":
        return backend          # the Python backend's runtime is part of toolchain_digest
    import importlib.machinery

    import cffi

    from nxc.backend.c.build import compiler, compiler_identity, flags_for, target_identity
    return "|".join((backend, cffi.__version__, compiler_identity(tuple(compiler())), " ".join(flags_for(options.opt)),
                     target_identity(options.opt),
                     importlib.machinery.EXTENSION_SUFFIXES[0], "checked" if options.checked else "unchecked"))


def unit_key(closure: dict[str, str], backend: str, options) -> str:
    """The key of one module's pass on `backend`, from its closure's sources
    ({real path: nxc.index.source_digest}) and the run's configuration."""
    h = hashlib.sha256()
    # The memory limit too (a gate that passed with more memory may not with less), and
    # the Python that runs nxc (the Python backend's code runs on it; cffi builds for its ABI).
    for part in (__version__, sys.version, toolchain_digest(), build_identity(backend, options),
                 json.dumps([*mode_of(options), bool(options.warnings_as_errors), options.memory_limit]),
                 closure_digest(closure)):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return "u-" + h.hexdigest()[:32]


def record_unit_pass(key: str, kind: str, warnings: list[str]) -> None:
    # Rendered warnings name files relative to the current folder: kept with it.
    data = {"kind": kind, "warnings": warnings, "cwd": os.getcwd() if warnings else None}
    record_pass(key, json.dumps(data).encode("utf-8", "surrogateescape"))


def unit_passed_before(key: str) -> dict | None:
    """{"kind", "warnings"} of a recorded unit pass; None when there is none
    (or the entry is not what this code writes: then it is not a pass)."""
    path = os.path.join(_folder(), key)
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read().decode("utf-8", "surrogateescape"))
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and data.get("kind") in ("gate", "library", "stub")
            and isinstance(data.get("warnings"), list) and all(isinstance(w, str) for w in data["warnings"])):
        return None
    if data["warnings"] and data.get("cwd") != os.getcwd():
        return None             # its warnings would name files as seen from another folder: run it
    try:
        os.utime(path)          # recently used: pruned last
    except OSError:
        pass
    return data


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
    digest = hashlib.sha256(root.encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), "state", f"lastfailed-{digest}.json")


def item_key(path: str, backend: str) -> str:
    """An item as the state remembers it: absolute path and backend (ids depend on the
    folder nxc test ran from, and on --backend)."""
    return f"{os.path.realpath(path)}[{backend}]"


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
    data = {"root": root, "failed": sorted(failed)}
    write_atomically(_state_file(root), json.dumps(data, indent=1).encode("utf-8"))
    return failed
