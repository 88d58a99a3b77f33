"""issue 15 (10), (11): the tool's edges end in one clear line, never a traceback."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

GATE = "func main() -> i64 {\n    return 0\n}\n"


def _nxc(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "nxc", *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), cwd=cwd)


@pytest.fixture
def gate(tmp_path):
    path = tmp_path / "g.nx"
    path.write_text(GATE)
    return str(path)


@pytest.mark.parametrize("command", [["run", "--no-cache"], ["test", "-q", "--no-cache"]])
def test_missing_compiler_named_in_one_line(gate, command):
    proc = _nxc(*command, gate, env={"CC": "nonexistent-cc"})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Traceback" not in out and "internal error" not in out
    assert "CC='nonexistent-cc'" in out


def test_no_compiler_on_path(gate, tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    proc = _nxc("run", "--no-cache", gate, env={"PATH": str(bare), "CC": ""})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no C compiler" in proc.stderr and "CC" in proc.stderr


def test_cc_with_arguments_works(gate):
    cc = shutil.which("cc") or shutil.which("gcc")
    proc = _nxc("run", "--no-cache", gate, env={"CC": f"{cc} -g -Wno-unused"})
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("where", ["dir", "missing"])
def test_emit_c_to_a_bad_output_path(gate, tmp_path, where):
    target = str(tmp_path) if where == "dir" else str(tmp_path / "missing" / "x.c")
    for command in ("emit-c", "emit-py"):
        proc = _nxc(command, gate, "-o", target)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"nxc: error: cannot write '{target}'")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "soon", "1e20", "1000001"])
@pytest.mark.parametrize("command", ["run", "test"])
def test_timeout_must_be_positive_and_finite(gate, command, value):
    proc = _nxc(command, "--timeout", value, gate)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--timeout" in proc.stderr.splitlines()[-1]


@pytest.mark.parametrize("name", ["/etc/passwd", "../../../../../../etc/passwd", "lib/../../x.nx", "notes.txt"])
def test_import_outside_the_search_folders_is_refused_unquoted(tmp_path, name):
    path = tmp_path / "sub" / "t.nx"
    path.parent.mkdir()
    (tmp_path / "x.nx").write_text("this is not nx and must never be quoted\n")
    (tmp_path / "sub" / "notes.txt").write_text("secret notes\n")
    path.write_text(f'import "{name}"\nfunc main() -> i64 {{ return 0 }}\n')
    proc = _nxc("check", str(path))
    assert proc.returncode == 3     # a compile error (docs/errors.md#exit-statuses)
    assert proc.stderr.splitlines()[0].startswith(f"{path}:1:1: error: import \"{name}\"")
    assert "root:" not in proc.stderr and "never be quoted" not in proc.stderr and "secret" not in proc.stderr


def test_generated_c_refuses_to_compile_without_the_flags(gate, tmp_path):
    out = tmp_path / "g.c"
    assert _nxc("emit-c", gate, "-o", str(out)).returncode == 0
    from nxc.paths import runtime_dir
    cc = shutil.which("cc") or shutil.which("gcc")
    bare = subprocess.run([cc, "-std=c11", "-c", "-I", runtime_dir(), str(out), "-o", str(tmp_path / "g.o")],
                          capture_output=True, text=True)
    assert bare.returncode != 0 and "-fwrapv" in bare.stderr
    flagged = subprocess.run([cc, "-std=c11", "-fwrapv", "-fno-strict-aliasing", "-ffp-contract=off",
                              "-DNX_FLAGS_CHECKED", "-c", "-I", runtime_dir(), str(out), "-o", str(tmp_path / "g.o")],
                             capture_output=True, text=True)
    assert flagged.returncode == 0, flagged.stderr


def _ubsan_works(tmp_path) -> bool:
    cc = shutil.which("cc") or shutil.which("gcc")
    src = tmp_path / "u.c"
    src.write_text("int main(void) { return 0; }\n")
    return subprocess.run([cc, "-fsanitize=undefined", str(src), "-o", str(tmp_path / "u")],
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("opt", ["0", "2"])
def test_bool_byte_holding_two_is_clean_under_ubsan(tmp_path, opt):
    # Before: UBSan "load of value 2, which is not a valid value for type '_Bool'".
    if not _ubsan_works(tmp_path):
        pytest.skip("the C compiler has no UndefinedBehaviorSanitizer")
    cc = shutil.which("cc") or shutil.which("gcc")
    gate = os.path.join(os.path.dirname(__file__), "regressions", "bool_byte_holding_two.nx")
    proc = _nxc("run", "--opt", opt, gate, env={"CC": f"{cc} -fsanitize=undefined -fno-sanitize-recover=all",
                                                "NXC_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert "runtime error" not in proc.stderr
