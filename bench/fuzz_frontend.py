#!/usr/bin/env python3
"""Fuzz the front end: every input must end in diagnostics, never an exception.

Inputs are mutations of the bundled modules (a token deleted, duplicated,
swapped with its neighbour or replaced; the file truncated), random bytes,
and random token soup. Each is checked as the root module of a program, so
its imports resolve to the real bundled modules. Anything but a clean check
or a CompileError (a Python exception, a Lark error) is a bug; such inputs
are saved to the --save folder.

    python bench/fuzz_frontend.py --count 100000 --seed 1
    python bench/fuzz_frontend.py --count 0 --pathological

The pathological set (issue 15): every kind of deep nesting and oversized
construct at 10, 1,000 and 12,000 (past the 10,000-level limit), line-end
and Unicode oddities (also mixed into the random inputs), and folder names
built to break out of generated comments, strings and #line directives.
"""
from __future__ import annotations

import argparse
import glob
import os
import random
import re
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from nxc.diagnostics import CompileError, Diagnostics  # noqa: E402
from nxc.check.frontend import check_file  # noqa: E402
from nxc.paths import bundled_dir  # noqa: E402

TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"[^"\n]*"|0[xXbB][0-9A-Fa-f_]+|\d+|[A-Za-z_]\w*'
                   r'|<<=|>>=|->|[-+*/%&|^<>=!]=|&&|\|\||<<|>>|\S|\n', re.S)
VOCAB = ["func", "let", "var", "if", "else", "while", "return", "break", "continue", "as", "struct",
         "type", "const", "extern", "import", "sizeof", "true", "false", "(", ")", "{", "}", "[", "]",
         ",", ";", ":", ".", "->", "=", "+=", "<<=", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!",
         "&&", "||", "==", "<", ">=", "<<", ">>", "\n", "i64", "u8", "*void", "0", "1", "0x7FFFFFFF",
         "18446744073709551616", "x", "main", "nx_f32_add", '"nx_f32.nx"', "/*", "*/", "//", "\t", "@", "\x00"]


def tokens_of(text: str) -> list[str]:
    return TOKEN.findall(text)


def mutate(rng: random.Random, text: str) -> str:
    toks = tokens_of(text)
    kind = rng.randrange(7)
    if kind == 0 or not toks:                      # truncate
        return text[: rng.randrange(len(text) + 1)]
    i = rng.randrange(len(toks))
    if kind == 1:
        del toks[i]
    elif kind == 2:
        toks.insert(i, toks[i])
    elif kind == 3 and len(toks) > 1:
        j = min(i + 1, len(toks) - 1)
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == 4:
        toks[i] = rng.choice(VOCAB)
    elif kind == 5:
        toks.insert(i, rng.choice(VOCAB))
    else:                                          # several mutations at once
        for _ in range(rng.randrange(2, 6)):
            k = rng.randrange(len(toks))
            toks[k] = rng.choice(VOCAB + toks[:50])
    return " ".join(toks).replace(" \n ", "\n")


def random_input(rng: random.Random, seeds: list[str]) -> bytes:
    r = rng.random()
    if r < 0.75:
        return mutate(rng, rng.choice(seeds)).encode("utf-8", "surrogatepass")
    if r < 0.85:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    if r < 0.95:                                   # line ends and Unicode oddities
        return line_end_inputs(rng, 1)[0]
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randrange(60))).encode()


# ---- pathological inputs (issue 15): each kind at a depth or size ----
# Every one must check cleanly or end in located diagnostics, and at the
# depths nxc supports (docs/language.md, Limits) emit C without raising.

def _nested(opener: str, closer: str, inner: str):
    return lambda n: "func main() -> i64 {\n" + opener * n + inner + closer * n + "return 1\n}\n"


