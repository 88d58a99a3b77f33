"""The VS Code extension's TextMate grammar (editors/vscode/syntaxes/nx.tmLanguage.json)
agrees with the `nx` Pygments lexer (nxc/tools/pygments_lexer.py), character by
character, on every bundled module and every .nx file under tests/nx.

The grammar is run as VS Code runs it: vscode-textmate on vscode-oniguruma
(editors/vscode/test/tokenize.js, node packages from the committed lock file,
installed once by tests/vscode_support.py). Pygments token kinds and TextMate scopes map so:

    Pygments               TextMate scope (any in the character's stack)
    Comment.*              comment.*
    String                 string.*
    Number.*               constant.numeric.*
    Keyword.Type           storage.type.*       (i64, u8, bool, void, ...)
    Keyword.Constant       constant.language.*  (true, false)
    Keyword (the rest)     keyword.* but not keyword.operator.*
    Operator               keyword.operator.*
    Name.Function          entity.name.function.*   (at a `func` definition)
    Name.Class             entity.name.type.*       (after `struct`, `type`)
    Name.Constant          variable.other.constant.* (after `const`)

Both ways for the first seven (a character Pygments calls a keyword is a
keyword.* scope, and a keyword.* scope is a character Pygments calls a
keyword), one way for the names: the grammar also marks calls and the types
after `:` and `as`, which Pygments leaves plain.
"""
from __future__ import annotations

import functools
import glob
import json
import os
import subprocess

import pytest
from pygments.token import Comment, Keyword, Name, Number, Operator, String

from nxc.paths import bundled_dir
from nxc.tools.pygments_lexer import BUILTIN_TYPES, CONSTANTS, KEYWORDS, NxLexer

from vscode_support import EXTENSION, node, node_env, node_modules

HERE = os.path.dirname(os.path.abspath(__file__))
GRAMMAR = os.path.join(EXTENSION, "syntaxes", "nx.tmLanguage.json")
TOKENIZE = os.path.join(EXTENSION, "test", "tokenize.js")
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


NAME_SCOPES = ((Name.Function, "entity.name.function."), (Name.Class, "entity.name.type."),
               (Name.Constant, "variable.other.constant."))


@functools.lru_cache(maxsize=None)
def name_scope(ttype) -> str | None:
    """The scope a Pygments Name.Function, .Class or .Constant token needs in TextMate."""
    return next((prefix for t, prefix in NAME_SCOPES if ttype in t), None)


@functools.lru_cache(maxsize=None)
def textmate_class(scopes: tuple[str, ...]) -> str | None:
    def has(prefix: str) -> bool:
        return any(s.startswith(prefix) for s in scopes)
    if has("comment."):
        return "comment"
    if has("string."):
        return "string"
    if has("constant.numeric."):
        return "number"
    if has("storage.type."):
        return "type"
    if has("constant.language."):
        return "constant"
    if has("keyword.operator."):
        return "operator"
    if has("keyword."):
        return "keyword"
    return None


