"""A process's scratch folder for the compiler's files: renamed, never deleted.

Each object used to be compiled in a temporary folder of its own, made and
removed with its .c and .s files: three inodes freed per object. ext4
without a journal (the disks of these machines) skips the inodes freed in
the last seconds when it allocates one, reading the inode block of each
(`recently_deleted` in perf): after a few hundred compiles, every file
created in the cache (records, verdicts, site tables, stamps, the objects
themselves) cost some 200 us of CPU, against 20-60 in a folder without
that churn.

Here each process (and thread: compiles in two threads must not share a
file) keeps one folder beside the objects, and one file per role in it
(the C source, the assembly), renamed to the name a compile needs: the
object records the source's name (`.file`), and the assembly is named
after the output, so names follow the key, while the inodes stay. The
object itself is written there and moved into place by the caller
(cache.publish), as before.

The folder goes when the process ends (atexit, or a multiprocessing
finalizer in a worker of `nxc test`, which ends without atexit). One
left by a killed process is removed by the next process that makes its
own, once it is an hour old (a folder in use is touched by every compile).
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading
import time

PREFIX = ".build-"
STALE_SECONDS = 3600

_held: dict[tuple[int, int, str], "Scratch"] = {}


class Scratch:
    """One process's and thread's folder in `parent`, and its kept files by role."""

    def __init__(self, parent: str):
        self.folder = tempfile.mkdtemp(dir=parent, prefix=f"{PREFIX}{os.getpid()}-")
        self.files: dict[str, str] = {}         # role -> the path its file has now

    def path(self, role: str, name: str) -> str:
        """The path `name` in the folder, the file kept for `role` renamed to
        it if there is one (a compile then writes into that inode)."""
        want = os.path.join(self.folder, name)
        have = self.files.get(role)
        if have is not None and have != want:
            try:
                os.replace(have, want)
            except OSError:
                pass                            # gone: the compile creates it
        self.files[role] = want
        return want

    def write(self, role: str, name: str, text: str) -> str:
        """Write `text` to `path(role, name)` over the kept file's bytes,
        then cut it to their length: opening with truncation frees the
        file's blocks and the write allocates them again, ~100 us of the
        kernel's CPU for a 16 KB file against ~10 us written in place."""
        path = self.path(role, name)
        data = text.encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
        return path


def scratch(parent: str) -> Scratch:
    """This process's and thread's scratch folder in `parent` (made on first use,
    and again if it was removed)."""
    at = (os.getpid(), threading.get_ident(), parent)
    held = _held.get(at)
    if held is not None and os.path.isdir(held.folder):
        return held
    _sweep(parent)
    held = _held[at] = Scratch(parent)
    _forgotten_at_exit()
    return held


def _forgotten_at_exit() -> None:
    """atexit covers a process that ends by returning; a process started by
    multiprocessing (a worker of `nxc test`) ends by os._exit after running
    the finalizers registered in it, so it is registered there too."""
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None and sys.modules["multiprocessing"].parent_process() is not None:
        mp_util.Finalize(None, forget, exitpriority=1)


def _sweep(parent: str) -> None:
    """Remove the scratch folders of `parent` that no compile touched for an hour."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
    except OSError:
        return
    old = time.time() - STALE_SECONDS
    for name in names:
        path = os.path.join(parent, name)
        try:
            if os.stat(path).st_mtime < old:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def forget() -> None:
    """Remove this process's scratch folders."""
    pid = os.getpid()
    for at in [at for at in _held if at[0] == pid]:
        shutil.rmtree(_held.pop(at).folder, ignore_errors=True)


atexit.register(forget)
if hasattr(os, "register_at_fork"):
    # A forked child does not own its parent's folders (it keys its own by pid).
    os.register_at_fork(after_in_child=_held.clear)
