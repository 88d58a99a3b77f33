"""`nxc lsp` driven by a real client process over stdio (tests/lsp_client.py)."""
from __future__ import annotations

import textwrap

import pytest

from lsp_client import LspClient

LIB = textwrap.dedent("""\
    // lib.nx -- a small library for the language server tests
    struct Node {
        left: *Node,
        value: i32,
        weight: i64,
    }

    const LIMIT: i64 = 6 * 7

    // Adds two numbers.
    // Wraps on overflow, like every integer operation.
    func add(a: i64, b: i64) -> i64 {
        return a + b
    }
    """)

APP = textwrap.dedent("""\
    import "lib.nx"

    func main() -> i64 {
        let total: i64 = add(1, 2)
        let p: *Node = sys_alloc_node()
        let q: *Node = p.left
        if total != 3 { return 1 }
        if LIMIT != 42 { return 2 }
        if q != p { return 3 }
        return 0
    }

    func sys_alloc_node() -> *Node {
        return 0 as *Node
    }
    """)


def at(text: str, needle: str, nth: int = 0, offset: int = 0) -> dict:
    """The LSP position of the nth `needle` in `text` (plus `offset` characters)."""
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    i += offset
    line = text.count("\n", 0, i)
    return {"line": line, "character": i - (text.rfind("\n", 0, i) + 1)}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    (root / "lib.nx").write_text(LIB, encoding="utf-8")
    (root / "app.nx").write_text(APP, encoding="utf-8")
    client = LspClient(["lsp"], cwd=str(root))
    client.capabilities = client.initialize(root)["capabilities"]
    client.lib = client.open(root / "lib.nx")
    assert client.diagnostics(client.lib) == []
    client.app = client.open(root / "app.nx")
    assert client.diagnostics(client.app) == []
    client.root = root
    client.version = 1
    yield client
    assert client.close() == 0


def edit(ws, uri: str, text: str) -> list[dict]:
    """Replace an open document's text (unsaved); its new diagnostics."""
    ws.version += 1
    ws.change(uri, text, ws.version)
    # Every open document is re-checked; take the one asked for.
    return ws.diagnostics(uri)


def req(ws, method: str, uri: str, pos: dict, **extra):
    return ws.request(method, {"textDocument": {"uri": uri}, "position": pos, **extra})


def test_server_announces_its_features(ws):
    caps = ws.capabilities
    for cap in ("hoverProvider", "definitionProvider", "referencesProvider", "documentSymbolProvider",
                "renameProvider", "documentFormattingProvider", "completionProvider"):
        assert caps.get(cap), cap
    assert "." in caps["completionProvider"]["triggerCharacters"]


def test_diagnostics_on_unsaved_text_then_cleared(ws):
    broken = APP.replace("if total != 3", "if totl != 3")
    diags = edit(ws, ws.app, broken)
    errors = [d for d in diags if d["severity"] == 1]
    assert len(errors) == 1
    d = errors[0]
    assert "undefined name 'totl'; did you mean 'total'?" in d["message"]
    assert d["severity"] == 1
    assert d["range"]["start"] == at(broken, "totl")
    assert d["range"]["end"] == at(broken, "totl", offset=4)
    # and the warning that follows from it, at the declaration
    assert [(w["message"], w["range"]["start"]) for w in diags if w["severity"] == 2] == \
        [("unused variable 'total'", at(broken, "total"))]
    assert edit(ws, ws.app, APP) == []


def test_diagnostics_keep_coming_through_a_syntax_error(ws):
    # line 5 is unfinished (a syntax error); line 8 has an independent type error
    broken = APP.replace("let q: *Node = p.left", "let q: *Node = p.left +").replace(
        "if LIMIT != 42", "if LIMIT != add")
    diags = edit(ws, ws.app, broken)
    found = sorted((d["range"]["start"]["line"], d["range"]["start"]["character"], d["message"]) for d in diags)
    # the unfinished line goes on into the next statement: the error is
    # shown where that line ends, not at the next line's `if`
    end_of_line5 = len(broken.split("\n")[5])
    assert [(line, col) for line, col, _ in found] == [(5, end_of_line5), (7, 16)], found
    assert found[0][2].startswith("unexpected 'if'")
    assert found[1][2] == "function 'add' must be called: add (...)"
    assert edit(ws, ws.app, APP) == []


