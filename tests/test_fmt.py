"""`nxc fmt`: the house layout, fixed points (the seeds, nx_src/), idempotence,
an unchanged AST and every comment kept exactly once."""
from __future__ import annotations

import dataclasses
import io
import os
import random
import shutil
import sys

import pytest

from nxc.cli import main
from nxc.diagnostics import Diagnostics, SourceFile
from nxc.paths import bundled_dir
from nxc.syntax.parse import parse_source, source_tokens
from nxc.tools.fmt import format_text

BUNDLED = bundled_dir()
SEEDS = ("nx_f32_attn_paged.nx", "nx_f32_gqa_attention.nx")
_NOT_SHAPE = {"pos", "ty", "const", "sym", "end_pos", "name_pos", "source", "site", "through_pointer", "header"}


def shape(node):
    """A node as nested tuples, without positions or checker results."""
    if isinstance(node, list):
        return [shape(n) for n in node]
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple(
            shape(getattr(node, f.name)) for f in dataclasses.fields(node) if f.name not in _NOT_SHAPE)
    return node


def ast_of(text: str):
    return shape(parse_source(SourceFile("t.nx", text), Diagnostics()).items)


def comments_of(text: str) -> list[str]:
    return ["\n".join(p.rstrip() for p in t.value.split("\n"))
            for t in source_tokens(text) if t.type in ("LINE_COMMENT", "BLOCK_COMMENT")]


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("name", SEEDS)
def test_seeds_are_fixed_points(name, tmp_path, capsys):
    copy = tmp_path / name
    shutil.copy(os.path.join(BUNDLED, name), copy)
    before = copy.read_bytes()
    assert main(["fmt", "--check", str(copy)]) == 0
    assert main(["fmt", str(copy)]) == 0
    assert copy.read_bytes() == before


def test_every_bundled_module_is_formatted(capsys):
    assert main(["fmt", "--check", BUNDLED]) == 0
    assert "files formatted" in capsys.readouterr().err


def test_the_layout_rules():
    messy = ("import   \"nx_f32.nx\"\n\n\n\n"
             "struct  P {a:i64,\tb : *i64}\n"
             "func f( p :*P,n:i64 )->i64{   // why\n"
             "\tvar x:i64=- n*( n+1 )\n"
             "  x+=p.a ;x = x<<2   \n"
             "\t\tif !( x>0 )&&n!=0{return -x}else{ x = ~x }\n"
             "  let q : *i64 = p.b\n"
             "      q[ n-1 ]=*q+sizeof( i64 ) as i64\n"
             "    /* block\n"
             "       comment */   return x as i64\n"
             "}\n\n\n")
    expected = ("import \"nx_f32.nx\"\n\n"
                "struct P { a: i64, b: *i64 }\n"
                "func f(p: *P, n: i64) -> i64 { // why\n"
                "    var x: i64 = -n * (n + 1)\n"
                "    x += p.a; x = x << 2\n"
                "    if !(x > 0) && n != 0 { return -x } else { x = ~x }\n"
                "    let q: *i64 = p.b\n"
                "    q[n - 1] = *q + sizeof(i64) as i64\n"
                "    /* block\n"
                "       comment */ return x as i64\n"
                "}\n")
    assert format_text(messy) == expected
    assert format_text(expected) == expected


def test_a_trailing_comment_keeps_its_column_where_there_is_room():
    text = "const A: i64 = 1      // one\nconst LONGER: i64 = 22 // two\n"
    assert format_text(text) == text
    assert format_text("const  A:i64=1      // one\n") == "const A: i64 = 1    // one\n"


def test_continuation_lines_indent_by_open_brackets():
    text = "func f(\n    a: i64,\n    b: i64) -> i64 {\n    return g(a,\n        b)\n}\n"
    assert format_text(text) == text
    assert format_text(text.replace("    ", "\t")) == text


def _messy(text: str, seed: int) -> str:
    """The same tokens with tabs for indentation, odd blanks between tokens,
    trailing blanks and runs of blank lines."""
    rng = random.Random(seed)
    out, line_start = [], True
    for tok in source_tokens(text):
        if tok.type == "NEWLINE":
            out.append(rng.choice(["", " ", "  \t"]) + "\n" + ("\n\n\n" if rng.random() < 0.05 else ""))
            line_start = True
            continue
        out.append(rng.choice(["\t", "\t\t", "  "]) if line_start else rng.choice([" ", "   ", "\t"]))
        out.append(tok.value)
        line_start = False
    return "".join(out)


