"""Fault wording defined once (runtime/nx_faults.py): the C runtime's fault
kinds are the table's numbers, no backend spells a fault's words itself,
and the same fault reads the same on both backends."""
from __future__ import annotations

import io
import os
import re
import tokenize

import pytest

from nxc.backend.c import faults
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute
from nxc.paths import runtime_dir

TABLE = faults.fault_table()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_c_runtime_s_kinds_are_the_table_s():
    with open(os.path.join(runtime_dir(), "nx_runtime.h"), encoding="utf-8") as f:
        enum = {k.lower(): int(v) for k, v in re.findall(r"NXRT_F_(\w+) = (\d+)", f.read())}
    assert enum == TABLE.KINDS
    assert (faults.F_NULL, faults.F_OOB, faults.F_STACK) == (TABLE.KINDS["null"], TABLE.KINDS["oob"],
                                                             TABLE.KINDS["stack"])


def _code_strings(path: str) -> list[str]:
    """The string literals of a Python file, docstrings left out."""
    with open(path, encoding="utf-8") as f:
        tokens = list(tokenize.generate_tokens(io.StringIO(f.read()).readline))
    out = []
    for k, tok in enumerate(tokens):
        if tok.type != tokenize.STRING and getattr(tokenize, "FSTRING_START", None) != tok.type:
            continue
        before = next((t for t in reversed(tokens[:k]) if t.type not in (tokenize.NL, tokenize.NEWLINE,
                                                                         tokenize.INDENT, tokenize.DEDENT,
                                                                         tokenize.COMMENT)), None)
        if tok.string.startswith(('"""', "'''")) and (before is None or before.string == ":"):
            continue            # a docstring: prose about faults, not their words
        out.append(tok.string)
    return out


def _backend_files():
    yield os.path.join(runtime_dir(), "nx_memory.py")
    for folder, _, files in os.walk(os.path.join(ROOT, "nxc", "backend")):
        yield from (os.path.join(folder, n) for n in sorted(files) if n.endswith(".py"))


# Fragments of the table's words: a literal holding one spells a fault itself.
FRAGMENTS = ("through a null pointer", "out-of-bounds", "outside any mapping", "sys_munmap of",
             "nested more than", "is not a multiple of", "before the start of", "after sys_munmap",
             "mapped at", "unmapped at", "numpy array passed")


def test_no_backend_spells_a_fault_itself():
    found = [(os.path.relpath(p, ROOT), frag) for p in _backend_files() for s in _code_strings(p)
             for frag in FRAGMENTS if frag in s]
    assert not found, found


def test_the_scan_sees_a_spelled_fault(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Says out-of-bounds in prose."""\nx = f"out-of-bounds {1}"\n')
    assert _code_strings(str(path)) == ['f"out-of-bounds {1}"']


BODIES = {
    "oob": "let p: *i64 = sys_mmap(32) as *i64\n    return p[4]",
    "before": "let p: *i64 = sys_mmap(32) as *i64\n    let q: *i64 = ((p as i64) - 8) as *i64\n    return q[0]",
    "null": "let p: *i64 = 0 as *i64\n    return p[1]",
    "unmapped": "let p: *i64 = sys_mmap(32) as *i64\n    sys_munmap(p as *void, 32)\n    return p[0]",
    "misaligned": "let p: *i64 = sys_mmap(32) as *i64\n    let q: *i64 = ((p as i64) + 1) as *i64\n    return q[0]",
    "munmap_twice": "let p: *void = sys_mmap(32)\n    sys_munmap(p, 32)\n    return sys_munmap(p, 32)",
    "munmap_inside": "let p: *void = sys_mmap(32)\n    return sys_munmap(((p as i64) + 8) as *void, 8)",
}


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_one_fault_reads_the_same_on_both_backends(write_nx, kind):
    path = write_nx(f'import "nx_syscalls.nx"\n\nfunc main() -> i64 {{\n    {BODIES[kind]}\n}}\n', f"{kind}.nx")
    c, py = execute(check_file(path, diags=Diagnostics()), "both")
    assert c.status == py.status == "RUNTIME-ERROR", (c, py)

    def words(o):           # the addresses differ (the C heap, the Python arena); nothing else may
        return re.sub(r"0x[0-9a-f]+", "0x?", o.message)
    assert words(c) == words(py), (c.message, py.message)
    head = TABLE.WORDS[kind].split("{")[0] or TABLE.WORDS[kind].split("}")[1].split("{")[0]
    assert head in c.message, (head, c.message)
