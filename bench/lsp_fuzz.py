"""Fuzz `nxc lsp`: random edits and requests, many of them malformed, and the server must answer each one.

    python bench/lsp_fuzz.py [--seed N] [--steps N] [--seeds K]

The server runs as an editor runs it (a child process, JSON-RPC over stdio,
its log read as it comes). A document is opened with text made of pieces of
.nx (and of what is not .nx: an unterminated string or comment, a NUL,
carriage returns, non-ASCII), then, step after step, either a change (the
whole text, or a range: inverted, past the end, negative, past 2^31) or a
request of every kind the server offers, at a position that may be past
the end of the document, negative (which the protocol does not allow), or
of a document that is not open, not a file or not there.

Every request must be answered within 30 s: a result, or an error that is
not an internal one (-32603, a bug in nxc); the log must hold no traceback,
and the server must shut down cleanly. Exit status 1 otherwise, with what
went wrong. tests/test_lsp_server.py runs a bounded version.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from lsp_client import LspClient, LspError  # noqa: E402  (tests/lsp_client.py: the suite's client)

PIECES = ['import "lib.nx"\n', 'func main() -> i64 {\n', '    let p: *P = 0 as *P\n', '    return lib_one(p)\n',
          '}\n', 'struct Q { a: [4]i64 }\n', '\u00e9\u2713\U0001F600 ', '"unterminated\n', '/* open comment', '\t\t',
          'let', '.', '(', ')', '{', '}', 'func f(', 'x: ', 'i64', ' -> ', 'while', ' if ', ' as ', '*', '&', '0x',
          '1e9', '\r\n', '\r', '\x00', 'lib_one(', 'P.', 'K']
AT_POSITION = ["textDocument/hover", "textDocument/definition", "textDocument/completion", "textDocument/references",
               "textDocument/documentHighlight", "textDocument/signatureHelp", "textDocument/prepareRename",
               "textDocument/rename"]
WHOLE = ["textDocument/foldingRange", "textDocument/documentSymbol", "textDocument/semanticTokens/full",
         "textDocument/diagnostic", "textDocument/formatting"]
IN_RANGE = ["textDocument/codeAction", "textDocument/inlayHint"]
ELSEWHERE = ["file:///nonexistent.nx", "untitled:x", "http://x/y.nx", "file:///tmp/%FF.nx"]
INTERNAL_ERROR = -32603


def fuzz(seed: int, steps: int, folder: Path) -> list[str]:
    """What went wrong in one run (empty: nothing)."""
    rnd = random.Random(seed)
    (folder / "lib.nx").write_text("struct P { x: i64, y: i64 }\nconst K: i64 = 3\n"
                                   "func lib_one(p: *P) -> i64 { return p.x + K }\n")
    client = LspClient(["lsp"], cwd=str(folder), timeout=30)      # reads the server's log as it comes
    problems: list[str] = []
    uri = (folder / "doc.nx").as_uri()

    def text() -> str:
        return "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 40)))

    def position() -> dict:
        return {"line": rnd.choice([0, 1, 2, 5, 30, 10 ** 6, -1, 2 ** 31]),
                "character": rnd.choice([0, 1, 3, 7, 100, 10 ** 6, -1])}

    try:
        client.initialize(folder)
        client.open(folder / "doc.nx", text=text(), uri=uri)
        version = 1
        for step in range(steps):
            if rnd.random() < 0.3:
                version += 1
                if rnd.random() < 0.5:
                    client.change(uri, text(), version)
                else:
                    client.change_range(uri, {"start": position(), "end": position()}, rnd.choice(PIECES), version)
                continue
            method = rnd.choice(AT_POSITION + WHOLE + IN_RANGE + ["workspace/symbol"])
            doc = {"uri": rnd.choice(ELSEWHERE) if rnd.random() < 0.05 else uri}
            if method in AT_POSITION:
                params = {"textDocument": doc, "position": position()}
                if method == "textDocument/rename":
                    params["newName"] = rnd.choice(["x", "", "1bad", "main", "a b", "lib_one"])
                if method == "textDocument/references":
                    params["context"] = {"includeDeclaration": True}
            elif method in IN_RANGE:
                params = {"textDocument": doc, "range": {"start": position(), "end": position()},
                          "context": {"diagnostics": []}}
            elif method == "textDocument/formatting":
                params = {"textDocument": doc, "options": {"tabSize": 4, "insertSpaces": True}}
            elif method == "workspace/symbol":
                params = {"query": rnd.choice(["", "lib", "\u00e9", "*"])}
            else:
                params = {"textDocument": doc}
            try:
                client.request(method, params)
            except LspError as exc:
                if exc.code == INTERNAL_ERROR:
                    problems.append(f"step {step}: {method} {params}: internal error: {exc.message}")
            except TimeoutError:
                problems.append(f"step {step}: {method} {params}: no answer in 30 s")
                return problems
        code = client.close()
        if code != 0:
            problems.append(f"exit status {code} after shutdown and exit")
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
        client.proc.wait()
    time.sleep(0.2)         # the reader thread's last lines
    said = client.stderr_text()
    if "Traceback" in said:
        at = said.index("Traceback")
        problems.append("a traceback in the log:\n" + said[max(0, at - 200):at + 2000])
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1, help="the first seed")
    ap.add_argument("--seeds", type=int, default=4, help="how many seeds, one server each")
    ap.add_argument("--steps", type=int, default=600, help="edits and requests per seed")
    args = ap.parse_args()
    bad = 0
    for seed in range(args.seed, args.seed + args.seeds):
        with tempfile.TemporaryDirectory(prefix="nxc-lsp-fuzz-") as tmp:
            t0 = time.perf_counter()
            problems = fuzz(seed, args.steps, Path(tmp))
        print(f"seed {seed}: {args.steps} steps, {time.perf_counter() - t0:.1f} s: "
              + ("ok" if not problems else f"{len(problems)} problem(s)"), flush=True)
        for p in problems:
            print("  " + p.replace("\n", "\n  "))
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
