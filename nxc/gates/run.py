"""Running a gate: build (or reuse) the module, call `main` in a child process.

The child is forked after the module is loaded, so a segfault, an abort or a
hang in nx code takes down only the child; the parent reports it as an
outcome (CRASH with the signal's name, TIMEOUT) and carries on. The child
sends back the gate's value, which `return` produced it, or which run-time
error stopped it.
"""
from __future__ import annotations

import faulthandler
import os
import select
import signal
import struct
import sys
import time
from dataclasses import dataclass, field

from nxc.check.checker import GateReturn, Program
from nxc.diagnostics import Pos

PASS, FAIL, ERROR, CRASH, TIMEOUT, NO_GATE = "PASS", "FAIL", "RUNTIME-ERROR", "CRASH", "TIMEOUT", "NO-GATE"


@dataclass
class Outcome:
    status: str
    value: int | None = None
    gate_return: GateReturn | None = None
    message: str = ""
    seconds: float = 0.0
    backend: str = "c"
    captured: list = field(default_factory=list)   # (text, value) of the guard's operands
    build_cached: bool | None = None   # C backend: True when the build came from the cache
    build_seconds: float = 0.0
    # The .nx call stack (nxc/gates/stack.py Frames, innermost first) of a
    # run-time error, a crash or a timeout, when the run kept one.
    stack: list = field(default_factory=list)
    # More to say about a CRASH or a TIMEOUT (where it was: the checked re-run's finding).
    detail: str = ""
    checked: bool | None = None        # C backend: built with the memory checks

    @property
    def passed(self) -> bool:
        return self.status == PASS


def run_isolated(call, timeout: float | None, interrupt: bool = False):
    """Run `call()` (returning a tuple of ints, or raising) in a forked child.

    Returns ("ok", ints) | ("error", message) | ("crash", signame) | ("timeout", None).
    interrupt=True: at the timeout the child first gets SIGUSR1 and a moment to
    report where it is (the Python backend's stack), then SIGKILL.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        # A crash is reported by the parent from the signal; a Python-level
        # fault dump (pytest turns faulthandler on) would only be noise.
        faulthandler.disable()
        _die_with_parent()
        code = 0
        try:
            try:
                ints = call()
                payload = b"O" + struct.pack(f"<{len(ints)}q", *ints)
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
        return "timeout", None
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return "crash", name
    payload = b"".join(chunks)
    if not payload:
        return "crash", f"exit status {os.WEXITSTATUS(status)}"
    if payload[:1] == b"E":
        return "error", payload[1:].decode("utf-8", "replace")
    n = (len(payload) - 1) // 8
    return "ok", struct.unpack(f"<{n}q", payload[1:])


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


def _die_with_parent() -> None:
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


def outcome_from(program: Program, kind: str, data, backend: str, seconds: float,
                 describe_trap) -> Outcome:
    if kind == "timeout":
        return Outcome(TIMEOUT, message="the gate did not finish in time", seconds=seconds, backend=backend)
    if kind == "crash":
        return Outcome(CRASH, message=data, seconds=seconds, backend=backend)
    if kind == "error":
        return Outcome(ERROR, message=data, seconds=seconds, backend=backend)
    status, value, site, trap_site = data[:4]
    if status == 1:
        return Outcome(ERROR, message=describe_trap(trap_site), seconds=seconds, backend=backend)
    if status == 2:
        return Outcome(NO_GATE, message="the module has no 'func main() -> i64'", backend=backend)
    gr = program.gate_returns[site] if 0 <= site < len(program.gate_returns) else None
    return Outcome(PASS if value == 0 else FAIL, value, gr, seconds=seconds, backend=backend)


def run_gate_c(program: Program, emitted, built, timeout: float | None) -> Outcome:
    """Run the gate of a C build in a child. A checked build mirrors its shadow
    stack into a page shared with this process, so that a crash or a timeout
    (the child killed) still says where the gate was."""
    import mmap
    from nxc.backend.c import faults
    from nxc.backend.c.build import load
    from nxc.backend.c.emit import FAULT_INFO_WORDS
    lib, ffi = load(built)
    page = mmap.mmap(-1, lib.nxc_stack_bytes()) if emitted.checked else None
    slots = emitted.capture_slots

    def call():
        if page is not None:
            lib.nxc_stack_mirror(ffi.from_buffer(page), len(page))
        out = ffi.new("int64_t *")
        status = lib.nxc_run_main(out)
        info = ffi.new(f"int64_t[{FAULT_INFO_WORDS}]")
        lib.nxc_fault_info(info)
        return (status, out[0], lib.nxc_gate_site(), lib.nxc_trap_site(), lib.nxc_gate_captured_mask(),
                *[lib.nxc_gate_captured(i) for i in range(slots)], *info)

    def describe_trap(site: int) -> str:
        return faults.trap_message(data[5 + slots:], site, emitted.sites)

    start = time.perf_counter()
    kind, data = run_isolated(call, timeout)
    outcome = outcome_from(program, kind, data, "c", time.perf_counter() - start, describe_trap)
    outcome.checked = emitted.checked
    if outcome.status == FAIL:
        outcome.captured = emitted.captured(data[2], data[4], data[5:5 + slots])
    if page is not None:
        frames = faults.read_mirror(page)
        page.close()
        if outcome.status == ERROR:
            info = data[5 + slots:]
            fault_site = int(info[7]) if int(info[0]) != faults.F_NONE else int(data[3])
            outcome.stack = faults.stack_from(frames, emitted.sites, fault_site)
        elif outcome.status in (CRASH, TIMEOUT):
            outcome.stack = faults.stack_from(frames, emitted.sites)
    return outcome


def locate_crash(program: Program, outcome: Outcome, opt: str, use_cache: bool, timeout: float | None) -> None:
    """An unchecked build crashed: run the gate again checked, and say what that run found."""
    from nxc.backend.c.build import build
    from nxc.backend.c.emit import emit_c
    emitted = emit_c(program, checked=True)
    again = run_gate_c(program, emitted, build(emitted, opt=opt, use_cache=use_cache, abi=True), timeout)
    if again.status == ERROR:
        outcome.detail = f"the checked build (run again to locate the crash) stopped at:\n{again.message}"
        outcome.stack = again.stack
    elif again.status == CRASH:
        outcome.detail = "the checked build (run again to locate the crash) crashed too"
        outcome.stack = again.stack
    else:
        outcome.detail = (f"the checked build (run again to locate the crash) did not crash: {again.status}"
                          f"{'' if again.value is None else ' ' + str(again.value)}")


def describe_failure(outcome: Outcome, context: int = 2) -> str:
    """`FAIL main returned N at FILE:LINE` and the source around that return."""
    gr = outcome.gate_return
    if gr is None:
        return f"FAIL main returned {outcome.value}"
    pos: Pos = gr.node.pos
    lines = [f"FAIL main returned {outcome.value} at {pos.file.display}:{pos.line}"]
    for n in range(max(pos.line - context, 1), pos.line + context + 1):
        text = pos.file.line_text(n)
        if n > pos.line and not text:
            break
        mark = ">" if n == pos.line else " "
        lines.append(f" {mark}{n:5d} | {text}")
    for text, value in outcome.captured:
        lines.append(f"        {text} = {_show_value(value)}")
    return "\n".join(lines)


def _show_value(value) -> str:
    """Large integers also in hex: float32 bit patterns and masks read better so."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 0x10000:
        return f"{value} (0x{value & 0xFFFFFFFFFFFFFFFF:X})"
    return str(value)


