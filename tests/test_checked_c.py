"""Checked C (the default C build): located faults with their .nx stack, in gates and through the API.

The five reproducers of issue 14 each pass silently on an unchecked C build;
on the default backend each must stop at its line, with its callers.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import nxc
from nxc.backend.c.build import build
from nxc.backend.c.emit import emit_c
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute

OFF_BY_ONE = """
    import "nx_syscalls.nx"

    func sum(p: *i64, n: i64) -> i64 {
        var s: i64 = 0
        var i: i64 = 0
        while i <= n {
            s = s + p[i]
            i = i + 1
        }
        return s
    }

    func main() -> i64 {
        let p: *i64 = sys_mmap(4 * 8) as *i64
        let s: i64 = sum(p, 4)
        if s != 0 { return 1 }
        return 0
    }
"""

AFTER_UNMAP = """
    import "nx_syscalls.nx"

    func poke(q: *i64) { q[1] = 7 }

    func main() -> i64 {
        let p: *i64 = sys_mmap(64) as *i64
        let saved: *i64 = p
        p[0] = 1
        sys_munmap(p as *void, 64)
        poke(saved)
        return 0
    }
"""

STRADDLE = """
    import "nx_syscalls.nx"

    func last_word(b: *u8, n: i64) -> i64 {
        let q: *i64 = (b as i64 + n - 4) as *i64
        return q[0]
    }

    func main() -> i64 {
        let b: *u8 = sys_mmap(12) as *u8
        if last_word(b, 12) != 0 { return 1 }
        return 0
    }
"""

NULL_DEEP = """
    func set(p: *i64, v: i64) {
        p[0] = v
    }

    func middle(p: *i64) {
        set(p, 5)
    }

    func outer(p: *i64) -> i64 {
        middle(p)
        return 0
    }

    func main() -> i64 {
        return outer(0 as *i64)
    }
"""

SPIN = """
    func spin(n: i64) -> i64 {
        var i: i64 = 0
        while i < n {
            i = i * 1
        }
        return i
    }

    func main() -> i64 {
        return spin(10)
    }
"""


def nxc_run(path, *args, timeout=120):
    """`nxc run` in the module's folder, as a user would (positions print relative)."""
    return subprocess.run([sys.executable, "-m", "nxc", "run", *args, os.path.basename(path)], capture_output=True,
                          text=True, timeout=timeout, cwd=os.path.dirname(path))


def stack_lines(text: str) -> list[str]:
    """`FILE:LINE in FUNCTION` of each frame printed under `.nx stack` or `stopped in`."""
    return [f"{os.path.basename(m[1])}:{m[2]} in {m[3]}"
            for m in re.finditer(r"^  at (.+?):(\d+):\d+ in (\w+)$", text, re.M)]


def line_of(source: str, text: str) -> int:
    import textwrap
    for n, line in enumerate(textwrap.dedent(source).lstrip("\n").splitlines(), 1):
        if text in line:
            return n
    raise AssertionError(text)


@pytest.mark.parametrize("backend", ["c", "py"])
def test_off_by_one_read(write_nx, backend):
    path = write_nx(OFF_BY_ONE)
    proc = nxc_run(path, "--backend", backend)
    assert proc.returncode == 4, proc.stderr
    at = line_of(OFF_BY_ONE, "s = s + p[i]")
    assert re.search(rf"t\.nx:{at}:17: runtime error: out-of-bounds read of i64 at 0x[0-9a-f]+: offset 32 of "
                     rf"the 32-byte mapping at 0x[0-9a-f]+ \(mapped at t\.nx:{line_of(OFF_BY_ONE, 'sys_mmap')}:",
                     proc.stderr), proc.stderr
    assert stack_lines(proc.stderr) == [f"t.nx:{at} in sum", f"t.nx:{line_of(OFF_BY_ONE, 'sum(p, 4)')} in main"]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("backend", ["c", "py"])
