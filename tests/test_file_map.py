"""issue 29: sys_file_map / sys_file_unmap (nx_src/nx_file.nx) on checked C, unchecked C and
the Python backend: the same bytes, and the same located faults in the same words for a store
into a mapping, an end twice, a read past the end, a use after the end, and the wrong call to
end a mapping (runtime/nx_faults.py: readonly, munmap_twice, oob, unmapped, unmap_kind)."""
from __future__ import annotations

import re

import pytest

from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute

DATA = bytes((i * 37 + 11) & 0xFF for i in range(10000))


def _gate(tmp_path, body: str, offset: int = 4099, n: int = 600) -> tuple[str, int]:
    """A gate that opens d.bin and maps n bytes from offset as `m`; `body` follows (the line
    of its first statement is returned)."""
    data = tmp_path / "d.bin"
    data.write_bytes(DATA)
    path = str(data).encode()
    poke = "\n".join(f"    p[{i}] = {b}" for i, b in enumerate(path))
    gate = tmp_path / "g.nx"
    head = f'''import "nx_file.nx"
func main() -> i64 {{
    let p: *u8 = sys_mmap({len(path) + 8}) as *u8
{poke}
    let h: i64 = sys_file_open(p, {len(path)})
    if h < 0 {{ return 1 }}
    let m: *u8 = sys_file_map(h, {offset}, {n})
    if (m as i64) == 0 {{ return 2 }}
    sys_file_close(h)
'''
    gate.write_text(head + body + "\n}\n")
    return str(gate), head.count("\n") + 1


def _outcomes(gate: str, backends=("c", "py")):
    program = check_file(gate, diags=Diagnostics(warnings=False))
    return {b: execute(program, b, opt="0", use_cache=False, timeout=120)[0] for b in backends}


def _words(message: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "ADDR", message)       # the addresses differ between backends


def test_the_mapped_bytes_are_the_files_on_both_backends(tmp_path):
    # a checksum of the 600 bytes, the u64 view (unaligned start: the mapping keeps the
    # file offset's place in its page, as mmap does), and the bytes beside the page boundary
    want = sum((k + 1) * b for k, b in enumerate(DATA[4099:4699])) & 0x7FFFFFFF
    body = f'''    var s: i64 = 0
    var k: i64 = 0
    while k < 600 {{ s = s + (k + 1) * (m[k] as i64); k = k + 1 }}
    s = s & 0x7FFFFFFF
    if s != {want} {{ return 10 }}
    let q: *u64 = ((m as i64) + 5) as *u64
    if q[0] != {int.from_bytes(DATA[4104:4112], "little")} {{ return 11 }}
    if sys_file_unmap(m, 600) != 0 {{ return 12 }}
    return 0'''
    gate, _ = _gate(tmp_path, body)
    for b, o in _outcomes(gate).items():
        assert o.status == "PASS", (b, o.status, o.value, o.message)


CASES = {
    # what the body does -> (its text, the fault's words without addresses, column)
    "store": ("    m[7] = 1\n    return 0", "write of u8 at ADDR: offset 7 of the 600-byte read-only file mapping "
              "at ADDR (mapped at {gate}:{map}:18)", 5),
    "store_u64": ("    let q: *u64 = ((m as i64) + 5) as *u64\n    q[2] = 1\n    return 0",
                  None, 5),
    "compound": ("    m[3] += 1\n    return 0", "write of u8", 5),
    "read_past_end": ("    let x: u8 = m[600]\n    return x as i64",
                      "out-of-bounds read of u8 at ADDR: offset 600 of the 600-byte mapping at ADDR "
                      "(mapped at {gate}:{map}:18)", 17),
    "unmap_twice": ("    sys_file_unmap(m, 600)\n    sys_file_unmap(m, 600)\n    return 0",
                    "sys_file_unmap of ADDR: the 600-byte mapping there was already unmapped at {gate}:{first}:5", 5),
    "use_after_unmap": ("    sys_file_unmap(m, 600)\n    let x: u8 = m[1]\n    return x as i64",
                        "read of u8 at ADDR after sys_file_unmap: offset 1 of the 600-byte mapping at ADDR "
                        "(mapped at {gate}:{map}:18), unmapped at {gate}:{first}:5", 17),
    "munmap_of_file": ("    sys_munmap(m as *void, 600)\n    return 0",
                       "sys_munmap of ADDR: the 600-byte mapping there was made by sys_file_map, which "
                       "sys_file_unmap ends", 5),
    "file_unmap_of_mmap": ("    let z: *u8 = sys_mmap(64) as *u8\n    sys_file_unmap(z, 64)\n    return 0",
                           "sys_file_unmap of ADDR: the 64-byte mapping there was made by sys_mmap, which "
                           "sys_munmap ends", 5),
    "file_unmap_inside": ("    sys_file_unmap(((m as i64) + 8) as *u8, 592)\n    return 0",
                          "sys_file_unmap of ADDR: not the start of a mapping (it is 8 bytes into the "
                          "600-byte mapping at ADDR)", 5),
    "read_into_mapping": ("    let h2: i64 = sys_file_open(p, 1)\n    sys_file_read(h, 0, m as *void, 4)\n    return 0",
                          "access at ADDR: offset 0 of the 600-byte read-only file mapping at ADDR "
                          "(mapped at {gate}:{map}:18)", 5),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_faults_are_located_and_worded_alike(tmp_path, case):
    body, words, col = CASES[case]
    gate, first = _gate(tmp_path, body)
    outcomes = _outcomes(gate)
    n_lines = body.count("\n")
    line = first + (1 if case in ("unmap_twice", "use_after_unmap", "store_u64", "file_unmap_of_mmap",
                                  "read_into_mapping") else 0)
    for b, o in outcomes.items():
        assert o.status == "RUNTIME-ERROR", (b, o.status, o.value, o.message)
        assert (o.site.line, o.site.column) == (line, col), (b, o.site, o.message, n_lines)
    assert _words(outcomes["c"].message) == _words(outcomes["py"].message), outcomes
    if words:
        want = words.format(gate=gate, map=first - 3, first=first)
        assert want in _words(outcomes["c"].message), outcomes["c"].message
