"""Compare an editor's highlighting of a .nx file with the `nx` Pygments lexer
(nxc/tools/pygments_lexer.py, the reference for token classes), character by
character. tests/test_textmate.py (VS Code's TextMate grammar) and
tests/test_editors.py (Vim, Emacs) turn their editor's tokens into spans
(start, end, class, name kinds) and call `disagreements`.

Classes: comment, string, number, keyword, type (a built-in type),
constant (true, false), operator, or None (anything else). Compared both
ways: a character Pygments puts in a class is in that class in the editor,
and the reverse. Name kinds (function, type, constant: the name after
`func`, after `struct`/`type`, after `const`) one way only: where Pygments
has Name.Function, .Class or .Constant, the editor marks that kind of name
(editors also mark calls and type positions, which Pygments leaves plain).
"""
from __future__ import annotations

import functools
import glob
import os

from pygments.token import Comment, Keyword, Name, Number, Operator, String

from nxc.paths import bundled_dir
from nxc.tools.pygments_lexer import BUILTIN_TYPES, CONSTANTS, KEYWORDS, NxLexer

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx"))) + \
    sorted(glob.glob(os.path.join(HERE, "nx", "**", "*.nx"), recursive=True))

# Every word and literal form the lexer knows, so that a word the corpus never
# uses (or uses rarely) is still compared.
SAMPLE = "\n".join([
    "// sample.nx -- every keyword, type, constant and literal form",
    "// license_tier: ORIGINAL",
    "// lineage_id: x-1",
    "import \"nx_f32.nx\"",
    # `;` apart: `struct func` would make Pygments call `func` a struct's name
    " ; ".join(KEYWORDS + CONSTANTS + BUILTIN_TYPES),
    "const C: u64 = 0xDEADbeef + 0XFF + 0b1011 + 0B1 + 42 + 0",
    "type T = *u8",
    "struct S { a: *T, b: i64 }",
    "extern func ext(p: *void, n: i64) -> *void",
    "func f(s: *S, n: i64) -> bool {",
    "    // note: a body comment that looks like metadata",
    "    var x: i64 = sizeof(S) as i64 << 2 >> 1",
    "    x += 1; x -= 1; x *= 2; x /= 2; x %= 3; x &= 7; x |= 8; x ^= 1; x <<= 1; x >>= 1",
    "    if x == 1 && n != 2 || !(x <= 3) || x >= 4 || x < 5 || x > 6 { return ~x & 1 | 2 ^ 3 == 0 }",
    "    while true { break } /* a block",
    "    comment */ let y = -x % 3 + s.b * 2 / 1",
    "    return false",
    "}",
    "/* unclosed",
    "",
])

CLASSES = frozenset({"comment", "string", "number", "keyword", "type", "constant", "operator"})


@functools.lru_cache(maxsize=None)
def pygments_class(ttype) -> str | None:
    if ttype in Comment:
        return "comment"
    if ttype in String:
        return "string"
    if ttype in Number:
        return "number"
    if ttype in Keyword.Type:
        return "type"
    if ttype in Keyword.Constant:
        return "constant"
    if ttype in Keyword:
        return "keyword"
    if ttype in Operator:
        return "operator"
    return None


@functools.lru_cache(maxsize=None)
def pygments_name_kind(ttype) -> str | None:
    for t, kind in ((Name.Function, "function"), (Name.Class, "type"), (Name.Constant, "constant")):
        if ttype in t:
            return kind
    return None


def disagreements(path: str, text: str, spans, classes=CLASSES) -> list[str]:
    """`file:line:col: what` for each character where the editor's spans
    (start, end, class, name kinds, description; code point offsets) and
    Pygments disagree, for the classes in `classes`."""
    n = len(text)
    covered = [False] * n
    got: list[str | None] = [None] * n
    names: list[frozenset] = [frozenset()] * n
    what: list[str] = [""] * n
    for start, end, cls, kinds, desc in spans:
        k = end - start
        covered[start:end] = [True] * k
        got[start:end] = [cls] * k
        names[start:end] = [kinds] * k
        what[start:end] = [desc] * k
    kind_of: list[object] = [None] * n
    want: list[str | None] = [None] * n
    need: list[str | None] = [None] * n
    for start, ttype, value in NxLexer().get_tokens_unprocessed(text):
        k = len(value)
        kind_of[start:start + k] = [ttype] * k
        want[start:start + k] = [pygments_class(ttype)] * k
        need[start:start + k] = [pygments_name_kind(ttype)] * k

    def where(i: int) -> str:
        line = text.count("\n", 0, i) + 1
        return f"{os.path.relpath(path)}:{line}:{i - (text.rfind(chr(10), 0, i) + 1) + 1}"

    out = []
    for i, ch in enumerate(text):
        if ch in "\r\n":
            continue
        w = want[i] if want[i] in classes else None
        g = got[i] if got[i] in classes else None
        if w != g and not (ch.isspace() and (w is None or g is None)):
            # (a space between tokens belongs to nothing in particular)
            out.append(f"{where(i)}: {ch!r} is {kind_of[i]} in Pygments ({w}) but {what[i] or 'plain'} "
                       f"in the editor ({g})" + ("" if covered[i] else " (no token covers it)"))
        if need[i] is not None and need[i] not in names[i]:
            out.append(f"{where(i)}: {ch!r} is {kind_of[i]} in Pygments but {what[i] or 'plain'} "
                       f"in the editor (not a {need[i]} name)")
    return out
