"""Checked C with the checks of counted loops hoisted (nxc/lower/hoist.py).

A hoisted loop is written twice: a fast copy entered when one range check
per access passes before the loop, and the checked copy otherwise. Every
fault must still stop at its access site, at the iteration it happens, with
the message and stack the unhoisted build gave (and the Python backend
gives): each case here runs on both backends and must print the same report.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from nxc.backend.c import build as c_build
from nxc.backend.c.emit import emit_c
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.lower.effects import memory_free, silent
from nxc.lower.hoist import plan_loops
from nxc.paths import bundled_dir, runtime_dir

# Off by one at the last iteration of a hoisted loop (`<=`): the range check
# fails, the checked copy reads p[0..3] and stops at p[4].
LAST_ITERATION = """
    import "nx_syscalls.nx"

    func total(p: *i64, n: i64) -> i64 {
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
        p[3] = 5
        return total(p, 4)
    }
"""

# The same in a two-level nest (hoisted as one range over both counters):
# the last row's last store is one past the end.
NEST_LAST_STORE = """
    import "nx_syscalls.nx"

    func fill(out: *i64, rows: i64, cols: i64, stride: i64) {
        var r: i64 = 0
        while r < rows {
            var c: i64 = 0
            while c < cols {
                out[r * stride + c] = r + c
                c = c + 1
            }
            r = r + 1
        }
    }

    func main() -> i64 {
        let out: *i64 = sys_mmap(3 * 4 * 8 - 8) as *i64
        fill(out, 3, 4, 4)
        return 0
    }
"""

# The loop calls a function that ends the mapping it walks, at i == 2: the
# read right after it must be reported as after sys_munmap.
UNMAPPED_BY_CALLEE = """
    import "nx_syscalls.nx"

    func maybe_drop(p: *i64, i: i64) {
        if i == 2 { sys_munmap(p as *void, 8 * 8) }
    }

    func walk(p: *i64) -> i64 {
        var s: i64 = 0
        var i: i64 = 0
        while i < 8 {
            maybe_drop(p, i)
            s = s + p[i]
            i = i + 1
        }
        return s
    }

    func main() -> i64 {
        let p: *i64 = sys_mmap(8 * 8) as *i64
        return walk(p)
    }
"""

# The pointer is reassigned in the loop, to a shorter mapping: p[4] through
# the new pointer is out of bounds.
REASSIGNED = """
    import "nx_syscalls.nx"

    func walk(a: *i64, b: *i64) -> i64 {
        var p: *i64 = a
        var s: i64 = 0
        var i: i64 = 0
        while i < 8 {
            s = s + p[i]
            if i == 3 { p = b }
            i = i + 1
        }
        return s
    }

    func main() -> i64 {
        let a: *i64 = sys_mmap(8 * 8) as *i64
        let b: *i64 = sys_mmap(4 * 8) as *i64
        return walk(a, b)
    }
"""

# The range's pointer is a struct field, and a store of the loop overwrites
# that field (the struct lies in the array): from the second iteration on
# `h.data` is 99. The run-time disjointness test must send this to the checked copy.
FIELD_OVERWRITTEN = """
    import "nx_syscalls.nx"

    struct Holder {
        data: *i64,
    }

    func run(h: *Holder, w: *i64) {
        var i: i64 = 0
        while i < 4 {
            h.data[i] = 7
            w[i] = 99
            i = i + 1
        }
    }

    func main() -> i64 {
        let m: *i64 = sys_mmap(8 * 8) as *i64
        let h: *Holder = m as *Holder
        h.data = (m as i64 + 32) as *i64
        run(h, m)
        return 0
    }
"""

# Through a null struct pointer inside a hoisted loop (a fixed-address access).
NULL_FIELD_IN_LOOP = """
    struct Counter {
        n: i64,
    }

    func bump(c: *Counter, times: i64) {
        var i: i64 = 0
        while i < times {
            c.n = c.n + 1
            i = i + 1
        }
    }

    func main() -> i64 {
        bump(0 as *Counter, 3)
        return 0
    }
"""

# A negative stride: the range check refuses it (no fault), the checked copy runs.
NEGATIVE_STRIDE = """
    import "nx_syscalls.nx"

    func rev_sum(p: *i64, n: i64, step: i64) -> i64 {
        var s: i64 = 0
        var i: i64 = 0
        while i < n {
            s = s + p[n - 1 + step * i]
            i = i + 1
        }
        return s
    }

    func main() -> i64 {
        let p: *i64 = sys_mmap(5 * 8) as *i64
        var k: i64 = 0
        while k < 5 { p[k] = k + 1; k = k + 1 }
        if rev_sum(p, 5, -1) != 15 { return 1 }
        if rev_sum(p, 5, 0) != 25 { return 2 }
        return 0
    }
