"""Process isolation: run a callable in a forked child, with a timeout.

The child is forked after the caller has loaded what it needs, so a
segfault, an abort or a hang in that code takes down only the child; the
parent gets an `Ended` saying how it ended. Whatever the callable returns is
pickled to the parent. This module knows nothing of backends or gates.

What a child costs is mostly the kernel's: the fork copies the page tables
of the caller's resident memory and the child's exit tears its copy down,
about 0.1 ms of system time per MB of the caller (a runner worker: 60-700
MB), and afterwards each page the caller writes takes a copy-on-write
fault; the child itself touches a few hundred pages. So nxc test's workers
call this from their small gate host instead (nxc/gates/host.py). `gc.freeze()` before
the fork was measured not to help (the child runs no collection), so it is
not done (docs/performance.md, "The processes of a gate").
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import sys
import tempfile
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Ended:
    """How the child ended: "ok" (value is what the callable returned), "error"
    (it raised; message is str() of the exception), "crash" (message: the
    signal's name or the exit status), "timeout", "memory" (past the
    memory limit) or "abandoned" (see run_isolated's abandon_fd)."""
    kind: str
    value: object = None
    message: str = ""
    output: str = ""            # the child's stdout and stderr, when captured


# Captured output kept per gate: the first OUTPUT_MAX bytes are shown; the
# file it goes to may not grow past OUTPUT_FILE_MAX (RLIMIT_FSIZE), so a gate
# printing in a loop cannot fill the disk before its timeout.
OUTPUT_MAX = 64 << 10
OUTPUT_FILE_MAX = 16 << 20
# How often the parent looks at the child's memory when there is a limit.
MEMORY_POLL_SECONDS = 0.02


def run_isolated(call, timeout: float | None, capture: bool = False, memory_limit: int | None = None,
                 interrupt: bool = False, abandon_fd: int | None = None):
    """Run `call()` in a forked child; its result (any picklable value) comes back in an `Ended`.

    capture: the child's stdout and stderr (fds 1 and 2) go to a file, not
    to ours; they come back in `Ended.output`. memory_limit: bytes of
    resident memory the child may add to what it shares with us at the fork
    (MemoryWatch): past it the child is killed and the kind is "memory", and a
    child that ended before a look caught it is judged by its peak.
    interrupt=True: at the timeout the child first gets SIGUSR1 and a moment
    to say where it is (the Python backend's stack), then SIGKILL.
    abandon_fd: a descriptor that becomes readable when whoever asked for
    this run is gone (the gate host's end of its worker's socket,
    nxc/gates/host.py): then the child is killed and the kind is
    "abandoned". The child does not keep it open.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    out = tempfile.TemporaryFile(prefix="nxc-gate-out-") if capture else None
    r, w = os.pipe()
    parent = os.getpid()
    watch = None if memory_limit is None else MemoryWatch(memory_limit)
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        if abandon_fd is not None:
            os.close(abandon_fd)
        # A crash is reported by the parent from the signal; a Python-level
        # fault dump (pytest turns faulthandler on) would only be noise.
        faulthandler.disable()
        die_with_parent()
        if os.getppid() != parent:
            # The parent died between the fork and the signal being armed (a
            # killed runner takes its workers at once): nobody waits for this
            # gate or would ever stop it, so it must not start.
            os._exit(70)
        if out is not None:
            _capture_into(out)
        code = 0
        try:
            try:
                payload = b"O" + pickle.dumps(call(), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                payload = b"E" + str(exc).encode("utf-8", "replace")
            os.write(w, payload)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    deadline = None if timeout is None else time.monotonic() + timeout
    timed_out = over_memory = at_peak = reaped = abandoned = False
    watched = [r] if abandon_fd is None else [r, abandon_fd]
    while True:
        wait = None if deadline is None else max(deadline - time.monotonic(), 0)
        if memory_limit is not None:
            wait = MEMORY_POLL_SECONDS if wait is None else min(wait, MEMORY_POLL_SECONDS)
        ready, _, _ = select.select(watched, [], [], wait)
        if abandon_fd is not None and abandon_fd in ready:
            abandoned = True
            os.kill(pid, signal.SIGKILL)
            break
        if not ready:
            if watch is not None and watch.over(resident_bytes(pid)):
                over_memory = True
            elif deadline is None or time.monotonic() < deadline:
                continue
            else:
                timed_out = True
            reaped = timed_out and interrupt and _interrupted(pid)
            if not reaped:
                os.kill(pid, signal.SIGKILL)
            break
        data = os.read(r, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(r)
    if not reaped:
        _, status, usage = os.wait4(pid, 0)
        # A gate that grew past the limit and ended between two looks: its peak tells.
        if watch is not None and not (timed_out or abandoned or over_memory) and watch.over(peak_bytes(usage)):
            over_memory = at_peak = True
    output = _read_output(out)
    if abandoned:
        return Ended("abandoned", output=output)
    if timed_out:
        return Ended("timeout", output=output)
    if over_memory:
        how = "at its peak (it ended before a look stopped it)" if at_peak else "and was stopped"
        return Ended("memory", message=f"more than {memory_limit >> 20} MiB of memory {how}", output=output)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return Ended("crash", message=name, output=output)
    payload = b"".join(chunks)
    if not payload:
        return Ended("crash", message=f"exit status {os.WEXITSTATUS(status)}", output=output)
    if payload[:1] == b"E":
        return Ended("error", message=payload[1:].decode("utf-8", "replace"), output=output)
    return Ended("ok", pickle.loads(payload[1:]), output=output)


def _capture_into(out) -> None:
    """In the child: fds 1 and 2 to the capture file, bounded in size."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    try:
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)     # past the bound a write fails (EFBIG), no signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_MAX, OUTPUT_FILE_MAX))
    except (ImportError, OSError, ValueError, AttributeError):
        pass


