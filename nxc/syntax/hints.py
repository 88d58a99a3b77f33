"""Syntax errors that name the likely mistake, for code ported from C or
written from a page: unclosed brackets, a missing `{` after a condition, and
C forms (`int x = 3`, `for (...)`, `x++`, `p->a`, `1.5`).

Only the error path of nxc/syntax/parse.py calls this, after the parser has
stopped: it re-reads the tokens before the error, so the parse itself pays
nothing for it. Each hint returns (pos, message, notes) or None, and the
first that applies wins; none applying leaves the parser's own message.
"""
from __future__ import annotations

import re
import struct

from nxc.diagnostics import Diagnostics, Pos, SourceFile
from nxc.syntax.lexer import LexError, Token

_OPEN_TO_CLOSE = {"(": ")", "[": "]", "{": "}"}
_CLOSE_TO_OPEN = {v: k for k, v in _OPEN_TO_CLOSE.items()}
# Tokens that start a statement or a declaration: where one stands at the
# start of a line inside ( or [, the bracket before it was never closed.
_STARTS_STATEMENT = {"let", "var", "if", "while", "return", "break", "continue", "func", "const",
                     "struct", "import", "type", "extern", "}"}
_C_TYPES = {"int": "i32", "long": "i64", "short": "i16", "char": "i8", "unsigned": "u32", "signed": "i32",
            "float": "i64", "double": "i64", "size_t": "u64", "ssize_t": "i64", "int8_t": "i8",
            "int16_t": "i16", "int32_t": "i32", "int64_t": "i64", "uint8_t": "u8", "uint16_t": "u16",
            "uint32_t": "u32", "uint64_t": "u64", "uintptr_t": "u64", "intptr_t": "i64"}
_FLOAT_TYPES = {"float", "double"}
C_TYPE_NAMES = frozenset(_C_TYPES)


def tokens_before(lexer, text: str, tok: Token) -> list[Token]:
    """The tokens (newlines included, comments not) before `tok`; where the
    text does not lex further, as many as it does."""
    out: list[Token] = []
    try:
        for t in lexer.lex(text):
            if tok.type != "$END" and (t.line, t.column) >= (tok.line, tok.column):
                break
            out.append(t)
    except LexError:
        pass
    return out


def explain(src: SourceFile, before: list[Token], tok: Token, expected: set[str]):
    """A specific message for the parse error at `tok`, or None."""
    for hint in (_unclosed_bracket, _c_form, _missing_brace):
        found = hint(src, before, tok, expected)
        if found is not None:
            return found
    return None


def _pos(src: SourceFile, t: Token) -> Pos:
    return Pos(src, t.line, t.column)


def _end_pos(src: SourceFile) -> Pos:
    lines = src.text.splitlines() or [""]
    return Pos(src, len(lines), len(lines[-1]) + 1)


def _significant(before: list[Token]) -> list[Token]:
    return [t for t in before if t.type not in ("NEWLINE", "BLOCK_COMMENT")]


def _first_on_line(src: SourceFile, t: Token) -> bool:
    return not src.line_text(t.line)[: t.column - 1].strip()


def _indent(src: SourceFile, line: int) -> int:
    text = src.line_text(line)
    return len(text) - len(text.lstrip())


def _bracket_state(before: list[Token]):
    """(brackets still open, matched (opener, closer) pairs), matching kinds."""
    stack: list[Token] = []
    pairs: list[tuple[Token, Token]] = []
    for t in before:
        if t.value in _OPEN_TO_CLOSE and t.type != "STRING":
            stack.append(t)
        elif t.value in _CLOSE_TO_OPEN and stack and stack[-1].value == _CLOSE_TO_OPEN[t.value]:
            pairs.append((stack.pop(), t))
    return stack, pairs


