"""nxc test as go test / nextest users expect it: the result cache (`PASS
(cached)`), last failed (--lf / --ff), --maxfail, --durations, --partition,
warnings and -W error, the JSON summary event, one compile error per module
with --backend both, JUnit valid against junit-10.xsd (nxc test and the
plugin), and --watch. Runs `nxc test` as a subprocess, each test with its own
cache folder."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nx_gate_fixtures import EXPECTED, line_of, source, write_tree

REPO = Path(__file__).resolve().parents[1]
SCHEMA = Path(__file__).with_name("junit-10.xsd")

LIB = """
func twice(x: i64) -> i64 {
    return x * 2
}
"""
GATE = """
import "lib.nx"

func main() -> i64 {
    if twice(%d) != %d { return 1 }
    return 0
}
"""
ALONE = """
func main() -> i64 {
    var s: i64 = 0
    var i: i64 = 0
    while i < 10 {
        s = s + i
        i = i + 1
    }
    if s != 45 { return 1 }
    return 0
}
"""
FAILS = """
func main() -> i64 {
    let v: i64 = 3
    if v != 4 { return 7 }
    return 0
}
"""


def env_for(tmp_path) -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), e.get("PYTHONPATH")]))
    e["NXC_CACHE_DIR"] = str(tmp_path / "cache")
    return e


def nxc_test(*args, cwd, tmp_path, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nxc", "test", *args], cwd=cwd, env=env_for(tmp_path),
                          capture_output=True, text=True, timeout=timeout)


def events(proc) -> tuple[dict, dict]:
    """(results by id, the summary event) of a --json run."""
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines and lines[-1]["event"] == "summary", proc.stdout + proc.stderr
    return {d["id"]: d for d in lines if d["event"] == "result"}, lines[-1]


@pytest.fixture
def project(tmp_path) -> Path:
    """lib.nx imported by a.nx and b.nx; c.nx alone; fail.nx fails. nxc.toml marks the project root."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "nxc.toml").write_text("", encoding="utf-8")
    files = {"lib.nx": LIB, "a.nx": GATE % (2, 4), "b.nx": GATE % (5, 10), "c.nx": ALONE, "fail.nx": FAILS}
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def run(project, tmp_path, *args):
    return nxc_test("--json", "-j", "1", *args, cwd=project, tmp_path=tmp_path)


# ------------------------------------------------------------------ result cache
def test_second_run_is_cached_and_an_edit_reruns_exactly_the_importers(project, tmp_path):
    first, summary = events(run(project, tmp_path))
    assert set(first) == {"a.nx", "b.nx", "c.nx", "lib.nx", "fail.nx"}
    assert not any(r["cached"] for r in first.values()) and summary["cached"] == 0
    second, summary = events(run(project, tmp_path))
    assert {k for k, r in second.items() if r["cached"]} == {"a.nx", "b.nx", "c.nx", "lib.nx"}
    assert second["fail.nx"]["status"] == "FAIL" and not second["fail.nx"]["cached"]   # failures never cached
    assert summary["cached"] == 4 and summary["passed"] == 4 and summary["failed"] == 1
    text = nxc_test("-j", "1", cwd=project, tmp_path=tmp_path).stdout
    assert re.search(r"PASS \(cached\) a\.nx", text), text

    # Same behaviour, new text: lib.nx and the two gates importing it run again, c.nx does not.
    (project / "lib.nx").write_text("func twice(x: i64) -> i64 {\n    return x + x\n}\n", encoding="utf-8")
    third, _ = events(run(project, tmp_path))
    assert {k for k, r in third.items() if not r["cached"]} == {"a.nx", "b.nx", "lib.nx", "fail.nx"}
    assert all(r["status"] == "PASS" for k, r in third.items() if k != "fail.nx")


def test_rerun_and_options_bust_the_cache(project, tmp_path):
    run(project, tmp_path)
    again, _ = events(run(project, tmp_path, "--rerun"))
    assert not any(r["cached"] for r in again.values())
    other_timeout, _ = events(run(project, tmp_path, "--timeout", "30"))
    assert not any(r["cached"] for r in other_timeout.values())
    assert all(r["build_cached"] for r in other_timeout.values() if r["kind"] == "gate")   # the build still is


