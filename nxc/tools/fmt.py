"""`nxc fmt`: print a module from its token stream, in one layout.

Like zig fmt, the output is rendered from the tokens (nxc.syntax.parse
.source_tokens keeps comments and line ends), not from the AST: a token
stream still holds every comment where it was written, which is what
gofmt's comment map has to reconstruct. Only the blanks between tokens are
decided here; the programmer's line breaks stay, so statement ends (and
with them the AST) cannot change.

Layout: 4 spaces of indentation per `(`, `[` or `{` open at the line's start,
a line beginning with closers dedented by them (the rule nxc/tools/port.py
restores pages by, so a restored page is already formatted); one space
around binary operators, `=`, `->`, `as`, after `,` `:` `;` and keywords;
a comment after code keeps its column where the code leaves room, else
follows it after one blank;
none inside ( ) and [ ], before a call's `(` or after a unary operator; one
space inside a one-line `{ ... }`; at most one blank line in a row; no
blank lines at the start or end; comments unchanged but for trailing blanks.
"""
from __future__ import annotations

from nxc.diagnostics import Diagnostics, SourceFile
from nxc.syntax.lexer import Token
from nxc.syntax.parse import parse_source, source_tokens

INDENT = "    "
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")", "]", "}"}
_COMMENTS = ("LINE_COMMENT", "BLOCK_COMMENT")
_KEYWORD_VALUES = {"true", "false"}
# Pairs that would lex as another token if written without a blank between.
_WOULD_MERGE = {"&&", "||", "->", "//", "/*", "*/", "<<", ">>", "==", "!=", "<=", ">=",
                "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="}
_MAYBE_UNARY = {"-", "*", "&"}
_ALWAYS_UNARY = {"!", "~"}


class FormatError(Exception):
    """The formatter would have changed the tokens: a bug, never the user's."""


def _ends_operand(tok: Token | None) -> bool:
    if tok is None:
        return False
    return tok.type in ("NAME", "INT", "STRING") or tok.value in (")", "]") or tok.value in _KEYWORD_VALUES


def _lines(tokens: list[Token]) -> list[list[Token]]:
    """Tokens grouped by source line ([] for a blank line); a block comment
    spanning lines belongs to the line it starts on, and the tokens after it
    to the same output line (its text holds the line breaks)."""
    lines: list[list[Token]] = [[]]
    for tok in tokens:
        if tok.type == "NEWLINE":
            lines.append([])
        else:
            lines[-1].append(tok)
    return lines


def format_text(text: str) -> str:
    """The formatted text of a module that parses (see format_source)."""
    tokens = source_tokens(text)
    out: list[str] = []
    stack: list[str] = []                    # open brackets
    prev_sig: Token | None = None            # the previous non-comment token
    blank_run = 0
    for line in _lines(tokens):
        if not line:
            blank_run += 1
            continue
        if out and blank_run:
            out.append("")                   # at most one blank line in a row
        blank_run = 0
        lead = 0
        for tok in line:
            if tok.value not in _CLOSERS:
                break
            lead += 1
        level = max(len(stack) - lead, 0)
        parts = [INDENT * level]
        prev: Token | None = None
        prev_unary = False
        for tok in line:
            unary = False
            if tok.type not in _COMMENTS:
                if tok.value in _ALWAYS_UNARY:
                    unary = True
                elif tok.value in _MAYBE_UNARY:
                    at_statement_start = prev is None and (not stack or stack[-1] == "{")
                    unary = at_statement_start or not _ends_operand(prev_sig)
            if prev is not None:
                gap = _gap(prev, tok, prev_unary)
                if tok.type == "LINE_COMMENT":
                    # A trailing comment keeps its column (comments aligned
                    # in a column stay so), at least one blank after the code.
                    width = sum(len(p) for p in parts)
                    gap = " " * max(tok.column - 1 - width, 1)
                if gap == "" and (prev.value[-1:] + tok.value[:1]) in _WOULD_MERGE:
                    gap = " "
                parts.append(gap)
            parts.append(_text_of(tok))
            if tok.type not in _COMMENTS:
                if tok.value in _OPENERS:
                    stack.append(tok.value)
                elif tok.value in _CLOSERS and stack:
                    stack.pop()
                prev_sig = tok
            prev, prev_unary = tok, unary
        out.append("".join(parts).rstrip())
    result = "\n".join(out).rstrip("\n") + "\n" if out else ""
    _same_tokens(tokens, source_tokens(result))
    return result


def _text_of(tok: Token) -> str:
    if tok.type in _COMMENTS:
        return "\n".join(part.rstrip() for part in tok.value.split("\n"))
    return tok.value


def _gap(a: Token, b: Token, a_unary: bool) -> str:
    """The blank between two tokens on one line."""
    av, bv = a.value, b.value
    if b.type == "LINE_COMMENT":
        return " "
    if a.type == "BLOCK_COMMENT" or b.type == "BLOCK_COMMENT":
        return "" if av in ("(", "[") or bv in (")", "]", ",", ";") else " "
    if bv in (",", ";", ":"):
        return ""
    if av in (",", ";", ":"):
        return " "
    if av == "." or bv == ".":
        return ""
    if av in ("(", "[") or bv in (")", "]"):
        return ""
    if a_unary:
        return ""
    if bv == "(":
        return "" if a.type == "NAME" or av in (")", "]", "sizeof") else " "
    if bv == "[":
        return "" if _ends_operand(a) else " "
    if av == "{" and bv == "}":
        return ""
    return " "


def _same_tokens(before: list[Token], after: list[Token]) -> None:
    def key(tokens):
        return [(t.type, _text_of(t)) for t in tokens if t.type != "NEWLINE"]
    if key(before) != key(after):
        raise FormatError("formatting would change the tokens")


def format_source(src: SourceFile, diags: Diagnostics) -> str:
    """The formatted text of `src`. A file that does not parse is not
    formatted: its syntax error is reported through `diags` and raised
    (diagnostics.CompileError)."""
    parse_source(src, diags)
    return format_text(src.text)


def mixed_line_ends(path: str) -> str | None:
    """"1 CRLF, 2 LF" when the file at `path` ends its lines in more than one
    way (None when it uses one, or cannot be read). The formatter works on
    the text with its line ends made LF (diagnostics.normalise_line_ends),
    so a mix would otherwise look formatted; it is written back with LF."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    crlf = raw.count(b"\r\n")
    cr = raw.count(b"\r") - crlf
    lf = raw.count(b"\n") - crlf
    kinds = [(n, word) for n, word in ((crlf, "CRLF"), (lf, "LF"), (cr, "CR")) if n]
    return ", ".join(f"{n} {word}" for n, word in kinds) if len(kinds) > 1 else None
