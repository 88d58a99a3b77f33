"""The no-change fast path of `nxc test` (nxc/gates/nochange.py, nxc/incremental/index.py).

A second run over an unchanged tree reports every unit `PASS (cached)` from
the module index alone: no module read, parsed or checked (the `--json`
summary's "incremental" counters say so). Every doubt takes the full path:
an edit that keeps size and mtime, a new file that changes what an import
names, a damaged or foreign index. Warnings recorded with a pass are shown
again.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_result_key import READS

REPO = Path(__file__).resolve().parents[1]

FILES = {
    "base.nx": """
        const K: i64 = 7
        func f(x: i64) -> i64 {
            return x + K
        }
    """,
    "mid.nx": """
        import "base.nx"
        func g(x: i64) -> i64 {
            return f(x) * 2
        }
    """,
    "top.nx": """
        import "mid.nx"
        func main() -> i64 {
            let unused: i64 = 1
            if g(1) != 16 { return 1 }
            return 0
        }
    """,
    "other.nx": """
        func main() -> i64 {
            return 0
        }
    """,
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def nxc_env(cache: Path) -> dict:
    """The environment of an nxc run on `cache`, importing this checkout's nxc."""
    env = dict(os.environ, NXC_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def nxc_test(*args, cache: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, dict, dict]:
    """(process, results by file name, the summary's "incremental" counters)."""
    env = nxc_env(cache)
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", "--json", "-j", "2", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events and events[-1]["event"] == "summary", proc.stdout + proc.stderr
    results = {os.path.basename(e["path"]): e for e in events if e["event"] == "result"}
    return proc, results, events[-1].get("incremental", {})


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "t"
    for name, text in FILES.items():
        write(root / name, text)
    # Files changed in the last 2 s are digested again on every look (the
    # index's racy rule): let them age, so the counters below are exact.
    time.sleep(2.1)
    return root, tmp_path / "cache"


def test_no_change_reads_and_parses_nothing(tree):
    root, cache = tree
    proc, cold, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and set(cold) == set(FILES) and not any(r["cached"] for r in cold.values())
    assert stats["cached_units"] == 0 and stats["sent_units"] == 4 and stats["parsed"] >= 4
    assert cold["top.nx"]["warnings"] and "unused variable 'unused'" in cold["top.nx"]["warnings"][0]

    proc, warm, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and all(r["cached"] and r["passed"] for r in warm.values())
    assert stats["cached_units"] == 4 and stats["sent_units"] == 0
    assert stats["parsed"] == 0 and stats["digested"] == 0 and stats["stat_hits"] > 0
    # the warnings are shown again, as on the run that checked the module
    assert warm["top.nx"]["warnings"] == cold["top.nx"]["warnings"]
    assert {r["kind"] for n, r in warm.items()} == {"gate", "library"} and warm["base.nx"]["kind"] == "library"
    text = subprocess.run([sys.executable, "-m", "nxc", "test", str(root)], cwd=root, capture_output=True,
                          text=True, env=dict(os.environ, NXC_CACHE_DIR=str(cache), PYTHONPATH=str(REPO)))
    assert "PASS (cached)" in text.stdout and "WARNINGS" in text.stdout and "unused variable" in text.stdout

    # From another folder: a module with warnings runs again (its warnings name
    # files relative to the current folder), the others are still cached.
    proc, elsewhere, stats = nxc_test(str(root), cache=cache, cwd=root.parent)
    assert proc.returncode == 0 and stats["sent_units"] == 1 and stats["cached_units"] == 3
    assert elsewhere["top.nx"]["warnings"][0].startswith(os.path.join("t", "top.nx") + ":")
    # ... and is cached from there next time: the pass it recorded there is
    # the one packed (not the pack's pass from the other folder).
    proc, again, stats = nxc_test(str(root), cache=cache, cwd=root.parent)
    assert proc.returncode == 0 and stats["sent_units"] == 0 and again["top.nx"]["cached"]

    proc, rerun, stats = nxc_test(str(root), "--rerun", cache=cache, cwd=root)
    assert proc.returncode == 0 and not any(r["cached"] for r in rerun.values()) and stats == {}


def test_no_change_loads_no_emitter(tree):
    """A run that builds nothing asks the C backend its build identity only: the emitters
    (objects.py, units.py, the function emitter) and jinja2 stay unimported (they were a sixth
    of a no-change run at 800 modules; docs/runner.md, "The no-change fast path"), and so do
    the parser and the AST (the index resolves imports with nxc/syntax/search.py), the checker,
    the worker pool and its gate host, and the JUnit writer's XML."""
    root, cache = tree
    proc, cold, _ = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and len(cold) == len(FILES)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "nxc", "test", "-q", "-j", "2", str(root)],
                          cwd=root, env=nxc_env(cache), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "4 passed" in proc.stdout, proc.stdout + proc.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "nxc.backend.c.backend" in imported            # asked for its build identity
    loaded = sorted(m for m in imported if m in ("jinja2", "nxc.backend.c.objects", "nxc.backend.c.units",
                                                 "nxc.backend.c.function", "nxc.backend.c.emit",
                                                 "nxc.syntax.parse", "nxc.syntax.loader", "nxc.syntax.ast",
                                                 "nxc.check.checker", "nxc.gates.pool", "nxc.gates.host",
                                                 "xml.etree.ElementTree", "difflib"))
    assert loaded == [], f"a no-change run imported {loaded}"