@pytest.mark.parametrize("name", ["nx_f32_attention.nx", "nx_f32_div.nx"])
def test_messy_copy_formats_to_a_formatted_equal_module_that_runs(name, tmp_path, capsys):
    original = read(os.path.join(BUNDLED, name))
    messy = _messy(original, seed=len(name))
    assert "\t" in messy and " \n" in messy and "\n\n\n" in messy
    path = tmp_path / name
    path.write_text(messy, encoding="utf-8")
    assert main(["fmt", "--check", str(path)]) == 1
    assert main(["fmt", str(path)]) == 0
    formatted = path.read_text(encoding="utf-8")
    assert main(["fmt", "--check", str(path)]) == 0                # idempotent
    assert ast_of(formatted) == ast_of(original)
    assert comments_of(formatted) == comments_of(original)
    assert "\t" not in original and "\t" not in formatted and "\n\n\n" not in formatted
    assert all(line == line.rstrip() for line in formatted.splitlines())
    assert main(["run", str(path)]) == 0                            # its gate still passes


def test_a_comment_anywhere_stays_on_its_line_exactly_once():
    base = "func f(a: i64, b: i64) -> i64 {\n    if a < b { return -a }\n    return g(a, b)[0]\n}\n"
    tokens = [t for t in source_tokens(base) if t.type != "NEWLINE"]
    lines = base.split("\n")
    for t in tokens:
        for comment in ("/* c */", "// c"):
            if comment.startswith("//"):
                line = lines[t.line - 1]
                text = "\n".join(lines[: t.line - 1] + [line + "  " + comment] + lines[t.line:])
            else:
                line = lines[t.line - 1]
                cut = t.column - 1
                text = "\n".join(lines[: t.line - 1] + [line[:cut] + comment + line[cut:]] + lines[t.line:])
            out = format_text(text)
            assert out.count(comment) == 1, text
            assert comment in out.split("\n")[t.line - 1], (text, out)
            assert ast_of(out) == ast_of(base)
            assert format_text(out) == out


def test_a_file_that_does_not_parse_is_left_alone(tmp_path, capsys):
    path = tmp_path / "bad.nx"
    path.write_text("func f() -> i64 {\n  return (1 +\n}\n", encoding="utf-8")
    assert main(["fmt", str(path)]) == 3
    assert path.read_text() == "func f() -> i64 {\n  return (1 +\n}\n"
    assert "bad.nx:2:10: error: '(' is never closed" in capsys.readouterr().err


def test_stdin_to_stdout_and_diff(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("const  A:i64=1\n"))
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == "const A: i64 = 1\n"
    path = tmp_path / "a.nx"
    path.write_text("const  A:i64=1\n", encoding="utf-8")
    assert main(["fmt", "--diff", str(path)]) == 0
    out = capsys.readouterr().out
    assert "-const  A:i64=1\n+const A: i64 = 1\n" in out
    assert path.read_text() == "const  A:i64=1\n"                  # --diff writes nothing


def test_folder_and_missing_path(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.nx").write_text("const  A:i64=1\n", encoding="utf-8")
    assert main(["fmt", str(tmp_path)]) == 0
    assert (tmp_path / "sub" / "a.nx").read_text() == "const A: i64 = 1\n"
    assert main(["fmt", str(tmp_path / "nope")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def _generated_programs(count: int):
    bench = os.path.join(os.path.dirname(__file__), "..", "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from gen_program import generate
    return [generate(seed) for seed in range(count)]


def test_generated_programs_are_fixed_points_and_messy_copies_come_back():
    for seed, src in enumerate(_generated_programs(12)):
        assert format_text(src) == src
        out = format_text(_messy(src, seed))
        assert format_text(out) == out
        # the messy copy only differs by blanks, and by runs of blank lines
        # (which come back as one blank line)
        assert [line for line in out.splitlines() if line] == [line for line in src.splitlines() if line]
        assert ast_of(out) == ast_of(src)
