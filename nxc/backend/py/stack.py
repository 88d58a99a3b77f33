"""The Python backend's .nx call stack: Python frames of generated code -> nx frames.

Generated functions are ordinary Python functions whose code objects carry
the generated module's file name, and every generated line maps to the nx
statement it came from (EmittedPy.line_pos). So the nx stack of a fault is
the traceback's frames of generated code, and the stack of a gate stopped by
its timeout is the chain of frames the interrupting signal found: the same
`protocol.Site`s the checked C backend reads from its shadow
stack, innermost first.

For a timeout, the gate's child installs `install_timeout_report`: the
parent sends SIGUSR1 before killing it, the handler (which Python runs
between two bytecodes of the looping nx code) writes the stack into a page
shared with the parent and ends the child.
"""
from __future__ import annotations

import json
import os
import re
import signal
import struct

from nxc.gates.protocol import Site

_LOCATED = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): ")


def _frame_of(code, lineno: int, emitted, nx_names: dict) -> Site | None:
    if code.co_filename != emitted.filename:
        return None
    pos = emitted.line_pos.get(lineno)
    if pos is None:
        return None
    path, line, col = pos
    return Site(path, line, col, nx_names.get(code.co_name, code.co_name))


def _nx_names(emitted) -> dict:
    return {py: nx for nx, py in emitted.names.items()}


def stack_from_traceback(tb, emitted, message: str = "") -> list[Site]:
    """The nx frames of a traceback, innermost first. The innermost frame takes
    the fault's own column when `message` names the same line."""
    names = _nx_names(emitted)
    frames = []
    while tb is not None:
        f = _frame_of(tb.tb_frame.f_code, tb.tb_lineno, emitted, names)
        if f is not None:
            frames.append(f)
        tb = tb.tb_next
    frames.reverse()
    m = _LOCATED.match(message)
    if frames and m and int(m["line"]) == frames[0].line:
        frames[0] = Site(frames[0].file, frames[0].line, int(m["col"]), frames[0].function)
    return frames


def stack_from_frame(frame, emitted) -> list[Site]:
    """The nx frames from a live Python frame outwards, innermost first."""
    names = _nx_names(emitted)
    frames = []
    while frame is not None:
        f = _frame_of(frame.f_code, frame.f_lineno, emitted, names)
        if f is not None:
            frames.append(f)
        frame = frame.f_back
    return frames


def encode(frames) -> bytes:
    return json.dumps([[f.file, f.line, f.column, f.function] for f in frames]).encode("utf-8")


def decode(data: bytes) -> list[Site]:
    try:
        return [Site(str(a), int(b), int(c), str(d)) for a, b, c, d in json.loads(data.decode("utf-8"))]
    except (ValueError, TypeError):
        return []


def install_timeout_report(page, emitted) -> None:
    """In the gate's child: on SIGUSR1, write the nx stack into `page` (4-byte
    length, then JSON) and end the process."""
    def report(signum, frame):
        data = encode(stack_from_frame(frame, emitted))[:len(page) - 4]
        page[4:4 + len(data)] = data
        page[0:4] = struct.pack("<I", len(data))
        os._exit(0)
    signal.signal(signal.SIGUSR1, report)


def read_timeout_report(page) -> list[Site]:
    n = struct.unpack_from("<I", page, 0)[0]
    return decode(bytes(page[4:4 + n])) if 0 < n <= len(page) - 4 else []
