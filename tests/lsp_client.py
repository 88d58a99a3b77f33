"""A minimal LSP client: the server as a child process, JSON-RPC over its stdio.

Requests wait for their response; notifications from the server (diagnostics)
are queued so a test can wait for the next one for a given document.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path


class LspError(RuntimeError):
    """An error response: `code` and `message` as the server sent them."""

    def __init__(self, method: str, error: dict):
        super().__init__(f"{method}: {error}")
        self.code, self.message = error.get("code"), error.get("message", "")


class LspClient:
    def __init__(self, args: list[str], cwd: str | None = None, timeout: float = 20.0):
        self.timeout = timeout
        self.proc = subprocess.Popen([sys.executable, "-m", "nxc", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                     env=dict(os.environ))
        self._next_id = 0
        self._responses: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self.notifications: queue.Queue = queue.Queue()
        self.server_requests: queue.Queue = queue.Queue()     # requests the server sent (answered null)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        # The server's log, read as it comes, as an editor reads it: left
        # unread, a full pipe (64 KiB) would stop the server at its next line.
        self.log: list[bytes] = []
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()

    # ---- wire ----
    def _send(self, *messages: dict) -> None:
        """The messages in one write: the server finds them together in its input."""
        data = b""
        for message in messages:
            body = json.dumps(message).encode("utf-8")
            data += b"Content-Length: %d\r\n\r\n" % len(body) + body
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _read_loop(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            message = json.loads(out.read(length))
            if "id" in message and ("result" in message or "error" in message):
                with self._lock:
                    q = self._responses.get(message["id"])
                if q is not None:
                    q.put(message)
            elif "id" in message:                 # a request from the server: answer it
                self.server_requests.put(message)
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            else:
                self.notifications.put(message)

    # ---- API ----
    def request(self, method: str, params: dict | None = None):
        return self.wait(method, *self.send_request(method, params))

    def send_request(self, method: str, params: dict | None = None, cancel: bool = False) -> tuple[int, queue.Queue]:
        """Send a request without waiting: its id and the queue its answer comes to (for `wait`).
        cancel: its $/cancelRequest in the same write, so that the cancel reaches the server
        while the request is surely still under way (sent apart, a fast request could end first)."""
        with self._lock:
            self._next_id += 1
            rid = self._next_id
            q = self._responses[rid] = queue.Queue()
        request = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        if cancel:
            self._send(request, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}})
        else:
            self._send(request)
        return rid, q

    def wait(self, method: str, rid: int, q: queue.Queue):
        try:
            message = q.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"no answer to {method} in {self.timeout} s; server stderr: "
                               + self._stderr_so_far()) from None
        if "error" in message:
            raise LspError(method, message["error"])
        return message["result"]

    def notify(self, method: str, params: dict) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics(self, uri: str) -> list[dict]:
        """The next diagnostics the server publishes for `uri`."""
        return self.published(uri)["diagnostics"]

    def published(self, uri: str) -> dict:
        """The next publishDiagnostics params for `uri` (uri, version, diagnostics)."""
        while True:
            try:
                message = self.notifications.get(timeout=self.timeout)
            except queue.Empty:
                raise TimeoutError(f"no diagnostics for {uri}; server stderr: " + self._stderr_so_far()) from None
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                return message["params"]

    def initialize(self, root: Path, capabilities: dict | None = None) -> dict:
        result = self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                             "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                                             "capabilities": capabilities or {}})
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str | None = None, uri: str | None = None) -> str:
        """Open `path` (under `uri` if given: a symlinked path, untitled:)."""
        uri = uri or path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "nx", "version": 1,
            "text": path.read_text(encoding="utf-8") if text is None else text}})
        return uri

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def change_range(self, uri: str, rng: dict, text: str, version: int) -> None:
        """An incremental change: `text` replaces the range `rng`."""
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"range": rng, "text": text}]})

    def close(self) -> int:
        try:
            self.request("shutdown")
            self.notify("exit", {})
            return self.proc.wait(timeout=self.timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def _stderr_so_far(self) -> str:
        return ("" if self.proc.poll() is not None else "(still running) ") + self.stderr_text()[-2000:]

    def stderr_text(self) -> str:
        """What the server logged so far."""
        return b"".join(self.log).decode(errors="replace")
