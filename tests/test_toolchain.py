"""Compile and link without the GCC driver (nxc/backend/c/toolchain.py): the
commands the driver would run are probed once (`-###`) and kept in the cache;
cc1 + as, and ld, then run directly. What they make must be byte for byte
what the driver makes, and anything the probe does not recognise (a wrapper,
an unexpected shape, NXC_DRIVER=1) must leave the driver in charge, with the
same error messages.
"""
from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys

import pytest

from nxc.backend.c import build as c_build
from nxc.backend.c import objects, toolchain
from nxc.backend.registry import backend_for
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "bench", "gen_tree.py")
_RUN = subprocess.run
CC_NAME = os.path.basename(c_build.compiler()[0])      # how the driver shows up in the programs run

plain_gcc = pytest.mark.skipif(not toolchain._is_plain_gcc(tuple(c_build.compiler())),
                               reason="the compiler is not GCC's driver (the driver stays in charge)")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NXC_DRIVER", raising=False)
    monkeypatch.setattr(toolchain, "_plans", {})
    monkeypatch.setattr(objects, "_pch_verified", {})
    monkeypatch.setattr(objects, "_pch_failed", set())
    return tmp_path


def _programs_run(monkeypatch) -> list[str]:
    """The basenames of every program nxc's build runs from now on."""
    seen: list[str] = []

    def spy(cmd, *args, **kwargs):
        seen.append(os.path.basename(cmd[0]))
        return _RUN(cmd, *args, **kwargs)
    monkeypatch.setattr(subprocess, "run", spy)
    return seen


def _build_tree(tree: str, checked: bool = True) -> None:
    for name in sorted(os.listdir(tree)):
        if name.endswith(".nx"):
            program = check_file(os.path.join(tree, name), diags=Diagnostics())
            backend_for("c", checked=checked).prepare(program, purpose="gate", load=False)


def _objects(cache: str) -> dict[str, bytes]:
    """Every object of the build cache, by name (its key)."""
    folder = os.path.join(cache, "c", "obj")
    found = {}
    for name in os.listdir(folder):
        if name.endswith(".o"):
            with open(os.path.join(folder, name), "rb") as f:
                found[name] = f.read()
    return found


def _output_of(cmd: list[str]) -> str:
    return cmd[cmd.index("-o") + 1]


@plain_gcc
@pytest.mark.parametrize("checked", [True, False])
def test_objects_and_libraries_are_byte_identical_to_the_drivers(fresh, monkeypatch, checked):
    """Every object and library of a tree's gates, made without the driver, is
    compared with what the driver command makes of the same inputs into the
    same path (a library holds its output path: gold names its version
    definition after it); then a second cache built with NXC_DRIVER=1 holds
    the same objects under the same keys."""
    tree = str(fresh / "tree")
    subprocess.run([sys.executable, GEN, tree, "--modules", "6", "--graph", "random", "--seed", "3"],
                   check=True, capture_output=True)
    compared = {"compile": 0, "link": 0}
    real = objects._run_compiler

    def both_ways(cmd, direct=None):
        if "c-header" in cmd:           # the precompiled header, once: the driver's
            return real(cmd, direct)
        assert direct is not None, "the driver ran although the probe found it plain GCC"
        out = _output_of(cmd)
        real(cmd)                       # the driver
        with open(out, "rb") as f:
            by_driver = f.read()
        os.remove(out)
        real(cmd, direct)
        with open(out, "rb") as f:
            assert f.read() == by_driver, shlex.join(cmd)
        compared["link" if "-c" not in cmd else "compile"] += 1
    monkeypatch.setattr(objects, "_run_compiler", both_ways)
    _build_tree(tree, checked)
    # the tree's modules and the bundled ones they import, the runtime (a gate compiles nothing of its own)
    assert compared["link"] == 6 and compared["compile"] >= 6 + 1
    monkeypatch.setattr(objects, "_run_compiler", real)
    # the same objects under the same keys as a build by the driver alone
    direct_objects = _objects(str(fresh / "cache"))
    monkeypatch.setenv("NXC_CACHE_DIR", str(fresh / "driver"))
    monkeypatch.setenv("NXC_DRIVER", "1")
    ran = _programs_run(monkeypatch)
    _build_tree(tree, checked)
    assert "cc1" not in ran and not any(n.startswith("ld") for n in ran)
    assert _objects(str(fresh / "driver")) == direct_objects


