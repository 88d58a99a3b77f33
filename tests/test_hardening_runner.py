"""issue 15 (6), (10), (11): the runner cleans up, skips special files,
captures gate output, bounds gate memory, and writes valid JUnit."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from xml.etree import ElementTree as ET

import pytest

WRITER = """\
import "nx_syscalls.nx"
func main() -> i64 {
    let p: *u8 = sys_mmap(8) as *u8
    p[0] = 104 as u8
    p[1] = 105 as u8
    p[2] = 10 as u8
    sys_write(1, p as *void, 3)
    sys_write(2, p as *void, 2)
    return 3
}
"""
LOOP = "func main() -> i64 {\n    while true { }\n    return 0\n}\n"
GREEDY = """\
import "nx_syscalls.nx"
func main() -> i64 {
    let n: i64 = 1073741824
    let p: *u8 = sys_mmap(n) as *u8
    if p == 0 as *u8 { return 1 }
    var i: i64 = 0
    while i < n { p[i] = 1 as u8; i = i + 4096 }
    return 0
}
"""


def _nxc(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "nxc", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def _group(pgid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(entry))
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal and /proc are Linux's")
def test_workers_and_gates_end_when_the_runner_is_killed(tmp_path):
    # Before: after SIGKILL of `nxc test -j 2` its workers lived on forever
    # (each held its peer's pipe end, so none saw EOF).
    for i in range(4):
        (tmp_path / f"loop{i}.nx").write_text(LOOP)
    proc = subprocess.Popen([sys.executable, "-m", "nxc", "test", "-q", "-j", "2", "--timeout", "300", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # Generous: on a loaded machine two cold gate builds can take a while (it ends once both run).
        deadline = time.monotonic() + 180
        while len(_group(proc.pid)) < 5 and time.monotonic() < deadline:     # runner, 2 workers, 2 gates
            time.sleep(0.1)
        assert len(_group(proc.pid)) >= 5
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20
        while _group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _group(proc.pid)
        assert left == []
    finally:
        for pid in _group(proc.pid):        # whatever happened, leave no spinning gate to the rest of the suite
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_special_files_are_skipped_with_a_note(tmp_path):
    # Before: a FIFO named p.nx hung the collection; z.nx -> /dev/zero read without bound.
    (tmp_path / "ok.nx").write_text("func main() -> i64 { return 0 }\n")
    os.mkfifo(tmp_path / "p.nx")
    os.symlink("/dev/zero", tmp_path / "z.nx")
    os.symlink(tmp_path / "missing.nx", tmp_path / "broken.nx")
    proc = _nxc("test", "-q", str(tmp_path), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    for name, why in (("p.nx", "a FIFO"), ("z.nx", "a character device"), ("broken.nx", "cannot be read")):
        assert f"skipped '{tmp_path / name}'" in proc.stderr or f"skipped '{name}'" in proc.stderr
        assert why in proc.stderr


@pytest.mark.parametrize("backend", ["c", "py"])
def test_gate_output_is_captured_and_never_mixed_into_json(tmp_path, backend):
    # Before: sys_write went straight to nxc's stdout and corrupted --json.
    gate = tmp_path / "w.nx"
    gate.write_text(WRITER)
    proc = _nxc("test", "--json", "--backend", backend, str(gate))
    lines = proc.stdout.splitlines()
    assert lines and all(json.loads(line) for line in lines)
    [result] = [r for r in map(json.loads, lines) if r.get("event") == "result"]
    assert result["status"] == "FAIL" and "hi\n" in result["output"] and "hi" in result["report"]
    xml = tmp_path / "out.xml"
    proc = _nxc("test", "-q", "--backend", backend, "--junit-xml", str(xml), str(gate))
    assert "hi" in proc.stdout.split("FAILURES")[1]
    case = ET.parse(xml).getroot().find(".//testcase")
    assert "hi" in case.find("system-out").text


@pytest.mark.parametrize("backend", ["c", "py"])
def test_memory_limit_is_its_own_outcome(tmp_path, backend):
    # Before: nothing bounded a gate's memory (3 GB ran at 3.1 GB, 6.3 GB on py).
    gate = tmp_path / "greedy.nx"
    gate.write_text(GREEDY)
    proc = _nxc("test", "--json", "--backend", backend, "--memory-limit", "256M", str(gate), timeout=300)
    [result] = [r for r in map(json.loads, proc.stdout.splitlines()) if r.get("event") == "result"]
    assert result["status"] == "MEMORY-LIMIT", result
    assert "256 MiB" in result["message"] and proc.returncode == 1
    assert "1 over the memory limit" in proc.stderr


def test_memory_limit_zero_is_none_and_bad_sizes_are_usage_errors(tmp_path):
    gate = tmp_path / "g.nx"
    gate.write_text("func main() -> i64 { return 0 }\n")
    assert _nxc("test", "-q", "--memory-limit", "0", str(gate)).returncode == 0
    for bad in ("lots", "-1G", "nanG"):
        proc = _nxc("test", "--memory-limit", bad, str(gate))
        assert proc.returncode == 2 and "--memory-limit" in proc.stderr and "Traceback" not in proc.stderr


def test_junit_xml_to_a_folder_is_refused_before_running(tmp_path):
    gate = tmp_path / "g.nx"
    gate.write_text(LOOP)
    proc = _nxc("test", "--junit-xml", str(tmp_path), str(gate), timeout=30)
    assert proc.returncode == 2 and "is a folder" in proc.stderr and "Traceback" not in proc.stderr


def test_junit_xml_is_valid_with_control_characters_in_quoted_lines(tmp_path):
    gate = tmp_path / "g.nx"
    gate.write_text("func main() -> i64 {\n    return nope // \x01\x02\x1b[31m\x7f\n}\n")
    xml = tmp_path / "out.xml"
    _nxc("test", "-q", "--junit-xml", str(xml), str(gate))
    root = ET.parse(xml).getroot()              # before: not well-formed
    assert root.find(".//error") is not None
