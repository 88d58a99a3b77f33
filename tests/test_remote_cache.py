"""issue 32: a cache shared between machines (nxc/remote/, docs/runner.md).

Against real servers the tests start themselves (tests/remote_servers.py:
nginx with WebDAV, redis-server): two runs with separate local caches
sharing one server (the second builds nothing); planted, moved, truncated
and wrongly signed entries rejected (a failing gate still fails); the
server stopped in the middle of a run; read-only mode writes nothing; a
server that is down, silent, full or answers garbage: one warning, a
correct run.
"""
from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from nxc import cache
from nxc.cli import build_parser
from nxc.gates import nochange
from nxc.gates.collect import collect, group_units
from nxc.gates.command import options_from_args
from nxc.remote import trust
from nxc.remote.shared import Shared, kind_of
from nxc.remote.store import store_for

sys.path.insert(0, os.path.dirname(__file__))
import remote_servers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = b"k" * 8 + os.urandom(16).hex().encode()

LIB = "func twice(x: i64) -> i64 {\n    return x * 2\n}\n"
PASS = 'import "lib.nx"\n\nfunc main() -> i64 {\n    if twice(21) != 42 { return 1 }\n    return 0\n}\n'
FAIL = 'import "lib.nx"\n\nfunc main() -> i64 {\n    if twice(2) != 5 { return 7 }\n    return 0\n}\n'
RIGHT = {"lib.nx": "PASS", "pass.nx": "PASS", "fail.nx": "FAIL"}
WARNING = "nxc: warning: remote cache"


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """The tree, its key, a local cache that ran it (through nginx) and what
    that run left on the server: {space: {name: bytes}}. Entries name the
    tree's real paths, so every test of this module uses this one tree."""
    base = tmp_path_factory.mktemp("remote")
    tree = base / "tree"
    tree.mkdir()
    for name, text in (("lib.nx", LIB), ("pass.nx", PASS), ("fail.nx", FAIL)):
        (tree / name).write_text(text)
    (base / "key").write_bytes(KEY + b"\n")
    s = remote_servers.start_nginx(str(base / "server"))
    try:
        status, first, err = nxc_test(tree, base / "local", s.url)
        assert status == 1 and WARNING not in err, err
        assert_right(first)
        assert any(r["recompiled"] for r in first.values())
        entries = {space: s.entries(space) for space in ("ac", "cas")}
    finally:
        s.stop()
    assert entries["ac"] and entries["cas"]
    return tree, base / "local", entries


@pytest.fixture
def tree(warm):
    return warm[0]


def _start(kind: str, tmp_path):
    return (remote_servers.start_nginx if kind == "nginx" else remote_servers.start_redis)(str(tmp_path / kind))


@pytest.fixture(params=["nginx", "redis"])
def server(request, tmp_path):
    """An empty server."""
    s = _start(request.param, tmp_path)
    yield s
    s.stop()


@pytest.fixture(params=["nginx", "redis"])
def seeded(request, tmp_path, warm):
    """A server holding what the warm run left (as another machine left it)."""
    s = _start(request.param, tmp_path)
    for space, entries in warm[2].items():
        for name, data in entries.items():
            s.put(space, name, data)
    yield s
    s.stop()


@pytest.fixture
def nginx(tmp_path):
    s = remote_servers.start_nginx(str(tmp_path / "server"))
    yield s
    s.stop()


def local_copy(warm, dest, without=("results",)):
    """A copy of the warm local cache without its results (or more parts):
    a run from it asks the remote for every result, and builds nothing."""
    import shutil
    shutil.copytree(warm[1], dest, symlinks=True)
    for part in without:
        shutil.rmtree(os.path.join(dest, part), ignore_errors=True)
    return dest


def _env(cache_dir) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NXC_REMOTE_CACHE")}
    env.pop(cache.RUN_ID_ENV, None)
    env["NXC_CACHE_DIR"] = str(cache_dir)
    env["NXC_NO_PCH"] = "1"         # the objects are the same bytes; a cold run here costs a precompile less
    return env


def nxc_test(tree, cache_dir, url, *extra, key=True):
    """`nxc test --json` in `tree`: (exit status, {file: result}, stderr)."""
    argv = [sys.executable, "-m", "nxc", "test", "--json", "-j", "2", *extra]
    if url is not None:
        argv += ["--remote-cache", url]
    if key:
        argv += ["--remote-cache-key-file", str(tree.parent / "key")]
    p = subprocess.run(argv, cwd=tree, env=_env(cache_dir), capture_output=True, text=True, timeout=600)
    results = {}
    for line in p.stdout.splitlines():
        event = json.loads(line)
        if event["event"] == "result":
            results[event["id"]] = event
    return p.returncode, results, p.stderr


