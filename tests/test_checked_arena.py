"""Checked C's arena of small mappings (runtime/nx_runtime.c): never-reused addresses, recycled pages.

Small checked `sys_mmap`s are carved from chunks whose pages move to a new
address once all their mappings have ended. Each test makes enough mappings
that chunks are recycled (a 64 KiB chunk holds ~300 of these), and checks that
what the quarantine caught is still caught, on both backends, and that the
recycled memory reads as zero, as fresh `sys_mmap` memory must.
"""
from __future__ import annotations

import pytest

from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute
from load_bounds import GATE_BOUND

# Map and unmap n small mappings (writing each), so that chunks fill and recycle.
CHURN = """
    import "nx_syscalls.nx"

    func churn(n: i64) -> i64 {
        var k: i64 = 0
        while k < n {
            let q: *i64 = sys_mmap(48) as *i64
            if (q as i64) == 0 { return 1 }
            var i: i64 = 0
            while i < 6 {
                if q[i] != 0 { return 2 }
                q[i] = -1
                i = i + 1
            }
            sys_munmap(q as *void, 48)
            k = k + 1
        }
        return 0
    }
"""


def outcome(write_nx, source: str, backend: str):
    path = write_nx(CHURN + source)
    return execute(check_file(path, diags=Diagnostics()), backend, timeout=GATE_BOUND)[0]


def line_of(source: str, text: str) -> int:
    import textwrap
    full = textwrap.dedent(CHURN + source).lstrip("\n")    # as write_nx writes it
    for n, line in enumerate(full.splitlines(), 1):
        if text in line:
            return n
    raise AssertionError(text)


@pytest.mark.parametrize("backend", ["c", "py"])
def test_recycled_memory_reads_as_zero(write_nx, backend):
    # churn() fails with 2 if any new mapping holds a -1 an earlier one wrote.
    got = outcome(write_nx, """
    func main() -> i64 {
        return churn(3000)
    }
""", backend)
    assert got.status == "PASS", got


STALE = """
    func main() -> i64 {
        let p: *i64 = sys_mmap(64) as *i64
        let saved: *i64 = p
        sys_munmap(p as *void, 64)
        if churn(N) != 0 { return 1 }
        return saved[1]
    }
"""


@pytest.mark.parametrize("backend", ["c", "py"])
def test_use_after_unmap_once_its_pages_were_recycled(write_nx, backend):
    source = STALE.replace("N", "2000")
    got = outcome(write_nx, source, backend)
    assert got.status == "RUNTIME-ERROR", got
    assert "read of i64 at 0x" in got.message and "after sys_munmap: offset 8 of the 64-byte mapping" in got.message
    assert f"t.nx:{line_of(source, 'sys_munmap(p as')}:5" in got.message.split("unmapped at")[1], got.message
    assert [f.function for f in got.stack] == ["main"]


def test_use_after_unmap_beyond_the_quarantine_is_still_caught(write_nx):
    # 5000 unmaps later the record of the first is gone (4096 are kept), but its
    # address was never handed out again: the read is caught, not served.
    got = outcome(write_nx, STALE.replace("N", "5000"), "c")
    assert got.status == "RUNTIME-ERROR", got
    assert "read of i64 at 0x" in got.message


@pytest.mark.parametrize("backend", ["c", "py"])
def test_overrun_into_the_gap_before_the_next_mapping(write_nx, backend):
    # Two mappings made one after the other: 40 bytes past the end of the first
    # is in the red zone between them, reported against the first.
    source = """
    func main() -> i64 {
        if churn(400) != 0 { return 1 }
        let a: *i64 = sys_mmap(16) as *i64
        let b: *i64 = sys_mmap(16) as *i64
        b[0] = 1
        return a[7]
    }
"""
    got = outcome(write_nx, source, backend)
    assert got.status == "RUNTIME-ERROR", got
    assert "out-of-bounds read of i64 at 0x" in got.message and "of the 16-byte mapping" in got.message, got.message


@pytest.mark.parametrize("backend", ["c", "py"])
def test_large_mappings_are_checked_too(write_nx, backend):
    # Above the arena's size limit (16 KiB) a mapping takes the calloc path.
    source = """
    func main() -> i64 {
        let n: i64 = 5000
        let p: *i64 = sys_mmap(n * 8) as *i64
        if p[n - 1] != 0 { return 1 }
        let saved: *i64 = p
        sys_munmap(p as *void, n * 8)
        if churn(10) != 0 { return 2 }
        return saved[n - 1]
    }
"""
    got = outcome(write_nx, source, backend)
    assert got.status == "RUNTIME-ERROR", got
    assert "after sys_munmap: offset 39992 of the 40000-byte mapping" in got.message, got.message


