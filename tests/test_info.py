"""`nxc info`: header, size, imports, signatures with doc comments, consts,
struct layouts and the gate's checks; and folder arguments of check/run."""
from __future__ import annotations

import json
import os
import textwrap

from nxc.cli import main
from nxc.paths import bundled_dir

BUNDLED = bundled_dir()


def test_info_of_the_gqa_seed(capsys):
    assert main(["info", os.path.join(BUNDLED, "nx_f32_gqa_attention.nx")]) == 0
    out = capsys.readouterr().out
    assert "nx_f32_gqa_attention.nx: 103 lines, 4509 B" in out
    assert "  license_tier: ORIGINAL" in out
    assert "imports: nx_syscalls.nx, nx_f32.nx, nx_f32_div.nx, nx_f32_cvt.nx, nx_f32_attention.nx" in out
    assert ("  func nx_f32_gqa_attention(Q: *i64, K: *i64, V: *i64, n_tokens: i64, n_q_heads: i64, "
            "n_kv_heads: i64, head_dim: i64, scale: i64, out: *i64) -> i64   [line 20]") in out
    assert "  NX_F32GQA_ERR: i64 = 1" in out
    assert "gate: func main at line 66, 4 checks" in out
    assert "  10 at line 83: if r != NX_F32GQA_OK" in out
    assert "  20 at line 94: if (nx_f32_sub(b0, e4) & 0x7FFFFFFF) >= tolb" in out


def test_info_json_of_a_module_with_structs_and_docs(tmp_path, capsys):
    path = tmp_path / "nx_m.nx"
    path.write_text(textwrap.dedent("""\
        // nx_m.nx -- a small module.
        //
        // genealogy_id: g_1
        // lineage_id: l_1
        // license_tier: ORIGINAL

        import "nx_tier.nx"

        const NX_M_K: i64 = 0x10 + 2

        struct NxM {
            a: i32
            p: *i64
            b: i8
        }

        // The sum of a and k.
        // (Wraps around.)
        func nx_m_add(m: *NxM, k: i64) -> i64 {
            return m.a as i64 + k
        }

        func nx_m_noop(m: *NxM) {
        }

        func main() -> i64 {
            if NX_M_K != 18 { return 10 }
            return 0
        }
        """), encoding="utf-8")
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["header"] == {"genealogy_id": "g_1", "lineage_id": "l_1", "license_tier": "ORIGINAL"}
    assert info["lines"] == 29 and info["imports"] == ["nx_tier.nx"]
    assert [m["name"] for m in info["transitive_imports"]] == ["nx_tier.nx"]
    assert info["transitive_imports"][0]["path"].endswith("nx_tier.nx")
    assert info["consts"] == [{"name": "NX_M_K", "type": "i64", "value": 18, "line": 9}]
    assert info["structs"] == [{"name": "NxM", "size": 24, "align": 8, "line": 11, "guessed_order": False,
                                "fields": [
        {"name": "a", "type": "i32", "offset": 0}, {"name": "p", "type": "*i64", "offset": 8},
        {"name": "b", "type": "i8", "offset": 16}]}]
    add, noop = info["functions"]
    assert add["signature"] == "func nx_m_add(m: *NxM, k: i64) -> i64"
    assert add["doc"] == "The sum of a and k.\n(Wraps around.)"
    assert noop["signature"] == "func nx_m_noop(m: *NxM)" and noop["doc"] == ""
    assert info["gate"]["checks"] == [{"value": 10, "line": 27, "guard": "if NX_M_K != 18"}]


def test_info_of_a_library_and_of_a_broken_module(tmp_path, capsys):
    assert main(["info", os.path.join(BUNDLED, "nx_f32_attn_paged.nx")]) == 0
    assert "gate: none (a library module)" in capsys.readouterr().out
    bad = tmp_path / "bad.nx"
    bad.write_text("func f() -> i64 { return x }\n", encoding="utf-8")
    assert main(["info", str(bad)]) == 3
    assert "bad.nx:1:26: error: undefined name 'x'" in capsys.readouterr().err


def test_check_and_run_take_folders(tmp_path, capsys):
    (tmp_path / "a.nx").write_text("func main() -> i64 {\n    return 0\n}\n", encoding="utf-8")
    (tmp_path / "lib.nx").write_text("const L: i64 = 1\n", encoding="utf-8")
    assert main(["check", str(tmp_path)]) == 0
    assert main(["run", str(tmp_path)]) == 0
    assert f"PASS {tmp_path / 'a.nx'}" in capsys.readouterr().err
    (tmp_path / "b.nx").write_text("func main() -> i64 {\n    return 3\n}\n", encoding="utf-8")
    (tmp_path / "c.nx").write_text("func f() -> i64 { return y }\n", encoding="utf-8")
    assert main(["check", str(tmp_path)]) == 3
    assert "c.nx:1:26: error: undefined name 'y'" in capsys.readouterr().err
    assert main(["run", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"FAIL {tmp_path / 'b.nx'}" in err and f"PASS {tmp_path / 'a.nx'}" in err


def test_info_where_lists_the_modules_that_define_a_name(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["info", "--where", "nx_f32_rsqrt"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    assert out[0].endswith('nx_src/nx_f32_math.nx:135: func nx_f32_rsqrt(x: i64) -> i64   (import "nx_f32_math.nx")')
    (tmp_path / "nx_mine.nx").write_text("struct NxMine {\n    a: i64\n}\n", encoding="utf-8")
    assert main(["info", "--where", "NxMine", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {"name": "NxMine", "definitions": [
        {"module": "nx_mine.nx", "path": "nx_mine.nx", "line": 1, "column": 8, "kind": "struct",
         "declaration": "struct NxMine", "import": 'import "nx_mine.nx"'}]}


def test_info_where_a_name_nothing_defines_exits_1_and_says_where_it_looked(tmp_path, capsys):
    module = tmp_path / "m.nx"
    module.write_text("const A: i64 = 1\n", encoding="utf-8")
    assert main(["info", "--where", "nx_nowhere_at_all", str(module)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nxc: error: no module on the search path defines 'nx_nowhere_at_all'; looked in:")
    assert os.path.basename(BUNDLED) in err
    assert main(["info"]) == 2


def test_info_says_a_stub_structs_field_order_is_guessed(tmp_path, capsys):
    (tmp_path / "port.nx").write_text('import "nx_gone.nx"\nfunc f(c: *Cfg) -> i64 {\n    return c.b + c.a\n}\n',
                                      encoding="utf-8")
    assert main(["port", str(tmp_path / "port.nx"), "--stubs"]) == 0
    capsys.readouterr()
    assert main(["info", str(tmp_path / "nx_gone.nx")]) == 0
    assert "  struct Cfg: size 16, align 8 (a stub's: field order guessed, not the real layout)" in \
        capsys.readouterr().out
    assert main(["info", str(tmp_path / "nx_gone.nx"), "--json"]) == 0
    (cfg,) = json.loads(capsys.readouterr().out)["structs"]
    assert cfg["guessed_order"] is True and [f["name"] for f in cfg["fields"]] == ["b", "a"]
