"""issue 15 (6), (10), (11): the runner cleans up, skips special files,
captures gate output, bounds gate memory, and writes valid JUnit."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from xml.etree import ElementTree as ET

import pytest

from nx_gate_fixtures import GREEDY
from runner_processes import alive, describe, group, kill_group, wait_for_two_gates, wait_until_gone

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


def _nxc(*args, cwd=None, timeout=600):      # a hang guard, not a time limit: loaded machines are slow
    return subprocess.run([sys.executable, "-m", "nxc", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal and /proc are Linux's")


@LINUX_ONLY
def test_workers_and_gates_end_when_the_runner_is_killed(tmp_path):
    # Before: after SIGKILL of `nxc test -j 2` its workers lived on forever
    # (each held its peer's pipe end, so none saw EOF).
    for i in range(4):
        (tmp_path / f"loop{i}.nx").write_text(LOOP)
    # --timeout longer than any wait here: no gate ends on its own.
    proc = subprocess.Popen([sys.executable, "-m", "nxc", "test", "-q", "-j", "2", "--timeout", "900", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        workers, gates = wait_for_two_gates(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        left = wait_until_gone(workers | gates)
        assert not left, f"alive after the runner's SIGKILL: {describe(proc.pid)}"
        assert wait_until_gone(group(proc.pid)) == set(), describe(proc.pid)
    finally:
        kill_group(proc.pid)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# A worker, as the runner's are: it runs a gate through run_isolated, whose
# child is slowed between the fork and arming its parent-death signal until
# the worker is gone (what a SIGKILL of the runner does to its workers).
LATE_CHILD = """
import os, sys, time
from nxc.gates import isolate
folder, worker = sys.argv[1], os.getpid()
real = isolate.die_with_parent

def late():
    with open(os.path.join(folder, "gate.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(folder, "gate.tmp"), os.path.join(folder, "gate.pid"))
    while os.getppid() == worker:
        time.sleep(0.01)
    real()

def gate():
    open(os.path.join(folder, "ran"), "w").close()
    while True:
        time.sleep(0.05)

isolate.die_with_parent = late
isolate.run_isolated(gate, timeout=None)
"""


@LINUX_ONLY
def test_a_gate_whose_worker_dies_as_it_is_forked_does_not_run(tmp_path):
    # Before: a gate forked just before its worker was killed armed its
    # parent-death signal only after the worker was gone; it then ran, and
    # spun with no one left to stop it (found killing `nxc test -j 2`).
    proc = subprocess.Popen([sys.executable, "-c", LATE_CHILD, str(tmp_path)], start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "gate.pid").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        gate = int((tmp_path / "gate.pid").read_text())
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 60
        while alive(gate) and not (tmp_path / "ran").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (tmp_path / "ran").exists(), "the gate ran after its worker died"
        assert not alive(gate)
    finally:
        kill_group(proc.pid)


def test_special_files_are_skipped_with_a_note(tmp_path):
    # Before: a FIFO named p.nx hung the collection; z.nx -> /dev/zero read without bound.
    (tmp_path / "ok.nx").write_text("func main() -> i64 { return 0 }\n")
    os.mkfifo(tmp_path / "p.nx")
    os.symlink("/dev/zero", tmp_path / "z.nx")
    os.symlink(tmp_path / "missing.nx", tmp_path / "broken.nx")
    proc = _nxc("test", "-q", str(tmp_path), timeout=600)     # a hang guard: generous for a loaded machine
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


def _touch(nbytes: int) -> int:
    """In the child: nbytes of fresh memory, one write a page, then done at once."""
    block = bytearray(nbytes)
    for i in range(0, nbytes, 4096):
        block[i] = 1
    return len(block)


@LINUX_ONLY
def test_a_child_that_grew_past_the_limit_between_two_looks_is_over_it(monkeypatch):
    # Before: the limit was only looked at every 20 ms, so a gate that touched 64 MiB and ended
    # sooner passed under --memory-limit 16M (tests/test_result_key.py's reproducer failed in a
    # clean CI run). No look here at all: the child's peak must tell.
    from nxc.gates import isolate
    monkeypatch.setattr(isolate, "MEMORY_POLL_SECONDS", 3600.0)
    ended = isolate.run_isolated(lambda: _touch(64 << 20), timeout=60, memory_limit=16 << 20)
    assert ended.kind == "memory" and "more than 16 MiB of memory at its peak" in ended.message, ended
    assert isolate.run_isolated(lambda: _touch(64 << 20), timeout=60, memory_limit=256 << 20).kind == "ok"


@LINUX_ONLY
def test_the_limit_is_on_what_the_child_adds_to_its_parent(monkeypatch):
    # The child starts with its parent's resident pages (this test process: far more than 16 MiB);
    # a child that adds 1 MiB is within a 16 MiB limit, by a look while it runs or by its peak.
    from nxc.gates import isolate
    assert isolate.resident_bytes(os.getpid()) > 16 << 20
    for poll in (0.001, 3600.0):
        monkeypatch.setattr(isolate, "MEMORY_POLL_SECONDS", poll)
        ended = isolate.run_isolated(lambda: (_touch(1 << 20), time.sleep(0.05))[0], timeout=60,
                                     memory_limit=16 << 20)
        assert ended.kind == "ok" and ended.value == 1 << 20, (poll, ended)


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
    # Refused before running: had it run, the looping gate would end as a
    # TIMEOUT (status 1, not 2), so the bound only guards against a hang.
    proc = _nxc("test", "--junit-xml", str(tmp_path), str(gate), timeout=600)
    assert proc.returncode == 2 and "is a folder" in proc.stderr and "Traceback" not in proc.stderr


def test_junit_xml_is_valid_with_control_characters_in_quoted_lines(tmp_path):
    gate = tmp_path / "g.nx"
    gate.write_text("func main() -> i64 {\n    return nope // \x01\x02\x1b[31m\x7f\n}\n")
    xml = tmp_path / "out.xml"
    _nxc("test", "-q", "--junit-xml", str(xml), str(gate))
    root = ET.parse(xml).getroot()              # before: not well-formed
    assert root.find(".//error") is not None
