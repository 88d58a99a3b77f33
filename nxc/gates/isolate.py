"""Process isolation: run a callable in a forked child, with a timeout.

The child is forked after the caller has loaded what it needs, so a
segfault, an abort or a hang in that code takes down only the child; the
parent gets an `Ended` saying how it ended. Whatever the callable returns is
pickled to the parent. This module knows nothing of backends or gates.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Ended:
    """How the child ended: "ok" (value is what the callable returned), "error"
    (it raised; message is str() of the exception), "crash" (message: the
    signal's name or the exit status) or "timeout"."""
    kind: str
    value: object = None
    message: str = ""


def run_isolated(call, timeout: float | None, interrupt: bool = False):
    """Run `call()` in a forked child; its result (any picklable value) comes back in an `Ended`.

    interrupt=True: at the timeout the child first gets SIGUSR1 and a moment
    to say where it is (the Python backend's stack), then SIGKILL."""
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        # A crash is reported by the parent from the signal; a Python-level
        # fault dump (pytest turns faulthandler on) would only be noise.
        faulthandler.disable()
        die_with_parent()
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
    timed_out = False
    while True:
        wait = None if deadline is None else max(deadline - time.monotonic(), 0)
        ready, _, _ = select.select([r], [], [], wait)
        if not ready:
            timed_out = True
            if not (interrupt and _interrupted(pid)):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            break
        data = os.read(r, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(r)
    if timed_out:
        return Ended("timeout")
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return Ended("crash", message=name)
    payload = b"".join(chunks)
    if not payload:
        return Ended("crash", message=f"exit status {os.WEXITSTATUS(status)}")
    if payload[:1] == b"E":
        return Ended("error", message=payload[1:].decode("utf-8", "replace"))
    return Ended("ok", pickle.loads(payload[1:]))


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
