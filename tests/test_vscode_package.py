"""The VS Code extension (editors/vscode/) packs into a .vsix with @vscode/vsce,
as a user builds it, and the .vsix holds what VS Code needs to load it; its
extension.js starts `nxc lsp` with the user's settings (run under node with
stand-ins for the `vscode` module: VS Code itself is not run here).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile

import pytest

from vscode_support import EXTENSION, node, node_modules

ACTIVATE = os.path.join(EXTENSION, "test", "activate.js")


@pytest.fixture(scope="module")
def vsix(tmp_path_factory):
    """Package a copy of the extension (its own node_modules left out, the
    installed packages linked in) and return the .vsix path."""
    modules = node_modules()
    root = tmp_path_factory.mktemp("vsce")
    copy = root / "vscode"
    shutil.copytree(EXTENSION, copy, ignore=shutil.ignore_patterns("node_modules", "*.vsix"))
    os.symlink(modules, copy / "node_modules")
    out = root / "nxc-nx.vsix"
    vsce = os.path.join(modules, "@vscode", "vsce", "vsce")
    r = subprocess.run([node(), vsce, "package", "--allow-missing-repository", "--skip-license", "-o", str(out)],
                       cwd=copy, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "DONE" in r.stdout and out.is_file()
    return str(out)


def test_the_vsix_holds_the_extension(vsix):
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        for name in ("extension/package.json", "extension/extension.js", "extension/language-configuration.json",
                     "extension/syntaxes/nx.tmLanguage.json", "extension.vsixmanifest",
                     "extension/node_modules/vscode-languageclient/node.js"):
            assert name in names, f"{name} is not in the .vsix"
        for name in ("extension.js", "language-configuration.json", "syntaxes/nx.tmLanguage.json"):
            with open(os.path.join(EXTENSION, name), "rb") as f:
                assert z.read("extension/" + name) == f.read(), name
        manifest = json.loads(z.read("extension/package.json"))
        vsixmanifest = z.read("extension.vsixmanifest").decode("utf-8")
    # what runs only in the tests, and the build tools, stay out
    assert not [n for n in names if n.startswith("extension/test/")]
    for dev in ("@vscode/vsce", "vscode-textmate", "vscode-oniguruma"):
        assert not [n for n in names if n.startswith(f"extension/node_modules/{dev}/")], dev
    assert 'Publisher="nxc"' in vsixmanifest and manifest["publisher"] == "nxc"
    assert manifest["engines"]["vscode"].startswith("^1.")
    lang, = manifest["contributes"]["languages"]
    assert lang["id"] == "nx" and lang["extensions"] == [".nx"]
    assert lang["configuration"].lstrip("./") in {n[len("extension/"):] for n in names}
    grammar, = manifest["contributes"]["grammars"]
    assert grammar["scopeName"] == "source.nx" and grammar["language"] == "nx"
    assert "extension/" + grammar["path"].lstrip("./") in names
    assert "extension/" + manifest["main"].lstrip("./") in names
    settings = manifest["contributes"]["configuration"]["properties"]
    assert settings["nxc.path"]["default"] == "nxc" and settings["nxc.extraArgs"]["default"] == []


def test_the_language_configuration():
    with open(os.path.join(EXTENSION, "language-configuration.json"), encoding="utf-8") as f:
        conf = json.load(f)
    assert conf["comments"] == {"lineComment": "//", "blockComment": ["/*", "*/"]}
    assert ["{", "}"] in conf["brackets"] and ["(", ")"] in conf["brackets"]
    assert {"open": "{", "close": "}"} in conf["autoClosingPairs"]

    rules = conf["indentationRules"]
    assert re.search(rules["increaseIndentPattern"], "func f(a: i64) -> i64 {")
    assert re.search(rules["increaseIndentPattern"], "    if x == 1 {  // why")
    assert not re.search(rules["increaseIndentPattern"], "    while i < n { i = i + 1 }")
    assert re.search(rules["decreaseIndentPattern"], "    }")


def activate(tmp_path, config: dict, folder: str | None = None, start_fails: bool = False) -> dict:
    env = dict(os.environ, NXC_TEST_CONFIG=json.dumps(config))
    env.pop("NXC_TEST_FOLDER", None)
    env.pop("NXC_TEST_START_FAILS", None)
    if folder:
        env["NXC_TEST_FOLDER"] = folder
    if start_fails:
        env["NXC_TEST_START_FAILS"] = "1"
    r = subprocess.run([node(), ACTIVATE], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_the_client_starts_nxc_lsp_from_path_by_default(tmp_path):
    report = activate(tmp_path, {})
    client, = report["clients"]
    assert client["server"] == {"command": "nxc", "args": ["lsp"], "options": {}}
    assert {"scheme": "file", "language": "nx"} in client["documentSelector"]
    assert {"scheme": "untitled", "language": "nx"} in client["documentSelector"]
    assert report["commands"] == ["nxc.restartServer"] and report["errors"] == []


def test_the_client_follows_the_settings(tmp_path):
    report = activate(tmp_path, {"path": "~/nxc/.venv/bin/nxc", "extraArgs": ["-I", "${workspaceFolder}/lib", "-I", "x"]},
                      folder="/ws")
    server = report["clients"][0]["server"]
    assert server["command"] == os.path.join(os.path.expanduser("~"), "nxc/.venv/bin/nxc")
    assert server["args"] == ["lsp", "-I", "/ws/lib", "-I", "x"]
    assert server["options"] == {"cwd": "/ws"}          # so a relative -I is the workspace's


def test_a_server_that_cannot_start_says_how_to_fix_it(tmp_path):
    report = activate(tmp_path, {"path": "/nowhere/nxc"}, start_fails=True)
    msg, = report["errors"]
    assert "/nowhere/nxc lsp" in msg and "nxc.path" in msg
