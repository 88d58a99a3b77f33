"""Where a shared cache's bytes live: two namespaces, `cas` (content, named
by its SHA-256) and `ac` (action entries, named by a key), on an HTTP server
or on redis.

HTTP follows Bazel's remote-cache layout: `GET`/`PUT` of `BASE/cas/<sha256>`
and `BASE/ac/<key>`, 404 for a miss. bazel-remote serves it (with
`--disable_http_ac_validation`: nxc's action entries are not Bazel's
ActionResult protobufs), and so does any WebDAV server (nginx with
`dav_methods PUT; create_full_put_path on;`). Redis keeps `PREFIX cas/<sha>`
and `PREFIX ac/<key>` as plain strings (GET, SET).

Every request is bounded: `timeout` seconds to connect, and `timeout` more
for the whole answer (a server that trickles its bytes is cut off, not
waited for byte by byte). Anything but a hit, a miss or a stored write (a
refused connection, a timeout, 507 Insufficient Storage, 413, a reply that
is no HTTP or RESP) raises RemoteError; the caller decides what that means
(nxc/remote/shared.py: one warning, and no remote for the rest of the run).
Connections are kept open between requests, one per process (a connection
inherited across fork() is never used: the parent's socket is the parent's).
"""
from __future__ import annotations

import base64
import http.client
import os
import socket
import time
import urllib.parse

MAX_ENTRY = 256 << 20          # bytes: larger answers are no cache entry of nxc's
_CHUNK = 1 << 16


class RemoteError(Exception):
    """The remote store failed (down, slow, full, or a garbled answer)."""


class Store:
    """get/put of bytes in namespace 'cas' or 'ac'."""
    url = ""

    def get(self, space: str, name: str) -> bytes | None:
        raise NotImplementedError

    def put(self, space: str, name: str, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def store_for(url: str, timeout: float) -> Store:
    """The store an URL names; ValueError for one nxc cannot use."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("http", "https"):
        return HttpStore(parts, timeout)
    if parts.scheme == "redis":
        return RedisStore(parts, timeout)
    raise ValueError(f"'{url}' is no http://, https:// or redis:// URL")


def _hostport(parts, default: int) -> tuple[str, int]:
    if not parts.hostname:
        raise ValueError(f"'{parts.geturl()}' names no host")
    try:
        return parts.hostname, parts.port or default
    except ValueError:
        raise ValueError(f"'{parts.geturl()}' has a bad port") from None


class _Deadline:
    """The time a request may still take."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise RemoteError("timed out")
        return left


class HttpStore(Store):
    def __init__(self, parts, timeout: float):
        self.url = urllib.parse.urlunsplit((parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""),
                                            parts.path, "", ""))
        self.https = parts.scheme == "https"
        self.host, self.port = _hostport(parts, 443 if self.https else 80)
        self.base = parts.path.rstrip("/")
        self.timeout = timeout
        self.headers = {}
        if parts.username is not None:      # http://user:password@host/: basic auth (a CI secret)
            cred = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self.headers["Authorization"] = "Basic " + base64.b64encode(cred.encode()).decode()
        self._conn = None
        self._pid = None

    def _connection(self):
        if self._conn is not None and self._pid == os.getpid():
            return self._conn, True
        self._conn, self._pid = None, os.getpid()        # a parent's connection: not ours to use
        if self.https:
            import ssl
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                               context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self._conn = conn
        return conn, False

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def _request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        for attempt in (0, 1):
            conn, reused = self._connection()
            deadline = _Deadline(2 * self.timeout)
            try:
                headers = dict(self.headers)
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                    headers["Content-Type"] = "application/octet-stream"
                conn.request(method, path, body=body, headers=headers)
                if conn.sock is not None:
                    conn.sock.settimeout(min(self.timeout, deadline.left()))
                resp = conn.getresponse()
                data = _read_body(resp, conn, deadline)
                if resp.will_close:
                    self.close()
                return resp.status, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.close()
                if reused and attempt == 0:
                    continue                # the server closed an idle kept-alive connection: once more
                raise RemoteError(_why(exc)) from None
            except (OSError, http.client.HTTPException, RemoteError) as exc:
                self.close()
                raise RemoteError(_why(exc)) from None
        raise RemoteError("no answer")      # not reached

    def get(self, space: str, name: str) -> bytes | None:
        status, data = self._request("GET", f"{self.base}/{space}/{name}", None)
        if status == 200:
            return data
        if status == 404:
            return None
        raise RemoteError(f"GET answered {status}")

    def put(self, space: str, name: str, data: bytes) -> None:
        status, _ = self._request("PUT", f"{self.base}/{space}/{name}", data)
        if status not in (200, 201, 204):
            raise RemoteError(f"PUT answered {status}" + (" (the server is full)" if status in (413, 507) else ""))


