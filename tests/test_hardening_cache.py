"""issue 15 (5): a cache you can trust.

Every entry is verified before it is loaded: a planted, swapped or truncated
entry is rebuilt, never run; the folder must be private to its user; a
folder that cannot be used degrades to a temporary one with one warning.
"""
from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import sys

import pytest

from nxc import cache
from nxc.backend.c import build as build_mod
from nxc.backend.c import objects as objects_mod
from nxc.backend.c.emit import emit_c
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute
from nxc.syntax import loader
from load_bounds import GATE_BOUND

GATE = "func main() -> i64 {{\n    return {value}\n}}\n"


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("NXC_CACHE_DIR", str(folder))
    loader._PARSED.clear()
    build_mod._loaded.clear()
    build_mod._abi_ffis.clear()
    yield folder
    loader._PARSED.clear()


def _program(tmp_path, name, value):
    path = tmp_path / name
    path.write_text(GATE.format(value=value))
    return check_file(str(path), diags=Diagnostics())


def _run_c(program):
    build_mod._loaded.clear()
    [outcome] = execute(program, "c", timeout=GATE_BOUND)
    return outcome


def test_another_modules_so_copied_over_an_entry_is_rebuilt(tmp_path, own_cache):
    # Before: "FAIL main returned 42 ... return 0".
    wrong, right = _program(tmp_path, "wrong.nx", 42), _program(tmp_path, "right.nx", 0)
    wrong_so = build_mod.build(emit_c(wrong), abi=True).path
    right_so = build_mod.build(emit_c(right), abi=True).path
    shutil.copyfile(wrong_so, right_so)
    outcome = _run_c(right)
    assert (outcome.status, outcome.build_cached) == ("PASS", False)
    assert _run_c(right).build_cached            # and the rebuilt entry is trusted again


def test_truncated_so_is_rebuilt(tmp_path, own_cache):
    program = _program(tmp_path, "t.nx", 0)
    so = build_mod.build(emit_c(program), abi=True).path
    with open(so, "r+b") as f:
        f.truncate(100)
    outcome = _run_c(program)
    assert (outcome.status, outcome.build_cached) == ("PASS", False)


def test_truncated_ffi_module_is_regenerated(tmp_path, own_cache):
    program = _program(tmp_path, "t.nx", 0)
    assert _run_c(program).status == "PASS"
    [ffi_py] = [own_cache / "c" / n for n in os.listdir(own_cache / "c") if n.startswith("_nx_ffi_") and n.endswith(".py")]
    ffi_py.write_text("ffi = None  # truncated")
    build_mod._abi_ffis.clear()
    assert _run_c(program).status == "PASS"


def test_planted_parse_pickle_is_never_unpickled(tmp_path, own_cache):
    # Before: a pickle under a key anyone can compute ran code at `nxc check`.
    path = tmp_path / "t.nx"
    path.write_text(GATE.format(value=0))
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    key = loader._parse_key(loader.read_source(str(path), Diagnostics()))
    entry = own_cache / "parse" / (key + ".pickle")
    entry.parent.mkdir(parents=True, exist_ok=True)
    cache.cache_dir()                                  # the folder passed its checks
    entry.write_bytes(pickle.dumps(Evil()))
    program = check_file(str(path), diags=Diagnostics())
    assert not marker.exists()
    assert [f.name for f in program.graph.root.items] == ["main"]


def test_planted_grammar_pickle_is_never_unpickled(tmp_path, own_cache):
    from nxc.syntax import parse
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    parse._grammar_tables(parse.StatementEnds())
    [entry] = [own_cache / "parse" / n for n in os.listdir(own_cache / "parse") if n.startswith("grammar-")]
    entry.write_bytes(pickle.dumps(Evil()))
    terminals, _ = parse._grammar_tables(parse.StatementEnds())
    assert not marker.exists() and terminals


def test_another_modules_parse_entry_in_place_of_an_entry_is_parsed_again(tmp_path, own_cache):
    # Before: nxc ran the other module.
    a, b = tmp_path / "a.nx", tmp_path / "b.nx"
    a.write_text("func other() -> i64 { return 1 }\nfunc main() -> i64 { return 42 }\n")
    b.write_text(GATE.format(value=0))
    for p in (a, b):
        check_file(str(p), diags=Diagnostics())
    key_of = {p: loader._parse_key(loader.read_source(str(p), Diagnostics())) for p in (a, b)}
    folder = own_cache / "parse"
    shutil.copyfile(folder / (key_of[a] + ".pickle"), folder / (key_of[b] + ".pickle"))
    loader._PARSED.clear()
    program = check_file(str(b), diags=Diagnostics())
    assert [f.name for f in program.graph.root.items] == ["main"]
    assert execute(program, "py", timeout=GATE_BOUND)[0].status == "PASS"


