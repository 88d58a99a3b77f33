"""issue 15 (4) and (10): file and folder names never change generated code.

(`python bench/hostile_names.py` runs every command on 25 hostile names; the
non-UTF-8 cases below are what it found.)

A folder or file name holding quotes, newlines, `*/`, `??/`, `#line` or
bytes that are not UTF-8 must compile and run as any other, on both
backends, and nothing in it may run.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nxc.backend.c.emit import emit_c
from nxc.backend.py.emit import emit_py
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute
from load_bounds import GATE_BOUND

GATE = """\
import "lib.nx"
func main() -> i64 {
    if twice(21) != 42 { return 1 }
    return 0
}
"""
LIB = "func twice(x: i64) -> i64 { return x * 2 }\n"


def _hostile_names() -> list[str]:
    """Folder paths that each tried to break out of a comment, string or #line
    (a `/` splits them into folders; the path as a whole holds the text)."""
    py = '__import__("os").system("touch $NX_MARK")'
    c_ctor = f'__attribute__((constructor)) static void nx_evil(void) {{ __builtin_trap(); }}'
    return [
        f'q"uo\'te\n{py}\n# x',                               # the Python comment split (before: ran)
        f'tri??/\n{c_ctor}\n',                                # ??/ + newline closed the #line string
        f'com*/ {c_ctor} /*ment',                             # closes a C comment
        f'back\\\n{py}',                                      # backslash line continuation
        f'#line 1 "evil.c"\n{py}\r{py}\u2028x',
    ]


@pytest.mark.parametrize("index", range(5))
def test_hostile_folder_names_run_and_pass_on_both_backends(tmp_path, monkeypatch, index):
    marker = str(tmp_path / "PWNED")
    monkeypatch.setenv("NX_MARK", marker)
    folder = tmp_path / _hostile_names()[index]
    folder.mkdir(parents=True)            # a `/` in a name above is a folder boundary
    (folder / "lib.nx").write_text(LIB)
    gate = folder / 'g"*\n??=.nx'
    gate.write_text(GATE)
    program = check_file(str(gate), diags=Diagnostics())
    c_text, py_text = emit_c(program).text, emit_py(program).text
    for text in (c_text, py_text):
        # the name's text is only ever inside a string or comment, escaped
        for line in text.splitlines():
            assert not line.lstrip().startswith(("__import__", "__attribute__((constructor))", "#line 1 \"evil")), line
    for backend in ("c", "py"):
        [outcome] = execute(program, backend, opt="0", use_cache=False, timeout=GATE_BOUND)
        assert outcome.status == "PASS", (backend, outcome.status, outcome.message)
    assert not os.path.exists(marker)


def test_hostile_name_failure_is_still_located(tmp_path):
    folder = tmp_path / 'a\n"b'
    folder.mkdir()
    gate = folder / "g.nx"
    gate.write_text("func main() -> i64 {\n    let p: *i64 = 0 as *i64\n    return p[0]\n}\n")
    program = check_file(str(gate), diags=Diagnostics())
    for backend in ("c", "py"):
        [outcome] = execute(program, backend, timeout=GATE_BOUND)
        assert outcome.status in ("RUNTIME-ERROR", "CRASH"), (backend, outcome.status)
        if outcome.status == "RUNTIME-ERROR":
            assert ":3:" in outcome.message


@pytest.mark.parametrize("command", [["run"], ["run", "--backend", "py"], ["check"], ["emit-c"], ["emit-py"],
                                     ["test", "-q"], ["doc", "-o", "site"]])
def test_non_utf8_file_name(tmp_path, command):
    # Before: UnicodeEncodeError tracebacks from the cache key and compile(),
    # and from writing the module's page (nxc doc).
    name = os.fsdecode(b"\xff\xfe-gate.nx")
    path = tmp_path / name
    path.write_text("func main() -> i64 {\n    return 0\n}\n")
    proc = subprocess.run([sys.executable, "-m", "nxc", *command, str(path)], capture_output=True, cwd=tmp_path)
    assert b"Traceback" not in proc.stderr + proc.stdout, (proc.stdout + proc.stderr).decode(errors="replace")
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode(errors="replace")


@pytest.mark.parametrize("command", [["check"], ["run"], ["info"], ["emit-c"], ["emit-py"], ["test", "-q"]])
def test_nul_byte_in_an_import_is_a_located_error(tmp_path, command):
    # Before: `ValueError: embedded null byte` from os.lstat, a traceback.
    path = tmp_path / "t.nx"
    path.write_bytes(b'import "nx_f\x00.nx"\nfunc main() -> i64 {\n    return 0\n}\n')
    proc = subprocess.run([sys.executable, "-m", "nxc", *command, str(path)], capture_output=True, cwd=tmp_path)
    out = (proc.stdout + proc.stderr).decode(errors="replace")
    assert "Traceback" not in out and "internal error" not in out, out
    assert "t.nx:1:1: error: import 'nx_f\\x00.nx': an import name may not hold a NUL byte" in out, out
    assert proc.returncode == (1 if command[0] == "test" else 3)     # test: an item did not pass


@pytest.mark.parametrize("command", [["test", "-q"], ["test", "-j", "2", "--backend", "both", "--json"],
                                     ["doc", "-o", "site"]])
def test_non_utf8_project_folder(tmp_path, command):
    # Before: a UnicodeEncodeError traceback from the last-failed state file's
    # name (nxc test).
    folder = tmp_path / os.fsdecode(b"proj-\xff\xfe")
    folder.mkdir()
    (folder / "lib.nx").write_text(LIB)
    (folder / "g.nx").write_text(GATE)
    (folder / "fails.nx").write_text(GATE.replace("!= 42", "!= 41"))
    proc = subprocess.run([sys.executable, "-m", "nxc", *command, "."], capture_output=True, cwd=folder)
    out = (proc.stdout + proc.stderr).decode(errors="replace")
    assert "Traceback" not in out, out
    if command[0] == "test":
        assert proc.returncode == 1 and "fails.nx" in out, out      # the failing gate, named
    else:
        assert proc.returncode == 0, out
        index = (folder / "site" / "index.html").read_text(encoding="utf-8")
        assert 'href="./g.html"' in index and 'href="./fails.html"' in index


def test_non_utf8_cache_folder(tmp_path):
    # Before: cffi's dlopen could not encode the library's path: every C gate
    # an ERROR (an internal error with a traceback).
    cache = tmp_path / os.fsdecode(b"cache-\xff\xfe")
    (tmp_path / "lib.nx").write_text(LIB)
    (tmp_path / "g.nx").write_text(GATE)
    (tmp_path / "null.nx").write_text("func main() -> i64 {\n    let p: *i64 = 8 as *i64\n    return p[0]\n}\n")
    env = dict(os.environ, NXC_CACHE_DIR=str(cache))
    for command in (["test", ".", "--backend", "both"], ["test", ".", "-j", "2", "--rerun"]):
        proc = subprocess.run([sys.executable, "-m", "nxc", *command], capture_output=True, cwd=tmp_path, env=env)
        out = (proc.stdout + proc.stderr).decode(errors="replace")
        assert proc.returncode == 1 and "Traceback" not in out, out
        assert "null.nx:3:12: runtime error: read of i64 through a null pointer" in out, out
        assert ("4 passed" if "both" in command else "2 passed") in out, out       # the library, the gate
    api = "import nxc; m = nxc.load('lib.nx'); print(m.twice(21))"
    proc = subprocess.run([sys.executable, "-c", api], capture_output=True, cwd=tmp_path, env=env)
    assert proc.stdout == b"42\n", (proc.stdout + proc.stderr).decode(errors="replace")