def test_error_in_an_imported_module_is_shown_at_the_import(ws):
    broken_lib = LIB.replace("return a + b", "return a + c")
    edit(ws, ws.lib, broken_lib)            # the library is open with unsaved text
    diags = ws.diagnostics(ws.app)          # ... and the importer is re-checked against it
    assert len(diags) == 1
    assert diags[0]["range"]["start"] == {"line": 0, "character": 0}
    assert diags[0]["message"].startswith("in imported module lib.nx:13:16: undefined name 'c'")
    edit(ws, ws.lib, LIB)
    assert ws.diagnostics(ws.app) == []


def test_definition_across_an_import(ws):
    loc = req(ws, "textDocument/definition", ws.app, at(APP, "add("))
    assert loc["uri"] == ws.lib
    assert loc["range"]["start"] == at(LIB, "add(")


def test_definition_of_a_struct_field(ws):
    loc = req(ws, "textDocument/definition", ws.app, at(APP, "left", offset=1))
    assert loc["uri"] == ws.lib
    assert loc["range"]["start"] == at(LIB, "left:")


def test_definition_of_a_local_a_type_and_an_import(ws):
    loc = req(ws, "textDocument/definition", ws.app, at(APP, "total", nth=1))
    assert loc["uri"] == ws.app and loc["range"]["start"] == at(APP, "total")
    loc = req(ws, "textDocument/definition", ws.app, at(APP, "Node"))
    assert loc["uri"] == ws.lib and loc["range"]["start"] == at(LIB, "Node")
    loc = req(ws, "textDocument/definition", ws.app, at(APP, '"lib.nx"', offset=2))
    assert loc["uri"] == ws.lib and loc["range"]["start"] == {"line": 0, "character": 0}


def hover(ws, uri, pos) -> str:
    return req(ws, "textDocument/hover", uri, pos)["contents"]["value"]


def test_hover_local_function_const_struct(ws):
    assert "let total: i64" in hover(ws, ws.app, at(APP, "total", nth=1))
    h = hover(ws, ws.app, at(APP, "add("))
    assert "func add(a: i64, b: i64) -> i64" in h
    assert "Adds two numbers.\nWraps on overflow, like every integer operation." in h
    assert "const LIMIT: i64 = 42" in hover(ws, ws.app, at(APP, "LIMIT"))
    h = hover(ws, ws.app, at(APP, "Node"))
    assert "size 24 B, align 8" in h
    assert "+0    left: *Node" in h and "+8    value: i32" in h and "+16   weight: i64" in h
    assert "field Node.left: *Node at offset 0" in hover(ws, ws.app, at(APP, "left"))
    assert hover(ws, ws.app, at(APP, "i64")) == "built-in type `i64` (8 B)"
    # an expression: the type of `total != 3`
    assert "bool" in hover(ws, ws.app, at(APP, "!= 3"))


def labels(result) -> list[str]:
    items = result["items"] if isinstance(result, dict) else result
    return [i["label"] for i in items]


def test_completion_of_fields_after_a_dot(ws):
    text = APP.replace("let q: *Node = p.left", "let q: *Node = p.")
    edit(ws, ws.app, text)              # a syntax error: the line is unfinished
    got = labels(req(ws, "textDocument/completion", ws.app, at(text, "p.", offset=2)))
    assert got == ["left", "value", "weight"]
    # through a field of struct pointer type: p.left.
    text2 = APP.replace("let q: *Node = p.left", "let q: *Node = p.left.")
    edit(ws, ws.app, text2)
    assert labels(req(ws, "textDocument/completion", ws.app, at(text2, "p.left.", offset=7))) == \
        ["left", "value", "weight"]
    assert edit(ws, ws.app, APP) == []


def test_completion_of_names_in_scope_and_imported(ws):
    got = labels(req(ws, "textDocument/completion", ws.app, at(APP, "if q")))
    for name in ("add", "LIMIT", "Node", "total", "p", "q", "sys_alloc_node", "while", "i64"):
        assert name in got, name
    # inside the function, before `let q`: q is not in scope yet
    got = labels(req(ws, "textDocument/completion", ws.app, at(APP, "let q")))
    assert "p" in got and "q" not in got


