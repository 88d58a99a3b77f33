"""Parsing: source text -> tokens -> AST (nxc/syntax/ast.py).

Lark reads grammar/nx.lark and builds its LALR(1) table (cached on disk,
see `_grammar_tables`); nxc/syntax/lexer.py and nxc/syntax/postlex.py make the tokens and
nxc/syntax/lalr.py runs the table, calling the rule methods below to build the AST
directly. Syntax errors are translated into the language's own words here,
so no Lark terminal name or exception ever reaches a user.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import re
from functools import lru_cache

from nxc.syntax import ast, hints, lalr, lexer
from nxc.diagnostics import Diagnostics, Pos, SourceFile, source_lines
from nxc.cache import cache_dir, seal, unseal, write_atomically
from nxc.paths import digest_of_files, grammar_file
from nxc.syntax.depth import MAX_DEPTH, check_depth
from nxc.syntax.lexer import LexError, NxLexer, Token, terminal_specs
from nxc.syntax.postlex import StatementEnds

# How each terminal is named in an error message.
TOKEN_WORDS = {
    "NAME": "a name", "INT": "an integer literal", "STRING": "a string",
    "_SEP": "the end of the statement", "$END": "the end of the file",
    "ASSIGN": "'='", "COMPOUND_ASSIGN": "a compound assignment",
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "LBRACE": "'{'", "RBRACE": "'}'", "_COMMA": "','", "COMMA": "','",
    "COLON": "':'", "DOT": "'.'", "MORETHAN": "'>'", "SEMI": "';'",
    "OROR": "'||'", "ANDAND": "'&&'", "EQ": "'=='", "NE": "'!='", "LE": "'<='",
    "GE": "'>='", "LT": "'<'", "GT": "'>'", "SHL": "'<<'", "SHR": "'>>'",
    "BAR": "'|'", "CARET": "'^'", "AMP": "'&'", "PLUS": "'+'", "MINUS": "'-'",
    "STAR": "'*'", "SLASH": "'/'", "PERCENT": "'%'", "BANG": "'!'", "TILDE": "'~'",
    "__ANON_0": "'->'", "RARROW": "'->'",
}
_OPEN_TO_CLOSE = {"(": ")", "[": "]", "{": "}"}


def _word_for(terminal: str) -> str:
    if terminal in TOKEN_WORDS:
        return TOKEN_WORDS[terminal]
    if terminal.isupper() and terminal.isalpha():
        return f"'{terminal.lower()}'"          # keywords: RETURN -> 'return'
    return terminal.lower()


def _describe_token(tok: Token) -> str:
    if tok.type == "_SEP":
        return "a newline" if tok.value == "\n" else "';'"
    if tok.type == "$END":
        return "the end of the file"
    if tok.type in ("NAME", "INT", "STRING"):
        return f"{_word_for(tok.type)} '{tok.value}'"
    return f"'{tok.value}'"


class _Parser:
    """The grammar's lexer, statement-end pass and table, built once."""

    def __init__(self):
        self.postlex = StatementEnds()
        self.to_ast = _ToAst(None, None)
        terminals, table = _grammar_tables(self.postlex)
        self.lexer = NxLexer(terminals)
        self.tables = lalr.Tables(table, _builder_maker(self.to_ast))

    def parse(self, text: str):
        return lalr.parse(self.postlex.process(self.lexer.lex(text)), self.tables)


@lru_cache(maxsize=1)
def _parser() -> _Parser:
    return _Parser()


def warm_up() -> None:
    """Build (or read from the cache) the parse table now: the runner calls
    this before forking its workers, so each starts with a ready parser."""
    _parser()


def source_tokens(text: str) -> list[Token]:
    """Every token of `text` as written, comments (LINE_COMMENT,
    BLOCK_COMMENT) and line ends (NEWLINE) included, before the statement-end
    pass: what nxc/tools/fmt.py renders. Raises lexer.LexError."""
    return list(_parser().lexer.lex(text, keep_comments=True))


