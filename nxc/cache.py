"""The cache folder, and why what is read back from it can be trusted.

Everything nxc caches (built modules, parsed modules, the grammar's table)
lives in one folder per user (NXC_CACHE_DIR, else XDG_CACHE_HOME/nxc, else
~/.cache/nxc). What is read back from it is loaded as code (a shared library,
a pickle), so (see docs/build.md):
- the folder is created private (0700) and refused when another user owns it
  or others may write to it;
- every entry is sealed with an HMAC under a secret key kept in the folder
  (readable by its user only) and bound to the entry's name: a damaged,
  truncated, planted or swapped entry fails the check and is rebuilt, never
  loaded;
- a folder that cannot be used (refused, read-only, full, not a folder)
  costs speed only: nxc says so once and caches in a temporary folder,
  removed at exit.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections import OrderedDict

_KEY_FILE = "secret-key"
_MAC_SIZE = 32
SIDECAR = ".sum"          # next to a built module: the seal of its SHA-256


def configured_dir() -> str:
    """NXC_CACHE_DIR, else the user's cache folder (XDG_CACHE_HOME)."""
    env = os.environ.get("NXC_CACHE_DIR")
    if env:
        if not os.path.isabs(env):
            return os.path.abspath(env)         # depends on the current folder: not kept
        # Asked for every cache entry read or written (458,000 times in a cold
        # run of 800 gates): the normalised path is kept per value.
        found = _normalised.get(env)
        if found is None:
            found = _normalised[env] = os.path.normpath(env)
        return found
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nxc")


_normalised: dict[str, str] = {}


# configured folder -> the folder actually used (itself, or a temporary one)
_usable: dict[str, str] = {}
_fallback: str | None = None


def cache_dir() -> str:
    """The cache folder to use: the configured one once it passed the checks."""
    wanted = configured_dir()
    got = _usable.get(wanted)
    if got is None:
        problem = _refusal(wanted)
        got = wanted if problem is None else degrade(f"cache folder '{wanted}' {problem}")
        _usable[wanted] = got
    return got


