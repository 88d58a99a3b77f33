"""Collection for `nxc test` and the pytest plugin: which modules, which items.

Every `.nx` file under the given paths. A module with `func main() -> i64` is
a gate; one without is a library module, which is an item too: it passes
when it compiles. A library module that `nxc port --stubs` wrote (a line
starting with STUB_MARK) is a stub: it is run as a library and reported as
STUB, not as a pass, since its functions return placeholders. The kind is read from the text alone (no parse), which
keeps collection fast; the front end confirms it when the item runs. `-k`
selects items with pytest's keyword expressions.
"""
from __future__ import annotations

import os
import re
import stat
import sys
from dataclasses import dataclass

from nxc.cache import read_bytes
from nxc.diagnostics import display_path
from nxc.syntax.scan import text_kind


class UsageError(Exception):
    """A mistake on the command line (bad path, bad -k expression)."""


@dataclass
class Item:
    """One collected test: a module on one backend."""
    id: str
    path: str               # absolute
    display: str            # as the user would type it
    backend: str
    kind: str               # "gate" | "library" | "stub" (from a quick look at the text; confirmed by the front end)
    main_line: int = 0      # 1-based line of `func main`, 0 if none
    # Its real path: what the module index, the result cache and the last
    # failures know it by. Collection finds it with the file's lstat; given
    # none, os.path.realpath's (an lstat per folder of the path: called by
    # each stage, that was 3,800 calls in a no-change run of 800 gates).
    real: str = ""

    def __post_init__(self):
        if not self.real:
            self.real = os.path.realpath(self.path)


@dataclass
class Unit:
    """One module and the backends to run it on: the front end runs once for all."""
    path: str
    display: str
    items: list             # [Item], one per backend
    # The module index's view of its import closure, when the runner had one
    # (nxc/gates/nochange.py): {real path: {"digest", "interface", "imports":
    # [real paths]}}; lets a worker take the recorded path (recorded_run.py).
    indexed: dict | None = None
    # Why the runner's planner did not find it cached (nxc/incremental/plan.py).
    plan_reason: str = ""
    # Build its objects and records only, and run it in a second round, after
    # the gates that import it, from one of their libraries (plan.build_order).
    run_later: bool = False
    real: str = ""          # its real path (Item.real)

    def __post_init__(self):
        if not self.real:
            self.real = self.items[0].real if self.items else os.path.realpath(self.path)



def find_modules(paths: list[str], skipped: list | None = None) -> list[str]:
    """Absolute paths of the .nx files under `paths`, in a stable order, each once.

    Only regular files (or links to them) are modules: a FIFO would hang the
    collection and a link to /dev/zero read without end. Each one left out
    is added to `skipped` as (path, why).
    """
    return [path for path, _ in module_files(paths, skipped)]


