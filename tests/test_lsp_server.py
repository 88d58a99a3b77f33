"""`nxc lsp` as a server that keeps up with typing, through a real client
process (tests/lsp_client.py): debounce and versions, URIs as sent,
protocol rules, safe rename; and the incremental analyses in-process."""
from __future__ import annotations

import json
import os
import queue
import textwrap
import time

import pytest

from lsp_client import LspClient, LspError

MOD = textwrap.dedent("""\
    import "nx_f32.nx"

    const SCALE: i64 = 3

    func vsum(a: i64, b: i64) -> i64 {
        return a + b
    }

    func scale(v: i64) -> i64 {
        return v * SCALE
    }

    func main() -> i64 {
        let x: i64 = scale(2)
        if nx_f32_is_nan(x) { return 1 }
        return vsum(x, 1) - 7
    }
    """)


def at(text: str, needle: str, nth: int = 0, offset: int = 0) -> dict:
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    i += offset
    return {"line": text.count("\n", 0, i), "character": i - (text.rfind("\n", 0, i) + 1)}


def start(root, **kw) -> LspClient:
    client = LspClient(["lsp"], cwd=str(root), **kw)
    client.initialize(root)
    return client


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "m.nx").write_text(MOD, encoding="utf-8")
    client = start(tmp_path)
    client.root = tmp_path
    client.uri = client.open(tmp_path / "m.nx")
    assert client.diagnostics(client.uri) == []
    yield client
    assert client.close() == 0


def req(c, method, uri, pos, **extra):
    return c.request(method, {"textDocument": {"uri": uri}, "position": pos, **extra})


# ---------------------------------------------------------------- typing
def test_a_burst_of_changes_gives_one_versioned_publish(ws):
    texts = [MOD.replace("return a + b", "return a + b" + "x" * i) for i in range(1, 12)]
    for v, t in enumerate(texts, start=2):
        ws.change(ws.uri, t, v)
    seen = [ws.published(ws.uri)]
    while seen[-1]["version"] != 12:
        seen.append(ws.published(ws.uri))
    # one publish for the burst (a descheduled server may see a pause inside
    # it: a very loaded machine, at most a couple more), never one per change
    assert len(seen) <= 3, [p["version"] for p in seen]
    got = seen[-1]
    assert any("'bxxxxxxxxxxx'" in d["message"] for d in got["diagnostics"])
    ws.change(ws.uri, MOD, 13)
    got = ws.published(ws.uri)
    assert got == {"uri": ws.uri, "version": 13, "diagnostics": []}
    # nothing else came: 11 changes gave one publish, not 11
    leftover = []
    while True:
        try:
            leftover.append(ws.notifications.get(timeout=0.5))
        except queue.Empty:
            break
    assert [m for m in leftover if m.get("method") == "textDocument/publishDiagnostics"] == []


def test_a_stale_change_is_ignored(ws):
    broken = MOD.replace("return a + b", "return a + zz")
    ws.change(ws.uri, MOD.replace("return a + b", "return a + b "), 5)
    assert ws.published(ws.uri)["version"] == 5
    ws.change(ws.uri, broken, 3)                       # older than the text held
    ws.change(ws.uri, MOD.replace("return a + b", "return a + b  "), 6)
    got = ws.published(ws.uri)
    assert got["version"] == 6 and got["diagnostics"] == []
    # the document is version 6's text: the formatter sees it, not the stale one
    edits = ws.request("textDocument/formatting", {"textDocument": {"uri": ws.uri},
                                                   "options": {"tabSize": 4, "insertSpaces": True}})
    assert edits and "zz" not in edits[0]["newText"]


