"""Run every command on modules and folders with hostile names: never a traceback, nothing they say runs.

    python bench/hostile_names.py [--keep DIR]

For each of 25 names (spaces, a leading dash, `--help`, quotes, `$(touch
PWNED)`, `;`, non-ASCII, bytes that are not UTF-8, a newline, a tab, a
backslash, 200 characters, `%`, braces, `*`, `?`, `#`, `:`, brackets, an
emoji, a leading dot, `x.nx.nx`, a control byte, an ANSI escape), a folder
`d_NAME` holds `NAME_lib.nx` and the gate `NAME.nx`, which imports it. In
that folder each command runs on `./NAME.nx` (`nxc test` on `.`): check,
run (C and Python), emit-c, emit-py, test (both backends; `-j 2 --json`),
fmt --check, info, doc, port --stubs. Each must exit 0, 1 or 3 (a name the
language cannot import is a compile error), print no traceback, and leave
no file `PWNED`. Exit status 1 otherwise. tests/test_hardening_paths.py
pins the cases this found (names whose bytes are not UTF-8).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

GATE = b'import "%s"\nfunc main() -> i64 {\n    if lib_one() != 1 { return 3 }\n    return 0\n}\n'
LIB = b"func lib_one() -> i64 { return 1 }\n"
NAMES = [b"with space", b"-dash", b"--help", b"quo'te", b'dq"uote', b"$(touch PWNED)", b"semi;colon",
         b"uni\xc3\xa9\xe2\x9c\x93", b"bad\xff\xfeutf8", b"new\nline", b"tab\tname", b"back\\slash", b"a" * 200,
         b"per%cent", b"brace{x}", b"star*", b"q?", b"#hash", b"colon:name", b"[brk]", b"emoji\xf0\x9f\x98\x80",
         b".hidden", b"x.nx.nx", b"NUL\x01ctl", b"\x1b[31mred"]
COMMANDS = [["check"], ["run"], ["run", "--backend", "py"], ["emit-c"], ["emit-py"], ["test", "--backend", "both"],
            ["test", "-j", "2", "--json"], ["fmt", "--check"], ["info"], ["doc", "-o", "DOCS"], ["port", "--stubs"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    args = ap.parse_args()
    work = os.fsencode(args.keep or tempfile.mkdtemp(prefix="nxc-hostile-names-"))
    env = dict(os.environ, NXC_CACHE_DIR=os.fsdecode(os.path.join(work, b"cache")))
    bad = runs = 0
    try:
        for name in NAMES:
            folder = os.path.join(work, b"d_" + name)
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
            lib, gate = name + b"_lib.nx", name + b".nx"
            with open(os.path.join(folder, lib), "wb") as f:
                f.write(LIB)
            with open(os.path.join(folder, gate), "wb") as f:
                f.write(GATE % lib.replace(b"\\", b"\\\\").replace(b'"', b'\\"'))
            for command in COMMANDS:
                argv = [os.fsdecode(os.path.join(folder, b"docs")) if a == "DOCS" else a for a in command]
                target = ["."] if command[0] == "test" else ["./" + os.fsdecode(gate)]
                done = subprocess.run([sys.executable, "-m", "nxc", *argv, *target], cwd=folder, env=env,
                                      capture_output=True, timeout=300)
                runs += 1
                out = (done.stdout + done.stderr).decode("utf-8", "replace")
                planted = os.path.exists(os.path.join(folder, b"PWNED"))
                if "Traceback" in out or done.returncode not in (0, 1, 3) or planted:
                    bad += 1
                    why = ("a file PWNED appeared" if planted else "a traceback" if "Traceback" in out
                           else f"exit {done.returncode}")
                    print(f"WRONG {name!r}, nxc {' '.join(command)}: {why}\n"
                          + "\n".join("    " + line for line in out.splitlines()[-12:]), flush=True)
        print(f"{len(NAMES)} names, {len(COMMANDS)} commands, {runs} runs: {bad} wrong")
        return 1 if bad else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
