"""issue 33: a result cache that is never wrong (nxc/incremental/keys.py, inputs.py).

Every key of a cached pass (the no-change path's unit key, the full and the
recorded paths' artefact key) is built from one list of parts. For each
option of `nxc test` and each part, two runs that differ only in it must not
share a key; every option either is keyed or says why it cannot change an
outcome. End to end: the memory-limit reproducer (a pass under the default
limit is never a pass under 16M, nor recorded as one), one run per keyed
option, and a gate that reads a file (its pass is checked against the file).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nxc.cli import build_parser
from nxc.incremental import inputs
from nxc.incremental import keys as result_key
from nxc.gates.command import options_from_args
from nxc.gates.execute import Options

REPO = Path(__file__).resolve().parents[1]

# A different value for each Options field that is a key part (the test's own
# table: a field added to Options must be added here or to NOT_KEYED).
VARIANTS = {
    "timeout": 30.0,
    "memory_limit": 16 << 20,
    "checked": False,
    "opt": "2/x86-64",
    "soft_f32": True,
    "warnings_as_errors": True,
}
CLOSURE = {"/t/a.nx": "0" * 32}


def _keys(options: Options, backend: str = "c", kind: str = "gate") -> tuple[str, str]:
    return (result_key.unit_key(CLOSURE, backend, options),
            result_key.artefact_result_key("c-link-x", kind, options, backend))


def test_every_options_field_is_a_key_part_or_says_why_not():
    fields = {f.name for f in dataclasses.fields(Options)}
    assert fields == set(VARIANTS) | set(result_key.NOT_KEYED), fields ^ (set(VARIANTS) | set(result_key.NOT_KEYED))
    assert not set(VARIANTS) & set(result_key.NOT_KEYED)


@pytest.mark.parametrize("field", sorted(VARIANTS))
def test_two_runs_differing_in_one_option_share_no_key(field):
    base = Options()
    other = dataclasses.replace(base, **{field: VARIANTS[field]})
    assert getattr(other, field) != getattr(base, field)
    a, b = _keys(base), _keys(other)
    assert a[0] != b[0] and a[1] != b[1], field


@pytest.mark.parametrize("field", sorted(result_key.NOT_KEYED))
def test_what_is_not_keyed_does_not_change_the_key(field):
    value = {"backends": ("py",), "use_cache": False, "include": ["/elsewhere"], "timeout_flag": "--nx-timeout",
             "read_results": True, "record_results": True, "notes_to_runner": True}[field]
    assert _keys(Options()) == _keys(dataclasses.replace(Options(), **{field: value}))


def test_backend_and_kind_are_key_parts():
    o = Options()
    assert _keys(o, "c")[0] != _keys(o, "py")[0] and _keys(o, "c")[1] != _keys(o, "py")[1]
    assert _keys(o, kind="gate")[1] != _keys(o, kind="library")[1]


@pytest.mark.parametrize("part", ["nxc_version", "nxc_code", "python", "build", "py_largest_mapping"])
def test_the_environment_parts(part, monkeypatch):
    """What is not an option: nxc's version and code, the Python, the C toolchain,
    the Python runtime's largest mapping."""
    backend = "py" if part == "py_largest_mapping" else "c"
    monkeypatch.delenv("NXC_PY_MMAP_MAX", raising=False)
    before = _keys(Options(), backend)
    if part == "nxc_version":
        monkeypatch.setattr(result_key, "__version__", "0.0.0-other")
    elif part == "nxc_code":
        monkeypatch.setattr(result_key, "code_digest", lambda scope="package": "f" * 32)
    elif part == "python":
        monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    elif part == "build":
        from nxc.backend.c import build
        monkeypatch.setattr(build, "compiler_identity", lambda cc: "another compiler")
    else:
        monkeypatch.setenv("NXC_PY_MMAP_MAX", str(1 << 20))
    after = _keys(Options(), backend)
    assert before[0] != after[0] and before[1] != after[1]


