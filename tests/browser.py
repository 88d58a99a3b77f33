"""Headless Chromium for the page tests, driven over the DevTools protocol.

Why the protocol and not `--window-size=390,800 --dump-dom`: a headless
window is never narrower than 500 px, so a phone's width needs the
protocol's device-metrics override (which also applies the page's viewport
meta, as a phone does). `--remote-debugging-pipe` talks JSON over two file
descriptors (3: commands in, 4: answers out, each message ended by a NUL):
no port, no websocket library.

`chromium_or_skip()` says whether the tests can run: Debian's `chromium`
(`apt-get install -y chromium`; .ci/run installs it). Missing, the browser
tests are skipped, saying why -- except under CI (CI=true), where a
missing browser fails them.
"""
from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import time

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--mute-audio"]


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_or_skip() -> str:
    exe = find_chromium()
    if exe is not None:
        return exe
    why = "chromium is not installed (Debian: apt-get install -y chromium; .ci/run installs it)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("CI: " + why, pytrace=False)
    pytest.skip(why)


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium and one page (tab) in it."""

    def __init__(self, exe: str, profile, timeout: float = 60.0):
        self.timeout = timeout
        # Chromium reads commands on fd 3 and writes on fd 4. posix_spawn
        # puts the pipe ends there without running Python in the child (a
        # preexec_fn is unsafe with threads); each end is first moved to
        # fd >= 10 so no dup2 onto 3 or 4 can overwrite the other one.
        def high(fd: int) -> int:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            return moved
        to_chrome_r, self._to_chrome = (high(fd) for fd in os.pipe())
        self._from_chrome, from_chrome_w = (high(fd) for fd in os.pipe())
        self._log = open(str(profile) + ".log", "wb")
        devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.pid = os.posix_spawn(
                exe, [exe, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
                os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                                          (os.POSIX_SPAWN_DUP2, self._log.fileno(), 1),
                                          (os.POSIX_SPAWN_DUP2, self._log.fileno(), 2),
                                          (os.POSIX_SPAWN_DUP2, to_chrome_r, 3),
                                          (os.POSIX_SPAWN_DUP2, from_chrome_w, 4)])
        finally:
            for fd in (devnull, to_chrome_r, from_chrome_w):
                os.close(fd)
        self.returncode = None
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.session = None
        try:
            target = self.send("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.send("Page.enable")
            self.send("Runtime.enable")
        except Exception:
            self.close()
            raise

    # ---- wire
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise BrowserError(f"no answer from chromium in {self.timeout} s; log: {self._log.name}")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise BrowserError(f"chromium exited ({self.poll()}); log: {self._log.name}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if self.session is not None:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, m in enumerate(self.events):
                if m.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    # ---- page
    def viewport(self, width: int, height: int, mobile: bool = True, dark: bool | None = None) -> None:
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=mobile)
        if dark is not None:
            self.send("Emulation.setEmulatedMedia", features=[
                {"name": "prefers-color-scheme", "value": "dark" if dark else "light"}])

    def open(self, url: str) -> None:
        self.events = [m for m in self.events if m.get("method") != "Page.loadEventFired"]
        self.send("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-able)."""
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def type_text(self, text: str) -> None:
        """Typed into the focused element, as a keyboard does (input events)."""
        for ch in text:
            self.send("Input.insertText", text=ch)

    def screenshot(self, path) -> bytes:
        import base64
        data = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data

    def poll(self) -> int | None:
        """Its exit status once it exited, else None."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def _wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.poll() is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def close(self) -> None:
        try:
            if self.poll() is None:
                try:
                    self.session = None
                    os.write(self._to_chrome, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                except OSError:
                    pass
                self._wait(10)
        finally:
            if self.poll() is None:
                os.kill(self.pid, signal.SIGKILL)
                self._wait(10)
            for fd in (self._to_chrome, self._from_chrome):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
