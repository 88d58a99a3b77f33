"""`nxc emit-c --object` of many modules in one process (nxc/cli.py,
_emit_objects): one FOLDER/STEM.c each, the same text as one module per
process; usage mistakes exit 2 with one line, a module that does not compile
is reported and the others still written (exit 3)."""
from __future__ import annotations

import os

from nxc.cli import main

LIB = """
    func lib_twice(x: i64) -> i64 { return x * 2 }
"""

TOP = """
    import "lib.nx"

    func main() -> i64 {
        if lib_twice(2) != 4 { return 1 }
        return 0
    }
"""


def test_many_modules_one_folder_the_same_text(write_nx, tmp_path, capsys):
    lib = write_nx(LIB, "lib.nx")
    top = write_nx(TOP, "top.nx")
    out = tmp_path / "objs"
    assert main(["emit-c", "--object", lib, top, "-o", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["lib.c", "top.c"]
    for path, name in ((lib, "lib.c"), (top, "top.c")):
        capsys.readouterr()
        assert main(["emit-c", "--object", path]) == 0
        assert (out / name).read_text(encoding="utf-8") == capsys.readouterr().out
    assert "nxm_main_top_" in (out / "top.c").read_text(encoding="utf-8")


def test_a_folder_stands_for_its_modules(write_nx, tmp_path):
    lib = write_nx(LIB, "lib.nx")
    write_nx(TOP, "top.nx")
    out = tmp_path / "objs"
    assert main(["emit-c", "--object", os.path.dirname(lib), "-o", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["lib.c", "top.c"]


def test_two_modules_with_one_stem_get_their_ids(write_nx, tmp_path):
    a = write_nx(LIB, "a/lib.nx")
    b = write_nx(LIB, "b/lib.nx")
    out = tmp_path / "objs"
    assert main(["emit-c", "--object", a, b, a, "-o", str(out)]) == 0
    names = sorted(os.listdir(out))
    assert len(names) == 2 and all(n.startswith("lib_") and n.endswith(".c") for n in names)


def test_usage_mistakes_exit_2(write_nx, tmp_path, capsys):
    lib = write_nx(LIB, "lib.nx")
    top = write_nx(TOP, "top.nx")
    assert main(["emit-c", lib, top]) == 2
    assert "need --object" in capsys.readouterr().err
    assert main(["emit-c", "--object", lib, top]) == 2
    assert "-o FOLDER" in capsys.readouterr().err
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["emit-c", "--object", lib, top, "-o", str(afile)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_a_module_that_does_not_compile_is_reported_the_others_written(write_nx, tmp_path, capsys):
    lib = write_nx(LIB, "lib.nx")
    bad = write_nx("func broken() -> i64 { return nope }\n", "bad.nx")
    out = tmp_path / "objs"
    assert main(["emit-c", "--object", bad, lib, "-o", str(out)]) == 3
    assert "nope" in capsys.readouterr().err
    assert os.listdir(out) == ["lib.c"]
