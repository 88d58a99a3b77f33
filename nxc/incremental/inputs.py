"""The files a gate opened: recorded with its pass, checked before the pass is used.

Since the file externs (sys_file_open, sys_file_read) a gate's outcome is a
function of its build, its run's options and the files it reads. Like Go's
test cache, the runtime of both backends logs every path a gate asks
`sys_file_open` for, with whether it opened (C: a log in nx_runtime.c read
back by the gate's child; Python: runtime/nx_memory.py). After a pass the
runner turns that log into a record (`record`), kept with the pass; a cached
pass is used only when `still_holds` says every recorded file is as it was.

Per path (as the gate gave it, resolved against the current folder):
- opened, a regular file of at most DIGEST_MAX bytes: its size and the
  SHA-256 of its content (checked by reading it again: an edit that keeps
  size and mtime is still seen);
- opened, larger: its (size, mtime_ns, ctime_ns, inode, device), all equal;
- not opened, because nothing is there: that it is still missing (creating
  the file changes what the gate sees);
- not opened, a directory (both runtimes refuse one, whatever it holds):
  that it is still a directory;
- anything else (opened but not a regular file, not opened although it
  exists and is no directory (permissions), gone since, changed since the gate started or less than keys.RACY_NS
  before, more than MAX_FILES paths, the runtime's log full): nothing is
  recorded and the pass is not cached.

The record is taken after the gate ended, so a file changed while the gate
ran could be recorded with content the gate never read; the last-change
rule (ctime, which no program can set back) rules that out: a file whose
ctime is later than keys.RACY_NS before the gate started is not keyed. A
relative path makes the record hold the current folder, which must then be
the same.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat

from nxc.incremental.keys import file_signature, settled

DIGEST_MAX = 1 << 20        # bytes: a file up to this size is keyed on its content
MAX_FILES = 256             # distinct paths per gate; more: not cached
# What a gate that opened no file records (a library module, too).
NO_FILES: dict = {"cwd": None, "files": []}


def record(opened, started_ns: int) -> dict | None:
    """The record of a passing gate that asked to open `opened` ((path, opened), ...;
    None: unknown), started at time.time_ns() `started_ns`; None: not cacheable."""
    if opened is None:
        return None
    if not opened:
        return NO_FILES
    cwd = os.getcwd()
    relative = False
    files: dict[str, dict] = {}
    for path, ok in opened:
        if path in files:
            if ok != (files[path].get("missing") is None and files[path].get("directory") is None):
                return None         # opened once, not another time: it changed while the gate ran
            continue
        if len(files) >= MAX_FILES:
            return None
        entry = _entry(os.path.join(cwd, path), ok, started_ns)
        if entry is None:
            return None
        files[path] = entry
        relative = relative or not os.path.isabs(path)
    return {"cwd": cwd if relative else None, "files": [[p, e] for p, e in files.items()]}


def _entry(path: str, opened: bool, started_ns: int) -> dict | None:
    try:
        st = os.stat(path)
    except OSError as exc:
        if not opened and exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return {"missing": True}
        return None
    if not opened and stat.S_ISDIR(st.st_mode):
        return {"directory": True}
    if not opened or not stat.S_ISREG(st.st_mode):
        return None                 # exists but did not open (permissions), or opened and not a file
    if not settled(st, started_ns):
        return None                 # changed too recently: what the gate read may not be what is there
    if st.st_size > DIGEST_MAX:
        return {"stat": file_signature(st)}
    digest = _digest(path)
    try:
        after = os.stat(path)
    except OSError:
        return None
    if digest is None or file_signature(after) != file_signature(st):
        return None
    return {"size": st.st_size, "sha256": digest}


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read(DIGEST_MAX + 1)).hexdigest()
    except OSError:
        return None


def well_formed(rec) -> bool:
    return (isinstance(rec, dict) and (rec.get("cwd") is None or isinstance(rec.get("cwd"), str))
            and isinstance(rec.get("files"), list)
            and all(isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and isinstance(f[1], dict)
                    for f in rec["files"]))


def still_holds(rec) -> bool:
    """Whether every file of a record (`record`) is as it was when the pass was recorded."""
    if not well_formed(rec):
        return False
    cwd = rec["cwd"]
    if cwd is not None and os.getcwd() != cwd:
        return False                # a relative path would name another file from here
    for path, entry in rec["files"]:
        full = os.path.join(cwd or "/", path)
        try:
            st = os.stat(full)
        except OSError as exc:
            if entry.get("missing") is True and exc.errno in (errno.ENOENT, errno.ENOTDIR):
                continue
            return False
        if entry.get("directory") is True and stat.S_ISDIR(st.st_mode):
            continue
        if entry.get("missing") is not None or entry.get("directory") is not None or not stat.S_ISREG(st.st_mode):
            return False
        if "sha256" in entry:
            if st.st_size != entry.get("size") or _digest(full) != entry["sha256"]:
                return False
        elif file_signature(st) != entry.get("stat"):
            return False
    return True
