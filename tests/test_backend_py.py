"""The Python backend: checked memory, located run-time errors, emit-py, gates.

Every fault the Python backend catches must stop the program with
`path:line:col: runtime error: ...` naming the .nx line, never a Python
traceback: a null write, an out-of-bounds read, a use after sys_munmap, a
division by zero (and the other checks: misaligned access, wild pointers far
outside the arena, a bad or double sys_munmap, deep recursion).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from nxc.cli import main as cli_main
from nxc.diagnostics import Diagnostics
from nxc.backend.py.emit import emit_py
from nxc.check.frontend import check_file
from nxc.backend.registry import backend_for
from nxc.gates.protocol import Status
from nxc.gates.run import execute
from nxc.backend.py.run import runtime_modules
from load_bounds import GATE_BOUND

PASS, FAIL, ERROR, TIMEOUT = Status.PASS, Status.FAIL, Status.RUNTIME_ERROR, Status.TIMEOUT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NX_SRC = os.path.join(ROOT, "nx_src")


def program_of(path: str):
    return check_file(path, diags=Diagnostics(warnings=False))


def run_py(path: str, **kw):
    kw.setdefault("timeout", GATE_BOUND)
    return execute(program_of(path), "py", **kw)[0]


def gate(write_nx, body: str, prelude: str = 'import "nx_syscalls.nx"\n', name: str = "t.nx"):
    """A gate whose body starts on line 3 of the file (prelude is one line)."""
    return write_nx(prelude + "func main() -> i64 {\n" + body + "\n}\n", name=name)


def assert_located(outcome, path: str, line: int, pattern: str):
    assert outcome.status == ERROR, (outcome.status, outcome.value, outcome.message)
    msg = outcome.message
    m = re.match(r"(.+):(\d+):(\d+): runtime error: (.*)$", msg, re.S)
    assert m, msg
    assert os.path.samefile(m.group(1), path), msg
    assert int(m.group(2)) == line, msg
    assert re.search(pattern, m.group(4)), msg
    assert "Traceback" not in msg
    return m


# ---------------------------------------------------------------- the four required faults
def test_null_write_is_a_located_runtime_error(write_nx):
    path = gate(write_nx, """    let p: *i64 = 0 as *i64
    p[2] = 5
    return 0""")
    assert_located(run_py(path), path, 4, r"write of i64 through a null pointer \(address 0x10\)")


def test_out_of_bounds_read_is_a_located_runtime_error(write_nx):
    path = gate(write_nx, """    let p: *i64 = sys_mmap(4 * 8) as *i64
    var s: i64 = 0
    var i: i64 = 0
    while i <= 4 {
        s = s + p[i]
        i = i + 1
    }
    return s""")
    m = assert_located(run_py(path), path, 7, r"out-of-bounds read of i64 at 0x[0-9a-f]+: offset 32 of the "
                                              r"32-byte mapping at 0x[0-9a-f]+ \(mapped at .*t\.nx:3:19\)")
    assert m.group(3) == "17"          # the column of `p[i]`


def test_use_after_unmap_is_a_located_runtime_error_distinct_from_a_wild_pointer(write_nx):
    path = gate(write_nx, """    let p: *i64 = sys_mmap(64) as *i64
    p[0] = 1
    sys_munmap(p, 64)
    return p[0]""")
    assert_located(run_py(path), path, 6, r"read of i64 at 0x[0-9a-f]+ after sys_munmap: .*unmapped at .*t\.nx:5:5")
    wild = gate(write_nx, """    let p: *i64 = 0x123456789 as *i64
    return p[0]""", name="wild.nx")
    assert_located(run_py(wild), wild, 4, r"outside any mapping")


def test_division_by_zero_is_a_located_runtime_error(write_nx):
    path = gate(write_nx, """    let a: i64 = 7
    let b: i64 = a - 7
    return a / b""")
    m = assert_located(run_py(path), path, 5, r"^division by zero$")
    assert m.group(3) == "14"          # the `/`
    rem = gate(write_nx, """    var a: u8 = 7
    let b: u8 = 0
    a %= b
    return a as i64""", name="rem.nx")
    assert_located(run_py(rem), rem, 5, r"^remainder by zero$")


def test_the_cli_prints_the_located_error_and_no_traceback(write_nx, capsys):
    path = gate(write_nx, """    let p: *i64 = 0 as *i64
    p[0] = 1
    return 0""")
    assert cli_main(["run", "--backend", "py", path]) == 4         # a run-time error's exit status
    err = capsys.readouterr().err
    assert re.search(r"RUNTIME-ERROR .*t\.nx:4:5: runtime error: write of i64 through a null pointer", err), err
    assert re.search(r"^  at .*t\.nx:4:5 in main$", err, re.M), err
    assert "Traceback" not in err


def test_same_faults_on_the_c_backend_are_not_silently_passed(write_nx):
    # The default (checked) C backend stops at the same fault as the Python backend.
    path = gate(write_nx, """    let p: *i64 = sys_mmap(16) as *i64
    sys_munmap(p, 16)
    p[0] = 3
    return 0""")
    outcomes = execute(program_of(path), "both", timeout=GATE_BOUND)
    assert outcomes[0].status == outcomes[1].status == ERROR
    assert "after sys_munmap" in outcomes[0].message and "after sys_munmap" in outcomes[1].message


# ---------------------------------------------------------------- the other checks
@pytest.mark.parametrize("body, line, pattern", [
    ("    let p: *i64 = sys_mmap(16) as *i64\n    let q: *i64 = ((p as i64) + 4) as *i64\n    return q[0]",
     5, r"misaligned read of i64 at 0x[0-9a-f]+: the address is not a multiple of 8"),
    ("    let p: *u16 = sys_mmap(7) as *u16\n    p[3] = 1\n    return 0",
     4, r"out-of-bounds write of u16 at .*offset 6 of the 7-byte mapping"),
    ("    let p: *i32 = sys_mmap(8) as *i32\n    return p[-1] as i64",
     4, r"out-of-bounds read of i32 .*4 byte\(s\) before the start of the 8-byte mapping"),
    ("    let p: *i64 = 0xFFFFFFFF00000000 as *i64\n    return p[1]",
     4, r"read of i64 at 0xffffffff00000008: the address is outside any mapping"),
    ("    let p: *i64 = 0 as *i64\n    return p[-2]",
     4, r"read of i64 through a null pointer \(address 0xfffffffffffffff0, null - 16\)"),
    ("    let p: *i64 = sys_mmap(16) as *i64\n    let n: i64 = 0x1000000000000000\n    p[n * 3] = 1\n    return 0",
     5, r"write of i64 at 0x[0-9a-f]+: the address is outside any mapping"),
    ("    let p: *i64 = sys_mmap(16) as *i64\n    sys_munmap(p, 16)\n    sys_munmap(p, 16)\n    return 0",
     5, r"sys_munmap of 0x[0-9a-f]+: the 16-byte mapping there was already unmapped at .*:4:"),
    ("    let p: *i64 = sys_mmap(16) as *i64\n    sys_munmap(&p[1], 16)\n    return 0",
     4, r"not the start of a mapping \(it is 8 bytes into the 16-byte mapping"),
    ("    let b: *u8 = sys_mmap(4) as *u8\n    sys_write(1, b, 5)\n    return 0",
     4, r"sys_write: out-of-bounds read of u8 .*: offset 4 of the 4-byte mapping"),
    ("    let p: *bool = 0 as *bool\n    if p[0] { return 1 }\n    return 0",
     4, r"read of bool through a null pointer"),
])
def test_every_kind_of_bad_access_is_located(write_nx, body, line, pattern):
    path = gate(write_nx, body)
    assert_located(run_py(path), path, line, pattern)


def test_faults_inside_called_functions_and_struct_fields(write_nx):
    path = write_nx("""import "nx_syscalls.nx"
