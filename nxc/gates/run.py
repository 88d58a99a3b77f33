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
from nxc.diagnostics import Pos, display_path

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

    @property
    def passed(self) -> bool:
        return self.status == PASS


def run_isolated(call, timeout: float | None):
    """Run `call()` (returning a tuple of ints, or raising) in a forked child.

    Returns ("ok", ints) | ("error", message) | ("crash", signame) | ("timeout", None).
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
            os.kill(pid, signal.SIGKILL)
            break
        data = os.read(r, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return "timeout", None
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
    from nxc.backend.c.build import load
    lib, ffi = load(built)

    def call():
        out = ffi.new("int64_t *")
        status = lib.nxc_run_main(out)
        return (status, out[0], lib.nxc_gate_site(), lib.nxc_trap_site(), lib.nxc_gate_captured_mask(),
                *[lib.nxc_gate_captured(i) for i in range(emitted.capture_slots)])

    def describe_trap(site: int) -> str:
        s = emitted.sites[site]
        return f"{display_path(s.path)}:{s.line}:{s.col}: runtime error: {s.what}"

    start = time.perf_counter()
    kind, data = run_isolated(call, timeout)
    outcome = outcome_from(program, kind, data, "c", time.perf_counter() - start, describe_trap)
    if outcome.status == FAIL:
        outcome.captured = emitted.captured(data[2], data[4], data[5:])
    return outcome


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
            timeout: float | None = 60.0, verbose: bool = False) -> list[Outcome]:
    """Run the program's gate on one backend, or on both ("both")."""
    outcomes = []
    for b in (("c", "py") if backend == "both" else (backend,)):
        if b == "c":
            from nxc.backend.c.build import build
            from nxc.backend.c.emit import emit_c
            t0 = time.perf_counter()
            emitted = emit_c(program)
            built = build(emitted, opt=opt, use_cache=use_cache, abi=True)
            if verbose:
                what = "cached build" if built.cached else "C build"
                print(f"nxc: emit {1000 * (time.perf_counter() - t0 - built.seconds):.1f} ms, "
                      f"{what} {1000 * built.seconds:.1f} ms", file=sys.stderr)
            outcomes.append(run_gate_c(program, emitted, built, timeout))
            outcomes[-1].build_cached, outcomes[-1].build_seconds = built.cached, built.seconds
        else:
            from nxc.backend.py.run import run_gate_py
            outcomes.append(run_gate_py(program, timeout))
        if verbose:
            print(f"nxc: gate ({b}) {1000 * outcomes[-1].seconds:.1f} ms", file=sys.stderr)
    return outcomes