"""


# Accesses through one pointer at constant offsets (one range check covers them,
# nxc/lower/hoist.py's _merge_offsets): p[i + 3] is one past the end at the last
# iteration while p[i] and p[i + 1] are not; the merged range fails, and the checked
# copy stops at p[i + 3] of that iteration.
OFFSETS_PAST_END = """
    import "nx_syscalls.nx"

    func taps(p: *i64, n: i64) -> i64 {
        var s: i64 = 0
        var i: i64 = 0
        while i < n {
            s = s + p[i] + p[i + 1] + p[i + 3]
            i = i + 1
        }
        return s
    }

    func main() -> i64 {
        let p: *i64 = sys_mmap(6 * 8) as *i64
        var k: i64 = 0
        while k < 6 { p[k] = k; k = k + 1 }
        if taps(p, 3) != 21 { return 1 }
        return taps(p, 4)
    }
"""


def nxc_run(path, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "nxc", "run", *args, os.path.basename(path)], capture_output=True,
                          text=True, timeout=timeout, cwd=os.path.dirname(path))


def line_of(source: str, text: str) -> int:
    for n, line in enumerate(textwrap.dedent(source).lstrip("\n").splitlines(), 1):
        if text in line:
            return n
    raise AssertionError(text)


def stack_lines(text: str) -> list[str]:
    return [f"{os.path.basename(m[1])}:{m[2]} in {m[3]}"
            for m in re.finditer(r"^  at (.+?):(\d+):\d+ in (\w+)$", text, re.M)]


def report(text: str) -> str:
    """The runtime error line and the stack, with addresses masked (they differ between
    backends) and the stack's columns left out (the backends place a call's at its
    statement or at its callee's name)."""
    lines = [line for line in text.splitlines() if "runtime error" in line]
    lines += stack_lines(text)
    return re.sub(r"0x[0-9a-f]+", "0x?", "\n".join(lines))


def c_text(path: str) -> str:
    return emit_c(check_file(path, None, Diagnostics(warnings=False)), checked=True).text


def function_text(text: str, name: str) -> str:
    start = text.index(f" nxf_{name}(", text.index("#line", text.index(f" nxf_{name}(")))
    return text[start:text.index("\n}\n", start)]


def run_both(path):
    """(C report, Python report): the two backends' stderr must agree."""
    c = nxc_run(path)
    py = nxc_run(path, "--backend", "py")
    assert c.returncode == 4 and py.returncode == 4, (c.stderr, py.stderr)
    assert "Traceback" not in c.stderr
    assert report(c.stderr) == report(py.stderr), (c.stderr, py.stderr)
    return c.stderr


def test_off_by_one_at_the_last_iteration_of_a_hoisted_loop(write_nx):
    path = write_nx(LAST_ITERATION)
    assert "NXRT_SPAN1" in function_text(c_text(path), "total")        # the loop is versioned
    err = run_both(path)
    at = line_of(LAST_ITERATION, "s = s + p[i]")
    assert re.search(rf"t\.nx:{at}:17: runtime error: out-of-bounds read of i64 at 0x[0-9a-f]+: offset 32 of "
                     r"the 32-byte mapping", err), err
    assert stack_lines(err) == [f"t.nx:{at} in total", f"t.nx:{line_of(LAST_ITERATION, 'total(p, 4)')} in main"]


def test_last_store_of_a_hoisted_nest(write_nx):
    path = write_nx(NEST_LAST_STORE)
    fill = function_text(c_text(path), "fill")
    # one range over the nest (both counters, stride `stride` for r), before the outer loop
    assert re.search(r"nxrt_reach\(&nx_t\d+, nx_t\d+, l_stride, nx_t\d+, INT64_C\(1\)\)", fill), fill
    err = run_both(path)
    at = line_of(NEST_LAST_STORE, "out[r * stride + c] = r + c")
    assert re.search(rf"t\.nx:{at}:\d+: runtime error: out-of-bounds write of i64 at 0x[0-9a-f]+: offset 88 of "
                     r"the 88-byte mapping", err), err
    assert stack_lines(err) == [f"t.nx:{at} in fill", f"t.nx:{line_of(NEST_LAST_STORE, 'fill(out, 3, 4, 4)')} in main"]


