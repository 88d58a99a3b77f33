"""Diagnostics shared by every stage: positions, errors, and how they print.

Every stage reports through `Diagnostics` so that a user sees one format,
`path:line:col: error: message`, then the source line and a caret under the
exact spot (chibicc's `error_tok`, clang's layout). Stages collect several
errors and stop between phases (Crafting Interpreters), so a user sees every
independent mistake of a phase in one run.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple


class Pos(NamedTuple):
    """Where a node came from: 1-based line and column in a source file.

    A named tuple rather than a frozen dataclass: every AST node has one,
    and a tuple is made twice as fast.
    """
    file: "SourceFile"
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file.display}:{self.line}:{self.col}"

    def __reduce__(self):
        # Made again by tuple.__new__, in C: a named tuple's own pickling
        # calls its __new__ written in Python, for every node of a pickled
        # tree (nxc/syntax/ast.py).
        return (tuple.__new__, (Pos, tuple(self)))


def display_path(path: str, cwd: str | None = None) -> str:
    """A path as a user would type it: relative to cwd when inside it
    (`cwd`: the current folder, when the caller has it)."""
    try:
        rel = os.path.relpath(path, cwd or os.curdir)
    except ValueError:          # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


def normalise_line_ends(text: str) -> str:
    """CRLF and a lone CR become LF: the one notion of a line end.

    The lexer, the quoted source line and every line number use it, so a file
    saved with old Mac (CR) or Windows (CRLF) line ends reads as it looks,
    and nothing else (form feed, vertical tab, U+0085, U+2028) starts a line.
    """
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def source_lines(text: str) -> list[str]:
    """The lines of a source text, split where the lexer counts lines."""
    lines = normalise_line_ends(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()                 # a final line end does not start a line
    return lines


# A quoted source line is cut to this many characters around the caret: a
# generated 40 KB line must not be printed once per error.
QUOTE_WIDTH = 400


class SourceFile:
    """One .nx file's text, kept so diagnostics can quote its lines.

    The text is kept with its line ends normalised (`normalise_line_ends`).
    """

    def __init__(self, path: str, text: str):
        self.path = os.path.abspath(path)
        self.text = normalise_line_ends(text)
        self._lines: list[str] | None = None

    @property
    def display(self) -> str:
        return display_path(self.path)

    def line_text(self, line: int) -> str:
        if self._lines is None:
            self._lines = source_lines(self.text)
        if 1 <= line <= len(self._lines):
            return self._lines[line - 1]
        return ""


@dataclass
class Diagnostic:
    severity: str            # "error" | "warning" | "note"
    pos: Pos | None
    message: str
    notes: list["Diagnostic"] = field(default_factory=list)

    def render(self) -> str:
        return "\n".join(_render_one(d) for d in [self, *self.notes])


def _render_one(d: Diagnostic) -> str:
    if d.pos is None:
        return f"nxc: {d.severity}: {d.message}"
    head = f"{d.pos}: {d.severity}: {d.message}"
    src = d.pos.file.line_text(d.pos.line)
    if not src.strip():
        return head
    src, col = quotable(src, d.pos.col)
    # Tabs keep their width in the caret line so the caret stays aligned.
    lead = "".join(c if c == "\t" else " " for c in src[: max(col - 1, 0)])
    return f"{head}\n    {src}\n    {lead}^"


def quotable(line: str, col: int) -> tuple[str, int]:
    """(the part of `line` worth quoting, the caret's column in it).

    A long line is cut to QUOTE_WIDTH characters around the caret, marked
    with "..."; control characters other than tab are shown as U+FFFD so a
    quoted line can neither move the terminal's cursor nor break an XML
    report.
    """
    if len(line) > QUOTE_WIDTH:
        start = max(0, min(col - 1 - QUOTE_WIDTH // 2, len(line) - QUOTE_WIDTH))
        end = start + QUOTE_WIDTH
        piece = line[start:end]
        col -= start
        if start > 0:
            piece, col = "..." + piece, col + 3
        if end < len(line):
            piece += "..."
        line = piece
    return _CONTROL.sub("\ufffd", line), col


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


class ToolError(Exception):
    """A problem around the .nx code, not in it (no C compiler, an output
    path that is a folder): the command line prints it as one line,
    `nxc: error: ...`, never as a traceback."""


class CompileError(Exception):
    """Raised at the end of a phase that reported errors; carries them all."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.render() for d in diagnostics))


# Past this many errors (or warnings) of one compilation the rest are only
# counted: 10,000 chained comparisons are one mistake repeated, and printing
# each (with its quoted line) made hundreds of megabytes of output.
LIMIT = 50


class Diagnostics:
    """Collects errors and warnings of one compilation."""

    def __init__(self, warnings: bool = True):
        self.items: list[Diagnostic] = []
        self.show_warnings = warnings
        self.kept = {"error": 0, "warning": 0}
        self.dropped = {"error": 0, "warning": 0}

    def _add(self, d: Diagnostic) -> Diagnostic:
        severity = d.severity
        if self.kept[severity] < LIMIT:
            self.kept[severity] += 1
            self.items.append(d)
        else:
            self.dropped[severity] += 1
            if self.dropped[severity] == 1:
                self._last(severity).notes.append(Diagnostic("note", None, ""))
            # The last kept one carries the count of those left out.
            self._last(severity).notes[-1].message = (
                f"{self.dropped[severity]} more {severity}s not shown (only the first {LIMIT} are)")
        return d

    def saturated(self, severity: str = "error") -> bool:
        """Whether another diagnostic of `severity` would only be counted: a
        stage may then skip working out its words (a suggestion scans the
        whole file: once per error, 12,000 errors were n^2)."""
        return self.kept[severity] >= LIMIT

    def _last(self, severity: str) -> Diagnostic:
        return next(d for d in reversed(self.items) if d.severity == severity)

    def error(self, pos: Pos | None, message: str, notes: list[Diagnostic] | None = None) -> Diagnostic:
        return self._add(Diagnostic("error", pos, message, notes or []))

    def warning(self, pos: Pos | None, message: str) -> None:
        if self.show_warnings:
            self._add(Diagnostic("warning", pos, message))

    @staticmethod
    def note(pos: Pos | None, message: str) -> Diagnostic:
        return Diagnostic("note", pos, message)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "warning"]

    def raise_if_errors(self) -> None:
        """End of a phase: later phases never run on a broken tree."""
        if self.errors:
            raise CompileError(self.errors)


# ---- the .nx call stack of a run-time error, a crash or a timeout, as text ----
# Both backends report the same thing: `protocol.Site`s, innermost first, each
# the nx function and the position where it was (the faulting access for the
# innermost frame, the call for the others; for a timeout, the loop or the call
# the innermost function was in). Printed the way Go, Zig and Rust print theirs,
# `path:line:col` first so that editors and terminals can follow it:
#
#     .nx stack (innermost first):
#       at oob.nx:7:17 in sum
#       at oob.nx:16:18 in main


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
