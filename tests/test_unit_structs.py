"""A module's object C defines only the structs (and division helpers) it uses (nxc/backend/c/units.py,
_unit_parts): those its functions (own, gate, copies) read or pass, with the
structs they embed by value; a struct only named (a prototype, a pointer
field) is declared; one nothing names is left out. Before, every object
repeated every struct of its import closure.
"""
from __future__ import annotations

import re

import pytest

from nxc.backend.c.closure import import_closure
from nxc.backend.c.emit import emit_c, emit_module_c
from nxc.backend.c.objects import LinkedC
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute

LIB = """
    import "nx_syscalls.nx"

    struct Inner { a: i64, b: i64 }
    struct Far { x: i64 }
    struct Outer { inner: Inner, far: *Far }
    struct Unused { y: i64 }
    struct OnlyNamed { z: i64 }
    struct ViaCopy { v: i64 }

    func lib_sum(o: *Outer) -> i64 {
        var i: i64 = 0
        while i < 1 { i = i + 1 }
        return o.inner.a + o.inner.b
    }

    func lib_named(p: *OnlyNamed) -> i64 {
        var i: i64 = 0
        while i < 1 { i = i + 1 }
        return p.z
    }

    func lib_copied(addr: i64) -> i64 {
        let c: *ViaCopy = addr as *ViaCopy
        return c.v + 1
    }

    func lib_unused(u: *Unused) -> i64 {
        var i: i64 = 0
        while i < 1 { i = i + 1 }
        return u.y
    }
"""

TOP = """
    import "lib.nx"

    func main() -> i64 {
        let o: *Outer = sys_mmap(64) as *Outer
        o.inner.a = 2
        o.inner.b = 3
        if lib_sum(o) != 5 { return 1 }
        let c: *i64 = sys_mmap(8) as *i64
        c[0] = 41
        if lib_copied(c as i64) != 42 { return 2 }
        if lib_named(sys_mmap(8) as *OnlyNamed) == 7 { return 3 }
        return 0
    }
"""


def _defined(text: str) -> set[str]:
    return set(re.findall(r"^struct nxs_(\w+) \{", text, re.M))


def _declared(text: str) -> set[str]:
    return set(re.findall(r"^struct nxs_(\w+);", text, re.M))


@pytest.fixture
def top(write_nx):
    write_nx(LIB, "lib.nx")
    return write_nx(TOP.replace("if lib_named(sys_mmap(8) as *OnlyNamed) == 7 { return 3 }\n", ""), "top.nx")


def _unit_text(path: str, name: str, checked: bool) -> str:
    program = check_file(path, diags=Diagnostics())
    module = next(m for m in program.graph.modules if m.source.path.endswith(name))
    return emit_module_c(program, module, import_closure(program, module), checked=checked).text


@pytest.mark.parametrize("checked", [True, False])
def test_the_root_defines_what_it_reads_and_what_that_embeds(top, checked):
    text = _unit_text(top, "top.nx", checked)
    # Outer is read (o.inner.a), Inner is embedded in it by value, ViaCopy is
    # read by the copy of lib_copied the root holds (static inline).
    assert "static inline int64_t nxf_lib_copied(" in text
    assert _defined(text) == {"Outer", "Inner", "ViaCopy"}
    # Far: a pointer field of Outer, declared only; Unused and OnlyNamed: never named here.
    assert _declared(text) == {"Outer", "Inner", "ViaCopy", "Far"}
    assert text.index("struct nxs_Inner {") < text.index("struct nxs_Outer {")


def test_a_struct_only_in_a_prototype_is_declared(write_nx):
    write_nx(LIB, "lib.nx")
    top = write_nx(TOP, "top.nx")
    text = _unit_text(top, "top.nx", True)
    assert "int64_t nxf_lib_named(struct nxs_OnlyNamed * l_p);" in text
    assert "OnlyNamed" in _declared(text) and "OnlyNamed" not in _defined(text)


def test_the_library_defines_its_own(top):
    text = _unit_text(top, "lib.nx", True)
    assert _defined(text) == {"Outer", "Inner", "OnlyNamed", "ViaCopy", "Unused"}


def test_the_gate_builds_and_passes(write_nx):
    write_nx(LIB, "lib.nx")
    top = write_nx(TOP, "top.nx")
    program = check_file(top, diags=Diagnostics())
    assert execute(program, "c")[0].status == "PASS"
    assert execute(program, "c", checked=False)[0].status == "PASS"


def test_the_object_key_follows_a_used_struct_s_layout(write_nx):
    """The struct choice is made from the module's bodies and its closure's
    interfaces; a layout change of a struct the root uses changes its key."""
    write_nx(LIB, "lib.nx")
    top = write_nx(TOP, "top.nx")

    def root_key():
        linked = LinkedC(check_file(top, diags=Diagnostics()), checked=True)
        return next(u.key for u in linked.units if u.module.source.path == top)
    before = root_key()
    write_nx(LIB.replace("struct Far { x: i64 }", "struct Far { x: i64, w: i64 }"), "lib.nx")
    assert root_key() != before


def test_only_the_division_helpers_it_calls(write_nx):
    """The skeleton's division helpers (module.c.j2) in a module's object: those
    of the types it divides, none if it does not divide; the whole program
    keeps all of them."""
    write_nx(LIB + "\n    func lib_div(a: i64, b: u32) -> i64 { return a / 3 + (b % (b | 1)) as i64 }\n", "lib.nx")
    top = write_nx(TOP, "top.nx")
    lib_text = _unit_text(top, "lib.nx", True)
    assert set(re.findall(r"static inline \w+ nx_(div|rem)_(\w+)\(", lib_text)) == {
        ("div", "i64"), ("rem", "i64"), ("div", "u32"), ("rem", "u32")}
    assert "nx_div_" not in _unit_text(top, "top.nx", True)
    program = check_file(top, diags=Diagnostics())
    assert len(re.findall(r"static inline \w+ nx_div_\w+\(", emit_c(program).text)) == 8