def _unclosed_bracket(src, before, tok, expected):
    stack, pairs = _bracket_state(before)
    if not stack:
        return None
    at_end = tok.type == "$END"
    if at_end:
        opener = stack[-1]
        reason = ""
        if opener.value == "{":
            # A `}` indented like an outer line rather than like its own `{`
            # most likely belongs to that outer one: the `{` it was taken for
            # is the one left open.
            for o, c in pairs:
                if o.value == "{" and o.line > opener.line and _first_on_line(src, c) \
                        and _indent(src, c.line) != _indent(src, o.line):
                    reason = (f" (the '}}' on line {c.line} that closes it is indented like line "
                              f"{_outer_line(src, stack, c)})")
                    opener = o
                    break
        close = _OPEN_TO_CLOSE[opener.value]
        note = Diagnostics.note(_end_pos(src), f"the parser reached the end of the file with '{opener.value}' "
                                               "still open")
        return (_pos(src, opener), f"'{opener.value}' is never closed: expected '{close}' before the end of "
                                   f"the file{reason}", [note])
    opener = stack[-1]
    if opener.value == "{" or opener.line >= tok.line or not _first_on_line(src, tok):
        return None
    if tok.value not in _STARTS_STATEMENT:
        return None
    close = _OPEN_TO_CLOSE[opener.value]
    what = f"'{tok.value}'"
    note = Diagnostics.note(_pos(src, tok), f"the parser gave up here, at {what}: inside '{opener.value}' a "
                                            "newline does not end the statement")
    return (_pos(src, opener), f"'{opener.value}' is never closed: expected '{close}' before {what} on line "
                               f"{tok.line}", [note])


def _outer_line(src, stack, closer) -> int:
    """The line of the innermost open `{` whose line is indented like `closer`."""
    want = _indent(src, closer.line)
    for o in reversed(stack):
        if o.value == "{" and _indent(src, o.line) == want:
            return o.line
    return stack[0].line


def _missing_brace(src, before, tok, expected):
    if "LBRACE" not in expected:
        return None
    sig = _significant(before)
    # the `if`/`while` of the statement being parsed: the last one at the
    # current bracket depth, with no `{` after it
    depth = 0
    for t in reversed(sig):
        if t.value in _CLOSE_TO_OPEN:
            depth += 1
        elif t.value in _OPEN_TO_CLOSE:
            if depth == 0:
                return None
            depth -= 1
        elif depth == 0 and t.value in ("if", "while") and t.type != "NAME":
            found = "a newline" if tok.type == "_SEP" and tok.value == "\n" else _describe(tok)
            return (_pos(src, tok), f"expected '{{' after the '{t.value}' condition, found {found} "
                                    f"(the body of '{t.value}' is always a block: {t.value} cond {{ ... }})",
                    [Diagnostics.note(_pos(src, t), f"the '{t.value}' is here")])
    return None


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "the end of the file"
    if tok.type == "_SEP":
        return "';'"
    return f"'{tok.value}'"


def _c_form(src, before, tok, expected):
    sig = _significant(before)
    prev = sig[-1] if sig else None
    prev2 = sig[-2] if len(sig) > 1 else None
    # `1.5`: INT '.' INT, written together
    if tok.type == "INT" and prev is not None and prev.value == "." and prev2 is not None \
            and prev2.type == "INT" and _adjacent(prev2, prev) and _adjacent(prev, tok):
        return _float_literal(src, prev2, tok)
    if tok.type == "INT" and prev is not None and prev.value == "." and _adjacent(prev, tok) \
            and (prev2 is None or prev2.type not in ("NAME", "INT") and prev2.value not in (")", "]")):
        return _float_literal(src, prev, tok)
    # `x++`, `x--`, `++x`; at the end of a line the operator does not end
    # the statement, so the parser only stops at the next line's first token
    for k in (1, 2):                       # the operator's second char: tok, or the last token
        if len(sig) < k:
            continue
        first, second = sig[-k], (tok if k == 1 else sig[-1])
        if first.value in ("+", "-") and second.value == first.value and _adjacent(first, second):
            op = first.value * 2
            target = sig[-k - 1].value if len(sig) > k and sig[-k - 1].type == "NAME" else "x"
            return (_pos(src, first), f"'{op}' is not a .nx operator: write '{target} = {target} "
                                      f"{first.value} 1' (or '{target} {first.value}= 1')", [])
    # `for (...)`, `for i in ...`: the statement starts with the name `for`
    start = _statement_start(sig)
    after_start = None
    if start is not None:
        k = next(i for i in range(len(sig) - 1, -1, -1) if sig[i] is start)
        after_start = sig[k + 1] if k + 1 < len(sig) else tok
    if start is not None and start.type == "NAME" and start.value == "for" \
            and (after_start.value == "(" or after_start.type == "NAME"):
        return (_pos(src, start), "'for' is not a .nx statement: write the loop with 'while' "
                                  "(var i: i64 = 0, then while i < n { ...; i = i + 1 })", [])
    # `int x = 3`: a C type name, then the name being declared
    if start is not None and start.type == "NAME" and start.value in _C_TYPES and tok.type == "NAME":
        line = src.line_text(start.line)[start.column - 1:]
        suggestion = c_declaration(line)
        if suggestion is not None:
            return (_pos(src, start), suggestion, [])
    # `p->a`: C's field access through a pointer, inside a function body
    if tok.value == "->" and prev is not None and (prev.type == "NAME" or prev.value in (")", "]")):
        stack, _ = _bracket_state(before)
        if stack and any(o.value == "{" for o in stack):       # in a body, not a signature
            m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", src.line_text(tok.line)[tok.column + 1:])
            base = prev.value if prev.type == "NAME" else "(...)"
            field = m.group(1) if m else "field"
            return (_pos(src, tok), f"'->' is C's field access through a pointer: .nx writes '{base}.{field}' "
                                    "(a field through a pointer is '.' too)", [])
    return None


