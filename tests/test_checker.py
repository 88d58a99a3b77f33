"""The checker: every mistake the language forbids gets a located message.

Each case is a small program with one mistake, the message fragment we
expect, and the exact line and column it must point at.
"""
from __future__ import annotations

import pytest

from conftest import compile_errors

CASES = [
    # (id, source, message fragment, line, col)
    ("undefined-name",
     "func main() -> i64 {\n    let count: i64 = 1\n    return coutn\n}\n",
     "undefined name 'coutn'; did you mean 'count'?", 3, 12),
    ("arg-count",
     "func f(a: i64, b: i64) -> i64 { return a }\nfunc main() -> i64 { return f(1) }\n",
     "'f' takes 2 arguments but 1 was given", 2, 29),
    ("arg-type",
     "func f(a: i64, p: *i64) -> i64 { return a }\nfunc main() -> i64 {\n    let x: i32 = 1\n    return f(x as i64, x)\n}\n",
     "argument 'p' of 'f': expected *i64, found i32", 4, 24),
    ("mismatch-suggests-as",
     "func main() -> i64 {\n    let a: i32 = 1\n    let b: i64 = a\n    return b\n}\n",
     "expected i64, found i32; write '(...) as i64'", 3, 18),
    ("binary-mismatch",
     "func main() -> i64 {\n    let a: i32 = 1\n    let b: i64 = 2\n    return b + a\n}\n",
     "mismatched types in '+': i64 and i32", 4, 14),
    ("literal-range",
     "func main() -> i64 {\n    let b: u8 = 300\n    return b as i64\n}\n",
     "integer literal 300 does not fit in u8", 2, 17),
    ("assign-let",
     "func main() -> i64 {\n    let x: i64 = 1\n    x = 2\n    return x\n}\n",
     "cannot assign to 'x': it is declared with 'let'", 3, 5),
    ("redeclare",
     "func main() -> i64 {\n    var x: i64 = 1\n    var x: i64 = 2\n    return x\n}\n",
     "'x' is already declared in this block", 3, 9),
    ("duplicate-top-level",
     "func f() -> i64 { return 1 }\nconst f: i64 = 2\nfunc main() -> i64 { return 0 }\n",
     "'f' is defined twice", 2, 7),
    ("unknown-field",
     "struct P { seq_len: i64, cap: i64 }\nfunc f(p: *P) -> i64 { return p.seqlen }\nfunc main() -> i64 { return 0 }\n",
     "struct P has no field 'seqlen'; did you mean 'seq_len'? (fields: seq_len, cap)", 2, 33),
    ("struct-by-value-local",
     "struct P { a: i64 }\nfunc main() -> i64 {\n    var p: P = 0\n    return 0\n}\n",
     "a local cannot hold struct P by value", 3, 12),
    ("struct-by-value-param",
     "struct P { a: i64 }\nfunc f(p: P) -> i64 { return 0 }\nfunc main() -> i64 { return 0 }\n",
     "structs are passed by pointer", 2, 11),
    ("missing-return",
     "func f(a: i64) -> i64 {\n    if a > 0 { return 1 }\n}\nfunc main() -> i64 { return 0 }\n",
     "missing return at the end of 'f'", 3, 1),
    ("break-outside-loop",
     "func main() -> i64 {\n    break\n    return 0\n}\n",
     "'break' outside of a loop", 2, 5),
    ("call-non-function",
     "const K: i64 = 3\nfunc main() -> i64 { return K(1) }\n",
     "'K' is a constant, not a function", 2, 29),
    ("deref-non-pointer",
     "func main() -> i64 {\n    let a: i64 = 1\n    return *a\n}\n",
     "cannot dereference a value of type i64", 3, 12),
    ("main-signature",
     "func main(x: i64) -> i64 { return x }\n",
     "must be declared 'func main() -> i64'", 1, 6),
    ("unknown-type",
     "func main() -> i64 {\n    let a: i46 = 1\n    return 0\n}\n",
     "unknown type 'i46'; did you mean 'i64'?", 2, 12),
    ("void-value",
     "func g() { }\nfunc main() -> i64 {\n    let a: i64 = g()\n    return a\n}\n",
     "'g' returns no value", 3, 18),
    ("null-needs-cast",
     "func main() -> i64 {\n    let p: *i64 = 0\n    return 0\n}\n",
     "the null pointer is written '0 as *i64'", 2, 19),
    ("address-of-local",
     "func main() -> i64 {\n    let a: i64 = 1\n    let p: *i64 = &a\n    return p[0]\n}\n",
     "cannot take the address of 'a'", 3, 19),
    ("void-deref",
     "extern func sys_mmap(nbytes: i64) -> *void\nfunc main() -> i64 {\n    let p: *void = sys_mmap(8)\n    return p[0]\n}\n",
     "cannot index a '*void'", 4, 12),
    ("struct-contains-itself",
     "struct N { next: N }\nfunc main() -> i64 { return 0 }\n",
     "struct 'N' contains itself", 1, 8),
    ("const-not-constant",
     "func f() -> i64 { return 1 }\nconst K: i64 = f()\nfunc main() -> i64 { return 0 }\n",
     "not a constant expression", 2, 16),
    ("extern-unknown",
     "extern func nx_f32_frobnicate(a: i64) -> i64\nfunc main() -> i64 { return 0 }\n",
     "is not provided by the runtime", 1, 13),
    ("extern-wrong-signature",
     "extern func sys_mmap(nbytes: i32) -> *void\nfunc main() -> i64 { return 0 }\n",
     "does not match the runtime: it is 'extern func sys_mmap(i64) -> *void'", 1, 13),
    ("return-value-from-void",
     "func g() { return 1 }\nfunc main() -> i64 { return 0 }\n",
     "'g' returns no value", 1, 19),
    ("pointer-arith",
     "func main() -> i64 {\n    let p: *i64 = 0 as *i64\n    let q: *i64 = p + 1\n    return 0\n}\n",
     "pointer arithmetic goes through 'as i64'", 3, 21),
]


