"""Warnings: likely mistakes are flagged, and -w silences them."""
from __future__ import annotations

import subprocess
import sys

from nxc.diagnostics import Diagnostics
from nxc.check.frontend import check_file

SOURCE = """func main() -> i64 {
    let unused: i64 = 1
    var used: i64 = 2
    used + 1
    if used > 1 {
        return 1
        used = 3
    }
    return used
}
"""


def test_each_warning_is_located(write_nx):
    diags = Diagnostics()
    check_file(write_nx(SOURCE), diags=diags)
    got = [(w.message, w.pos.line, w.pos.col) for w in diags.warnings]
    assert ("unused variable 'unused'", 2, 9) in got
    assert ("the value of this expression is not used", 4, 10) in got
    assert ("unreachable code", 7, 9) in got
    assert diags.errors == []


def test_no_warn_flag_silences_warnings(write_nx):
    path = write_nx(SOURCE)
    loud = subprocess.run([sys.executable, "-m", "nxc", "check", path], capture_output=True, text=True)
    quiet = subprocess.run([sys.executable, "-m", "nxc", "check", "-w", path], capture_output=True, text=True)
    assert loud.returncode == quiet.returncode == 0
    assert "warning: unused variable 'unused'" in loud.stderr
    assert quiet.stderr == ""


def test_bundled_modules_have_no_warnings():
    import glob
    import os
    from nxc.paths import bundled_dir
    for path in glob.glob(os.path.join(bundled_dir(), "*.nx")):
        diags = Diagnostics()
        check_file(path, diags=diags)
        assert [w.render() for w in diags.warnings] == [], path
