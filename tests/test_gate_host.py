"""issue 21 (i21k): C gates' children forked by a small gate host, not by the
worker (nxc/gates/host.py). Every outcome must come out exactly as when the
worker forks the child itself; a host that dies is noticed and replaced; a
killed runner leaves neither hosts nor their children behind."""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from nx_gate_fixtures import GREEDY, write_tree
from bench_modules import timed_apart
from runner_processes import processes
from nxc.backend.c import gate_child
from nxc.backend.c.units import GATE_CDEF, LINK_CDEF
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates import host as gate_host
from nxc.gates.run import run_gate
from load_bounds import GATE_BOUND

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd, /proc and PDEATHSIG are Linux's")

BOOT = "from nxc.gates.host import serve"

DEEP = """\
func down(n: i64) -> i64 {
    if n == 0 {
        var z: i64 = 0
        return 10 / z
    }
    return down(n - 1) + 1
}

func main() -> i64 {
    return down(3)
}
"""
SPIN = """\
func spin(n: i64) -> i64 {
    var i: i64 = 0
    while i >= 0 { i = i + n }
    return i
}

func main() -> i64 {
    return spin(0)
}
"""
FLOOD = """\
import "nx_syscalls.nx"
func main() -> i64 {
    let p: *u8 = sys_mmap(4096) as *u8
    var i: i64 = 0
    while i < 4096 { p[i] = 120 as u8; i = i + 1 }
    p[4095] = 10 as u8
    var k: i64 = 0
    while k < 100000 { sys_write(1, p as *void, 4096); k = k + 1 }
    return 4
}
"""


@pytest.fixture
def host():
    gate_host.enable()
    assert gate_host.current() is not None
    yield gate_host
    gate_host.disable()