def _grammar_tables(postlex: StatementEnds) -> tuple[list, dict]:
    """(terminal specs, LALR table) of grammar/nx.lark.

    Lark builds them (~100 ms); they are kept as a pickle of plain data in
    the cache folder, so later processes load them in about a millisecond.
    """
    with open(grammar_file(), encoding="utf-8") as f:
        grammar = f.read()
    # Keyed by everything that shapes the pickled data: the grammar, Lark
    # (its __init__.py carries its version; found without importing Lark,
    # which would cost ~50 ms of every start-up), and the code that turns
    # Lark's objects into plain data.
    lark_init = importlib.util.find_spec("lark").origin
    code = digest_of_files(lalr.__file__, lexer.__file__, lark_init)
    key = hashlib.sha256("\0".join((code, grammar, *postlex.always_accept)).encode()).hexdigest()[:24]
    name = f"grammar-{key}.pickle"
    path = os.path.join(cache_dir(), "parse", name)
    try:
        with open(path, "rb") as f:
            blob = unseal(name, f.read())      # unpickled only if this user's nxc wrote it
        if blob is not None:
            terminals, table = pickle.loads(blob)
            if isinstance(terminals, list) and isinstance(table, dict):
                return terminals, table
    except Exception:  # noqa: BLE001 - missing or damaged: build it again
        pass
    # Lark reads the grammar and builds the LALR(1) table; it is not asked
    # to parse anything (nxc/syntax/lalr.py runs the table).
    from lark import Lark
    lark = Lark(grammar, parser="lalr", lexer="basic", postlex=postlex, start="module")
    result = (terminal_specs(lark), lalr.table_from_lark(lark, "module"))
    write_atomically(path, seal(name, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)))
    return result


# Pos is a named tuple; making one with tuple.__new__ skips its Python-level
# __new__ and halves the cost (one Pos per AST node).
_new_pos = tuple.__new__


def _start_of(children: list) -> tuple[int | None, int | None]:
    for c in children:
        if c.__class__ is Token:
            return c.line, c.column
        if isinstance(c, ast.Node):
            pos = ast.start_pos(c)
            return pos.line, pos.col
    return None, None


# Tokens that only shape the syntax; rule methods never see them.
_PUNCTUATION = frozenset({
    "LPAR", "RPAR", "LBRACE", "RBRACE", "LSQB", "RSQB", "COLON", "COMMA", "_COMMA", "_SEP",
    "DOT", "SEMI", "IMPORT", "CONST", "TYPE", "STRUCT", "FUNC", "EXTERN", "VAR", "LET", "IF",
    "ELSE", "WHILE", "BREAK", "CONTINUE", "RETURN", "AS", "SIZEOF", "TRUE", "FALSE", "__ANON_0",
    "RARROW",
})


_PUNCTUATION_AND_ASSIGN = _PUNCTUATION | {"ASSIGN"}

# Binding strength of each binary operator (higher binds tighter); see
# docs/language.md. Comparisons do not associate.
BINARY_PRECEDENCE = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
                     "|": 4, "^": 5, "&": 6, "<<": 7, ">>": 7, "+": 8, "-": 8, "*": 9, "/": 9, "%": 9}
_COMPARISON = 3   # `=` of a declaration
COMPARISON_PRECEDENCE = _COMPARISON
# Tighter than every binary operator, as in the grammar (grammar/nx.lark):
# `x as T`, then the prefix operators, then calls, indexing and `.field`.
CAST_PRECEDENCE, UNARY_PRECEDENCE, POSTFIX_PRECEDENCE = 10, 11, 12


def _builder_maker(to_ast: "_ToAst"):
    """What the parser calls on each reduction: rule children -> an AST node.

    Each `_ToAst` method gets the rule's children (its `meta`, read only for
    positions) and then the children that carry meaning: punctuation and
    keywords are left out. Where no child is spliced in, which children
    those are is known from the rule alone, so it is worked out once here
    instead of on every reduction.
    """
    def make(name: str, symbols: tuple[str, ...], inline):
        method = getattr(to_ast, name)
        drop = _PUNCTUATION if name == "assign_stmt" else _PUNCTUATION_AND_ASSIGN
        if inline is not None:
            def build(children):
                return method(children, *[c for c in children
                                          if c.__class__ is not Token or c.type not in drop])
            return build
        keep = [i for i, symbol in enumerate(symbols) if symbol not in drop]
        if not keep:
            return method
        if len(keep) == 1:
            i = keep[0]
            return lambda children: method(children, children[i])
        if len(keep) == 2:
            i, j = keep
            return lambda children: method(children, children[i], children[j])
        return lambda children: method(children, *[children[i] for i in keep])
    return make


