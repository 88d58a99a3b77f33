"""The README and docs/*.md say what nxc does: every command block marked
runnable is run, and its output must be what the page shows.

A runnable block (described for writers in docs/testing.md) is a fenced
```console block right after a `<!-- runnable -->` line:

    <!-- runnable -->
    ```console
    $ nxc check t.nx
    t.nx:3:12: error: undefined name 'coutn'; did you mean 'count'?
    ...
    [exit 1]
    ```

- A line starting with `$ ` is a command, run by bash; lines starting with
  `> ` right after it continue it (a here-document that writes a file); the
  lines after that, up to the next command, are its expected output (stdout
  and stderr as one stream, trailing blanks ignored).
- `...` alone on a line stands for any number of lines (also none); `...`
  inside a line for any text on that line (times, sizes).
- A last output line `[exit N]` says the command exits with status N;
  without it the command must exit 0.
- A ```python block after the marker is run as a whole by the venv's Python
  and must exit 0: its asserts are the check, its output is not compared.
- The commands of a block run one after another in a folder holding fresh
  copies of the repository's `nx_src/` and `bench/` (and nothing else but
  the model writers bench/make_qwen3_gguf.py imports from tests/), so
  paths read as from the repository root and nothing is written into the
  checkout. PATH starts with
  the virtual environment's `bin/` (as after `. .venv/bin/activate`), and
  NXC_CACHE_DIR is a cache of this test module's own, shared by its blocks:
  a block may empty it (`rm -rf "$NXC_CACHE_DIR"`) without touching the
  cache of the rest of the suite. Each command is its own shell: `cd` and
  `export` do not carry over to the next one.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
MARK = "<!-- runnable -->"
# The suite's model writers, which bench/make_qwen3_gguf.py imports from tests/.
BENCH_IMPORTS = ("qwen3_support.py", "tokenizer_support.py", "quant_support.py")
COMMAND_TIMEOUT = 300        # a bound against a hang, not a time the command must keep


def runnable_blocks(path: str) -> list:
    """[(line of the fence, [(command, [expected lines])])] of one page."""
    lines = open(path, encoding="utf-8").read().splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != MARK:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        assert j < len(lines) and lines[j].strip() in ("```console", "```python"), \
            f"{os.path.relpath(path, ROOT)}:{i + 1}: {MARK} must be followed by a ```console or ```python block"
        fence, steps = j + 1, []
        if lines[j].strip() == "```python":
            end = lines.index("```", j + 1)
            script = "\n".join(lines[j + 1:end]) + "\n"
            # a Python block is one command: run it, its asserts are the check
            blocks.append((fence, [("python - <<'NX_DOC_EOF'\n" + script + "NX_DOC_EOF", None)]))
            i = end + 1
            continue
        j += 1
        while lines[j].strip() != "```":
            text = lines[j]
            if text.startswith("$ "):
                steps.append((text[2:], []))
            elif (text.startswith("> ") or text == ">") and steps and not steps[-1][1]:
                steps[-1] = (steps[-1][0] + "\n" + text[2:], [])      # a continuation line
            else:
                assert steps, f"{os.path.relpath(path, ROOT)}:{j + 1}: output before the first '$ ' command"
                steps[-1][1].append(text.rstrip())
            j += 1
        assert steps, f"{os.path.relpath(path, ROOT)}:{fence}: a runnable block without a command"
        blocks.append((fence, steps))
        i = j + 1
    return blocks


BLOCKS = [(path, fence, steps) for path in PAGES for fence, steps in runnable_blocks(path)]


def output_pattern(expected: list[str]) -> re.Pattern:
    parts = []
    for line in expected:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(r"[^\n]*".join(re.escape(piece) for piece in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def split_exit(expected: list[str]) -> tuple[list[str], int]:
    m = re.fullmatch(r"\[exit (\d+)\]", expected[-1]) if expected else None
    return (expected[:-1], int(m.group(1))) if m else (expected, 0)


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("docs"))


def test_the_pages_have_runnable_blocks():
    # a marker the parser stopped recognising would make every case below vanish
    pages = {os.path.relpath(p, ROOT) for p, _, _ in BLOCKS}
    assert {"README.md", "docs/errors.md", "docs/runner.md"} <= pages
    assert len(BLOCKS) >= 6


def test_the_matching_rules():
    def match(expected, text):
        return output_pattern(expected).fullmatch(text) is not None
    assert match(["13 passed, 0 failed in ...s"], "13 passed, 0 failed in 1.02s\n")
    assert not match(["13 passed, 0 failed in ...s"], "12 passed, 1 failed in 1.02s\n")
    assert match(["a", "...", "z"], "a\nz\n") and match(["a", "...", "z"], "a\nb\nc\nz\n")
    assert not match(["a", "z"], "a\nb\nz\n")
    assert match([], "")
    assert not match([], "unexpected output\n")
    assert split_exit(["x", "[exit 1]"]) == (["x"], 1) and split_exit(["x"]) == (["x"], 0)


def test_continuation_lines(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- runnable -->\n```console\n$ cat <<'EOF'\n> a\n>\n> EOF\na\n\n$ true\n```\n")
    assert runnable_blocks(str(page)) == [(2, [("cat <<'EOF'\na\n\nEOF", ["a", ""]), ("true", [])])]
    page.write_text("<!-- runnable -->\n```python\nassert 1\n```\n")
    assert runnable_blocks(str(page)) == [(2, [("python - <<'NX_DOC_EOF'\nassert 1\nNX_DOC_EOF", None)])]


@pytest.mark.parametrize("path,fence,steps", BLOCKS,
                         ids=[f"{os.path.relpath(p, ROOT)}:{f}" for p, f, _ in BLOCKS])
def test_runnable_block(path, fence, steps, docs_dir):
    # The same folder for every block (emptied in between): builds are cached
    # by their C text, which names the .nx paths, so only the first block that
    # compiles the bundled modules pays for it.
    work = os.path.join(docs_dir, "work")
    shutil.rmtree(work, ignore_errors=True)
    for folder in ("nx_src", "bench"):
        shutil.copytree(os.path.join(ROOT, folder), os.path.join(work, folder),
                        ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(os.path.join(work, "tests"))
    for helper in BENCH_IMPORTS:
        shutil.copy(os.path.join(ROOT, "tests", helper), os.path.join(work, "tests", helper))
    bindir = os.path.dirname(sys.executable)
    assert os.path.isfile(os.path.join(bindir, "nxc")), "nxc is not installed beside this Python"
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               NXC_CACHE_DIR=os.path.join(docs_dir, "cache"), COLUMNS="80", PYTHONHASHSEED="0")
    env.pop("NXPATH", None)
    for command, expected in steps:
        expected, status = split_exit(expected) if expected is not None else (None, 0)
        proc = subprocess.run(["bash", "-c", command], cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT)
        got = "".join(line.rstrip() + "\n" for line in proc.stdout.splitlines())
        where = f"{os.path.relpath(path, ROOT)}:{fence}: $ {command}"
        if expected is not None and not output_pattern(expected).fullmatch(got):
            pytest.fail(f"{where}\n--- the page shows:\n" + "\n".join(expected) + f"\n--- it printed:\n{got}")
        assert proc.returncode == status, f"{where}\nexit status {proc.returncode}, the page says {status}\n{got}"


# A path the pages name, in one of the repository's folders (`nxc/gates/run.py`,
# `tests/seeds.sha256`, `docs/build.md`), with an extension or a trailing slash.
NAMED_PATH = re.compile(r"(?<![\w/.-])((?:nxc|tests|bench|runtime|docs|nx_src|grammar)/[\w/.-]*\w(?:\.\w+|/))")


def test_the_files_the_pages_name_exist():
    """Docs that cite a file which moved or never landed mislead the reader."""
    missing = []
    for page in PAGES:
        text = open(page, encoding="utf-8").read()
        for m in NAMED_PATH.finditer(text):
            name = m.group(1)
            if "*" in name or "NAME" in name or "<" in name:
                continue
            if not os.path.exists(os.path.join(ROOT, name)):
                line = text.count("\n", 0, m.start()) + 1
                missing.append(f"{os.path.relpath(page, ROOT)}:{line}: {name}")
    assert not missing, "\n".join(missing)

