"""The `did you mean ...?` of an undefined name.

A suggestion is only worth making for a slip of the keyboard: a name within
a small edit distance (a quarter of its length, a transposition counting
once; names shorter than three letters only for a difference of case),
never one that merely shares a prefix (`nx_f32_rmsnorm` is not a typo of
`nx_f32_min`). Among close names, the one from the same family (the longest
run of shared `_`-separated words, e.g. the same module's prefix) wins. When
nothing is close and the module has an import commented out whose name the
missing name starts like, the message says so: that is how a port with a
module we lack usually looks. A C type name (`int *p = 0` parses as a
product) gets the .nx declaration instead.
"""
from __future__ import annotations

import os
import re

from nxc.syntax.hints import C_TYPE_NAMES, c_declaration

_COMMENTED_IMPORT = re.compile(r'^\s*//\s*import\s+"([^"]+)"', re.MULTILINE)


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance (a transposition is one edit); any
    value above `limit` is returned as limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def _shared_words(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.lower().split("_"), b.lower().split("_")):
        if x != y:
            break
        n += 1
    return n


def closest_name(name: str, candidates) -> str | None:
    # one- and two-letter names are not typos of one another ('p' for 'f')
    limit = max(1, len(name) // 4) if len(name) >= 3 else 0
    best = None
    for c in set(candidates):
        if c == name:
            continue
        d = 0 if c.lower() == name.lower() else edit_distance(name, c, limit)
        if d > limit:
            continue
        key = (d, -_shared_words(name, c), c)
        if best is None or key < best[0]:
            best = (key, c)
    return None if best is None else best[1]


def suggest_undefined(name: str, candidates, pos=None) -> str:
    """The text after `undefined name 'x'`: `; did you mean 'y'?`, a note
    about a commented-out import it may come from, or nothing."""
    text = getattr(getattr(pos, "file", None), "text", "") or ""
    if name in C_TYPE_NAMES and text:
        # `int *p = 0` parses (as int * p = 0): say what it was meant to be
        line = pos.file.line_text(pos.line)[pos.col - 1:]
        declaration = c_declaration(line)
        if declaration is not None:
            return f"; {declaration}"
    close = closest_name(name, candidates)
    if close is not None:
        return f"; did you mean '{close}'?"
    for path in _COMMENTED_IMPORT.findall(text):
        stem = os.path.splitext(os.path.basename(path))[0]
        if _shared_words(name, stem) >= max(2, len(stem.split("_")) - 1) or \
                name.lower().replace("_", "").startswith(stem.lower().replace("_", "")):
            return f"; it may come from \"{path}\", whose import is commented out"
    return ""
