"""The `nx` Pygments lexer: found through its entry point, clean on every bundled module."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Error, Keyword, Name

from nxc.paths import bundled_dir, grammar_file
from nxc.tools.pygments_lexer import BUILTIN_TYPES, CONSTANTS, KEYWORDS, NxLexer

BUNDLED = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx")))


def test_registered_through_the_entry_point():
    assert type(get_lexer_by_name("nx")) is NxLexer
    assert type(get_lexer_for_filename("kernel.nx")) is NxLexer


def test_pygmentize_highlights_nx(tmp_path):
    src = tmp_path / "t.nx"
    src.write_text("func f(a: i64) -> i64 { return a + 1 }\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "pygments", "-l", "nx", "-f", "html", str(src)],
                         capture_output=True, text=True, check=True).stdout
    assert '<span class="k' in out and "return" in out


def test_keywords_are_the_grammars():
    with open(grammar_file(), encoding="utf-8") as f:
        grammar = f.read()
    words = set(re.findall(r'"([a-z_]+)"', grammar))
    assert set(KEYWORDS) | set(CONSTANTS) == words


@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_every_bundled_module_lexes_without_error_tokens(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tokens = list(NxLexer().get_tokens(text))
    assert [v for t, v in tokens if t in Error] == []
    assert "".join(v for _, v in tokens) == text          # nothing lost or invented


def test_token_kinds():
    text = ('// x.nx -- demo\n// license_tier: ORIGINAL\nimport "a.nx"\nstruct S { f: *u8 }\n'
            "const N: i64 = 0x10\nfunc g() -> bool { let s = true; return s }\n/* open")
    kinds = {v.strip(): t for t, v in NxLexer().get_tokens(text) if v.strip()}
    assert kinds["// license_tier: ORIGINAL"] in Comment.Special
    assert kinds["S"] in Name.Class and kinds["N"] in Name.Constant and kinds["g"] in Name.Function
    assert kinds["u8"] in Keyword.Type and kinds["bool"] in Keyword.Type
    assert kinds["true"] in Keyword.Constant and kinds["return"] in Keyword
    assert kinds["/* open"] in Comment                   # an unfinished comment is still no error
    assert set(BUILTIN_TYPES) >= {"i64", "u8", "bool", "void"}


def test_metadata_only_in_the_header():
    # `// word:` is header metadata in the leading // block only (as
    # read_header reads it), a plain comment after it
    text = ("// m.nx -- demo\n// license_tier: ORIGINAL\n\n// lineage_id: not_header\n"
            "func f() -> i64 {\n    // todo: later\n    return 1 // note: here\n}\n")
    specials = [v for t, v in NxLexer().get_tokens(text) if t in Comment.Special]
    comments = [v for t, v in NxLexer().get_tokens(text) if t in Comment]
    assert specials == ["// license_tier: ORIGINAL"]
    assert {"// lineage_id: not_header", "// todo: later", "// note: here"} <= set(comments)
    from nxc.syntax.parse import read_header
    assert read_header(text) == {"license_tier": "ORIGINAL"}              # the same block