def assert_right(results):
    assert {k: r["status"] for k, r in results.items()} == RIGHT, results
    assert results["fail.nx"]["value"] == 7, results


# ------------------------------------------------------------------ sharing
def test_a_second_machine_builds_nothing(seeded, tree, tmp_path):
    # Another machine: an empty local cache, the same server.
    status, second, err = nxc_test(tree, tmp_path / "b", seeded.url)
    assert status == 1 and WARNING not in err, err
    assert_right(second)
    assert second["pass.nx"]["cached"] and second["lib.nx"]["cached"]     # results from the remote
    assert all(r["recompiled"] in ([], None) for r in second.values()), second   # the failing gate: objects too

    # A third, running every gate: every library comes from the remote, nothing is compiled or linked.
    status, third, err = nxc_test(tree, tmp_path / "c", seeded.url, "--rerun")
    assert status == 1 and WARNING not in err, err
    assert_right(third)
    assert all(r["recompiled"] == [] and r["relinked"] is False for r in third.values()), third


def test_nxc_run_takes_its_build_from_the_remote(seeded, tree, tmp_path):
    p = subprocess.run([sys.executable, "-m", "nxc", "run", "pass.nx", "-v", "--remote-cache", seeded.url,
                        "--remote-cache-key-file", str(tree.parent / "key")],
                       cwd=tree, env=_env(tmp_path / "a"), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "cached build" in p.stderr and WARNING not in p.stderr, p.stderr


def test_the_pytest_plugin_shares_its_builds(nginx, tree, tmp_path, warm):
    env = _env(tmp_path / "a")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tree / "pass.nx"),
                        str(tree / "lib.nx"), "--nx-remote-cache", nginx.url,
                        "--nx-remote-cache-key-file", str(tree.parent / "key")],
                       cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert nginx.entries("cas")
    status, results, err = nxc_test(tree, tmp_path / "b", nginx.url, "--rerun", "pass.nx", "lib.nx")
    assert status == 0 and WARNING not in err, err
    assert all(r["recompiled"] == [] for r in results.values()), results


# ------------------------------------------------------------------ what is trusted
def _unit_result_rel(tree, name: str, monkeypatch, tmp_path) -> str:
    """The local entry under which a pass of `name` would be recorded
    (results/u-KEY): what the no-change path asks the cache for."""
    asked = []

    class Recorder:
        def fetch(self, rel, path):
            asked.append(rel)
            return False

        def store_sealed(self, rel, name, payload):
            pass

        def store_file(self, rel, path):
            pass

    monkeypatch.chdir(tree)
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "probe"))
    cache.use_remote(Recorder())
    try:
        options = options_from_args(build_parser().parse_args(["test", name]))
        nochange.split_cached(group_units(collect([name], options.backends, None)), options)
    finally:
        cache.use_remote(None)
    found = [rel for rel in asked if rel.startswith("results/u-")]
    assert len(found) == 1, asked
    return found[0]


def _json_entry(rel: str, payload: dict) -> bytes:
    return json.dumps({"kind": "sealed", "name": rel}).encode() + b"\n" + json.dumps(payload).encode()


PASS_CLAIM = {"inputs": {"cwd": None, "files": []}, "kind": "gate", "warnings": [], "cwd": None}


@pytest.mark.parametrize("planted", ["other-key", "moved", "unsigned", "garbage"])
def test_a_planted_pass_is_no_pass(seeded, warm, tree, tmp_path, monkeypatch, planted):
    """A pass claimed for the failing gate, in every form but one signed under
    the shared key for that entry: the gate still runs, and fails."""
    server = seeded
    fail_rel = _unit_result_rel(tree, "fail.nx", monkeypatch, tmp_path)
    fail_name = Shared(store_for(server.url, 5.0), KEY).name(fail_rel)
    if planted == "other-key":          # well formed, signed, but not with the shared key
        data = trust.sign(os.urandom(32), fail_name, _json_entry(fail_rel, PASS_CLAIM))
    elif planted == "moved":            # pass.nx's own entry, signed right, copied to fail.nx's name
        pass_rel = _unit_result_rel(tree, "pass.nx", monkeypatch, tmp_path)
        data = server.entries("ac")[Shared(store_for(server.url, 5.0), KEY).name(pass_rel)]
        assert trust.verify(KEY, Shared(store_for(server.url, 5.0), KEY).name(pass_rel), data) is not None
    elif planted == "unsigned":
        data = _json_entry(fail_rel, PASS_CLAIM)
    else:                               # garbage JSON
        data = b'{"kind": "sealed", "name": "' + fail_rel.encode() + b'", "inputs": {'
    server.put("ac", fail_name, data)
    status, second, err = nxc_test(tree, local_copy(warm, tmp_path / "b"), server.url)
    assert status == 1
    assert_right(second)
    assert err.count(WARNING) == 1 and "rejected" in err, err