@plain_gcc
def test_the_probe_runs_once_and_is_kept_sealed_in_the_cache(fresh, write_nx, monkeypatch):
    path = write_nx("func main() -> i64 {\n    return 0\n}\n")
    ran = _programs_run(monkeypatch)
    assert execute(check_file(path, diags=Diagnostics()), "c", use_cache=False)[0].status == "PASS"
    probes = ran.count(CC_NAME)
    assert probes > 0 and "cc1" in ran
    plans = os.listdir(fresh / "cache" / "c" / "toolchain")
    assert plans and all(name.endswith(".json") for name in plans)
    # another process (here: a fresh memo) reads the plans, it does not probe again
    monkeypatch.setattr(toolchain, "_plans", {})
    ran.clear()
    assert execute(check_file(path, diags=Diagnostics()), "c", use_cache=False)[0].status == "PASS"
    assert CC_NAME not in ran and "cc1" in ran
    # a plan that is not sealed by this cache is probed again, never used
    for name in plans:
        (fresh / "cache" / "c" / "toolchain" / name).write_bytes(b'{"steps": [["/bin/false"]]}')
    monkeypatch.setattr(toolchain, "_plans", {})
    ran.clear()
    assert execute(check_file(path, diags=Diagnostics()), "c", use_cache=False)[0].status == "PASS"
    assert "false" not in ran and ran.count(CC_NAME) > 0


