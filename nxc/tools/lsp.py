"""`nxc lsp`: a language server for .nx over stdio (pygls + lsprotocol).

Every answer comes from nxc/tools/index.py, which runs the real front end
and checker (through nxc/tools/workspace.py, which lets open documents
override files on disk, also for imports, and recovers from syntax errors
by blanking the offending line). Each document is analysed as the root of
its own import graph, incrementally (nxc/tools/analysis.py: only its own
bodies are checked against the declarations kept from the last check).

Threads: pygls reads and answers on its event loop; every analysis runs on
one worker thread (`_POOL`), so a check never holds up the reader, and the
caches of the analyses are only ever touched from that thread. A change is
checked after DEBOUNCE_S without a newer one; a newer version of the
document supersedes a check not yet published (it stops at its next stage,
and publishes nothing); `$/cancelRequest` cancels a request between files
(references, rename). Completion answers from the last analysis, without
waiting for the check of what was just typed.

Diagnostics are pushed (`publishDiagnostics`) to a client that does not
pull them; a client that says it pulls (LSP 3.17 `textDocument.diagnostic`
in its capabilities) gets them only when it asks, or an editor showing
both channels (VS Code, Neovim) would list each twice; when an import of
an open document changes, such a client is asked to pull again
(`workspace/diagnostic/refresh`) if it can be.

Documents are known by the URI the editor sent (a symlinked path, a
`file://host/` URI, an `untitled:` buffer): diagnostics and locations name
that URI, and the editor's buffer wins over the file on disk.
"""
from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import quote, unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.exceptions import JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import from_fs_path, to_fs_path

from nxc import __version__
from nxc.tools import lsp_features as F
from nxc.tools import lsp_rename
from nxc.tools.analysis import Analyzer, Cancelled
from nxc.tools.index import GraphIndex, Loc, Occurrence
from nxc.paths import bundled_dir
from nxc.syntax.search import search_path
from nxc.tools.workspace import read_text

# A change is checked once the editor has been quiet this long: a burst of
# keys less than this apart is checked once, and the check of a leaf of a
# 200-module tree (~20-50 ms) still lands within 150 ms of the last key.
# A check a newer key supersedes publishes nothing.
DEBOUNCE_S = 0.1
# Files a workspace scan looks at, at most (a home folder opened by mistake
# must not make references take minutes).
MAX_WORKSPACE_FILES = 2000
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".nxc-cache"}
SERVER_NOT_INITIALIZED = -32002

log = logging.getLogger("nxc.lsp")


@dataclass
class State:
    version: int
    deps: int                           # Doc.deps when it was computed
    text: str
    gi: GraphIndex
    diagnostics: list[lsp.Diagnostic]   # as published (and answered to a pull)
    result_id: str = ""                 # names this state to textDocument/diagnostic


@dataclass
class Doc:
    uri: str                    # as the editor sent it
    path: str                   # the analyses' name for it: its real path, or a made-up one
    version: int
    state: State | None = None  # the last analysis published
    closed: bool = False
    good: State | None = None   # the last one whose module had an AST (completion while typing)
    deps: int = 0               # bumped when a module it imports changes (edited, saved, closed)

    def current(self) -> bool:
        """The last analysis is of the text and the imports as they are now."""
        return self.state is not None and self.state.version == self.version and self.state.deps == self.deps


class _Protocol(LanguageServerProtocol):
    def structure_message(self, data):
        # pygls drops a request whose params it cannot read (a position with
        # a negative line, a string where a number goes): logged, never
        # answered, and the client waits for the answer forever. It is
        # answered here with the error, and the message goes no further.
        try:
            return super().structure_message(data)
        except JsonRpcInvalidParams:
            if not (isinstance(data, dict) and "id" in data and isinstance(data.get("method"), str)):
                raise
            said = f"{data['method']}: the params do not follow the protocol"
            log.warning("%s (answered with that error)", said)
            self._send_response(data["id"], None, lsp.ResponseError(code=JsonRpcInvalidParams.CODE, message=said))
            return _ANSWERED

    def handle_message(self, message):
        if message is not _ANSWERED:
            super().handle_message(message)

    def _handle_request(self, msg_id, method_name, params):
        if self._workspace is None and method_name != lsp.INITIALIZE:
            self._send_response(msg_id, None, lsp.ResponseError(
                code=SERVER_NOT_INITIALIZED, message=f"{method_name}: the server is not initialized yet"))
            return
        super()._handle_request(msg_id, method_name, params)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        # A change older than the text held (a client resending, out of
        # order) would corrupt it: dropped.
        held = self.workspace.text_documents.get(_unquoted(params.text_document.uri))
        if held is not None and held.version is not None and params.text_document.version <= held.version:
            log.warning("stale change to %s (version %s <= %s) ignored", params.text_document.uri,
                        params.text_document.version, held.version)
            return
        yield from super().lsp_text_document__did_change(params)


