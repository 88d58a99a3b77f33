"""Deep recursion for the front end and the emitters, without RecursionError;
and the cyclic GC paused while the front end builds what it keeps (`gc_paused`).

The parser's tree builder, the checker, both emitters and pickling the parse
cache walk the AST recursively, one Python (and for pickle, C) frame or a few
per level of nesting. CPython's default limit (1,000 frames on an 8 MB main
thread stack) made 97 nested `if`s or 242 chained casts a traceback. Rather
than rewrite every pass as a loop, the work runs in a thread with a large
stack (STACK_BYTES of address space, touched only as deep as it goes) and a
recursion limit to match; the parser limits nesting to MAX_DEPTH levels
(nxc/syntax/depth.py) with a located error, well within what that stack
holds. Measured: see docs/language.md, "Limits".
"""
from __future__ import annotations

import contextlib
import functools
import gc
import sys
import threading

# 512 MiB of stack: a level of nesting costs at most a few hundred bytes of
# C stack per frame in CPython 3.11 (pickle: ~1 KB per level); the limit
# below keeps Python's own check in front of a real stack overflow.
STACK_BYTES = 512 << 20
RECURSION_LIMIT = 200_000

_local = threading.local()


def deep(fn):
    """Decorator: run `fn` in a big-stack thread (directly when already in one)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_local, "deep", False):
            return fn(*args, **kwargs)
        return run_deep(fn, *args, **kwargs)
    return wrapper


_lock = threading.Lock()


def run_deep(fn, *args, **kwargs):
    result: list = []
    error: list = []

    def body():
        _local.deep = True
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            error.append(exc)

    # The recursion limit is the interpreter's, not the thread's: raised for
    # as long as the deep thread runs (the caller only waits meanwhile).
    with _lock:
        worker = threading.Thread(target=body, name="nxc-deep", daemon=True)
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
        try:
            threading.stack_size(STACK_BYTES)       # applies to threads started from now
            worker.start()
        except (RuntimeError, ValueError):         # no such thread to be had: here, as deep as it goes
            sys.setrecursionlimit(old_limit)
            return fn(*args, **kwargs)
        finally:
            threading.stack_size(old_stack)
        try:
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if error:
        raise error[0].with_traceback(error[0].__traceback__)
    return result[0]


@contextlib.contextmanager
def gc_paused():
    """The front end allocates many small objects and frees none of them
    until it is done: the cyclic GC would only rescan them again and again
    (measured: 100k-line modules parse 1.7x faster without it; the cold
    run's parse-ahead processes ran it ~700 times each)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