struct S { a: i64, b: *S }
func depth(s: *S) -> i64 {
    return s.b.a
}
func main() -> i64 {
    let s: *S = sys_mmap(sizeof(S)) as *S
    return depth(s)
}
""")
    assert_located(run_py(path), path, 4, r"read of i64 through a null pointer \(address 0x0\)")


def test_runaway_recursion_is_a_located_stack_overflow(write_nx):
    path = write_nx("""func down(n: i64) -> i64 {
    return down(n + 1) + 1
}
func main() -> i64 { return down(0) }
""")
    assert_located(run_py(path, timeout=120), path, 2, r"stack overflow")


def test_a_gate_past_the_timeout_is_stopped(write_nx):
    path = gate(write_nx, """    var i: i64 = 0
    while true { i = i + 1 }""")
    assert run_py(path, timeout=1.0).status == TIMEOUT


# ---------------------------------------------------------------- memory semantics
def test_sys_mmap_zeroed_distinct_aligned_and_impossible_sizes_give_zero(write_nx):
    path = gate(write_nx, """    let p: *i64 = sys_mmap(64) as *i64
    let q: *i64 = sys_mmap(3) as *i64
    if (p as i64) == 0 || (q as i64) == 0 || p == q { return 1 }
    if ((p as i64) & 15) != 0 || ((q as i64) & 15) != 0 { return 2 }
    if p[7] != 0 { return 3 }
    if (sys_mmap(0x4000000000000) as i64) != 0 { return 4 }     // 1 PiB
    if (sys_mmap(0) as i64) != 0 || (sys_mmap(-1) as i64) != 0 { return 5 }
    if sys_munmap(p, 64) != 0 || sys_munmap(0 as *void, 8) != 0 { return 6 }
    let r: *i64 = sys_mmap(64) as *i64
    if r == p { return 7 }                                       // addresses are never reused
    return 0""")
    assert run_py(path).status == PASS


def test_runtime_memory_directly():
    mem = runtime_modules()[1]
    rt = mem.Runtime()
    a = rt.sys_mmap(20)
    assert a >= mem.NULL_GUARD and a % 16 == 0
    # low nibble: the loads that may start there; high nibble: the stores (sys_mmap memory: the same)
    assert rt.shadow[a] == 0xFF and rt.shadow[a + 16] == 0x77 and rt.shadow[a + 17] == 0x11 and rt.shadow[a + 20] == 0
    rt.write_bytes(a, b"\x01\x02")
    assert rt.read_bytes(a, 3) == b"\x01\x02\x00"
    assert rt.views["h"][a // 2] == 0x0201
    with pytest.raises(mem.NxRuntimeError):
        rt.read_bytes(a + 16, 8)
    assert rt.sys_munmap(a, 20) == 0 and rt.shadow[a] == 0
    assert rt.sys_mmap(1 << 50) == 0
    div, rem = rt.div_fns(64, True)
    assert div(-7, 2, 0) == -3 and rem(-7, 2, 0) == -1 and div(-(1 << 63), -1, 0) == -(1 << 63)
    rt.close()


# ---------------------------------------------------------------- gates and reporting
def test_gate_return_site_and_captured_operands(write_nx):
    path = gate(write_nx, """    let r: i64 = 3
    if r == 2 { return 10 }
    if r != 0 { return 20 }
    return 0""")
    o = run_py(path)
    assert o.status == FAIL and o.value == 20 and o.backend == "py"
    assert o.gate_return.node.pos.line == 5
    assert o.captured == [("r", 3)]


def test_bundled_gates_pass_on_the_python_backend():
    for name in sorted(os.listdir(NX_SRC)):
        if not name.endswith(".nx"):
            continue
        program = program_of(os.path.join(NX_SRC, name))
        if program.entry is None:
            continue
        o = execute(program, "py", timeout=300)[0]
        assert o.status == PASS, (name, o.status, o.value, o.message)


# ---------------------------------------------------------------- emit-py
def test_emit_py_is_readable_python_with_nx_names_and_lines(tmp_path, capsys):
    src = os.path.join(NX_SRC, "nx_f32_attention.nx")
    out = tmp_path / "attention.py"
    assert cli_main(["emit-py", src, "-o", str(out)]) == 0
    text = out.read_text()
    compile(text, str(out), "exec")
    assert re.search(r"^def nx_f32_attention\(Q, K, V, n_tokens, head_dim, scale, out, score_row, prob_row\):"
                     r"  # .*nx_f32_attention\.nx:\d+$", text, re.M)
    assert re.search(r"^def main\(\):", text, re.M)
    assert re.search(r"acc = nx_f32_add\(acc, nx_f32_mul\(", text)
    assert "# line " in text
    assert cli_main(["emit-py", src]) == 0
    assert capsys.readouterr().out == text


def test_emitted_file_runs_standalone(tmp_path):
    out = tmp_path / "tier.py"
    assert cli_main(["emit-py", os.path.join(NX_SRC, "nx_tier.nx"), "-o", str(out)]) == 0
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "PASS" in proc.stdout, proc.stderr


def test_standalone_file_reports_faults_with_the_nx_line(write_nx, tmp_path):
    path = gate(write_nx, """    let p: *i64 = 0 as *i64
    return p[0]""")
    out = tmp_path / "bad.py"
    assert cli_main(["emit-py", path, "-o", str(out)]) == 0
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert re.search(r"t\.nx:4:\d+: runtime error: read of i64 through a null pointer", proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr


def test_names_that_clash_with_python_are_renamed(write_nx):
    path = write_nx("""func lambda(None: i64, _a: i64) -> i64 {
    let _r: i64 = None + _a
    let def: i64 = _r * 2
    return def
}
func main() -> i64 {
    if lambda(3, 4) != 14 { return 1 }
    return 0
}
""")
    program = program_of(path)
    emitted = emit_py(program)
    compile(emitted.text, "x", "exec")
    assert execute(program, "py", timeout=GATE_BOUND)[0].status == PASS


def test_load_py_calls_functions_in_process(write_nx):
    path = write_nx("""import "nx_syscalls.nx"
func fill(p: *i64, n: i64, v: i64) { var i: i64 = 0; while i < n { p[i] = v + i; i = i + 1 } }
func sum(p: *i64, n: i64) -> i64 { var s: i64 = 0; var i: i64 = 0; while i < n { s += p[i]; i = i + 1 }; return s }
func main() -> i64 { return 0 }
""")
    mod = backend_for("py").prepare(program_of(path)).loaded
    p = mod.memory.sys_mmap(80)
    mod.function("fill")(p, 10, 5)
    assert mod.function("sum")(p, 10) == sum(range(5, 15))
    assert mod.memory.read_bytes(p, 8) == (5).to_bytes(8, "little")
    with pytest.raises(runtime_modules()[1].NxRuntimeError, match=r"t\.nx:3:\d+: runtime error: out-of-bounds read"):
        mod.function("sum")(p, 11)
    assert (mod.run_gate().status, mod.run_gate().value) == (PASS, 0)