def test_every_nxc_test_option_that_can_change_an_outcome_reaches_the_key():
    """Each option of the `nxc test` command line: either its Options differ in a
    key part (so the key differs), or it is listed below as one that selects,
    reports or schedules items (it cannot change one item's outcome)."""
    cli_values = {"timeout": ["--timeout", "30"], "memory_limit": ["--memory-limit", "16M"],
                  "unchecked": ["--unchecked"], "opt": ["--opt", "0"], "march": ["--march", "x86-64"],
                  "soft_f32": ["--soft-f32"], "warnings_as": ["-W", "error"]}
    not_outcome = {"paths", "keyword", "exitfirst", "maxfail", "lf", "ff", "rerun", "durations", "partition",
                   "watch", "watch_iterations", "watch_interval", "jobs", "list", "junit_xml", "json", "quiet",
                   "verbose", "no_cache", "include", "backend",
                   # where entries are found, not what they hold: each is still read under its full key
                   "remote_cache", "remote_cache_key_file", "remote_cache_readonly", "remote_cache_timeout"}
    parser = build_parser()
    test = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith(" test"))
    dests = {a.dest for a in test._actions if a.dest != "help"}
    assert dests == set(cli_values) | not_outcome, dests ^ (set(cli_values) | not_outcome)

    def key(argv):
        args = parser.parse_args(["test", *argv])
        if args.march is not None:                  # as nxc.cli.main does
            from nxc.backend.c.build import build_config
            args.opt = build_config(args.opt, args.march)
        return _keys(options_from_args(args))
    base = key([])
    for dest, argv in cli_values.items():
        k = key(argv)
        assert k[0] != base[0] and k[1] != base[1], dest


# ------------------------------------------------------------------ end to end
MEM = """import "nx_syscalls.nx"
func main() -> i64 {
    let n: i64 = 67108864
    let p: *u8 = sys_mmap(n) as *u8
    if p == 0 as *u8 { return 1 }
    var i: i64 = 0
    while i < n { p[i] = 1 as u8; i = i + 4096 }
    return 0
}
"""
PLAIN = """func main() -> i64 {
    var s: i64 = 0
    var i: i64 = 0
    while i < 5 { s = s + i; i = i + 1 }
    if s != 10 { return 1 }
    return 0
}
"""


def nxc_test(folder: Path, cache: Path, *args: str) -> dict[str, dict]:
    env = dict(os.environ, NXC_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "nxc", "test", "--json", "-j", "1", ".", *args], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events and events[-1]["event"] == "summary", proc.stdout + proc.stderr
    return {e["id"]: e for e in events if e["event"] == "result"}