def _pack(cache: Path) -> Path:
    [pack] = (cache / "results").glob("pack-*")
    return pack


def test_a_run_s_passes_come_back_from_one_pack(tree):
    """The passes of a run's units are packed in one file (results.Pack), which
    the next run of the same units reads instead of an entry per unit; a pass
    in it is used under its own unit key only, and a pack this user's nxc did
    not seal is no pack."""
    root, cache = tree
    proc, cold, _ = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and len(cold) == len(FILES)
    pack = _pack(cache)
    held = pack.stat()
    for entry in (cache / "results").glob("u-*"):
        entry.unlink()                  # only the pack is left to find them in
    proc, warm, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and stats["cached_units"] == 4 and all(r["cached"] for r in warm.values())
    assert pack.stat().st_ino == held.st_ino        # not written again (a write is a new file, renamed)
    # Another timeout is another unit key (keys.PARTS): the same pack, not the same passes.
    proc, other, stats = nxc_test(str(root), "--timeout", "31", cache=cache, cwd=root)
    assert proc.returncode == 0 and stats["cached_units"] == 0 and not any(r["cached"] for r in other.values())
    # A well-formed pack with a wrong MAC is refused, and packed again by the run that follows.
    for entry in (cache / "results").glob("u-*"):
        entry.unlink()
    data = bytearray(pack.read_bytes())
    data[0] ^= 1
    pack.write_bytes(bytes(data))
    proc, refused, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and stats["cached_units"] == 0 and all(r["passed"] for r in refused.values())
    proc, again, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and stats["cached_units"] == 4


