"""Float32 unboxing in the C backend changes speed, never bits."""
from __future__ import annotations

import glob
import os

import pytest

from nxc.backend.c.build import build, load
from nxc.diagnostics import Diagnostics
from nxc.backend.c.emit import emit_c
from nxc.check.frontend import check_file
from nxc.paths import bundled_dir
from nxc.gates.run import run_gate

DRIVER = os.path.join(os.path.dirname(__file__), "nx", "unbox_driver.nx")


def _lib(program, unbox: bool):
    emitted = emit_c(program, unbox_f32=unbox)
    return load(build(emitted)), emitted


def test_unboxed_code_uses_floats():
    program = check_file(os.path.join(bundled_dir(), "nx_f32_attention.nx"), diags=Diagnostics())
    text = emit_c(program).text
    assert "float lf_acc = " in text
    assert "lf_acc = (lf_acc + (nxrt_f32_from_bits(" in text
    plain = emit_c(program, unbox_f32=False).text
    assert "float lf_" not in plain and "nxrt_nx_f32_add(" in plain


def test_unboxed_and_plain_agree_bit_for_bit_on_awkward_values():
    program = check_file(DRIVER, diags=Diagnostics())
    results = []
    for unbox in (False, True):
        (lib, ffi), _ = _lib(program, unbox)
        out = ffi.new("int64_t[4000]")
        h_ops = ffi.new("uint64_t *")
        h_k = ffi.new("uint64_t *")
        assert lib.nxw_ub_ops(4000, out, h_ops) == 0
        assert lib.nxw_ub_kernels(h_k) == 0
        results.append((h_ops[0], h_k[0], list(out)))
    assert results[0] == results[1]


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(bundled_dir(), "*.nx"))),
                         ids=os.path.basename)
def test_bundled_gates_pass_on_the_plain_path_too(path):
    program = check_file(path, diags=Diagnostics())
    if program.entry is None:
        return
    emitted = emit_c(program, unbox_f32=False)
    outcome = run_gate(program, "c", timeout=120, emitted=emitted)
    assert outcome.status == "PASS", (outcome.status, outcome.value)


def test_float_operands_are_evaluated_left_to_right():
    from nxc.gates.run import execute
    program = check_file(os.path.join(os.path.dirname(__file__), "nx", "unbox_order.nx"), diags=Diagnostics())
    text = emit_c(program).text
    assert "float nx_t" in text        # the call's result is held before the global is read
    outcomes = execute(program, "both")
    assert [o.status for o in outcomes] == ["PASS", "PASS"], [(o.status, o.value) for o in outcomes]


def _c_function(text: str, name: str) -> str:
    """The body of the emitted C function of .nx function `name`."""
    start = text.index(f" nxf_{name}(", text.index(f" nxf_{name}(") + 1)    # the definition, past the prototype
    return text[start:text.index("\n}\n", start)]


def test_a_sum_started_from_a_load_is_a_float_where_its_bits_are_never_seen():
    # nxc/lower/f32_unbox.py: a local also set from loaded bits is a float only where no
    # observation can see those bits (they may be a NaN with another payload)
    program = check_file(os.path.join(os.path.dirname(__file__), "nx", "unbox_bits.nx"), diags=Diagnostics())
    text = emit_c(program, checked=False).text
    kernel = _c_function(text, "sum_into")
    assert "float lf_s = nxrt_f32_from_bits(" in kernel
    assert kernel.count("nxrt_f32_lane_bits(") == 1        # at the store only, not at each add
    assert "float lf_s" in _c_function(text, "compared_only")
    assert "float lf_s" in _c_function(text, "seen_through_copy")
    for name in ("sum_from_load", "seen_before_add", "seen_in_loop", "seen_after_if", "seen_after_break",
                 "seen_after_continue"):
        assert "float lf_s" not in _c_function(text, name), name
    assert "int64_t l_u" in _c_function(text, "seen_through_copy")


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])
def test_loaded_nan_payloads_survive_where_they_are_seen(checked):
    # the gate checks each function on NaNs of other payloads; C and Python agree with it
    from nxc.gates.run import execute
    program = check_file(os.path.join(os.path.dirname(__file__), "nx", "unbox_bits.nx"), diags=Diagnostics())
    outcomes = execute(program, "both", checked=checked)
    assert [o.status for o in outcomes] == ["PASS", "PASS"], [(o.status, o.value) for o in outcomes]