class _ToAst:
    """Rule children -> nxc.syntax.ast. One method per grammar rule or alias."""

    def __init__(self, src: SourceFile | None, diags: Diagnostics | None):
        self.src = src
        self.diags = diags

    def _p(self, thing) -> Pos:
        """Where a token is, or where a rule's children (its `meta`) start."""
        if thing.__class__ is list:
            line, col = _start_of(thing)
            return _new_pos(Pos, (self.src, line or 1, col or 1))
        return _new_pos(Pos, (self.src, thing.line, thing.column))      # a Token

    # ---- top level ----
    def module(self, meta, *items):
        return list(items)

    def import_decl(self, meta, s):
        return ast.Import(self._p(meta), s.value[1:-1])

    def const_decl(self, meta, name, *rest):
        ty = rest[0] if len(rest) == 2 else None
        return ast.ConstDecl(self._p(name), name.value, ty, rest[-1])

    def type_decl(self, meta, name, target):
        return ast.TypeAlias(self._p(name), name.value, target)

    def struct_decl(self, meta, name, *fields):
        return ast.StructDecl(self._p(name), name.value, list(fields))

    def field(self, meta, name, ty):
        return ast.FieldDecl(self._p(name), name.value, ty)

    def _signature(self, rest):
        params, ret, body = [], None, None
        for r in rest:
            if isinstance(r, list):
                params = r
            elif isinstance(r, ast.Block):
                body = r
            else:
                ret = r
        return params, ret, body

    def func_decl(self, meta, name, *rest):
        params, ret, body = self._signature(rest)
        return ast.FuncDecl(self._p(name), name.value, params, ret, body)

    def extern_decl(self, meta, name, *rest):
        params, ret, _ = self._signature(rest)
        return ast.FuncDecl(self._p(name), name.value, params, ret, None)

    def global_decl(self, meta, name, ty, value):
        return ast.GlobalDecl(self._p(name), name.value, ty, value)

    def params(self, meta, *items):
        return list(items)

    def param(self, meta, name, ty):
        return ast.Param(self._p(name), name.value, ty)

    def named_type(self, meta, name):
        return ast.TypeName(_new_pos(Pos, (self.src, name.line, name.column)), name.value)

    def pointer_type(self, meta, star, target):
        return ast.TypePointer(self._p(star), target)

    # ---- statements ----
    def block(self, meta, *stmts):
        last = meta[-1]            # the closing brace
        return ast.Block(self._p(meta), list(stmts), Pos(self.src, last.line, last.column))

    def _decl(self, meta, name, rest, mutable):
        ty = rest[0] if len(rest) == 2 else None
        return ast.VarDecl(self._p(name), name.value, ty, rest[-1], mutable)

    def let_stmt(self, meta, name, *rest):
        return self._decl(meta, name, rest, False)

    def var_stmt(self, meta, name, *rest):
        return self._decl(meta, name, rest, True)

    def assign_stmt(self, meta, target, op, value):
        return ast.Assign(self._p(op), target, op.value, value)

    def if_stmt(self, meta, cond, then, orelse=None):
        return ast.If(self._p(meta), cond, then, orelse)

    def while_stmt(self, meta, cond, body):
        return ast.While(self._p(meta), cond, body)

    def break_stmt(self, meta):
        return ast.Break(self._p(meta))

    def continue_stmt(self, meta):
        return ast.Continue(self._p(meta))

    def return_stmt(self, meta, value=None):
        return ast.Return(self._p(meta), value)

    def expr_stmt(self, meta, expr):
        return ast.ExprStmt(self._p(meta), expr)

    # ---- expressions ----
    def binary_chain(self, meta, *items):
        """operand (op operand)* -> a Binary tree, by precedence climbing."""
        if len(items) == 3:                     # one operator: nothing to climb
            left, op, right = items
            return ast.Binary(_new_pos(Pos, (self.src, op.line, op.column)), op.value, left, right)
        operands, ops = list(items[0::2]), list(items[1::2])
        pos = 0

        def climb(min_prec: int):
            nonlocal pos
            left = operands[pos]
            while pos < len(ops) and BINARY_PRECEDENCE[ops[pos].value] >= min_prec:
                op = ops[pos]
                prec = BINARY_PRECEDENCE[op.value]
                pos += 1
                right = climb(prec + 1)
                left = ast.Binary(self._p(op), op.value, left, right)
                if prec == _COMPARISON and pos < len(ops) and BINARY_PRECEDENCE[ops[pos].value] == _COMPARISON:
                    nxt = ops[pos]
                    self.diags.error(self._p(nxt), f"unexpected '{nxt.value}' (comparisons do not chain: "
                                     "write (a < b) && (b < c))")
            return left

        return climb(0)

    def unary(self, meta, op, operand):
        return ast.Unary(self._p(op), op.value, operand)

    def cast(self, meta, expr, target):
        return ast.Cast(self._p(meta), expr, target)

    def call(self, meta, func, args=None):
        return ast.Call(self._p(meta), func, args or [])

    def args(self, meta, *items):
        return list(items)

    def primary(self, meta, inner):      # "(" expr ")"
        return inner

    def index(self, meta, base, idx):
        return ast.Index(self._p(meta), base, idx)

    def field_access(self, meta, base, name):
        return ast.FieldAccess(self._p(meta), base, name.value, self._p(name))

    def int_lit(self, meta, tok):
        value = parse_int_literal(tok.value)
        if value is None:
            self.diags.error(self._p(tok), f"bad integer literal '{_shown(tok.value)}'")
            value = 0
        elif value >= 1 << 64:
            self.diags.error(self._p(tok), f"integer literal '{_shown(tok.value)}' does not fit in 64 bits")
            value = 0
        return ast.IntLit(_new_pos(Pos, (self.src, tok.line, tok.column)), value, tok.value)

    def true_lit(self, meta):
        return ast.BoolLit(self._p(meta), True)

    def false_lit(self, meta):
        return ast.BoolLit(self._p(meta), False)

    def name(self, meta, tok):
        # (the commonest node: its Pos is made here, not through _p)
        return ast.Name(_new_pos(Pos, (self.src, tok.line, tok.column)), tok.value)

    def sizeof_expr(self, meta, target):
        return ast.SizeOf(self._p(meta), target)


