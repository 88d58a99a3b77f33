"""The processes of a running `nxc test` (Linux, from /proc), for the tests
that watch its workers and gates: which are gates, waiting for events (two
gates running at once, processes gone) with generous bounds rather than
sleeping a fixed time or sampling once."""
from __future__ import annotations

import contextlib
import os
import signal
import time


def processes() -> dict[int, tuple[int, int]]:
    """Every live (not zombie) process: {pid: (parent pid, process group)}."""
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                procs[int(entry)] = (int(fields[1]), int(fields[2]))
    return procs


def group(pgid: int) -> dict[int, int]:
    """The live processes of process group `pgid`: {pid: parent pid}."""
    return {pid: parent for pid, (parent, pg) in processes().items() if pg == pgid}


def _exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def workers_and_gates(runner: int) -> tuple[set[int], set[int]]:
    """(workers, gates) of the runner `runner`: its children, and their children
    that are forks (the interpreter's executable), not compilers or linkers,
    or the forks of their gate hosts.
    Counting the group's processes instead took a worker's cc1 and another's
    `as` or `ld` for two gates: the test killed the runner while it compiled,
    and its assert, sampling again, often found one of them gone."""
    procs = group(runner)
    workers = {p for p, parent in procs.items() if parent == runner}
    python = _exe(runner)
    forks = {p for p, parent in procs.items() if parent in workers and _exe(p) == python}
    # A worker's gate host (nxc/gates/host.py) is a Python child of it too,
    # but not a gate: the gates are the host's forks.
    hosts = {p for p in forks if _is_gate_host(p)}
    return workers, (forks - hosts) | {p for p, parent in procs.items() if parent in hosts}


def _is_gate_host(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"nxc.gates.host" in f.read()
    except OSError:
        return False


def describe(pgid: int) -> str:
    rows = []
    for pid, parent in sorted(group(pgid).items()):
        try:
            with open(f"/proc/{pid}/comm") as f:
                rows.append(f"{pid} (parent {parent}): {f.read().strip()}")
        except OSError:
            pass
    return "; ".join(rows) or "none"


def wait_for_two_gates(runner: int, bound: float = 300.0) -> tuple[set[int], set[int]]:
    """Wait (up to `bound` s, for a loaded machine) until two gates run at once:
    the same two in two samples, so a worker's fork for a compiler, before its
    exec, is not taken for one."""
    deadline = time.monotonic() + bound
    seen: set[int] = set()
    while time.monotonic() < deadline:
        workers, found = workers_and_gates(runner)
        if len(found) >= 2 and found == seen:
            return workers, found
        seen = found
        time.sleep(0.1)
    raise AssertionError(f"two gates never ran at once within {bound:.0f} s; the runner's group: {describe(runner)}")


def wait_until_gone(pids, bound: float = 60.0) -> set[int]:
    """Those of `pids` still alive (not zombies) after waiting up to `bound` s for all to end."""
    deadline = time.monotonic() + bound
    left = {p for p in pids if alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = {p for p in left if alive(p)}
    return left


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_group(pgid: int) -> None:
    """Whatever happened, leave no spinning gate to the rest of the suite."""
    for pid in group(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
