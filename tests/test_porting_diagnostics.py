"""Porting mistakes get a located message that names the mistake (and the
.nx form), not a generic parser error: each case is the exact text."""
from __future__ import annotations

import os

import pytest

from nxc.diagnostics import CompileError, Diagnostics, SourceFile
from nxc.check.frontend import check_file
from nxc.syntax.parse import parse_source


def first_error(text: str, tmp_path) -> str:
    """The first diagnostic of checking `text`, rendered (message, line, caret, notes)."""
    path = tmp_path / "port.nx"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CompileError) as info:
        check_file(str(path), diags=Diagnostics())
    d = info.value.diagnostics[0]
    return "\n".join(f"{n.pos.line}:{n.pos.col}: {n.severity}: {n.message}" for n in [d, *d.notes])


CASES = [
    ("unclosed paren, next statement",
     "func f() -> i64 {\n    let x: i64 = (3 +\n    let y: i64 = 2\n    return x + y\n}\n",
     "2:18: error: '(' is never closed: expected ')' before 'let' on line 3\n"
     "3:5: note: the parser gave up here, at 'let': inside '(' a newline does not end the statement"),
    ("unclosed call paren",
     "func g(a: i64, b: i64) -> i64 { return a }\nfunc f() -> i64 {\n    let x: i64 = g(3,\n    return x\n}\n",
     "3:19: error: '(' is never closed: expected ')' before 'return' on line 4\n"
     "4:5: note: the parser gave up here, at 'return': inside '(' a newline does not end the statement"),
    ("unclosed bracket",
     "func f(p: *i64) -> i64 {\n    let x: i64 = p[1\n}\n",
     "2:19: error: '[' is never closed: expected ']' before '}' on line 3\n"
     "3:1: note: the parser gave up here, at '}': inside '[' a newline does not end the statement"),
    ("unclosed brace found by indentation",
     "func f() -> i64 {\n    if 1 > 0 {\n        return 1\n    return 0\n}\n",
     "2:14: error: '{' is never closed: expected '}' before the end of the file (the '}' on line 5 that "
     "closes it is indented like line 1)\n"
     "5:2: note: the parser reached the end of the file with '{' still open"),
    ("unclosed brace at the end",
     "func f() -> i64 {\n    return 0\n",
     "1:17: error: '{' is never closed: expected '}' before the end of the file\n"
     "2:13: note: the parser reached the end of the file with '{' still open"),
    ("if without a brace",
     "func f(a: i64) -> i64 {\n    if a > 0 return 1\n    return 0\n}\n",
     "2:14: error: expected '{' after the 'if' condition, found 'return' (the body of 'if' is always a "
     "block: if cond { ... })\n"
     "2:5: note: the 'if' is here"),
    ("while without a brace",
     "func f(a: i64) -> i64 {\n    var n: i64 = a\n    while n > 0\n        n = n - 1\n    return n\n}\n",
     "3:16: error: expected '{' after the 'while' condition, found a newline (the body of 'while' is always "
     "a block: while cond { ... })\n"
     "3:5: note: the 'while' is here"),
    ("float literal",
     "func f() -> i64 {\n    let x: i64 = 1.5\n    return x\n}\n",
     "2:18: error: float literals do not exist in .nx: a float32 is its bit pattern in an i64 "
     "(0x3FC00000 for 1.5), or convert an integer with nx_i32_to_f32"),
    ("float literal with f",
     "func f() -> i64 {\n    return 0.25f\n}\n",
     "2:12: error: float literals do not exist in .nx: a float32 is its bit pattern in an i64 "
     "(0x3E800000 for 0.25f), or convert an integer with nx_i32_to_f32"),
    ("C declaration",
     "func f() -> i64 {\n    int x = 3;\n    return x\n}\n",
     "2:5: error: C declaration: write 'var x: i32 = 3' (or 'let' for a value that never changes)"),
    ("C float declaration",
     "func f() -> i64 {\n    float y = 0.5;\n    return 0\n}\n",
     "2:5: error: C declaration: write 'var y: i64 = 0x3F000000' (or 'let' for a value that never changes) "
     "(a float is held as its float32 bit pattern in an i64: 0x3F000000 is 0.5)"),
    ("C declaration of several type words",
     "func f() -> i64 {\n    unsigned long n = 3;\n    return 0\n}\n",
     "2:5: error: C declaration: write 'var n: u64 = 3' (or 'let' for a value that never changes)"),
    ("C pointer declaration (parses as a product)",
     "func f() -> i64 {\n    int *p = 0;\n    return 0\n}\n",
     "2:5: error: undefined name 'int'; C declaration: write 'var p: *i32 = 0' (or 'let' for a value that "
     "never changes)"),
    ("C for loop",
     "func f() -> i64 {\n    var s: i64 = 0\n    for (var i: i64 = 0; i < 3; i = i + 1) { s = s + i }\n    return s\n}\n",
     "3:5: error: 'for' is not a .nx statement: write the loop with 'while' "
     "(var i: i64 = 0, then while i < n { ...; i = i + 1 })"),
    ("increment",
     "func f() -> i64 {\n    var x: i64 = 0\n    x++\n    return x\n}\n",
     "3:6: error: '++' is not a .nx operator: write 'x = x + 1' (or 'x += 1')"),
    ("decrement",
     "func f() -> i64 {\n    var n: i64 = 3\n    n--\n    return n\n}\n",
     "3:6: error: '--' is not a .nx operator: write 'n = n - 1' (or 'n -= 1')"),
    ("arrow for a field",
     "struct S { a: i64 }\nfunc f(p: *S) -> i64 {\n    return p->a\n}\n",
     "3:13: error: '->' is C's field access through a pointer: .nx writes 'p.a' (a field through a "
     "pointer is '.' too)"),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_porting_mistake_has_a_specific_located_message(tmp_path, text, expected):
    assert first_error(text, tmp_path) == expected


def test_a_genuine_error_inside_a_multiline_call_is_not_called_unclosed(tmp_path):
    text = "func g(a: i64, b: i64) -> i64 { return a }\nfunc f() -> i64 {\n    return g(1,\n        2 3)\n}\n"
    assert first_error(text, tmp_path).startswith("4:11: error: unexpected an integer literal '3'")


def test_arrow_of_a_return_type_is_untouched(tmp_path):
    # `->` in a signature is the language's own: no C hint there
    text = "func f() -> -> i64 {\n    return 0\n}\n"
    assert "C's field access" not in first_error(text, tmp_path)


def test_undefined_name_is_not_matched_to_a_very_different_name(tmp_path):
    # (a name no module on the search path defines: nx_f32_rms_norm.nx defines nx_f32_rmsnorm)
    text = ("func nx_f32_min(a: i64, b: i64) -> i64 { return a }\n"
            "func f() -> i64 {\n    return nx_f32_layer_norm(1, 2)\n}\n")
    assert first_error(text, tmp_path) == "3:12: error: undefined name 'nx_f32_layer_norm'"


def test_undefined_name_still_suggests_a_near_miss(tmp_path):
    text = "func f() -> i64 {\n    let count: i64 = 1\n    return coutn\n}\n"
    assert first_error(text, tmp_path) == "3:12: error: undefined name 'coutn'; did you mean 'count'?"


def test_undefined_name_prefers_the_same_family(tmp_path):
    # both are one edit away; the one sharing the module prefix wins
    text = ("func nx_kvc_sed(a: i64) -> i64 { return a }\nfunc nx_pkv_seq(a: i64) -> i64 { return a }\n"
            "func f() -> i64 {\n    return nx_kvc_seq(1)\n}\n")
    assert first_error(text, tmp_path) == "4:12: error: undefined name 'nx_kvc_seq'; did you mean 'nx_kvc_sed'?"


def test_undefined_name_from_a_commented_out_import(tmp_path):
    text = ('// import "nx_f32_rmsnorm.nx"\nfunc nx_f32_min(a: i64, b: i64) -> i64 { return a }\n'
            "func f() -> i64 {\n    return nx_f32_rmsnorm_apply(1, 2)\n}\n")
    assert first_error(text, tmp_path) == ("4:12: error: undefined name 'nx_f32_rmsnorm_apply'; it may come "
                                           "from \"nx_f32_rmsnorm.nx\", whose import is commented out")


def test_every_hint_is_a_diagnostic_never_a_traceback():
    # odd inputs around the hints' patterns still give one located error
    for text in ("1.", ".5", "func f() { x->", "int", "for", "func f() { a++ }", "func f() { if }",
                 "func f() { while ( }", "x\n->\n", "func f() { int x }"):
        with pytest.raises(CompileError) as info:
            parse_source(SourceFile("t.nx", text), Diagnostics())
        assert info.value.diagnostics[0].pos is not None


def test_a_missing_module_names_the_tool_that_lists_what_it_must_provide(tmp_path):
    path = tmp_path / "port.nx"
    path.write_text('import "nx_f32_rmsnorm.nx"\n', encoding="utf-8")
    with pytest.raises(CompileError) as info:
        check_file(str(path), diags=Diagnostics())
    (d,) = info.value.diagnostics
    assert d.message.startswith('cannot find module "nx_f32_rmsnorm.nx"; looked in:')
    assert d.notes[-1].pos is None
    assert d.notes[-1].message.startswith("'nxc port --stubs ") and d.notes[-1].message.endswith(
        "port.nx' lists what it uses from \"nx_f32_rmsnorm.nx\", with signatures, and writes a stub")


def test_one_letter_names_are_not_suggested_for_one_another(tmp_path):
    text = "func f() -> i64 {\n    let q: i64 = 1\n    return p + q\n}\n"
    assert first_error(text, tmp_path) == "3:12: error: undefined name 'p'"


def test_a_variable_named_for_is_not_a_c_loop(tmp_path):
    text = "func f() -> i64 {\n    var for: i64 = 0\n    for = 3 3\n    return for\n}\n"
    assert first_error(text, tmp_path).startswith("3:13: error: unexpected an integer literal '3'")


def test_the_stub_hint_names_the_importing_module_after_earlier_imports(tmp_path):
    # two bundled imports load (and read) other modules first: the hint must
    # still name the module whose import failed, not the last one read
    path = tmp_path / "port.nx"
    path.write_text('import "nx_f32.nx"\nimport "nx_f32_div.nx"\nimport "nx_gone.nx"\n', encoding="utf-8")
    with pytest.raises(CompileError) as info:
        check_file(str(path), diags=Diagnostics())
    (d,) = info.value.diagnostics
    assert d.message.startswith('cannot find module "nx_gone.nx"')
    hint = d.notes[-1].message
    assert hint.startswith("'nxc port --stubs ") and hint.endswith(
        "port.nx' lists what it uses from \"nx_gone.nx\", with signatures, and writes a stub"), hint
    assert "nx_src" not in hint


def all_errors(text: str, tmp_path, name: str = "port.nx", include=None) -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CompileError) as info:
        check_file(str(path), include, diags=Diagnostics())
    def one(n) -> str:
        where = f"{os.path.basename(n.pos.file.path)}:{n.pos.line}" if n.pos else ":0"
        return f"{where}: {n.severity}: {n.message}"
    return ["\n".join(one(n) for n in [d, *d.notes]) for d in info.value.diagnostics]


