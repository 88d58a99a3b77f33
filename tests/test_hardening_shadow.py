"""issue 15 (1): renaming a shadowing local must never reuse a real local's name.

The reproducer itself is tests/regressions/shadow_rename_collision.nx (run on
C -O0, -O2 and Python by tests/test_regressions.py); here: the names given.
"""
from __future__ import annotations

from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics


def test_unique_names_of_a_function_are_distinct(tmp_path):
    path = tmp_path / "t.nx"
    path.write_text("""\
func f(a: i64, a_1: i64) -> i64 {
    var x: i64 = 1
    var x_1: i64 = 2
    if true {
        let a: i64 = 3
        let x: i64 = 4
        if true {
            let x: i64 = 5
            let x_1: i64 = 6
            return a + x + x_1
        }
    }
    return x + x_1 + a + a_1
}
func main() -> i64 {
    if f(1, 2) != 14 { return 1 }
    return 0
}
""")
    program = check_file(str(path), diags=Diagnostics())
    fn = next(f for f in program.functions if f.decl.name == "f")
    names = [p.unique for p in fn.params] + [s.unique for s in fn.locals]
    assert len(names) == len(set(names)) == 8
    assert names[:4] == ["a", "a_1", "x", "x_1"]          # first declarations keep their names
