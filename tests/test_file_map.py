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


def test_unchecked_c_maps_the_same_bytes(tmp_path):
    body = f'''    var s: i64 = 0
    var k: i64 = 0
    while k < 600 {{ s = s + (k + 1) * (m[k] as i64); k = k + 1 }}
    if (s & 0x7FFFFFFF) != {sum((k + 1) * b for k, b in enumerate(DATA[4099:4699])) & 0x7FFFFFFF} {{ return 10 }}
    if (sys_file_map(h, 0, 4) as i64) != 0 {{ return 11 }}        // the handle is closed
    sys_file_unmap(m, 600)
    return 0'''
    gate, _ = _gate(tmp_path, body)
    program = check_file(gate, diags=Diagnostics(warnings=False))
    o = execute(program, "c", opt="2", use_cache=False, timeout=120, checked=False)[0]
    assert o.status == "PASS", (o.status, o.value, o.message)


def test_refusals_are_zero(tmp_path):
    """n <= 0, a negative offset, a range past the end of the file: 0, on every backend."""
    body = f'''    if (sys_file_map(h, 0, 0) as i64) != 0 {{ return 10 }}
    if (sys_file_map(h, -1, 4) as i64) != 0 {{ return 11 }}
    if (sys_file_map(h, {len(DATA) - 3}, 4) as i64) != 0 {{ return 12 }}
    if (sys_file_map(h, {len(DATA) + 1}, 1) as i64) != 0 {{ return 13 }}
    let last: *u8 = sys_file_map(h, {len(DATA) - 1}, 1)
    if (last as i64) == 0 {{ return 14 }}
    if last[0] != {DATA[-1]} {{ return 15 }}
    sys_file_unmap(last, 1)
    sys_file_unmap(m, 600)
    return 0'''
    # the refusals need the handle open: map before closing it
    gate, _ = _gate(tmp_path, body)
    text = open(gate).read().replace("    sys_file_close(h)\n", "", 1)
    open(gate, "w").write(text)
    program = check_file(gate, diags=Diagnostics(warnings=False))
    for b, checked in (("c", True), ("c", False), ("py", True)):
        o = execute(program, b, opt="0", use_cache=False, timeout=120, checked=checked)[0]
        assert o.status == "PASS", (b, checked, o.status, o.value, o.message)


POOL = '''import "nx_file.nx"
struct Ctx {{
    h: i64
    out: *i64
}}

// Item i maps 512 bytes of the file at i * 97 + 1 (a mapping made and ended on a pool worker,
// the region table under its lock), sums them, and stores the sum.
func item(c: *Ctx, i: i64) {{
    let m: *u8 = sys_file_map(c.h, i * 97 + 1, 512)
    if (m as i64) == 0 {{ c.out[i] = -1; return }}
    var s: i64 = 0
    var k: i64 = 0
    while k < 512 {{ s = s + (m[k] as i64) * (k + 1); k = k + 1 }}
    sys_file_unmap(m, 512)
    c.out[i] = s
}}

func task(ctx: *void, begin: i64, end: i64) {{
    var i: i64 = begin
    while i < end {{ item(ctx as *Ctx, i); i = i + 1 }}
}}

func main() -> i64 {{
    let p: *u8 = sys_mmap({n} + 8) as *u8
{poke}
    let c: *Ctx = sys_mmap(sizeof(Ctx)) as *Ctx
    c.h = sys_file_open(p, {n})
    if c.h < 0 {{ return 1 }}
    c.out = sys_mmap(64 * 8) as *i64
    sys_parallel_for(task, c as *void, 64)
    var i: i64 = 0
    var sums: i64 = 0
    while i < 64 {{
        if c.out[i] < 0 {{ return 2 }}
        sums = sums ^ (c.out[i] * (i + 1))
        i = i + 1
    }}
    if sums != {want} {{ return 3 }}
    return 0
}}
'''


def test_mappings_made_and_ended_on_the_thread_pool(tmp_path):
    data = tmp_path / "d.bin"
    data.write_bytes(DATA)
    path = str(data).encode()
    want = 0
    for i in range(64):
        off = i * 97 + 1
        want ^= sum(DATA[off + k] * (k + 1) for k in range(512)) * (i + 1)
    gate = tmp_path / "pool.nx"
    gate.write_text(POOL.format(n=len(path), poke="\n".join(f"    p[{i}] = {b}" for i, b in enumerate(path)),
                                want=want))
    program = check_file(str(gate), diags=Diagnostics(warnings=False))
    for b, checked, threads in (("c", True, 2), ("c", True, 3), ("c", False, 2), ("py", True, 2)):
        o = execute(program, b, opt="0", use_cache=False, timeout=300, checked=checked, threads=threads)[0]
        assert o.status == "PASS", (b, checked, threads, o.status, o.value, o.message)


def test_a_store_into_a_mapping_on_the_thread_pool_is_located(tmp_path):
    """Item 5 stores into its mapping, on a pool worker or the caller: the located fault with the
    same words as the Python backend's, the region table's lock released on the way out."""
    data = tmp_path / "d.bin"
    data.write_bytes(DATA)
    path = str(data).encode()
    text = POOL.format(n=len(path), poke="\n".join(f"    p[{i}] = {b}" for i, b in enumerate(path)), want=0)
    text = text.replace("    sys_file_unmap(m, 512)\n", "    if i == 5 { m[3] = 0 }\n    sys_file_unmap(m, 512)\n")
    gate = tmp_path / "pool_store.nx"
    gate.write_text(text)
    line = text.splitlines().index("    if i == 5 { m[3] = 0 }") + 1
    program = check_file(str(gate), diags=Diagnostics(warnings=False))
    messages = {}
    for b, threads in (("c", 2), ("c", 3), ("py", 2)):
        o = execute(program, b, opt="0", use_cache=False, timeout=300, threads=threads)[0]
        assert o.status == "RUNTIME-ERROR", (b, threads, o.status, o.value, o.message)
        assert (o.site.line, o.site.column) == (line, 17), (b, o.site)
        assert "write of u8 at " in o.message and "offset 3 of the 512-byte read-only file mapping" in o.message
        messages[b] = _words(o.message)
    assert messages["c"] == messages["py"], messages