_ANSWERED = object()        # a request answered with an error as it was read (_Protocol.structure_message)


class _QuietRefusals(logging.Filter):
    """pygls logs every error a handler raises with its traceback, and a
    message it cannot read with the traceback in the text. A refusal the user
    reads in the editor (rename: "there is no name to rename here") and params
    that do not follow the protocol are one line in the log, not a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, lsp_rename.RequestFailed):
            record.msg, record.args, record.exc_info, record.exc_text = f"refused: {exc}", (), None, None
        elif isinstance(exc, JsonRpcInvalidParams):        # a notification's (no answer to give)
            record.msg, record.args, record.exc_info, record.exc_text = (
                "a notification whose params do not follow the protocol: ignored", (), None, None)
        elif isinstance(record.msg, str) and record.msg.startswith("Unable to deserialize message"):
            return False        # said once, above or by structure_message
        return True


def _unquoted(uri: str) -> str:
    return unquote(uri)         # how pygls's workspace keys its documents


class NxLanguageServer(LanguageServer):
    def __init__(self, include: list[str] | None = None):
        super().__init__("nxc", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=_Protocol)
        self.include = include or []
        self.analyzer = Analyzer(self.include)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nxc-lsp-check")
        self.docs: dict[str, Doc] = {}          # uri -> open document
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._running: dict[str, tuple[int, asyncio.Future]] = {}     # uri -> (version, its check)
        self.exit_code = 0
        self.shut_down = False
        self._states = 0        # every published state gets its own result id (pull diagnostics)

    # ---- documents
    def doc_path(self, uri: str) -> str:
        fs = to_fs_path(uri) if uri.startswith("file:") else None
        if fs:
            return os.path.realpath(fs)
        # untitled: and other schemes: a made-up file in the first workspace
        # folder (its imports are looked for there); never read from disk
        return os.path.join(self.roots()[0] if self.roots() else os.getcwd(), quote(uri, safe=""))

    def uri_for(self, path: str) -> str:
        for d in self.docs.values():
            if d.path == path:
                return d.uri
        return from_fs_path(path) or path

    def text(self, doc: Doc) -> str:
        return self.workspace.get_text_document(doc.uri).source

    def text_at(self, uri: str) -> str | None:
        """The text of the document `uri`: the editor's if it is open, else
        the file's as it is on disk; None when neither (not there, unreadable)."""
        doc = self.docs.get(uri)
        return self.text(doc) if doc is not None else read_text(self.doc_path(uri), None)

    def overlay(self) -> dict[str, str]:
        """The open documents' texts, by analysis path: they win over the files."""
        return {d.path: self.text(d) for d in self.docs.values()}

    def roots(self) -> list[str]:
        roots = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        roots = [os.path.realpath(r) for r in roots if r]
        if not roots and self.workspace.root_path:
            roots = [os.path.realpath(self.workspace.root_path)]
        return roots

    def workspace_files(self) -> list[str]:
        found: set[str] = {d.path for d in self.docs.values()}
        for root in self.roots():
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                for f in sorted(files):
                    if f.endswith(".nx"):
                        found.add(os.path.realpath(os.path.join(folder, f)))
                if len(found) >= MAX_WORKSPACE_FILES:
                    break
        return sorted(found)

    # ---- analyses (on the worker thread)
    async def run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def schedule(self, uri: str, delay: float = DEBOUNCE_S, refresh: bool = False) -> None:
        """Check `uri` after `delay`; refresh=True: it is re-checked because
        an import changed, so a pulling client is told if its diagnostics did."""
        old = self._timers.pop(uri, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        work = self._recheck if refresh else self.check
        self._timers[uri] = loop.call_later(delay, lambda: loop.create_task(work(uri)))

    def pulls(self) -> bool:
        """The client pulls diagnostics (textDocument/diagnostic): none are pushed."""
        caps = getattr(self.protocol, "client_capabilities", None)      # set by initialize
        return caps is not None and caps.text_document is not None and caps.text_document.diagnostic is not None

    def _can_refresh(self) -> bool:
        ws = self.client_capabilities.workspace
        return bool(ws is not None and ws.diagnostics is not None and ws.diagnostics.refresh_support)

    def imports_changed(self, path: str) -> None:
        """The module `path` changed: every open document that reads it is out of date."""
        for other in self.docs.values():
            if other.path != path and other.state is not None and path in other.state.gi.loaded.texts:
                other.deps += 1

    async def _recheck(self, uri: str) -> None:
        doc = self.docs.get(uri)
        before = doc.state.diagnostics if doc is not None and doc.state is not None else None
        state = await self.check(uri)
        if state is not None and state.diagnostics != before and self.pulls() and self._can_refresh():
            self.workspace_diagnostic_refresh(None)

    def _analyse(self, doc: Doc, version: int, overlay: dict[str, str], uris: dict[str, str]):
        """On the worker thread: reads only what it is given, and the
        versions (a superseded check stops)."""
        def superseded() -> bool:
            return doc.version != version or doc.closed
        if superseded():
            raise Cancelled
        gi = self.analyzer.analyse(doc.path, overlay, superseded)
        return gi, F.diagnostics_for(gi, doc.path, lambda p: uris.get(p) or from_fs_path(p) or p)

    def uris(self) -> dict[str, str]:
        return {d.path: d.uri for d in self.docs.values()}

    async def check(self, uri: str) -> State | None:
        """Analyse the open document `uri` now and publish its diagnostics
        (unless a newer version came meanwhile); the open documents that
        import it are checked next. A check of the same version under way
        is waited for, not run twice."""
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()          # called directly (a request wants it now): the debounced one is not needed
        doc = self.docs.get(uri)
        if doc is None:
            return None
        if doc.current():
            return doc.state            # checked already (a pull or a request wanted it first)
        key = (doc.version, doc.deps)
        running = self._running.get(uri)
        if running is None or running[0] != key or running[1].done():
            running = (key, asyncio.ensure_future(self._check_now(doc)))
            self._running[uri] = running
        # shielded: a cancelled request does not cancel the check it waits for
        return await asyncio.shield(running[1])

    async def _check_now(self, doc: Doc) -> State | None:
        uri = doc.uri
        version, deps, overlay = doc.version, doc.deps, self.overlay()
        text = overlay[doc.path]
        try:
            gi, diags = await self.run(self._analyse, doc, version, overlay, self.uris())
        except Cancelled:
            return None
        except Exception:  # noqa: BLE001 - one document's failure must not stop the server
            log.exception("diagnostics for %s failed", uri)
            return None
        if self.docs.get(uri) is not doc or doc.version != version or doc.deps != deps:
            return None                 # superseded: the newer check publishes
        self._states += 1
        doc.state = State(version, deps, text, gi, diags, f"{version}.{self._states}")
        mi = gi.modules.get(doc.path)
        if mi is not None and mi.module is not None:
            doc.good = doc.state
        if not self.pulls():
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=uri, diagnostics=diags, version=version))
        for other in list(self.docs.values()):
            if other is not doc and other.state is not None and other.state.deps != other.deps:
                self.schedule(other.uri, 0, refresh=True)       # an import of it changed
        return doc.state

    async def fresh(self, uri: str) -> tuple[Doc | None, GraphIndex]:
        """The analysis of the document's current text (of a file that is
        not open: analysed as it is on disk)."""
        doc = self.docs.get(uri)
        if doc is None:
            return None, await self.run(self.analyzer.analyse, self.doc_path(uri), self.overlay())
        if not doc.current():
            await self.check(uri)
        if not doc.current():                                         # superseded while it ran
            gi, _ = await self.run(self._analyse, doc, doc.version, self.overlay(), self.uris())
            return doc, gi
        return doc, doc.state.gi

    async def occurrence(self, params, quick: bool = False) -> tuple[str, GraphIndex, Occurrence | None]:
        """What the cursor is on. quick=True (hover): from the last analysis
        without waiting for the check of what was typed since, when the text
        has as many lines as then and the cursor's line is the same."""
        uri = params.text_document.uri
        path = self.doc_path(uri)
        doc = self.docs.get(uri)
        state = doc.state if doc is not None else None
        if quick and state is not None and path in state.gi.modules:
            now, then = self.text(doc).split("\n"), state.text.split("\n")
            n = params.position.line
            if len(now) == len(then) and n < len(now) and now[n] == then[n]:
                mi = state.gi.modules[path]
                return path, state.gi, mi.occurrence_at(*F.from_lsp(mi.text, params.position))
        _, gi = await self.fresh(uri)
        mi = gi.modules.get(path)
        if mi is None:
            return path, gi, None
        line, col = F.from_lsp(mi.text, params.position)
        return path, gi, mi.occurrence_at(line, col)

    async def uses(self, gi: GraphIndex, target: Loc, include_definition: bool) -> list[tuple[Loc, int]]:
        """Every place the definition at `target` is named, in the workspace's modules."""
        d = gi.definition(target)
        if d is None:
            return []
        roots = self.workspace_files()
        if target.path not in roots:
            roots.append(target.path)
        search = self.analyzer.search(d.name, target, self.overlay(), d.kind)
        found: dict[Loc, int] = {}
        for root in roots:          # one file per step: a cancelled request stops here
            for loc, length in await self.run(search.uses_in, root):
                if include_definition or loc != target:
                    found[loc] = length
        return sorted(found.items())

    def location(self, gi: GraphIndex | None, loc: Loc, length: int) -> lsp.Location:
        if gi is not None and loc.path in gi.modules:
            text = gi.modules[loc.path].text
        else:
            text = read_text(loc.path, self.overlay()) or ""
        return lsp.Location(uri=self.uri_for(loc.path), range=F.range_of(text, loc, length))