def test_mapping_unmapped_by_a_function_the_loop_calls(write_nx):
    path = write_nx(UNMAPPED_BY_CALLEE)
    assert "NXRT_SPAN1" not in function_text(c_text(path), "walk")      # a call that may unmap: not hoisted
    err = run_both(path)
    at = line_of(UNMAPPED_BY_CALLEE, "s = s + p[i]")
    assert re.search(rf"t\.nx:{at}:\d+: runtime error: read of i64 at 0x[0-9a-f]+ after sys_munmap: offset 16 of "
                     rf"the 64-byte mapping .*unmapped at t\.nx:{line_of(UNMAPPED_BY_CALLEE, 'sys_munmap(')}:",
                     err), err
    assert stack_lines(err) == [f"t.nx:{at} in walk", f"t.nx:{line_of(UNMAPPED_BY_CALLEE, 'return walk(p)')} in main"]


def test_pointer_reassigned_in_the_loop(write_nx):
    path = write_nx(REASSIGNED)
    err = run_both(path)
    at = line_of(REASSIGNED, "s = s + p[i]")
    assert re.search(rf"t\.nx:{at}:\d+: runtime error: out-of-bounds read of i64 at 0x[0-9a-f]+: offset 32 of "
                     r"the 32-byte mapping", err), err
    assert stack_lines(err)[0] == f"t.nx:{at} in walk"


def test_store_overwriting_the_field_a_range_reads(write_nx):
    path = write_nx(FIELD_OVERWRITTEN)
    run = function_text(c_text(path), "run")
    assert "nxrt_apart(" in run                    # the disjointness test is emitted
    err = run_both(path)
    at = line_of(FIELD_OVERWRITTEN, "h.data[i] = 7")
    assert re.search(rf"t\.nx:{at}:\d+: runtime error: write of i64 through a null pointer", err), err
    assert stack_lines(err)[0] == f"t.nx:{at} in run"


def test_null_struct_pointer_in_a_hoisted_loop(write_nx):
    path = write_nx(NULL_FIELD_IN_LOOP)
    assert "NXRT_TRY" in function_text(c_text(path), "bump")
    err = run_both(path)
    at = line_of(NULL_FIELD_IN_LOOP, "c.n = c.n + 1")
    assert f"t.nx:{at}:" in err and "through a null pointer" in err, err
    assert stack_lines(err) == [f"t.nx:{at} in bump", f"t.nx:{line_of(NULL_FIELD_IN_LOOP, 'bump(0 as')} in main"]


@pytest.mark.parametrize("flag", [[], ["--unchecked"], ["--backend", "py"]])
def test_negative_and_zero_strides_take_the_checked_copy(write_nx, flag):
    path = write_nx(NEGATIVE_STRIDE)
    proc = nxc_run(path, *flag)
    assert proc.returncode == 0, proc.stderr


def test_accesses_at_constant_offsets_share_one_range(write_nx):
    """p[i], p[i + 1] and p[i + 3] are checked by one range (the first's progression and 3
    more elements); a loop of three valid calls runs the fast copy, and the fourth, whose
    last p[i + 3] is past the end, stops there, as the unhoisted build and Python do."""
    path = write_nx(OFFSETS_PAST_END)
    taps = function_text(c_text(path), "taps")
    assert taps.count("NXRT_SPAN1(") == 1, taps
    assert "__builtin_add_overflow((uint64_t)nx_t" in taps and "INT64_C(3), &nx_t" in taps, taps
    err = run_both(path)
    at = line_of(OFFSETS_PAST_END, "s = s + p[i] + p[i + 1] + p[i + 3]")
    assert re.search(rf"t\.nx:{at}:\d+: runtime error: out-of-bounds read of i64 at 0x[0-9a-f]+: offset 48 of "
                     r"the 48-byte mapping", err), err
    assert stack_lines(err) == [f"t.nx:{at} in taps", f"t.nx:{line_of(OFFSETS_PAST_END, 'return taps(p, 4)')} in main"]


def test_kernel_offsets_merged():
    """The eight-token kernel's lane nest: its eight sums' loads (acc[16 j + r]) are one range
    112 elements wide, the eight token values of a column (xk[c * 8 + j]) one 7 wide: 6 range
    checks a chunk, where there were 27 (about a fifth of the checked call)."""
    program = check_file(os.path.join(bundled_dir(), "nx_f32_gemm.nx"), None, Diagnostics(warnings=False))
    fn = next(f for f in program.functions if f.sym.name == "nx_gemm_tokens8")
    nest = next(p for p in plan_loops(fn, program, memory_free(program)).values()
                if [c.sym.name for c in p.counters] == ["r", "c"])
    extras = sorted(r.extra for r in nest.ranges)
    assert extras == [0, 0, 7, 112, 112], extras
    assert len(nest.unchecked) > len(nest.ranges) + 15


