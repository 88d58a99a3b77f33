"""Diagnostics shared by every stage: positions, errors, and how they print.

Every stage reports through `Diagnostics` so that a user sees one format,
`path:line:col: error: message`, then the source line and a caret under the
exact spot (chibicc's `error_tok`, clang's layout). Stages collect several
errors and stop between phases (Crafting Interpreters), so a user sees every
independent mistake of a phase in one run.
"""
from __future__ import annotations

import os
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


def display_path(path: str) -> str:
    """A path as a user would type it: relative to cwd when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:          # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel


class SourceFile:
    """One .nx file's text, kept so diagnostics can quote its lines."""

    def __init__(self, path: str, text: str):
        self.path = os.path.abspath(path)
        self.text = text
        self._lines: list[str] | None = None

    @property
    def display(self) -> str:
        return display_path(self.path)

    def line_text(self, line: int) -> str:
        if self._lines is None:
            self._lines = self.text.splitlines()
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
    # Tabs keep their width in the caret line so the caret stays aligned.
    lead = "".join(c if c == "\t" else " " for c in src[: max(d.pos.col - 1, 0)])
    return f"{head}\n    {src}\n    {lead}^"


class CompileError(Exception):
    """Raised at the end of a phase that reported errors; carries them all."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.render() for d in diagnostics))


class Diagnostics:
    """Collects errors and warnings of one compilation."""

    def __init__(self, warnings: bool = True):
        self.items: list[Diagnostic] = []
        self.show_warnings = warnings

    def error(self, pos: Pos | None, message: str, notes: list[Diagnostic] | None = None) -> Diagnostic:
        d = Diagnostic("error", pos, message, notes or [])
        self.items.append(d)
        return d

    def warning(self, pos: Pos | None, message: str) -> None:
        if self.show_warnings:
            self.items.append(Diagnostic("warning", pos, message))

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