def _refusal(folder: str) -> str | None:
    """Why `folder` cannot be the cache (None: it can), creating it if missing."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
    except OSError as exc:
        return f"cannot be created ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return "belongs to another user"
    if st.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    if st.st_mode & 0o077:
        try:
            os.chmod(folder, 0o700)        # ours but readable by others (older nxc): make it private
        except OSError:
            pass
    if not os.access(folder, os.W_OK | os.X_OK):
        return "is not writable"
    return None


def degrade(reason: str) -> str:
    """Cache in a temporary folder from now on (one warning per process)."""
    global _fallback
    if _fallback is None:
        _fallback = tempfile.mkdtemp(prefix="nxc-cache-")       # 0700
        owner = os.getpid()
        atexit.register(lambda: os.getpid() == owner and shutil.rmtree(_fallback, ignore_errors=True))
        if _first_to_warn(configured_dir()):
            print(f"nxc: warning: {reason}; caching in a temporary folder for this run", file=sys.stderr)
    _usable[configured_dir()] = _fallback
    return _fallback


RUN_ID_ENV = "NXC_RUN_ID"       # set by the `nxc` command for itself and the workers it starts


def _marker(run: str, folder: str) -> str:
    digest = hashlib.sha256(f"{run}\0{folder}".encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"nxc-warned-{digest}")


def _first_to_warn(folder: str) -> bool:
    """One warning per run, not per process: `nxc test`'s workers each found
    the cache full, and each printed it (issue 31). The first process of the
    run to create the marker (in the temporary folder, not the full cache)
    prints; the run's `nxc` command removes the marker when it ends."""
    run = os.environ.get(RUN_ID_ENV)
    if not run:
        return True
    try:
        os.close(os.open(_marker(run, folder), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


@contextlib.contextmanager
def one_run():
    """The `nxc` command: names this run for the workers it starts (see
    _first_to_warn) while it lasts, then removes the run's marker."""
    if os.environ.get(RUN_ID_ENV):             # started by another nxc (a worker): its run
        yield
        return
    run = os.environ[RUN_ID_ENV] = f"{os.getpid()}-{time.time_ns()}"
    try:
        yield
    finally:
        os.environ.pop(RUN_ID_ENV, None)
        for folder in set(_usable) | {configured_dir()}:
            try:
                os.unlink(_marker(run, folder))
            except OSError:
                pass


def degrade_after(exc: OSError) -> str:
    """A write into the cache failed (read-only, full): degrade, saying why."""
    return degrade(f"cannot write to the cache folder '{configured_dir()}' ({exc.strerror or exc})")


# ---- sealing ----

_keys: dict[str, bytes] = {}


def _secret() -> bytes:
    """The per-user key of the cache folder, made on first use (0600)."""
    folder = cache_dir()
    key = _keys.get(folder)
    if key is not None:
        return key
    path = os.path.join(folder, _KEY_FILE)
    try:
        with open(path, "rb") as f:
            key = f.read()
    except OSError:
        key = b""
    if len(key) != 32:
        fresh = os.urandom(32)
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".key-")
            with os.fdopen(fd, "wb") as f:
                f.write(fresh)
            try:
                os.link(tmp, path)        # first writer wins; others read its key
            except FileExistsError:
                if len(key) != 32:
                    with open(path, "rb") as f:
                        key = f.read()
                if len(key) != 32:        # a damaged key file: replace it (old entries are rebuilt)
                    os.replace(tmp, path)
                    tmp = None
                    key = fresh
            else:
                key = fresh
            finally:
                if tmp is not None:
                    os.unlink(tmp)
        except OSError:
            key = fresh                    # unwritable: entries last for this process only
    _keys[folder] = key
    return key


def _mac(name: str, payload: bytes) -> bytes:
    return hmac.new(_secret(), name.encode("utf-8", "surrogateescape") + b"\0" + payload, hashlib.sha256).digest()


def seal(name: str, payload: bytes) -> bytes:
    """`payload` with a MAC that binds it to the entry `name`."""
    return _mac(name, payload) + payload


def unseal(name: str, data: bytes | None) -> bytes | None:
    """The payload of a sealed entry, or None when it is not a good seal for `name`."""
    if data is None or len(data) < _MAC_SIZE:
        return None
    payload = data[_MAC_SIZE:]
    return payload if hmac.compare_digest(data[:_MAC_SIZE], _mac(name, payload)) else None


def file_digest(path: str) -> bytes:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def parts_digest(*parts: str) -> str:
    """The hex digest of a sequence of strings (each ended by a NUL, so no two
    sequences give the same bytes): the cache keys' building block."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def folders_digest(folders: list[str], base: str, keep=lambda name: True) -> str:
    """A digest of every file under `folders` (names relative to `base`, and
    contents) that `keep` accepts, walked in a fixed order: what a key of
    something nxc's own code produced must cover (its code, the runtime)."""
    h = hashlib.sha256()
    for top in folders:
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if keep(name):
                    path = os.path.join(folder, name)
                    h.update(os.path.relpath(path, base).encode("utf-8", "surrogateescape") + b"\0")
                    h.update(file_digest(path))
    return h.hexdigest()


def stamp(path: str, built: str | None = None) -> None:
    """Record what `path` (a built artefact) holds, in its sidecar; `built`:
    the file that is about to become `path` (publish)."""
    write_atomically(path + SIDECAR, seal(os.path.basename(path), file_digest(built or path)))


def publish(built: str, path: str) -> None:
    """Move the finished file `built` to `path`, its sidecar first: a reader
    that takes no lock (another worker, another nxc) then never sees `path`
    without its stamp, which it would take for a damaged entry and discard
    while its writer still hands it out."""
    stamp(path, built)
    os.replace(built, path)
    if _remote is not None:
        rel = _shared_rel(path)
        if rel is not None:
            _remote.store_file(rel, path)


# ---- a shared cache behind this one (nxc/remote/, docs/runner.md) ----
# The seam is three calls: a local miss asks the remote (`fetched`, which
# read_sealed_json and `present` use), a sealed entry written (write_sealed)
# or a built file published is handed to it (store_sealed, store_file). The remote
# decides which entries are shared and checks what it fetches; what it puts
# here is then read and verified as any local entry. It knows nothing of
# this module's callers, and this module nothing of it but those calls.
_remote = None


def use_remote(remote) -> None:
    """Put `remote` (nxc.remote.shared.Shared; None: no remote) behind this cache."""
    global _remote
    _remote = remote


def _shared_rel(path: str) -> str | None:
    """`path` relative to the cache folder ('/'-separated), None outside it."""
    rel = os.path.relpath(path, cache_dir())
    return None if rel.startswith("..") or os.path.isabs(rel) else rel.replace(os.sep, "/")


def fetched(path: str) -> bool:
    """Whether the missing entry `path` was taken from the remote cache (and is now here)."""
    if _remote is None:
        return False
    rel = _shared_rel(path)
    return rel is not None and _remote.fetch(rel, path)


def present(path: str) -> bool:
    """Whether the entry `path` is here, after asking the remote cache on a miss
    (its seal or stamp is still the caller's to check)."""
    return os.path.exists(path) or fetched(path)


# ---- what this process verified ----
# A long-lived process (a worker of `nxc test`, --watch) reads the same
# entries gate after gate: ~100 stamped objects and records per gate of a
# large tree. An entry it verified is remembered with the identity of its
# file (device, inode, size, modification time): nxc only ever replaces an
# entry by a rename (write_atomically, publish), which makes a new inode, so
# a changed, removed or replaced file is read and verified again. `mark_used`
# (recently used, for pruning) changes the time: it notes the new one.
#
# An entry named by the key of its content (an object record, a verdict:
# nxc/incremental/records.py) is kept further, parsed (read_keyed_json): any
# file that ever holds it holds an answer for that key, so once one was read
# and verified there is nothing to look at again, not even its identity (a
# gate of a large tree read ~100 records and ~100 verdicts: a stat, a JSON
# parse and a check of each, 15% of the worker's own time per gate).
_VERIFIED_MAX = 8192
_stamps: "OrderedDict[str, tuple]" = OrderedDict()     # path -> identities of the file and its sidecar
_sealed: "OrderedDict[str, tuple]" = OrderedDict()     # path -> (identity, name, payload)
_kept: "OrderedDict[str, tuple]" = OrderedDict()       # path -> (name, data): read_keyed_json
TOUCH_EVERY = 60.0      # seconds (mark_used)


def read_bytes(path: str) -> bytes:
    """The bytes of the file at `path`, with the fewest system calls: open, read
    to the end, close. Python's open() adds an fstat, an ioctl and two lseeks
    per file, and a no-change run of 800 gates reads 1,600 files. Raises
    OSError as open() does."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def file_identity(path: str) -> tuple | None:
    """(device, inode, size, mtime_ns) of path, None if it cannot be stat'ed: equal
    identities mean the file was not replaced or rewritten (under the racy-clean rule)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember(memo: OrderedDict, path: str, value) -> None:
    memo[path] = value
    memo.move_to_end(path)
    while len(memo) > scaled_bound(_VERIFIED_MAX):
        memo.popitem(last=False)


def forget_verified() -> None:
    """Forget what this process verified (tests; a cache folder swapped under it)."""
    _stamps.clear()
    _sealed.clear()
    _kept.clear()
    _whole.clear()


# ---- a process that ends with its run ----
# A worker of `nxc test -j N` (nxc/gates/pool.py) lives for one run, and says
# so. What it read then stands for the whole run: the loader keeps each
# module's text, AST and resolved imports (nxc/syntax/loader.py), and what
# follows from them alone is kept by them (closure orders: nxc/backend/c/closure.py,
# nxc/incremental/index.py). A process that outlives a run (`nxc test --watch`,
# -j 1, the pytest plugin, the LSP) never says so, and keeps none of it.
_ends_with_its_run = False


def this_process_ends_with_its_run() -> None:
    global _ends_with_its_run
    _ends_with_its_run = True


def ends_with_its_run() -> bool:
    return _ends_with_its_run


def kept_for_the_run(memo: dict, key, compute, least: int = 1024):
    """compute(), kept in `memo` under `key` while this process ends with its
    run (computed each time otherwise: a process that outlives runs sees
    every change). `key` names everything the answer follows from within a
    run; `memo` holds at least `least` answers (scaled_bound), then starts over."""
    if not _ends_with_its_run:
        return compute()
    found = memo.get(key, _NOT_KEPT)
    if found is _NOT_KEPT:
        found = compute()
        if len(memo) >= scaled_bound(least):
            memo.clear()
        memo[key] = found
    return found


_NOT_KEPT = object()


# An entry its caller found whole with what goes beside it (an object and
# its stamp and site table: nxc/backend/c/objects.py), remembered with its
# identity after it was marked used. A worker of a large tree asks for each
# object of a gate's closure 2-3 times a gate (~400,000 times a run at 1,600
# modules), five stats each (the object, its stamp twice, its sites, the
# touch); then one. Its stamp and sidecars are not looked at again (what was
# verified is this very file), nor is it touched again by this process (once
# is enough for it to be pruned last).
_whole: "OrderedDict[str, tuple]" = OrderedDict()


def note_found_whole(path: str) -> None:
    ident = file_identity(path)
    if ident is not None:
        _remember(_whole, path, ident)


def found_whole_before(path: str) -> bool:
    """Whether this process noted `path` whole (note_found_whole) and it is the same file now."""
    held = _whole.get(path)
    return held is not None and held == file_identity(path)


def stamped(path: str) -> bool:
    """Whether `path` is exactly what nxc built under that name (verified once
    per process and version of the file, see above)."""
    ident = (file_identity(path), file_identity(path + SIDECAR))
    if ident[0] is None or ident[1] is None:
        _stamps.pop(path, None)
        return False
    if _stamps.get(path) == ident:
        _stamps.move_to_end(path)
        return True
    try:
        recorded = unseal(os.path.basename(path), read_bytes(path + SIDECAR))
        ok = recorded is not None and hmac.compare_digest(recorded, file_digest(path))
    except OSError:
        ok = False
    if ok:
        # the identities taken before reading: a file replaced meanwhile has
        # another, so it is verified again next time
        _remember(_stamps, path, ident)
    else:
        _stamps.pop(path, None)
    return ok


def mark_used(path: str, identity: tuple | None = None) -> None:
    """Mark the entry at `path` recently used (pruned last): its modification
    time, unless it is already younger than TOUCH_EVERY seconds (pruning goes
    by the least recent: one touch per entry and minute is enough). What this
    process verified of it stays verified when it is the same file after.
    `identity`: the file's, if the caller just took it."""
    before = identity or file_identity(path)
    if before is None or time.time_ns() - before[3] < TOUCH_EVERY * 1e9:
        return
    try:
        os.utime(path)
    except OSError:
        return
    after = file_identity(path)
    same = after is not None and before[:3] == after[:3]
    for memo in (_stamps, _sealed):
        held = memo.get(path)
        if held is None:
            continue
        if same and held[0] == before:
            memo[path] = (after, *held[1:])
        else:
            memo.pop(path, None)


def discard(path: str) -> None:
    """Remove a bad entry and its sidecar."""
    for p in (path, path + SIDECAR):
        try:
            os.remove(p)
        except OSError:
            pass


# ---- the folder's parts ----

# The cache folder's parts: what each holds (see docs/build.md).
CACHE_PARTS = {
    "c": "built modules (obj/: each module's object, for gates)",
    "parse": "parsed modules and the grammar's parse table",
    "results": "passing gate results (nxc test: PASS (cached))",
    "state": "last-failed items per project (nxc test --lf / --ff)",
    "index": "the module index: stat, source digest and imports per module (nxc/incremental/index.py)",
    "summaries": "clean check verdicts per module, keyed by its source and its imports' interfaces",
}


def cache_info() -> dict:
    """{"path": folder, "parts": {name: (files, bytes)}} of the cache folder."""
    parts = {}
    for name in CACHE_PARTS:
        folder = os.path.join(cache_dir(), name)
        # with subfolders: c/obj/ holds the separately compiled modules' objects
        files = [os.path.join(d, f) for d, _, names in os.walk(folder) for f in names]
        files = [f for f in files if os.path.isfile(f)]
        parts[name] = (len(files), sum(os.path.getsize(f) for f in files))
    return {"path": cache_dir(), "parts": parts}


def cache_clear() -> dict:
    """Empty every part of the cache folder; returns what was there."""
    info = cache_info()
    for name in CACHE_PARTS:
        shutil.rmtree(os.path.join(cache_dir(), name), ignore_errors=True)
    return info


PRUNE_EVERY = 256      # writes between two looks at a cache part's size


# The number of modules the current run works on (nxc test over a tree sets
# it before forking its workers). Every cache part's bound is at least twice
# that, so one full run of a tree never evicts what the next run needs: a
# fixed bound made any tree of more than ~1,000 modules never fully warm.
_working_set = 0


def expect_entries(modules: int) -> None:
    """This run touches `modules` modules: raise every cache bound to fit them."""
    global _working_set
    _working_set = max(_working_set, modules)


def scaled_bound(default: int, per_module: int = 1) -> int:
    """A cache part's bound: its default, or twice what the run's modules
    write to it (`per_module` entries each) if larger."""
    return max(default, 2 * per_module * _working_set)


def prune_due(writes: int) -> bool:
    """Whether a cache part should be checked after its `writes`-th write in
    this process: the first, then every PRUNE_EVERY (a look is one directory
    scan, a few milliseconds)."""
    return (writes - 1) % PRUNE_EVERY == 0


def prune_least_recent(folder: str, keep: int, is_entry) -> int:
    """Past `keep` entries (files whose name passes `is_entry`), remove the
    least recently used, down to three quarters of `keep`; returns how many.

    "Used" is the modification time: readers touch an entry on a hit.
    Removing a file another process has open or mapped is harmless on POSIX.
    An entry's sidecar goes with it.
    """
    try:
        entries = [(e.stat().st_mtime, e.path) for e in os.scandir(folder) if is_entry(e.name)]
    except OSError:
        return 0
    if len(entries) <= keep:
        return 0
    entries.sort()
    removed = 0
    for _, path in entries[:len(entries) - keep * 3 // 4]:
        try:
            os.remove(path)
            removed += 1
        except OSError:
            pass
        try:
            os.remove(path + SIDECAR)
        except OSError:
            pass
    return removed


def read_keyed_json(path: str, name: str, valid):
    """read_sealed_json(touch=True) of an entry whose name is the key of its
    content, when `valid(data)`; else None. Read and verified once per process,
    then kept: the data is shared between callers, none of which may change it.
    A writer of the entry calls forget_kept first."""
    held = _kept.get(path)
    if held is not None and held[0] == name:
        _kept.move_to_end(path)
        return held[1]
    data = read_sealed_json(path, name, touch=True)
    if data is None or not valid(data):
        return None
    _remember(_kept, path, (name, data))
    return data


def forget_kept(path: str) -> None:
    """The entry at `path` is being written again: read it afresh when next asked."""
    _kept.pop(path, None)


def read_sealed_json(path: str, name: str, touch: bool = False):
    """The JSON data kept sealed at `path` under `name` (seal); None if it is
    missing, damaged or not sealed by this user's nxc. `touch`: mark it
    recently used (pruned last)."""
    ident = file_identity(path)
    if ident is None and fetched(path):
        ident = file_identity(path)
    if ident is None:
        _sealed.pop(path, None)
        return None
    held = _sealed.get(path)
    if held is not None and held[0] == ident and held[1] == name:
        _sealed.move_to_end(path)       # read and verified before (see stamped): the same payload
        payload = held[2]
    else:
        try:
            payload = unseal(name, read_bytes(path))
        except OSError:
            payload = None
        if payload is None:
            _sealed.pop(path, None)
            return None
        _remember(_sealed, path, (ident, name, payload))
    try:
        # parsed for each caller: the data is the caller's own to change
        data = json.loads(payload.decode("utf-8", "surrogateescape"))
    except ValueError:
        return None
    if touch:
        mark_used(path, ident)
    return data


def write_sealed_json(path: str, name: str, data, **dumps) -> bool:
    """Keep `data` as JSON sealed under `name` at `path`, atomically (write_atomically)."""
    return write_sealed(path, name, json.dumps(data, **dumps).encode("utf-8", "surrogateescape"))


def write_sealed(path: str, name: str, payload: bytes) -> bool:
    """Keep `payload` sealed under `name` at `path` (write_atomically), and
    give it to the remote cache, if any."""
    wrote = write_atomically(path, seal(name, payload))
    if _remote is not None:
        rel = _shared_rel(path)
        if rel is not None:
            _remote.store_sealed(rel, name, payload)
    return wrote


def write_atomically(path: str, data: bytes) -> bool:
    """Write a cache file so that readers see all of it or none of it.

    Several processes share the cache (pytest-xdist, `nxc test -j`); a
    failure to write (read-only or full cache) only costs speed, so it is
    not raised, and leaves no temporary file behind. Returns whether it wrote.
    """
    return _write_renamed(path, data)


def write_published(path: str, data: bytes, mode: int | None = None) -> bool:
    """Write `data` as the built artefact `path`, stamped first as `publish`
    does, with file mode `mode`, and not handed to the remote cache: it is
    what the remote just sent (nxc/remote/shared.py). Returns whether it wrote."""
    return _write_renamed(path, data, mode, lambda tmp: stamp(path, tmp))


def _write_renamed(path: str, data: bytes, mode: int | None = None, before=None) -> bool:
    """Write `data` to a temporary file beside `path`, set `mode`, call
    `before(tmp)`, then rename it to `path`; False (nothing left behind) on
    an OSError."""
    folder = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        if before is not None:
            before(tmp)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False