def _read_body(resp, conn, deadline: _Deadline) -> bytes:
    length = resp.getheader("Content-Length")
    if length is not None:
        try:
            if int(length) > MAX_ENTRY:
                raise RemoteError(f"an answer of {length} bytes")
        except ValueError:
            raise RemoteError("a bad Content-Length") from None
    chunks, size = [], 0
    while True:
        if conn.sock is not None:
            conn.sock.settimeout(deadline.left())
        chunk = resp.read(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ENTRY:
            raise RemoteError("an answer too large")
        chunks.append(chunk)


def _why(exc: BaseException) -> str:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


class RedisStore(Store):
    """GET and SET over RESP (the redis protocol), with the standard library:
    redis://[:password@]host[:port][/db][?prefix=P]."""

    def __init__(self, parts, timeout: float):
        self.host, self.port = _hostport(parts, 6379)
        self.url = f"redis://{self.host}:{self.port}{parts.path}"
        self.password = urllib.parse.unquote(parts.password) if parts.password else None
        self.user = urllib.parse.unquote(parts.username) if parts.username else None
        db = parts.path.strip("/")
        if db and not db.isdigit():
            raise ValueError(f"'{parts.geturl()}': the path must be a database number")
        self.db = db
        query = urllib.parse.parse_qs(parts.query)
        self.prefix = query.get("prefix", ["nxc:"])[0].encode()
        self.timeout = timeout
        self._sock = None
        self._buf = b""
        self._pid = None

    def close(self) -> None:
        if self._sock is not None and self._pid == os.getpid():
            self._sock.close()
        self._sock, self._buf = None, b""

    def _connect(self, deadline: _Deadline):
        if self._sock is not None and self._pid == os.getpid():
            return
        self._sock, self._buf, self._pid = None, b"", os.getpid()
        sock = socket.create_connection((self.host, self.port), timeout=min(self.timeout, deadline.left()))
        self._sock = sock
        if self.password is not None:
            self._call(deadline, b"AUTH", *([self.user.encode()] if self.user else []), self.password.encode())
        if self.db:
            self._call(deadline, b"SELECT", self.db.encode())

    def _call(self, deadline: _Deadline, *args: bytes):
        out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
        self._sock.settimeout(deadline.left())
        self._sock.sendall(out)
        reply = self._reply(deadline)
        if isinstance(reply, _Error):
            raise RemoteError(f"redis: {reply.text}")
        return reply

    def _line(self, deadline: _Deadline) -> bytes:
        while b"\r\n" not in self._buf:
            self._fill(deadline)
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _fill(self, deadline: _Deadline) -> None:
        self._sock.settimeout(deadline.left())
        chunk = self._sock.recv(_CHUNK)
        if not chunk:
            raise RemoteError("redis closed the connection")
        self._buf += chunk
        if len(self._buf) > MAX_ENTRY + _CHUNK:
            raise RemoteError("an answer too large")

    def _reply(self, deadline: _Deadline):
        line = self._line(deadline)
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return _Error(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            if n > MAX_ENTRY:
                raise RemoteError(f"an answer of {n} bytes")
            while len(self._buf) < n + 2:
                self._fill(deadline)
            data, self._buf = self._buf[:n], self._buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply(deadline) for _ in range(n)]
        raise RemoteError("an answer that is no redis reply")

    def _command(self, *args: bytes):
        deadline = _Deadline(2 * self.timeout)
        try:
            self._connect(deadline)
            return self._call(deadline, *args)
        except (OSError, ValueError, RemoteError) as exc:
            self.close()
            raise RemoteError(_why(exc)) from None

    def get(self, space: str, name: str) -> bytes | None:
        reply = self._command(b"GET", self.prefix + f"{space}/{name}".encode())
        if reply is not None and not isinstance(reply, bytes):
            raise RemoteError("GET answered no string")
        return reply

    def put(self, space: str, name: str, data: bytes) -> None:
        if self._command(b"SET", self.prefix + f"{space}/{name}".encode(), data) != b"OK":
            raise RemoteError("SET did not answer OK")


class _Error:
    def __init__(self, text: str):
        self.text = text