@pytest.mark.parametrize("name,source,fragment,line,col", CASES, ids=[c[0] for c in CASES])
def test_error_is_located(write_nx, name, source, fragment, line, col):
    errors = compile_errors(write_nx(source))
    assert errors, "expected an error"
    first = errors[0]
    assert fragment in first.message
    assert (first.pos.line, first.pos.col) == (line, col)
    rendered = first.render()
    assert rendered.splitlines()[0].startswith(f"{first.pos.file.display}:{line}:{col}: error: ")
    assert rendered.splitlines()[-1].strip() == "^"


def test_several_independent_errors_in_one_run(write_nx):
    path = write_nx("""
        func main() -> i64 {
            let a: i64 = undefined_one
            let b: u8 = 999
            var c: i64 = 0
            c = undefined_two
            return a + c
        }
    """)
    errors = compile_errors(path)
    assert [e.pos.line for e in errors] == [2, 3, 5]


def test_no_cascade_from_an_undefined_name(write_nx):
    path = write_nx("""
        func main() -> i64 {
            let a: i64 = nope + 1
            return a * 2
        }
    """)
    assert len(compile_errors(path)) == 1


def test_duplicate_definition_names_both_places(write_nx, tmp_path):
    write_nx("func helper() -> i64 { return 1 }\n", name="a.nx")
    path = write_nx('import "a.nx"\nfunc helper() -> i64 { return 2 }\nfunc main() -> i64 { return 0 }\n')
    [err] = compile_errors(path)
    assert err.notes and err.notes[0].pos.file.path.endswith("a.nx")
    assert "the other definition of 'helper'" in err.notes[0].message


def test_missing_import_lists_the_folders(write_nx, tmp_path):
    path = write_nx('import "nope.nx"\nfunc main() -> i64 { return 0 }\n')
    [err] = compile_errors(path)
    assert 'cannot find module "nope.nx"' in err.message
    assert str(tmp_path) in err.message and "nx_src" in err.message
    assert (err.pos.line, err.pos.col) == (1, 1)


