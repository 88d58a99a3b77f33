"""The local cache's entries on a shared store: which are shared, fetched on
a local miss, uploaded when written (nxc/cache.py calls `fetch`,
`store_sealed` and `store_file` through its seam, `use_remote`).

An entry's name on the store is the SHA-256 of the namespace and its path
in the cache folder (`c/obj/<object key>.o`, `results/<result key>`): the
local entry's key is already everything that can change it (docs/build.md,
docs/runner.md), and the namespace adds what one machine's cache never had
to key, being one machine: the store's format, nxc's version, the OS, the
processor and the C library (an object or library built against another is
not this machine's build).

What a fetch hands back is checked before it enters the local cache:
- a sealed entry (a result, a record, a verdict, a site table, a parsed
  module) is an
  action entry signed under the shared key (nxc/remote/trust.py), naming
  the local entry it was written as (its seal name, checked again when it
  is read locally);
- a built file (an object, a gate's library) is an action entry naming a
  blob by SHA-256 and size, and the blob must have that digest and size.
It is then written into the local cache as if built here (sealed with the
local key, its sidecar stamped), and verified again as every local entry is.

Faults: the first one (the store down, slow, full, an answer that is no
answer, or an entry that fails its check) gives one warning and switches the
remote off for the rest of the run; every process of the run (nxc test's
workers) sees that through a marker file, so a dead server costs one
timeout per run, not one per entry. A failed fetch is a local miss; a failed
upload costs the next machine a build. Nothing the store does can make a
local entry wrong: a local file is only ever replaced by a renamed,
complete, verified one.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile

from nxc import __version__
from nxc.cache import RUN_ID_ENV, seal, write_atomically, write_published
from nxc.remote import trust
from nxc.remote.store import RemoteError, Store

FORMAT = "nxc-remote-1"

# The shared parts of the cache folder (names relative to it): everything a
# second machine needs to skip a build, a gate or a parse (a fresh machine's
# module index parses every module for its imports: ~15 ms each). Parsed
# modules are pickles, loaded as code: as trusted as an object, which is
# machine code, and under the same key. Not shared: index/ (stats of this
# machine's files), the grammar's table (~100 ms), state/ (this machine's
# last failures), c/toolchain/ (paths of this
# machine's compiler), the precompiled header (megabytes, and made in a
# fraction of a second), the secret key.
SHARED = (
    (re.compile(r"results/[^/.][^/]*"), "sealed"),           # gate results (result_key.py)
    (re.compile(r"summaries/[^/.][^/]*\.json"), "sealed"),   # clean check verdicts (check/summary.py)
    (re.compile(r"c/records/[^/.][^/]*\.json"), "sealed"),   # module and gate records (backend/c/objects.py)
    (re.compile(r"c/obj/[^/.][^/]*\.sites"), "sealed"),      # an object's site table
    (re.compile(r"parse/[0-9a-f]{32}\.pickle"), "sealed"),    # parsed modules (nxc/syntax/loader.py)
    (re.compile(r"c/obj/[^/.][^/]*\.o"), "file"),          # module and runtime objects
    (re.compile(r"c/_nx_[^/]*\.so"), "file"),              # gates' libraries
)


def kind_of(rel: str) -> str | None:
    """'sealed' or 'file' for a shared entry (its path in the cache folder), else None."""
    for pattern, kind in SHARED:
        if pattern.fullmatch(rel):
            return kind
    return None


def namespace() -> str:
    libc = ""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        pass
    uname = os.uname()
    return hashlib.sha256("\0".join((FORMAT, __version__, sys.platform, uname.sysname, uname.machine,
                                     libc)).encode()).hexdigest()


class Rejected(Exception):
    """An entry that failed its check."""


class Shared:
    """The remote behind the local cache (nxc/cache.py: use_remote)."""

    def __init__(self, store: Store, key: bytes, readonly: bool = False):
        self.store = store
        self.key = key
        self.readonly = readonly
        self.ns = namespace()
        self.off = False
        self.counts = {"fetched": 0, "missed": 0, "stored": 0}
        run = os.environ.get(RUN_ID_ENV)
        digest = hashlib.sha256(f"{run}\0{store.url}".encode()).hexdigest()[:16]
        # Shared by the run's processes (cache.one_run names the run): the remote is off.
        self.marker = os.path.join(tempfile.gettempdir(), f"nxc-remote-off-{digest}") if run else None

    # ---- faults ----
    def usable(self) -> bool:
        if not self.off and self.marker is not None and os.path.exists(self.marker):
            self.off = True         # another process of this run found it faulty
        return not self.off

    def fail(self, why: str) -> None:
        """The first fault: say so once per run, then no remote for the rest of it."""
        if self.off:
            return
        self.off = True
        self.store.close()
        first = True
        if self.marker is not None:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                first = False
            except OSError:
                pass
        if first:
            print(f"nxc: warning: remote cache {self.store.url}: {why}; not used for the rest of this run "
                  f"(what it would have given is built here)", file=sys.stderr)

    def forget_run(self) -> None:
        """The run ended (its first process, at exit): the next run tries the remote again."""
        if self.marker is not None:
            try:
                os.unlink(self.marker)
            except OSError:
                pass

    def name(self, rel: str) -> str:
        """The name on the store of the local entry `rel`."""
        return hashlib.sha256(f"{self.ns}\0{rel}".encode()).hexdigest()

    # ---- reading ----
    def fetch(self, rel: str, path: str) -> bool:
        """Whether the missing local entry `path` (`rel` in the cache folder) was
        taken from the remote and is now in the local cache."""
        kind = kind_of(rel)
        if kind is None or not self.usable():
            return False
        name = self.name(rel)
        try:
            data = self.store.get("ac", name)
            if data is None:
                self.counts["missed"] += 1
                return False
            body = trust.verify(self.key, name, data)
            if body is None:
                raise Rejected(f"the entry for {rel} is not signed with this key")
            head, _, payload = body.partition(b"\n")
            try:
                header = json.loads(head)
            except ValueError:
                raise Rejected(f"the entry for {rel} is garbled") from None
            if not isinstance(header, dict) or header.get("kind") != kind:
                raise Rejected(f"the entry for {rel} is not a {kind} entry")
            if kind == "sealed":
                if not isinstance(header.get("name"), str):
                    raise Rejected(f"the entry for {rel} names no entry")
                got = write_atomically(path, seal(header["name"], payload))
            else:
                got = self._fetch_file(rel, path, header)
        except RemoteError as exc:
            self.fail(str(exc))
            return False
        except Rejected as exc:
            self.fail(f"rejected what it sent: {exc}")
            return False
        if got:
            self.counts["fetched"] += 1
        return got

    def _fetch_file(self, rel: str, path: str, header: dict) -> bool:
        sha, size = header.get("sha256"), header.get("size")
        if not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha) and isinstance(size, int)):
            raise Rejected(f"the entry for {rel} names no content")
        blob = self.store.get("cas", sha)
        if blob is None:
            self.counts["missed"] += 1
            return False                    # the content was evicted: a miss
        if len(blob) != size or trust.content_name(blob) != sha:
            raise Rejected(f"the content for {rel} is not what its entry names ({len(blob)} bytes)")
        # As the linker leaves a library; its sidecar first, as cache.publish does.
        # The local cache full or read-only (False): built here then.
        return write_published(path, blob, 0o700 if rel.endswith(".so") else None)

    # ---- writing ----
    def _writable(self, rel: str, kind: str) -> bool:
        return not self.readonly and kind_of(rel) == kind and self.usable()

    def store_sealed(self, rel: str, name: str, payload: bytes) -> None:
        """The sealed entry `rel` (seal name `name`) was written locally."""
        if not self._writable(rel, "sealed"):
            return
        body = json.dumps({"kind": "sealed", "name": name}).encode() + b"\n" + payload
        self._put(rel, body)

    def store_file(self, rel: str, path: str) -> None:
        """The built file `rel` (at `path`) was published locally."""
        if not self._writable(rel, "file"):
            return
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            return
        sha = trust.content_name(blob)
        try:
            self.store.put("cas", sha, blob)
        except RemoteError as exc:
            self.fail(str(exc))
            return
        self._put(rel, json.dumps({"kind": "file", "sha256": sha, "size": len(blob)}).encode() + b"\n")

    def _put(self, rel: str, body: bytes) -> None:
        name = self.name(rel)
        try:
            self.store.put("ac", name, trust.sign(self.key, name, body))
        except RemoteError as exc:
            self.fail(str(exc))
            return
        self.counts["stored"] += 1