# ------------------------------------------------------------------ --lf / --ff / --maxfail / --durations
def test_last_failed_and_failed_first(project, tmp_path):
    run(project, tmp_path, "--rerun")
    lf = run(project, tmp_path, "--lf")
    results, summary = events(lf)
    assert list(results) == ["fail.nx"] and summary["failed"] == 1
    assert "--lf: 1 item that failed last time (4 deselected)" in lf.stderr
    ff, _ = events(run(project, tmp_path, "--ff", "--rerun"))
    assert list(ff)[0] == "fail.nx" and len(ff) == 5
    # Fixed: nothing failed last time, so --lf runs everything and says so.
    (project / "fail.nx").write_text(FAILS.replace("v != 4", "v != 3"), encoding="utf-8")
    fixed, summary = events(run(project, tmp_path, "--lf"))
    assert list(fixed) == ["fail.nx"] and summary["passed"] == 1
    everything = run(project, tmp_path, "--lf")
    assert len(events(everything)[0]) == 5 and "no failures recorded" in everything.stderr


def test_maxfail_and_durations(tmp_path):
    tree = write_tree(tmp_path / "t" if (tmp_path / "t").mkdir() is None else None)
    proc = nxc_test("--json", "-j", "1", "--maxfail", "2", "--timeout", "1.5", cwd=tree, tmp_path=tmp_path)
    results, summary = events(proc)
    assert sum(r["status"] != "PASS" for r in results.values()) == 2
    assert summary["stopped_early"] and summary["not_run"] == 7 - len(results)
    assert "stopped after 2 failures (--maxfail 2)" in proc.stderr
    proc = nxc_test("--durations", "3", "-k", "pass or lib or fail", cwd=tree, tmp_path=tmp_path)
    table = proc.stdout.split(" slowest 3 items ")[1].splitlines()[1:5]
    assert table[0].split() == ["total", "front", "end", "build", "run", "item"]
    assert len(table) == 4 and all(re.match(r"\s*[\d.]+s\s+[\d.]+s\s+[\d.]+s\s+[\d.]+s  \S+", t) for t in table[1:])


# ------------------------------------------------------------------ --partition
@pytest.mark.parametrize("how", ["slice", "hash"])
def test_partitions_cover_every_item_exactly_once(tmp_path, how):
    tree = Path(write_tree(tmp_path))
    for i in range(9):
        (tree / f"extra_{i}.nx").write_text(textwrap.dedent(ALONE).lstrip(), encoding="utf-8")
    every = nxc_test("--list", "-q", "--backend", "both", cwd=tree, tmp_path=tmp_path).stdout.split()
    assert len(every) == 2 * 16
    shares = [nxc_test("--list", "-q", "--backend", "both", "--partition", f"{how}:{k}/3", cwd=tree,
                       tmp_path=tmp_path).stdout.split() for k in (1, 2, 3)]
    union = [i for share in shares for i in share]
    assert sorted(union) == sorted(every)               # each item exactly once
    for share in shares:                                # a module's items stay together
        assert {i.rsplit("[", 1)[0] for i in share}.isdisjoint(
            {i.rsplit("[", 1)[0] for s in shares if s is not share for i in s})
    if how == "slice":
        assert max(map(len, shares)) - min(map(len, shares)) <= 2


def test_partition_usage_errors(tmp_path):
    for bad in ("slice:0/3", "hash:4/3", "count:1/2", "1/2"):
        proc = nxc_test("--partition", bad, cwd=tmp_path, tmp_path=tmp_path)
        assert proc.returncode == 2 and "--partition" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ output
def test_json_summary_event_and_columns(tmp_path):
    tree = write_tree(tmp_path)
    results, summary = events(nxc_test("--json", "--timeout", "1.5", cwd=tree, tmp_path=tmp_path))
    assert {k: r["status"] for k, r in results.items()} == EXPECTED
    assert (summary["passed"], summary["failed"], summary["compile_errors"], summary["runtime_errors"],
            summary["crashes"], summary["timeouts"], summary["items"]) == (2, 1, 1, 2, 0, 1, 7)
    assert summary["passed_all"] is False
    fail = results["fail.nx"]
    line = line_of("fail.nx", "return 10")
    assert (fail["line"], fail["column"]) == (line, source("fail.nx").splitlines()[line - 1].index("return") + 1)
    assert (results["divzero.nx"]["line"], results["divzero.nx"]["column"]) == (3, 15)
    assert (results["compile_error.nx"]["line"], results["compile_error.nx"]["column"]) == (3, 12)


