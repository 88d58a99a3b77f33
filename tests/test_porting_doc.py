"""docs/porting.md's worked example, run as written: the page is restored,
the stub written, the real module put in its place, every command's output
compared with the text shown, and the numpy comparison executed."""
from __future__ import annotations

import os
import re
import shlex

from nxc.cli import main

DOC = os.path.join(os.path.dirname(__file__), "..", "docs", "porting.md")
_FENCE = re.compile(r"^```(\w+)(?: (\S+))?\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_EXIT = '; echo "exit $?"'


def blocks():
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    # blocks marked runnable are tests/test_docs_runnable.py's, not the worked example's
    text = re.sub(r"^<!-- runnable -->\n```console\n.*?^```$", "", text, flags=re.MULTILINE | re.DOTALL)
    return _FENCE.findall(text)


def run_console(text: str, capsys) -> None:
    steps = re.split(r"^\$ ", text, flags=re.MULTILINE)[1:]
    for step in steps:
        command, _, expected = step.partition("\n")
        assert command.endswith(_EXIT) and command.startswith("nxc "), command
        argv = shlex.split(command[: -len(_EXIT)])[1:]
        capsys.readouterr()
        status = main(argv)
        captured = capsys.readouterr()
        got = (captured.out + captured.err).splitlines() + [f"exit {status}"]
        assert got == expected.splitlines(), f"$ {command}"


def test_worked_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    kinds = []
    for kind, name, body in blocks():
        kinds.append(kind)
        if kind == "page":
            (tmp_path / name).write_text(body[:-1], encoding="utf-8")     # no newline after the last line
        elif kind == "nx":
            (tmp_path / name).write_text(body, encoding="utf-8")
        elif kind == "console":
            run_console(body, capsys)
        elif kind == "python":
            exec(compile(body, DOC, "exec"), {})
            assert "max |nx - numpy| = " in capsys.readouterr().out
    assert kinds == ["page", "console", "console", "nx", "console", "python"]
    assert "STUB" not in (tmp_path / "port" / "nx_f32_sumsq.nx").read_text()
