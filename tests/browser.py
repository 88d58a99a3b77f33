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
import subprocess
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
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds_3_and_4():              # in the child: the pipe ends Chromium expects
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._log = open(os.path.join(str(profile) + ".log"), "wb")
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
            pass_fds=(3, 4), preexec_fn=fds_3_and_4)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
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
                raise BrowserError(f"chromium exited ({self.proc.poll()}); log: {self._log.name}")
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

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.session = None
                    os.write(self._to_chrome, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                    self.proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for fd in (self._to_chrome, self._from_chrome):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
