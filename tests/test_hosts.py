"""One link for many gates (nxc/backend/c/hosts.py, plan.build_order's `later`).

`nxc test -j N` builds a gate that other gates of the run import in a first
round (its objects and records), and runs it in a second round from the
library linked for a gate that imports it: nothing is linked for it. What it
reports is what its own library would give (a pass, a failed check with its
line and operands, a fault with its .nx stack), and a library is used only
when its sealed members record says it holds every object the gate needs,
built the same way.
"""
from __future__ import annotations

import glob
import json
import os

import pytest

from nxc.backend.c import hosts, objects
from nxc.cache import seal, write_atomically
from tree_support import nxc_test_results, write_settled

FILES = {
    "leaf.nx": """func leaf_add(x: i64) -> i64 {
    return x + 1
}

func main() -> i64 {
    if leaf_add(1) != 2 { return 1 }
    return 0
}
""",
    "mid.nx": """import "leaf.nx"

func mid_twice(x: i64) -> i64 {
    return leaf_add(x) * 2
}

func main() -> i64 {
    if mid_twice(1) != 4 { return 1 }
    return 0
}
""",
    "top.nx": """import "mid.nx"

func main() -> i64 {
    if mid_twice(2) != 6 { return 1 }
    return 0
}
""",
    "side.nx": """import "leaf.nx"

func main() -> i64 {
    if leaf_add(5) != 6 { return 1 }
    return 0
}
""",
}


def _run(tree, cache: str, *args: str) -> dict[str, dict]:
    results, output = nxc_test_results(tree, cache, *args)
    assert len(results) == 4, output
    return results


def _libraries(cache: str) -> int:
    return len(glob.glob(os.path.join(cache, "c", "_nx_*.so")))


def _report(r: dict) -> tuple:
    return r["status"], r["value"], r["line"], r["column"], r["message"], r["captured"], \
        [(f["function"], f["line"]) for f in r["stack"]]


def test_gates_imported_by_others_run_from_an_importers_library(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, FILES)
    cache = str(tmp_path / "cache")
    results = _run(tree, cache, "-j", "2")
    assert all(r["passed"] for r in results.values()), results
    # top and side are imported by none: each links its library; leaf and mid run from top's or side's
    assert _libraries(cache) == 2
    for name in ("top", "side"):
        assert results[name]["relinked"] and results[name]["host"] is None, results[name]
    for name in ("leaf", "mid"):
        assert results[name]["host"] and not results[name]["relinked"], results[name]
        # what its first round did (its own object compiled) is in the result the second round reports
        assert [os.path.basename(p) for p in results[name]["recompiled"]] == [name + ".nx"], results[name]
        assert results[name]["build_cached"] is False and "from one of their libraries" in results[name]["plan_reason"]
    # the same run in one worker links a library per gate, as before
    serial = _run(tree, str(tmp_path / "serial"), "-j", "1")
    assert _libraries(str(tmp_path / "serial")) == 4
    # (a pass from records names no column: compare what a pass says)
    said = lambda rs: {n: (r["status"], r["value"], r["message"], r["output"]) for n, r in rs.items()}  # noqa: E731
    assert said(serial) == said(results)


@pytest.mark.parametrize("change, status", [
    ("if leaf_add(1) != 3 { return 2 }", "FAIL"),
    ("if leaf_add(1) / (leaf_add(0) - 1) != 3 { return 2 }", "RUNTIME-ERROR"),
])
def test_a_gate_run_from_an_importers_library_reports_as_from_its_own(tmp_path, change, status):
    tree = tmp_path / "t"
    tree.mkdir()
    write_settled(tree, {**FILES, "leaf.nx": FILES["leaf.nx"].replace("if leaf_add(1) != 2 { return 1 }", change)})
    hosted = _run(tree, str(tmp_path / "cache"), "-j", "2")["leaf"]
    own = _run(tree, str(tmp_path / "own"), "-j", "1")["leaf"]
    assert hosted["host"] and own["host"] is None
    assert hosted["status"] == status and hosted["line"] == 6, hosted
    assert _report(hosted) == _report(own)
    if status == "RUNTIME-ERROR":
        assert "division by zero" in hosted["message"] and _report(hosted)[-1] == [("main", 6)]
    else:
        assert hosted["captured"], hosted


# ---- what a library must hold to host a gate ----
RUNTIME, FLAGS = "rt-000000000000000000000000", "-O2 -fuse-ld=gold"
KEYS = [f"{k:032x}" for k in range(1, 4)]           # three object keys, in link order
IDS = ["m_a", "m_b", "m_c"]


def _bases(ids):
    return tuple((m, (k + 1) << objects.SITE_BITS) for k, m in enumerate(ids))


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A library (any stamped file) linking KEYS, indexed as a link would."""
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    link_key = "a" * 24
    path, _ = objects.library_path(link_key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(b"not really a library: only its stamp is read here")
    from nxc.cache import publish
    publish(path + ".tmp", path)
    hosts.note_library(link_key, KEYS, _bases(IDS), RUNTIME, FLAGS)
    return link_key, path


def _find(keys=KEYS[:2], ids=IDS[:2], root="m_b", runtime=RUNTIME, flags=FLAGS):
    return hosts.find_host(keys, _bases(ids), root, runtime, flags, objects.library_path)


def test_a_library_holding_every_object_hosts_the_gate(library, monkeypatch):
    link_key, path = library
    host = _find()
    assert host is not None and host.key == link_key and host.path == path
    assert host.ids == tuple(IDS) and host.site_keys == tuple(KEYS)
    monkeypatch.setattr(objects, "link_flags_text", lambda opt: FLAGS)
    _, binding = objects.find_host(KEYS[:2], objects.Binding(_bases(IDS[:2]), "m_b"), RUNTIME, "2")
    assert binding.root == "m_b" and binding.bases == _bases(IDS)


def test_each_part_of_the_match_is_needed(library):
    assert _find(keys=[KEYS[1], "f" * 32], ids=["m_b", "m_x"]) is None     # an object it does not hold
    assert _find(keys=[KEYS[0], "e" * 32], ids=["m_a", "m_b"]) is None     # the gate's own object differs
    assert _find(runtime="rt-" + "1" * 24) is None                         # another runtime object
    assert _find(flags="-O2") is None                                      # linked otherwise
    assert _find(root=None) is None                                        # no gate to run
    assert _find() is not None


def test_a_library_gone_from_the_cache_hosts_nothing(library):
    _, path = library
    os.remove(path)
    assert _find() is None


def test_a_members_record_with_a_wrong_mac_is_not_trusted(library):
    link_key, _ = library
    record = os.path.join(hosts.hosts_dir(), link_key + ".members")
    payload = json.dumps({"keys": KEYS, "ids": IDS, "runtime": RUNTIME, "flags": FLAGS}).encode()
    write_atomically(record, seal("another-entry", payload))      # well formed, sealed for another name
    assert _find() is None
    write_atomically(record, b"\0" * 32 + payload)                # a MAC of the right size, wrong
    assert _find() is None
    write_atomically(record, seal(link_key + ".members", payload))
    assert _find() is not None


def test_a_torn_or_foreign_hint_line_is_skipped(library):
    link_key, _ = library
    hint = os.path.join(hosts.hosts_dir(), KEYS[1] + ".in")
    with open(hint, "ab") as f:
        f.write(b"../../etc/passwd\nzzzz\n" + b"b" * 24 + b"\n")    # the last: no members record
    assert _find().key == link_key
