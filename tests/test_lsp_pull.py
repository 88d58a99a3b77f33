"""Pull diagnostics (LSP 3.17 `textDocument/diagnostic`) through a real
client process (tests/lsp_client.py): the same list as the one published,
for the document's current text, with result ids that say when it changed."""
from __future__ import annotations

from lsp_client import LspClient
from test_lsp_server import MOD, start


def pull(c: LspClient, uri: str, previous: str | None = None) -> dict:
    params = {"textDocument": {"uri": uri}}
    if previous is not None:
        params["previousResultId"] = previous
    return c.request("textDocument/diagnostic", params)


def test_the_capability_is_advertised(tmp_path):
    c = LspClient(["lsp"], cwd=str(tmp_path))
    try:
        caps = c.initialize(tmp_path)["capabilities"]
        assert caps["diagnosticProvider"]["interFileDependencies"] is True
        assert caps["diagnosticProvider"]["workspaceDiagnostics"] is False
    finally:
        assert c.close() == 0


def test_pull_answers_what_is_published(tmp_path):
    broken = MOD.replace("return a + b", "return a + nope")
    (tmp_path / "m.nx").write_text(broken, encoding="utf-8")
    c = start(tmp_path)
    try:
        uri = c.open(tmp_path / "m.nx")
        published = c.diagnostics(uri)
        assert [d["message"] for d in published] == ["undefined name 'nope'"]
        got = pull(c, uri)
        assert got["kind"] == "full" and got["items"] == published and got["resultId"]
        # nothing changed since: "unchanged", with the same id
        again = pull(c, uri, previous=got["resultId"])
        assert again == {"kind": "unchanged", "resultId": got["resultId"]}
        # an edit, pulled at once (before its debounced publish): the new text's diagnostics
        c.change(uri, MOD, 2)
        fixed = pull(c, uri, previous=got["resultId"])
        assert fixed["kind"] == "full" and fixed["items"] == [] and fixed["resultId"] != got["resultId"]
        assert c.published(uri) == {"uri": uri, "version": 2, "diagnostics": []}
        assert pull(c, uri, previous=fixed["resultId"])["kind"] == "unchanged"
    finally:
        assert c.close() == 0


def test_pull_sees_an_imported_modules_change(tmp_path):
    # interFileDependencies: an edit to an open imported module changes the
    # importer's report (its id too), without the importer being edited
    (tmp_path / "lib.nx").write_text("func twice(x: i64) -> i64 {\n    return x + x\n}\n", encoding="utf-8")
    app = 'import "lib.nx"\n\nfunc main() -> i64 {\n    return twice(2) - 4\n}\n'
    (tmp_path / "app.nx").write_text(app, encoding="utf-8")
    c = start(tmp_path)
    try:
        app_uri = c.open(tmp_path / "app.nx")
        assert c.diagnostics(app_uri) == []
        lib_uri = c.open(tmp_path / "lib.nx")
        assert c.diagnostics(lib_uri) == []
        before = pull(c, app_uri)
        assert before["items"] == []
        c.change(lib_uri, "func twice(x: i64) -> i64 {\n    return x + y\n}\n", 2)
        assert [d["message"] for d in c.diagnostics(lib_uri)] == ["undefined name 'y'"]
        published = c.diagnostics(app_uri)          # the importer is re-checked and re-published
        got = pull(c, app_uri, previous=before["resultId"])
        assert got["kind"] == "full" and got["items"] == published
        assert [d["message"] for d in got["items"]] == ["in imported module lib.nx:2:16: undefined name 'y'"]
        assert got["items"][0]["range"]["start"]["line"] == 0      # on the import line
    finally:
        assert c.close() == 0


def test_pull_for_a_file_that_is_not_open(tmp_path):
    (tmp_path / "other.nx").write_text("func f() -> i64 {\n    return q\n}\n", encoding="utf-8")
    c = start(tmp_path)
    try:
        got = pull(c, (tmp_path / "other.nx").as_uri())
        assert got["kind"] == "full"
        assert [(d["message"], d["range"]["start"]) for d in got["items"]] == \
            [("undefined name 'q'", {"line": 1, "character": 11})]
        gone = pull(c, (tmp_path / "gone.nx").as_uri())         # no such file: said, not a failure
        assert [d["message"] for d in gone["items"]] == [f"cannot read '{tmp_path / 'gone.nx'}'"]
    finally:
        assert c.close() == 0
