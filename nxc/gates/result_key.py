"""The keys of cached gate results, built in one place from one list of parts.

A cached `PASS` is only right if everything that can change the outcome is
in its key. `nxc test` finds a pass three ways (docs/runner.md): the
no-change fast path (from the module index: the closure's sources), the
recorded path (from the link the records give) and the full path (from the
backend's artefact). Each key is `identity + PARTS`: what was built (the
closure's source digests, or the artefact's key and the item's kind) and
the run's parts below, which are the same for all three. A part added here
is in every key; tests/test_result_key.py varies each option of `nxc test`
and each part, and fails when two runs that differ in one share a key.

What is not a key part says why in NOT_KEYED (an Options field that cannot
change a gate's outcome). The files a gate opens are not known before it
runs: they are recorded with the pass and checked before it is used
(nxc/gates/inputs.py).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Callable

from nxc import __version__
from nxc.cache import parts_digest


@dataclass(frozen=True)
class Part:
    name: str
    value: Callable[[object, str], object]      # (Options, backend) -> a JSON value
    why: str


def _nxc_code(options, backend) -> str:
    from nxc.index import toolchain_digest
    return toolchain_digest()


def _build(options, backend) -> str:
    return build_identity(backend, options)


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
}


def run_parts(options, backend: str) -> dict[str, object]:
    """{part name: value} of the run on `backend`. Raises what the backend
    raises when it cannot build at all (no compiler)."""
    return {p.name: p.value(options, backend) for p in PARTS}


def _key(prefix: str, identity: tuple[str, ...], options, backend: str) -> str:
    parts = run_parts(options, backend)
    return prefix + parts_digest(*identity, json.dumps(parts, sort_keys=True))[:32]


def artefact_result_key(artefact_key: str, kind: str, options, backend: str) -> str:
    """The full and the recorded paths' key: the built artefact (Backend.artefact_key,
    or link_artefact of a link from records), the item's kind and the run's parts."""
    return _key("", ("artefact", artefact_key, kind), options, backend)


def unit_key(closure: dict[str, str], backend: str, options) -> str:
    """The no-change path's key of one module's pass on `backend`: its closure's
    sources ({real path: nxc.index.source_digest}) and the run's parts."""
    from nxc.index import closure_digest
    return _key("u-", ("sources", closure_digest(closure)), options, backend)


def build_identity(backend: str, options) -> str:
    """What of the build, besides nxc and the sources, can change a gate's behaviour.
    Raises what the backend raises when it cannot build at all (no compiler)."""
    if backend != "c":
        return backend          # the Python backend's runtime is part of the nxc_code part
    import importlib.machinery

    import cffi

    from nxc.backend.c.build import compiler, compiler_identity, flags_for, target_identity
    return "|".join((backend, cffi.__version__, compiler_identity(tuple(compiler())), " ".join(flags_for(options.opt)),
                     target_identity(options.opt), importlib.machinery.EXTENSION_SUFFIXES[0]))