def module_files(paths: list[str], skipped: list | None = None, plain: set | None = None) -> list[tuple[str, str]]:
    """(absolute path, real path) of each module find_modules finds. `plain`:
    gets the real path of each one found in a folder's listing as a regular
    file that is no link (the module index then resolves an import of it
    without another lstat: ModuleIndex.note_plain)."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    cwd = os.getcwd()           # once: os.path.abspath asks for it per path

    def add(p: str, real: str | None = None) -> None:
        if real is None:
            why = not_a_module_file(p)
            if why is not None:
                if skipped is not None:
                    skipped.append((p, why))
                return
            real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            found.append((os.path.normpath(os.path.join(cwd, p)), real))

    for p in paths:
        if os.path.isfile(p) or (os.path.lexists(p) and not os.path.isdir(p)):
            add(p)                  # named explicitly: taken whatever its suffix
        elif os.path.isdir(p):
            for folder, dirs, files in _walk(p):
                dirs[:] = sorted(d for d in dirs if not skipped_dir(folder, d))
                real_folder = None
                for entry in sorted(files, key=lambda e: e.name):
                    name = entry.name
                    if name.endswith(".nx"):
                        path = os.path.join(folder, name)
                        # A regular file that is no link: its real path is its
                        # folder's, once per folder, and its name.
                        try:
                            regular = entry.is_file(follow_symlinks=False)
                        except OSError:
                            regular = False
                        if regular and real_folder is None:
                            real_folder = os.path.realpath(folder)
                        real = os.path.join(real_folder, name) if regular else None
                        if real is not None and plain is not None:
                            plain.add(real)
                        add(path, real)
        else:
            raise UsageError(f"no such file or folder: '{p}'")
    return found


def _walk(top: str):
    """os.walk(top): top-down, the caller's changes to the folder names are
    what it walks into, a link to a folder is listed but not entered, an
    unreadable folder is left out; but each file comes as its os.DirEntry,
    whose type the folder's listing gave (d_type): no lstat per file, which
    after the page cache was dropped cost ~50 us each in a no-change run."""
    try:
        with os.scandir(top) as listing:
            entries = list(listing)
    except OSError:
        return
    dirs, files = [], []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            dirs.append(entry.name)
        else:
            files.append(entry)
    yield top, dirs, files
    for name in dirs:
        sub = os.path.join(top, name)
        if not os.path.islink(sub):
            yield from _walk(sub)


def not_a_module_file(path: str) -> str | None:
    """Why `path` cannot be read as a module (None: it is a regular file)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(st.st_mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
    kind = next((name for test, name in kinds if test(st.st_mode)), "not a regular file")
    return f"{kind}{' (through a link)' if os.path.islink(path) else ''}, not a regular file"


def skipped_dir(parent: str, name: str) -> bool:
    """Hidden folders, __pycache__ and virtual environments hold no modules of the tree."""
    return (name.startswith(".") or name == "__pycache__"
            or os.path.isfile(os.path.join(parent, name, "pyvenv.cfg")))


def scan_kind(path: str) -> tuple[str, int]:
    """("gate" | "library" | "stub", line of `func main`), from the text alone (no parse).

    Collection stays fast (pytest-xdist collects on every worker); the front
    end confirms the kind when the item runs.
    """
    try:
        text = read_bytes(path).decode("utf-8", "replace")
    except OSError:
        return "library", 0
    return text_kind(text)


def item_id(display: str, backend: str, backends) -> str:
    return f"{display}[{backend}]" if len(backends) > 1 else display


def collect(paths: list[str], backends=("c",), keyword: str | None = None, index=None) -> list[Item]:
    """index: the module index (nxc/incremental/index.py), whose entries
    give the kind of each file whose stat has not changed since (no read)."""
    match = KeywordExpression(keyword) if keyword else None
    items = []
    skipped: list = []
    plain: set[str] = set()
    modules = module_files(paths, skipped, plain)
    if index is not None:
        index.note_plain(plain)
    for path, why in skipped:               # on stderr: --json keeps stdout to itself
        print(f"nxc test: note: skipped '{display_path(path)}': {why}", file=sys.stderr)
    cwd = os.getcwd()
    for path, real in modules:
        display = display_path(path, cwd)
        known = index.known_kind(real, scan_kind) if index is not None else None
        kind, main_line = known if known is not None else scan_kind(path)
        for b in backends:
            item = Item(item_id(display, b, backends), path, display, b, kind, main_line, real)
            if match is None or match.matches(item_words(item)):
                items.append(item)
    return items


def item_words(item: Item) -> list[str]:
    name = os.path.basename(item.path)
    return [item.id, name, os.path.splitext(name)[0], item.kind, item.backend]


def group_units(items: list[Item]) -> list[Unit]:
    units: dict[str, Unit] = {}
    for it in items:
        units.setdefault(it.path, Unit(it.path, it.display, [], real=it.real)).items.append(it)
    return list(units.values())


class KeywordExpression:
    """`-k`: pytest's keyword expressions: words (case-insensitive substrings of
    an item's id, file name, kind or backend) combined with `and`, `or`, `not`
    and parentheses."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = re.findall(r"\(|\)|[^\s()]+", text)
        self.i = 0
        if not self.tokens:
            raise UsageError("-k: empty expression")
        self.tree = self._or()
        if self.i != len(self.tokens):
            raise UsageError(f"-k: unexpected '{self.tokens[self.i]}' in '{text}'")

    def _peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _take(self):
        tok = self._peek()
        if tok is None:
            raise UsageError(f"-k: '{self.text}' ends too early")
        self.i += 1
        return tok

    def _or(self):
        node = self._and()
        while self._peek() == "or":
            self.i += 1
            node = ("or", node, self._and())
        return node

    def _and(self):
        node = self._not()
        while self._peek() == "and":
            self.i += 1
            node = ("and", node, self._not())
        return node

    def _not(self):
        tok = self._take()
        if tok == "not":
            return ("not", self._not())
        if tok == "(":
            node = self._or()
            if self._take() != ")":
                raise UsageError(f"-k: missing ')' in '{self.text}'")
            return node
        if tok in (")", "and", "or"):
            raise UsageError(f"-k: unexpected '{tok}' in '{self.text}'")
        return ("word", tok.lower())

    def matches(self, words: list[str]) -> bool:
        low = [w.lower() for w in words]

        def ev(node) -> bool:
            op = node[0]
            if op == "word":
                return any(node[1] in w for w in low)
            if op == "not":
                return not ev(node[1])
            if op == "and":
                return ev(node[1]) and ev(node[2])
            return ev(node[1]) or ev(node[2])
        return ev(self.tree)
