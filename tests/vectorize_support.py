"""What GCC says it vectorized in a module's C: one helper for the tests that check that a
kernel's loops are vectorized (tests/test_vectorize.py, test_linear_packed.py, test_qgemm.py,
test_silu_lanes.py)."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from nxc.backend.c import build as c_build
from nxc.backend.c.emit import emit_c
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.paths import runtime_dir


def require_gcc() -> str:
    """The C compiler command (without CC's arguments); skips the test unless it is GCC
    (-fopt-info-vec is a GCC option)."""
    cc = c_build.compiler()[0]
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    if "Free Software Foundation" not in version and "GCC" not in version:
        pytest.skip(f"-fopt-info-vec is a GCC option; {cc} is not GCC")
    return cc


def vector_report(path: str, folder, checked: bool = False) -> tuple[set[int], set[int], str]:
    """(the .nx lines of `path` whose loops GCC vectorized, those of the loops it versioned for a
    possible aliasing (a run-time overlap test, and GCC's view that the pointers may be anyone's),
    the object it compiled): the module's C (unchecked, or checked) as one file, compiled with
    nxc's -O2 flags into `folder`."""
    cc = require_gcc()
    stem = os.path.splitext(os.path.basename(path))[0]
    c_file = os.path.join(str(folder), stem + (".checked.c" if checked else ".c"))
    obj = c_file[:-2] + ".o"
    with open(c_file, "w", encoding="utf-8") as f:
        f.write(emit_c(check_file(path, None, Diagnostics(warnings=False)), checked=checked).text)
    proc = subprocess.run([cc, *c_build.flags_for("2"), "-I", runtime_dir(), "-fopt-info-vec-optimized",
                           "-c", c_file, "-o", obj], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    name = re.escape(os.path.basename(path))
    def lines(what: str) -> set[int]:
        return {int(m.group(1)) for m in re.finditer(name + r":(\d+):\d+: optimized:\s+" + what, proc.stderr)}
    return lines("loop vectorized"), lines("loop versioned for vectorization because of possible aliasing"), obj


def vectorized_lines(path: str, folder) -> tuple[set[int], str]:
    """(the .nx lines of `path` whose loops GCC vectorized, the object it compiled): the module's
    unchecked C, as vector_report."""
    vectorized, _, obj = vector_report(path, folder)
    return vectorized, obj


def loop_line(path: str, statement: str) -> int:
    """Line of the `while` that directly encloses the first line containing `statement`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    at = next(i for i, text in enumerate(lines) if statement in text)
    return next(i for i in range(at, -1, -1) if re.match(r"\s*while\b", lines[i])) + 1


def loop_own_lines(path: str, head: int) -> set[int]:
    """The lines of the loop whose `while` is on line `head` of `path` (1-based), less those of
    the loops nested in it: where GCC reports that loop. (A loop vectorized around an inner
    loop, outer-loop vectorization, is reported at a line of its body, not at its `while`; a
    report inside a nested loop is about that loop.)"""
    with open(path, encoding="utf-8") as f:
        text = [line.split("//")[0] for line in f.read().splitlines()]

    def end_of(start: int) -> int:
        depth = 0
        for i in range(start, len(text)):
            depth += text[i].count("{") - text[i].count("}")
            if depth <= 0 and "{" in "".join(text[start:i + 1]):
                return i
        raise AssertionError(f"{path}:{start + 1}: no end of the loop")

    first = head - 1
    last = end_of(first)
    own = set(range(first, last + 1))
    i = first + 1
    while i < last:
        if re.match(r"\s*while\b", text[i]):
            inner_end = end_of(i)
            own -= set(range(i, inner_end + 1))
            i = inner_end
        i += 1
    return {i + 1 for i in own}

