"""`nxc COMMAND --help` documents every argument; a misspelt subcommand gets a
did-you-mean; sizes that would read as "0 MiB" are refused."""
from __future__ import annotations

import argparse

import pytest

from nxc.cli import build_parser, main


def _subcommands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices.items())


def test_every_subcommand_is_seen():
    names = {name for name, _ in _subcommands()}
    assert {"check", "run", "emit-c", "emit-py", "test", "cache", "port", "fmt", "info", "lsp", "doc"} <= names


@pytest.mark.parametrize("name,parser", _subcommands(), ids=[n for n, _ in _subcommands()])
def test_every_argument_has_help(name, parser):
    undocumented = [a.dest for a in parser._actions
                    if a.help != argparse.SUPPRESS and not (a.help or "").strip()]
    assert not undocumented, f"nxc {name}: arguments without help: {undocumented}"
    text = " ".join(parser.format_help().split())
    for a in parser._actions:
        if a.help != argparse.SUPPRESS and "%" not in a.help:       # shown, not only stored
            assert " ".join(a.help.split())[:30] in text


def test_fmt_names_its_argument_one_way():
    fmt = dict(_subcommands())["fmt"]
    assert "FILE" not in fmt.format_help() and "PATH" in fmt.format_help()


def test_a_misspelt_subcommand_gets_a_did_you_mean(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tset"])
    assert exc.value.code == 2
    assert "did you mean 'test'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["xyzzy"])
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize("size", ["1", "1K", "15M"])
def test_a_memory_limit_too_small_is_refused(size, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["test", "--memory-limit", size, "."])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "at least 16M (or 0 for no limit)" in err and "0 MiB" not in err


def test_watch_has_no_short_form_because_w_is_no_warn():
    subs = dict(_subcommands())
    test_opts = {s for a in subs["test"]._actions for s in a.option_strings}
    assert "--watch" in test_opts and "-w" not in test_opts
    assert "-w" in {s for a in subs["check"]._actions for s in a.option_strings}
    assert "-w is --no-warn" in subs["test"].format_help().replace("\n", " ").replace("  ", " ")