def test_cache_folder_is_created_private(own_cache):
    cache.seal("entry", b"")                 # makes the folder and its key
    assert stat.S_IMODE(os.stat(own_cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(own_cache / "secret-key").st_mode) & 0o077 == 0


@pytest.mark.parametrize("why", ["group-writable", "world-writable", "other-owner", "not-a-folder"])
def test_an_unsafe_cache_folder_is_refused(tmp_path, monkeypatch, capsys, why):
    folder = tmp_path / "shared"
    if why == "not-a-folder":
        folder.write_text("")
    else:
        folder.mkdir()
        os.chmod(folder, {"group-writable": 0o770, "world-writable": 0o777}.get(why, 0o700))
    if why == "other-owner":
        uid = os.geteuid() + 1
        monkeypatch.setattr(os, "geteuid", lambda: uid)
    monkeypatch.setenv("NXC_CACHE_DIR", str(folder))
    monkeypatch.setattr(cache, "_fallback", None)
    used = cache.cache_dir()
    assert used != str(folder) and used == cache._fallback
    err = capsys.readouterr().err
    assert err.count("caching in a temporary folder") == 1 and str(folder) in err


def test_dev_null_cache_runs_with_one_warning(tmp_path):
    path = tmp_path / "t.nx"
    path.write_text(GATE.format(value=0))
    env = dict(os.environ, NXC_CACHE_DIR="/dev/null")
    for command in (["run", str(path)], ["check", str(path)], ["run", "--backend", "py", str(path)]):
        proc = subprocess.run([sys.executable, "-m", "nxc", *command], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("warning: cache folder '/dev/null'") == 1, proc.stderr


def test_unwritable_cache_degrades_to_a_temporary_folder(tmp_path, own_cache, monkeypatch, capsys):
    # As root a read-only folder is still writable; simulate what a read-only
    # or full file system does to the first compile (a gate's first object).
    real = objects_mod._compile_object
    calls = []

    def failing_once(*args):
        calls.append(cache.cache_dir())
        if len(calls) == 1:
            raise OSError(30, "Read-only file system")
        return real(*args)

    monkeypatch.setattr(objects_mod, "_compile_object", failing_once)
    monkeypatch.setattr(cache, "_fallback", None)
    program = _program(tmp_path, "t.nx", 0)
    assert _run_c(program).status == "PASS"
    assert calls[0] == str(own_cache) and calls[1] != str(own_cache)
    assert capsys.readouterr().err.count("Read-only file system") == 1
    assert not [n for n in os.listdir(own_cache / "c") if n.startswith(".")] if (own_cache / "c").exists() else True


def test_failed_cache_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    def no_space(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    assert not cache.write_atomically(str(tmp_path / "entry"), b"data")
    assert os.listdir(tmp_path) == []


def test_an_entry_appears_already_stamped(tmp_path, own_cache, monkeypatch):
    """A reader that takes no lock (another worker) must never see a built
    entry without its stamp: it would take it for a damaged one and discard
    it while its writer hands it out. Every artefact of a gate's build (the
    module objects, the runtime's object, the library) is stamped
    before it is moved into place, and an object's site table is there first."""
    published = []
    real_replace = os.replace

    def replace(src, dst):
        real_replace(src, dst)
        if str(dst).startswith(str(own_cache)) and str(dst).endswith((".o", ".so")):
            published.append(dst)
            assert cache.stamped(dst), f"{dst} appeared without its stamp"
            if os.path.basename(os.path.dirname(dst)) == "obj" and not os.path.basename(dst).startswith("rt-"):
                stem = os.path.splitext(dst)[0]
                assert os.path.exists(stem + ".sites"), f"{dst} appeared before its site table"

    monkeypatch.setattr(os, "replace", replace)
    lib = tmp_path / "lib.nx"
    lib.write_text("func helper(x: i64) -> i64 {\n    var i: i64 = 0\n    var s: i64 = 0\n"
                   "    while i < x { s = s + i; i = i + 1 }\n    return s\n}\n")
    gate = tmp_path / "gate.nx"
    gate.write_text('import "lib.nx"\n\nfunc main() -> i64 {\n    if helper(4) != 6 { return 1 }\n    return 0\n}\n')
    program = check_file(str(gate), [], Diagnostics())
    [outcome] = execute(program, "c", timeout=GATE_BOUND)
    assert outcome.status == "PASS", outcome
    kinds = {os.path.basename(p).split("-")[0] if "-" in os.path.basename(p) else os.path.splitext(p)[1]
             for p in published}
    assert {"rt", ".so"} <= kinds and any(os.path.basename(p)[0] not in "r_" for p in published), published


def _wrong_mac(name: str, payload: bytes) -> bytes:
    """A well-formed seal (32-byte MAC, then the payload) made with another key."""
    import hashlib
    import hmac
    return hmac.new(b"k" * 32, name.encode() + b"\0" + payload, hashlib.sha256).digest() + payload


@pytest.mark.parametrize("entry", ["unseal", "result", "index", "stamp"])
def test_an_entry_with_a_well_formed_but_wrong_mac_is_refused(tmp_path, own_cache, entry):
    """Each reader of a sealed entry, given the same payload twice: sealed with
    another key (refused) and with this cache's (taken), so it is the MAC alone
    that decides."""
    import json

    from nxc.incremental import inputs
    from nxc.incremental import results as results_cache
    from nxc.incremental.index import FORMAT, ModuleIndex, index_file
    cache.forget_verified()
    if entry == "unseal":
        name, payload = "some/entry", b"payload"
        assert cache.unseal(name, _wrong_mac(name, payload)) is None
        assert cache.unseal(name, cache.seal(name, payload)) == payload
        return
    if entry == "result":
        key = "u-" + "0" * 32
        path = os.path.join(results_cache._folder(), key)
        name = "results/" + key
        payload = json.dumps({"inputs": inputs.NO_FILES, "kind": "gate", "warnings": [], "cwd": None}).encode()
        read = lambda: results_cache.unit_pass(key)[0]                      # noqa: E731
    elif entry == "index":
        path, name = index_file(), "index/modules.json"
        module = str(tmp_path / "m.nx")
        payload = json.dumps({"format": FORMAT, "modules": {
            module: {"stat": None, "digest": "0" * 32, "imports": []}}}).encode()
        read = lambda: ModuleIndex.load().entries or None                 # noqa: E731
    else:
        path = str(tmp_path / "built.so")
        with open(path, "wb") as f:
            f.write(b"\x7fELF built")
        path, target = path + cache.SIDECAR, path
        name, payload = os.path.basename(target), cache.file_digest(target)
        read = lambda: cache.stamped(target) or None                      # noqa: E731
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(_wrong_mac(name, payload))
    assert read() is None
    cache.forget_verified()
    cache.write_atomically(path, cache.seal(name, payload))
    assert read() is not None


POKE = """func poke(p: *i64, i: i64) -> i64 {
    let q: *i64 = (p as i64 + i * 8) as *i64
    return *q
}
"""
POKE_GATE = """import "m.nx"
func main() -> i64 {
    let p: *i64 = 4096 as *i64
    return poke(p, 100000000)
}
"""


@pytest.mark.parametrize("damage", ["deleted", "flipped"])
def test_a_fault_worded_from_a_missing_or_damaged_site_table(tmp_path, own_cache, damage):
    """The site table beside an object is read only to word a fault. When it
    is gone or damaged, the module's C says it again, even in a worker that
    did not check that module's bodies (a clean verdict; its object and the
    library in the cache), and the table is kept again. Before: the gate was
    an ERROR, "copied functions neither checked nor kept: ['poke']"."""
    (tmp_path / "m.nx").write_text(POKE)
    (tmp_path / "g.nx").write_text(POKE_GATE)

    def run():
        done = subprocess.run([sys.executable, "-m", "nxc", "test", "g.nx"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=GATE_BOUND)
        return done.returncode, done.stdout + done.stderr

    located = "RUNTIME-ERROR m.nx:3:12: runtime error: read of i64"
    code, out = run()
    assert code == 1 and located in out and "in poke" in out, out
    obj = own_cache / "c" / "obj"
    tables = sorted(obj.glob("*.sites"))
    assert len(tables) == 2                         # m's own, and g's (poke copied in)
    kept = own_cache.parent / "kept"
    shutil.copytree(own_cache, kept)
    for table in tables:
        shutil.rmtree(own_cache)
        shutil.copytree(kept, own_cache)
        loader._PARSED.clear()
        if damage == "deleted":
            table.unlink()
        else:
            data = bytearray(table.read_bytes())
            data[40] ^= 0xFF
            table.write_bytes(bytes(data))
        for _ in range(2):                          # the second run reads the table kept again
            code, out = run()
            assert code == 1 and located in out and "in poke" in out and "neither checked" not in out, out
            assert "0 compiled" in out, out
        if "g.nx" in (kept / "c" / "obj" / table.name).read_text(errors="replace"):
            assert objects_mod.read_sites(table.stem) is not None       # the table the fault read, kept again
