"""The one table of functions the nx runtime provides to `extern func`.

Why it exists: the checker validates every `extern func NAME(...) -> T`
declaration in a .nx module against this table (name known, parameter and
result types equal), and both backends rely on it: the C emitter calls
``nxrt_<NAME>`` from runtime/nx_runtime.h, the Python backend calls the
same-named function (runtime/nx_f32.py for the float32 ops).  Keeping the
signatures in one place means a new runtime function is added here, in the
header and in the Python module, and nowhere else.

Types are spelled as in nx source: "i64", "bool", "*void".
float32 values are carried as i64 holding the binary32 bits in the low 32
bits (upper 32 bits zero); NaN results are always 0x7FC00000.
"""

# name -> ((parameter types...), result type)
EXTERNS = {
    # float32 arithmetic, round to nearest even, subnormals kept
    "nx_f32_add": (("i64", "i64"), "i64"),
    "nx_f32_sub": (("i64", "i64"), "i64"),
    "nx_f32_mul": (("i64", "i64"), "i64"),
    "nx_f32_div": (("i64", "i64"), "i64"),
    "nx_f32_sqrt": (("i64",), "i64"),
    # float32 quiet comparisons (false if either is NaN; +0 == -0)
    "nx_f32_lt": (("i64", "i64"), "bool"),
    "nx_f32_le": (("i64", "i64"), "bool"),
    "nx_f32_eq": (("i64", "i64"), "bool"),
    # conversions: low 32 bits as int32 -> f32 (RNE); f32 -> int32 truncating,
    # saturating (NaN -> 2147483647), sign-extended to i64
    "nx_i32_to_f32": (("i64",), "i64"),
    "nx_f32_to_i32": (("i64",), "i64"),
    # memory: zeroed, 16-byte aligned, 0 on failure or nbytes <= 0
    "sys_mmap": (("i64",), "*void"),
    "sys_munmap": (("*void", "i64"), "i64"),
    # write(2) to fd 1 or 2: bytes written or -1
    "sys_write": (("i64", "*void", "i64"), "i64"),
    # reading files (nx_src/nx_file.nx): errors are negative return codes, never a trap --
    # -1 cannot open / not an open handle, -2 bad argument (path with a NUL byte, negative
    # size or offset), -3 I/O error, -4 too many open files.
    # open(path bytes, length) -> handle >= 0 (read-only)
    "sys_file_open": (("*u8", "i64"), "i64"),
    # size in bytes of an open file
    "sys_file_size": (("i64",), "i64"),
    # read up to n bytes at offset into buf: bytes read (fewer only at the end of the file)
    "sys_file_read": (("i64", "i64", "*void", "i64"), "i64"),
    # close: 0
    "sys_file_close": (("i64",), "i64"),
    # map(h, offset, n): the n bytes of the open file at offset, mapped read-only (the
    # page cache's pages, not a copy; a store there is a fault), or 0 (not an open handle,
    # n <= 0, offset < 0, past the end of the file, or no mmap here: then read instead).
    # It outlives sys_file_close of its handle.
    "sys_file_map": (("i64", "i64", "i64"), "*u8"),
    # unmap(p, n): ends what sys_file_map returned (n: its length): 0. Checked builds
    # fault on anything else (twice, sys_mmap memory, an address inside a mapping).
    "sys_file_unmap": (("*u8", "i64"), "i64"),
    # threads (runtime/nx_threads.h): sys_parallel_for(task, ctx, n) runs
    # task(ctx, begin, end) over the chunks of [0, n), on the pool's threads,
    # and returns 0 when all have run. `task` must be the NAME of a function
    # `func f(ctx: *void, begin: i64, end: i64)` (the checker refuses anything
    # else: .nx has no function values); items must be independent.
    "sys_parallel_for": (("*void", "*void", "i64"), "i64"),
    # the float32 lanes of the widest vector the build targets: 16 (AVX-512), 8 (AVX), 4
    # (SSE2); the Python backend says 16. A kernel may choose its loop shape by it; its results
    # must not depend on it (each shape is the same scalar sequence per output).
    "sys_vector_lanes": ((), "i64"),
    # sys_prefetch(p): a hint that the memory at p will be read soon (the cache line holding it
    # is fetched while the caller computes); no effect on any result, never a fault, whatever p
    # is. Returns 0. The Python backend does nothing.
    "sys_prefetch": (("*void",), "i64"),
    # nx_f16_to_f32_block(src, dst, n): dst[i] = the float32 bits of IEEE binary16 src[i] for
    # i < n, exactly (NaN -> 0x7FC00000); n <= 0 does nothing. Returns max(n, 0). C converts 16
    # (AVX-512) or 8 (F16C) halves per instruction, exactly as the scalar nx_f16_to_f32; src and
    # dst may overlap (as if src were read first).
    "nx_f16_to_f32_block": (("*u16", "*u32", "i64"), "i64"),
}

