"""`nxc test`: every outcome explained, the run going on past each, the options,
the build cache and concurrent runs. The command runs as a subprocess, as a
user runs it (its worker pool forks, which is best kept out of pytest's own
process)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nx_gate_fixtures import EXPECTED, FILES, line_of, write_tree
from runner_processes import describe, kill_group, wait_for_two_gates, wait_until_gone

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = "1.5"     # the hang test waits this long; keep it small
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed(, .*)? in [\d.]+s$")


def nxc_test(*args, cwd, env=None, timeout=600) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), e.get("PYTHONPATH")]))
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "nxc", "test", *args], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=timeout)


def json_results(proc) -> dict:
    """The result events of a --json run by id (every stdout line is one JSON
    object; the last one is the summary event)."""
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events and events[-1]["event"] == "summary", proc.stdout
    return {d["id"]: d for d in events if d["event"] == "result"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> str:
    return write_tree(tmp_path_factory.mktemp("gates"))


def test_every_outcome_is_reported_and_the_run_goes_on(tree):
    # -j 1 runs in collection order: the crash and the hang come before
    # lib.nx and pass.nx, which must still run.
    proc = nxc_test("-j", "1", "--timeout", TIMEOUT, cwd=tree)
    out = proc.stdout
    assert proc.returncode == 1, proc.stderr
    for name, status in EXPECTED.items():
        assert re.search(rf"^\[\s*\d+/7\] {re.escape(status)}( \(cached\))?\s+{re.escape(name)}\b", out, re.M), (name, out)
    # FAIL: the value, path:line of the return, the source around it, the guard's operands.
    fail_line = line_of("fail.nx", "return 10")
    assert f"FAIL main returned 10 at fail.nx:{fail_line}" in out
    assert f" >{fail_line:5d} |     if r != NX_OK {{ return 10 }}" in out
    assert "        r = 3\n        NX_OK = 0" in out
    # The compile error is its own outcome, with the diagnostic and its caret.
    assert "compile_error.nx:3:12: error: undefined name 'coutn'; did you mean 'count'?" in out
    assert "crash.nx:3:5: runtime error: write of i64 through a null pointer (address 0x0)" in out
    assert "TIMEOUT: the gate did not finish in 1.5 s" in out
    assert f"  at hang.nx:{line_of('hang.nx', 'while')}:5 in main" in out      # where it was stopped
    assert "divzero.nx:3:15: runtime error: division by zero" in out
    assert "Traceback" not in out + proc.stderr
    last = out.rstrip().splitlines()[-1]
    assert SUMMARY.match(last), last
    assert last.startswith("2 passed, 1 failed, 1 compile error, 2 runtime errors, 1 timeout in ")


def test_json_lines_and_junit_xml_in_parallel(tree, tmp_path):
    junit = tmp_path / "out" / "gates.xml"
    proc = nxc_test("--json", "-j", "2", "--timeout", TIMEOUT, "--junit-xml", str(junit), cwd=tree)
    assert proc.returncode == 1, proc.stderr
    results = json_results(proc)            # every stdout line is one JSON object
    assert {k: v["status"] for k, v in results.items()} == EXPECTED
    fail = results["fail.nx"]
    assert fail["value"] == 10 and fail["location"] == f"fail.nx:{line_of('fail.nx', 'return 10')}"
    assert fail["captured"] == [{"text": "r", "value": 3}, {"text": "NX_OK", "value": 0}]
    assert results["lib.nx"]["kind"] == "library" and results["pass.nx"]["kind"] == "gate"
    assert "through a null pointer" in results["crash.nx"]["message"]
    assert "undefined name 'coutn'" in results["compile_error.nx"]["report"]
    assert SUMMARY.match(proc.stderr.strip().splitlines()[-1])

    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("7", "4", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["pass.nx"].find("failure") is None
    failure = cases["fail.nx"].find("failure")
    assert failure.get("message").startswith("FAIL: main returned 10 at fail.nx:")
    assert "r = 3" in failure.text
    assert cases["compile_error.nx"].find("error") is not None
    assert cases["hang.nx"].find("failure").get("type") == "TIMEOUT"


def test_keyword_filter(tree):
    proc = nxc_test("--json", "-k", "fail or pass", cwd=tree)
    assert set(json_results(proc)) == {"fail.nx", "pass.nx"}
    assert proc.returncode == 1
    proc = nxc_test("--json", "-k", "library", cwd=tree)        # the kind is a keyword too
    assert set(json_results(proc)) == {"lib.nx"} and proc.returncode == 0
    proc = nxc_test("--json", "-k", "pass and not (fail or crash)", cwd=tree)
    assert set(json_results(proc)) == {"pass.nx"} and proc.returncode == 0


def test_exitfirst_stops_at_the_first_failure(tree):
    proc = nxc_test("-x", "-j", "1", "--json", cwd=tree)
    results = json_results(proc)
    assert list(results) == ["compile_error.nx"]            # first in collection order
    assert proc.returncode == 1
    assert "stopped after the first failure (-x): 6 not run" in proc.stderr


def test_exitfirst_in_parallel_kills_what_is_running(tree):
    # hang.nx would hold a worker for 900 s; -x must not wait for it. (With
    # the default 60 s, a loaded machine could report hang's TIMEOUT before
    # crash.nx had compiled, and the bound had to stay under 60 s.)
    proc = nxc_test("-x", "-j", "2", "--json", "--timeout", "900", "-k", "hang or crash", timeout=600, cwd=tree)
    assert proc.returncode == 1
    assert [r["status"] for r in json_results(proc).values()] == ["RUNTIME-ERROR"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="watches the gates' processes in /proc")
def test_parallel_jobs_overlap_and_ctrl_c_stops_them(tmp_path):
    # Two gates at once is what -j 2 is for: seen as two gate processes alive
    # together. (Before, it was inferred from times: the run's wall time under
    # the sum of two 2 s timeouts, which a loaded machine, slow to start the
    # second worker, could break.) Then Ctrl-C, as a terminal sends it to the
    # whole group: exit status 130, and no worker or gate left.
    for name in ("hang_a.nx", "hang_b.nx"):
        (tmp_path / name).write_text(FILES["hang.nx"], encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "nxc", "test", "-q", "-j", "2", "--timeout", "900", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        workers, gates = wait_for_two_gates(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 130, out + err
        assert "Traceback" not in out + err
        assert not wait_until_gone(workers | gates), describe(proc.pid)
    finally:
        kill_group(proc.pid)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_list_collects_without_running(tree, tmp_path):
    cache = tmp_path / "cache"
    proc = nxc_test("--list", cwd=tree, env={"NXC_CACHE_DIR": str(cache)})
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert "lib.nx  (library)" in lines and "fail.nx  (gate)" in lines
    assert lines[-1] == "7 items collected"
    assert not cache.exists()                   # nothing was built


def test_default_path_is_the_current_folder(tree):
    proc = nxc_test("--list", "-q", "-k", "pass", cwd=tree)
    assert proc.stdout.split() == ["pass.nx"]


def test_warm_run_does_not_compile_and_no_cache_does(tree, tmp_path):
    env = {"NXC_CACHE_DIR": str(tmp_path / "cache")}
    args = ("--json", "-k", "pass or lib or fail", str(tree))
    cold = json_results(nxc_test(*args, cwd=tmp_path, env=env))
    # --rerun: past the result cache (nxc/incremental/results.py), down to the build cache.
    warm = json_results(nxc_test("--rerun", *args, cwd=tmp_path, env=env))
    assert len(cold) == 3
    assert all(r["build_cached"] is False for r in cold.values())
    assert all(r["build_cached"] is True for r in warm.values())
    assert not any(r["cached"] for r in warm.values())
    assert {k: r["status"] for k, r in warm.items()} == {k: r["status"] for k, r in cold.items()}
    again = json_results(nxc_test("--no-cache", *args, cwd=tmp_path, env=env))
    assert all(r["build_cached"] is False for r in again.values())
    assert not any(r["cached"] for r in again.values())
    proc = nxc_test("--rerun", "-k", "pass or lib", str(tree), cwd=tmp_path, env=env)
    assert "C builds: 0 compiled, 2 from the cache" in proc.stdout


def test_two_runs_at_once_both_succeed(tree, tmp_path):
    env = dict(os.environ, NXC_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "nxc", "test", "-q", "-k", "pass or lib or fail", tree]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 1, err               # fail.nx fails; nothing else may
        assert out.rstrip().splitlines()[-1].startswith("2 passed, 1 failed in "), out + err


def test_nothing_to_run_and_bad_usage(tmp_path):
    assert nxc_test(cwd=tmp_path).returncode == 2     # nothing to run: a usage mistake (5 is a backend mismatch)
    proc = nxc_test("no/such/folder", cwd=tmp_path)
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr
    proc = nxc_test("-k", "(pass", cwd=tmp_path)
    assert proc.returncode == 2 and "-k" in proc.stderr
    proc = nxc_test("--timeout", "0", cwd=tmp_path)
    assert proc.returncode == 2
    for out in (proc.stdout, proc.stderr):
        assert "Traceback" not in out


def test_backend_both_runs_each_gate_on_each_backend(tree):
    proc = nxc_test("--json", "--backend", "both", "-k", "pass or fail or lib", cwd=tree)
    results = json_results(proc)
    assert set(results) == {f"{n}[{b}]" for n in ("pass.nx", "fail.nx", "lib.nx") for b in ("c", "py")}
    assert results["fail.nx[py]"]["value"] == 10 and results["fail.nx[c]"]["value"] == 10
    assert results["pass.nx[py]"]["status"] == "PASS"


def test_backend_py(tree):
    proc = nxc_test("--json", "--backend", "py", "-k", "pass or fail", cwd=tree)
    results = json_results(proc)
    assert results["pass.nx"]["status"] == "PASS" and results["pass.nx"]["backend"] == "py"
    assert results["fail.nx"]["status"] == "FAIL" and results["fail.nx"]["value"] == 10


# ---- the runner's pieces, in process ----
def test_keyword_expression():
    from nxc.gates.collect import KeywordExpression, UsageError
    words = ["dir/fail.nx", "fail.nx", "fail", "gate", "c"]
    assert KeywordExpression("FAIL").matches(words)
    assert KeywordExpression("not pass and (gate or library)").matches(words)
    assert not KeywordExpression("fail and not gate").matches(words)
    for bad in ("(", "a and", "or b", "a )"):
        with pytest.raises(UsageError):
            KeywordExpression(bad)


def test_scan_kind_ignores_commented_out_main(tmp_path):
    from nxc.gates.collect import scan_kind
    p = tmp_path / "m.nx"
    p.write_text("// func main() -> i64\n/* func main() -> i64 {\n} */\nfunc f() -> i64 { return 0 }\n")
    assert scan_kind(str(p)) == ("library", 0)
    p.write_text("/* header\n */\n\nfunc main() -> i64 {\n    return 0\n}\n")
    assert scan_kind(str(p)) == ("gate", 4)
    # Read as bytes now: old Mac and Windows line ends still count as the lexer counts them.
    for end in ("\r", "\r\n"):
        p.write_bytes(end.join(["// a", "", "func main() -> i64 {", "    return 0", "}", ""]).encode())
        assert scan_kind(str(p)) == ("gate", 3)


def test_collected_items_carry_their_real_paths(tmp_path, monkeypatch):
    # Collection finds a plain file's real path from its folder's (one
    # realpath per folder); links still go through realpath, and a module
    # reached twice is collected once.
    from nxc.gates.collect import collect, group_units
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "deep" / "b.nx").write_text("func main() -> i64 { return 0 }\n")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.nx").write_text("func f() -> i64 { return 0 }\n")
    os.symlink(elsewhere / "deep" / "b.nx", tree / "sub" / "link.nx")
    os.symlink(elsewhere / "deep", tree / "linked_folder")         # os.walk does not follow it
    os.symlink(tmp_path, tmp_path / "loop")                         # the tree, named through a link
    monkeypatch.chdir(tmp_path)
    items = collect(["loop/tree", str(elsewhere)])
    assert sorted(os.path.basename(it.real) for it in items) == ["a.nx", "b.nx"]    # b.nx once
    for it in items:
        assert it.real == os.path.realpath(it.path) and os.path.isabs(it.path)
    for u in group_units(items):
        assert u.real == u.items[0].real
    [a] = [it for it in items if it.real.endswith("a.nx")]
    assert a.path == str(tmp_path / "loop" / "tree" / "a.nx") and a.display == os.path.join("loop", "tree", "a.nx")


def test_collection_walks_as_os_walk_does_and_notes_the_plain_files(tmp_path):
    # module_files lists folders itself (os.scandir: a file's type from the
    # listing, no lstat each), as os.walk would: links to folders listed, not
    # entered; hidden folders and __pycache__ left out; sorted. The real paths
    # of the regular files that are no links are noted for the module index.
    from nxc.gates.collect import module_files, skipped_dir
    tree = tmp_path / "tree"
    for rel in ("a.nx", "z/b.nx", "z/y/c.nx", "m/d.nx", ".hidden/e.nx", "__pycache__/f.nx", "z/notes.txt"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("func main() -> i64 { return 0 }\n")
    os.symlink(tree / "z" / "b.nx", tree / "m" / "link.nx")
    os.symlink(tree / "z", tree / "m" / "zlink")
    os.mkfifo(tree / "m" / "pipe.nx")
    expected = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not skipped_dir(folder, d))
        expected += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".nx")]
    skipped, plain = [], set()
    found = module_files([str(tree)], skipped, plain)
    once = {}
    for p in expected:
        if not p.endswith("pipe.nx"):
            once.setdefault(os.path.realpath(p), p)     # link.nx comes first and is b.nx: b.nx is not again
    assert [p for p, _ in found] == list(once.values()) and str(tree / "m" / "link.nx") in once.values()
    assert [os.path.basename(p) for p, _ in skipped] == ["pipe.nx"]     # not a regular file
    assert plain == {str(tree / rel) for rel in ("a.nx", "z/b.nx", "z/y/c.nx", "m/d.nx")}
    assert all(real == os.path.realpath(p) for p, real in found)


# ---- guard operands: recorded while the condition runs, in the C backend ----
def _run_c(path):
    from nxc.diagnostics import Diagnostics
    from nxc.check.frontend import check_file
    from nxc.gates.run import execute
    return execute(check_file(path, diags=Diagnostics()), "c", timeout=30)[0]


def test_captured_operands_are_the_values_the_condition_saw(write_nx):
    # A call is recorded, not evaluated again: bump() would give 4 the second time.
    # Both operands of || ran here, each with its own value.
    path = write_nx("""
        var calls: i64 = 0

        func bump() -> i64 {
            calls = calls + 1
            return calls
        }

        func main() -> i64 {
            if bump() != 1 { return 1 }
            if bump() == 7 || bump() != 2 { return 2 }
            return 0
        }
    """)
    outcome = _run_c(path)
    assert (outcome.status, outcome.value) == ("FAIL", 2)
    assert outcome.captured == [("bump()", 2), ("bump()", 3)]


def test_captured_operands_follow_short_circuit_and_types(write_nx):
    path = write_nx("""
        func main() -> i64 {
            let big: u64 = 0xFFFFFFFFFFFFFFFF
            let ok: bool = false
            let p: *i64 = 0 as *i64
            let small: i8 = -3
            if big == 1 || small > 0 { return 1 }
            if (small as i64) + 1 == -2 && !ok && p == 0 as *i64 && big != 0 { return 7 }
            return 0
        }
    """)
    outcome = _run_c(path)
    assert (outcome.status, outcome.value) == ("FAIL", 7)
    assert outcome.captured == [("small as i64 + 1", -2), ("ok", "false"), ("p", "0x0"),
                                ("big", 18446744073709551615)]


def test_short_circuited_operands_are_not_shown(write_nx):
    path = write_nx("""
        const LIMIT: i64 = 5
        func main() -> i64 {
            let a: i64 = 9
            let b: i64 = 1
            if a > LIMIT || b > LIMIT { return 3 }
            return 0
        }
    """)
    outcome = _run_c(path)
    assert outcome.value == 3
    assert outcome.captured == [("a", 9), ("LIMIT", 5)]        # `b > LIMIT` never ran


def test_render_expr_keeps_needed_parentheses(write_nx):
    from nxc.diagnostics import Diagnostics
    from nxc.check.frontend import check_file
    from nxc.lower.guards import guard_operands
    from nxc.syntax.printer import expr_text
    path = write_nx("""
        func f(x: i64) -> i64 { return x }
        func main() -> i64 {
            let a: i64 = 1
            let b: i64 = 2
            let p: *i64 = 0 as *i64
            if (a + b) * 2 != f(a - (b - 1)) || (a & 0x7F) >= -b || -(a + b) < p[a << 1] { return 1 }
            return 0
        }
    """)
    program = check_file(path, diags=Diagnostics())
    guard = program.gate_returns[0].guard
    assert [expr_text(e) for e in guard_operands(guard, program.info)] == [
        "(a + b) * 2", "f(a - (b - 1))", "a & 0x7F", "-b", "-(a + b)", "p[a << 1]"]


def test_unchecked_crash_is_a_crash_located_by_a_checked_rerun(tree):
    proc = nxc_test("--unchecked", "--json", "-k", "crash", cwd=tree)
    results = json_results(proc)
    crash = results["crash.nx"]
    assert crash["status"] == "CRASH" and crash["message"] == "SIGSEGV"
    assert "the checked build (run again to locate the crash) stopped at:" in crash["report"]
    assert "crash.nx:3:5: runtime error: write of i64 through a null pointer" in crash["report"]
    assert crash["stack"] == [{"file": "crash.nx", "line": 3, "column": 5, "function": "main"}]


def test_timeout_json_names_where_the_gate_was(tree):
    proc = nxc_test("--json", "--timeout", "0.5", "-k", "hang", cwd=tree)
    hang = json_results(proc)["hang.nx"]
    assert hang["status"] == "TIMEOUT"
    assert hang["stack"] == [{"file": "hang.nx", "line": line_of("hang.nx", "while"), "column": 5, "function": "main"}]
    assert hang["message"].endswith(f"stopped in main at hang.nx:{line_of('hang.nx', 'while')}")