def _shown(text: str) -> str:
    """A literal as an error message quotes it: a 5,000-digit one is cut."""
    return text if len(text) <= 40 else f"{text[:20]}...{text[-8:]} ({len(text)} characters)"


_INT_FORMS = (
    (re.compile(r"0[xX]([0-9A-Fa-f]+)\Z"), 16),
    (re.compile(r"0[bB]([01]+)\Z"), 2),
    (re.compile(r"([0-9]+)\Z"), 10),
)


# Past this many significant digits a literal is out of range anyway (2^64
# has 20 decimal digits); Python refuses to convert more than 4,300 decimal
# digits (a ValueError), so longer ones are never converted.
_TOO_BIG = 1 << 64


def parse_int_literal(text: str) -> int | None:
    if text.isdigit() and text.isascii():      # the common case, without a regex
        if len(text) <= 20:
            return int(text)
        digits = text.lstrip("0")
        return int(digits or "0") if len(digits) <= 20 else _TOO_BIG
    if text[:2] in ("0x", "0X") and text[2:].isalnum() and text.isascii():
        # float32 bit patterns make hex the second commonest form (a tenth of
        # a generated tree's literals): without the regexes. isalnum() keeps
        # out what int() would take besides digits ("_", spaces, a sign).
        try:
            value = int(text[2:], 16)
        except ValueError:
            return None                         # 0x12g: a bad literal
        return value if value.bit_length() <= 280 else _TOO_BIG       # 70 hex digits, as below
    for pattern, base in _INT_FORMS:
        m = pattern.match(text)
        if m:
            digits = m.group(1).lstrip("0")
            return int(digits or "0", base) if len(digits) <= 70 else _TOO_BIG
    return None