def test_a_pass_under_the_default_memory_limit_is_no_pass_under_16m(tmp_path):
    """The reproducer: before, the second run said PASS (cached) (the full path's key
    left the limit out) and recorded that pass under the 16M unit key."""
    folder, cache = tmp_path / "t", tmp_path / "cache"
    folder.mkdir()
    (folder / "mem.nx").write_text(MEM)
    assert nxc_test(folder, cache)["mem.nx"]["status"] == "PASS"
    for _ in range(2):          # and not recorded as a pass by the first 16M run
        r = nxc_test(folder, cache, "--memory-limit", "16M")["mem.nx"]
        assert r["status"] == "MEMORY-LIMIT" and not r["cached"], r
    r = nxc_test(folder, cache)["mem.nx"]
    assert r["status"] == "PASS" and r["cached"]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A gate that passed once with the default options, and the cache it left."""
    base = tmp_path_factory.mktemp("warm")
    folder, cache = base / "t", base / "cache"
    folder.mkdir()
    (folder / "plain.nx").write_text(PLAIN)
    first = nxc_test(folder, cache)["plain.nx"]
    assert first["passed"] and not first["cached"]
    assert nxc_test(folder, cache)["plain.nx"]["cached"]
    return folder, cache


@pytest.mark.parametrize("argv", [["--timeout", "30"], ["--memory-limit", "1G"], ["--unchecked"],
                                  ["--march", "x86-64"], ["-W", "error"], ["--backend", "py"]],
                         ids=lambda a: " ".join(a))
def test_a_run_with_one_option_changed_runs_the_gate(warm, tmp_path, argv):
    folder, cache = warm
    mine = tmp_path / "cache"
    shutil.copytree(cache, mine)
    r = nxc_test(folder, mine, *argv)["plain.nx"]
    assert r["passed"] and not r["cached"], r
    assert nxc_test(folder, mine, *argv)["plain.nx"]["cached"]      # recorded under its own key


# A gate that reads the first byte of data.txt (through nx_file.nx): it must be '0'.
READS = """import "nx_file.nx"
func main() -> i64 {
    let p: *u8 = sys_mmap(16) as *u8
    p[0] = 100 as u8
    p[1] = 97 as u8
    p[2] = 116 as u8
    p[3] = 97 as u8
    p[4] = 46 as u8
    p[5] = 116 as u8
    p[6] = 120 as u8
    p[7] = 116 as u8
    let h: i64 = sys_file_open(p, 8)
    if h < 0 { return 1 }
    if sys_file_read(h, 0, ((p as i64) + 8) as *void, 1) != 1 { return 2 }
    if p[8] != 48 as u8 { return 3 }
    return 0
}
"""


def _opener(name: str, want_open: bool) -> str:
    """A gate that opens `name` and passes when it opened (or, want_open False, when it did not)."""
    stores = "\n".join(f"    p[{k}] = {b} as u8" for k, b in enumerate(name.encode()))
    check = "if h < 0 { return 1 }" if want_open else "if h >= 0 { return 1 }"
    return (f'import "nx_file.nx"\nfunc main() -> i64 {{\n    let p: *u8 = sys_mmap(64) as *u8\n{stores}\n'
            f"    let h: i64 = sys_file_open(p, {len(name)})\n    {check}\n    return 0\n}}\n")


def _statuses(results: dict) -> dict[str, tuple]:
    return {k: (r["status"], r["cached"]) for k, r in results.items()}


@pytest.mark.parametrize("jobs", ["1", "2"])      # C gates forked by the worker, or by its gate host
def test_a_gate_that_reads_a_file_is_rerun_when_the_file_changes(tmp_path, jobs):
    import nxc.backend.py.run  # noqa: F401  (ours: a broken import must fail the test, not skip it)
    folder, cache = tmp_path / "t", tmp_path / "cache"
    folder.mkdir()
    (folder / "reads.nx").write_text(READS)
    (folder / "absent.nx").write_text(_opener("nothere.txt", False))
    (folder / "folder.nx").write_text(_opener("sub", False))        # a directory does not open
    (folder / "sub").mkdir()
    (folder / "data.txt").write_text("0\n")
    time.sleep(2.1)       # a file changed within 2 s (its ctime) of a gate's start is not keyed
    ids = [f"{n}.nx[{b}]" for n in ("reads", "absent", "folder") for b in ("c", "py")]
    first = _statuses(nxc_test(folder, cache, "--backend", "both", "-j", jobs))
    assert first == {i: ("PASS", False) for i in ids}, first
    second = _statuses(nxc_test(folder, cache, "--backend", "both", "-j", jobs))
    assert second == {i: ("PASS", True) for i in ids}, second

    # The reproducer: same size, and the old mtime put back: the content is what counts.
    data = folder / "data.txt"
    st = os.stat(data)
    data.write_text("1\n")
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    (folder / "nothere.txt").write_text("")             # what was missing is there now
    (folder / "sub").rmdir()
    (folder / "sub").write_text("")                     # what was a directory is a file
    third = _statuses(nxc_test(folder, cache, "--backend", "both", "-j", jobs))
    assert third == {i: ("FAIL", False) for i in ids}, third


# ------------------------------------------------------------------ the record itself
def test_the_input_record(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small, big = tmp_path / "small.bin", tmp_path / "big.bin"
    small.write_bytes(b"abc")
    big.write_bytes(b"x" * 100)
    monkeypatch.setattr(inputs, "DIGEST_MAX", 10)
    now = time.time_ns()
    assert inputs.record((("small.bin", True),), now) is None          # changed just before the gate started
    later = now + result_key.RACY_NS + 10**9                               # a gate that started 3 s after
    rec = inputs.record((("small.bin", True), (str(big), True), ("gone.txt", False)), later)
    assert rec["cwd"] == str(tmp_path) and inputs.still_holds(rec)
    assert [sorted(e) for _, e in rec["files"]] == [["sha256", "size"], ["stat"], ["missing"]]
    assert inputs.record((("gone.txt", True),), later) is None         # opened, gone since
    assert inputs.record((("small.bin", False),), later) is None       # there, but did not open
    (tmp_path / "d").mkdir()
    folder = inputs.record((("d", False),), later)
    assert folder["files"] == [["d", {"directory": True}]] and inputs.still_holds(folder)
    (tmp_path / "d").rmdir()
    (tmp_path / "d").write_text("")
    assert not inputs.still_holds(folder)
    assert inputs.record((("d", False),), later) is None               # a file that did not open
    assert inputs.record(None, later) is None                          # the runtime's log was full
    assert inputs.record((), later) == inputs.NO_FILES
    assert inputs.record(tuple((f"f{i}", False) for i in range(inputs.MAX_FILES + 1)), later) is None

    os.chdir("/")
    assert not inputs.still_holds(rec)                                  # a relative path names another file
    os.chdir(tmp_path)
    st = os.stat(big)
    big.write_bytes(b"y" * 100)
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not inputs.still_holds(rec)                                  # the large file's ctime moved
    rec = inputs.record((("small.bin", True),), later)
    small.write_bytes(b"abd")
    assert not inputs.still_holds(rec)
    small.write_bytes(b"abc")
    assert inputs.still_holds(rec)                                      # the same content again


def test_module_keys_follow_every_input_after_they_were_looked_up():
    """verdict_key and interfaces_digest keep what they computed, looked up by
    their inputs (a worker asks for the same keys gate after gate): each input,
    changed after the first answer, changes the answer, as it does in a fresh
    process; the same inputs in another order of the closure set do not."""
    from nxc.incremental import keys
    keys._VERDICT_KEYS.clear()          # noqa: SLF001 - the memos under test
    keys._INTERFACES.clear()            # noqa: SLF001
    digests = {"/a.nx": "da", "/b.nx": "db", "/c.nx": "dc"}
    base = ("/c.nx", "tc", {"/a.nx", "/b.nx", "/c.nx"}, digests, False)
    first = keys.verdict_key(*base)
    assert keys.verdict_key(*base) == first
    assert keys.verdict_key("/c.nx", "tc", {"/b.nx", "/c.nx", "/a.nx"}, dict(digests), False) == first
    variants = [("/d.nx", "tc", base[2], digests, False), ("/c.nx", "tx", base[2], digests, False),
                ("/c.nx", "tc", {"/b.nx", "/c.nx"}, digests, False),
                ("/c.nx", "tc", base[2], dict(digests, **{"/a.nx": "dz"}), False),
                ("/c.nx", "tc", base[2], digests, True)]
    answers = [keys.verdict_key(*v) for v in variants]
    assert len({first, *answers}) == len(variants) + 1
    keys._VERDICT_KEYS.clear()          # noqa: SLF001 - a fresh process: the same answers
    assert [keys.verdict_key(*v) for v in variants] == answers and keys.verdict_key(*base) == first
    one = keys.interfaces_digest(iter(["i1", "i2"]))
    assert keys.interfaces_digest(["i1", "i2"]) == one
    assert len({one, keys.interfaces_digest(["i2", "i1"]), keys.interfaces_digest(["i1"]),
                keys.interfaces_digest(["i1", "i3"])}) == 4
    keys._INTERFACES.clear()            # noqa: SLF001
    assert keys.interfaces_digest(["i1", "i2"]) == one