def test_error_in_imported_module_names_the_import_chain(write_nx):
    write_nx("func broken() -> i64 { return nope }\n", name="lib/b.nx")
    write_nx('import "lib/b.nx"\n', name="a.nx")
    path = write_nx('import "a.nx"\nfunc main() -> i64 { return 0 }\n')
    [err] = compile_errors(path)
    # a semantic error located in b.nx, with the chain root -> a.nx -> b.nx
    assert err.pos.file.path.endswith("b.nx") and (err.pos.line, err.pos.col) == (1, 31)
    chain = [(n.pos.file.path.rsplit("/", 1)[-1], n.pos.line) for n in err.notes]
    assert chain == [("a.nx", 1), ("t.nx", 1)]
    assert all(n.message == "imported from here" for n in err.notes)


def test_syntax_error_in_imported_module_names_the_chain(write_nx):
    write_nx("func broken() -> i64 { return ) }\n", name="b.nx")
    path = write_nx('import "b.nx"\nfunc main() -> i64 { return 0 }\n')
    [err] = compile_errors(path)
    assert err.pos.file.path.endswith("b.nx")
    assert [n.pos.line for n in err.notes] == [1] and err.notes[0].pos.file.path.endswith("t.nx")


def test_imports_are_transitive_and_deduplicated(write_nx):
    write_nx("const BASE: i64 = 40\n", name="base.nx")
    write_nx('import "base.nx"\nfunc left() -> i64 { return BASE + 1 }\n', name="left.nx")
    write_nx('import "base.nx"\nimport "main.nx"\nfunc right() -> i64 { return BASE + 1 }\n', name="right.nx")
    path = write_nx('import "left.nx"\nimport "right.nx"\nfunc main() -> i64 { return left() + right() - 82 }\n',
                    name="main.nx")
    assert compile_errors(path) == []


def test_imported_gates_are_checked_but_dropped(write_nx):
    from nxc.diagnostics import Diagnostics
    from nxc.check.frontend import check_file
    write_nx("func main() -> i64 { return 7 }\n", name="lib.nx")
    path = write_nx('import "lib.nx"\nfunc main() -> i64 { return 0 }\n')
    program = check_file(path, diags=Diagnostics())
    mains = [f for f in program.functions if f.decl.name == "main"]
    assert len(mains) == 1 and mains[0] is program.entry


def test_literal_typing_rules(write_nx):
    from nxc.diagnostics import Diagnostics
    from nxc.check.frontend import check_file
    path = write_nx("""
        const A: i64 = 1 << 65
        const B: u8 = -1
        const C: i64 = 0xFFFFFFFF80000000
        const D: u8 = 300 as u8
        const E: i64 = sizeof(i32) * 3
        func main() -> i64 { return 0 }
    """)
    program = check_file(path, diags=Diagnostics())
    values = {s.name: s.value for s in program.consts}
    assert values == {"A": 2, "B": 255, "C": -0x80000000, "D": 44, "E": 12}


def test_struct_layout_is_c_layout(write_nx):
    from nxc.diagnostics import Diagnostics
    from nxc.check.frontend import check_file
    path = write_nx("""
        struct Inner { a: u8, b: i32 }
        struct Outer { flag: bool, inner: Inner, next: *Outer, tail: u16 }
        func main() -> i64 { return 0 }
    """)
    program = check_file(path, diags=Diagnostics())
    st = {s.name: s for s in program.structs}
    assert (st["Inner"].size, [f.offset for f in st["Inner"].fields]) == (8, [0, 4])
    assert (st["Outer"].size, [f.offset for f in st["Outer"].fields]) == (32, [0, 4, 16, 24])


def test_seeds_check_clean():
    import os
    from nxc.paths import bundled_dir
    for name in ("nx_f32_gqa_attention.nx", "nx_f32_attn_paged.nx"):
        assert compile_errors(os.path.join(bundled_dir(), name)) == []