@pytest.mark.parametrize("backend", ["c", "py"])
def test_off_by_one_past_a_large_mapping(write_nx, backend):
    source = """
    func main() -> i64 {
        let n: i64 = 5000
        let p: *i64 = sys_mmap(n * 8) as *i64
        return p[n]
    }
"""
    got = outcome(write_nx, source, backend)
    assert got.status == "RUNTIME-ERROR", got
    assert "out-of-bounds read of i64 at 0x" in got.message and "offset 40000 of the 40000-byte mapping" in got.message


@pytest.mark.parametrize("backend", ["c", "py"])
def test_hoisted_loop_over_an_unmapped_mapping_it_read_before(write_nx, backend):
    # The first total() leaves the mapping in the runtime's shared cache of
    # regions found lately (the hoisted checks read it); sys_munmap must drop
    # it there, so the second total() runs checked and stops at its first read.
    source = """
    func total(p: *i64, n: i64) -> i64 {
        var s: i64 = 0
        var i: i64 = 0
        while i < n {
            s = s + p[i]
            i = i + 1
        }
        return s
    }

    func main() -> i64 {
        let p: *i64 = sys_mmap(64) as *i64
        if total(p, 8) != 0 { return 1 }
        let saved: *i64 = p
        sys_munmap(p as *void, 64)
        return total(saved, 8)
    }
"""
    got = outcome(write_nx, source, backend)
    assert got.status == "RUNTIME-ERROR", got
    assert (f"t.nx:{line_of(source, 's = s + p[i]')}:" in got.message
            and "after sys_munmap: offset 0 of the 64-byte mapping" in got.message), got.message
    assert [f.function for f in got.stack] == ["total", "main"]


# Big mappings (above the chunks' 16 KiB): each a range of its own whose pages
# a later mapping of about the same size gets, moved to a new address.
BIG = """
    import "nx_syscalls.nx"

    // Map, check zero, fill and unmap n mappings of `words` i64 each.
    func churn_big(n: i64, words: i64) -> i64 {
        var k: i64 = 0
        while k < n {
            let q: *i64 = sys_mmap(words * 8) as *i64
            if (q as i64) == 0 { return 1 }
            var i: i64 = 0
            while i < words {
                if q[i] != 0 { return 2 }
                q[i] = -1
                i = i + 1
            }
            sys_munmap(q as *void, words * 8)
            k = k + 1
        }
        return 0
    }
"""


def big_outcome(write_nx, source: str, backend: str = "c"):
    path = write_nx(BIG + source)
    return execute(check_file(path, diags=Diagnostics()), backend, timeout=GATE_BOUND)[0]


@pytest.mark.parametrize("words", [4096, 32768, 20000])
def test_big_mappings_reuse_pages_and_read_as_zero(write_nx, words):
    # The same size again and again (pages moved each time), then a smaller one
    # that takes a bigger kept set (its tail freed): always zero.
    got = big_outcome(write_nx, f"""
    func main() -> i64 {{
        if churn_big(40, {words}) != 0 {{ return 1 }}
        if churn_big(5, {words * 3 // 4}) != 0 {{ return 2 }}
        return 0
    }}
""")
    assert got.status == "PASS", got


@pytest.mark.parametrize("backend", ["c", "py"])
def test_use_after_unmap_of_a_big_mapping_whose_pages_were_reused(write_nx, backend):
    source = """
    func main() -> i64 {
        let p: *i64 = sys_mmap(262144) as *i64
        let saved: *i64 = p
        p[5] = 7
        sys_munmap(p as *void, 262144)
        if churn_big(3, 32768) != 0 { return 1 }
        return saved[5]
    }
"""
    got = big_outcome(write_nx, source, backend)
    assert got.status == "RUNTIME-ERROR", got
    assert "read of i64 at 0x" in got.message
    assert "after sys_munmap: offset 40 of the 262144-byte mapping" in got.message, got.message


@pytest.mark.parametrize("backend", ["c", "py"])
def test_overrun_of_a_big_mapping_with_reused_pages(write_nx, backend):
    got = big_outcome(write_nx, """
    func main() -> i64 {
        if churn_big(3, 8192) != 0 { return 1 }
        let a: *i64 = sys_mmap(65536) as *i64
        a[8191] = 1
        return a[8192]
    }
""", backend)
    assert got.status == "RUNTIME-ERROR", got
    assert "out-of-bounds read of i64 at 0x" in got.message and "of the 65536-byte mapping" in got.message, got.message
