"""The front end's disk caches: parsed modules and the grammar's LALR table.

A damaged or stale cache file must cost a re-parse (or a table rebuild),
never a wrong result or a crash.
"""
from __future__ import annotations

import glob
import os

from nxc.syntax import loader, parse
from nxc import cache
from nxc.diagnostics import Diagnostics
from nxc.check.frontend import check_file
from nxc.paths import cache_dir

SOURCE = """
func add(a: i64, b: i64) -> i64 { return a + b }
func main() -> i64 {
    if add(2, 3) != 5 { return 1 }
    return 0
}
"""


def _fresh_process_state():
    loader._PARSED.clear()          # the in-memory copy would hide the disk one


def _parse_files(path):
    key = loader._parse_key(loader.read_source(path, Diagnostics()))
    return os.path.join(cache_dir(), "parse", key + ".pickle")


def test_parsed_module_is_cached_on_disk_and_reused(write_nx):
    path = write_nx(SOURCE)
    first = check_file(path, diags=Diagnostics())
    cached = _parse_files(path)
    assert os.path.isfile(cached)
    _fresh_process_state()
    second = check_file(path, diags=Diagnostics())
    assert [f.name for f in second.graph.root.items] == [f.name for f in first.graph.root.items] == ["add", "main"]


def test_damaged_parse_cache_file_is_parsed_again(write_nx):
    path = write_nx(SOURCE)
    check_file(path, diags=Diagnostics())
    cached = _parse_files(path)
    for junk in (b"", b"not a pickle", b"\x80\x05K\x01."):     # the last one unpickles to an int
        with open(cached, "wb") as f:
            f.write(junk)
        _fresh_process_state()
        program = check_file(path, diags=Diagnostics())
        assert [f.name for f in program.graph.root.items] == ["add", "main"]
    with open(cached, "rb") as f:
        assert f.read() not in (b"", b"not a pickle")   # rewritten with a good copy


def test_parse_cache_key_changes_with_the_front_end_code(write_nx, monkeypatch):
    path = write_nx(SOURCE)
    src = loader.read_source(path, Diagnostics())
    before = loader._parse_key(src)
    monkeypatch.setattr(loader, "_front_end_digest", lambda: "some other parser")
    assert loader._parse_key(src) != before


def test_damaged_grammar_table_cache_is_rebuilt():
    parse._grammar_tables(parse.StatementEnds())            # make sure it is on disk
    files = glob.glob(os.path.join(cache_dir(), "parse", "grammar-*.pickle"))
    assert files
    for junk in (b"garbage", b"\x80\x05K\x01."):              # the last one unpickles to an int
        for path in files:
            with open(path, "wb") as f:
                f.write(junk)
        terminals, table = parse._grammar_tables(parse.StatementEnds())
        assert "NAME" in {name for name, _, _ in terminals}
        assert table["actions"][table["start"]]              # a real table again
    # and it parses with it
    p = parse._Parser.__new__(parse._Parser)
    p.__init__()
    assert p.parse("func f() -> i64 { return 1 }\n")[0].name == "f"


def test_cli_cache_info_and_clear(write_nx, tmp_path):
    import subprocess
    import sys
    env = dict(os.environ, NXC_CACHE_DIR=str(tmp_path / "cache"))
    path = write_nx(SOURCE)
    run = subprocess.run([sys.executable, "-m", "nxc", "run", path], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr

    def nxc_cache(action):
        proc = subprocess.run([sys.executable, "-m", "nxc", "cache", action], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    info = nxc_cache("info")
    counts = {line.split()[0]: int(line.split()[1]) for line in info.splitlines()[1:]}
    assert counts["c/"] >= 1 and counts["parse/"] >= 2          # the build; the module and the grammar table
    assert "removed" in nxc_cache("clear")
    after = nxc_cache("info")
    assert all(int(line.split()[1]) == 0 for line in after.splitlines()[1:])
    # and everything still works from an empty cache
    again = subprocess.run([sys.executable, "-m", "nxc", "run", path], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr


def test_disk_parse_cache_is_bounded_least_recently_used_first(write_nx, monkeypatch):
    folder = os.path.join(cache_dir(), "parse")
    loader.prune_parse_cache(folder, keep=0)          # start from an empty folder
    monkeypatch.setattr(loader, "DISK_MAX_FILES", 8)
    monkeypatch.setattr(cache, "PRUNE_EVERY", 1)        # look at every write
    modules = [write_nx(f"func f{i}() -> i64 {{ return {i} }}\n", name=f"m{i}.nx") for i in range(12)]
    first = modules[0]
    for i, path in enumerate(modules):
        check_file(path, diags=Diagnostics())
        if i % 3 == 2:                  # keep using the first module: it must survive
            _fresh_process_state()
            os.utime(_parse_files(first), (1, 1))       # ... even if it looked old before its use
            check_file(first, diags=Diagnostics())
    entries = [f for f in os.listdir(folder) if f.endswith(".pickle") and not f.startswith("grammar-")]
    assert 6 <= len(entries) <= 8 + 1                  # pruned back, never far past the bound
    assert os.path.isfile(_parse_files(first))
    assert not os.path.isfile(_parse_files(modules[1]))   # an old, unused one went
    # a pruned module is simply parsed again
    _fresh_process_state()
    assert [f.name for f in check_file(modules[1], diags=Diagnostics()).graph.root.items] == ["f1"]


def _same_tree(a, b, where="module") -> None:
    """a and b are the same tree: the same classes, field values and positions
    all the way down (nodes compare by identity, so this walks both)."""
    from dataclasses import fields
    from nxc.syntax import ast
    from nxc.diagnostics import Pos
    assert type(a) is type(b), where
    if isinstance(a, ast.Node):
        for f in fields(a):
            _same_tree(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, Pos):
        assert (a.file.path, a.line, a.col) == (b.file.path, b.line, b.col), where
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same_tree(x, y, f"{where}[{i}]")
    elif hasattr(a, "path") and hasattr(a, "text"):     # the SourceFile
        assert (a.path, a.text) == (b.path, b.text), where
    else:
        assert a == b, where


def test_every_bundled_module_comes_back_from_its_pickle_as_parsed():
    # Nodes and positions pickle as their class called with their fields
    # (nxc/syntax/ast.py, nxc/diagnostics.py): every node kind of the bundled
    # modules, positions sharing their file, and the module's header.
    import pickle
    from nxc.paths import bundled_dir
    from nxc.diagnostics import Pos
    from nxc.syntax import ast
    kinds = set()
    for name in sorted(os.listdir(bundled_dir())):
        if not name.endswith(".nx"):
            continue
        module = parse.parse_source(loader.read_source(os.path.join(bundled_dir(), name), Diagnostics()),
                                    Diagnostics())
        back = pickle.loads(pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL))
        _same_tree(module, back, name)
        assert type(back.pos) is Pos and back.pos.file is back.source      # one SourceFile, shared
        for item in back.items:
            kinds.add(type(item).__name__)
            if isinstance(item, ast.FuncDecl) and item.body is not None:
                kinds |= {type(n).__name__ for n in ast.walk(item.body)}
    assert {"FuncDecl", "Import", "StructDecl", "While", "If", "Call", "Binary", "Cast"} <= kinds
