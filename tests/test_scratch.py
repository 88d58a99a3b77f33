"""The compiler's scratch folder (nxc/backend/c/scratch.py): one per process
and thread, its files renamed from compile to compile and never deleted (a
freed inode makes every later file creation on ext4 without a journal cost
~10x), gone with its process, swept by another once stale."""
from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from nxc.backend.c import scratch
from nxc.backend.registry import backend_for
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(scratch, "_held", {})
    return tmp_path / "cache"


def _modules(folder, n: int) -> list[str]:
    paths = []
    for k in range(n):
        path = os.path.join(str(folder), f"m{k}.nx")
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(f"""\
                func twice{k}(x: i64) -> i64 {{
                    return x * 2 + {k};
                }}

                func main() -> i64 {{
                    if twice{k}(3) != {6 + k} {{
                        return 1;
                    }}
                    return 0;
                }}
                """))
        paths.append(path)
    return paths


def _build(path: str) -> None:
    backend_for("c").prepare(check_file(path, diags=Diagnostics()), purpose="gate", load=False)


def _scratch_folders(cache) -> list[str]:
    folder = cache / "c" / "obj"
    return sorted(n for n in os.listdir(folder) if n.startswith(scratch.PREFIX)) if folder.is_dir() else []


def test_compiles_rename_the_kept_files_and_free_no_inode(cache, tmp_path, monkeypatch):
    paths = _modules(tmp_path, 3)
    _build(paths[0])                    # the runtime and the first module: the files exist now
    [folder] = _scratch_folders(cache)
    held = os.path.join(str(cache / "c" / "obj"), folder)
    inodes = {os.stat(os.path.join(held, n)).st_ino for n in os.listdir(held)}
    assert sorted(os.path.splitext(n)[1] for n in os.listdir(held)) == [".c", ".s"]
    removed = []
    for name in ("remove", "unlink", "rmdir"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda p, *a, _real=real, **k: removed.append(p) or _real(p, *a, **k))
    for path in paths[1:]:
        _build(path)
    assert [p for p in removed if str(p).startswith(held)] == []
    names = os.listdir(held)
    assert len(names) == 2 and {os.stat(os.path.join(held, n)).st_ino for n in names} == inodes
    assert _scratch_folders(cache) == [folder]
    # the object names its source after the key, as when each compile had its own folder
    objects = [n for n in os.listdir(cache / "c" / "obj") if n.endswith(".o") and not n.startswith("rt-")]
    for name in objects:
        with open(cache / "c" / "obj" / name, "rb") as f:
            assert (os.path.splitext(name)[0] + ".c").encode() in f.read()


def test_the_folder_goes_with_its_process(cache, tmp_path):
    [path] = _modules(tmp_path, 1)
    code = f"from tests.test_scratch import _build; _build({path!r})"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env=dict(os.environ))
    assert (cache / "c" / "obj").is_dir() and _scratch_folders(cache) == []


def test_the_folder_goes_with_a_multiprocessing_worker(cache, tmp_path):
    """A worker of `nxc test` is a forked multiprocessing child: it ends by
    os._exit, without atexit."""
    [path] = _modules(tmp_path, 1)
    child = multiprocessing.get_context("fork").Process(target=_build, args=(path,))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert (cache / "c" / "obj").is_dir() and _scratch_folders(cache) == []


def test_a_stale_folder_is_swept_and_a_removed_one_made_again(cache):
    parent = cache / "c" / "obj"
    parent.mkdir(parents=True)
    stale, live = parent / (scratch.PREFIX + "1-stale"), parent / (scratch.PREFIX + "2-live")
    for folder in (stale, live):
        folder.mkdir()
        (folder / "k.c").write_text("int x;\n")
    old = time.time() - scratch.STALE_SECONDS - 60
    os.utime(stale, (old, old))
    first = scratch.scratch(str(parent))
    assert not stale.exists() and live.exists() and os.path.isdir(first.folder)
    assert scratch.scratch(str(parent)) is first
    shutil.rmtree(first.folder)
    again = scratch.scratch(str(parent))
    assert again is not first and os.path.isdir(again.folder)
    scratch.forget()
    assert not os.path.exists(again.folder) and live.exists()


def test_write_overwrites_the_kept_file_in_place(tmp_path, monkeypatch):
    monkeypatch.setattr(scratch, "_held", {})
    work = scratch.scratch(str(tmp_path))
    first = work.write("c", "a.c", "int long_name_here;\n" * 50)
    inode = os.stat(first).st_ino
    second = work.write("c", "b.c", "/* é */ int x;\n")     # shorter: the old tail must go
    assert not os.path.exists(first) and os.stat(second).st_ino == inode
    with open(second, encoding="utf-8") as f:
        assert f.read() == "/* é */ int x;\n"
    # a new file was opened without truncation: nothing freed and allocated again
    flags = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, fl, *a: flags.append(fl) or real_open(p, fl, *a))
    work.write("c", "c.c", "int y;\n")
    assert flags and not flags[0] & os.O_TRUNC