_HEADER_LINE = re.compile(r"//\s*([a-z][a-z0-9_]*):\s+(\S.*?)\s*$")


def read_header(text: str) -> dict[str, str]:
    """`key: value` lines of the leading // comment block (module metadata)."""
    meta: dict[str, str] = {}
    for line in source_lines(text):
        line = line.strip()
        if not line.startswith("//"):
            break
        m = _HEADER_LINE.match(line)
        if m:
            meta[m.group(1)] = m.group(2)
    return meta


def parse_source(src: SourceFile, diags: Diagnostics) -> ast.Module:
    """Parse one file. Syntax errors are reported through `diags` and raised."""
    parser = _parser()
    to_ast = parser.to_ast
    to_ast.src, to_ast.diags = src, diags
    try:
        items = parser.parse(src.text)
    except (LexError, lalr.UnexpectedToken) as exc:
        diags.error(*_syntax_error(src, exc, parser.postlex))
        diags.raise_if_errors()
        raise  # unreachable: raise_if_errors raised
    finally:
        to_ast.src = to_ast.diags = None
    diags.raise_if_errors()
    # Before any recursive pass sees the tree. Each level of the tree takes
    # at least one character of source, so a short file cannot be too deep.
    if len(src.text) > MAX_DEPTH:
        check_depth(items, diags)
    return ast.Module(Pos(src, 1, 1), src, items, read_header(src.text))


_SPACE_LIKE = {"\u00a0": "non-breaking space", "\u202f": "narrow non-breaking space", "\u2007": "figure space",
               "\u200b": "zero-width space", "\u3000": "ideographic space", "\ufeff": "zero-width no-break space"}


def _syntax_error(src: SourceFile, exc: Exception, postlex: StatementEnds):
    """(pos, message, notes) for a lexer or parser error, in the language's words."""
    if isinstance(exc, LexError):
        ch = src.text[exc.pos] if exc.pos < len(src.text) else ""
        pos = Pos(src, exc.line, exc.column)
        if ch == '"':
            return pos, "unterminated string (strings end on the same line)", []
        if ch == "/" and src.text.startswith("/*", exc.pos):
            return pos, "unterminated block comment '/*'", []
        space = _SPACE_LIKE.get(ch)
        if space is not None:
            # a browser's copy of a page or a web editor leaves these for spaces
            return pos, (f"stray character {ch!r} in program: a {space} (U+{ord(ch):04X}), not a space; "
                         "replace it with a space ('nxc port' reads a page's as spaces)"), []
        return pos, f"stray character {ch!r} in program", []
    tok = exc.token
    at_end = tok.type == "$END"
    # A porting mistake (unclosed bracket, missing `{`, a C form) is named as such.
    explained = hints.explain(src, hints.tokens_before(_parser().lexer, src.text, tok), tok, set(exc.expected))
    if explained is not None:
        return explained
    if at_end and postlex.open_brackets:
        opener = postlex.open_brackets[-1]
        close = _OPEN_TO_CLOSE[opener.value]
        return (Pos(src, opener.line, opener.column),
                f"'{opener.value}' is never closed: expected '{close}' before the end of the file", [])
    expected = sorted({_word_for(t) for t in exc.expected if not t.startswith("__")})
    if at_end:
        lines = source_lines(src.text) or [""]
        pos = Pos(src, len(lines), len(lines[-1]) + 1)
        found = "the end of the file"
    else:
        pos = Pos(src, tok.line, tok.column)
        found = _describe_token(tok)
    msg = f"unexpected {found}"
    if tok.type in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        msg += " (comparisons do not chain: write (a < b) && (b < c))"
    if expected and len(expected) <= 8:
        msg += "; expected " + _join_or(expected)
    elif "_SEP" in exc.expected:
        msg += "; end the previous statement with a newline or ';'"
    return pos, msg, []


def _join_or(words: list[str]) -> str:
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]
