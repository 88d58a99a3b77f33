"""C backend end to end: each construct compiled through cffi and run."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nxc.backend.c.build import build
from nxc.diagnostics import Diagnostics
from nxc.backend.c.emit import emit_c
from nxc.check.frontend import check_file
from nxc.gates.run import execute


def run_c(path: str, **kw):
    program = check_file(path, diags=Diagnostics())
    return execute(program, "c", **kw)[0]


def gate(write_nx, body: str, prelude: str = "") -> object:
    return run_c(write_nx(prelude + "\nfunc main() -> i64 {\n" + body + "\n}\n"))


# Each entry: a check that must hold; the gate returns its index on failure.
INTEGER_CHECKS = [
    "let a: i8 = 127; if a + 1 != -128 { return 1 }",
    "let a: u8 = 255; if a + 1 != 0 { return 2 }",
    "let a: i16 = -32768; if a - 1 != 32767 { return 3 }",
    "let a: u16 = 65535; if a * a != 1 { return 4 }",
    "let a: i32 = 2147483647; if a + 1 != -2147483648 { return 5 }",
    "let a: u32 = 0; if a - 1 != 0xFFFFFFFF { return 6 }",
    "let a: i64 = 0x7FFFFFFFFFFFFFFF; if a + 1 != 0x8000000000000000 { return 7 }",
    "let a: i64 = -7; if a / 2 != -3 { return 8 }",
    "let a: i64 = -7; if a % 2 != -1 { return 9 }",
    "let a: i64 = 7; if a % -2 != 1 { return 10 }",
    "let m: i64 = 0x8000000000000000; let d: i64 = -1; if m / d != m { return 11 }",
    "let m: i64 = 0x8000000000000000; let d: i64 = -1; if m % d != 0 { return 12 }",
    "let m: i32 = -2147483648; let d: i32 = -1; if m / d != m { return 13 }",
    "let one: i64 = 1; let n: i64 = 65; if one << n != 2 { return 14 }",
    "let one: u8 = 1; let n: i64 = 9; if one << n != 2 { return 15 }",
    "let neg: i64 = -16; let n: i64 = 2; if neg >> n != -4 { return 16 }",
    "let big: u64 = 0x8000000000000000; let n: i64 = 63; if big >> n != 1 { return 17 }",
    "let neg8: i8 = -128; let n: u8 = 7; if neg8 >> n != -1 { return 18 }",
    "let u: u32 = 0xFFFFFFFF; if u < 1 { return 19 }",
    "let u: u64 = 0xFFFFFFFFFFFFFFFF; let one: u64 = 1; if !(u > one) { return 20 }",
    "let s: i64 = -1; if (s as u8) != 255 { return 21 }",
    "let s: i8 = -1; if (s as u64) != 0xFFFFFFFFFFFFFFFF { return 22 }",
    "let s: u8 = 200; if (s as i8) != -56 { return 23 }",
    "if (300 as u8) != 44 { return 24 }",
    "let b: bool = 5 as bool; if (b as i64) != 1 { return 25 }",
    "let x: i64 = 6; if (x & 3) != 2 || (x | 1) != 7 || (x ^ 5) != 3 || ~x != -7 { return 26 }",
    "let x: i64 = 0; if !(x == 0 && true) { return 27 }",
    "var x: i64 = 10; x += 5; x -= 3; x *= 2; x /= 4; x %= 4; x <<= 3; x >>= 1; x |= 1; x &= 7; x ^= 2; if x != 3 { return 28 }",
    "let x: i32 = -5; if -x != 5 { return 29 }",
    "let m: i64 = 0x8000000000000000; if -m != m { return 30 }",
]


def test_integer_semantics(write_nx):
    body = "\n".join("    { " + c + " }" for c in INTEGER_CHECKS) + "\n    return 0"
    outcome = gate(write_nx, body)
    assert outcome.status == "PASS", (outcome.value, outcome.message)


def test_control_flow_and_scopes(write_nx):
    outcome = gate(write_nx, """
    var total: i64 = 0
    var i: i64 = 0
    while i < 10 {
        i = i + 1
        if i == 3 { continue }
        if i == 8 { break }
        var d: i64 = i
        total = total + d
    }
    if total != 25 { return 1 }
    var x: i64 = 1
    {
        var x: i64 = 2
        x = x + 1
        if x != 3 { return 2 }
    }
    if x != 1 { return 3 }
    if x > 5 { return 4 } else if x == 1 { x = 9 } else { return 5 }
    if x != 9 { return 6 }
    let shadow: i64 = x
    {
        let shadow: i64 = shadow + 1
        if shadow != 10 { return 7 }
    }
    return 0""")
    assert outcome.status == "PASS", outcome


def test_pointers_structs_and_memory(write_nx):
    outcome = gate(write_nx, """
    let p: *i64 = sys_mmap(64) as *i64
    p[0] = 5; p[1] = 7
    if p[0] + p[1] != 12 { return 1 }
    let q: *i64 = &p[1]
    *q = 9
    if p[1] != 9 { return 2 }
    let b: *u8 = p as *u8
    b[0] = 0xFF
    if p[0] != 0xFF { return 3 }
    let n: *Node = sys_mmap(sizeof(Node) * 2) as *Node
    n.value = 3
    n.inner.tag = 200
    n[1].value = 4
    n.next = &n[1]
    if n.next.value != 4 { return 4 }
    if n.inner.tag != 200 { return 5 }
    let t: *u8 = &n.inner.tag
    if *t != 200 { return 6 }
    if ((&n[1]) as i64) - (n as i64) != sizeof(Node) { return 7 }
    if n.next == (0 as *Node) { return 8 }
    let v: *void = n
    if (v as *Node) != n { return 9 }
    if sys_munmap(p, 64) != 0 { return 10 }
    return 0""", prelude="""