def test_a_name_a_bundled_module_defines_names_the_module_to_import(tmp_path):
    # without the import, a near miss ('nx_f32_min', 'nx_f32_sqrt') must not be offered
    text = ('import "nx_f32.nx"\nfunc f(a: i64, b: i64) -> i64 {\n'
            "    return nx_f32_div(a, nx_f32_rsqrt(b))\n}\n")
    div, rsqrt = all_errors(text, tmp_path)
    assert div.splitlines()[0] == (":3: error: undefined name 'nx_f32_div'; defined in \"nx_f32_div.nx\": "
                                   "add import \"nx_f32_div.nx\" (also defined in \"nx_f32_soft.nx\")").join(
        ["port.nx", ""])
    assert div.splitlines()[1] == "nx_f32_div.nx:13: note: 'nx_f32_div' is defined here"
    assert rsqrt.splitlines()[0].endswith("undefined name 'nx_f32_rsqrt'; defined in \"nx_f32_math.nx\": "
                                          "add import \"nx_f32_math.nx\"")
    assert "did you mean" not in div + rsqrt


def test_an_unknown_type_names_the_module_that_defines_it(tmp_path):
    text = "func f(w: *NxWeight, n: nx_int) -> i64 {\n    return n\n}\n"
    weight, tier = all_errors(text, tmp_path)
    assert weight.splitlines()[0].endswith("unknown type 'NxWeight'; defined in \"nx_f32_linear.nx\": "
                                           "add import \"nx_f32_linear.nx\"")
    assert tier.splitlines()[0].endswith("unknown type 'nx_int'; defined in \"nx_tier.nx\": add import \"nx_tier.nx\"")


