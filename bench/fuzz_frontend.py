#!/usr/bin/env python3
"""Fuzz the front end: every input must end in diagnostics, never an exception.

Inputs are mutations of the bundled modules (a token deleted, duplicated,
swapped with its neighbour or replaced; the file truncated), random bytes,
and random token soup. Each is checked as the root module of a program, so
its imports resolve to the real bundled modules. Anything but a clean check
or a CompileError (a Python exception, a Lark error) is a bug; such inputs
are saved to the --save folder.

    python bench/fuzz_frontend.py --count 100000 --seed 1
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
    if r < 0.8:
        return mutate(rng, rng.choice(seeds)).encode("utf-8", "surrogatepass")
    if r < 0.9:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randrange(60))).encode()


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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nxc-fuzz-cache-") as cache:
        # Its own cache folder: every mutated input that parses would
        # otherwise be kept in the user's parse cache.
        os.environ.setdefault("NXC_CACHE_DIR", cache)
        stats = fuzz(args.count, args.seed, args.save)
    print(f"tried {stats['tried']} inputs in {stats['seconds']:.0f} s: {stats['clean']} clean, "
          f"{stats['diagnosed']} diagnosed, {stats['crashed']} raised an exception")
    for data, tb in stats["failures"][:5]:
        print("-" * 60)
        print(data[:300])
        print(tb)
    return 1 if stats["crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