extern func sys_mmap(nbytes: i64) -> *void
extern func sys_munmap(p: *void, nbytes: i64) -> i64
struct Inner { tag: u8, pad: i32 }
struct Node { value: i64, inner: Inner, next: *Node }
""")
    assert outcome.status == "PASS", outcome


def test_names_that_collide_with_c_and_libc(write_nx):
    outcome = gate(write_nx, """
    let int: i64 = 2
    let char: i64 = 3
    if exp(int) != 4 { return 1 }
    if free(char) != 4 { return 2 }
    if printf(1) != 1 { return 3 }
    let malloc: i64 = abort(int, char)
    return malloc - 5""", prelude="""
var errno: i64 = 0
func exp(x: i64) -> i64 { return x * x }
func free(x: i64) -> i64 { return x + 1 }
func printf(x: i64) -> i64 { return x }
func abort(long: i64, double: i64) -> i64 { errno = long + double; return errno }
""")
    assert outcome.status == "PASS", outcome


def test_left_to_right_evaluation_with_side_effects(write_nx):
    outcome = gate(write_nx, """
    counter = 0
    let a: i64 = tick(1) * 10 + tick(2)
    if a != 12 { return 1 }
    if pair(tick(3), tick(4)) != 34 { return 2 }
    return 0""", prelude="""