def test_the_defining_module_is_found_in_the_importing_folder_and_on_include(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "nx_helper.nx").write_text("func nx_helper_twice(x: i64) -> i64 {\n    return 2 * x\n}\n")
    (tmp_path / "nx_local.nx").write_text("const NX_LOCAL_K: i64 = 3\n")
    text = "func f() -> i64 {\n    return nx_helper_twice(NX_LOCAL_K)\n}\n"
    # without -I lib the helper is not on the search path: no hint, no wrong module
    first = all_errors(text, tmp_path)
    assert first[0] == "port.nx:2: error: undefined name 'nx_helper_twice'"
    assert first[1].splitlines()[0].endswith("undefined name 'NX_LOCAL_K'; defined in \"nx_local.nx\": "
                                             "add import \"nx_local.nx\"")
    helper, _ = all_errors(text, tmp_path, include=[str(lib)])
    assert helper.splitlines()[0].endswith("undefined name 'nx_helper_twice'; defined in \"nx_helper.nx\": "
                                           "add import \"nx_helper.nx\"")


def test_an_edited_module_is_seen_by_the_next_hint(tmp_path):
    # the answer is kept (in the module index and per process): an edit must not leave it stale
    import os
    import time
    helper = tmp_path / "nx_helper.nx"
    helper.write_text("func nx_old_name(x: i64) -> i64 {\n    return x\n}\n")
    past = time.time_ns() - 10_000_000_000        # out of the racy window: the answer is kept
    os.utime(helper, ns=(past, past))
    text = "func f() -> i64 {\n    return nx_new_name(1)\n}\n"
    (before,) = all_errors(text, tmp_path)
    assert "defined in" not in before
    helper.write_text("func nx_new_name(x: i64) -> i64 {\n    return x\n}\n")
    os.utime(helper, ns=(past + 1_000_000_000, past + 1_000_000_000))
    (after,) = all_errors(text, tmp_path)
    assert after.splitlines()[0].endswith("defined in \"nx_helper.nx\": add import \"nx_helper.nx\"")
