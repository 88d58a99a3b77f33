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
import json
import os
import subprocess

import pytest

from nxc.paths import bundled_dir

import highlight_support
from highlight_support import CORPUS, SAMPLE
from vscode_support import EXTENSION, node, node_env, node_modules

GRAMMAR = os.path.join(EXTENSION, "syntaxes", "nx.tmLanguage.json")
TOKENIZE = os.path.join(EXTENSION, "test", "tokenize.js")
@functools.lru_cache(maxsize=None)
def textmate_span(scopes: tuple[str, ...]) -> tuple[str | None, frozenset, str]:
    """The class, the name kinds and a description of a token with these scopes."""
    def has(prefix: str) -> bool:
        return any(s.startswith(prefix) for s in scopes)
    cls = next((c for prefix, c in (("comment.", "comment"), ("string.", "string"), ("constant.numeric.", "number"),
                                    ("storage.type.", "type"), ("constant.language.", "constant"),
                                    ("keyword.operator.", "operator"), ("keyword.", "keyword")) if has(prefix)), None)
    kinds = frozenset(k for prefix, k in (("entity.name.function.", "function"), ("entity.name.type.", "type"),
                                          ("variable.other.constant.", "constant")) if has(prefix))
    return cls, kinds, " ".join(scopes[1:])


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
    return highlight_support.disagreements(path, text, [(start, end, *textmate_span(tuple(sc)))
                                                        for start, end, sc in tokens])


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