def create_server(include: list[str] | None = None) -> NxLanguageServer:
    server = NxLanguageServer(include)

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: NxLanguageServer, params: lsp.InitializedParams):
        encoding = ls.server_capabilities.position_encoding if ls.server_capabilities else None
        F.ENCODING["name"] = str(getattr(encoding, "value", encoding) or "utf-16")

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: NxLanguageServer, *args):
        ls.shut_down = True

    @server.feature(lsp.EXIT)
    def exit_(ls: NxLanguageServer, *args):
        # LSP: exit 0 after a shutdown request, 1 without one
        ls.exit_code = 0 if ls.shut_down else 1

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: NxLanguageServer, params: lsp.DidOpenTextDocumentParams):
        td = params.text_document
        ls.docs[td.uri] = Doc(td.uri, ls.doc_path(td.uri), td.version)
        ls.schedule(td.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: NxLanguageServer, params: lsp.DidChangeTextDocumentParams):
        doc = ls.docs.get(params.text_document.uri)
        if doc is not None:
            doc.version = params.text_document.version
            ls.imports_changed(doc.path)    # at once: a pull of an importer must not answer the old text
            ls.schedule(doc.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: NxLanguageServer, params: lsp.DidSaveTextDocumentParams):
        for doc in ls.docs.values():        # a saved file may be imported by any open document
            doc.deps += 1
            ls.schedule(doc.uri, refresh=True)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: NxLanguageServer, params: lsp.DidCloseTextDocumentParams):
        doc = ls.docs.pop(params.text_document.uri, None)
        ls._running.pop(params.text_document.uri, None)
        if doc is not None:
            doc.closed = True
        timer = ls._timers.pop(params.text_document.uri, None)
        if timer is not None:
            timer.cancel()
        if not ls.pulls():
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                              diagnostics=[]))
        if doc is not None:                 # its importers read its file again now
            ls.imports_changed(doc.path)
            for other in ls.docs.values():
                if other.state is not None and other.state.deps != other.deps:
                    ls.schedule(other.uri, 0, refresh=True)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: NxLanguageServer, params: lsp.DefinitionParams):
        _, gi, occ = await ls.occurrence(params)
        if occ is None or occ.target is None:
            return None
        if occ.kind == "import":
            return lsp.Location(uri=ls.uri_for(occ.target.path), range=F.range0())
        d = gi.definition(occ.target)
        return ls.location(gi, occ.target, len(d.name) if d is not None else occ.length)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: NxLanguageServer, params: lsp.HoverParams):
        _, gi, occ = await ls.occurrence(params, quick=True)
        if occ is None:
            return None
        text = F.hover_text(gi, occ)
        if not text:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                         range=F.range_of(gi.modules[occ.loc.path].text, occ.loc, occ.length))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", '"']))
    async def completion(ls: NxLanguageServer, params: lsp.CompletionParams):
        uri = params.text_document.uri
        doc = ls.docs.get(uri)
        state = doc.good or doc.state if doc is not None else None
        if state is None:                   # nothing analysed yet: wait for it
            _, gi = await ls.fresh(uri)
            text = None
        else:
            gi, text = state.gi, ls.text(doc)
        path = ls.doc_path(uri)
        if path not in gi.modules:
            return lsp.CompletionList(is_incomplete=False, items=[])
        line, col = F.from_lsp(text if text is not None else gi.modules[path].text, params.position)
        return lsp.CompletionList(is_incomplete=False,
                                  items=F.completions(gi, path, line, col, ls.include, text))

    @server.feature(lsp.TEXT_DOCUMENT_DIAGNOSTIC,
                    lsp.DiagnosticOptions(identifier="nxc", inter_file_dependencies=True,
                                          workspace_diagnostics=False))
    async def pull_diagnostics(ls: NxLanguageServer, params: lsp.DocumentDiagnosticParams):
        # LSP 3.17 pull: the diagnostics of the document's current text, the
        # very list that was (or is about to be) published for it. A state
        # re-checked since the client's previousResultId (an edit, or an
        # import's change or save) gets a new id, so "unchanged" is only
        # answered for the same state.
        uri = params.text_document.uri
        doc, gi = await ls.fresh(uri)
        state = doc.state if doc is not None else None
        if state is not None and doc.current() and state.gi is gi:
            if params.previous_result_id == state.result_id:
                return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=state.result_id)
            return lsp.RelatedFullDocumentDiagnosticReport(items=state.diagnostics, result_id=state.result_id)
        path = ls.doc_path(uri)             # not open (or superseded meanwhile): computed now, no id
        uris = ls.uris()
        items = await ls.run(F.diagnostics_for, gi, path, lambda p: uris.get(p) or from_fs_path(p) or p)
        return lsp.RelatedFullDocumentDiagnosticReport(items=items)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(ls: NxLanguageServer, params: lsp.DocumentSymbolParams):
        _, gi = await ls.fresh(params.text_document.uri)
        return F.document_symbols(gi, ls.doc_path(params.text_document.uri))

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: NxLanguageServer, params: lsp.ReferenceParams):
        _, gi, occ = await ls.occurrence(params)
        if occ is None or occ.target is None or occ.kind == "import":
            return []
        found = await ls.uses(gi, occ.target, include_definition=params.context.include_declaration)
        return [ls.location(None, loc, length) for loc, length in found]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    async def prepare_rename(ls: NxLanguageServer, params: lsp.PrepareRenameParams):
        path, gi, occ = await ls.occurrence(params)
        d = lsp_rename.renamable(gi, occ, ls.roots())
        return lsp.PrepareRenamePlaceholder(range=F.range_of(gi.modules[path].text, occ.loc, occ.length),
                                            placeholder=d.name)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    async def rename(ls: NxLanguageServer, params: lsp.RenameParams):
        path, gi, occ = await ls.occurrence(params)
        d = lsp_rename.renamable(gi, occ, ls.roots())
        new = params.new_name
        lsp_rename.valid_name(new)
        if new == d.name:
            return lsp.WorkspaceEdit(changes={})
        places = await ls.uses(gi, d.loc, include_definition=True)
        overlay = ls.overlay()
        await ls.run(lsp_rename.check_safe, ls.analyzer, overlay, d, places, new)
        changes: dict[str, list[lsp.TextEdit]] = {}
        for loc, length in places:
            text = read_text(loc.path, overlay) or ""
            changes.setdefault(ls.uri_for(loc.path), []).append(
                lsp.TextEdit(range=F.range_of(text, loc, length), new_text=new))
        return lsp.WorkspaceEdit(changes=changes)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    async def document_highlight(ls: NxLanguageServer, params: lsp.DocumentHighlightParams):
        path, gi, occ = await ls.occurrence(params)
        if occ is None or occ.target is None or occ.kind == "import":
            return None
        return F.highlights(gi, path, occ)

    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    async def folding_range(ls: NxLanguageServer, params: lsp.FoldingRangeParams):
        _, gi = await ls.fresh(params.text_document.uri)
        return F.folding_ranges(gi, ls.doc_path(params.text_document.uri))

    @server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP,
                    lsp.SignatureHelpOptions(trigger_characters=["(", ","]))
    async def signature_help(ls: NxLanguageServer, params: lsp.SignatureHelpParams):
        uri = params.text_document.uri
        doc = ls.docs.get(uri)
        state = (doc.good or doc.state) if doc is not None else None
        if state is None:
            _, gi = await ls.fresh(uri)
            text = gi.modules[ls.doc_path(uri)].text if ls.doc_path(uri) in gi.modules else ""
        else:                   # while typing: the call from the text now, the names from the last analysis
            gi, text = state.gi, ls.text(doc)
        line, col = F.from_lsp(text, params.position)
        return F.signature_help(gi, text, line, col)

    @server.feature(lsp.WORKSPACE_SYMBOL)
    async def workspace_symbol(ls: NxLanguageServer, params: lsp.WorkspaceSymbolParams):
        overlay, out = ls.overlay(), []
        for path in ls.workspace_files():
            text = read_text(path, overlay)
            if text is not None and params.query.lower() in text.lower():
                out += await ls.run(F.top_level_symbols, path, text, params.query, ls.uri_for(path))
        return out

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
                    lsp.SemanticTokensLegend(token_types=F.TOKEN_TYPES, token_modifiers=F.TOKEN_MODIFIERS))
    async def semantic_tokens(ls: NxLanguageServer, params: lsp.SemanticTokensParams):
        _, gi = await ls.fresh(params.text_document.uri)
        return lsp.SemanticTokens(data=F.semantic_tokens(gi, ls.doc_path(params.text_document.uri),
                                                         os.path.realpath(bundled_dir()) + os.sep))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    async def code_action(ls: NxLanguageServer, params: lsp.CodeActionParams):
        uri = params.text_document.uri
        path = ls.doc_path(uri)
        text = ls.text_at(uri) or ""
        folders = [os.path.dirname(path), *search_path(ls.include)]
        overlay = ls.overlay()
        actions = F.did_you_mean_fixes(params.context.diagnostics)
        actions += await ls.run(F.import_fixes, path, text, params.context.diagnostics, folders,
                                lambda p: read_text(p, overlay))
        for a in actions:                   # the edit is to this document, under its URI
            a.edit = lsp.WorkspaceEdit(changes={uri: a.edit.changes[""]})
        return actions

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    async def inlay_hint(ls: NxLanguageServer, params: lsp.InlayHintParams):
        _, gi = await ls.fresh(params.text_document.uri)
        return F.inlay_hints(gi, ls.doc_path(params.text_document.uri),
                             params.range.start.line + 1, params.range.end.line + 1)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: NxLanguageServer, params: lsp.DocumentFormattingParams):
        uri = params.text_document.uri
        text = ls.text_at(uri)
        return None if text is None else F.format_edits(ls.doc_path(uri), text)       # neither open nor on disk

    return server



def serve(include: list[str] | None = None) -> int:
    """Run the server on stdin/stdout until the client says exit; 1 when
    it said exit without a shutdown first (LSP)."""
    logging.basicConfig(level=logging.WARNING, format="nxc lsp: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_QuietRefusals())
    server = create_server(include)
    server.start_io()
    server.pool.shutdown(wait=False, cancel_futures=True)
    return server.exit_code