var counter: i64 = 0
func tick(x: i64) -> i64 { counter = counter * 10 + x; return counter % 10 }
func pair(a: i64, b: i64) -> i64 { return a * 10 + b }
""")
    assert outcome.status == "PASS", outcome


def test_failing_gate_names_value_and_line(write_nx):
    path = write_nx("""
        func main() -> i64 {
            let four: i64 = 2 + 2
            if four != 5 { return 42 }
            return 0
        }
    """)
    outcome = run_c(path)
    assert outcome.status == "FAIL" and outcome.value == 42
    assert outcome.gate_return.node.pos.line == 3


def test_division_by_zero_is_a_located_runtime_error(write_nx):
    outcome = gate(write_nx, "    let z: i64 = 0\n    return 10 / z")
    assert outcome.status == "RUNTIME-ERROR"
    assert outcome.message.endswith(":3:15: runtime error: division by zero")


def test_null_write_crashes_only_the_child(write_nx):
    path = write_nx("\nfunc main() -> i64 {\n    let p: *i64 = 0 as *i64\n    p[0] = 1\n    return 0\n}\n")
    outcome = run_c(path, checked=False)
    assert outcome.status == "CRASH" and outcome.message == "SIGSEGV"
    # ... and the checked run again says where
    assert ":5: runtime error: write of i64 through a null pointer (address 0x0)" in outcome.detail


def test_hang_times_out(write_nx):
    outcome = run_c(write_nx("func main() -> i64 {\n    var i: i64 = 0\n    while true { i = i + 1 }\n}\n"),
                    timeout=1.0)
    assert outcome.status == "TIMEOUT"


def test_line_directives_point_at_nx_source(write_nx):
    path = write_nx("func main() -> i64 {\n    let a: i64 = 1\n    return a\n}\n")
    text = emit_c(check_file(path, diags=Diagnostics())).text
    assert f'#line 2 "{os.path.realpath(path)}"' in text
    assert "-ffast-math" not in text


def test_second_build_is_cached_and_import_change_rebuilds(write_nx):
    write_nx("const K: i64 = 1\n", name="dep.nx")
    path = write_nx('import "dep.nx"\nfunc main() -> i64 { return K - 1 }\n')
    first = build(emit_c(check_file(path, diags=Diagnostics())))
    second = build(emit_c(check_file(path, diags=Diagnostics())))
    assert second.cached and second.path == first.path
    write_nx("const K: i64 = 2\n", name="dep.nx")
    third = build(emit_c(check_file(path, diags=Diagnostics())))
    assert not third.cached and third.path != first.path


def test_build_cache_is_bounded_least_recently_used_first(write_nx, monkeypatch, tmp_path):
    from nxc import paths
    from nxc.backend.c import build as build_c
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(build_c, "MAX_BUILDS", 4)
    monkeypatch.setattr(paths, "PRUNE_EVERY", 1)
    emitted = [emit_c(check_file(write_nx(f"func main() -> i64 {{ return {i} - {i} }}\n", name=f"b{i}.nx"),
                                 diags=Diagnostics())) for i in range(8)]
    built = [build(e) for e in emitted[:4]]
    for e in emitted[4:]:
        assert build(emitted[0]).cached          # keeps the first one in use
        build(e)
    folder = os.path.dirname(built[0].path)
    kept = [f for f in os.listdir(folder) if f.startswith("_nx_") and f.endswith(".so")]
    assert 3 <= len(kept) <= 5
    assert os.path.isfile(built[0].path)            # used all along: kept
    assert not os.path.isfile(built[1].path)        # built early, never used again: gone
    assert not build(emitted[1]).cached             # and simply built again


def test_cli_run_exit_status_and_fail_line(write_nx):
    path = write_nx("func main() -> i64 {\n    if 1 + 1 == 2 { return 7 }\n    return 0\n}\n")
    # run from the file's folder: the message names the path as the user typed it
    proc = subprocess.run([sys.executable, "-m", "nxc", "run", "t.nx"], capture_output=True, text=True,
                          cwd=os.path.dirname(path))
    assert proc.returncode == 1            # a failing gate; its value is printed
    assert "FAIL main returned 7 at t.nx:2\n" in proc.stderr, proc.stderr
    assert "if 1 + 1 == 2 { return 7 }" in proc.stderr


def test_cli_value_outside_exit_range(write_nx):
    path = write_nx("func main() -> i64 { return 1000 }\n")
    proc = subprocess.run([sys.executable, "-m", "nxc", "run", path], capture_output=True, text=True)
    assert proc.returncode == 1 and "FAIL main returned 1000" in proc.stderr


def test_cli_compile_error_has_no_traceback(write_nx):
    path = write_nx("func main() -> i64 { return nope }\n")
    proc = subprocess.run([sys.executable, "-m", "nxc", "run", path], capture_output=True, text=True)
    assert proc.returncode == 3            # a compile error, told apart from a failing gate
    assert ":1:29: error: undefined name 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv", [["run"], ["run", "/no/such/file.nx"], ["frobnicate"],
                                  ["run", "x.nx", "--backend", "java"], ["run", "x.nx", "--timeout", "abc"]])
def test_cli_bad_arguments(argv):
    proc = subprocess.run([sys.executable, "-m", "nxc", *argv], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and proc.stderr.strip()


def test_cli_help_and_version():
    for argv in (["--help"], ["run", "--help"], ["check", "--help"], ["emit-c", "--help"], ["--version"]):
        proc = subprocess.run([sys.executable, "-m", "nxc", *argv], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.strip()