def test_write_after_munmap_through_a_saved_pointer(write_nx, backend):
    path = write_nx(AFTER_UNMAP)
    proc = nxc_run(path, "--backend", backend)
    assert proc.returncode == 4, proc.stderr
    at, unmapped = line_of(AFTER_UNMAP, "q[1] = 7"), line_of(AFTER_UNMAP, "sys_munmap(")
    assert re.search(rf"t\.nx:{at}:\d+: runtime error: write of i64 at 0x[0-9a-f]+ after sys_munmap: offset 8 "
                     rf"of the 64-byte mapping .*unmapped at t\.nx:{unmapped}:", proc.stderr), proc.stderr
    assert stack_lines(proc.stderr) == [f"t.nx:{at} in poke", f"t.nx:{line_of(AFTER_UNMAP, 'poke(saved)')} in main"]


@pytest.mark.parametrize("backend", ["c", "py"])
def test_i64_straddling_the_end_of_a_mapping(write_nx, backend):
    path = write_nx(STRADDLE)
    proc = nxc_run(path, "--backend", backend)
    assert proc.returncode == 4, proc.stderr
    at = line_of(STRADDLE, "return q[0]")
    assert re.search(rf"t\.nx:{at}:\d+: runtime error: out-of-bounds read of i64 at 0x[0-9a-f]+: offset 8 of the "
                     r"12-byte mapping", proc.stderr), proc.stderr
    assert stack_lines(proc.stderr) == [f"t.nx:{at} in last_word", f"t.nx:{line_of(STRADDLE, 'last_word(b, 12)')} in main"]


@pytest.mark.parametrize("backend", ["c", "py"])
def test_null_write_three_calls_deep(write_nx, backend):
    path = write_nx(NULL_DEEP)
    proc = nxc_run(path, "--backend", backend)
    assert proc.returncode == 4, proc.stderr
    at = line_of(NULL_DEEP, "p[0] = v")
    assert f"t.nx:{at}:5: runtime error: write of i64 through a null pointer (address 0x0)" in proc.stderr
    assert stack_lines(proc.stderr) == [f"t.nx:{at} in set", f"t.nx:{line_of(NULL_DEEP, 'set(p, 5)')} in middle",
                                        f"t.nx:{line_of(NULL_DEEP, 'middle(p)')} in outer",
                                        f"t.nx:{line_of(NULL_DEEP, 'return outer(')} in main"]


@pytest.mark.parametrize("backend", ["c", "py"])
def test_timeout_names_the_spinning_helper(write_nx, backend):
    path = write_nx(SPIN)
    proc = nxc_run(path, "--backend", backend, "--timeout", "1")
    assert proc.returncode == 124, proc.stderr
    assert "TIMEOUT: the gate did not finish in 1 s" in proc.stderr
    frames = stack_lines(proc.stderr)
    assert frames[0] in (f"t.nx:{line_of(SPIN, 'while i < n')} in spin", f"t.nx:{line_of(SPIN, 'i = i * 1')} in spin")
    assert frames[1:] == [f"t.nx:{line_of(SPIN, 'return spin(10)')} in main"]


def test_unchecked_build_passes_the_bugs_checked_catches(write_nx):
    # What the issue saw: the unchecked C build lets these through.
    for i, source in enumerate((OFF_BY_ONE, AFTER_UNMAP, STRADDLE)):
        path = write_nx(source, name=f"u{i}.nx")
        assert nxc_run(path, "--unchecked").returncode == 0
        assert nxc_run(path).returncode == 4


def test_unchecked_crash_is_located_by_a_checked_rerun(write_nx):
    path = write_nx(NULL_DEEP)
    proc = nxc_run(path, "--unchecked")
    assert proc.returncode == 128 + 11, proc.stderr          # SIGSEGV
    assert "CRASH (SIGSEGV)" in proc.stderr
    assert "the checked build (run again to locate the crash) stopped at:" in proc.stderr
    assert f"t.nx:{line_of(NULL_DEEP, 'p[0] = v')}:5: runtime error: write of i64 through a null pointer" in proc.stderr
    assert stack_lines(proc.stderr)[0] == f"t.nx:{line_of(NULL_DEEP, 'p[0] = v')} in set"


def test_unchecked_timeout_says_it_has_no_stack(write_nx):
    proc = nxc_run(write_nx(SPIN), "--unchecked", "--timeout", "0.5")
    assert proc.returncode == 124
    assert "run without --unchecked to see where" in proc.stderr and not stack_lines(proc.stderr)


def gate_outcome(write_nx, source, **kw):
    return execute(check_file(write_nx(source), diags=Diagnostics()), "c", **kw)[0]


