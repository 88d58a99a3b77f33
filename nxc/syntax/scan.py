"""What a module is from its text alone, without parsing it: a gate (it has
`func main(`), a stub (`nxc port --stubs` wrote it) or a library module.

Collection (nxc/gates/collect.py) asks it of every file of a tree, and the
module index (nxc/incremental/index.py) keeps the answer with each entry, so
that an unchanged file is not read again to be collected. The front end
confirms the kind when the item runs.
"""
from __future__ import annotations

import re

from nxc.diagnostics import normalise_line_ends

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_MAIN = re.compile(r"^[ \t]*func[ \t]+main[ \t]*\(", re.M)
# The comment `nxc port --stubs` writes into a stub (nxc/tools/stubs.py).
STUB_MARK = "// nxc-stub:"
# ... and above each stub struct (`nxc info` says its layout is a guess).
GUESSED_ORDER = STUB_MARK + " field order guessed"
_STUB = re.compile("^" + re.escape(STUB_MARK), re.M)
KINDS = ("gate", "library", "stub")


def library_kind(text: str) -> str:
    """"stub" for a module `nxc port --stubs` wrote, else "library"."""
    return "stub" if _STUB.search(text) else "library"


def text_kind(text: str) -> tuple[str, int]:
    """("gate" | "library" | "stub", line of `func main`, 0 when none) of a module's text."""
    text = normalise_line_ends(text[1:] if text.startswith("\ufeff") else text)    # a BOM, as the loader drops it
    kind = library_kind(text)
    # Blank out comments but keep the line structure, so line numbers stay right.
    text = _BLOCK_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    text = _LINE_COMMENT.sub("", text)
    m = _MAIN.search(text)
    return ("gate", text.count("\n", 0, m.start()) + 1) if m else (kind, 0)