def test_backend_both_counts_a_compile_error_once(tmp_path):
    import nxc.backend.py.run  # noqa: F401  (ours: a broken import must fail the test, not skip it)
    tree = write_tree(tmp_path, ["compile_error.nx", "pass.nx", "lib.nx"])
    proc = nxc_test("--json", "--backend", "both", cwd=tree, tmp_path=tmp_path)
    results, summary = events(proc)
    errors = [r for r in results.values() if r["status"] == "COMPILE-ERROR"]
    assert len(errors) == 1 and errors[0]["id"] == "compile_error.nx" and errors[0]["backend"] == "c+py"
    assert summary["compile_errors"] == 1 and summary["items"] == 6 and summary["not_run"] == 0
    text = nxc_test("--backend", "both", cwd=tree, tmp_path=tmp_path).stdout
    assert text.count("compile_error.nx [COMPILE-ERROR]") == 1 and text.count("COMPILE-ERROR compile_error.nx") == 1
    assert text.rstrip().splitlines()[-1].startswith("4 passed, 0 failed, 1 compile error in ")


WARNS = """
func main() -> i64 {
    let unused: i64 = 1
    return 0
}
"""


def test_warnings_are_shown_per_module_and_W_error_fails(tmp_path):
    (tmp_path / "warns.nx").write_text(textwrap.dedent(WARNS).lstrip(), encoding="utf-8")
    (tmp_path / "c.nx").write_text(textwrap.dedent(ALONE).lstrip(), encoding="utf-8")
    proc = nxc_test(cwd=tmp_path, tmp_path=tmp_path)
    assert proc.returncode == 0
    assert "PASS" in proc.stdout and "warns.nx  gate, 1 warning" in proc.stdout
    section = proc.stdout.split(" WARNINGS ")[1]
    assert "warns.nx:2:9: warning: unused variable 'unused'" in section and "c.nx" not in section
    results, summary = events(nxc_test("--json", cwd=tmp_path, tmp_path=tmp_path))
    assert summary["warnings"] == 1 and "unused variable" in results["warns.nx"]["warnings"][0]
    strict = nxc_test("-W", "error", cwd=tmp_path, tmp_path=tmp_path)
    assert strict.returncode == 1
    assert "COMPILE-ERROR" in strict.stdout and "1 warning treated as errors (-W error)" in strict.stdout
    assert "1 passed, 0 failed, 1 compile error in " in strict.stdout


# ------------------------------------------------------------------ JUnit against the schema
def schema():
    xmlschema = pytest.importorskip("xmlschema")     # in the test extra; a missing install skips, not passes
    return xmlschema.XMLSchema(str(SCHEMA))


def test_junit_of_nxc_test_is_valid(tmp_path):
    xsd = schema()
    tree = write_tree(tmp_path / "t" if (tmp_path / "t").mkdir() is None else None)
    junit = tmp_path / "gates.xml"
    proc = nxc_test("--timeout", "1.5", "--junit-xml", str(junit), "--partition", "slice:1/1", cwd=tree,
                    tmp_path=tmp_path)
    assert proc.returncode == 1
    xsd.validate(str(junit))        # raises with the offending element when invalid
    text = junit.read_text(encoding="utf-8")
    assert 'message="FAIL: main returned 10 at fail.nx:' in text and "(r = 3, NX_OK = 0)" in text
    assert '<testsuite name="nxc slice:1/1"' in text


