"""The fixed costs of a gate's C build (nxc/backend/c/objects.py): every
object and entry is compiled against a precompiled nx_runtime.h (GCC), one
per build configuration, sealed like every cache entry; the link uses gold
when the compiler can. None of it may change what a gate computes.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from nxc.backend.c import objects
from nxc.backend.registry import backend_for
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute

GATE = """
    import "nx_syscalls.nx"

    struct P { x: i64, y: i64 }

    func area(p: *P) -> i64 { return p.x * p.y }

    func main() -> i64 {
        let q: *P = sys_mmap(16) as *P
        q.x = 3
        q.y = 4
        if area(q) != 12 { return 1 }
        if 7 / (q.x - 2) != 7 { return 2 }
        return 0
    }
"""

needs_gcc = pytest.mark.skipif(not objects.pch_supported(), reason="precompiled headers are GCC's (CC is clang)")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NXC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(objects, "_pch_verified", {})
    monkeypatch.setattr(objects, "_pch_failed", set())
    return tmp_path / "cache"


def _commands(monkeypatch, probes: list | None = None) -> list[list[str]]:
    """Every compiler command nxc runs from now on (run as usual); into
    `probes`, for each `cc -c` of a generated file, the stderr of the same
    command with -H -Winvalid-pch (which header GCC really read)."""
    seen: list[list[str]] = []
    real = objects._run_compiler

    def recording(cmd, direct=None):
        seen.append(list(cmd))
        if probes is not None and "-c" in cmd and not cmd[cmd.index("-c") + 1].endswith("nx_runtime.c"):
            probe = subprocess.run(cmd[:1] + ["-H", "-Winvalid-pch"] + cmd[1:-2] + ["-o", os.devnull],
                                   capture_output=True, text=True)
            assert probe.returncode == 0, probe.stderr
            probes.append((list(cmd), probe.stderr))
        return real(cmd, direct)
    monkeypatch.setattr(objects, "_run_compiler", recording)
    return seen


def _build(path: str, checked: bool = True):
    program = check_file(path, diags=Diagnostics())
    return backend_for("c", checked=checked).prepare(program, purpose="gate", load=False).built


@needs_gcc
@pytest.mark.parametrize("checked", [True, False])
def test_objects_and_entries_are_compiled_with_the_precompiled_header(write_nx, fresh_cache, monkeypatch, checked):
    path = write_nx(GATE, "g.nx")
    probes: list = []
    seen = _commands(monkeypatch, probes)
    _build(path, checked)
    pch = os.path.join(objects.objects_dir(), objects.pch_key(checked, "2"))
    gch = os.path.join(pch, "nx_runtime.h.gch")
    assert len([c for c in seen if "c-header" in c]) == 1
    assert len(probes) == 2                         # the module's object and the gate's entry
    for cmd, stderr in probes:
        assert cmd[cmd.index("-I") + 1] == pch, cmd     # searched before the real header's folder
        # GCC falls back to the real header silently: -H says which it read
        assert f"! {gch}" in stderr.splitlines(), stderr[:2000]
        assert "not used because" not in stderr and "nx_runtime.h\n" not in stderr
    assert objects.pch_key(True, "2") != objects.pch_key(False, "2")
    assert execute(check_file(path, diags=Diagnostics()), "c", checked=checked)[0].status == "PASS"


@needs_gcc
def test_a_damaged_or_planted_precompiled_header_is_never_used(write_nx, fresh_cache, monkeypatch):
    path = write_nx(GATE, "g.nx")
    _build(path)
    folder = objects.ensure_pch(True, "2")
    gch = os.path.join(folder, "nx_runtime.h.gch")
    with open(gch, "r+b") as f:                     # a .gch is loaded into the compiler
        f.seek(4096)
        f.write(b"\xff" * 64)
    monkeypatch.setattr(objects, "_pch_verified", {})   # a new process: the seal is checked again
    seen = _commands(monkeypatch)
    assert objects.ensure_pch(True, "2") == folder
    assert [c for c in seen if "c-header" in c]     # rebuilt, not used as found
    assert objects.stamped(gch)
    assert execute(check_file(path, diags=Diagnostics()), "c")[0].status == "PASS"


@needs_gcc
@pytest.mark.parametrize("edit", [("!= 12 { return 1 }", "!= 13 { return 1 }"),      # FAIL, with captures
                                  ("(q.x - 2)", "(q.x - 3)")])                      # a trap in the gate
def test_without_a_precompiled_header_the_gate_is_the_same(write_nx, fresh_cache, monkeypatch, edit):
    path = write_nx(GATE.replace(*edit), "g.nx")
    seen = _commands(monkeypatch)
    with_pch = execute(check_file(path, diags=Diagnostics()), "c")[0]
    assert [c for c in seen if "c-header" in c]
    monkeypatch.setattr(objects, "pch_supported", lambda: False)
    monkeypatch.setenv("NXC_CACHE_DIR", str(fresh_cache) + "-2")
    seen.clear()
    without = execute(check_file(path, diags=Diagnostics()), "c")[0]
    assert seen and not [c for c in seen if "c-header" in c]
    fields = lambda o: (o.status, o.value, o.site, o.message, o.captured, o.stack)     # noqa: E731
    assert fields(with_pch) == fields(without)
    assert with_pch.status in ("FAIL", "RUNTIME-ERROR") and with_pch.site is not None


def test_old_precompiled_headers_are_pruned(fresh_cache, monkeypatch):
    folder = objects.objects_dir()
    for k in range(objects.MAX_PCH + 3):
        d = os.path.join(folder, f"pch-{k:02d}")
        os.makedirs(d)
        open(os.path.join(d, "nx_runtime.h.gch"), "w").close()
        os.utime(d, (1000 + k, 1000 + k))           # pch-00 used longest ago
    keep = os.path.join(folder, "pch-00")
    os.utime(keep, (5000, 5000))
    objects._prune_pch(keep)
    left = sorted(n for n in os.listdir(folder) if n.startswith("pch-"))
    assert len(left) == objects.MAX_PCH and "pch-00" in left
    assert left[1:] == [f"pch-{k:02d}" for k in range(4, objects.MAX_PCH + 3)]


def test_the_link_command_uses_the_linker_flags_and_the_key_covers_them(write_nx, fresh_cache, monkeypatch):
    path = write_nx(GATE, "g.nx")
    seen = _commands(monkeypatch)
    built = _build(path)
    link = [c for c in seen if "-shared" in c and "-c" not in c]
    assert len(link) == 1 and built.relinked
    assert all(f in link[0] for f in objects.link_flags())
    if objects.link_flags():
        assert "-fuse-ld=gold" in link[0]
    # another linker is another library
    real = objects.link_flags()
    key = objects.LinkedC(check_file(path, diags=Diagnostics()), checked=True).key
    monkeypatch.setattr(objects, "link_flags", lambda: ())
    other = objects.LinkedC(check_file(path, diags=Diagnostics()), checked=True).key
    assert (key != other) == bool(real)


def _plant(memo, content) -> None:
    """Put `content` at `memo`: bytes as they are, else sealed as nxc seals it (a well-formed entry)."""
    from nxc.cache import write_sealed_json
    if isinstance(content, bytes):
        memo.write_bytes(content)
    else:
        assert write_sealed_json(str(memo), memo.name, content)


def test_a_damaged_or_planted_linker_memo_is_asked_again(fresh_cache, monkeypatch):
    """The memo of whether the compiler links with gold was plain text, split
    into the link's flags: a damaged one put its bytes on the linker's command
    line (every gate an ERROR: "unrecognized command-line option"), one that
    was not UTF-8 raised a traceback. Now it is sealed, and read back only as
    one of its two answers."""
    from nxc.backend.c import toolchain
    from nxc.cache import read_sealed_json
    if not shutil.which("ld.gold"):
        pytest.skip("no ld.gold: the memo is never written")
    monkeypatch.delenv("NXC_NO_GOLD", raising=False)
    toolchain.link_flags.cache_clear()
    real = toolchain.link_flags()
    [memo] = (fresh_cache / "c" / "toolchain").glob("gold-*.json")
    for planted in (b"\xff\xfe-fuse-ld=gold", b"-Wl,--defsym=planted=1", ["-Wl,--defsym=planted=1"], "-fuse-ld=gold"):
        _plant(memo, planted)
        toolchain.link_flags.cache_clear()
        assert toolchain.link_flags() == real, planted
        assert read_sealed_json(str(memo), memo.name) == list(real)     # asked again, and kept again
    toolchain.link_flags.cache_clear()


def test_a_damaged_or_planted_compiler_identity_memo_is_asked_again(fresh_cache):
    """The compiler's `--version` line is part of every key; its memo was
    plain text: bytes that were not UTF-8 gave a traceback on every run, and
    other text went into every key. Now it is sealed and checked."""
    from nxc.backend.c import build as c_build
    from nxc.cache import read_sealed_json
    cc = tuple(c_build.compiler())
    c_build.compiler_identity.cache_clear()         # kept by the process: asked from the memo again
    real = c_build.compiler_identity(cc)
    [memo] = (fresh_cache / "c" / "toolchain").glob("ident-*.json")
    for planted in (b"\xff\xfe", b"gcc 99 (planted)", "", "two\nlines", ["not", "a", "line"]):
        _plant(memo, planted)
        c_build.compiler_identity.cache_clear()
        assert c_build.compiler_identity(cc) == real, planted
        assert read_sealed_json(str(memo), memo.name) + "|" + real.rpartition("|")[2] == real
    c_build.compiler_identity.cache_clear()
