"""One table of exit statuses for every command (docs/errors.md#exit-statuses):
a path that does not exist is 2 (usage) for every command, a module that does
not compile is 3 for every command that compiles one, nothing to run is 2."""
from __future__ import annotations

import subprocess
import sys

import pytest

from nxc.gates import protocol as P

BROKEN = "func main() -> i64 {\n    return coutn\n}\n"


def _nxc(*args, cwd):
    return subprocess.run([sys.executable, "-m", "nxc", *args], capture_output=True, text=True, cwd=cwd)


def test_the_table_has_one_meaning_per_number():
    table = {P.EXIT_OK: 0, P.RUN_FAIL: 1, P.EXIT_USAGE: 2, P.EXIT_COMPILE_ERROR: 3, P.RUN_RUNTIME_ERROR: 4,
             P.RUN_MISMATCH: 5, P.RUN_INTERNAL: 70, P.RUN_TIMEOUT: 124, P.EXIT_INTERRUPTED: 130}
    assert all(k == v for k, v in table.items())
    assert P.EXIT_NO_TESTS == P.EXIT_USAGE != P.RUN_MISMATCH
    assert P.RUN_COMPILE_ERROR == P.EXIT_COMPILE_ERROR and P.RUN_USAGE == P.EXIT_USAGE


@pytest.mark.parametrize("command", [["check"], ["run"], ["run", "--backend", "py"], ["emit-c"], ["emit-py"],
                                     ["info"], ["fmt"], ["fmt", "--check"], ["port", "--check"], ["test"],
                                     ["doc", "-o", "site"]])
def test_a_missing_file_is_a_usage_error_for_every_command(tmp_path, command):
    proc = _nxc(*command, "gone.nx", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "no such file or folder" in proc.stderr and "'gone.nx'" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [["check"], ["run"], ["run", "--backend", "py"], ["emit-c"], ["emit-py"],
                                     ["info"]])
def test_a_compile_error_is_3_for_every_command(tmp_path, command):
    (tmp_path / "t.nx").write_text(BROKEN)
    proc = _nxc(*command, "t.nx", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "t.nx:2:12: error: undefined name 'coutn'" in proc.stderr


def test_a_file_that_does_not_parse_is_3_for_fmt(tmp_path):
    (tmp_path / "t.nx").write_text("func main() -> i64 {\n    return (1 +\n}\n")
    assert _nxc("fmt", "--check", "t.nx", cwd=tmp_path).returncode == 3


def test_nothing_to_run_is_a_usage_error(tmp_path):
    (tmp_path / "lib.nx").write_text("func twice(x: i64) -> i64 {\n    return x * 2\n}\n")
    assert _nxc("run", ".", cwd=tmp_path).returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _nxc("test", cwd=empty).returncode == 2


def test_a_folder_with_a_broken_module_is_1_did_not_pass(tmp_path):
    # several items: 0 only if all passed, else 1, for `run DIR` and `test` alike
    (tmp_path / "t.nx").write_text(BROKEN)
    (tmp_path / "ok.nx").write_text("func main() -> i64 {\n    return 0\n}\n")
    assert _nxc("run", ".", cwd=tmp_path).returncode == 1
    assert _nxc("test", "-q", cwd=tmp_path).returncode == 1
