"""`nxc port`: module pages -> modules, the seeds byte for byte, bad pages,
and the missing-import report with stubs that make a port check."""
from __future__ import annotations

import io
import os
import sys
import textwrap

import pytest

from nxc.cli import main
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.paths import bundled_dir
from nxc.tools.port import page_of, restore, split_pages

BUNDLED = bundled_dir()
SEED_NAMES = ("nx_f32_attn_paged.nx", "nx_f32_gqa_attention.nx")
# The seeds' module pages exactly as received (copies of ../shared/seeds/pages/).
PAGES = os.path.join(os.path.dirname(__file__), "pages")


@pytest.fixture
def seed_pages():
    out = {}
    for name in SEED_NAMES:
        with open(os.path.join(PAGES, name.replace(".nx", ".page.txt")), encoding="utf-8") as f:
            out[name] = f.read()
    return out


def bundled(name: str) -> bytes:
    with open(os.path.join(BUNDLED, name), "rb") as f:
        return f.read()


def test_seed_pages_restore_byte_for_byte(tmp_path, seed_pages, capsys):
    files = []
    for name, text in seed_pages.items():
        p = tmp_path / name.replace(".nx", ".page.txt")
        p.write_text(text, encoding="utf-8")
        files.append(str(p))
    out_dir = tmp_path / "out"
    assert main(["port", *files, "-o", str(out_dir)]) == 0
    for name in SEED_NAMES:
        assert (out_dir / name).read_bytes() == bundled(name)
    out = capsys.readouterr().out
    assert "nx_f32_attn_paged.nx: 100 lines, 3454 B restored" in out
    assert "nx_f32_attn_paged.nx: 100 lines, 3454 B restored (page: 3541 B)" in out
    assert "nx_f32_gqa_attention.nx: 103 lines, 4509 B restored (page: 4560 B)" in out
    assert "out/nx_f32_attn_paged.nx: checks" in out


def test_pages_pasted_back_to_back_from_stdin(tmp_path, seed_pages, monkeypatch, capsys):
    joined = seed_pages["nx_f32_attn_paged.nx"] + seed_pages["nx_f32_gqa_attention.nx"]
    assert "100}nx_f32_gqa_attention.nx source" in joined       # as pasted: nothing between them
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(joined.encode("utf-8")), encoding="utf-8"))
    assert main(["port", "-", "-o", str(tmp_path)]) == 0
    for name in SEED_NAMES:
        assert (tmp_path / name).read_bytes() == bundled(name)