def test_completion_of_module_files_in_an_import(ws):
    text = APP.replace('import "lib.nx"', 'import "')
    edit(ws, ws.app, text)
    got = labels(req(ws, "textDocument/completion", ws.app, {"line": 0, "character": 8}))
    assert "lib.nx" in got and "nx_f32.nx" in got      # the folder, then the bundled modules
    assert "app.nx" not in got                          # not the module itself
    edit(ws, ws.app, APP)


def test_document_symbols(ws):
    symbols = ws.request("textDocument/documentSymbol", {"textDocument": {"uri": ws.lib}})
    assert [(s["name"], s["kind"]) for s in symbols] == [("Node", 23), ("LIMIT", 14), ("add", 12)]
    assert [c["name"] for c in symbols[0]["children"]] == ["left", "value", "weight"]
    add = symbols[2]
    assert add["range"]["start"]["line"] == 11 and add["range"]["end"]["line"] == 13


def test_references_across_two_files(ws):
    refs = req(ws, "textDocument/references", ws.lib, at(LIB, "add("), context={"includeDeclaration": True})
    got = sorted((r["uri"], r["range"]["start"]["line"], r["range"]["start"]["character"]) for r in refs)
    assert got == sorted([(ws.lib, 11, 5), (ws.app, 3, 21)])
    refs = req(ws, "textDocument/references", ws.app, at(APP, "weight") if "weight" in APP else at(APP, "left"),
               context={"includeDeclaration": False})
    assert [(r["uri"], r["range"]["start"]["line"]) for r in refs] == [(ws.app, 5)]


def test_rename_across_two_files(ws):
    result = req(ws, "textDocument/rename", ws.app, at(APP, "add("), newName="plus")
    changes = result["changes"]
    assert sorted(changes) == sorted([ws.lib, ws.app])
    assert [(e["range"]["start"], e["newText"]) for e in changes[ws.lib]] == [(at(LIB, "add("), "plus")]
    assert [(e["range"]["start"], e["newText"]) for e in changes[ws.app]] == [(at(APP, "add("), "plus")]
    with pytest.raises(RuntimeError, match="not a valid .nx name"):
        req(ws, "textDocument/rename", ws.app, at(APP, "add("), newName="while")


def test_formatting_goes_through_nxc_fmt(ws):
    from nxc.tools.fmt import format_text
    messy = APP.replace("let total: i64 = add(1, 2)", "let total:i64=add( 1,2 )")
    edit(ws, ws.app, messy)
    options = {"tabSize": 4, "insertSpaces": True}
    edits = ws.request("textDocument/formatting", {"textDocument": {"uri": ws.app}, "options": options})
    assert len(edits) == 1
    assert edits[0]["range"]["start"] == {"line": 0, "character": 0}
    assert edits[0]["newText"] == format_text(messy) == APP        # the same text as `nxc fmt`
    edit(ws, ws.app, APP)
    # formatted already: nothing to do; a text that does not parse: left alone
    assert ws.request("textDocument/formatting", {"textDocument": {"uri": ws.app}, "options": options}) == []
    edit(ws, ws.app, APP.replace("return 0\n}", "return (0\n}"))
    assert ws.request("textDocument/formatting", {"textDocument": {"uri": ws.app}, "options": options}) == []
    assert edit(ws, ws.app, APP) == []


def test_incremental_change_and_non_ascii_columns(ws):
    # a ranged change, as editors send while typing; a comment with
    # non-ASCII text before the mistake: columns are UTF-16 units
    ws.version += 1
    line = APP.split("\n").index("    if total != 3 { return 1 }")
    ws.change_range(ws.app, {"start": {"line": line, "character": 7}, "end": {"line": line, "character": 12}},
                    "/* \u00e9\U0001F600 */ totl", ws.version)
    errors = [d for d in ws.diagnostics(ws.app) if d["severity"] == 1]
    assert len(errors) == 1 and "'totl'" in errors[0]["message"]
    # 4 spaces, `if `, `/* `, é (1 unit), 😀 (2 units), ` */ `
    assert errors[0]["range"]["start"] == {"line": line, "character": 4 + 3 + 3 + 1 + 2 + 4}
    assert edit(ws, ws.app, APP) == []
