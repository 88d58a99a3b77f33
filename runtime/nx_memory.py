"""Checked memory and run-time traps for nxc's Python backend.

The Python backend exists to say *which .nx line* went wrong where the C
backend only segfaults, so every load and store is checked: null, outside any
mapping, past either end of a mapping, after ``sys_munmap``, misaligned (where
C is undefined), and division or remainder by zero. A fault raises
``NxRuntimeError("path:line:col: runtime error: ...")``, never a traceback.

Layout (AddressSanitizer's idea, in Python)
-------------------------------------------
* One *arena*: an anonymous ``mmap`` reserved with MAP_NORESERVE (lazily
  zero-filled by the kernel, so reserving a large range costs nothing). An nx
  address IS an offset into the arena; addresses below ``NULL_GUARD`` (64 KiB)
  are never mapped, so a null pointer plus a small offset is recognised as
  such. ``sys_mmap`` hands out fresh ranges upward from there, 16-byte
  aligned like the C runtime's calloc, with a guard gap between mappings.
  Address ranges are never reused, so a use after ``sys_munmap`` can always be
  told apart from a wild pointer, and the pages of an unmapped range are given
  back to the kernel (madvise).
* A *shadow* byte per arena byte says which accesses may start there: bit 1 =
  this byte is inside a live mapping, bit 2 / 4 / 8 = a 2- / 4- / 8-byte
  access starting here is aligned and ends inside the mapping. So one test
  ``shadow[a] & size`` checks liveness, bounds and alignment at once. The
  high nibble is the same for stores (``shadow[a] & size << 4``): set in
  sys_mmap's memory, clear in sys_file_map's read-only file mappings.
* The generated code does the fast path itself, inline (no call per access)::

      (_Vq[_a >> 3] if _SH[(_a := ADDR)] & 8 else _ld(_a, SITE))

  and calls back here (``load_fault`` / ``store_fault``) only when the test
  fails: a 64-bit wrap of the address is applied and retried (C's pointer
  arithmetic wraps), otherwise the fault is described and raised. An address
  beyond the arena makes the shadow subscript raise IndexError; the backend
  (nxc/run_py.py) turns that into the same located message with
  ``describe_access``.
* Typed views (memoryview casts) of the arena do the loads and stores at C's
  widths, little-endian, signed views sign-extending.

The arena reserves 256 GiB of address space (MAP_NORESERVE; smaller if the
system refuses or under an address-space limit), shadow likewise. The shadow
costs one byte per mapped byte; for mappings of LAZY_MIN bytes or more it is
written lazily (on the first fault in each chunk), so a mapping costs what is
touched. One mapping may be at most ``max_mapping`` bytes (physical memory by
default, ``NXC_PY_MMAP_MAX`` to change); larger requests, like the C
runtime's impossible ones, return 0.
"""
from __future__ import annotations

import bisect
from array import array
import importlib.util
import mmap as _mmap
import os
import sys


def _faults():
    """nx_faults.py beside this file (the one table of fault words, shared with
    the C backend), loaded by path as this module is."""
    key = "nxc_runtime_nx_faults"
    mod = sys.modules.get(key)
    if mod is None:
        spec = importlib.util.spec_from_file_location(key, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                        "nx_faults.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return mod


_F = _faults()
# The backend words its own faults (stack overflow, the API's reads) from the table too.
fault_text, null_text = _F.fault_text, _F.null_text

__all__ = ["NxRuntimeError", "Runtime", "NULL_GUARD"]

NULL_GUARD = _F.NULL_GUARD     # [0, NULL_GUARD) is the null page: never mapped
_GUARD_GAP = 256              # bytes left unmapped between two mappings
_M64 = (1 << 64) - 1
_PAGE = _mmap.PAGESIZE
_MAP_NORESERVE = getattr(_mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)

# Views of the arena: (format, size) per nx type name. Pointers use "Q".
FORMATS = {"i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
           "i64": "q", "u64": "Q", "ptr": "Q", "bool": "B"}    # bool: the byte (nonzero = true)
SIZES = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8}
SHIFTS = {1: 0, 2: 1, 4: 2, 8: 3}