def test_a_packed_pass_is_checked_as_its_entry_is(tmp_path):
    """A pass from the pack whose gate read a file that changed since is run
    again, as one from its own entry is (the file record, inputs.py)."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "reads.nx").write_text(READS)           # the first byte of data.txt must be '0'
    (root / "data.txt").write_text("0")
    time.sleep(2.1)
    cache = tmp_path / "cache"
    proc, first, _ = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and first["reads.nx"]["passed"], proc.stdout + proc.stderr
    proc, warm, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert warm["reads.nx"]["cached"] and _pack(cache).exists()
    # Another content that still passes: run again, and its new pass (with the
    # new content's record) is what the pack holds after, so the run after is cached.
    (root / "data.txt").write_text("0 and more")
    time.sleep(2.1)         # a file changed within 2 s of a gate's start is not keyed: no pass recorded
    proc, rerun, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert rerun["reads.nx"]["passed"] and not rerun["reads.nx"]["cached"]
    for entry in (cache / "results").glob("u-*"):
        entry.unlink()                  # from the pack alone
    proc, cached, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert cached["reads.nx"]["cached"] and stats["sent_units"] == 0
    for entry in (cache / "results").glob("u-*"):
        entry.unlink()                  # the pass is in the pack only
    (root / "data.txt").write_text("1")
    proc, changed, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode != 0 and not changed["reads.nx"]["cached"] and changed["reads.nx"]["status"] == "FAIL"


def test_a_body_edit_sends_exactly_the_modules_whose_closure_holds_it(tree):
    root, cache = tree
    nxc_test(str(root), cache=cache, cwd=root)
    with open(root / "base.nx", "a", encoding="utf-8") as f:
        f.write("func h() -> i64 {\n    return 1\n}\n")
    proc, after, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0
    assert stats["sent_units"] == 3 and stats["cached_units"] == 1 and stats["parsed"] == 1
    assert {n for n, r in after.items() if not r["cached"]} == {"base.nx", "mid.nx", "top.nx"}


def test_an_edit_that_keeps_size_and_mtime_is_seen(tree):
    root, cache = tree
    nxc_test(str(root), cache=cache, cwd=root)
    path = root / "other.nx"
    before = os.stat(path)
    path.write_text(path.read_text(encoding="utf-8").replace("return 0", "return 3"), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_mtime_ns == before.st_mtime_ns
    proc, after, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 1
    assert after["other.nx"]["status"] == "FAIL" and not after["other.nx"]["cached"]
    assert stats["cached_units"] == 3


def test_a_new_file_that_changes_what_an_import_names_is_seen(tmp_path):
    app, lib, cache = tmp_path / "app", tmp_path / "lib", tmp_path / "cache"
    write(app / "gate.nx", """
        import "dep.nx"
        func main() -> i64 {
            return dep()
        }
    """)
    write(lib / "dep.nx", "func dep() -> i64 {\n    return 0\n}\n")
    proc, first, _ = nxc_test(str(app), "-I", str(lib), cache=cache, cwd=tmp_path)
    assert proc.returncode == 0 and first["gate.nx"]["passed"]
    proc, again, _ = nxc_test(str(app), "-I", str(lib), cache=cache, cwd=tmp_path)
    assert again["gate.nx"]["cached"]
    # The importer's own folder comes before -I: this dep.nx is the one now imported.
    write(app / "dep.nx", "func dep() -> i64 {\n    return 5\n}\n")
    proc, after, _ = nxc_test(str(app / "gate.nx"), "-I", str(lib), cache=cache, cwd=tmp_path)
    assert proc.returncode == 1 and after["gate.nx"]["status"] == "FAIL" and not after["gate.nx"]["cached"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "unsealed", "wrong-mac", "folder"])
def test_a_damaged_or_foreign_index_is_an_empty_one(tree, damage):
    root, cache = tree
    nxc_test(str(root), cache=cache, cwd=root)
    index = cache / "index" / "modules.json"
    assert index.is_file()
    if damage == "garbage":
        index.write_bytes(os.urandom(300))
    elif damage == "truncated":
        index.write_bytes(index.read_bytes()[:50])
    elif damage == "unsealed":          # well-formed JSON, not written by this user's nxc: not trusted
        from nxc.incremental.index import FORMAT
        fake = {"format": FORMAT,
                "modules": {str((root / n).resolve()): {"stat": None, "digest": "0" * 32, "imports": []}
                            for n in FILES}}
        index.write_text(json.dumps(fake))
    elif damage == "wrong-mac":         # a well-formed seal under another key, of entries whose
        import hashlib                  # stat matches and whose digests are wrong: not trusted
        import hmac

        from nxc.incremental.index import FORMAT
        from nxc.incremental.keys import file_signature
        fake = {"format": FORMAT,
                "modules": {str((root / n).resolve()): {"stat": file_signature(os.stat(root / n)), "digest": "0" * 32,
                                                         "imports": []} for n in FILES}}
        payload = json.dumps(fake).encode()
        index.write_bytes(hmac.new(b"k" * 32, b"index/modules.json\0" + payload, hashlib.sha256).digest() + payload)
    else:
        index.unlink()
        index.mkdir()
    proc, after, stats = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and all(r["passed"] for r in after.values())
    if damage != "folder":
        # rebuilt from the files themselves: the recorded passes are found again
        assert stats["parsed"] >= 4 and stats["cached_units"] == 4


def test_the_index_round_trip_and_its_refusals(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    from nxc.incremental import index as nx_index
    for name, text in FILES.items():
        write(tmp_path / "t" / name, text)
    idx = nx_index.ModuleIndex()
    top = str((tmp_path / "t" / "top.nx").resolve())
    closure = idx.closure(top)
    assert {os.path.basename(p) for p in closure} >= {"top.nx", "mid.nx", "base.nx"}
    assert closure[top]["imports"] == ["mid.nx"]
    idx.save()
    again = nx_index.ModuleIndex.load()
    assert again.entries.keys() == idx.entries.keys()
    assert again.closure(top).keys() == closure.keys()
    # a module that imports what does not exist has no closure here
    write(tmp_path / "t" / "broken.nx", 'import "nowhere.nx"\n')
    assert again.closure(str((tmp_path / "t" / "broken.nx").resolve())) is None
    write(tmp_path / "t" / "syntax.nx", "func (\n")
    assert again.closure(str((tmp_path / "t" / "syntax.nx").resolve())) is None


def test_a_file_changed_within_the_racy_window_is_read_again(tmp_path, monkeypatch):
    """git's racy-clean problem: an edit in the same timestamp tick as the look
    before it, keeping the size, leaves the stat as it was. The index does not
    trust a stat taken within RACY_NS of the file's last change. The clock
    and the stat are fixed here (the file's stat frozen, as such an edit leaves
    it), so the test does not depend on the file system's timestamps."""
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    from types import SimpleNamespace

    from nxc.incremental import index as nx_index
    path = tmp_path / "m.nx"
    write(path, "func f() -> i64 {\n    return 1\n}\n")
    old = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(old, old))
    real, frozen = str(path.resolve()), os.stat(path)

    class FrozenStat:               # os, but the module's stat never changes
        def __getattr__(self, name):
            return getattr(os, name)

        def stat(self, p, *a, **kw):
            return frozen if str(p) == real else os.stat(p, *a, **kw)

    changed = max(frozen.st_mtime_ns, frozen.st_ctime_ns)
    from nxc.incremental import keys as nx_keys         # the racy rule (keys.settled) reads its clock
    clock = SimpleNamespace(time_ns=lambda: changed + nx_keys.RACY_NS // 2)     # looked at 1 s after the change
    monkeypatch.setattr(nx_index, "os", FrozenStat())
    monkeypatch.setattr(nx_keys, "time", clock)
    first = nx_index.ModuleIndex()
    digest = first.module(real)["digest"]
    first.save()
    # edited within the tick: the same size, the same stat
    path.write_text(path.read_text(encoding="utf-8").replace("return 1", "return 2"), encoding="utf-8")
    again = nx_index.ModuleIndex.load()
    assert again.module(real)["digest"] != digest
    assert again.counters["stat_hits"] == 0 and again.counters["digested"] == 1

    # Looked at long after its last change, the stat is trusted: a stat hit, no read.
    clock.time_ns = lambda: changed + 10 * nx_keys.RACY_NS
    again.save()
    third = nx_index.ModuleIndex.load()
    third.module(real)
    third.save()
    fourth = nx_index.ModuleIndex.load()
    fourth.module(real)
    assert fourth.counters == {"stat_hits": 1, "digested": 0, "parsed": 0}


def test_collection_takes_each_unchanged_file_s_kind_from_the_index(tree, monkeypatch):
    """Collection reads no unchanged file: the index keeps each module's kind
    (nxc/syntax/scan.py) with the stat it was read under. A file whose stat
    changed, an entry without a trusted stat (the racy rule) and an entry of an
    older nxc without a kind are scanned; the last learns its kind."""
    root, cache = tree
    proc, cold, _ = nxc_test(str(root), cache=cache, cwd=root)
    assert proc.returncode == 0 and len(cold) == len(FILES)
    monkeypatch.setenv("NXC_CACHE_DIR", str(cache))
    from nxc.gates import collect as nx_collect
    from nxc.incremental import index as nx_index
    scanned = []
    real_scan = nx_collect.scan_kind
    monkeypatch.setattr(nx_collect, "scan_kind", lambda p: scanned.append(os.path.basename(p)) or real_scan(p))
    idx = nx_index.ModuleIndex.load()
    kinds = {os.path.basename(it.path): (it.kind, it.main_line) for it in nx_collect.collect([str(root)], index=idx)}
    assert kinds == {"base.nx": ("library", 0), "mid.nx": ("library", 0), "top.nx": ("gate", 2),
                     "other.nx": ("gate", 1)}
    assert scanned == []
    # other.nx loses its gate: a new stat, so it is read
    write(root / "other.nx", "func helper() -> i64 {\n    return 0\n}\n")
    kinds = {os.path.basename(it.path): it.kind for it in nx_collect.collect([str(root)], index=idx)}
    assert kinds["other.nx"] == "library" and scanned == ["other.nx"]
    # an entry taken within the racy window holds no stat: read
    top = str((root / "top.nx").resolve())
    idx.entries[top]["stat"] = None
    scanned.clear()
    nx_collect.collect([str(root)], index=idx)
    assert "top.nx" in scanned
    # an entry without a kind (an older nxc's) takes the scan's and keeps it
    mid = str((root / "mid.nx").resolve())
    del idx.entries[mid]["kind"]
    idx.dirty = False
    scanned.clear()
    nx_collect.collect([str(root)], index=idx)
    assert "mid.nx" in scanned and idx.entries[mid]["kind"] == ["library", 0] and idx.dirty
    scanned.clear()
    nx_collect.collect([str(root)], index=idx)
    assert "mid.nx" not in scanned


def test_an_entry_with_a_malformed_kind_is_not_taken(tmp_path):
    from nxc.incremental import index as nx_index
    good = {"stat": None, "digest": "d" * 32, "imports": []}
    for kind in (["gate", -1], ["test", 0], ["gate"], ["gate", "3"], "gate"):
        idx = nx_index.ModuleIndex()
        idx.adopt({"/x/m.nx": dict(good, kind=kind)}, {})
        assert "/x/m.nx" not in idx.entries, kind
    idx = nx_index.ModuleIndex()
    idx.adopt({"/x/m.nx": dict(good, kind=["stub", 0])}, {})
    assert "/x/m.nx" in idx.entries
