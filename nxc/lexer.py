"""The lexer: source text -> tokens, for the Lark parser of grammar/nx.lark.

The token kinds and their spellings come from the grammar itself (Lark's
terminal definitions); only the scanning loop is ours. One compiled
alternation matched once per token, with keywords recognised by a dict
lookup, is about three times faster than Lark's general-purpose lexer,
which was a third of all front-end time. Newlines and block comments are
passed on for nxc/postlex.py, which decides where statements end.
"""
from __future__ import annotations

import re

from lark.exceptions import UnexpectedCharacters
from lark.lexer import Lexer, Token

# Regex terminals, in the order they are tried (comments before `/`).
_REGEX_ORDER = ("BLOCK_COMMENT", "LINE_COMMENT", "NEWLINE", "STRING", "INT", "NAME", "COMPOUND_ASSIGN")
_SKIPPED = frozenset({"LINE_COMMENT"})


class NxLexer(Lexer):
    def __init__(self, lexer_conf):
        by_name = {t.name: t for t in lexer_conf.terminals}
        name_re = re.compile(by_name["NAME"].pattern.to_regexp() + r"\Z")
        self.keywords: dict[str, str] = {}
        literals: list[tuple[str, str]] = []
        for t in lexer_conf.terminals:
            if t.pattern.type != "str":
                continue
            if name_re.match(t.pattern.value):
                self.keywords[t.pattern.value] = t.name
            else:
                literals.append((t.pattern.value, t.name))
        literals.sort(key=lambda item: -len(item[0]))      # longest first: "<<" before "<"
        parts = [f"(?P<{name}>{by_name[name].pattern.to_regexp()})" for name in _REGEX_ORDER]
        # An opening that never closes is reported as such (nxc/parse.py
        # words it), not as a `/` or a stray quote.
        parts.append(r"(?P<_UNCLOSED>/\*|\")")
        self.literal_kind = {}
        for i, (value, name) in enumerate(literals):
            parts.append(f"(?P<L{i}>{re.escape(value)})")
            self.literal_kind[f"L{i}"] = name
        # Blanks before a token are part of its match: one regex call a token.
        self.master = re.compile(r"[ \t\f\r]*(?:" + "|".join(parts) + ")")

    def lex(self, data: str):
        match = self.master.match
        keywords, literal_kind = self.keywords, self.literal_kind
        pos, line, line_start, end = 0, 1, 0, len(data)
        while pos < end:
            m = match(data, pos)
            if m is None:
                rest = len(data) - len(data[pos:].lstrip(" \t\f\r"))
                if rest == end:
                    break                   # only blanks were left
                raise UnexpectedCharacters(data, rest, line, rest - line_start + 1)
            kind = m.lastgroup
            start = m.start(kind)
            if kind == "_UNCLOSED":
                raise UnexpectedCharacters(data, start, line, start - line_start + 1)
            value = m.group(kind)
            col = start - line_start + 1
            new_pos = m.end()
            pos = start
            if kind not in _SKIPPED:
                if kind == "NAME":
                    kind = keywords.get(value, "NAME")
                elif kind[0] == "L" and kind in literal_kind:
                    kind = literal_kind[kind]
                yield Token(kind, value, pos, line, col)
            if kind == "NEWLINE" or kind == "BLOCK_COMMENT":
                breaks = value.count("\n")
                if breaks:
                    line += breaks
                    line_start = pos + value.rindex("\n") + 1
            pos = new_pos