PATHOLOGICAL = {
    "nested ifs": _nested("if true {\n", "}\n", "return 0\n"),
    "nested whiles": _nested("while true {\n", "}\n", "return 0\n"),
    "nested else-ifs": lambda n: "func main() -> i64 {\n    if false { return 1 }" + " else if false { return 1 }" * n
                                 + " else { return 0 }\n}\n",
    "nested calls": lambda n: "func f(x: i64) -> i64 { return x }\nfunc main() -> i64 {\n    return "
                              + "f(" * n + "0" + ")" * n + "\n}\n",
    "nested parentheses": lambda n: "func main() -> i64 {\n    return " + "(" * n + "0" + ")" * n + "\n}\n",
    "nested brackets": lambda n: "func main() -> i64 {\n    let p: *i64 = 0 as *i64\n    if false { return "
                                 + "p[" * n + "0" + "]" * n + " }\n    return 0\n}\n",
    "chained casts": lambda n: "func main() -> i64 {\n    return 0" + " as i64" * n + "\n}\n",
    "chained consts": lambda n: "\n".join(["const C0: i64 = 0"] + [f"const C{i}: i64 = C{i - 1} + 1" for i in range(1, n)])
                                + f"\nfunc main() -> i64 {{\n    return C{n - 1} - {n - 1}\n}}\n",
    "chained aliases": lambda n: "\n".join(["type T0 = i64"] + [f"type T{i} = T{i - 1}" for i in range(1, n)])
                                 + f"\nfunc main() -> i64 {{\n    let x: T{n - 1} = 0\n    return x\n}}\n",
    "embedded structs": lambda n: "\n".join(["struct S0 { a: i64 }"] + [f"struct S{i} {{ s: S{i - 1} }}" for i in range(1, n)])
                                  + f"\nfunc main() -> i64 {{\n    return sizeof(S{n - 1}) - 8\n}}\n",
    "long sum": lambda n: "func main() -> i64 {\n    var x: i64 = 0\n    return " + " + ".join(["x"] * n) + "\n}\n",
    "long and": lambda n: "func main() -> i64 {\n    if " + " && ".join(["true"] * n) + " { return 0 }\n    return 1\n}\n",
    "right-nested sum": lambda n: "func main() -> i64 {\n    return " + "1 + (" * n + "0" + ")" * n + "\n}\n",
    "unary chain": lambda n: "func main() -> i64 {\n    return " + "-" * n + "0\n}\n",
    "not chain": lambda n: "func main() -> i64 {\n    if " + "!" * n + "true { return 0 }\n    return 0\n}\n",
    "field chain": lambda n: "struct S { a: i64 }\nfunc main() -> i64 {\n    let p: *S = 0 as *S\n    if false { return p"
                             + ".a" * n + " }\n    return 0\n}\n",
    "pointer type": lambda n: "func main() -> i64 {\n    let p: " + "*" * n + "i64 = 0 as " + "*" * n + "i64\n    return 0\n}\n",
    "chained comparisons": lambda n: "func main() -> i64 {\n    let b: bool = " + " < ".join(["1"] * n) + "\n    return 0\n}\n",
    "huge literal": lambda n: "func main() -> i64 {\n    return " + "9" * n + "\n}\n",
    "huge hex literal": lambda n: "func main() -> i64 {\n    return 0x" + "F" * n + "\n}\n",
    "leading zeros": lambda n: "func main() -> i64 {\n    return " + "0" * n + "\n}\n",
    "many functions": lambda n: "".join(f"func f{i}() -> i64 {{ return {i} }}\n" for i in range(n))
                                + "func main() -> i64 { return 0 }\n",
    "long line": lambda n: "func main() -> i64 {\n    return nope" + " " * n + "+ 1\n}\n",
    "many errors": lambda n: "func main() -> i64 {\n" + "    nope\n" * n + "    return 0\n}\n",
    "unclosed comment": lambda n: "/*" * n,
    "unclosed brackets": lambda n: "func main() -> i64 {\n    return " + "(" * n + "\n",
}
# Depths: 10x what raised before (see tests/test_hardening_limits.py), and
# past the limit (10,000 levels), where a located error is expected.
PATHOLOGICAL_SIZES = (10, 1000, 12_000)

# Line ends and Unicode oddities, spliced into a small gate.
ODD_TEXT = ["\r", "\r\n", "\n\r", "\f", "\v", "\x85", "\u2028", "\u2029", "\x00", "\x1b[2J", "\ufeff",
            "\ud800", "\U0001F600", "\u200b", "\u202e", "\t", "\x7f", "é", "\\", "\"", "*/", "/*", "//"]


def line_end_inputs(rng: random.Random, n: int) -> list[bytes]:
    base = "// header: x\nfunc main() -> i64 {\n    let a: i64 = 1 // note\n    if a != 1 { return 1 }\n    return 0\n}\n"
    out = []
    for _ in range(n):
        text = base
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(ODD_TEXT) + text[i:]
        if rng.random() < 0.3:
            text = text.replace("\n", rng.choice(["\r", "\r\n"]))
        out.append(text.encode("utf-8", "surrogatepass"))
    return out


# Folder and file names that tried to break out of generated comments,
# strings and #line directives (a `/` is a folder boundary).
HOSTILE_NAMES = ['q"uo\'te\n__import__("os")._exit(97)\n#', "tri??/\nint nx_evil;\n", "com*/ int nx_evil; /*x",
                 "back\\\n__import__('os')._exit(97)", '#line 1 "evil"\nx', "\udcff\udcfe-bytes", "new\nline",
                 "sp ace", "dollar$HOME", "%s%n%x", "\u202eevil"]


def run_pathological(sizes=PATHOLOGICAL_SIZES, emit: bool = True, budget: float = 60.0) -> dict:
    """Each PATHOLOGICAL kind at each size: checked, then (if it checks) C
    and Python emitted. Counts outcomes; `hangs` are inputs over `budget` s."""
    from nxc.backend.c.emit import emit_c
    from nxc.backend.py.emit import emit_py
    stats = {"tried": 0, "clean": 0, "diagnosed": 0, "crashed": 0, "hangs": 0, "failures": [], "slowest": (0.0, "")}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "deep.nx")
        for name, make in PATHOLOGICAL.items():
            for n in sizes:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(make(n))
                stats["tried"] += 1
                start = time.monotonic()
                try:
                    program = check_file(path, diags=Diagnostics())
                    if emit:
                        emit_c(program)
                        emit_py(program)
                    stats["clean"] += 1
                except CompileError as exc:
                    stats["diagnosed"] += 1
                    for d in exc.diagnostics:
                        if d.pos is None and "nested" in d.message:
                            raise AssertionError(f"{name} x{n}: unlocated limit error")
                        d.render()
                except Exception:  # noqa: BLE001 - this is what we hunt
                    stats["crashed"] += 1
                    stats["failures"].append((f"{name} x{n}", traceback.format_exc()))
                took = time.monotonic() - start
                if took > budget:
                    stats["hangs"] += 1
                    stats["failures"].append((f"{name} x{n}", f"took {took:.0f} s"))
                stats["slowest"] = max(stats["slowest"], (took, f"{name} x{n}"))
    return stats


