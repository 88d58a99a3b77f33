"""Real cache servers a test starts itself, on a loopback port, in a
temporary folder: nginx with its WebDAV module (the Bazel remote-cache
HTTP layout: PUT/GET of /cas/<sha256> and /ac/<key>) and redis-server.

Debian's packages (`.ci/run` installs them). Missing, a test that needs
one is skipped on a developer's machine and fails in CI (CI=true): there
the suite must not pass without having run them.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest


def need(program: str) -> str:
    found = shutil.which(program) or next((p for p in (f"/usr/sbin/{program}", f"/usr/bin/{program}")
                                           if os.access(p, os.X_OK)), None)
    if found is None:
        why = (f"{program} is not installed (Debian: apt-get install nginx-light redis-server; "
               f".ci/run installs them)")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why + ": in CI the remote cache tests must run", pytrace=False)
        pytest.skip(why)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, log: str, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            with open(log, errors="replace") as f:
                raise RuntimeError(f"the server exited ({proc.returncode}):\n{f.read()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"the server did not listen on port {port} in {seconds} s")


NGINX_CONF = """daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        root {prefix}/data;
        location / {{
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw;
        }}
    }}
}}
"""


class Server:
    """A running server; `entries(space)`: what it holds ({name: bytes}), read
    behind nxc's back (nginx: its folder; redis: KEYS and GET)."""

    def __init__(self, url: str, proc: subprocess.Popen, folder: str, data: str | None = None,
                 port: int | None = None):
        self.url, self.proc, self.folder, self.data, self.port = url, proc, folder, data, port

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def entries(self, space: str) -> dict[str, bytes]:
        if self.data is not None:
            folder = os.path.join(self.data, space)
            if not os.path.isdir(folder):
                return {}
            out = {}
            for name in os.listdir(folder):
                with open(os.path.join(folder, name), "rb") as f:
                    out[name] = f.read()
            return out
        prefix = f"nxc:{space}/".encode()
        return {k[len(prefix):].decode(): resp(self.port, b"GET", k) for k in resp(self.port, b"KEYS", prefix + b"*")}

    def put(self, space: str, name: str, data: bytes) -> None:
        if self.data is not None:
            os.makedirs(os.path.join(self.data, space), exist_ok=True)
            with open(os.path.join(self.data, space, name), "wb") as f:
                f.write(data)
        else:
            assert resp(self.port, b"SET", f"nxc:{space}/{name}".encode(), data) == b"OK"

    def count(self) -> int:
        return len(self.entries("ac")) + len(self.entries("cas"))


def resp(port: int, *args: bytes):
    """One redis command over a fresh connection; its reply (bulk strings, arrays, +OK)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
        f = s.makefile("rb")

        def reply():
            line = f.readline()[:-2]
            kind, rest = line[:1], line[1:]
            if kind == b"+":
                return rest
            if kind == b"$":
                n = int(rest)
                return None if n < 0 else f.read(n + 2)[:-2]
            if kind == b"*":
                return [reply() for _ in range(int(rest))]
            if kind == b":":
                return int(rest)
            raise AssertionError(line)
        return reply()


def start_nginx(folder: str) -> Server:
    nginx = need("nginx")
    prefix = os.path.join(folder, "nginx")
    data = os.path.join(prefix, "data")
    os.makedirs(data, exist_ok=True)
    port = free_port()
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(prefix=prefix, port=port))
    log = os.path.join(prefix, "stderr.log")
    with open(log, "wb") as out:
        proc = subprocess.Popen([nginx, "-p", prefix, "-c", conf, "-e", os.path.join(prefix, "error.log")],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wait_listening(port, proc, log)
    return Server(f"http://127.0.0.1:{port}/cache", proc, prefix, os.path.join(data, "cache"), port)


def start_redis(folder: str) -> Server:
    redis = need("redis-server")
    prefix = os.path.join(folder, "redis")
    os.makedirs(prefix, exist_ok=True)
    port = free_port()
    log = os.path.join(prefix, "stderr.log")
    with open(log, "wb") as out:
        proc = subprocess.Popen([redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no", "--dir", prefix],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wait_listening(port, proc, log)
    return Server(f"redis://127.0.0.1:{port}/0", proc, prefix, None, port)