def _wrapper(folder, name: str) -> str:
    """A compiler wrapper script (as ccache or distcc would be) in front of the real compiler."""
    script = folder / name
    script.write_text(f"#!/bin/sh\nexec {c_build.compiler()[0]} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_a_wrapper_or_nxc_driver_keeps_the_driver(fresh, write_nx, monkeypatch):
    path = write_nx("func main() -> i64 {\n    return 0\n}\n")
    monkeypatch.setenv("CC", _wrapper(fresh, "ccache-like"))
    ran = _programs_run(monkeypatch)
    assert execute(check_file(path, diags=Diagnostics()), "c", use_cache=False)[0].status == "PASS"
    assert "cc1" not in ran and not any(n.startswith("ld") for n in ran) and "ccache-like" in ran
    monkeypatch.delenv("CC")
    monkeypatch.setenv("NXC_DRIVER", "1")
    ran.clear()
    assert execute(check_file(path, diags=Diagnostics()), "c", use_cache=False)[0].status == "PASS"
    assert "cc1" not in ran and not any(n.startswith("ld") for n in ran)


@plain_gcc
@pytest.mark.parametrize("shape", ["three steps", "no assembler", "different bytes"])
def test_an_unexpected_probe_keeps_the_driver(fresh, write_nx, monkeypatch, shape):
    real = toolchain._driver_commands

    def odd(cmd):
        steps = real(cmd)
        if shape == "three steps":
            return steps + [["/bin/true"]]
        if shape == "no assembler":
            return steps[:1]
        return steps
    monkeypatch.setattr(toolchain, "_driver_commands", odd)
    if shape == "different bytes":
        monkeypatch.setattr(toolchain, "_same_bytes", lambda a, b: False)
    path = write_nx("func main() -> i64 {\n    return 0\n}\n")
    ways = []
    real_run = objects._run_compiler
    monkeypatch.setattr(objects, "_run_compiler",
                        lambda cmd, direct=None: ways.append(("link" if "-c" not in cmd else "compile", direct))
                        or real_run(cmd, direct))
    assert execute(check_file(path, diags=Diagnostics()), "c", use_cache=False)[0].status == "PASS"
    # no object is compiled without the driver; the link neither, unless its probe was fine
    assert {kind for kind, _ in ways} == {"compile", "link"}
    assert all(direct is None for kind, direct in ways if kind == "compile")
    links = [direct for kind, direct in ways if kind == "link"]
    if shape == "no assembler":
        assert all(direct is not None for direct in links)
    else:
        assert all(direct is None for direct in links)
    assert all(plan is None for key, plan in toolchain._plans.items()
               if shape != "no assembler" or key.startswith("cc-"))


@plain_gcc
def test_a_compiler_failure_names_the_driver_command_and_shows_stderr(fresh, monkeypatch):
    folder = fresh / "obj"
    folder.mkdir()
    target = str(folder / "bad.o")
    with pytest.raises(c_build.BuildError) as info:
        objects._compile_object("int f(void) { return undeclared_name; }\n", target, "2")
    message = str(info.value)
    assert "this is a bug in nxc" in message
    assert "undeclared_name" in message and "error" in message                    # cc1's own stderr
    first = message.splitlines()[1]
    assert first.startswith(c_build.compiler()[0]) and " -c " in first            # the command to run again
    assert "(run without the driver: failed in " in message and "cc1" in message
    assert not os.path.exists(target)


@plain_gcc
def test_a_removed_program_is_probed_again(fresh, monkeypatch):
    cc = c_build.compiler()
    ident = c_build.compiler_identity(tuple(cc))
    args = objects.object_flags("2")
    plan = toolchain.plan_compile(cc, ident, args)
    assert plan is not None and os.path.basename(plan[0][0]) == "cc1"
    key = next(iter(toolchain._plans))
    stored = fresh / "cache" / "c" / "toolchain" / (key + ".json")
    assert stored.exists()
    monkeypatch.setattr(toolchain, "_plans", {})
    monkeypatch.setattr(toolchain, "_stable", lambda steps: False)
    probed = []
    real = toolchain._probe_compile
    monkeypatch.setattr(toolchain, "_probe_compile", lambda *a: probed.append(1) or real(*a))
    assert toolchain.plan_compile(cc, ident, args) == plan
    assert probed == [1]


@plain_gcc
def test_a_plan_is_kept_per_host_cpu(fresh, monkeypatch):
    """-march=native is expanded by the driver into the host's -m flags: a
    cache folder shared with another machine must probe again there."""
    cc = c_build.compiler()
    ident = c_build.compiler_identity(tuple(cc))
    args = objects.object_flags("2")            # -march=native
    here = toolchain.plan_compile(cc, ident, args)
    assert here is not None and any(a.startswith("-march=") and a != "-march=native" for a in here[0])
    monkeypatch.setattr(toolchain, "host_cpu", lambda: "vendor_id=elsewhere")
    probed = []
    real = toolchain._probe_compile
    monkeypatch.setattr(toolchain, "_probe_compile", lambda *a: probed.append(1) or real(*a))
    toolchain.plan_compile(cc, ident, args)
    assert probed == [1]
    assert len(os.listdir(fresh / "cache" / "c" / "toolchain")) == 2


def test_each_search_folder_is_named_once_first_place_kept(tmp_path):
    """ld reads every -L folder before it looks for a library: a folder named
    again (through `..` or a symbolic link) is left out, and nothing else moves."""
    lib = tmp_path / "lib"
    (lib / "sub").mkdir(parents=True)
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "link").symlink_to(lib)
    args = ["-shared", f"-L{lib}", f"-L{other}", "crt.o", f"-L{lib}/sub/..", f"-L{tmp_path}/link", "-lm",
            f"-L{other}/", "-Lrelative", "-Lrelative", "-lc"]
    assert toolchain._search_folders_once(args) == ["-shared", f"-L{lib}", f"-L{other}", "crt.o", "-lm",
                                                    "-Lrelative", "-Lrelative", "-lc"]


@plain_gcc
def test_the_link_plan_names_each_folder_once_and_its_libraries_must_stay(fresh, monkeypatch):
    cc = c_build.compiler()
    ident = c_build.compiler_identity(tuple(cc))
    before = [*c_build.flags_for("2"), *toolchain.link_flags()]
    plan = toolchain.plan_link(cc, ident, before, ["-lm"])
    assert plan is not None
    folders = [os.path.realpath(a[2:]) for a in plan if a.startswith("-L/")]
    assert folders and len(folders) == len(set(folders))
    # a start file the plan names by path, gone: the plan is not used again
    start = next(a for a in plan if a.endswith(".o") and os.path.isabs(a) and not a.startswith("/nxc-probe"))
    assert toolchain._stable([plan])
    real_isfile = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: p != start and real_isfile(p))
    assert not toolchain._stable([plan])
