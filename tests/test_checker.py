"""The checker through its API: import chains, notes in other modules, the
checked Program (constants, layouts, the entry).

The located single-file mistakes are data: tests/diagnostics/check/*.nx, each
with its expected error written on the offending line, run by
test_diagnostics_data.py.
"""
from __future__ import annotations

from conftest import compile_errors

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
