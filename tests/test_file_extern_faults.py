"""issue 31: the backends agree on a file extern given a buffer (or a path)
shorter than its length: a located memory fault on checked C and on the
Python backend, in the same words (before: checked C trapped, the Python
backend returned -2)."""
from __future__ import annotations

import re

import pytest

from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute


def _gate(tmp_path, call: str) -> str:
    data = tmp_path / "d.bin"
    data.write_bytes(bytes(range(64)))
    path = str(data).encode()
    poke = "\n".join(f"    p[{i}] = {b}" for i, b in enumerate(path))
    gate = tmp_path / "g.nx"
    gate.write_text(f'''import "nx_file.nx"
func main() -> i64 {{
    let p: *u8 = sys_mmap({len(path) + 8}) as *u8
{poke}
    let h: i64 = sys_file_open(p, {len(path)})
    if h < 0 {{ return 1 }}
    let buf: *u8 = sys_mmap(16) as *u8
    let r: i64 = {call}
    if r < 0 {{ return 3 }}
    return 2
}}
''')
    return str(gate), len(path)


def _outcomes(gate: str):
    program = check_file(gate, diags=Diagnostics(warnings=False))
    return {b: execute(program, b, opt="0", use_cache=False, timeout=120)[0] for b in ("c", "py")}


def _words(message: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "ADDR", message)       # the addresses differ between backends


@pytest.mark.parametrize("call", ["sys_file_read(h, 0, buf as *void, 100000)",
                                  "sys_file_read(-1, 0, buf as *void, 17)",       # checked before the handle
                                  "sys_file_read(h, 0, 0 as *void, 4)"])
def test_a_short_buffer_is_a_located_fault_on_both_backends(tmp_path, call):
    gate, n = _gate(tmp_path, call)
    outcomes = _outcomes(gate)
    line = 5 + n + 2
    for backend, o in outcomes.items():
        assert o.status == "RUNTIME-ERROR", (backend, o.status, o.value, o.message)
        assert (o.site.line, o.site.column) == (line, 18), (backend, o.site)
    assert _words(outcomes["c"].message) == _words(outcomes["py"].message), outcomes


def test_a_short_path_is_a_located_fault_on_both_backends(tmp_path):
    gate, n = _gate(tmp_path, "sys_file_read(h, 0, buf as *void, 16)")
    text = open(gate).read().replace(f"sys_file_open(p, {n})", f"sys_file_open(p, {n + 100})")
    open(gate, "w").write(text)
    outcomes = _outcomes(gate)
    for backend, o in outcomes.items():
        assert o.status == "RUNTIME-ERROR", (backend, o.status, o.value, o.message)
        assert (o.site.line, o.site.column) == (4 + n, 18), (backend, o.site)
    assert _words(outcomes["c"].message) == _words(outcomes["py"].message), outcomes


def test_a_buffer_that_fits_still_reads(tmp_path):
    gate, _ = _gate(tmp_path, "sys_file_read(h, 0, buf as *void, 16)")
    for backend, o in _outcomes(gate).items():
        assert (o.status, o.value) == ("FAIL", 2), (backend, o.status, o.message)   # read 16 bytes, returned 2