_C_DECL = re.compile(r"((?:(?:%s)\b\s*|\*\s*)+?)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(.*?))?\s*;?\s*(?://.*)?$"
                     % "|".join(sorted(_C_TYPES, key=len, reverse=True)))


def c_declaration(line: str) -> str | None:
    """The message for a C declaration at the start of `line` (`int x = 3;`,
    `unsigned long *p = 0;`), or None if it is not one. The checker uses it
    too: `int *p = 0` parses (as a product), then `int` is undefined."""
    m = _C_DECL.match(line)
    if m is None or m.group(2) in _C_TYPES:
        return None
    words = m.group(1).replace("*", " * ").split()
    value = m.group(3) or "..."
    extra = ""
    if _FLOAT_TYPES & set(words):
        extra = " (a float is held as its float32 bit pattern in an i64)"
        bits = _f32_bits(value.rstrip("fF"))
        if bits is not None:
            extra = f" (a float is held as its float32 bit pattern in an i64: 0x{bits:08X} is {value})"
            value = f"0x{bits:08X}"
    return (f"C declaration: write 'var {m.group(2)}: {_c_type(words)} = {value}' (or 'let' for a value "
            f"that never changes){extra}")


def _c_type(words: list[str]) -> str:
    """`unsigned long *` -> `*u64`: the .nx type of a C declaration's type words."""
    stars = "*" * words.count("*")
    names = [w for w in words if w != "*"]
    if "unsigned" in names or "signed" in names:
        rest = [w for w in names if w not in ("unsigned", "signed")]
        base = _C_TYPES[rest[-1]] if rest else "i32"
        base = ("u" if "unsigned" in names else "i") + base[1:]
    else:
        base = _C_TYPES[names[-1]]
    return stars + base


def _adjacent(a: Token, b: Token) -> bool:
    return a.line == b.line and a.column + len(a.value) == b.column


def _statement_start(sig: list[Token]) -> Token | None:
    """The first token of the statement the parser is in (after the last
    newline, `;` or brace at the current depth)."""
    depth = 0
    for i in range(len(sig) - 1, -1, -1):
        t = sig[i]
        if t.value in (")", "]"):
            depth += 1
        elif t.value in ("(", "["):
            if depth == 0:
                continue
            depth -= 1
        elif depth == 0 and (t.value in ("{", "}", ";") or (i > 0 and sig[i - 1].line != t.line
                                                          and not sig[i - 1].value in ("(", "[", ",")
                                                          and _ends_line(sig[i - 1]))):
            if t.value in ("{", "}", ";"):
                return sig[i + 1] if i + 1 < len(sig) else None
            return t
    return sig[0] if sig else None


def _ends_line(t: Token) -> bool:
    return t.type in ("NAME", "INT", "STRING") or t.value in (")", "]", "}", "true", "false", "return",
                                                                "break", "continue")


def _f32_bits(literal: str) -> int | None:
    """The float32 bit pattern of a decimal literal, or None if it is not one."""
    try:
        return struct.unpack(">I", struct.pack(">f", float(literal)))[0]
    except (ValueError, OverflowError):
        return None


def _float_literal(src, first: Token, last: Token):
    text = src.line_text(first.line)[first.column - 1: last.column - 1 + len(last.value)]
    bits = _f32_bits(text.rstrip("fF"))
    example = f"0x{bits:08X} for {text}" if bits is not None else "0x3FC00000 for 1.5"
    return (Pos(src, first.line, first.column),
            f"float literals do not exist in .nx: a float32 is its bit pattern in an i64 "
            f"({example}), or convert an integer with nx_i32_to_f32", [])
