"""Warnings: likely mistakes are flagged, and -w silences them."""
from __future__ import annotations

import os
import subprocess
import sys

from nxc.diagnostics import Diagnostics
from nxc.check.frontend import check_file

# Where each warning points is data: tests/diagnostics/warnings/*.nx, run by
# test_diagnostics_data.py. Here: the -w flag and the bundled modules.
SOURCE = os.path.join(os.path.dirname(__file__), "diagnostics", "warnings", "likely_mistakes.nx")


def test_no_warn_flag_silences_warnings():
    path = SOURCE
    loud = subprocess.run([sys.executable, "-m", "nxc", "check", path], capture_output=True, text=True)
    quiet = subprocess.run([sys.executable, "-m", "nxc", "check", "-w", path], capture_output=True, text=True)
    assert loud.returncode == quiet.returncode == 0
    assert "warning: unused variable 'unused'" in loud.stderr
    assert quiet.stderr == ""


def test_bundled_modules_have_no_warnings():
    import glob
    from nxc.paths import bundled_dir
    for path in glob.glob(os.path.join(bundled_dir(), "*.nx")):
        diags = Diagnostics()
        check_file(path, diags=diags)
        assert [w.render() for w in diags.warnings] == [], path
