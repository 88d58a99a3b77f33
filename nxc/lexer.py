"""The lexer: source text -> tokens, for the parser of grammar/nx.lark.

The token kinds and their spellings come from the grammar itself (Lark's
terminal definitions); only the scanning loop is ours. One compiled
alternation matched once per token, with keywords recognised by a dict
lookup, is about three times faster than Lark's general-purpose lexer,
which was a third of all front-end time. Newlines and block comments are
passed on for nxc/postlex.py, which decides where statements end.
"""
from __future__ import annotations

import re


class Token:
    """One token: its terminal name (`type`), text and where it starts."""
    __slots__ = ("type", "value", "line", "column")

    def __init__(self, type: str, value: str, line: int, column: int):
        self.type, self.value, self.line, self.column = type, value, line, column

    def renamed(self, type: str, value: str) -> "Token":
        return Token(type, value, self.line, self.column)

    def __repr__(self) -> str:
        return f"Token({self.type}, {self.value!r}, {self.line}:{self.column})"


class LexError(Exception):
    """Text no token matches, at offset `pos` (line, column)."""

    def __init__(self, pos: int, line: int, column: int):
        super().__init__(f"no token at {line}:{column}")
        self.pos, self.line, self.column = pos, line, column

# Regex terminals, in the order they are tried (comments before `/`).
_REGEX_ORDER = ("BLOCK_COMMENT", "LINE_COMMENT", "NEWLINE", "STRING", "INT", "NAME", "COMPOUND_ASSIGN")


def terminal_specs(lark) -> list[tuple[str, str | None, str]]:
    """(name, literal text or None, regex) for each terminal Lark compiled."""
    return [(t.name, t.pattern.value if t.pattern.type == "str" else None, t.pattern.to_regexp())
            for t in lark.terminals]


class NxLexer:
    def __init__(self, terminals: list[tuple[str, str | None, str]]):
        """`terminals`: `terminal_specs` of grammar/nx.lark."""
        regex = {name: pattern for name, _, pattern in terminals}
        name_re = re.compile(regex["NAME"] + r"\Z")
        self.keywords: dict[str, str] = {}
        literals: list[tuple[str, str]] = []
        for name, text, _ in terminals:
            if text is None:
                continue
            if name_re.match(text):
                self.keywords[text] = name
            else:
                literals.append((text, name))
        literals.sort(key=lambda item: -len(item[0]))      # longest first: "<<" before "<"
        parts = [f"(?P<{name}>{regex[name]})" for name in _REGEX_ORDER]
        # An opening that never closes is reported as such (nxc/parse.py
        # words it), not as a `/` or a stray quote.
        parts.append(r"(?P<_UNCLOSED>/\*|\")")
        # Each group is named after its terminal, so the match names the kind.
        parts += [f"(?P<{name}>{re.escape(value)})" for value, name in literals]
        # Blanks before a token are part of its match: one regex call a token.
        self.master = re.compile(r"[ \t\f\r]*(?:" + "|".join(parts) + ")")

    def lex(self, data: str):
        keywords = self.keywords
        pos, line, line_start = 0, 1, 0
        # finditer skips text no token matches; a gap between one match's
        # end and the next one's start is that text, an error.
        for m in self.master.finditer(data):
            if m.start() != pos:
                raise self._error(data, pos, line, line_start)
            kind = m.lastgroup
            start, pos = m.span(kind)
            if kind == "NAME":
                value = data[start:pos]
                yield Token(keywords.get(value, "NAME"), value, line, start - line_start + 1)
            elif kind == "NEWLINE":
                yield Token(kind, "\n", line, start - line_start + 1)
                line += 1
                line_start = pos
            elif kind == "LINE_COMMENT":
                continue
            elif kind == "BLOCK_COMMENT":
                value = data[start:pos]
                yield Token(kind, value, line, start - line_start + 1)
                breaks = value.count("\n")
                if breaks:
                    line += breaks
                    line_start = start + value.rindex("\n") + 1
            elif kind == "_UNCLOSED":
                raise LexError(start, line, start - line_start + 1)
            else:
                yield Token(kind, data[start:pos], line, start - line_start + 1)
        if data[pos:].strip(" \t\f\r"):
            raise self._error(data, pos, line, line_start)

    @staticmethod
    def _error(data: str, pos: int, line: int, line_start: int) -> LexError:
        """The error for text at `pos` (after blanks) that starts no token."""
        while data[pos] in " \t\f\r":
            pos += 1
        return LexError(pos, line, pos - line_start + 1)