@pytest.fixture(scope="module")
def gates(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("host-gates")
    write_tree(folder)
    for name, text in (("deep.nx", DEEP), ("spin.nx", SPIN), ("flood.nx", FLOOD), ("greedy.nx", GREEDY)):
        (folder / name).write_text(text)
    return str(folder)


def _outcome(path: str, **kw):
    return run_gate(check_file(path, diags=Diagnostics()), "c", capture=True, **kw)


def _same(a, b) -> None:
    for field in ("status", "value", "message", "detail", "site", "stack", "captured", "output", "gate_site"):
        assert getattr(a, field) == getattr(b, field), field


def test_the_childs_entry_points_are_the_runtimes():
    declared = {re.search(r"(\w+)\(", d).group(1) for d in GATE_CDEF + LINK_CDEF}
    used = {"nxc_run_main", "nxc_gate_site", "nxc_trap_site", "nxc_gate_captured", "nxc_gate_captured_mask",
            "nxc_fault_info", "nxc_stack_depth", "nxc_stack_frame", "nxc_stack_mirror", "nxc_stack_bytes",
            "nxc_module_count", "nxc_modules_bound", "nxc_module_bind", "nxc_file_log", "nxc_file_log_bytes",
            "nxc_set_threads"}
    assert set(gate_child.SIGNATURES) == used <= declared
    for d in GATE_CDEF + LINK_CDEF:             # argument counts agree with the cdef
        name = re.search(r"(\w+)\(", d).group(1)
        if name in gate_child.SIGNATURES:
            params = d.split("(", 1)[1].rsplit(")", 1)[0].strip()
            count = 0 if params in ("", "void") else params.count(",") + 1
            assert len(gate_child.SIGNATURES[name][1]) == count, name


@pytest.mark.parametrize("name, checked, kw", [
    ("pass.nx", True, {}),
    ("fail.nx", True, {}),
    ("divzero.nx", True, {}),
    ("crash.nx", True, {}),
    ("deep.nx", True, {}),
    ("crash.nx", False, {}),                                # SIGSEGV, located by a checked run again
    ("spin.nx", True, {"timeout": 1.0}),                    # the .nx stack from the shared page
    ("flood.nx", True, {}),                                 # output bounded as before
    ("greedy.nx", True, {"memory_limit": 128 << 20}),
])
def test_every_outcome_is_the_same_through_the_host(gates, name, checked, kw):
    path = os.path.join(gates, name)
    kw = {"timeout": 60.0, **kw, "checked": checked}
    direct = _outcome(path, **kw)
    gate_host.enable()
    try:
        before = gate_host.current().gates
        hosted = _outcome(path, **kw)
        assert gate_host.current().gates > before        # it really ran in the host's child
    finally:
        gate_host.disable()
    _same(direct, hosted)
    if name == "spin.nx":
        assert hosted.status == "TIMEOUT" and [f.function for f in hosted.stack] == ["spin", "main"]
    if name == "deep.nx":
        assert [f.function for f in hosted.stack] == ["down"] * 4 + ["main"]
    if name == "flood.nx":
        assert hosted.value == 4 and "more bytes of output not shown" in hosted.output


def test_a_dead_host_is_noticed_and_replaced(gates, host):
    path = os.path.join(gates, "pass.nx")
    assert _outcome(path).status == "PASS"
    first = host.current()
    replaced = host.replaced
    os.kill(first.pid, signal.SIGKILL)
    first.proc.wait()
    assert _outcome(path).status == "PASS"
    second = host.current()
    assert second is not first and second.pid != first.pid and second.gates == 1
    assert host.replaced == replaced + 1


def test_a_host_killed_during_a_gate_leaves_the_gate_reported(gates, host):
    # The host dies with the gate's child running: the child goes with it
    # (PR_SET_PDEATHSIG), the worker runs the gate forked from itself, and
    # the outcome (here a timeout with its stack) is what it always was.
    path = os.path.join(gates, "spin.nx")
    assert _outcome(os.path.join(gates, "pass.nx")).status == "PASS"
    victim = host.current()
    children_seen = []

    def kill_soon():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not children_seen:
            children_seen.extend(_children(victim.pid))
            time.sleep(0.02)
        os.kill(victim.pid, signal.SIGKILL)
    killer = threading.Thread(target=kill_soon)
    killer.start()
    outcome = _outcome(path, timeout=1.5)
    killer.join()
    assert children_seen, "the host never forked the gate's child"
    assert outcome.status == "TIMEOUT" and [f.function for f in outcome.stack] == ["spin", "main"]
    assert not [p for p in children_seen if _alive(p)]
    assert host.current() is not victim


def _children(pid: int) -> list[int]:
    return [p for p, ppid in _processes() if ppid == pid]


def _processes():
    return [(pid, parent) for pid, (parent, _) in processes().items()]


def _alive(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pid not in dict(_processes()):
            return False
        time.sleep(0.05)
    return True


def _hosts_of(workers: set[int]) -> list[int]:
    found = []
    for pid, ppid in _processes():
        if ppid not in workers:         # a gate's child has the host's command line too
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(BOOT.encode() in a for a in argv) and len(argv) > 7 and int(argv[7]) in workers:
            found.append(pid)
    return found


def test_a_killed_runner_leaves_no_host_and_no_gate_behind(tmp_path):
    for i in range(2):
        (tmp_path / f"spin{i}.nx").write_text(SPIN)
    proc = subprocess.Popen([sys.executable, "-m", "nxc", "test", "-q", "-j", "2", "--timeout", "300", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    hosts, gate_children = [], []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            workers = set(_children(proc.pid))
            hosts = _hosts_of(workers)
            gate_children = [c for h in hosts for c in _children(h)]
            if len(hosts) == 2 and len(gate_children) == 2:
                break
            time.sleep(0.1)
        assert len(hosts) == 2 and len(gate_children) == 2, (hosts, gate_children)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert not [p for p in hosts + gate_children if _alive(p)]
    finally:
        for pid in hosts + gate_children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_nxc_test_results_are_the_same_with_and_without_the_host(tmp_path):
    write_tree(tmp_path)
    (tmp_path / "deep.nx").write_text(DEEP)

    def run(flag: str) -> dict:
        env = {**os.environ, "NXC_GATE_HOST": flag}
        proc = subprocess.run([sys.executable, "-m", "nxc", "test", "--json", "-j", "2", "--timeout", "1.5",
                               "--rerun", str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        keep = ("status", "value", "message", "location", "column", "captured", "stack", "report", "output")
        return {e["id"]: {k: e[k] for k in keep} for e in events if e["event"] == "result"}
    hosted, direct = run("1"), run("0")
    assert hosted == direct and len(hosted) == 8
    assert {r["status"] for r in hosted.values()} >= {"PASS", "FAIL", "RUNTIME-ERROR", "TIMEOUT"}


def test_a_library_that_does_not_hold_its_plan_is_refused_through_the_host(tmp_path, monkeypatch, host):
    # The host's child binds the library; a mismatch is the same BuildError
    # (an nxc bug, reported as ERROR) as when the worker opens it itself.
    from nxc.backend.c import build as c_build
    from nxc.backend.c import objects
    from nxc.backend.registry import backend_for
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "lib.nx").write_text("func twice(x: i64) -> i64 {\n    return x * 2\n}\n")
    (tmp_path / "g.nx").write_text('import "lib.nx"\n\nfunc main() -> i64 {\n    return twice(0)\n}\n')
    program = check_file(str(tmp_path / "g.nx"), diags=Diagnostics())
    prepared = backend_for("c").prepare(program, purpose="gate", load=False)
    binding = prepared.emitted.binding
    wrong = objects.Binding(binding.bases[:-1] + (("nosuch_000000000000", binding.bases[-1][1]),), binding.root)
    monkeypatch.setattr(objects.LinkedC, "binding", property(lambda self: wrong))
    before = host.current().gates
    with pytest.raises(c_build.BuildError, match="does not hold the modules its link planned"):
        run_gate(program, "c", timeout=GATE_BOUND)
    assert host.current().gates == before + 1


def test_a_finished_run_leaves_no_orphan_behind(tmp_path):
    # Each worker waits for its gate host before it exits: a host left to end
    # on its own was reparented, so the CPU time it spent loading libraries
    # was in no rusage of the run (`time nxc test`). The tree bench's `timed`
    # is the child subreaper during the run and counts what it reaps.
    tree = tmp_path / "tree"
    tree.mkdir()
    write_tree(tree, ["pass.nx", "lib.nx", "fail.nx"])
    ran = timed_apart([sys.executable, "-m", "nxc", "test", "-q", "-j", "2", "--rerun", str(tree)])
    assert ran["status"] == 1                           # fail.nx fails: the run ran its gates
    assert ran["orphans"] == 0 and ran["orphans_left"] == 0
