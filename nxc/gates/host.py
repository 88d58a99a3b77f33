"""The gate host: a small long-lived process that forks the gates' children.

A gate's child used to be forked from its worker, and a worker of a big
tree holds hundreds of MB (parsed modules, checked programs, records). A
fork copies the page tables of all of it, the child's exit tears them down,
and after each fork every page the worker writes takes a copy-on-write
fault: system time that grows with the worker, about 0.1 ms per MB per gate
(docs/performance.md, "The gate host"). The host is a fresh Python
(`python -S`, the standard library and nxc/backend/c/gate_child.py only, ~10
MB) started once per worker; for each gate it forks a child that opens the
gate's library, binds it, runs `main` and sends back plain numbers, which
the worker words (CLoaded.outcome_of) exactly as if the child were its own.

What a run guarantees is unchanged, because the host runs the very same
`run_isolated` the worker did (timeout, SIGKILL, output captured to a
bounded file, the memory limit, PR_SET_PDEATHSIG on the child) and the
checked runtime mirrors its .nx stack into a page the worker shares with
the host (a memfd, mapped by both, inherited by each child), which the
worker reads after a crash or a timeout. A host that dies or stops
answering is noticed (EOF, or no answer past the gate's timeout plus a
margin): the gate is run again the old way, forked from the worker, and
the next gate starts a new host. The host ends when its worker's socket
closes (the worker ended or was killed) and kills the child it is
running; with the worker's main thread as its parent it also gets
PR_SET_PDEATHSIG, so a killed runner leaves nothing behind.

Protocol (one socketpair, length-prefixed pickles): the worker sends
(job, timeout, capture, memory_limit, interrupt), the host answers with an
`isolate.Ended` whose value is gate_child.run's tuple.

NXC_GATE_HOST=0 turns the host off (every gate forked from its worker).
"""
from __future__ import annotations

import mmap
import os
import pickle
import socket
import struct
import subprocess
import sys
import threading

from nxc.gates.isolate import Ended

# The shared page for the checked runtime's stack mirror: the runtime needs
# nxc_stack_bytes() (400 KB for NXRT_STACK_CAP = 100000 frames); only the
# pages a deep stack touches are ever backed.
PAGE_BYTES = 1 << 20
# How long past a gate's own timeout the worker waits for the host's answer
# before it takes the host for hung (the host itself kills the child at the
# timeout, and gives an interrupted one a second to report).
ANSWER_MARGIN_SECONDS = 30.0
_HEADER = struct.Struct("<Q")


class HostGone(Exception):
    """The host died or stopped answering."""


def send_message(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv_message(sock: socket.socket):
    """The next message; None at EOF."""
    head = _recv_exactly(sock, _HEADER.size)
    if head is None:
        return None
    body = _recv_exactly(sock, _HEADER.unpack(head)[0])
    if body is None:
        return None
    return pickle.loads(body)


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class GateHost:
    """The worker's side of one host process."""

    def __init__(self):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        page_fd = os.memfd_create("nxc-gate-stack", 0)
        try:
            os.ftruncate(page_fd, PAGE_BYTES)
            self.page = mmap.mmap(page_fd, PAGE_BYTES)
            # The parent-death signal follows the thread that started the
            # host: only the main thread lives as long as the worker.
            pdeath = int(threading.current_thread() is threading.main_thread())
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            boot = ("import sys; sys.path[:0] = [sys.argv[1]]; from nxc.gates.host import serve; "
                    "serve(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))")
            # -S: no site (.pth files, sitecustomize); the worker's own sys.path
            # is not needed, the host imports only the standard library and nxc.
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-c", boot, root, str(theirs.fileno()), str(page_fd), str(os.getpid()),
                 str(pdeath)],
                pass_fds=(theirs.fileno(), page_fd), stdin=subprocess.DEVNULL, close_fds=True)
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
            os.close(page_fd)
        self.sock = mine
        self.owner = os.getpid()
        self.gates = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def run(self, job: tuple, timeout: float | None, capture: bool, memory_limit: int | None,
            interrupt: bool = False) -> Ended:
        """One gate's child, forked by the host. Raises HostGone (the host is
        then closed: the caller runs the gate another way)."""
        struct.pack_into("<i", self.page, 0, 0)      # no stack of an earlier gate survives in the page
        try:
            send_message(self.sock, (job, timeout, capture, memory_limit, interrupt))
            self.sock.settimeout(None if timeout is None else timeout + ANSWER_MARGIN_SECONDS)
            ended = recv_message(self.sock)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:      # socket.timeout is an OSError
            self.close(kill=True)
            raise HostGone(str(exc) or type(exc).__name__) from None
        if not isinstance(ended, Ended):
            self.close(kill=True)
            raise HostGone("the gate host ended")
        self.gates += 1
        return ended

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, kill: bool = False) -> None:
        """End the host (closing its socket ends it; kill=True does not wait for that)."""
        try:
            self.sock.close()
        except OSError:
            pass
        if kill:
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---- the worker's one host ----
_host: GateHost | None = None
_enabled = False
replaced = 0            # hosts started after one died (tests read it)


def enable() -> None:
    """Run this process's C gates through a host (nxc test's workers call it
    at start, from their main thread); NXC_GATE_HOST=0 says no."""
    global _enabled
    _enabled = os.environ.get("NXC_GATE_HOST", "1") != "0" and hasattr(os, "memfd_create")
    if _enabled:
        current()


def disable() -> None:
    global _enabled, _host
    _enabled = False
    if _host is not None and _host.owner == os.getpid():
        _host.close()
    _host = None


def current() -> GateHost | None:
    """This process's host, started (or replaced, after it died) when
    needed; None when gates are not run through a host here."""
    global _host, _enabled, replaced
    if not _enabled:
        return None
    if _host is not None and _host.owner == os.getpid() and _host.alive():
        return _host
    if _host is not None and _host.owner == os.getpid():
        _host.close(kill=True)
        if _host.gates == 0:        # it never ran a gate (cannot start here): fork from the worker
            _enabled, _host = False, None
            return None
        replaced += 1
    _host = None
    try:
        _host = GateHost()
    except OSError:
        return None
    return _host


def forget() -> None:
    """The host of the process this one was forked from is not ours."""
    global _host
    if _host is not None:
        try:
            _host.sock.close()
        except OSError:
            pass
    _host = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=forget)


# ---- the host process ----
def serve(ctrl_fd: int, page_fd: int, worker_pid: int, pdeath: int) -> None:
    """The host's loop: one request, one forked child, one answer, until
    the worker's socket closes."""
    import signal

    from nxc.backend.c import gate_child
    from nxc.gates.isolate import kill_with_parent, run_isolated

    signal.signal(signal.SIGINT, signal.SIG_IGN)        # the runner decides what Ctrl-C stops
    if pdeath:
        kill_with_parent()
    if os.getppid() != worker_pid:
        os._exit(0)                 # the worker died before that took effect
    ctrl = socket.socket(fileno=ctrl_fd)
    page = mmap.mmap(page_fd, PAGE_BYTES)
    os.close(page_fd)
    while True:
        try:
            request = recv_message(ctrl)
        except (OSError, EOFError, pickle.UnpicklingError):
            request = None
        if request is None:
            os._exit(0)
        job, timeout, capture, memory_limit, interrupt = request
        ended = run_isolated(lambda: gate_child.run(job, page), timeout, capture=capture,
                             memory_limit=memory_limit, interrupt=interrupt, abandon_fd=ctrl_fd)
        if ended.kind == "abandoned":
            os._exit(0)
        try:
            send_message(ctrl, ended)
        except OSError:
            os._exit(0)