def _read_output(out) -> str:
    if out is None:
        return ""
    try:
        size = os.fstat(out.fileno()).st_size
        out.seek(0)
        data = out.read(OUTPUT_MAX)
    finally:
        out.close()
    text = data.decode("utf-8", "replace")
    if size > OUTPUT_MAX:
        text += f"\n[... {size - OUTPUT_MAX} more bytes of output not shown]"
    return text


class MemoryWatch:
    """What a forked child may add to its resident memory. At the fork the
    child's resident set is its parent's (the pages they share until one writes
    them: a gate host's 20-30 MB, more for a runner's worker), so the limit is
    on what it adds: its resident size, or its peak (getrusage's ru_maxrss,
    which a child that ended between two looks leaves), less the parent's at
    the fork."""

    def __init__(self, limit: int):
        self.limit = limit
        self.base = resident_bytes(os.getpid())

    def over(self, resident: int) -> bool:
        return resident - self.base > self.limit


def peak_bytes(usage) -> int:
    """The peak resident size in a child's rusage (ru_maxrss: KiB on Linux, bytes on macOS)."""
    return usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024


def resident_bytes(pid: int) -> int:
    """The resident memory of process `pid` (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _interrupted(pid: int, grace: float = 1.0) -> bool:
    """SIGUSR1 to a timed-out child; True when it ended (and was reaped) within `grace` s."""
    os.kill(pid, signal.SIGUSR1)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
        time.sleep(0.005)
    return False


def die_with_parent() -> None:
    """In the gate's child: end with the parent (a killed runner worker or a
    Ctrl-C must not leave a looping gate behind). Python's SIGINT handler only
    runs between bytecodes, never inside a looping C gate, so restore the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    kill_with_parent()


def kill_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that started it ends
    (PR_SET_PDEATHSIG); elsewhere nothing."""
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG


def _find_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        return ctypes.CDLL(None).prctl
    except (OSError, AttributeError, ImportError):
        return None


_prctl = _find_prctl()
