"""The C runtime keeps released blocks of 64 KiB or more and hands them out
again (runtime/nx_runtime.h: nxrt_kept_take, nxrt_kept_put): sys_mmap must
still return zeroed memory of the size asked for, whatever the program wrote
into the block before and whatever size it passed to sys_munmap."""
from __future__ import annotations

import pytest

from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute
from load_bounds import GATE_BOUND

# Map, dirty every byte, unmap (with a size that is wrong in a different way
# each round), map again at sizes around, below and above the first: every
# byte of each new mapping must read 0, and writing all of it must not touch
# another live mapping (a block kept too small would overlap its neighbour).
PROGRAM = """
import "nx_syscalls.nx"

func fill(p: *u8, n: i64, v: u8) {
    var i: i64 = 0
    while i < n { p[i] = v; i = i + 1 }
}

func zeroed(p: *u8, n: i64) -> bool {
    var i: i64 = 0
    while i < n {
        if p[i] != 0 { return false }
        i = i + 1
    }
    return true
}

func main() -> i64 {
    let sizes: *i64 = sys_mmap(8 * 8) as *i64
    sizes[0] = 200000; sizes[1] = 199000; sizes[2] = 210000; sizes[3] = 65536
    sizes[4] = 1048576; sizes[5] = 200000; sizes[6] = 300000; sizes[7] = 70000
    var round: i64 = 0
    while round < 24 {
        let n: i64 = sizes[round % 8]
        let a: *u8 = sys_mmap(n) as *u8
        let b: *u8 = sys_mmap(n) as *u8
        if (a as i64) == 0 || (b as i64) == 0 { return 1 }
        if !zeroed(a, n) { return 2 }
        if !zeroed(b, n) { return 3 }
        fill(a, n, 0xA5)
        fill(b, n, 0x5A)
        if a[n - 1] != 0xA5 || b[0] != 0x5A { return 4 }  // neither overwrote the other
        var wrong: i64 = n * 2
        if round % 3 == 1 { wrong = 1 }
        if round % 3 == 2 { wrong = 0 }
        sys_munmap(a as *void, wrong)
        sys_munmap(b as *void, n)
        round = round + 1
    }
    return 0
}
"""


@pytest.mark.parametrize("checked", [False, True])
def test_reused_blocks_are_zeroed_and_big_enough(write_nx, checked):
    program = check_file(write_nx(PROGRAM), diags=Diagnostics())
    outcome = execute(program, "c", checked=checked)[0]
    assert outcome.status == "PASS", (outcome.value, outcome.message)


def test_python_backend_agrees(write_nx):
    program = check_file(write_nx(PROGRAM), diags=Diagnostics())
    outcome = execute(program, "py", timeout=GATE_BOUND)[0]
    assert outcome.status == "PASS", (outcome.value, outcome.message)


# A second sys_munmap of the same mapping is the program's error (a checked
# build reports it); unchecked, the block must at least not be handed out
# twice: two later mappings of that size are distinct and independent.
TWICE = """
import "nx_syscalls.nx"

func main() -> i64 {
    let n: i64 = 100000
    let a: *i64 = sys_mmap(n * 8) as *i64
    sys_munmap(a as *void, n * 8)
    sys_munmap(a as *void, n * 8)
    let b: *i64 = sys_mmap(n * 8) as *i64
    let c: *i64 = sys_mmap(n * 8) as *i64
    if (b as i64) == 0 || (c as i64) == 0 { return 1 }
    if (b as i64) == (c as i64) { return 2 }
    b[n - 1] = 7
    if c[n - 1] != 0 { return 3 }
    return 0
}
"""


def test_a_second_munmap_does_not_hand_a_block_out_twice(write_nx):
    program = check_file(write_nx(TWICE), diags=Diagnostics())
    outcome = execute(program, "c", checked=False)[0]
    assert outcome.status == "PASS", (outcome.value, outcome.message)