def test_completion_is_answered_while_typing(ws):
    # a burst, then a completion right away: answered from the last analysis
    base = MOD.replace("    let x: i64 = scale(2)\n", "    let x: i64 = scale(2)\n    let y: i64 = v\n")
    assert base != MOD
    ws.change(ws.uri, base, 2)
    ws.published(ws.uri)
    text = base
    for v, ch in enumerate("su", start=3):
        text = text.replace("let y: i64 = v", "let y: i64 = v" + ch, 1) if ch == "s" else \
            text.replace("let y: i64 = vs", "let y: i64 = vsu", 1)
        ws.change(ws.uri, text, v)
    t0 = time.monotonic()
    got = req(ws, "textDocument/completion", ws.uri, at(text, "= vsu", offset=5))
    assert time.monotonic() - t0 < 5.0
    labels = [i["label"] for i in got["items"]]
    assert "vsum" in labels and "x" in labels, [n for n in labels if not n.startswith("nx_")]


# ---------------------------------------------------------------- URIs
def test_symlinked_folder_unsaved_buffer_and_new_file(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "m.nx").write_text(MOD, encoding="utf-8")
    link = tmp_path / "link"
    os.symlink(real, link)
    c = start(link)
    try:
        uri = (link / "m.nx").as_uri()
        broken = MOD.replace("return a + b", "return a + nope")
        c.open(link / "m.nx", text=broken, uri=uri)
        got = c.published(uri)                      # under the URI opened, from the buffer
        assert got["uri"] == uri and any("'nope'" in d["message"] for d in got["diagnostics"])
        # a file that is not on disk yet, in the symlinked folder
        new_uri = (link / "new.nx").as_uri()
        c.open(link / "new.nx", text='import "m.nx"\nfunc f() -> i64 { return vsum(1, 2) }\n', uri=new_uri)
        got = c.published(new_uri)
        assert got["uri"] == new_uri
        assert [d["message"] for d in got["diagnostics"]][:1] and \
            got["diagnostics"][0]["message"].startswith("in imported module m.nx")
        h = req(c, "textDocument/hover", new_uri, {"line": 1, "character": 26})
        assert "func vsum(a: i64, b: i64) -> i64" in h["contents"]["value"]
        loc = req(c, "textDocument/definition", new_uri, {"line": 1, "character": 26})
        assert loc["uri"] == uri                    # the open document's URI, not the resolved one
        # requests keep working after it
        assert c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    finally:
        c.close()


def test_untitled_and_host_uris(tmp_path):
    c = start(tmp_path)
    try:
        for uri in ("untitled:Untitled-1", "file://somehost/share/x.nx"):
            text = "func f(a: i64) -> i64 {\n    return a + b\n}\n"
            c.open(tmp_path / "unused.nx", text=text, uri=uri)
            got = c.published(uri)
            assert got["uri"] == uri
            assert [d["message"] for d in got["diagnostics"]] == ["undefined name 'b'"]
            h = req(c, "textDocument/hover", uri, {"line": 1, "character": 11})
            assert "param a: i64" in h["contents"]["value"]
    finally:
        c.close()


# ---------------------------------------------------------------- protocol
def test_request_before_initialize_is_an_error(tmp_path):
    c = LspClient(["lsp"], cwd=str(tmp_path))
    try:
        with pytest.raises(LspError) as e:
            c.request("textDocument/hover", {"textDocument": {"uri": "file:///x.nx"},
                                             "position": {"line": 0, "character": 0}})
        assert e.value.code == -32002
        c.initialize(tmp_path)
        assert c.request("textDocument/hover", {"textDocument": {"uri": (tmp_path / "x.nx").as_uri()},
                                                "position": {"line": 0, "character": 0}}) is None
    finally:
        assert c.close() == 0


def test_exit_without_shutdown_exits_1(tmp_path):
    c = start(tmp_path)
    c.notify("exit", {})
    assert c.proc.wait(timeout=20) == 1


# ---------------------------------------------------------------- rename
def rename(c, uri, pos, new):
    return req(c, "textDocument/rename", uri, pos, newName=new)


def test_rename_refuses_a_conflict(ws):
    with pytest.raises(LspError) as e:
        rename(ws, ws.uri, at(MOD, "scale("), "vsum")
    assert e.value.code == -32803
    assert "'vsum' is already defined at m.nx:5:6" in e.value.message and "Traceback" not in e.value.message


