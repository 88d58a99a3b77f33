"""nxc/syntax/lalr.py against Lark's own LALR driver.

The front end runs Lark's table with a loop of its own (speed); this checks
that it builds exactly the AST Lark's driver builds from the same tokens and
the same rule methods, and fails on exactly the same token with the same
expected terminals. Inputs: every bundled module, generated programs, and
broken variants of them.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import random

import pytest
from lark import Lark
from lark import Token as LarkToken
from lark.exceptions import UnexpectedInput

from nxc.syntax import ast, lalr, parse
from nxc.diagnostics import Diagnostics, SourceFile
from nxc.syntax.lexer import LexError, Token
from nxc.paths import bundled_dir, grammar_file
from test_difftest import gen_program


def _reference_parser(to_ast) -> Lark:
    """Lark's LALR driver calling the same rule methods, children filtered
    on every reduction (what nxc/syntax/parse.py works out once per rule)."""
    class Callbacks:
        pass

    callbacks = Callbacks()
    for name in dir(to_ast):
        if name.startswith("_") or not callable(getattr(to_ast, name)):
            continue
        method = getattr(to_ast, name)
        drop = parse._PUNCTUATION if name == "assign_stmt" else parse._PUNCTUATION_AND_ASSIGN

        def call(children, method=method, drop=drop):
            # Lark hands over its own tokens: back to ours for the methods.
            children = [Token(c.type, c.value, c.line, c.column) if isinstance(c, LarkToken) else c
                        for c in children]
            return method(children, *[c for c in children if c.__class__ is not Token or c.type not in drop])
        setattr(callbacks, name, call)
    with open(grammar_file(), encoding="utf-8") as f:
        grammar = f.read()
    return Lark(grammar, parser="lalr", lexer="basic", postlex=parse.StatementEnds(), start="module",
                keep_all_tokens=True, maybe_placeholders=False, transformer=callbacks)


def dump(node):
    """An AST as nested tuples: class, fields and every position."""
    if isinstance(node, ast.Node):
        return (type(node).__name__,) + tuple(
            (f.name, dump(getattr(node, f.name))) for f in dataclasses.fields(node) if f.name != "pos"
        ) + (("at", node.pos.line, node.pos.col),)
    if isinstance(node, list):
        return tuple(dump(x) for x in node)
    return node


def run_both(text: str):
    """(outcome of nxc/syntax/lalr.py, outcome of Lark's driver) on the same tokens."""
    parser = parse._parser()
    to_ast = parser.to_ast
    to_ast.src, to_ast.diags = SourceFile("t.nx", text), Diagnostics()
    try:
        try:
            tokens = list(parser.postlex.process(parser.lexer.lex(text)))
        except LexError:
            return None, None                  # not the parser's business
        try:
            ours = ("ok", dump(lalr.parse(iter(tokens), parser.tables)))
        except lalr.UnexpectedToken as exc:
            ours = ("error", (exc.token.type, exc.token.line, exc.token.column), sorted(exc.expected))
        reference = _reference()
        interactive = reference.parse_interactive("")
        try:
            for tok in tokens[:-1]:             # the last one is our $END
                interactive.feed_token(LarkToken(tok.type, tok.value, line=tok.line, column=tok.column))
            theirs = ("ok", dump(interactive.feed_eof(LarkToken("$END", "", line=tokens[-1].line,
                                                                   column=tokens[-1].column))))
        except UnexpectedInput as exc:
            tok = exc.token
            theirs = ("error", (tok.type, tok.line, tok.column), sorted(exc.expected))
        return ours, theirs
    finally:
        to_ast.src = to_ast.diags = None


_REFERENCE = []


def _reference() -> Lark:
    if not _REFERENCE:
        _REFERENCE.append(_reference_parser(parse._parser().to_ast))
    return _REFERENCE[0]


BUNDLED = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx")))


@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_bundled_modules_give_the_same_ast(path):
    with open(path, encoding="utf-8") as f:
        ours, theirs = run_both(f.read())
    assert ours[0] == "ok"
    assert ours == theirs


def test_generated_programs_give_the_same_ast():
    for seed in range(1, 61):
        ours, theirs = run_both(gen_program.generate(seed))
        assert ours[0] == "ok", seed
        assert ours == theirs, seed


def test_broken_programs_fail_at_the_same_token_expecting_the_same():
    rng = random.Random(5)
    sources = [open(p, encoding="utf-8").read() for p in BUNDLED] + [gen_program.generate(s) for s in (3, 4)]
    compared = errors = 0
    for _ in range(300):
        text = rng.choice(sources)
        lines = text.splitlines(keepends=True)
        i = rng.randrange(len(lines))
        cut = rng.randrange(len(lines[i]) + 1)
        # delete a stretch, or duplicate one, at a random place
        if rng.random() < 0.5:
            lines[i] = lines[i][:cut] + lines[i][cut + rng.randint(1, 6):]
        else:
            lines[i] = lines[i][:cut] + lines[i][max(0, cut - 5):cut] + lines[i][cut:]
        ours, theirs = run_both("".join(lines))
        if ours is None:
            continue
        compared += 1
        errors += ours[0] == "error"
        assert ours == theirs
    assert compared > 250 and errors > 100      # the mutations do break the syntax