@pytest.mark.parametrize("kind,damage", [("nginx", "swapped"), ("redis", "truncated")])
def test_damaged_content_is_rejected(warm, tree, tmp_path, kind, damage):
    """Every blob on the server replaced by another one's bytes, or cut in
    half: the objects and libraries are built here, the results are right."""
    server = _start(kind, tmp_path)
    request_stop = server.stop
    blobs = warm[2]["cas"]
    for name, data in warm[2]["ac"].items():
        server.put("ac", name, data)
    names = sorted(blobs)
    assert len(names) > 1
    for n, name in enumerate(names):
        other = blobs[names[(n + 1) % len(names)]]
        server.put("cas", name, other if damage == "swapped" else blobs[name][:len(blobs[name]) // 2])
    try:
        status, again, err = nxc_test(tree, tmp_path / "b", server.url, "--rerun")
    finally:
        request_stop()
    assert_right(again)
    assert err.count(WARNING) == 1 and "rejected" in err, err
    assert any(r["recompiled"] for r in again.values())         # built here, not taken


def test_without_a_key_nothing_is_read_or_written(nginx, warm, tree, tmp_path):
    status, results, err = nxc_test(tree, local_copy(warm, tmp_path / "a"), nginx.url, key=False)
    assert_right(results)
    assert "not used: no shared key" in err and WARNING not in err, err
    assert nginx.count() == 0


def test_read_only_writes_nothing(server, tree, tmp_path):
    """A cold run (everything built) against an empty server leaves it empty."""
    status, results, err = nxc_test(tree, tmp_path / "a", server.url, "--remote-cache-readonly")
    assert_right(results)
    assert any(r["recompiled"] for r in results.values())
    assert server.count() == 0 and WARNING not in err, err


def test_read_only_reads(seeded, tree, tmp_path):
    before = seeded.entries("ac"), seeded.entries("cas")
    status, results, err = nxc_test(tree, tmp_path / "c", seeded.url, "--remote-cache-readonly", "--rerun")
    assert_right(results)
    assert WARNING not in err, err
    assert all(r["recompiled"] == [] and r["relinked"] is False for r in results.values()), results
    assert (seeded.entries("ac"), seeded.entries("cas")) == before


# ------------------------------------------------------------------ faults
def test_the_server_stopped_in_the_middle_of_a_run(server, tmp_path):
    tree = tmp_path / "gen"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_tree.py"), str(tree), "--modules", "4",
                    "--seed", "3"], check=True, capture_output=True)
    (tmp_path / "key").write_bytes(KEY)
    env = _env(tmp_path / "a")
    proc = subprocess.Popen([sys.executable, "-m", "nxc", "test", "--json", "-j", "1", ".",
                             "--remote-cache", server.url, "--remote-cache-key-file", str(tmp_path / "key")],
                            cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 300
    while server.count() == 0 and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    server.stop()                       # killed, mid-run: the run has only begun to upload
    out, err = proc.communicate(timeout=600)
    results = [json.loads(line) for line in out.splitlines()]
    gates = [r for r in results if r["event"] == "result"]
    assert proc.returncode == 0, err
    assert len(gates) == 4 and all(r["status"] == "PASS" for r in gates), gates
    assert err.count(WARNING) == 1, err


def _closed_port() -> int:
    return remote_servers.free_port()       # nothing listens there once the probe socket is closed


def test_a_server_that_is_down_gives_one_warning(warm, tree, tmp_path):
    status, results, err = nxc_test(tree, local_copy(warm, tmp_path / "a"), f"http://127.0.0.1:{_closed_port()}/c")
    assert_right(results)
    assert err.count(WARNING) == 1 and "refused" in err, err


def test_a_server_that_never_answers_gives_one_warning(warm, tree, tmp_path):
    """It accepts connections and says nothing: the first request times out,
    and the run goes on without it (the time it costs: bench/remote_cache_bench.py)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    try:
        status, results, err = nxc_test(tree, local_copy(warm, tmp_path / "a"),
                                        f"http://127.0.0.1:{silent.getsockname()[1]}/c",
                                        "--remote-cache-timeout", "0.5")
    finally:
        silent.close()
    assert_right(results)
    assert err.count(WARNING) == 1 and "timed out" in err, err


class _Fake(http.server.BaseHTTPRequestHandler):
    """A server that is full (507 to every PUT) or answers garbage (200 and
    noise to every GET)."""
    mode = "full"

    def do_GET(self):
        if self.mode == "garbage":
            self._answer(200, b"<html>hello</html>")
        else:
            self._answer(404, b"")

    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(507 if self.mode == "full" else 201, b"")

    def _answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("mode,said", [("full", "the server is full"), ("garbage", "rejected")])
def test_a_full_or_garbled_server_gives_one_warning(warm, tree, tmp_path, mode, said):
    handler = type("Handler", (_Fake,), {"mode": mode})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        status, results, err = nxc_test(tree, local_copy(warm, tmp_path / "a"),
                                        f"http://127.0.0.1:{httpd.server_port}/c")
    finally:
        httpd.shutdown()
    assert_right(results)
    assert err.count(WARNING) == 1 and said in err, err


# ------------------------------------------------------------------ settings, the pieces
@pytest.mark.parametrize("argv,said", [
    (["--remote-cache", "ftp://host/x"], "no http://, https:// or redis:// URL"),
    (["--remote-cache", "http://127.0.0.1:1/c", "--remote-cache-key-file", "/nonexistent/key"], "cannot read"),
])
def test_settings_that_cannot_be_used_are_a_usage_error(tree, tmp_path, argv, said):
    p = subprocess.run([sys.executable, "-m", "nxc", "test", ".", *argv], cwd=tree, env=_env(tmp_path / "a"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_short_key_is_refused(tree, tmp_path):
    (tmp_path / "short").write_bytes(b"secret\n")
    p = subprocess.run([sys.executable, "-m", "nxc", "run", "pass.nx", "--remote-cache", "http://127.0.0.1:1/c",
                        "--remote-cache-key-file", str(tmp_path / "short")],
                       cwd=tree, env=_env(tmp_path / "a"), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "at least 16" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_signatures():
    body = b'{"kind": "json"}\npayload'
    data = trust.sign(KEY, "n1", body)
    assert trust.verify(KEY, "n1", data) == body
    assert trust.verify(KEY, "n2", data) is None                   # moved to another name
    assert trust.verify(b"x" * 32, "n1", data) is None             # another key
    assert trust.verify(KEY, "n1", data[:-1]) is None              # truncated
    assert trust.verify(KEY, "n1", data[:-1] + b"X") is None       # changed
    assert trust.verify(KEY, "n1", b"") is None


def test_what_is_shared():
    assert kind_of("results/u-0123") == "sealed"
    assert kind_of("c/obj/0123abc.o") == kind_of("c/_nx_0123.so") == "file"
    assert kind_of("c/obj/0123abc.sites") == kind_of("c/records/g-0123.json") == "sealed"
    for local in ("index/modules.json", "secret-key", "parse/x.pickle", "state/lastfailed-1.json",
                  "c/obj/pch-1/nx_runtime.h.gch", "c/toolchain/x.json", "parse/grammar-0123.pickle",
                  "results/.tmp-1", "c/obj/x.o.sum"):
        assert kind_of(local) is None, local


@pytest.mark.parametrize("where", ["flag", "environment"])
def test_a_remote_timeout_past_the_bound_is_refused(tree, tmp_path, where):
    # Before: 1e20 s overflowed the socket's time_t (an OverflowError the
    # remote swallowed as a fault: the cache silently not used).
    env = _env(tmp_path / "a")
    env["NXC_REMOTE_CACHE_KEY"] = "0123456789abcdef-shared"
    argv = ["--remote-cache", "http://127.0.0.1:1/c"]
    if where == "flag":
        argv += ["--remote-cache-timeout", "1e20"]
    else:
        env["NXC_REMOTE_CACHE_TIMEOUT"] = "1e20"
    p = subprocess.run([sys.executable, "-m", "nxc", "test", ".", *argv], cwd=tree, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "1,000,000" in p.stderr and "Traceback" not in p.stderr, p.stderr