# The externs whose first argument is a task: a function's name (see above).
TASK_EXTERNS = frozenset({"sys_parallel_for"})

# The externs that read or write memory given to them, or end a mapping, so that a call can
# fault at its site: checked C calls their nxrt_chk_ twin with the call's site, the Python
# backend passes `site=` (runtime/nx_memory.py). sys_parallel_for: its task may do anything.
SITED_EXTERNS = frozenset({"sys_mmap", "sys_munmap", "sys_write", "sys_file_open", "sys_file_read",
                           "sys_file_map", "sys_file_unmap", "sys_parallel_for", "nx_f16_to_f32_block"})

# The externs with effects beyond their result (memory, or the open files): everything a loop
# that calls one cannot have hoisted (nxc/lower/effects.py). The rest are pure.
MEMORY_EXTERNS = SITED_EXTERNS | {"sys_file_close", "sys_file_size"}

# The externs that are pure float32 operations: no side effects, result
# depends only on the arguments, implemented by nx_runtime.h on C `float`
# (and by nx_f32.py in Python).  It exists for a later unboxing optimisation
# in the C backend: chains of these calls can keep values in `float`
# registers (nxrt_f32_from_bits / nxrt_f32_to_bits at the chain ends) instead
# of bit-casting through int64 at every call.  Being pure, they may also be
# constant-folded, CSE'd or removed when their result is unused.
F32_PRIMITIVES = frozenset({
    "nx_f32_add", "nx_f32_sub", "nx_f32_mul", "nx_f32_div", "nx_f32_sqrt",
    "nx_f32_lt", "nx_f32_le", "nx_f32_eq",
    "nx_i32_to_f32", "nx_f32_to_i32",
})

# For the unboxing pass: what each i64 argument / result of an F32_PRIMITIVES
# function really is -- "f32" (binary32 bits), "i32" (an integer in the low
# 32 bits), or "bool".  Only "f32" positions can be kept as C `float`.
F32_OPERAND_KINDS = {
    "nx_f32_add": (("f32", "f32"), "f32"),
    "nx_f32_sub": (("f32", "f32"), "f32"),
    "nx_f32_mul": (("f32", "f32"), "f32"),
    "nx_f32_div": (("f32", "f32"), "f32"),
    "nx_f32_sqrt": (("f32",), "f32"),
    "nx_f32_lt": (("f32", "f32"), "bool"),
    "nx_f32_le": (("f32", "f32"), "bool"),
    "nx_f32_eq": (("f32", "f32"), "bool"),
    "nx_i32_to_f32": (("i32",), "f32"),
    "nx_f32_to_i32": (("f32",), "i32"),
}

# Prefix of the C implementation of every extern in runtime/nx_runtime.h.
C_PREFIX = "nxrt_"


def c_name(name: str) -> str:
    """C function implementing extern `name` (e.g. nxrt_nx_f32_add)."""
    if name not in EXTERNS:
        raise KeyError(f"unknown runtime extern {name!r}")
    return C_PREFIX + name


assert F32_PRIMITIVES <= EXTERNS.keys()
assert TASK_EXTERNS <= SITED_EXTERNS <= MEMORY_EXTERNS <= EXTERNS.keys()
assert F32_OPERAND_KINDS.keys() == F32_PRIMITIVES
