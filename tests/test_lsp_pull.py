"""Pull diagnostics (LSP 3.17 `textDocument/diagnostic`) through a real
client process (tests/lsp_client.py): the same list as the one published,
for the document's current text, with result ids that say when it changed."""
from __future__ import annotations

import queue
import time

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


# ---------------------------------------------------------------- a client that pulls
PULLING = {"textDocument": {"diagnostic": {"dynamicRegistration": False, "relatedDocumentSupport": False}},
           "workspace": {"diagnostics": {"refreshSupport": True}}}


def quiet(c: LspClient, seconds: float = 1.0) -> list[dict]:
    """The notifications the server sent so far and in the next `seconds`."""
    got = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            got.append(c.notifications.get(timeout=left))
        except queue.Empty:
            break
    return got


def test_a_pulling_client_gets_no_pushes_and_is_asked_to_refresh(tmp_path):
    # one channel: an editor showing pushed and pulled diagnostics (VS Code,
    # Neovim) would list each twice
    (tmp_path / "lib.nx").write_text("func twice(x: i64) -> i64 {\n    return x + x\n}\n", encoding="utf-8")
    (tmp_path / "app.nx").write_text('import "lib.nx"\n\nfunc main() -> i64 {\n    return twice(2) - nope\n}\n',
                                     encoding="utf-8")
    c = LspClient(["lsp"], cwd=str(tmp_path))
    try:
        c.initialize(tmp_path, PULLING)
        app_uri, lib_uri = c.open(tmp_path / "app.nx"), c.open(tmp_path / "lib.nx")
        first = pull(c, app_uri)
        assert [d["message"] for d in first["items"]] == ["undefined name 'nope'"]
        assert pull(c, lib_uri)["items"] == []
        # an edit to the import, then a pull of the importer at once (before
        # any check of the edit): the importer's report already sees it
        c.change(lib_uri, "func twice(x: i64) -> i64 {\n    return x + y\n}\n", 2)
        got = pull(c, app_uri, previous=first["resultId"])
        assert got["kind"] == "full"
        assert [d["message"] for d in got["items"]] == ["in imported module lib.nx:2:16: undefined name 'y'",
                                                         "undefined name 'nope'"]
        # the fix of the import, not pulled: the server asks the client to pull again
        c.change(lib_uri, "func twice(x: i64) -> i64 {\n    return x + x\n}\n", 3)
        req = c.server_requests.get(timeout=c.timeout)
        assert req["method"] == "workspace/diagnostic/refresh"
        again = pull(c, app_uri, previous=got["resultId"])
        assert [d["message"] for d in again["items"]] == ["undefined name 'nope'"]
        # and nothing was ever pushed
        assert [m for m in quiet(c) if m.get("method") == "textDocument/publishDiagnostics"] == []
    finally:
        assert c.close() == 0