@pytest.mark.parametrize("body, message", [
    ("let p: *u8 = sys_mmap(16) as *u8\n    let q: *i64 = (p as i64 + 4) as *i64\n    return q[0]",
     "misaligned read of i64 at 0x"),
    ("let p: *i64 = sys_mmap(16) as *i64\n    sys_munmap(p as *void, 16)\n    sys_munmap(p as *void, 16)\n    return 0",
     "the 16-byte mapping there was already unmapped at "),
    ("let p: *i64 = sys_mmap(16) as *i64\n    sys_munmap((p as i64 + 8) as *void, 8)\n    return 0",
     "not the start of a mapping (it is 8 bytes into the 16-byte mapping"),
    ("let p: *u8 = sys_mmap(4) as *u8\n    return sys_write(1, p as *void, 5)",
     "sys_write: out-of-bounds read of 5 bytes at 0x"),
    ("let p: *i64 = sys_mmap(16) as *i64\n    return p[-1]",
     "out-of-bounds read of i64 at 0x"),
    ("let p: *i64 = (0x123456789 * 64) as *i64\n    return p[0]",
     "the address is outside any mapping (wild pointer)"),
])
def test_each_kind_of_fault(write_nx, body, message):
    outcome = gate_outcome(write_nx, 'import "nx_syscalls.nx"\n\nfunc main() -> i64 {\n    ' + body + "\n}\n")
    assert outcome.status == "RUNTIME-ERROR", outcome
    assert message in outcome.message, outcome.message
    assert [f.function for f in outcome.stack] == ["main"]


def test_before_the_start_names_the_distance(write_nx):
    outcome = gate_outcome(write_nx, 'import "nx_syscalls.nx"\n\nfunc main() -> i64 {\n'
                                     "    let p: *i64 = sys_mmap(16) as *i64\n    return p[-1]\n}\n")
    assert "8 byte(s) before the start of the 16-byte mapping" in outcome.message


def test_runaway_recursion_is_a_located_stack_overflow(write_nx):
    outcome = gate_outcome(write_nx, "func down(n: i64) -> i64 {\n    return down(n + 1) + 1\n}\n\n"
                                     "func main() -> i64 {\n    return down(0)\n}\n")
    assert outcome.status == "RUNTIME-ERROR", outcome
    assert "stack overflow: nx function calls nested more than 100000 deep" in outcome.message
    assert outcome.stack[0].function == "down" and outcome.stack[-1].function == "main"


def test_checked_and_unchecked_builds_are_cached_apart(write_nx):
    program = check_file(write_nx(OFF_BY_ONE), diags=Diagnostics())
    checked, unchecked = build(emit_c(program, checked=True), abi=True), build(emit_c(program), abi=True)
    assert checked.path != unchecked.path
    assert build(emit_c(program, checked=True), abi=True).cached


def test_the_default_is_checked_and_a_fault_leaves_the_cache_valid(write_nx):
    path = write_nx(OFF_BY_ONE)
    first = gate_outcome(write_nx, OFF_BY_ONE)
    again = execute(check_file(path, diags=Diagnostics()), "c")[0]
    assert first.checked and first.status == again.status == "RUNTIME-ERROR" and again.build_cached


# ---------------------------------------------------------------- the Python API
API = """
    import "nx_syscalls.nx"

    struct Box {
        a: i64,
        b: i64,
    }

    func box_new() -> *Box {
        let p: *Box = sys_mmap(sizeof(Box)) as *Box
        p.b = 7
        return p
    }

    func box_null() -> *Box {
        return 0 as *Box
    }

    func box_free(p: *Box) -> i64 {
        return sys_munmap(p as *void, sizeof(Box))
    }

    func fill(out: *i64, n: i64) {
        var i: i64 = 0
        while i < n {
            out[i] = i
            i = i + 1
        }
    }

    func fill_twice(out: *i64, n: i64) {
        fill(out, n)
    }
"""


@pytest.fixture
def api_module(write_nx):
    return nxc.load(write_nx(API, name="api.nx"))


