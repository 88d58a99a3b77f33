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
    assert info["structs"] == [{"name": "NxM", "size": 24, "align": 8, "line": 11, "fields": [
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