def test_restored_seeds_pass_port_check(tmp_path, seed_pages, capsys):
    page = tmp_path / "both.page.txt"
    page.write_text("".join(seed_pages.values()), encoding="utf-8")
    assert main(["port", str(page), "-o", BUNDLED, "--check"]) == 0
    assert "nx_src/nx_f32_attn_paged.nx matches" in capsys.readouterr().out.replace(BUNDLED, "nx_src")
    (tmp_path / "nx_f32_attn_paged.nx").write_text("// changed\n", encoding="utf-8")
    assert main(["port", str(page), "-o", str(tmp_path), "--check"]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_a_line_whose_text_begins_with_a_digit():
    module = "".join(f"// line {i}\n" for i in range(1, 18)) + "const K: i64 = 0x10 +\n0x0001\n"
    page = page_of("nx_k.nx", module)
    assert "\n190x0001" in page
    (p,), errors = split_pages(page, "k.page.txt")
    assert errors == [] and p.body[18] == "0x0001"
    assert restore(p) == module


def test_broken_numbering_names_page_and_line(tmp_path, capsys):
    page = page_of("nx_a.nx", "const A: i64 = 1\nconst B: i64 = 2\nconst C: i64 = 3\n")
    broken = page.replace("\n2const B", "\n4const B")
    (tmp_path / "a.page.txt").write_text(broken, encoding="utf-8")
    assert main(["port", str(tmp_path / "a.page.txt"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'a.page.txt'}:4: error: nx_a.nx: line 2 of the page is numbered '4'" in err
    assert not (tmp_path / "out" / "nx_a.nx").exists()


def test_missing_header_and_bad_utf8(tmp_path, capsys):
    (tmp_path / "h.page.txt").write_text("1const A: i64 = 1\n", encoding="utf-8")
    assert main(["port", str(tmp_path / "h.page.txt"), "-o", str(tmp_path)]) == 1
    assert "h.page.txt:1: error: expected a page header 'NAME.nx source', found '1const A: i64 = 1'" \
        in capsys.readouterr().err
    good = page_of("nx_u.nx", "const A: i64 = 1\n").encode("utf-8")
    (tmp_path / "u.page.txt").write_bytes(good + b"\n2// \xff\n")
    assert main(["port", str(tmp_path / "u.page.txt"), "-o", str(tmp_path)]) == 1
    assert "u.page.txt:4: error: not valid UTF-8 (byte 0xff at offset" in capsys.readouterr().err
    assert not (tmp_path / "nx_u.nx").exists()


def test_short_page_is_an_error(tmp_path, capsys):
    page = page_of("nx_s.nx", "const A: i64 = 1\nconst B: i64 = 2\n").replace("· 2 lines", "· 3 lines")
    (tmp_path / "s.page.txt").write_text(page, encoding="utf-8")
    assert main(["port", str(tmp_path / "s.page.txt"), "-o", str(tmp_path)]) == 1
    assert "nx_s.nx: the page states 3 lines but ends after line 2" in capsys.readouterr().err
    assert not (tmp_path / "nx_s.nx").exists()


def test_does_not_overwrite_a_different_file_without_force(tmp_path, capsys):
    page = tmp_path / "a.page.txt"
    page.write_text(page_of("nx_a.nx", "const A: i64 = 1\n"), encoding="utf-8")
    (tmp_path / "nx_a.nx").write_text("// mine\n", encoding="utf-8")
    assert main(["port", str(page), "-o", str(tmp_path)]) == 1
    assert "exists and differs" in capsys.readouterr().err
    assert (tmp_path / "nx_a.nx").read_text() == "// mine\n"
    assert main(["port", str(page), "-o", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "nx_a.nx").read_text() == "const A: i64 = 1\n"


DEMO = textwrap.dedent("""\
    // nx_demo.nx -- uses a module this toolchain does not have.
    //
    // genealogy_id: demo_2026

    import "nx_tier.nx"
    import "nx_f32.nx"
    import "nx_f32_rmsnorm.nx"

    func nx_demo_norm(x: *i64, n: nx_int, st: *NxRmsState) -> i64 {
        let s: i64 = nx_f32_rmsnorm(x, n, NX_RMSNORM_EPS)
        nx_f32_rmsnorm_apply(x, n, s)
        if st.n != n { return 0 }
        st.scale = s
        if nx_f32_rmsnorm_ok(s) { return s }
        return nx_f32_add(s, st.bias)
    }

    func main() -> i64 {
        return 0
    }
    """)


def test_missing_import_report_with_signatures(tmp_path, capsys):
    page = tmp_path / "demo.page.txt"
    page.write_text(page_of("nx_demo.nx", DEMO), encoding="utf-8")
    assert main(["port", str(page), "-o", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    expected = [
        ':7:1: missing module "nx_f32_rmsnorm.nx"; the ported code uses from it:',
        "    func nx_f32_rmsnorm(x: *i64, n: i64, a2: i64) -> i64   [first use 10:18]",
        "    func nx_f32_rmsnorm_apply(x: *i64, n: i64, s: i64)   (result not used)   [first use 11:5]",
        "    func nx_f32_rmsnorm_ok(s: i64) -> bool   [first use 14:8]",
        "    struct NxRmsState { n: i64, scale: i64, bias: i64 }   [first use 9:44]",
        "    const NX_RMSNORM_EPS: i64   [first use 10:39]",
        "        its uses do not pin its type: i64 assumed",
    ]
    for line in expected:
        assert line in out
    assert "--stubs writes stand-ins" in out
    assert not (tmp_path / "nx_f32_rmsnorm.nx").exists()


def test_stubs_make_the_port_check_and_its_gate_run(tmp_path, capsys):
    page = tmp_path / "demo.page.txt"
    page.write_text(page_of("nx_demo.nx", DEMO), encoding="utf-8")
    assert main(["port", str(page), "-o", str(tmp_path), "--stubs"]) == 0
    out = capsys.readouterr().out
    assert "nx_demo.nx: checks (against stubs)" in out
    stub = (tmp_path / "nx_f32_rmsnorm.nx").read_text()
    assert stub.startswith("// nx_f32_rmsnorm.nx -- STUB written by `nxc port --stubs` for nx_demo.nx.")
    assert "func nx_f32_rmsnorm_ok(s: i64) -> bool {\n    return false  // STUB: placeholder value\n}" in stub
    assert "struct NxRmsState {\n    n: i64\n    scale: i64\n    bias: i64\n}" in stub
    check_file(str(tmp_path / "nx_demo.nx"), diags=Diagnostics())       # raises if it does not check
    assert main(["run", str(tmp_path / "nx_demo.nx")]) == 0


def test_inference_pins_types_from_known_functions_and_pointers(tmp_path, capsys):
    module = textwrap.dedent("""\
        import "nx_f32.nx"
        import "nx_missing_a.nx"

        func f(p: *i64, n: i64) -> bool {
            let w: *i64 = nx_ma_weights(n)
            nx_ma_fill(w, 0x3F800000, NX_MA_LEN as i64)
            return nx_f32_lt(nx_ma_get(p, 2), w[0]) && nx_ma_flag()
        }
        """)
    (tmp_path / "nx_t.nx").write_text(module, encoding="utf-8")
    assert main(["port", str(tmp_path / "nx_t.nx"), "--stubs"]) == 0
    out = capsys.readouterr().out
    assert "    func nx_ma_weights(n: i64) -> *i64" in out
    assert "    func nx_ma_fill(w: *i64, a1: i64, a2: i64)   (result not used)" in out
    assert "        argument 2 does not pin its type (a literal or unknown): i64 assumed" in out
    assert "    func nx_ma_get(p: *i64, a1: i64) -> i64" in out
    assert "    func nx_ma_flag() -> bool" in out
    assert "nx_t.nx: checks (against stubs)" in out


def test_two_missing_modules_share_out_the_names(tmp_path, capsys):
    module = textwrap.dedent("""\
        import "nx_f32.nx"
        import "nx_tier.nx"
        import "nx_rope.nx"
        import "nx_kvq.nx"

        func f(q: *i64, n: nx_int, h: *NxKvqHead, mode: NxRopeMode) -> i64 {
            var acc: i64 = nx_f32_add(nx_rope_theta(n), NX_F32_ONE)
            if n > NX_ROPE_MAX { return -1 }
            if h.count >= n { return nx_kvq_err() }
            h.scale = nx_f32_mul(acc, h.scale)
            let p: *i64 = h.rows
            p[0] = nx_kvq_quant(q[0], h.scale)
            let t: *NxKvqHead = nx_kvq_next(h)
            nx_rope_apply(q, n, mode, NX_ROPE_BASE)
            while nx_kvq_more(t) {
                acc = acc + t.count
            }
            return acc + (NX_KVQ_BITS as i64) + nx_unknown_thing
        }
        """)
    (tmp_path / "nx_two.nx").write_text(module, encoding="utf-8")
    assert main(["port", str(tmp_path / "nx_two.nx"), "--stubs"]) == 0
    out = capsys.readouterr().out
    rope, kvq = out.split('missing module "nx_rope.nx"')[1].split('missing module "nx_kvq.nx"')
    for line in ("    func nx_rope_theta(n: i64) -> i64   [first use 7:31]",
                 "    func nx_rope_apply(q: *i64, n: i64, mode: i64, a3: i64)   (result not used)",
                 "    const NX_ROPE_MAX: i64   [first use 8:12]",
                 "    type NxRopeMode   [first use 6:49]: used by value, so not a struct; i64 assumed",
                 "        which missing module declares 'nx_unknown_thing' is a guess"):
        assert line in rope
    for line in ("    func nx_kvq_err() -> i64   [first use 9:30]",
                 "    func nx_kvq_next(h: *NxKvqHead) -> *NxKvqHead   [first use 13:25]",
                 "    func nx_kvq_more(t: *NxKvqHead) -> bool   [first use 15:11]",
                 "    struct NxKvqHead { count: i64, scale: i64, rows: *i64 }   [first use 6:32]"):
        assert line in kvq
    assert "nx_two.nx: checks (against stubs)" in out
    assert "return 0 as *NxKvqHead  // STUB: placeholder value" in (tmp_path / "nx_kvq.nx").read_text()


def test_a_missing_name_assigned_to_is_a_global_variable(tmp_path, capsys):
    (tmp_path / "nx_g.nx").write_text(textwrap.dedent("""\
        import "nx_gmiss.nx"

        func f(p: *i64) -> i64 {
            nx_g_count = nx_g_count + 1
            nx_g_buf = p
            return nx_g_count + NX_G_K
        }
        """), encoding="utf-8")
    assert main(["port", str(tmp_path / "nx_g.nx"), "--stubs"]) == 0
    out = capsys.readouterr().out
    assert "    var nx_g_count: i64   [first use 4:5]\n    var nx_g_buf: *i64   [first use 5:5]\n" in out
    assert "    const NX_G_K: i64   [first use 6:25]" in out
    stub = (tmp_path / "nx_gmiss.nx").read_text()
    assert "var nx_g_buf: *i64 = 0 as *i64  // STUB: placeholder value" in stub


def test_a_page_longer_than_it_states_is_an_error():
    page = page_of("nx_l.nx", "const A: i64 = 1\nconst B: i64 = 2\n").replace("· 2 lines", "· 1 lines")
    pages, (error,) = split_pages(page, "l.page.txt")
    assert [p.name for p in pages] == ["nx_l.nx"]
    assert str(error) == "l.page.txt:4: error: nx_l.nx: the page states 1 line but line 2 follows"


def test_blank_lines_between_pasted_pages_are_allowed(seed_pages):
    pages, errors = split_pages("\n\n".join(seed_pages.values()) + "\n\n", "both")
    assert errors == [] and [restore(p).encode() for p in pages] == [bundled(n) for n in SEED_NAMES]


STUB_USES_OTHER_TYPES = textwrap.dedent("""\
    import "nx_tier.nx"
    import "nx_f32_linear.nx"
    import "nx_gone.nx"

    struct Local { k: i64 }

    func f(w: *NxWeight, n: nx_int, l: *Local) -> nx_int {
        let c: *NxGoneCfg = nx_gone_cfg()
        let h: i64 = c.hidden
        let q: i32 = c.heads
        let r: nx_int = nx_gone_count(n, l)
        return nx_gone_apply(w, n) + h + (q as i64) + r
    }
    """)


def test_a_stub_imports_the_modules_whose_types_it_names_and_checks_on_its_own(tmp_path, capsys):
    (tmp_path / "port.nx").write_text(STUB_USES_OTHER_TYPES, encoding="utf-8")
    assert main(["port", str(tmp_path / "port.nx"), "--stubs"]) == 0
    assert "port.nx: checks (against stubs)" in capsys.readouterr().out
    stub = (tmp_path / "nx_gone.nx").read_text()
    # NxWeight from nx_f32_linear.nx, nx_int from nx_tier.nx; a pointer to the
    # ported module's own type is *void (importing port.nx would be a cycle)
    assert "func nx_gone_apply(w: *NxWeight, n: i64) -> i64 {" in stub
    assert "func nx_gone_count(n: i64, l: *void) -> nx_int {" in stub
    imports = [line for line in stub.splitlines() if line.startswith("import ")]
    assert sorted(imports) == ['import "nx_f32_linear.nx"', 'import "nx_tier.nx"']
    check_file(str(tmp_path / "nx_gone.nx"), diags=Diagnostics())      # raises if the stub does not check
    assert main(["check", str(tmp_path / "nx_gone.nx")]) == 0


def test_a_stub_struct_is_marked_and_reported_as_a_guessed_field_order(tmp_path, capsys):
    (tmp_path / "port.nx").write_text(STUB_USES_OTHER_TYPES, encoding="utf-8")
    assert main(["port", str(tmp_path / "port.nx"), "--stubs"]) == 0
    out = capsys.readouterr().out
    assert "    struct NxGoneCfg { hidden: i64, heads: i32 }   [first use 8:13]\n" \
           "        warning: field order guessed (the order of first use)" in out
    stub = (tmp_path / "nx_gone.nx").read_text()
    assert ("// nxc-stub: field order guessed: first use in port.nx; the real layout may order them otherwise "
            "and have more fields\nstruct NxGoneCfg {") in stub


def test_nxc_test_reports_a_stub_as_a_stub_in_text_json_and_junit(tmp_path, capsys):
    import json
    import xml.etree.ElementTree as ET
    (tmp_path / "port.nx").write_text(STUB_USES_OTHER_TYPES, encoding="utf-8")
    assert main(["port", str(tmp_path / "port.nx"), "--stubs"]) == 0
    capsys.readouterr()
    junit = tmp_path / "out.xml"
    assert main(["test", str(tmp_path), "--no-cache", "--junit-xml", str(junit)]) == 0
    out = capsys.readouterr().out
    assert "(0 gates, 1 library, 1 stub)" in out
    stub_line = next(line for line in out.splitlines() if "nx_gone.nx" in line and line.startswith("["))
    assert "] STUB " in stub_line and "nxc port --stubs" in stub_line
    assert out.rstrip().splitlines()[-1].startswith("1 passed, 0 failed, 1 stub in ")
    case = next(c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name").endswith("nx_gone.nx"))
    assert case.find("skipped") is not None and case.find("skipped").get("message").startswith("STUB")
    assert ET.parse(junit).getroot().find("testsuite").get("skipped") == "1"
    assert main(["test", str(tmp_path), "--json"]) == 0        # from the results cache this time
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (result,) = [e for e in events if e["event"] == "result" and e["path"].endswith("nx_gone.nx")]
    assert result["kind"] == "stub" and result["cached"]
    assert events[-1]["stubs"] == 1 and events[-1]["passed"] == 1


# ---- page reports (issue 31): line ends, gaps, later pages, NBSP, lost alignment
PAGE_MODULE = "".join(f"const NX_P_{i}: i64 = {i}\n" for i in range(1, 26))


def page_without(name: str, first: int, last: int) -> str:
    """The page of PAGE_MODULE with its lines first..last left out."""
    lines = page_of(name, PAGE_MODULE).split("\n")
    return "\n".join(lines[:2] + [line for k, line in enumerate(lines[2:], 1) if not first <= k <= last])


def test_a_crlf_page_is_restored_with_lf_and_said_so(tmp_path, capsys):
    module = "const A: i64 = 1\nconst B: i64 = 2\n"
    (tmp_path / "c.page.txt").write_bytes(page_of("nx_c.nx", module).replace("\n", "\r\n").encode("utf-8"))
    assert main(["port", str(tmp_path / "c.page.txt"), "-o", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert (tmp_path / "out" / "nx_c.nx").read_bytes() == module.encode()        # one line end style: LF
    assert "nx_c.nx: 2 lines, 34 B restored (page: 34 B)" in captured.out
    assert f"{tmp_path / 'c.page.txt'}:1: warning: nx_c.nx: the page has Windows line ends (CRLF); " \
           "restored with LF line ends" in captured.err


def test_fmt_check_flags_mixed_line_ends(tmp_path, capsys):
    path = tmp_path / "m.nx"
    path.write_bytes(b"const A: i64 = 1\r\nconst B: i64 = 2\n")
    assert main(["fmt", "--check", str(path)]) == 1
    assert "m.nx: not formatted (mixed line ends: 1 CRLF, 1 LF)" in capsys.readouterr().err
    assert main(["fmt", str(path)]) == 0
    assert path.read_bytes() == b"const A: i64 = 1\nconst B: i64 = 2\n"
    assert main(["fmt", "--check", str(path)]) == 0
    path.write_bytes(b"const A: i64 = 1\r\nconst B: i64 = 2\r\n")       # one style, CRLF: left alone
    assert main(["fmt", "--check", str(path)]) == 0


@pytest.mark.parametrize("first,last,line,message", [
    (2, 19, 4, "lines 2 to 19 are missing from the page: line 20 follows line 1"),
    (5, 9, 7, "lines 5 to 9 are missing from the page: line 10 follows line 4"),
    (2, 2, 4, "line 2 is missing from the page: line 3 follows line 1"),
    (10, 19, 12, "lines 10 to 19 are missing from the page: line 20 follows line 9"),
])
def test_a_gap_in_the_numbering_is_named_at_its_line(first, last, line, message):
    # line 20 ('20const ...') used to be read as line 2 holding '0const ...',
    # and the break reported on the line after it
    pages, (error,) = split_pages(page_without("nx_p.nx", first, last), "p.txt")
    assert pages == []
    assert str(error) == f"p.txt:{line}: error: nx_p.nx: {message}"


def test_a_broken_page_does_not_stop_the_pages_after_it(tmp_path, capsys):
    good_a = page_of("nx_a.nx", "const A: i64 = 1\n")
    good_c = page_of("nx_c.nx", "const C: i64 = 3\n")
    pasted = good_a + page_without("nx_b.nx", 5, 9) + good_c        # pasted back to back, as a browser copies
    (tmp_path / "all.page.txt").write_text(pasted, encoding="utf-8")
    assert main(["port", str(tmp_path / "all.page.txt"), "-o", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert "nx_a.nx: 1 line" in captured.out and "nx_c.nx: 1 line" in captured.out
    assert "error: nx_b.nx: lines 5 to 9 are missing from the page" in captured.err
    assert "nothing written for that module" in captured.err
    assert sorted(os.listdir(tmp_path / "out")) == ["nx_a.nx", "nx_c.nx"]
    assert (tmp_path / "out" / "nx_c.nx").read_text() == "const C: i64 = 3\n"


def test_non_breaking_spaces_of_a_page_are_read_as_spaces_with_a_warning(tmp_path, capsys):
    module = "func f() -> i64 {\n    return 1 + 2\n}\n"
    page = page_of("nx_n.nx", module).replace("\n2 return 1 + 2", "\n2 return\u00a01\u00a0+ 2")
    assert "\u00a0" in page
    (tmp_path / "n.page.txt").write_text(page, encoding="utf-8")
    assert main(["port", str(tmp_path / "n.page.txt"), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "nx_n.nx").read_text() == module
    assert "warning: nx_n.nx: 2 non-breaking spaces (U+00A0, as a browser's copy leaves) read as spaces, " \
           "on page line 2" in capsys.readouterr().err


def test_a_non_breaking_space_in_a_module_gets_a_hint(tmp_path):
    from nxc.diagnostics import CompileError
    path = tmp_path / "nb.nx"
    path.write_text("func f() -> i64 {\n    return\u00a01\n}\n", encoding="utf-8")
    with pytest.raises(CompileError) as info:
        check_file(str(path), diags=Diagnostics())
    assert info.value.diagnostics[0].message == (
        "stray character '\\xa0' in program: a non-breaking space (U+00A0), not a space; replace it with a space "
        "('nxc port' reads a page's as spaces)")


def test_the_lines_whose_aligned_comments_the_page_collapsed_are_named(tmp_path, capsys):
    module = "const A: i64 = 1    // one\nconst BB: i64 = 22  // two\n// alone\nconst C: i64 = 3\n"
    (tmp_path / "a.page.txt").write_text(page_of("nx_al.nx", module), encoding="utf-8")
    assert main(["port", str(tmp_path / "a.page.txt"), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "nx_al.nx: 4 lines, 76 B restored (page: 80 B)" in out
    assert ("\n  the page collapsed runs of spaces inside lines, which are not restored; comments after code, "
            "likely aligned in the original, are on lines 1, 2\n") in out


def test_a_short_page_does_not_swallow_the_next_pages_header():
    short = page_of("nx_s.nx", "const A: i64 = 1\nconst B: i64 = 2\n").replace("· 2 lines", "· 3 lines")
    pages, (error,) = split_pages(short + "\n" + page_of("nx_t.nx", "const T: i64 = 1\n"), "st.txt")
    assert str(error) == "st.txt:5: error: nx_s.nx: the page states 3 lines but the next page starts after line 2"
    assert [p.name for p in pages] == ["nx_t.nx"]