def tokenize(paths: list[str], grammar: str = GRAMMAR) -> dict[str, list]:
    modules = node_modules()
    r = subprocess.run([node(), TOKENIZE, "--grammar", grammar, *paths], env=node_env(modules),
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def disagreements(path: str, tokens: list) -> list[str]:
    """Where the TextMate tokens of `path` and the Pygments tokens disagree (file:line:col: what)."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    # per character: the TextMate token's scopes and class, the Pygments token's kind and class
    scopes: list[list[str] | None] = [None] * len(text)
    tm: list[str | None] = [None] * len(text)
    for start, end, sc in tokens:
        cls = textmate_class(tuple(sc))
        scopes[start:end] = [sc] * (end - start)
        tm[start:end] = [cls] * (end - start)
    kinds: list[object] = [None] * len(text)
    pyg: list[str | None] = [None] * len(text)
    need: list[str | None] = [None] * len(text)       # the scope a Name.Function, .Class, .Constant needs
    for start, ttype, value in NxLexer().get_tokens_unprocessed(text):
        n = len(value)
        kinds[start:start + n] = [ttype] * n
        pyg[start:start + n] = [pygments_class(ttype)] * n
        need[start:start + n] = [name_scope(ttype)] * n

    def where(i: int) -> str:
        line = text.count("\n", 0, i) + 1
        return f"{os.path.relpath(path)}:{line}:{i - (text.rfind(chr(10), 0, i) + 1) + 1}"

    def scope_text(i: int) -> str:
        return " ".join(scopes[i][1:]) or "plain"

    out = []
    for i, ch in enumerate(text):
        if ch in "\r\n":
            continue
        if scopes[i] is None:
            out.append(f"{where(i)}: no TextMate token covers {ch!r}")
            continue
        want, got = pyg[i], tm[i]
        if want != got and not (ch.isspace() and (want is None or got is None)):
            # (spaces between tokens belong to nothing in particular)
            out.append(f"{where(i)}: {ch!r} is {kinds[i]} in Pygments ({want}) but {scope_text(i)} "
                       f"in TextMate ({got})")
        prefix = need[i]
        if prefix is not None and not any(s.startswith(prefix) for s in scopes[i]):
            out.append(f"{where(i)}: {ch!r} is {kinds[i]} in Pygments but {scope_text(i)} "
                       f"in TextMate (no {prefix}*)")
    return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("textmate") / "sample.nx"
    path.write_text(SAMPLE, encoding="utf-8")
    return str(path)


def test_the_corpus_is_there():
    assert len(CORPUS) >= 25 and any(p.endswith("nx_qwen3.nx") for p in CORPUS)


def test_tokens_agree_with_pygments(sample):
    paths = CORPUS + [sample]
    tokens = tokenize(paths)
    assert sorted(tokens) == sorted(paths)
    bad = [d for p in paths for d in disagreements(p, tokens[p])]
    assert bad == [], f"{len(bad)} disagreements, the first:\n" + "\n".join(bad[:25])


def scopes_of(tokens: list, text: str, word: str, nth: int = 0) -> list[str]:
    at = -1
    for _ in range(nth + 1):
        at = text.index(word, at + 1)
    return next(sc for s, e, sc in tokens if s <= at < e)


def test_scopes_an_editor_theme_needs(sample):
    tokens = tokenize([sample])[sample]
    text = SAMPLE
    assert "comment.line.double-slash.metadata.nx" in scopes_of(tokens, text, "license_tier")
    assert "string.unquoted.metadata.nx" in scopes_of(tokens, text, "ORIGINAL")
    # header metadata only in the header: the same shape in a body is a plain comment
    body = scopes_of(tokens, text, "note: a body")
    assert "comment.line.double-slash.nx" in body and not any("metadata" in s for s in body)
    assert "entity.name.function.nx" in scopes_of(tokens, text, "f(s:")
    assert "entity.name.function.nx" in scopes_of(tokens, text, "ext(")
    assert "entity.name.type.struct.nx" in scopes_of(tokens, text, "S {")
    assert "entity.name.type.nx" in scopes_of(tokens, text, "S, n")        # `s: *S`
    assert "entity.name.type.nx" in scopes_of(tokens, text, "S) as")       # sizeof(S)
    assert "keyword.operator.pointer.nx" in scopes_of(tokens, text, "*void")
    assert "variable.other.property.nx" in scopes_of(tokens, text, "b * 2")
    assert "constant.numeric.hex.nx" in scopes_of(tokens, text, "0xDEAD")
    assert "constant.numeric.binary.nx" in scopes_of(tokens, text, "0b1011")
    assert "keyword.operator.assignment.compound.nx" in scopes_of(tokens, text, "<<=")


def test_a_call_is_a_function_name(tmp_path):
    path = tmp_path / "calls.nx"
    text = "func g() -> i64 {\n    return nx_f32_add(1, 2) + h (3)\n}\n"
    path.write_text(text, encoding="utf-8")
    tokens = tokenize([str(path)])[str(path)]
    assert "entity.name.function.call.nx" in scopes_of(tokens, text, "nx_f32_add")
    assert "entity.name.function.call.nx" in scopes_of(tokens, text, "h (")
    assert "keyword.control.nx" in scopes_of(tokens, text, "return")


def test_a_file_that_does_not_open_with_a_comment_has_no_header(tmp_path):
    path = tmp_path / "nohead.nx"
    text = "import \"a.nx\"\n// license_tier: ORIGINAL\n"
    path.write_text(text, encoding="utf-8")
    sc = scopes_of(tokenize([str(path)])[str(path)], text, "license_tier")
    assert "comment.line.double-slash.nx" in sc and not any("metadata" in s for s in sc)


def test_a_broken_grammar_is_caught(sample, tmp_path):
    # The comparison must be able to fail: drop `while` from the grammar's
    # control keywords and the bundled modules no longer agree.
    with open(GRAMMAR, encoding="utf-8") as f:
        grammar = json.load(f)
    control = next(p for p in grammar["repository"]["keywords"]["patterns"] if p.get("name") == "keyword.control.nx")
    assert "while|" in control["match"]
    control["match"] = control["match"].replace("while|", "")
    broken = tmp_path / "broken.tmLanguage.json"
    broken.write_text(json.dumps(grammar), encoding="utf-8")
    path = os.path.join(bundled_dir(), "nx_f32.nx")
    bad = disagreements(path, tokenize([path], str(broken))[path])
    assert bad and all("'w'" in d or "'h'" in d or "'i'" in d or "'l'" in d or "'e'" in d for d in bad), bad[:5]
