#!/usr/bin/env python3
"""Shrink a .nx program while its backends still disagree (a small C-Reduce).

    python bench/reduce_program.py difftest-failures/differ_123.nx       # -> differ_123.reduced.nx
    python bench/reduce_program.py CASE.nx -o small.nx --configs c-O0,py
    python bench/reduce_program.py CASE.nx --fold                         # keep a fold-check failure

The program's gate `main` is run on each configuration (c-O0, c-O2, py,
c-O2-soft; default: c-O0, c-O2, py). A candidate is *interesting* when it
checks without errors, the Python backend runs it to the end (its memory is
checked, so the candidate has no invalid access, no division by zero, no
endless loop), and the configurations still return different values (with
--fold: some configuration returns a fold-check sentinel, see
bench/gen_program.py). Crashes of the C code count only if the original
program crashed too.

Passes, repeated until none makes progress (bench/gen_program.py writes one
statement per line and closes every block on a line of its own, which these
passes rely on):
  1. delete statements, blocks and whole declarations (chunks, halving);
  2. replace `if c {A} else {B}` by A or B, and a `while` by its body;
  3. simplify expressions: a parenthesised sub-expression becomes one of its
     operands, 0 or 1, and casts are dropped (the checker rejects ill-typed
     candidates before anything is built).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
try:                                    # an nxc on PYTHONPATH (e.g. an older tree) wins
    import nxc  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, ".."))

from nxc.diagnostics import CompileError, Diagnostics  # noqa: E402
from nxc.check.frontend import check_file  # noqa: E402
from nxc.gates.run import execute  # noqa: E402

# name -> (backend, opt, soft-f32, checked C); "<name>/t<N>" runs it at N threads (the
# names bench/difftest.py reports)
CONFIGS = {"c-O0": ("c", "0", False, False), "c-O2": ("c", "2", False, False), "py": ("py", "2", False, False),
           "c-x86-64": ("c", "2/x86-64", False, False), "c-native": ("c", "native", False, False),
           "c-chk": ("c", "0", False, True), "c-chk-O2": ("c", "2", False, True),
           "c-O2-soft": ("c", "2", True, False), "py-soft": ("py", "2", True, False)}
FOLD_SENTINEL = 0x7F01D00000000000
KERNEL_SENTINEL = 0x7F0CE00000000000      # bench/gen_kernels.py: a kernel != its scalar reference
FOLD_MASK = 0xFFFFFFFFFFFF0000


def config_of(name: str) -> tuple[str, str, bool, bool, int] | None:
    """(backend, opt, soft, checked, threads) of a configuration name, None if unknown."""
    base, _, t = name.partition("/t")
    if base not in CONFIGS or (t and not t.isdigit()):
        return None
    return (*CONFIGS[base], int(t) if t else 1)
NORMAL = ("PASS", "FAIL")


class Oracle:
    """Runs a candidate on every configuration; remembers answers by text."""

    def __init__(self, configs: list[str], fold: bool, workdir: str, timeout: float = 20.0):
        self.configs = configs
        self.fold = fold
        self.workdir = workdir
        self.timeout = timeout
        self.cache: dict[str, bool] = {}
        self.crash_ok = False
        self.tests = 0
        self.builds = 0

    def outcomes(self, text: str) -> dict | None:
        path = os.path.join(self.workdir, "candidate.nx")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        programs = {}
        out = {}
        for name in self.configs:
            backend, opt, soft, checked, threads = config_of(name)
            try:
                if soft not in programs:
                    programs[soft] = check_file(path, diags=Diagnostics(warnings=False), soft_f32=soft)
            except CompileError:
                return None
            if programs[soft].entry is None:
                return None
            o = execute(programs[soft], backend, opt=opt, use_cache=False, timeout=self.timeout,
                        checked=checked, threads=threads)[0]
            self.builds += backend == "c"
            out[name] = (o.status, o.value, o.message if o.status not in NORMAL else "")
            if name.startswith("py") and o.status not in NORMAL:
                return out              # not a valid program: stop early
        return out

    def interesting_outcomes(self, out: dict | None) -> bool:
        if out is None:
            return False
        if any(k.startswith("py") and v[0] not in NORMAL for k, v in out.items()):
            return False
        if not self.crash_ok and any(v[0] not in NORMAL for v in out.values()):
            return False
        if len(out) < len(self.configs):
            return False
        if self.fold:
            return any(v[0] in NORMAL and v[1] is not None
                       and (v[1] & 0xFFFFFFFFFFFFFFFF & FOLD_MASK) in (FOLD_SENTINEL, KERNEL_SENTINEL)
                       for v in out.values())
        return len({(v[0], v[1]) for v in out.values()}) > 1

    def __call__(self, text: str) -> bool:
        key = hashlib.sha1(text.encode()).hexdigest()
        if key not in self.cache:
            self.tests += 1
            self.cache[key] = self.interesting_outcomes(self.outcomes(text))
        return self.cache[key]


# ---------------------------------------------------------------- text units
def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def unit_end(lines: list[str], i: int) -> int:
    """Index one past the statement or declaration that starts at line i."""
    line = lines[i].rstrip()
    if not line.endswith("{"):
        return i + 1
    ind = indent_of(lines[i])
    j = i + 1
    while j < len(lines):
        s = lines[j].rstrip()
        if s.strip() and indent_of(lines[j]) == ind and s.strip().startswith("}"):
            if s.strip() == "}":
                return j + 1
        j += 1
    return len(lines)


def units(lines: list[str]) -> list[tuple[int, int]]:
    """Every deletable unit: (start, end) line ranges, outermost first at each line."""
    out = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith("//") or s.startswith("}"):
            continue
        out.append((i, unit_end(lines, i)))
    return out


def delete_pass(text: str, oracle: Oracle, log) -> str:
    lines = text.split("\n")
    # chunks of consecutive top-level units first (halving), then single units
    us = units(lines)
    n = len(us)
    size = max(n // 2, 1)
    while size >= 1:
        i = len(us) - 1
        changed = False
        while i >= 0:
            chunk = us[max(0, i - size + 1): i + 1]
            lo = min(a for a, _ in chunk)
            hi = max(b for _, b in chunk)
            if all(a >= lo and b <= hi for a, b in chunk) and _nested_ok(us, lo, hi):
                cand = lines[:lo] + lines[hi:]
                if oracle("\n".join(cand)):
                    log(f"deleted lines {lo + 1}-{hi}")
                    lines = cand
                    us = units(lines)
                    changed = True
                    i = min(i - size, len(us) - 1)
                    continue
            i -= size
        if not changed:
            size //= 2
    return "\n".join(lines)


def _nested_ok(us, lo, hi) -> bool:
    """lo..hi covers whole units only (no block cut in half)."""
    for a, b in us:
        if a < lo < b <= hi or lo <= a < hi < b:
            return False
    return True


def unwrap_pass(text: str, oracle: Oracle, log) -> str:
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if (s.startswith("if ") or s.startswith("while ") or s == "{") and s.endswith("{"):
            end = unit_end(lines, i)
            ind = indent_of(lines[i])
            # branch boundaries at this indentation
            cuts = [i] + [j for j in range(i + 1, end - 1)
                          if indent_of(lines[j]) == ind and lines[j].strip().startswith("}")] + [end - 1]
            branches = [lines[cuts[k] + 1: cuts[k + 1]] for k in range(len(cuts) - 1)]
            for body in branches:
                # a bare block keeps the branch's scope; a block that is already bare is dissolved
                cand = lines[:i] + (body if s == "{" else ["{"] + body + ["}"]) + lines[end:]
                if oracle("\n".join(cand)):
                    log(f"unwrapped line {i + 1}")
                    lines = cand
                    break
        i += 1
    return "\n".join(lines)


_OPS = ["||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "<", ">", "|", "^", "&", "+", "-", "*", "/", "%"]


def paren_spans(line: str) -> list[tuple[int, int]]:
    stack, spans = [], []
    for k, ch in enumerate(line):
        if ch == "(":
            stack.append(k)
        elif ch == ")" and stack:
            spans.append((stack.pop(), k + 1))
    spans.sort(key=lambda ab: ab[0] - ab[1])     # largest first
    return spans


def top_level_split(inner: str) -> list[str]:
    """Operands of the loosest top-level binary operator in `inner`, or of `x as T`."""
    depth = 0
    k = 0
    positions = []
    while k < len(inner):
        ch = inner[k]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0:
            if inner.startswith(" as ", k):
                positions.append((k, " as "))
            for op in _OPS:
                if inner.startswith(f" {op} ", k):
                    positions.append((k, f" {op} "))
                    break
        k += 1
    if not positions:
        return []
    k, op = positions[0]
    if op == " as ":
        return [inner[:k]]
    return [inner[:k], inner[k + len(op):]]


def simplify_pass(text: str, oracle: Oracle, log, budget: int) -> str:
    lines = text.split("\n")
    tried = 0
    for i in range(len(lines)):
        done = set()
        progress = True
        while progress and tried < budget:
            progress = False
            for a, b in paren_spans(lines[i]):
                inner = lines[i][a + 1:b - 1]
                cands = []
                for part in top_level_split(inner):
                    cands.append(part.strip())
                if inner.startswith("-") or inner.startswith("~") or inner.startswith("!"):
                    cands.append(inner[1:])
                cands += ["0", "1"]
                for c in cands:
                    new = lines[i][:a] + "(" + c + ")" + lines[i][b:]
                    if c in ("0", "1"):
                        new = lines[i][:a] + c + lines[i][b:]
                    if new == lines[i] or new in done:
                        continue
                    done.add(new)
                    tried += 1
                    cand = lines[:i] + [new] + lines[i + 1:]
                    if oracle("\n".join(cand)):
                        log(f"simplified line {i + 1}")
                        lines = cand
                        progress = True
                        break
                if progress:
                    break
    return "\n".join(lines)


def tidy(text: str) -> str:
    """Re-indent by braces and drop blank runs (cosmetic)."""
    out, depth = [], 0
    for line in text.split("\n"):
        s = line.strip()
        if not s:
            if out and out[-1] == "":
                continue
            out.append("")
            continue
        if s.startswith("}"):
            depth = max(depth - 1, 0)
        out.append("    " * depth + s)
        if s.endswith("{"):
            depth += 1
    return "\n".join(out).strip() + "\n"


def reduce_text(text: str, configs: list[str], fold: bool = False, verbose: bool = True,
                max_seconds: float = 3600.0, simplify_budget: int = 400) -> str:
    log = (lambda m: print("  " + m, flush=True)) if verbose else (lambda m: None)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="nx-reduce-") as workdir:
        os.environ.setdefault("NXC_CACHE_DIR", os.path.join(workdir, "cache"))
        oracle = Oracle(configs, fold, workdir)
        first = oracle.outcomes(text)
        if first is not None and any(v[0] not in NORMAL for k, v in first.items() if not k.startswith("py")):
            oracle.crash_ok = True
        if not oracle(text):
            raise SystemExit(f"the program is not interesting to begin with: {first}")
        log(f"start: {text.count(chr(10))} lines; outcomes {first}")
        while time.time() - start < max_seconds:
            before = text
            text = delete_pass(text, oracle, log)
            text = unwrap_pass(text, oracle, log)
            text = simplify_pass(text, oracle, log, simplify_budget)
            text = delete_pass(text, oracle, log)
            if text == before:
                break
        tidied = tidy(text)
        if oracle(tidied):
            text = tidied
        log(f"done: {text.count(chr(10))} lines, {oracle.tests} candidates tried, "
            f"{time.time() - start:.0f} s; outcomes {oracle.outcomes(text)}")
    return text


def reduce_file(path: str, out: str | None = None, configs: list[str] | None = None, fold: bool = False,
                verbose: bool = True, max_seconds: float = 3600.0) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    small = reduce_text(text, configs or ["c-O0", "c-O2", "py"], fold, verbose, max_seconds)
    out = out or re.sub(r"\.nx$", "", path) + ".reduced.nx"
    with open(out, "w", encoding="utf-8") as f:
        f.write(small)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Shrink a .nx program while its backends disagree.")
    ap.add_argument("file")
    ap.add_argument("-o", "--output", help="default: FILE with .reduced.nx")
    ap.add_argument("--configs", default="c-O0,c-O2,py",
                    help=f"comma-separated, from {', '.join(CONFIGS)}, each optionally with /tN (N threads) "
                         "(default c-O0,c-O2,py)")
    ap.add_argument("--fold", action="store_true", help="keep a fold-check failure instead of a disagreement")
    ap.add_argument("--max-seconds", type=float, default=3600.0)
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for c in configs:
        if config_of(c) is None:
            ap.error(f"unknown configuration {c!r}")
    out = reduce_file(args.file, args.output, configs, args.fold, not args.quiet, args.max_seconds)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
