"""Every bundled module compiles; every gate in nx_src/ passes on the C backend."""
from __future__ import annotations

import filecmp
import glob
import hashlib
import os

import pytest

from nxc.diagnostics import Diagnostics
from nxc.check.frontend import check_file
from nxc.paths import bundled_dir
from nxc.gates.run import execute

MODULES = sorted(glob.glob(os.path.join(bundled_dir(), "*.nx")))
SEEDS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "seeds")   # ../shared/seeds of the checkout
SEED_SUMS = os.path.join(os.path.dirname(__file__), "seeds.sha256")


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_bundled_module(path):
    program = check_file(path, diags=Diagnostics())
    if program.entry is None:
        return  # a library module: checking it clean is the test
    outcome = execute(program, "c", timeout=120)[0]
    assert outcome.status == "PASS", (outcome.status, outcome.value, outcome.message)


def test_seeds_are_byte_identical():
    """The seeds bundled in nx_src/ are the Nishi files byte for byte. The
    SHA-256 sums kept in tests/seeds.sha256 make this hold in any clone; where
    the shared seeds folder sits beside the checkout (../shared/seeds), the
    originals are compared too, which also keeps the sums file honest."""
    sums = {}
    with open(SEED_SUMS, encoding="utf-8") as f:
        for line in f:
            digest, name = line.split()
            sums[name] = digest
    assert sorted(sums) == ["nx_f32_attn_paged.nx", "nx_f32_gqa_attention.nx"]
    for name, digest in sums.items():
        assert sha256(os.path.join(bundled_dir(), name)) == digest, f"nx_src/{name} is not the seed"
    if os.path.isdir(SEEDS):
        originals = sorted(glob.glob(os.path.join(SEEDS, "*.nx")))
        assert [os.path.basename(p) for p in originals] == sorted(sums)
        for seed in originals:
            assert sha256(seed) == sums[os.path.basename(seed)]
            assert filecmp.cmp(seed, os.path.join(bundled_dir(), os.path.basename(seed)), shallow=False)


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_breaking_a_check_fails_with_its_value_and_line(tmp_path):
    """Copy the gqa seed, expect 5 instead of 4: the gate must fail at return 20."""
    src = open(os.path.join(bundled_dir(), "nx_f32_gqa_attention.nx"), encoding="utf-8").read()
    broken = src.replace("let e4: i64 = nx_i32_to_f32(4)", "let e4: i64 = nx_i32_to_f32(5)")
    assert broken != src
    path = tmp_path / "nx_f32_gqa_attention.nx"
    path.write_text(broken, encoding="utf-8")
    outcome = execute(check_file(str(path), diags=Diagnostics()), "c")[0]
    assert outcome.status == "FAIL" and outcome.value == 20
    line = outcome.gate_return.node.pos.line
    assert "return 20" in broken.splitlines()[line - 1]


@pytest.mark.parametrize("opt", ["0", "native"])
@pytest.mark.parametrize("name", ["nx_f32.nx", "nx_f32_gqa_attention.nx", "nx_paged_kv_gate.nx"])
def test_gates_pass_at_every_optimisation_level(name, opt):
    """These gates check exact bits, so -O0 and -O3 -march=native must agree with -O2."""
    program = check_file(os.path.join(bundled_dir(), name), diags=Diagnostics())
    outcome = execute(program, "c", opt=opt, timeout=120)[0]
    assert outcome.status == "PASS", (opt, outcome.status, outcome.value)
