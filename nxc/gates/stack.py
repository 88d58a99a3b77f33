"""The .nx call stack of a run-time error, a crash or a timeout, as text.

Both backends report the same thing: `protocol.Site`s, innermost first, each
the nx function and the position where it was (the faulting access for the
innermost frame, the call for the others; for a timeout, the loop or the call
the innermost function was in). Printed the way Go, Zig and Rust print theirs,
`path:line:col` first so that editors and terminals can follow it:

    .nx stack (innermost first):
      at oob.nx:7:17 in sum
      at oob.nx:16:18 in main
"""
from __future__ import annotations

from nxc.diagnostics import display_path


def where(site) -> str:
    return f"{display_path(site.file)}:{site.line}:{site.column}"


def render_stack(frames, title: str = ".nx stack (innermost first):", limit: int = 64) -> str:
    """The stack as indented lines; a deep recursion shows its two ends."""
    if not frames:
        return ""
    frames = list(frames)
    lines = [title]
    half = limit // 2
    shown = frames if len(frames) <= limit else frames[:half] + [None] + frames[-half:]
    for f in shown:
        if f is None:
            lines.append(f"      ... {len(frames) - 2 * half} more frames ...")
        else:
            lines.append(f"  at {where(f)} in {f.function}")
    return "\n".join(lines)
