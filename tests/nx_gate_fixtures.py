"""One small .nx module per runner outcome, shared by the runner and plugin tests."""
from __future__ import annotations

import os
import textwrap

FILES = {
    # PASS, and it imports the library module beside it.
    "pass.nx": """
        // a gate that passes
        import "lib.nx"

        func main() -> i64 {
            if twice(21) != 42 { return 1 }
            return 0
        }
    """,
    # A library module: no main, it must compile.
    "lib.nx": """
        // a library module
        func twice(x: i64) -> i64 {
            return x * 2
        }
    """,
    # FAIL 10, with the guard's operands r = 3 and NX_OK = 0.
    "fail.nx": """
        // a gate that fails its second check
        const NX_OK: i64 = 0

        func step(x: i64) -> i64 {
            return x + 2
        }

        func main() -> i64 {
            let r: i64 = step(1)
            if r < 0 { return 5 }
            if r != NX_OK { return 10 }
            return 0
        }
    """,
    "compile_error.nx": """
        func main() -> i64 {
            let count: i64 = 1
            return coutn
        }
    """,
    # A write through a null pointer: a located RUNTIME-ERROR on the default
    # (checked) C backend, CRASH (SIGSEGV) with --unchecked.
    "crash.nx": """
        func main() -> i64 {
            let p: *i64 = 0 as *i64
            p[0] = 1
            return 0
        }
    """,
    # TIMEOUT: never returns.
    "hang.nx": """
        func main() -> i64 {
            while true { }
        }
    """,
    # RUNTIME-ERROR: division by zero, located.
    "divzero.nx": """
        func main() -> i64 {
            var z: i64 = 0
            return 10 / z
        }
    """,
}

# What each module's item must come out as.
EXPECTED = {
    "pass.nx": "PASS",
    "lib.nx": "PASS",
    "fail.nx": "FAIL",
    "compile_error.nx": "COMPILE-ERROR",
    "crash.nx": "RUNTIME-ERROR",
    "hang.nx": "TIMEOUT",
    "divzero.nx": "RUNTIME-ERROR",
}


def source(name: str) -> str:
    return textwrap.dedent(FILES[name]).lstrip("\n")


def line_of(name: str, text: str) -> int:
    """1-based line of the first line of module `name` containing `text`."""
    for n, line in enumerate(source(name).splitlines(), 1):
        if text in line:
            return n
    raise ValueError(text)


def write_tree(folder, names=None) -> str:
    for name in names or FILES:
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(source(name))
    return str(folder)


# A gate that touches 1 GiB, one byte a page: stopped by --memory-limit
# (tests/test_hardening_runner.py, test_gate_host.py).
GREEDY = """\
import "nx_syscalls.nx"
func main() -> i64 {
    let n: i64 = 1073741824
    let p: *u8 = sys_mmap(n) as *u8
    if p == 0 as *u8 { return 1 }
    var i: i64 = 0
    while i < n { p[i] = 1 as u8; i = i + 4096 }
    return 0
}
"""