def test_kernel_loops_are_hoisted():
    """Every innermost loop of the attention kernels is planned (most as nests)."""
    for name, at_least in (("nx_f32_attention.nx", 12), ("nx_f32_attn_multi.nx", 6), ("nx_kvcache.nx", 10)):
        program = check_file(os.path.join(bundled_dir(), name), None, Diagnostics(warnings=False))
        free = memory_free(program)
        plans = [p for fn in program.functions for p in plan_loops(fn, program, free).values()]
        assert len(plans) >= at_least, (name, len(plans))
        assert any(len(p.counters) == 2 for p in plans), name


def test_silent_helpers():
    program = check_file(os.path.join(bundled_dir(), "nx_f32.nx"), None, Diagnostics(warnings=False))
    quiet = silent(program)
    assert {"nx_f32_is_nan", "nx_f32_max", "nx_f32_exp"} <= quiet
    assert "sys_munmap" not in quiet and "sys_mmap" not in quiet


def test_checked_kernel_vectorizes(tmp_path):
    """The fast copies have plain accesses: GCC vectorizes the kernel's loops in the checked build too."""
    cc = c_build.compiler()[0]
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    if "Free Software Foundation" not in version and "GCC" not in version:
        pytest.skip(f"{cc} is not GCC (-fopt-info-vec)")
    attn = os.path.join(bundled_dir(), "nx_f32_attention.nx")
    c_file = tmp_path / "attn.c"
    c_file.write_text(c_text(attn))
    proc = subprocess.run([cc, *c_build.flags_for("2"), "-I", runtime_dir(), "-fopt-info-vec-optimized",
                           "-c", str(c_file), "-o", str(tmp_path / "attn.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    vectorized = {int(m.group(1)) for m in re.finditer(
        r"nx_f32_attention\.nx:(\d+):\d+: optimized: loop vectorized", proc.stderr)}
    with open(attn, encoding="utf-8") as f:
        lines = f.read().splitlines()
    maxes = next(i for i, t in enumerate(lines, 1) if "mk[r] = cur" in t)
    sums = next(i for i, t in enumerate(lines, 1) if "su[r] = s as u32" in t)
    # GCC names a loop by a line of its body or its head: any line from the enclosing
    # `while` down to the statement counts (the blocked loops have long bodies)
    heads = {at: max(i for i in range(1, at + 1) if lines[i - 1].lstrip().startswith("while "))
             for at in (maxes, sums)}
    assert any(heads[maxes] <= v <= maxes for v in vectorized), (maxes, sorted(vectorized))
    assert any(heads[sums] <= v <= sums for v in vectorized), (sums, sorted(vectorized))


# A hoisted nest (rows x cols, all accesses planned) that runs long enough to time out: its
# fast copy stores the outer loop's site once and nothing inside, and a TIMEOUT names that
# outer loop; the same nest with an out-of-bounds access runs the checked copy.
LONG_NEST = """
    import "nx_syscalls.nx"

    func spin(p: *i64, rows: i64, cols: i64) -> i64 {
        var s: i64 = 0
        var r: i64 = 0
        while r < rows {
            var c: i64 = 0
            while c < cols {
                s = s + p[c]
                c = c + 1
            }
            r = r + 1
        }
        return s
    }

    func main() -> i64 {
        let p: *i64 = sys_mmap(64 * 8) as *i64
        return spin(p, 1000000000000, 64)
    }
"""


def test_fast_copy_of_a_nest_stores_no_site_inside(write_nx):
    """The fast copy's inner loops store no site (a volatile store that GCC must assume aliases
    what the nest reads: loads could not move across it, and a kernel's operands spilled); the
    checked copy keeps every site."""
    path = write_nx(LONG_NEST)
    spin = function_text(c_text(path), "spin")
    fast, checked = spin.split("} else {", 1)
    fast = fast[fast.index("__builtin_expect"):]
    outer, inner = line_of(LONG_NEST, "while r < rows"), line_of(LONG_NEST, "while c < cols")
    assert len(re.findall(r"\*nx_fr = \d+", fast)) == 1, fast          # the nest's one stamp, before it
    assert "while (l_c" in fast and "*nx_fr" not in fast[fast.index("while (l_r"):], fast
    assert len(re.findall(r"\*nx_fr = \d+", checked)) >= 2, checked    # outer and inner, as before
    c = nxc_run(path, "--timeout", "1")
    assert c.returncode != 0 and "TIMEOUT" in c.stdout + c.stderr, (c.stdout, c.stderr)
    out = c.stdout + c.stderr
    assert f"at t.nx:{outer}:" in out and f"at t.nx:{inner}:" not in out, out