def execute(program: Program, backend: str = "c", opt: str = "2", use_cache: bool = True,
            timeout: float | None = 60.0, verbose: bool = False, checked: bool = True) -> list[Outcome]:
    """Run the program's gate on one backend, or on both ("both").

    checked=False builds the C without memory checks and shadow stack; if
    such a gate crashes, it is run again checked to say where (the outcome
    stays CRASH, with the checked run's finding in `detail` and `stack`)."""
    outcomes = []
    for b in (("c", "py") if backend == "both" else (backend,)):
        if b == "c":
            from nxc.backend.c.build import build
            from nxc.backend.c.emit import emit_c
            t0 = time.perf_counter()
            emitted = emit_c(program, checked=checked)
            built = build(emitted, opt=opt, use_cache=use_cache, abi=True)
            if verbose:
                what = "cached build" if built.cached else "C build"
                print(f"nxc: emit {1000 * (time.perf_counter() - t0 - built.seconds):.1f} ms, "
                      f"{what} {1000 * built.seconds:.1f} ms", file=sys.stderr)
            outcomes.append(run_gate_c(program, emitted, built, timeout))
            outcomes[-1].build_cached, outcomes[-1].build_seconds = built.cached, built.seconds
            if outcomes[-1].status == CRASH and not checked:
                locate_crash(program, outcomes[-1], opt, use_cache, timeout)
        else:
            from nxc.backend.py.run import run_gate_py
            outcomes.append(run_gate_py(program, timeout))
        if verbose:
            print(f"nxc: gate ({b}) {1000 * outcomes[-1].seconds:.1f} ms", file=sys.stderr)
    return outcomes
