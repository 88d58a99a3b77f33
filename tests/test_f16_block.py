"""nx_f16_to_f32_block (runtime/nx_externs.py): binary16 to float32 bits, many at once.

C converts 16 (AVX-512) or 8 (F16C) halves per instruction and the Python backend in Python;
both must give nx_f16_to_f32's words (NaN: the canonical one) for all 65,536 halves, for every
length around the vector chunks, and for a source and destination that overlap (as if the source
were read first): tests/nx/f16/f16_block.nx, on each target this CPU runs, checked and unchecked,
and on the Python backend. A range outside nx memory, or a read-only destination, is a located
fault in the same words on checked C and the Python backend. The packed linear kernel's f16 paths
(decode in chunks, the tokens path's block conversion) are checked word for word against the
scalar reference by tests/test_linear_packed.py.
"""
from __future__ import annotations

import os
import re

import pytest

import nxc
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute

from test_vectorize import _targets

HERE = os.path.dirname(os.path.abspath(__file__))
GATE = os.path.join(HERE, "nx", "f16", "f16_block.nx")


@pytest.mark.parametrize("target", _targets())
@pytest.mark.parametrize("checked", [True, False])
def test_every_half_and_overlap_on_c(target, checked):
    opt, _, march = target.partition("/")
    mod = nxc.load(GATE, opt=opt, checked=checked, march=march or None)
    assert mod.main() == 0


def test_every_half_and_overlap_on_python():
    assert nxc.load(GATE, backend="py").main() == 0


FAULTS = {
    # source past its mapping
    "oob_src": "    let s: *u16 = sys_mmap(32) as *u16\n    let d: *u32 = sys_mmap(64) as *u32\n"
               "    return nx_f16_to_f32_block(s, d, 17)\n",
    # destination past its mapping
    "oob_dst": "    let s: *u16 = sys_mmap(64) as *u16\n    let d: *u32 = sys_mmap(64) as *u32\n"
               "    return nx_f16_to_f32_block(s, d, 17)\n",
    # a source that is not nx memory at all
    "null_src": "    let d: *u32 = sys_mmap(64) as *u32\n    return nx_f16_to_f32_block(0 as *u16, d, 4)\n",
}


def _outcomes(tmp_path, body: str):
    gate = tmp_path / "g.nx"
    gate.write_text('import "nx_syscalls.nx"\n\nextern func nx_f16_to_f32_block(src: *u16, dst: *u32, n: i64) -> i64\n\n'
                    f"func main() -> i64 {{\n{body}}}\n")
    program = check_file(str(gate), diags=Diagnostics(warnings=False))
    return {b: execute(program, b, opt="0", use_cache=False, timeout=120)[0] for b in ("c", "py")}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_a_bad_range_is_a_located_fault_in_the_same_words(tmp_path, case):
    outcomes = _outcomes(tmp_path, FAULTS[case])
    call_line = FAULTS[case].count("\n") + 5          # the `return nx_f16_to_f32_block(...)` line
    for backend, o in outcomes.items():
        assert o.status == "RUNTIME-ERROR", (backend, o.status, o.value, o.message)
        assert o.site.line == call_line, (backend, o.site)
    words = {b: re.sub(r"0x[0-9a-f]+", "ADDR", o.message) for b, o in outcomes.items()}
    assert words["c"] == words["py"], words


def test_a_read_only_destination_is_a_fault(tmp_path):
    data = tmp_path / "d.bin"
    data.write_bytes(bytes(256))
    path = str(data).encode()
    poke = "\n".join(f"    p[{i}] = {b}" for i, b in enumerate(path))
    body = (f"    let p: *u8 = sys_mmap({len(path) + 8}) as *u8\n{poke}\n"
            f"    let h: i64 = sys_file_open(p, {len(path)})\n"
            "    let ro: *u8 = sys_file_map(h, 0, 256)\n"
            "    let s: *u16 = sys_mmap(64) as *u16\n"
            "    return nx_f16_to_f32_block(s, ro as *u32, 8)\n")
    gate = tmp_path / "g.nx"
    gate.write_text('import "nx_file.nx"\n\nextern func nx_f16_to_f32_block(src: *u16, dst: *u32, n: i64) -> i64\n\n'
                    f"func main() -> i64 {{\n{body}}}\n")
    program = check_file(str(gate), diags=Diagnostics(warnings=False))
    outcomes = {b: execute(program, b, opt="0", use_cache=False, timeout=120)[0] for b in ("c", "py")}
    for backend, o in outcomes.items():
        assert o.status == "RUNTIME-ERROR" and "read-only" in o.message, (backend, o.status, o.message)
    words = {b: re.sub(r"0x[0-9a-f]+", "ADDR", o.message) for b, o in outcomes.items()}
    assert words["c"] == words["py"], words
