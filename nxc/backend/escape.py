"""Text from outside the program (file and folder names) in generated code.

A path may hold anything a file system allows: quotes, newlines, `*/`,
`??/` (a trigraph under -std=c11: `\\`, which with a newline continues the
line), `#line`, bytes that are not UTF-8. None of it may change the meaning
of the generated C or Python, so both emitters pass every such text through
here before it reaches a comment, a string literal or a `#line` directive.
"""
from __future__ import annotations

import string
from functools import lru_cache

# What may stand for itself in a comment: no `*`, `/` after `*`, `?`, `\`,
# quote or line end can be formed from these (`/` alone is harmless).
_COMMENT_SAFE = frozenset(string.ascii_letters + string.digits + " ._-+/,:=@~()[]{}#%&!$^")
# What may stand for itself in a C string literal.
_C_STRING_SAFE = frozenset(bytes(string.ascii_letters + string.digits + " ._-+/,:=@~()[]{}#%&!$^*'<>;|`", "ascii"))


def _bytes_of(text: str) -> bytes:
    """The bytes the file system holds (undecodable bytes came in as surrogates)."""
    return text.encode("utf-8", "surrogateescape")


def comment_text(text: str) -> str:
    """`text` for a C or Python comment (or a code object's file name):
    plain characters as they are, every other byte as `\\xNN`."""
    out = []
    for b in _bytes_of(text):
        c = chr(b)
        out.append(c if c in _COMMENT_SAFE else f"\\x{b:02x}")
    return "".join(out)


@lru_cache(maxsize=4096)     # asked for each #line of a module's C: the same few paths, byte by byte
def c_string_body(text: str) -> str:
    """`text` as the inside of a C string literal (`#line N "..."`): the
    same bytes, every unusual one as a three-digit octal escape (a hex
    escape would swallow a following digit)."""
    return "".join(chr(b) if b in _C_STRING_SAFE else f"\\{b:03o}" for b in _bytes_of(text))
