"""Statement ends: the newline rule of docs/language.md, between lexer and parser.

Go's rule: a newline ends a statement only when the line's last token could
end one (a name, literal, `)`, `]`, `}`, `return`, `break`, `continue`).
Newlines inside ( ) and [ ] never do, so argument lists may span lines. A
newline right before `else` is dropped so that `}` NEWLINE `else` works.
`;` ends a statement anywhere. A block comment that spans lines counts as a
newline. The parser sees all of this as one terminal, _SEP.
"""
from __future__ import annotations

from nxc.syntax.lexer import Token

# Terminal names as Lark gives them to the grammar's anonymous strings.
_ENDS_STATEMENT = frozenset({
    "NAME", "INT", "STRING", "TRUE", "FALSE",
    "RPAR", "RSQB", "RBRACE", "RETURN", "BREAK", "CONTINUE",
})
_OPENERS = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}
_CLOSERS = {"RPAR", "RSQB", "RBRACE"}
_SPECIAL = frozenset({"BLOCK_COMMENT", "NEWLINE", "SEMI", *_OPENERS, *_CLOSERS})


class StatementEnds:
    # Terminals only this pass consumes (no grammar rule uses them); Lark
    # reads this to keep them when it compiles the grammar.
    always_accept = ("NEWLINE", "BLOCK_COMMENT", "SEMI")

    def __init__(self):
        # Brackets still open when the token stream ended; the parser's error
        # reporting reads this to point at an unclosed `(` instead of at EOF.
        self.open_brackets: list[Token] = []

    def process(self, stream):
        stack: list[Token] = []
        self.open_brackets = stack
        pending: Token | None = None   # a newline held back: is `else` next?
        prev = None
        tok = None
        for tok in stream:
            kind = tok.type
            if pending is None and kind not in _SPECIAL:
                prev = kind            # most tokens: nothing to decide
                yield tok
                continue
            if kind == "BLOCK_COMMENT":
                if "\n" not in tok.value:
                    continue
                kind = "NEWLINE"
            if kind == "NEWLINE":
                if stack and stack[-1].type != "LBRACE":
                    continue
                if pending is None and prev in _ENDS_STATEMENT:
                    pending = tok
                continue
            if pending is not None:
                if kind != "ELSE":
                    yield pending.renamed("_SEP", "\n")
                pending = None
            if kind == "SEMI":
                prev = "SEMI"
                yield tok.renamed("_SEP", ";")
                continue
            if kind in _OPENERS:
                stack.append(tok)
            elif kind in _CLOSERS and stack:
                stack.pop()
            prev = kind
            yield tok
        if pending is not None:
            yield pending.renamed("_SEP", "\n")
        # The parser's end marker (nxc/syntax/lalr.py), where the last token was.
        yield Token("$END", "", 1, 1) if tok is None else tok.renamed("$END", "")