def plugin_run(tree, tmp_path, *args) -> subprocess.CompletedProcess:
    """pytest on `tree` with the plugin (named with -p unless the entry point already loads it)."""
    import importlib.metadata
    installed = any(ep.value == "nxc.gates.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
    cmd = [sys.executable, "-m", "pytest", *([] if installed else ["-p", "nxc.gates.pytest_plugin"]),
           "-p", "no:cacheprovider", "-o", "nx_collect=always", *args, str(tree)]
    return subprocess.run(cmd, cwd=tree, env=env_for(tmp_path), capture_output=True, text=True, timeout=300)


def test_junit_of_the_plugin_is_valid(tmp_path):
    xsd = schema()
    tree = write_tree(tmp_path / "t" if (tmp_path / "t").mkdir() is None else None)
    junit = tmp_path / "plugin.xml"
    proc = plugin_run(tree, tmp_path, "-q", "--nx-timeout", "1.5", f"--junitxml={junit}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    xsd.validate(str(junit))
    assert "main returned 10" in junit.read_text(encoding="utf-8")


# ------------------------------------------------------------------ --watch
def test_watch_reruns_what_a_change_affects(project, tmp_path):
    cmd = [sys.executable, "-m", "nxc", "test", "--json", "-j", "1", "--watch", "--watch-iterations", "1",
           "--watch-interval", "0.1"]
    proc = subprocess.Popen(cmd, cwd=project, env=env_for(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:            # the first round, then "watching ..."
            seen.append(line)
            if line.startswith("watching "):
                break
        assert seen and seen[-1].startswith("watching 5 .nx files"), "".join(seen)
        (project / "lib.nx").write_text("func twice(x: i64) -> i64 {\n    return x + x\n}\n", encoding="utf-8")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [json.loads(s) for s in out.splitlines()]
    cut = [i for i, d in enumerate(lines) if d["event"] == "summary"]
    assert len(cut) == 2, out                  # two rounds, then --watch-iterations 1 ends it
    second = {d["id"] for d in lines[cut[0] + 1:cut[1]]}
    assert second == {"lib.nx", "a.nx", "b.nx"}
    assert "changed: lib.nx: 3 items affected" in err
    assert proc.returncode == 0                 # the last round passed


def test_watch_ends_on_ctrl_c(project, tmp_path):
    import signal
    cmd = [sys.executable, "-m", "nxc", "test", "-q", "-j", "1", "--watch", "--watch-interval", "0.1"]
    proc = subprocess.Popen(cmd, cwd=project, env=env_for(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("watching "):
                break
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "watch ended" in out and "Traceback" not in out
    assert proc.returncode == 1                 # the last round's status: fail.nx failed


# ------------------------------------------------------------------ the plugin's equivalents
def test_plugin_partition_and_warnings(tmp_path):
    tree = Path(write_tree(tmp_path / "t" if (tmp_path / "t").mkdir() is None else None, ["pass.nx", "lib.nx",
                                                                                          "fail.nx"]))
    (tree / "warns.nx").write_text(textwrap.dedent(WARNS).lstrip(), encoding="utf-8")
    ran = []
    for k in (1, 2):
        proc = plugin_run(tree, tmp_path, "-q", "-rA", f"--nx-partition=hash:{k}/2")
        ran += re.findall(r"^(?:PASSED|FAILED) (\S+\.nx)::", proc.stdout, re.M)
    assert sorted(ran) == ["fail.nx", "lib.nx", "pass.nx", "warns.nx"]
    proc = plugin_run(tree, tmp_path, "-q", "-k", "warns")
    assert proc.returncode == 0 and "NxWarning" in proc.stdout and "unused variable 'unused'" in proc.stdout
    proc = plugin_run(tree, tmp_path, "-q", "-k", "warns", "-W", "error::nxc.gates.pytest_plugin.NxWarning")
    assert proc.returncode == 1 and "made an error by -W" in proc.stdout and "Traceback" not in proc.stdout


def test_captured_output_goes_to_the_report_and_system_out(tmp_path):
    # The runner does not capture a gate's stdout yet (the hardening issue
    # does); a Result carrying output must reach the text report and JUnit.
    import io
    from nxc.gates.execute import Result
    from nxc.gates.protocol import Status
    from nxc.gates.report import Reporter, write_junit
    xsd = schema()
    r = Result("g.nx", "g.nx", "gate", "c", Status.FAIL, value=3, message="main returned 3",
               report="FAIL main returned 3", output="step 1 ok\nstep 2 <bad> & worse\n")
    out = io.StringIO()
    Reporter(0, False, 1, out=out).finish([r], ["g.nx"], 0.5, 0, False, False)
    assert "the gate's output" in out.getvalue() and "step 2 <bad> & worse" in out.getvalue()
    junit = tmp_path / "g.xml"
    write_junit(str(junit), [r], ["g.nx"], 0.5)
    xsd.validate(str(junit))
    import xml.etree.ElementTree as ET
    assert ET.parse(junit).getroot().find("testsuite/testcase/system-out").text == r.output