# Shadow value of byte k of an 8-byte period inside a mapping (k = offset % 8),
# when the mapping extends at least to the end of that period.
# Low nibble: loads; high nibble: stores (clear in a read-only mapping: _PERIOD_RO).
_PERIOD_RO = bytes([15, 1, 3, 1, 7, 1, 3, 1])
_PERIOD = bytes(b | b << 4 for b in _PERIOD_RO)
_CHUNK = 1 << 20
_PATTERN = _PERIOD * (_CHUNK // 8)
_PATTERN_RO = _PERIOD_RO * (_CHUNK // 8)
_ZEROS = bytes(_CHUNK)


class NxRuntimeError(Exception):
    """A run-time fault of nx code; str() is `path:line:col: runtime error: ...`.

    `where` is (absolute path, line, col) of the fault and `what` the bare
    description, when known, so a gate runner reports the site as data.
    """

    def __init__(self, message: str, where: tuple | None = None, what: str | None = None):
        super().__init__(message)
        self.where = where
        self.what = what


def _shadow_byte(off: int, n: int, ro: bool = False, base: int = 0) -> int:
    """Byte `off` of an n-byte mapping at `base` (alignment is the address's)."""
    v = 1
    for size, bit in ((2, 2), (4, 4), (8, 8)):
        if (base + off) % size == 0 and off + size <= n:
            v |= bit
    return v if ro else v | v << 4


def _default_max_mapping() -> int:
    env = os.environ.get("NXC_PY_MMAP_MAX")
    if env:
        try:
            return max(int(env, 0), 0)
        except ValueError:
            pass
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 8 << 30
    # The shadow of a large mapping is written only where it is used (see
    # LAZY_MIN), so a mapping costs what the gate touches, as calloc does.
    return max(phys, 1 << 28)


def _address_space_left() -> int | None:
    """Bytes of address space this process may still map (RLIMIT_AS), or None."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * _PAGE
    except (OSError, ValueError, IndexError):
        used = 1 << 30
    return max(soft - used, 0)


def _reserve(nbytes: int):
    """An anonymous mmap of up to nbytes (halving until the system agrees)."""
    flags = _mmap.MAP_PRIVATE | getattr(_mmap, "MAP_ANONYMOUS", getattr(_mmap, "MAP_ANON", 0x20)) | _MAP_NORESERVE
    size = nbytes
    while size >= 1 << 24:
        try:
            return _mmap.mmap(-1, size, flags=flags), size
        except (OSError, OverflowError, ValueError):
            size >>= 1
    raise MemoryError("cannot reserve an arena for the nx Python backend")


# A mapping this large gets its shadow written lazily, a chunk (_CHUNK bytes)
# at a time on the first access there (the inline test fails on the zero
# shadow and the fault handler writes it): a mapping costs what is touched.
LAZY_MIN = 1 << 22


class _Mapping:
    __slots__ = ("base", "size", "site", "unmap_site", "lazy", "ro")

    def __init__(self, base, size, site, ro=False):
        self.base, self.size, self.site, self.unmap_site = base, size, site, None
        self.lazy = False
        self.ro = ro          # sys_file_map's: no store may reach it

    @property
    def maker(self) -> str:
        return "sys_file_map" if self.ro else "sys_mmap"

    @property
    def end(self):
        return self.base + self.size


class Runtime:
    """Memory, traps and gate bookkeeping of one loaded nx program.

    ``sites`` is the generated module's table: index -> (file, line, col,
    kind, type) where file indexes ``files`` (paths) and kind is "r"/"w"
    (type = nx type name of the access), "div"/"rem", "mmap", "munmap" or
    "write".
    """

    def __init__(self, sites=(), files=(), arena_bytes: int = 1 << 38, max_mapping: int | None = None):
        self.sites = sites
        self.files = files
        self.gate_site = -1
        # The operands of the guard of the gate return that fired (nxc/guards.py):
        # slot -> value, None for an operand && / || did not evaluate.
        self.captured = {}
        left = _address_space_left()
        if left is not None:
            # Under an address-space limit (ulimit -v), arena and shadow take
            # at most a third of what is left each: the rest is Python's.
            arena_bytes = min(arena_bytes, max(left // 3 // _PAGE * _PAGE, 1 << 24))
        self.arena, self.arena_size = _reserve(arena_bytes)
        self.shadow_map, _ = _reserve(self.arena_size)
        self.limit = self.arena_size // 2     # negative addresses alias the top half: keep it unmapped
        self.shadow = memoryview(self.shadow_map)
        self.views = {fmt: memoryview(self.arena).cast(fmt) for fmt in SIZES}
        self.max_mapping = _default_max_mapping() if max_mapping is None else max_mapping
        self.top = NULL_GUARD
        self.bases: list[int] = []            # sorted (addresses only grow)
        self.maps: list[_Mapping] = []
        self.live: dict[int, _Mapping] = {}
        self.open_files: dict[int, int] = {}  # sys_file_open handle -> OS file descriptor
        # Every path sys_file_open tried, with whether it opened (the runner keys a
        # cached pass on those files: nxc/gates/inputs.py); None once past FILE_LOG_MAX.
        self.files_opened: list | None = []
        # sys_parallel_for (runtime/nx_threads.h): the thread count the C
        # runtime would split for (only the chunks' bounds depend on it, never
        # a result), and whether a task is running (a nested call runs inline).
        self.threads = 1
        self.in_task = False

    def close(self) -> None:
        """Release the arena (the loaded module must not run afterwards)."""
        for fd in self.open_files.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.open_files.clear()
        for v in self.views.values():
            v.release()
        self.shadow.release()
        self.arena.close()
        self.shadow_map.close()

    # ---- positions and messages ----
    def where(self, site: int) -> str:
        if 0 <= site < len(self.sites):
            s = self.sites[site]
            path = self.files[s[0]] if isinstance(s[0], int) else s[0]
            return f"{_display(path)}:{s[1]}:{s[2]}"
        return "<unknown>"

    def error(self, site: int, what: str) -> NxRuntimeError:
        where = None
        if 0 <= site < len(self.sites):
            s = self.sites[site]
            where = (self.files[s[0]] if isinstance(s[0], int) else s[0], s[1], s[2])
        return NxRuntimeError(f"{self.where(site)}: runtime error: {what}", where, what)

    def _site_text(self, site) -> str:
        return self.where(site) if site is not None and site >= 0 else "an unknown place"

    # ---- the nx system interface ----
    def sys_mmap(self, nbytes: int, site: int = -1) -> int:
        return self._new_mapping(nbytes, site)

    def _new_mapping(self, nbytes: int, site: int, ro: bool = False, phase: int = 0) -> int:
        """A fresh mapping's base (0 if none): sys_mmap's, or with `ro` a read-only one
        whose base is `phase` bytes past a page (as the C runtime's sys_file_map)."""
        if nbytes <= 0 or nbytes > self.max_mapping:
            return 0
        align = 16 if nbytes < _PAGE and not ro else _PAGE
        base = (self.top + _GUARD_GAP + align - 1) // align * align + phase
        fresh = base + nbytes <= self.limit
        if not fresh:
            # The address range is used up: reuse the first hole that
            # unmapped ranges left (a use after unmap there is no longer
            # told apart), as a small arena under `ulimit -v` needs.
            base = self._hole(nbytes + phase, align)
            if base is None:
                return 0
            base += phase
        lazy = nbytes >= LAZY_MIN
        try:
            if lazy:
                self._fill_shadow_tail(base, nbytes, ro)
            else:
                self._fill_shadow(base, nbytes, ro)
        except (MemoryError, OSError):
            self._clear_shadow(base, nbytes)
            return 0
        m = _Mapping(base, nbytes, site, ro)
        m.lazy = lazy
        if fresh:
            self.top = base + nbytes
            self.bases.append(base)
            self.maps.append(m)
        else:
            self._replace_unmapped(m)
        self.live[base] = m
        return base

    def _hole(self, nbytes: int, align: int):
        """The lowest aligned base where nbytes fit between live mappings."""
        start = NULL_GUARD
        for m in sorted(self.live.values(), key=lambda m: m.base):
            base = (start + _GUARD_GAP + align - 1) // align * align
            if base + nbytes + _GUARD_GAP <= m.base:
                return base
            start = m.end
        base = (start + _GUARD_GAP + align - 1) // align * align
        return base if base + nbytes <= self.limit else None

    def _replace_unmapped(self, m: "_Mapping") -> None:
        """Put a mapping that reuses addresses into the sorted lists, dropping
        the records of unmapped ranges it overlaps."""
        keep = [old for old in self.maps if old.end + _GUARD_GAP <= m.base or old.base >= m.end + _GUARD_GAP
                or old.base in self.live]
        i = bisect.bisect_left([old.base for old in keep], m.base)
        keep.insert(i, m)
        self.maps = keep
        self.bases = [old.base for old in keep]

    def sys_munmap(self, p: int, nbytes: int, site: int = -1) -> int:
        return self._unmap(p, site, "sys_munmap")

    def _unmap(self, p: int, site: int, fn: str) -> int:
        """sys_munmap (fn) or sys_file_unmap: the faults of nxrt_take_live, in its order."""
        if p == 0:
            return 0                          # like free(NULL)
        m = self.live.get(p)
        if m is None:
            old = self._find(p)
            if old is not None and old.base == p and old.unmap_site is not None:
                raise self.error(site, _F.fault_text("munmap_twice", a=p, length=old.size, fn=fn,
                                                     unmapped_at=self._site_text(old.unmap_site)))
            if old is not None and old.unmap_site is None:
                raise self.error(site, _F.fault_text("munmap_inside", a=p, offset=p - old.base, length=old.size,
                                                     base=old.base, fn=fn))
            raise self.error(site, _F.fault_text("munmap_unknown", a=p, fn=fn, maker=_F.MAKER_OF[fn]))
        if _F.UNMAP_OF[m.maker] != fn:
            raise self.error(site, _F.fault_text("unmap_kind", a=p, length=m.size, fn=fn, maker=m.maker))
        del self.live[p]
        m.unmap_site = site
        first = (m.base + _PAGE - 1) // _PAGE * _PAGE
        last = m.end // _PAGE * _PAGE
        if last > first and hasattr(self.arena, "madvise"):
            # The whole pages go back to the kernel, of the memory and of its
            # shadow (they read as zero again: not mapped); only the partial
            # pages at the ends are cleared by hand. Before, the shadow was
            # only zeroed, so it stayed resident: 20 rounds of 128 MiB peaked
            # at 2.6 GB.
            self._clear_shadow(m.base, first - m.base)
            self._clear_shadow(last, m.end - last)
            for mapping in (self.arena, self.shadow_map):
                try:
                    mapping.madvise(_mmap.MADV_DONTNEED, first, last - first)
                except (OSError, ValueError, AttributeError):
                    if mapping is self.shadow_map:
                        self._clear_shadow(first, last - first)
        else:
            self._clear_shadow(m.base, m.size)
        return 0

    def nx_f16_to_f32_block(self, src: int, dst: int, n: int, site: int = -1) -> int:
        """dst[i] = the float32 bits of binary16 src[i], i < n (nxrt_nx_f16_to_f32_block): every
        half read before any word is written (so overlap reads as in C), NaN canonical. Both
        ranges are checked first, src as read, dst as written, in checked C's words."""
        if n <= 0:
            return 0
        m = min(n, 1 << 60)
        self._extern_range(src, 2 * m, site)
        self._extern_range(dst, 4 * m, site, store=True)
        halves = array("H", bytes(self.arena[src:src + 2 * n]))      # nx memory is little-endian
        if sys.byteorder != "little":
            halves.byteswap()
        words = array("I", (_f16_bits(h) for h in halves))
        if sys.byteorder != "little":
            words.byteswap()
        self.arena[dst:dst + 4 * n] = words.tobytes()
        return n

    def sys_vector_lanes(self) -> int:
        """The lanes a kernel may shape its loops for (nxrt_sys_vector_lanes in C). Any value
        gives the same results; 16, the AVX-512 shape, so that the Python backend runs the
        shape the fastest C builds run."""
        return 16

    def sys_prefetch(self, p: int) -> int:
        """A cache hint in C (nxrt_sys_prefetch); nothing to do here, and never a fault."""
        return 0

    def sys_parallel_for(self, task, ctx: int, n: int, site: int = -1) -> int:
        """task(ctx, begin, end) over the chunks of [0, n) the C pool would
        make for `self.threads` threads, one after the other, in order: the
        same items, so the same results (nx_threads.h states the contract)."""
        if n <= 0:
            return 0
        grain = parallel_grain(n, min(self.threads, n))
        if self.in_task:                      # a nested call: in order, as C runs it
            for b in range(0, n, grain):
                task(ctx, b, min(b + grain, n))
            return 0
        self.in_task = True
        try:
            for b in range(0, n, grain):
                task(ctx, b, min(b + grain, n))
        finally:
            self.in_task = False
        return 0

    def sys_write(self, fd: int, buf: int, n: int, site: int = -1) -> int:
        if fd not in (1, 2) or n < 0 or (buf == 0 and n > 0):
            return -1
        done = 0
        while done < n:
            k = min(n - done, _CHUNK)
            a = buf + done
            bad = self._first_invalid(a, k)
            if bad is not None:
                raise self.error(site, "sys_write: " + self._describe(bad, 1, "read of u8"))
            data = bytes(self.arena[a:a + k])
            off = 0
            while off < len(data):
                try:
                    w = os.write(fd, data[off:])
                except InterruptedError:
                    continue
                except OSError:
                    return done if done > 0 else -1
                if w == 0:
                    return done
                off += w
                done += w
        return done

    # ---- reading files (sys_file_*): errors are negative codes, like the C runtime ----
    # Handles are small integers into self-owned OS file descriptors. A path or buffer that
    # is not n bytes of nx memory is a memory fault, located at the call, before anything
    # else is looked at, in the words of checked C (nxrt_chk_sys_file_open/_read): a
    # return code here would make the backends disagree.
    FILE_ERR_OPEN, FILE_ERR_ARG, FILE_ERR_IO, FILE_ERR_TOO_MANY = -1, -2, -3, -4
    MAX_FILES = 64

    def _files(self) -> dict:
        return self.open_files

    def _extern_range(self, a: int, n: int, site: int, store: bool = False) -> None:
        """nxrt_chk_range: [a, a + n) must be valid nx memory (not read-only, if the
        extern writes there: `store`), else a located fault."""
        if n > 0 and self._first_invalid(a, n) is not None:
            raise self.error(site, self._describe(a, n, "access"))
        if n > 0 and store:
            m = self._find(a)
            if m is not None and m.ro:
                raise self.error(site, _F.fault_text("readonly", what="access", a=a, offset=a - m.base, length=m.size,
                                                     base=m.base, mapped_at=self._mapped_at(m)))

    def sys_file_open(self, path: int, n: int, site: int = -1) -> int:
        self._extern_range(path, n, site)
        if path == 0 or n <= 0 or n > 4096:
            return self.FILE_ERR_ARG
        name = bytes(self.arena[path:path + n])
        if b"\0" in name:
            return self.FILE_ERR_ARG
        files = self._files()
        h = next((i for i in range(self.MAX_FILES) if i not in files), None)
        if h is None:
            return self.FILE_ERR_TOO_MANY
        try:
            files[h] = os.open(name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            self._note_open(name, False)
            return self.FILE_ERR_OPEN
        if not _is_regular(files[h]):
            os.close(files.pop(h))
            self._note_open(name, False)
            return self.FILE_ERR_OPEN
        self._note_open(name, True)
        return h

    FILE_LOG_MAX = 4096

    def _note_open(self, name: bytes, opened: bool) -> None:
        log = self.files_opened
        if log is not None:
            log.append((os.fsdecode(name), opened))
            if len(log) > self.FILE_LOG_MAX:
                self.files_opened = None

    def sys_file_size(self, h: int, site: int = -1) -> int:
        fd = self._files().get(h)
        if fd is None:
            return self.FILE_ERR_OPEN
        try:
            return os.fstat(fd).st_size
        except OSError:
            return self.FILE_ERR_IO

    def sys_file_read(self, h: int, offset: int, buf: int, n: int, site: int = -1) -> int:
        self._extern_range(buf, n, site, store=True)
        fd = self._files().get(h)
        if fd is None:
            return self.FILE_ERR_OPEN
        if offset < 0 or n < 0:
            return self.FILE_ERR_ARG
        done = 0
        while done < n:
            try:
                data = os.pread(fd, min(n - done, _CHUNK), offset + done)
            except OSError:
                return self.FILE_ERR_IO
            if not data:
                break
            self.arena[buf + done:buf + done + len(data)] = data
            done += len(data)
        return done

    def sys_file_map(self, h: int, offset: int, n: int, site: int = -1) -> int:
        """nxrt_sys_file_map's answers, the mapping read-only. This arena cannot map a
        file's pages into itself (no MAP_FIXED here), so the bytes are read into it:
        the same bits and faults as checked C, not its memory use."""
        fd = self._files().get(h)
        if fd is None or offset < 0 or n <= 0:
            return 0
        size = self.sys_file_size(h)
        if size < 0 or offset > size or n > size - offset:
            return 0
        base = self._new_mapping(n, site, ro=True, phase=offset % _PAGE)
        if base == 0:
            return 0
        done = 0
        while done < n:
            try:
                data = os.pread(fd, min(n - done, _CHUNK), offset + done)
            except OSError:
                data = b""
            if not data:                          # the file shrank, or an I/O error
                self._unmap(base, site, "sys_file_unmap")
                return 0
            self.arena[base + done:base + done + len(data)] = data
            done += len(data)
        return base

    def sys_file_unmap(self, p: int, n: int, site: int = -1) -> int:
        return self._unmap(p, site, "sys_file_unmap")

    def sys_file_close(self, h: int, site: int = -1) -> int:
        fd = self._files().pop(h, None)
        if fd is None:
            return self.FILE_ERR_OPEN
        try:
            os.close(fd)
        except OSError:
            return self.FILE_ERR_IO
        return 0

    # ---- fast-path fallbacks, called by the generated code ----
    def load_fault(self, a: int, site: int):
        """The shadow test failed for a load: write the shadow of a lazy
        mapping there, retry the 64-bit-wrapped address, else raise."""
        ty = self.sites[site][4]
        fmt = FORMATS[ty]
        size = SIZES[fmt]
        w = a & _M64
        if w < self.limit and (w != a or self._materialise(w)) and self.shadow[w] & size:
            return self.views[fmt][w >> SHIFTS[size]]
        raise self.error(site, self._describe(a, size, f"read of {ty}"))

    def store_fault(self, a: int, site: int) -> int:
        """The shadow test failed for a store: the element index of the wrapped address, else raise."""
        ty = self.sites[site][4]
        size = SIZES[FORMATS[ty]]
        w = a & _M64
        if w < self.limit and (w != a or self._materialise(w)) and self.shadow[w] & size << 4:
            return w >> SHIFTS[size]
        raise self.error(site, self._describe(a, size, f"write of {ty}", store=True))

    def _materialise(self, a: int) -> bool:
        """Write the shadow of the chunk around `a` if it lies in a live lazy
        mapping whose shadow is not written there yet; whether it did."""
        m = self._find(a)
        if m is None or not m.lazy or m.unmap_site is not None or self.live.get(m.base) is not m:
            return False
        chunk = a // _CHUNK * _CHUNK            # chunks aligned to _CHUNK in the arena
        lo, hi = max(m.base, chunk), min(m.end - 8, chunk + _CHUNK)
        if hi <= lo or self.shadow[lo] != 0:
            return False
        pattern, period = (_PATTERN_RO, _PERIOD_RO) if m.ro else (_PATTERN, _PERIOD)
        self._fill_chunks(lo, hi - lo, pattern[lo % 8:] + period)     # bits by the address's alignment
        return True

    def describe_access(self, a: int, site: int) -> NxRuntimeError:
        """The fault for an access whose shadow test raised (address beyond the arena)."""
        s = self.sites[site]
        ty = s[4]
        size = SIZES[FORMATS[ty]]
        op = "read" if s[3] == "r" else "write"
        return self.error(site, self._describe(a, size, f"{op} of {ty}", store=op == "write"))

    # ---- integer traps ----
    def div_fns(self, bits: int, signed: bool):
        """(div, rem) for one integer type: C's truncating / and %, a trap on zero."""
        err = self.error
        if not signed:
            def div(a, b, site):
                if b:
                    return a // b
                raise err(site, "division by zero")

            def rem(a, b, site):
                if b:
                    return a % b
                raise err(site, "remainder by zero")
            return div, rem
        H = 1 << (bits - 1)

        def sdiv(a, b, site):
            if b > 0:
                return a // b if a >= 0 else -(-a // b)
            if b < 0:
                if a >= 0:
                    return -(a // -b)
                q = -a // -b
                return q if q != H else -H      # MIN / -1 wraps to MIN
            raise err(site, "division by zero")

        def srem(a, b, site):
            if b:
                if b < 0:
                    b = -b
                return a % b if a >= 0 else -(-a % b)   # sign of the dividend; MIN % -1 == 0
            raise err(site, "remainder by zero")
        return sdiv, srem

    # ---- convenience for callers of the Python API and tests ----
    def check_range(self, a: int, n: int) -> None:
        bad = self._first_invalid(a, n)
        if bad is not None:
            raise NxRuntimeError("runtime error: " + self._describe(bad, 1, "access of u8"))

    def read_bytes(self, a: int, n: int) -> bytes:
        self.check_range(a, n)
        return bytes(self.arena[a:a + n])

    def write_bytes(self, a: int, data: bytes) -> None:
        self.check_range(a, len(data))
        self.arena[a:a + len(data)] = bytes(data)

    # ---- internals ----
    def _fill_shadow(self, base: int, n: int, ro: bool = False) -> None:
        # (a file mapping's base need not be 8-aligned: the pattern starts at its phase)
        pattern, period = (_PATTERN_RO, _PERIOD_RO) if ro else (_PATTERN, _PERIOD)
        self._fill_chunks(base, n, pattern[base % 8:] + period if base % 8 else pattern)
        self._fill_shadow_tail(base, n, ro)

    def _fill_shadow_tail(self, base: int, n: int, ro: bool = False) -> None:
        for o in range(max(n - 8, 0), n):       # the tail: shorter accesses only
            self.shadow[base + o] = _shadow_byte(o, n, ro, base)

    def _clear_shadow(self, base: int, n: int) -> None:
        self._fill_chunks(base, n, _ZEROS)

    def _fill_chunks(self, base: int, n: int, pattern) -> None:
        """shadow[base:base+n] = pattern repeated, in slices of at most _CHUNK."""
        sh = self.shadow
        off = 0
        while off < n:
            k = min(n - off, _CHUNK)
            sh[base + off:base + off + k] = pattern[:k]
            off += k

    def _first_invalid(self, a: int, n: int):
        if n <= 0:
            return None
        if a < 0 or a + n > self.limit:
            return a if a < 0 or a >= self.limit else self.limit
        self._materialise_range(a, n)
        chunk = bytes(self.shadow[a:a + n])
        i = chunk.find(0)
        return None if i < 0 else a + i

    def _materialise_range(self, a: int, n: int) -> None:
        """Write the lazy shadow of every chunk of [a, a+n) (whole-range checks)."""
        i = max(bisect.bisect_right(self.bases, a) - 1, 0)
        while i < len(self.maps) and self.maps[i].base < a + n:
            m = self.maps[i]
            if m.lazy and self.live.get(m.base) is m:
                c = max(a, m.base) // _CHUNK * _CHUNK
                while c < min(a + n, m.end):
                    self._materialise(max(c, m.base))
                    c += _CHUNK
            i += 1

    def _find(self, a: int):
        """The mapping (live or unmapped) whose range holds address a, if any."""
        i = bisect.bisect_right(self.bases, a) - 1
        if i >= 0:
            m = self.maps[i]
            if a < m.base + max(m.size, 1):
                return m
        return None

    def _describe(self, a: int, size: int, what: str, store: bool = False) -> str:
        """Why an access of `size` bytes at `a` is invalid, in the words of a C programmer
        (`store`: it writes, so a read-only mapping is a reason too)."""
        w = a & _M64
        if w < NULL_GUARD or w >= (1 << 64) - NULL_GUARD:
            return _F.null_text(what, w)
        m = self._find(w)
        if m is not None and m.unmap_site is not None:
            return _F.fault_text("unmapped", what=what, a=w, offset=w - m.base, length=m.size, base=m.base,
                                 mapped_at=self._mapped_at(m), unmapped_at=self._site_text(m.unmap_site),
                                 fn=_F.UNMAP_OF[m.maker])
        if m is not None:
            if w + size > m.end:
                return self._oob(w, size, what, m)
            if w % size:
                return _F.fault_text("misaligned", what=what, a=w, size=size)
            if store and m.ro and w == a:
                return _F.fault_text("readonly", what=what, a=w, offset=w - m.base, length=m.size, base=m.base,
                                     mapped_at=self._mapped_at(m))
            if w != a:
                return (f"{what}: the address computation overflowed 64 bits (0x{a:x} wraps to "
                        f"0x{w:x}): pointer arithmetic overflow is undefined in C")
            return f"{what} at 0x{w:x}: invalid access"           # pragma: no cover - defensive
        # Not inside any mapping: name the nearest one, if it is close.
        i = bisect.bisect_right(self.bases, w) - 1
        prev = self.maps[i] if i >= 0 else None
        nxt = self.maps[i + 1] if i + 1 < len(self.maps) else None
        if nxt is not None and nxt.base - w < 1 << 16 and w + size > nxt.base - (1 << 16) \
                and (prev is None or nxt.base - w < w - prev.end):
            return _F.fault_text("before", what=what, a=w, before=nxt.base - w, length=nxt.size, base=nxt.base,
                                 mapped_at=self._mapped_at(nxt))
        if prev is not None and w - prev.end < 1 << 16:
            return self._oob(w, size, what, prev)
        return _F.fault_text("wild", what=what, a=w)

    def _oob(self, w: int, size: int, what: str, m: _Mapping) -> str:
        gone = "" if m.unmap_site is None else _F.suffix("gone", where=self._site_text(m.unmap_site))
        return _F.fault_text("oob", what=what, a=w, offset=w - m.base, length=m.size, base=m.base,
                             mapped_at=self._mapped_at(m), gone=gone)

    def _mapped_at(self, m: _Mapping) -> str:
        return _F.suffix("mapped_at", where=self.where(m.site)) if m.site is not None and m.site >= 0 else ""


def _f16_bits(h: int) -> int:
    """The float32 bits of binary16 bits h, exactly (NaN -> 0x7FC00000): nx_f16_to_f32's rule,
    written again here (nxrt_f16_bits in C) so that each backend stands on its own."""
    sign, e, m = (h & 0x8000) << 16, (h >> 10) & 0x1F, h & 0x3FF
    if e == 0x1F:
        return 0x7FC00000 if m else sign | 0x7F800000
    if e == 0:
        if m == 0:
            return sign
        p = m.bit_length() - 1                                # m * 2^-24 = 2^(p-24) * 1.f
        return sign | ((p - 24 + 127) << 23) | ((m << (23 - p)) & 0x7FFFFF)
    return sign | ((e - 15 + 127) << 23) | (m << 13)


def parallel_grain(n: int, threads: int) -> int:
    """Items per chunk of sys_parallel_for (nxrt_grain in runtime/nx_threads.c)."""
    return n if threads <= 1 else -(-n // (threads * 4))


def _is_regular(fd: int) -> bool:
    """True for a regular file (the C runtime's fopen("rb") + fseek also refuse a directory)."""
    import stat
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
