"""A Pygments lexer for .nx, registered as `nx` through the `pygments.lexers`
entry point (pyproject.toml), so `pygmentize -l nx`, Sphinx and MkDocs
highlight .nx code blocks, and so do nxc's module pages (nxc/tools/doc.py).

A highlighter sees fragments and half-typed code, so it never fails: any
character it does not know is plain text, never an Error token. Its
keyword list is the grammar's (tests/test_pygments_lexer.py compares them).

`// key: value` is header metadata (Comment.Special) only in the header:
the leading block of `//` lines, as nxc.syntax.parse.read_header reads it.
The same words in a comment further down (`// note: ...` in a body) are a
plain comment.
"""
from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

KEYWORDS = ("import", "const", "type", "struct", "func", "extern", "let", "var", "if", "else", "while",
            "break", "continue", "return", "as", "sizeof")
CONSTANTS = ("true", "false")
BUILTIN_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool", "void")

# the header: the lines from the top that start with `//` (after blanks)
_HEADER = re.compile(r"(?:[ \t\f\r]*//[^\n]*(?:\n|$))*")


class NxLexer(RegexLexer):
    name = "Nx"
    aliases = ["nx", "nishi"]
    filenames = ["*.nx"]
    mimetypes = ["text/x-nx"]
    url = "https://github.com/nishi/nxc"

    tokens = {
        "root": [
            (r"[ \t\f\r]+", Whitespace),
            (r"\n", Whitespace),
            (r"//\s*[a-z][a-z0-9_]*:\s+.*?$", Comment.Special),     # header metadata: `// key: value`
            (r"//.*?$", Comment.Single),
            (r"/\*[\s\S]*?\*/", Comment.Multiline),
            (r"/\*[\s\S]*", Comment.Multiline),                       # unclosed: still a comment
            (r'"[^"\n]*"?', String),
            (r"(func)(\s+)([A-Za-z_][A-Za-z0-9_]*)", bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (r"(struct|type)(\s+)([A-Za-z_][A-Za-z0-9_]*)", bygroups(Keyword.Declaration, Whitespace, Name.Class)),
            (r"(const)(\s+)([A-Za-z_][A-Za-z0-9_]*)", bygroups(Keyword.Declaration, Whitespace, Name.Constant)),
            (words(("import",), suffix=r"\b"), Keyword.Namespace),
            (words(("const", "type", "struct", "func", "extern", "let", "var"), suffix=r"\b"), Keyword.Declaration),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(BUILTIN_TYPES, suffix=r"\b"), Keyword.Type),
            (r"0[xX][0-9A-Fa-f]+\b", Number.Hex),
            (r"0[bB][01]+\b", Number.Bin),
            (r"[0-9]+\b", Number.Integer),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"->|<<=|>>=|[-+*/%&|^]=|==|!=|<=|>=|&&|\|\||<<|>>|[-+*/%&|^!~<>=]", Operator),
            (r"[()\[\]{},:;.]", Punctuation),
            (r".", Text),
        ],
    }

    def get_tokens_unprocessed(self, text, stack=("root",)):
        header_end = _HEADER.match(text).end()
        for index, tok, value in super().get_tokens_unprocessed(text, stack):
            if tok is Comment.Special and index >= header_end:
                tok = Comment.Single
            yield index, tok, value
