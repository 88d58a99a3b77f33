"""The lexer: source text -> tokens, for the parser of grammar/nx.lark.

The token kinds and their spellings come from the grammar itself (Lark's
terminal definitions); only the scanning loop is ours. One compiled
alternation, run over the whole text by `findall` (the C loop returns the
texts; no match object per token), with each token's kind found by a dict
lookup on its text, is several times faster than Lark's general-purpose
lexer, which was a third of all front-end time. Newlines and block comments
are passed on for nxc/syntax/postlex.py, which decides where statements end.
"""
from __future__ import annotations

import re
import string
from typing import NamedTuple


class Token(NamedTuple):
    """One token: its terminal name (`type`), text and where it starts.

    The lexer makes them with `tuple.__new__(Token, ...)`, skipping the
    named tuple's Python-level __new__ (half the cost, one per token).
    """
    type: str
    value: str
    line: int
    column: int

    def renamed(self, type: str, value: str) -> "Token":
        return _new(Token, (type, value, self.line, self.column))


_new = tuple.__new__


class LexError(Exception):
    """Text no token matches, at offset `pos` (line, column)."""

    def __init__(self, pos: int, line: int, column: int):
        super().__init__(f"no token at {line}:{column}")
        self.pos, self.line, self.column = pos, line, column

# Regex terminals, in the order they are tried (comments before `/`).
_REGEX_ORDER = ("NAME", "NEWLINE", "INT", "BLOCK_COMMENT", "LINE_COMMENT", "STRING", "COMPOUND_ASSIGN")


def terminal_specs(lark) -> list[tuple[str, str | None, str]]:
    """(name, literal text or None, regex) for each terminal Lark compiled."""
    return [(t.name, t.pattern.value if t.pattern.type == "str" else None, t.pattern.to_regexp())
            for t in lark.terminals]


class NxLexer:
    def __init__(self, terminals: list[tuple[str, str | None, str]]):
        """`terminals`: `terminal_specs` of grammar/nx.lark."""
        regex = {name: pattern for name, _, pattern in terminals}
        name_re = re.compile(regex["NAME"] + r"\Z")
        # Token text -> kind, for every token whose text alone says it:
        # keywords, operators and punctuation (the grammar's strings).
        self.fixed: dict[str, str] = {"\n": "NEWLINE", "\r\n": "NEWLINE"}
        literals: list[str] = []
        for name, text, _ in terminals:
            if text is not None:
                self.fixed[text] = name
                if not name_re.match(text):
                    literals.append(text)
        literals.sort(key=len, reverse=True)      # longest first: "<<" before "<"
        self.regex_terminals = [(name, re.compile(regex[name] + r"\Z")) for name in _REGEX_ORDER]
        # Any other text starting with a letter is a name, with a digit an
        # integer literal (checked against the grammar's patterns here).
        self.by_first: dict[str, str] = {}
        for ch in string.ascii_letters + "_" + string.digits:
            kind = "NAME" if re.match(regex["NAME"], ch) else "INT"
            if not re.match(regex[kind], ch):
                raise ValueError(f"grammar/nx.lark: {ch!r} starts neither a name nor an integer")
            self.by_first[ch] = kind
        tokens = [regex[name] for name in _REGEX_ORDER]
        # An opening that never closes is taken as one token, so that it is
        # reported as such (nxc/syntax/parse.py words it), not as a `/` or a stray
        # quote; an unclosed `/*` takes the rest of the text, which keeps
        # the scan linear however many of them there are.
        tokens.append(r"/\*[\s\S]*|\"")
        tokens += [re.escape(text) for text in literals]
        # (blanks)(token)|(blanks)(any other character): findall returns
        # the texts without a match object per token, and nothing is ever
        # skipped (an unexpected character comes back as the last group).
        self.master = re.compile(r"([ \t\f\r]*)(?:(" + "|".join(tokens) + r")|([^ \t\f\r]))")

    def lex(self, data: str, keep_comments: bool = False):
        """Tokens of `data`; `//` comments only with keep_comments (the
        formatter's token stream; the parser never sees them)."""
        fixed, by_first, new = self.fixed, self.by_first, _new
        pos, line, line_start = 0, 1, 0
        for groups in self.master.findall(data):
            pos += len(groups[0])
            text = groups[1]
            if not text:
                raise LexError(pos, line, pos - line_start + 1)     # groups[-1]: a stray character
            kind = fixed.get(text) or by_first.get(text[0]) or self._kind(text, pos, line, line_start)
            if kind == "NEWLINE":
                yield new(Token, (kind, "\n", line, pos - line_start + 1))
                line += 1
                pos += len(text)
                line_start = pos
                continue
            if kind == "LINE_COMMENT" and not keep_comments:
                pos += len(text)
                continue
            yield new(Token, (kind, text, line, pos - line_start + 1))
            if kind == "BLOCK_COMMENT":
                breaks = text.count("\n")
                if breaks:
                    line += breaks
                    line_start = pos + text.rindex("\n") + 1
            pos += len(text)

    def _kind(self, text: str, pos: int, line: int, line_start: int) -> str:
        """The kind of a rarer token (string, comment, compound assignment)."""
        for name, pattern in self.regex_terminals:
            if pattern.match(text):
                return name
        raise LexError(pos, line, pos - line_start + 1)     # an unclosed `/*...` or `"`