def test_too_small_out_raises_and_the_interpreter_lives_on(api_module):
    small = np.zeros(3, np.int64)
    with pytest.raises(nxc.NxRuntimeError) as info:
        api_module.fill_twice(small, 4)
    err = info.value
    assert re.match(r"^.*api\.nx:\d+:\d+: runtime error: out-of-bounds write of i64 at 0x[0-9a-f]+: offset 24 of the "
                    r"24-byte mapping at 0x[0-9a-f]+ \(the numpy array passed as 'out'\)", err.message), err.message
    assert [f.function for f in err.stack] == ["fill", "fill_twice"]
    assert ".nx stack (innermost first):" in str(err)
    assert list(small) == [0, 1, 2]              # what was written before the fault stays
    big = np.zeros(4, np.int64)
    api_module.fill_twice(big, 4)                # the next call works: the module is fine
    assert list(big) == [0, 1, 2, 3]


def test_array_registration_ends_with_the_call(api_module):
    arr = np.zeros(4, np.int64)
    api_module.fill(arr, 4)
    api_module.fill(arr[:2].copy(), 2)            # a different, smaller array at another address
    with pytest.raises(nxc.NxRuntimeError):
        api_module.fill(np.zeros(2, np.int64), 3)


def test_null_and_dangling_struct_handles_raise(api_module):
    with pytest.raises(nxc.NxRuntimeError, match="field 'b'.*null pointer"):
        api_module.box_null().b
    box = api_module.box_new()
    assert box.b == 7
    api_module.box_free(box)
    with pytest.raises(nxc.NxRuntimeError, match="after sys_munmap"):
        box.b


def test_unchecked_is_the_fast_path(write_nx):
    m = nxc.load(write_nx(API, name="api.nx"), checked=False)
    arr = np.zeros(4, np.int64)
    m.fill(arr, 4)
    assert list(arr) == [0, 1, 2, 3]
    with pytest.raises(nxc.NxRuntimeError, match="null pointer"):
        m.box_null().b                            # the handle's own null check, before the offset


def test_python_backend_api_error_has_the_stack(write_nx):
    m = nxc.load(write_nx(API, name="api.nx"), backend="py")
    with pytest.raises(nxc.NxRuntimeError) as info:
        m.fill_twice(np.zeros(3, np.int64), 4)
    assert [f.function for f in info.value.stack] == ["fill", "fill_twice"]


FIB = """func fib(n: i64) -> i64 {
    if n < 2 { return n }
    return fib(n - 1) + fib(n - 2)
}

func main() -> i64 {
    if fib(20) == 6765 { return 0 }
    return 1
}
"""


def test_a_checked_call_reads_no_thread_local(tmp_path):
    """A checked function finds its thread's shadow stack once (nxrt_cur_stk, kept in nx_st
    for the leave), and while no tasks run that is a global: in the library nxc loads, the
    function calls no __tls_get_addr (it did once per call when the stacks became per thread,
    which made a checked fib(30) 1.6x slower; bench/checked_call_cost.py)."""
    path = tmp_path / "fib.nx"
    path.write_text(FIB)
    program = check_file(str(path), diags=Diagnostics())
    emitted = emit_c(program, checked=True)
    body = emitted.text[emitted.text.index("static int64_t nxf_fib(int64_t l_n)\n{"):]
    body = body[:body.index("\n}\n")]
    assert body.count("nxrt_cur_stk()") == 1 and "nxrt_leave" not in body and "nxrt_stk" not in body
    assert body.count("nx_st[0]--;") == 2                # both returns leave the frame
    built = build(emitted, opt="2", use_cache=False, abi=True)
    try:
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", built.path], capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("no objdump")
    fib = re.search(r"<nxf_fib>:\n(.*?)\n\n", dis.stdout, re.S)
    assert fib is not None, "nxf_fib not in the library"
    code = fib.group(1).splitlines()
    assert any("<nxf_fib>" in line and "call" in line for line in code)     # the recursion is there
    # the thread-local is read on the tasks-running path only: none before the first branch
    # (the test of nxrt_par_active), at most one lookup in all
    first = next(k for k, line in enumerate(code) if re.search(r"\sj[a-z]+\s", line))
    assert not any("__tls_get_addr" in line for line in code[:first]), "\n".join(code[:first + 1])
    assert sum("__tls_get_addr" in line for line in code) <= 1
    r = nxc.load(str(path), checked=True)
    assert r.fib(20) == 6765
