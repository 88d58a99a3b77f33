"""References without a check per file (nxc/tools/analysis.py, steps 1-3):
the names-only step gives the checked index's answer, in-process on every
bundled module, and through a real client process (tests/lsp_client.py)
on a workspace made to trip it: a use reached only through an import, a
word only in a comment and a string, a shadowing parameter, a second
definition of the name, a syntax error, unsaved buffers."""
from __future__ import annotations

import os
import textwrap

import pytest

from lsp_client import LspClient


def _definitions(gi, path):
    """Every definition of the module: top-level names, fields, parameters, locals."""
    return sorted(gi.modules[path].definitions, key=lambda d: d.loc)


def test_names_only_step_equals_the_checked_index_on_every_bundled_module():
    from nxc.paths import bundled_dir
    from nxc.tools import analysis
    folder = os.path.realpath(bundled_dir())
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".nx"))
    an = analysis.Analyzer()
    compared = fast = 0
    kinds: set[str] = set()
    # the checked index of each file (one check each), and its text
    index = {f: an.names_of(f, {}) for f in files}
    texts = {f: open(f, encoding="utf-8").read() for f in files}
    for path in files:
        gi = an.analyse(path, {}, imported_bodies=False)
        defs = _definitions(gi, path)
        for d in defs[::max(1, len(defs) // 16)]:      # 16 per module, spread over it (every kind)
            search = an.search(d.name, d.loc, {}, d.kind)
            for other in files:
                got = search.uses_in(other)
                want = [(loc, n) for loc, n, t in index[other].uses.get(d.name, ()) if t == d.loc]
                if not analysis.names_word(texts[other], d.name):
                    assert want == []           # the word's absence (step 1) is never wrong either
                assert sorted(got) == sorted(want), (d.name, d.loc, other)
                compared += 1
                kinds.add(d.kind)
                fast += search.fast_uses(os.path.realpath(other)) is not None
    assert compared > 500 and fast > compared // 2, (compared, fast)
    assert {"func", "extern", "const", "struct", "field", "param", "local"} <= kinds, kinds
    assert an.stats["refs_fast"] > 0


def test_word_outside_comments_and_strings():
    from nxc.tools.analysis import names_word
    assert names_word("let x = f(1)", "f")
    assert not names_word('// f is here\nlet s = "f"\n/* f\n f */ let y = g', "f")
    assert names_word('let s = "a" // "\nlet t = f', "f")
    assert names_word('/* never closed f', "f")          # left in: analysed, never wrongly skipped
    assert not names_word("let ff = f_1", "f")


LIB = textwrap.dedent("""\
    struct Pt {
        x: i64,
    }

    const LIMIT: i64 = 7

    func helper(a: i64) -> i64 {
        return a + LIMIT
    }
    """)

FILES = {
    "lib.nx": LIB,
    "a.nx": 'import "lib.nx"\n\nfunc fa(p: *Pt) -> i64 {\n    return helper(p.x) + helper(1)\n}\n',
    # helper only through a.nx's import
    "b.nx": 'import "a.nx"\n\nfunc fb() -> i64 {\n    let n: i64 = helper(2)\n    return n\n}\n',
    # the word in a comment and a string only: not a reference, not analysed
    "c.nx": '// helper is not called here\nconst C: i64 = 1\nfunc fc() -> i64 {\n'
            '    let s: *u8 = "helper"\n    return C\n}\n',
    # a parameter of that name: its uses are not the function
    "d.nx": 'import "lib.nx"\n\nfunc fd(helper: i64) -> i64 {\n    return helper + LIMIT\n}\n'
            'func fd2() -> i64 {\n    return helper(3)\n}\n',
    # its own helper, lib.nx not in its graph: another definition
    "e.nx": 'func helper(a: i64) -> i64 {\n    return a\n}\nfunc fe() -> i64 {\n    return helper(4)\n}\n',
    # a syntax error: the checked index, on the recovered text
    "f.nx": 'import "lib.nx"\n\nfunc ff() -> i64 {\n    let y: i64 = helper(5)\n    let z = = 3\n'
            '    return y\n}\n',
    # a struct used as a type; a local named as the field (no `.` before it)
    "g.nx": 'import "lib.nx"\n\nfunc fg(p: *Pt) -> *Pt {\n    let x: i64 = 1\n    return p\n}\n',
}


def _refs(tmp_path, slow: bool, monkeypatch, edits: dict[str, str] | None = None) -> dict:
    if slow:
        monkeypatch.setenv("NXC_LSP_SLOW_REFS", "1")
    else:
        monkeypatch.delenv("NXC_LSP_SLOW_REFS", raising=False)
    c = LspClient(["lsp"], cwd=str(tmp_path), timeout=120)
    try:
        c.initialize(tmp_path)
        lib = c.open(tmp_path / "lib.nx")
        c.diagnostics(lib)
        version = 2
        for name, text in (edits or {}).items():       # unsaved buffers
            c.open(tmp_path / name, text=text)
            version += 1
        out = {}
        for word, line, col in (("helper", 6, 5), ("Pt", 0, 7), ("LIMIT", 4, 6), ("x", 1, 4)):
            refs = c.request("textDocument/references", {
                "textDocument": {"uri": lib}, "position": {"line": line, "character": col},
                "context": {"includeDeclaration": True}})
            out[word] = sorted((r["uri"].rsplit("/", 1)[1], r["range"]["start"]["line"],
                                r["range"]["start"]["character"]) for r in refs)
        return out
    finally:
        assert c.close() == 0


@pytest.fixture
def tree(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_references_with_and_without_the_names_only_step(tree, monkeypatch):
    fast = _refs(tree, False, monkeypatch)
    assert fast == _refs(tree, True, monkeypatch)
    assert fast["helper"] == [("a.nx", 3, 11), ("a.nx", 3, 25), ("b.nx", 3, 17), ("d.nx", 6, 11),
                              ("f.nx", 3, 17), ("lib.nx", 6, 5)]
    assert fast["Pt"] == [("a.nx", 2, 12), ("g.nx", 2, 12), ("g.nx", 2, 20), ("lib.nx", 0, 7)]
    assert fast["LIMIT"] == [("d.nx", 3, 20), ("lib.nx", 4, 6), ("lib.nx", 7, 15)]
    assert fast["x"] == [("a.nx", 3, 20), ("lib.nx", 1, 4)]        # the field, after a `.`


def test_references_see_unsaved_buffers(tree, monkeypatch):
    edits = {
        "a.nx": 'import "lib.nx"\n\nfunc fa(p: *Pt) -> i64 {\n    return p.x\n}\n',           # uses gone
        "c.nx": 'import "lib.nx"\nfunc fc() -> i64 {\n    return helper(9) // helper\n}\n',     # one now
    }
    fast = _refs(tree, False, monkeypatch, edits)
    assert fast == _refs(tree, True, monkeypatch, edits)
    # b.nx still reaches helper through a.nx, whose buffer still imports lib.nx
    assert fast["helper"] == [("b.nx", 3, 17), ("c.nx", 2, 11), ("d.nx", 6, 11), ("f.nx", 3, 17),
                              ("lib.nx", 6, 5)]
    assert fast["x"] == [("a.nx", 3, 13), ("lib.nx", 1, 4)]        # the buffer's use, not the file's


def test_saved_files_share_the_front_ends_parse_cache_buffers_do_not(tmp_path, monkeypatch):
    """A saved module's AST is the front end's (the undefined-name hint
    parses through it): one parse for both. A buffer's text is never
    written to the cache folder (it changes at every key)."""
    from nxc.cache import cache_dir
    from nxc.diagnostics import Diagnostics, SourceFile
    from nxc.syntax.loader import parse_cached
    from nxc.tools.workspace import load_graph
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    a, lib = os.path.realpath(tmp_path / "a.nx"), os.path.realpath(tmp_path / "lib.nx")
    buffer = FILES["a.nx"].replace("helper(1)", "helper(11)")
    loaded = load_graph(a, {a: buffer})
    pickles = os.path.join(cache_dir(), "parse")
    def modules_cached() -> set[str]:
        return {n for n in os.listdir(pickles) if not n.startswith("grammar-")}
    written = modules_cached()
    assert len(written) == 1                                    # lib.nx's, not the buffer's
    assert parse_cached(SourceFile(lib, FILES["lib.nx"]), Diagnostics()) is loaded.parsed[lib].module
    assert loaded.parsed[a].module is not None and loaded.texts[a] == buffer
    # a saved file with a syntax error: recovered as before, nothing cached
    f = os.path.realpath(tmp_path / "f.nx")
    pm = load_graph(f).parsed[f]
    assert pm.syntax_errors and pm.blanked and pm.module is not None
    assert modules_cached() == written