def test_rename_refuses_a_capture(ws):
    with pytest.raises(LspError) as e:
        rename(ws, ws.uri, at(MOD, "v: i64"), "SCALE")
    assert e.value.code == -32803
    assert "'SCALE' at m.nx:10:16" in e.value.message and "would refer to the renamed param" in e.value.message
    # a harmless new name is accepted, as one edit per place
    edits = rename(ws, ws.uri, at(MOD, "v: i64"), "w")["changes"][ws.uri]
    assert sorted((e["range"]["start"]["line"], e["range"]["start"]["character"]) for e in edits) == \
        [(8, 11), (9, 11)]


def test_rename_refuses_bad_names_and_the_bundled_library(ws):
    for bad in ("while", "i64", "2x", "a-b"):
        with pytest.raises(LspError) as e:
            rename(ws, ws.uri, at(MOD, "vsum("), bad)
        assert e.value.code == -32803 and "not a valid .nx name" in e.value.message
    with pytest.raises(LspError) as e:
        rename(ws, ws.uri, at(MOD, "nx_f32_is_nan"), "isnan")
    assert e.value.code == -32803 and "bundled library" in e.value.message
    with pytest.raises(LspError) as e:
        req(ws, "textDocument/prepareRename", ws.uri, at(MOD, "nx_f32_is_nan"))
    assert "bundled library" in e.value.message
    got = req(ws, "textDocument/prepareRename", ws.uri, at(MOD, "vsum(", offset=1))
    assert got["placeholder"] == "vsum" and got["range"]["start"] == at(MOD, "vsum(")


def test_rename_refuses_a_definition_outside_the_workspace(tmp_path):
    lib = tmp_path / "elsewhere"
    lib.mkdir()
    (lib / "far.nx").write_text("func far() -> i64 { return 1 }\n", encoding="utf-8")
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    text = 'import "far.nx"\nfunc g() -> i64 { return far() }\n'
    (ws_dir / "g.nx").write_text(text, encoding="utf-8")
    c = LspClient(["lsp", "-I", str(lib)], cwd=str(ws_dir))
    c.initialize(ws_dir)
    try:
        uri = c.open(ws_dir / "g.nx")
        assert c.diagnostics(uri) == []
        with pytest.raises(LspError) as e:
            rename(c, uri, at(text, "far()"), "near")
        assert "outside the workspace folders" in e.value.message
    finally:
        c.close()


# ---------------------------------------------------------------- in-process: incremental and bounded
def _tree(tmp_path, n: int = 12):
    """n modules in a chain: m{i} imports m{i-1}."""
    for i in range(n):
        imp = f'import "m{i - 1}.nx"\n' if i else ""
        call = f"f{i - 1}(x) + " if i else ""
        (tmp_path / f"m{i}.nx").write_text(f"{imp}func f{i}(x: i64) -> i64 {{ return {call}x + {i} }}\n",
                                           encoding="utf-8")
    return [str(tmp_path / f"m{i}.nx") for i in range(n)]


def test_an_edit_checks_only_the_edited_module(tmp_path):
    from nxc.tools.analysis import Analyzer
    paths = _tree(tmp_path)
    leaf = os.path.realpath(paths[-1])
    an = Analyzer()
    an.analyse(leaf, {})
    first = dict(an.stats)
    text = open(leaf).read()
    gi = an.analyse(leaf, {leaf: text.replace("x + 11", "x + 12")})
    assert an.stats["bodies_checked"] - first["bodies_checked"] == 1      # the leaf only
    assert an.stats["bodies_kept"] - first["bodies_kept"] == 11
    assert gi.unwalked == {os.path.realpath(p) for p in paths[:-1]}      # imports not walked
    # an error in an imported module's body is still shown, from what was kept
    mid = os.path.realpath(paths[5])
    broken = {mid: open(mid).read().replace("x + 5", "x + nope")}
    gi = an.analyse(leaf, broken)
    assert any("undefined name 'nope'" in d.message for d in gi.result.diagnostics)
    gi = an.analyse(leaf, broken)
    assert any("undefined name 'nope'" in d.message for d in gi.result.diagnostics)
    # the definition of an imported name is found (the module is walked then)
    assert gi.definition(next(o.target for o in gi.modules[leaf].occurrences if o.kind == "name"
                              and o.target.path != leaf)).name == "f10"