def run_hostile_paths(backends=("c", "py")) -> dict:
    """A gate importing a library, in each HOSTILE_NAMES folder, on each backend:
    it must pass, and nothing spliced into a name may run (exit 97, nx_evil)."""
    from nxc.gates.run import run_gate
    stats = {"tried": 0, "passed": 0, "failures": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(HOSTILE_NAMES):
            folder = os.path.join(tmp, str(i), name)
            try:
                os.makedirs(folder)
            except (OSError, UnicodeEncodeError) as exc:
                stats["failures"].append((repr(name), f"cannot make the folder: {exc}"))
                continue
            with open(os.path.join(folder, "lib.nx"), "w") as f:
                f.write("func twice(x: i64) -> i64 { return x * 2 }\n")
            gate = os.path.join(folder, name.replace("/", "_") + ".nx")
            with open(gate, "w") as f:
                f.write('import "lib.nx"\nfunc main() -> i64 {\n    if twice(21) != 42 { return 1 }\n    return 0\n}\n')
            for backend in backends:
                stats["tried"] += 1
                try:
                    outcome = run_gate(check_file(gate, diags=Diagnostics()), backend, timeout=60)
                    if outcome.status == "PASS":
                        stats["passed"] += 1
                    else:
                        stats["failures"].append((repr(name), f"{backend}: {outcome.status} {outcome.message}"))
                except Exception:  # noqa: BLE001
                    stats["failures"].append((repr(name), f"{backend}: {traceback.format_exc()}"))
    return stats


def fuzz(count: int, seed: int, save: str | None = None, seconds: float | None = None) -> dict:
    rng = random.Random(seed)
    seeds = [open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(bundled_dir(), "*.nx")))]
    stats = {"tried": 0, "clean": 0, "diagnosed": 0, "crashed": 0, "failures": []}
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fuzz.nx")
        for n in range(count):
            if seconds is not None and time.monotonic() - start > seconds:
                break
            data = random_input(rng, seeds)
            with open(path, "wb") as f:
                f.write(data)
            stats["tried"] += 1
            try:
                check_file(path, diags=Diagnostics())
                stats["clean"] += 1
            except CompileError as exc:
                stats["diagnosed"] += 1
                for d in exc.diagnostics:          # rendering must not fail either
                    d.render()
            except RecursionError:
                stats["crashed"] += 1
                stats["failures"].append((data, "RecursionError"))
            except Exception:  # noqa: BLE001 - this is what we hunt
                stats["crashed"] += 1
                stats["failures"].append((data, traceback.format_exc()))
                if save:
                    os.makedirs(save, exist_ok=True)
                    with open(os.path.join(save, f"crash-{seed}-{n}.nx"), "wb") as f:
                        f.write(data)
    stats["seconds"] = time.monotonic() - start
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--save", default="fuzz-failures", help="folder for inputs that raised")
    ap.add_argument("--pathological", action="store_true",
                    help="also the pathological set (depths, sizes) and the hostile folder names")
    args = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="nxc-fuzz-cache-") as cache:
        # Its own cache folder: every mutated input that parses would
        # otherwise be kept in the user's parse cache.
        os.environ.setdefault("NXC_CACHE_DIR", cache)
        if args.count:
            stats = fuzz(args.count, args.seed, args.save)
            print(f"tried {stats['tried']} inputs in {stats['seconds']:.0f} s: {stats['clean']} clean, "
                  f"{stats['diagnosed']} diagnosed, {stats['crashed']} raised an exception")
            for data, tb in stats["failures"][:5]:
                print("-" * 60)
                print(data[:300])
                print(tb)
            bad += stats["crashed"]
        if args.pathological:
            p = run_pathological()
            print(f"pathological: {p['tried']} inputs ({len(PATHOLOGICAL)} kinds x {PATHOLOGICAL_SIZES}): "
                  f"{p['clean']} clean, {p['diagnosed']} diagnosed, {p['crashed']} tracebacks, {p['hangs']} hangs "
                  f"(slowest {p['slowest'][0]:.1f} s: {p['slowest'][1]})")
            h = run_hostile_paths()
            print(f"hostile paths: {h['tried']} runs, {h['passed']} passed")
            for what, why in p["failures"][:5] + h["failures"][:5]:
                print("-" * 60)
                print(what)
                print(why[-2000:])
            bad += p["crashed"] + p["hangs"] + len(h["failures"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
