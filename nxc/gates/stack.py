"""The .nx call stack of a run-time error, a crash or a timeout: frames and their text.

Both backends produce the same thing: a list of `Frame`s, innermost first,
each the nx function and the position where it was (the faulting access for
the innermost frame, the call for the others; for a timeout, the loop or the
call the innermost function was in). Printed the way Go, Zig and Rust print
theirs, `path:line:col` first so that editors and terminals can follow it:

    .nx stack (innermost first):
      at oob.nx:7:17 in sum
      at oob.nx:16:18 in main
"""
from __future__ import annotations

from typing import NamedTuple

from nxc.diagnostics import display_path


class Frame(NamedTuple):
    file: str           # the .nx file (absolute, as the front end saw it)
    line: int
    column: int
    function: str

    def where(self) -> str:
        return f"{display_path(self.file)}:{self.line}:{self.column}"


def render_stack(frames, title: str = ".nx stack (innermost first):", limit: int = 64) -> str:
    """The stack as indented lines; a deep recursion shows its two ends."""
    if not frames:
        return ""
    frames = list(frames)
    lines = [title]
    shown = frames if len(frames) <= limit else frames[:limit // 2] + [None] + frames[-limit // 2:]
    for f in shown:
        if f is None:
            lines.append(f"      ... {len(frames) - 2 * (limit // 2)} more frames ...")
        else:
            lines.append(f"  at {f.where()} in {f.function}")
    return "\n".join(lines)