def test_references_index_names_of_files_with_the_word_only_and_is_bounded(tmp_path, monkeypatch):
    from nxc.tools import analysis
    from nxc.tools.index import Loc
    paths = [os.path.realpath(p) for p in _tree(tmp_path)]
    an = analysis.Analyzer()
    target = Loc(paths[3], 1 + 1, 6)                  # f3 in m3.nx (line 2: after its import)
    found = [u for p in paths for u in an.uses_in(p, "f3", target, {})]
    assert sorted((loc.path, loc.line) for loc, _ in found) == [(paths[3], 2), (paths[4], 2)]
    assert set(an._names) == {paths[3], paths[4]}      # the others do not contain the word
    monkeypatch.setattr(analysis, "REFS_MAX", 1)
    an.uses_in(paths[5], "f5", Loc(paths[5], 2, 6), {})
    assert list(an._names) == [paths[5]]


def test_bench_script_runs(tmp_path):
    """bench/lsp_latency.py drives the server as an editor (a small tree here)."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, os.path.join(root, "bench", "lsp_latency.py"), "--modules", "12",
                          "--json", "--skip-qwen3", "--ab-refs", "--out", str(tmp_path / "tree")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("keystroke_to_diagnostics_s", "completion_after_burst_s", "cpu_per_edit_s",
                "references_cpu_s", "rss_after_references_mb"):
        assert got["leaf"][key] > 0, key
    assert got["leaf"]["references_found"] >= 1
    # the same references with the names-only step off (nxc/tools/analysis.py)
    assert got["leaf_checked_refs"]["references_found"] == got["leaf"]["references_found"]


# ---------------------------------------------------------------- more features
def test_highlight_folding_signature_help_workspace_symbols(ws):
    got = req(ws, "textDocument/documentHighlight", ws.uri, at(MOD, "x: i64 = scale"))
    assert sorted((h["range"]["start"]["line"], h["range"]["start"]["character"], h.get("kind")) for h in got) == \
        [(13, 8, 3), (14, 21, 2), (15, 16, 2)]
    folds = ws.request("textDocument/foldingRange", {"textDocument": {"uri": ws.uri}})
    assert {(f["startLine"], f["endLine"]) for f in folds} >= {(4, 6), (8, 10), (12, 16)}
    text = MOD.replace("return vsum(x, 1) - 7", "return vsum(x, ")
    ws.change(ws.uri, text, 2)
    ws.published(ws.uri)
    sh = req(ws, "textDocument/signatureHelp", ws.uri, at(text, "vsum(x, ", offset=8))
    assert sh["signatures"][0]["label"] == "func vsum(a: i64, b: i64) -> i64" and sh["activeParameter"] == 1
    syms = ws.request("workspace/symbol", {"query": "SCAL"})
    assert [(s["name"], s["kind"], s["location"]["uri"]) for s in syms] == \
        [("SCALE", 14, ws.uri), ("scale", 12, ws.uri)]


def test_cancel_request_stops_references(tmp_path):
    """$/cancelRequest of a references request over many files: answered
    RequestCancelled (-32800), and the server goes on answering."""
    paths = _tree(tmp_path, 80)
    c = start(tmp_path)
    try:
        uri = c.open(tmp_path / "m0.nx")
        assert c.diagnostics(uri) == []
        rid, q = c.send_request("textDocument/references", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 6},
            "context": {"includeDeclaration": True}}, cancel=True)
        with pytest.raises(LspError) as e:
            c.wait("textDocument/references", rid, q)
        assert e.value.code == -32800
        # and a whole one still works afterwards (f0 is used in m1 only)
        refs = req(c, "textDocument/references", uri, {"line": 0, "character": 6},
                   context={"includeDeclaration": True})
        assert sorted(r["uri"].rsplit("/", 1)[1] for r in refs) == ["m0.nx", "m1.nx"]
        assert len(paths) == 80
    finally:
        c.close()


def test_semantic_tokens(ws):
    data = ws.request("textDocument/semanticTokens/full", {"textDocument": {"uri": ws.uri}})["data"]
    tokens, line, char = [], 0, 0
    for i in range(0, len(data), 5):
        dl, dc, length, ty, mods = data[i:i + 5]
        line, char = line + dl, (char + dc if dl == 0 else dc)
        tokens.append((line, char, length, ty, mods))
    types = ["function", "variable", "parameter", "type", "struct", "property"]
    named = {(t[0], t[1]): (types[t[3]], t[4]) for t in tokens}
    assert named[(2, 6)] == ("variable", 1 | 2)              # const SCALE: declaration, readonly
    assert named[(8, 11)] == ("parameter", 1)                # v
    assert named[(9, 15)] == ("variable", 2)                 # SCALE in the body
    assert named[(13, 17)] == ("function", 0)                # scale(2)
    assert named[(14, 7)] == ("function", 4)                 # nx_f32_is_nan: the bundled library
    assert named[(4, 5)] == ("function", 1)


def test_code_action_adds_the_import(tmp_path):
    (tmp_path / "helper.nx").write_text("func helper_fn(a: i64) -> i64 { return a }\n", encoding="utf-8")
    text = "// app\n\nfunc main() -> i64 {\n    return helper_fn(nx_f32_neg(1)) - 1\n}\n"
    (tmp_path / "app.nx").write_text(text, encoding="utf-8")
    c = start(tmp_path)
    try:
        uri = c.open(tmp_path / "app.nx")
        diags = c.diagnostics(uri)
        assert sorted(d["message"].split(";")[0] for d in diags) == \
            ["undefined name 'helper_fn'", "undefined name 'nx_f32_neg'"]
        actions = c.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": diags[0]["range"], "context": {"diagnostics": diags}})
        got = sorted((a["title"], e["range"]["start"]["line"], e["newText"])
                     for a in actions for e in a["edit"]["changes"][uri])
        assert got == [('add the import "helper.nx" (defines helper_fn)', 2, 'import "helper.nx"\n'),
                       ('add the import "nx_f32.nx" (defines nx_f32_neg)', 2, 'import "nx_f32.nx"\n')]
    finally:
        c.close()


def test_inlay_hints_inferred_types_and_field_offsets(tmp_path):
    text = ("struct P {\n    a: i32,\n    b: i64, // the second\n}\n\n"
            "func main() -> i64 {\n    let n = 4\n    let m: i64 = n\n    return m - 4\n}\n")
    (tmp_path / "p.nx").write_text(text, encoding="utf-8")
    c = start(tmp_path)
    try:
        uri = c.open(tmp_path / "p.nx")
        assert c.diagnostics(uri) == []
        hints = c.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 10, "character": 0}}})
        got = sorted((h["position"]["line"], h["position"]["character"], h["label"]) for h in hints)
        assert got == [(1, 11, "+0, 4 B"), (2, 11, "+8, 8 B"), (6, 9, ": i64")]
        # only the lines asked for
        hints = c.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
            "start": {"line": 5, "character": 0}, "end": {"line": 9, "character": 0}}})
        assert [h["label"] for h in hints] == [": i64"]
    finally:
        c.close()


def test_code_action_did_you_mean(ws):
    text = MOD.replace("return vsum(x, 1) - 7", "return vsun(x, 1) - 7")
    ws.change(ws.uri, text, 2)
    diags = ws.published(ws.uri)["diagnostics"]
    assert [d["message"] for d in diags] == ["undefined name 'vsun'; did you mean 'vsum'?"]
    actions = ws.request("textDocument/codeAction", {"textDocument": {"uri": ws.uri}, "range": diags[0]["range"],
                                                     "context": {"diagnostics": diags}})
    fix = [a for a in actions if a["title"] == "change 'vsun' to 'vsum'"]
    assert fix and fix[0]["edit"]["changes"][ws.uri] == [{"range": diags[0]["range"], "newText": "vsum"}]


def test_hover_while_a_check_is_pending(ws):
    # an edit on another line, hover right away: answered (from the last
    # analysis, the cursor's line being the same)
    text = MOD.replace("return a + b", "return a + b ")
    ws.change(ws.uri, text, 2)
    h = req(ws, "textDocument/hover", ws.uri, at(text, "SCALE", nth=1))
    assert "const SCALE: i64 = 3" in h["contents"]["value"]
    # the answer came before the (debounced) check of version 2 was published:
    # it did not wait for it (the client queues messages in the order they came)
    assert ws.notifications.empty()
    assert ws.published(ws.uri)["version"] == 2


def test_references_over_a_generated_tree_stay_small(tmp_path):
    """First find-references of a name every module uses (`nx_f32_add`) in a
    60-module bench/gen_tree.py tree: every use found, and the server's RSS
    stays far from the gigabytes of a tree per module kept."""
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tree = tmp_path / "tree"
    subprocess.run([sys.executable, os.path.join(root, "bench", "gen_tree.py"), str(tree), "--modules", "60",
                    "--graph", "random", "--seed", "2"], check=True, capture_output=True, timeout=120)
    expected = sum(len(re.findall(r"\bnx_f32_add\b", p.read_text())) for p in tree.glob("*.nx"))
    c = start(tree, timeout=300)
    try:
        leaf = tree / "t0059.nx"
        text = leaf.read_text()
        uri = c.open(leaf)
        c.diagnostics(uri)
        refs = req(c, "textDocument/references", uri, at(text, "nx_f32_add(", offset=1),
                   context={"includeDeclaration": False})
        in_tree = [r for r in refs if r["uri"].startswith(tree.as_uri() + "/")]
        assert len(in_tree) == expected > 60
        # and the uses inside the defining module (the bundled nx_f32.nx)
        assert {r["uri"].rsplit("/", 1)[1] for r in refs if r not in in_tree} == {"nx_f32.nx"}
        with open(f"/proc/{c.proc.pid}/status") as f:
            rss_mb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
        assert rss_mb < 300, rss_mb
    finally:
        c.close()


# ---------------------------------------------------------------- malformed input
def test_a_request_whose_params_break_the_protocol_is_answered(ws):
    # Before: pygls could not read a position with a negative line, logged a
    # traceback and dropped the request: the editor waited for ever.
    for method in ("textDocument/hover", "textDocument/definition", "textDocument/rename"):
        with pytest.raises(LspError) as e:
            req(ws, method, ws.uri, {"line": -1, "character": 0}, newName="x")
        assert e.value.code == -32602 and method in e.value.message
    assert req(ws, "textDocument/hover", ws.uri, at(MOD, "scale(2)")) is not None     # still serving


def test_formatting_a_document_neither_open_nor_on_disk_is_nothing(ws):
    # Before: an internal error (-32603, FileNotFoundError).
    for uri in ("file:///nonexistent/x.nx", "untitled:Untitled-1"):
        assert ws.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                      "options": {"tabSize": 4, "insertSpaces": True}}) is None


def test_the_fuzzer_finds_every_request_answered_and_no_traceback(tmp_path):
    """bench/lsp_fuzz.py, bounded: random edits and requests, many malformed;
    every request answered, never an internal error, no traceback in the log."""
    import subprocess
    import sys
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "lsp_fuzz.py")
    done = subprocess.run([sys.executable, bench, "--seeds", "2", "--steps", "250"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.count(": ok") == 2, done.stdout + done.stderr
