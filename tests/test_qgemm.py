"""The packed kernel for quantized weights (nx_src/nx_f32_qgemm.nx, issues 28 / 29) against the
scalar reference.

nx_f32_linear on a Q8_0, Q4_0, Q4_K, Q5_K or Q6_K weight repacked by nx_weight_pack (as the
GGUF loader does) must give every output word of nx_f32_dot_quant on the row as the file stores
it (tests/nx/ref/nx_f32_qlinear_scalar.nx), and nx_weight_row every word of
nx_quant_dequant_rows: rows not a multiple of 16 (nor of the 64 rows of a decode group), one
and several blocks per row, 1, 3, 16 and 64 tokens, blocks whose scales are zero, -0,
subnormal, infinite or NaN, and inputs with NaN, infinities, subnormals and signed zeros; on the
C backend at each target this CPU runs, checked and unchecked, and on the Python backend (small
shapes). Also: GCC vectorizes the tile loops and the object has no fused multiply-add.
"""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import nxc
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.gates.run import execute
from nxc.paths import bundled_dir

from quant_support import TYPES, random_blocks
from test_linear_packed import clean_words
from test_vectorize import _targets, f32_words
from vectorize_support import vectorized_lines

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "nx", "ref", "nx_f32_qlinear_scalar.nx")
QGEMM = os.path.join(bundled_dir(), "nx_f32_qgemm.nx")

# where each type keeps its f16 scales in a block (d; dmin for Q4_K / Q5_K)
SCALE_AT = {"q8_0": (0,), "q4_0": (0,), "q4_k": (0, 2), "q5_k": (0, 2), "q6_k": (208,)}
SPECIAL_F16 = np.array([0x0000, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE01], np.uint16)

# (rows, blocks per row, tokens): rows off the 16-row panel and 64-row decode group, 1 block
# and several; tokens 1, 3, 16, 64
SHAPES = [(37, 2, 1), (70, 3, 1), (19, 1, 3), (16, 2, 16), (33, 2, 64), (5, 1, 3), (1, 2, 3)]


def blocks(rng, name: str, rows: int, cols: int, special: bool) -> np.ndarray:
    """uint8 [rows, row_bytes]: valid blocks with sane scales; with special, one block in 6 gets
    a zero, subnormal, infinite or NaN scale (d or dmin) and one in 6 is random bytes."""
    _, qk, bb = TYPES[name]
    n = rows * cols // qk
    raw = random_blocks(name, n, rng, 0.5)
    if special:
        pick = rng.random(n)
        for i in np.flatnonzero(pick < 1 / 6):
            at = SCALE_AT[name][int(rng.integers(len(SCALE_AT[name])))]
            raw[i, at:at + 2] = rng.choice(SPECIAL_F16).reshape(1).view(np.uint8)
        wild = np.flatnonzero(pick > 5 / 6)
        raw[wild] = rng.integers(0, 256, size=(wild.size, bb), dtype=np.uint8)
    return np.ascontiguousarray(raw.reshape(rows, -1))


def check_module(mod, shapes, seed, names=tuple(TYPES), lookup=True):
    """Every shape twice, with special scales and inputs and without (ordinary sums, where a
    reordered addition or a different dequantized value would show)."""
    rng = np.random.default_rng(seed)
    finite = 0
    outputs = []
    for rows, nblk, T in shapes:
        for special in (True, False):
            for name in names:
                t, qk, _ = TYPES[name]
                cols = nblk * qk
                W = blocks(rng, name, rows, cols, special)
                X = f32_words(rng, T * cols, 2.0) if special else clean_words(rng, T * cols, 2.0)
                Ys, Yp = np.zeros(T * rows, np.int64), np.zeros(T * rows, np.int64)
                R = np.zeros(rows * cols if lookup else 1, np.int64)
                D = np.zeros(rows * cols if lookup else 1, np.int64)
                st = mod.nx_f32_qlinear_both(t, W, rows, cols, X, T, Ys, Yp, lookup, R, D)
                assert st == 0, f"nx_f32_qlinear_both failed at step {st}"
                bad = np.flatnonzero(Ys != Yp)
                assert bad.size == 0, (f"{name} {rows}x{cols} T={T} special={special}: {bad.size} words "
                                       f"differ, first at {bad[0]}: scalar 0x{Ys[bad[0]]:08x}, packed "
                                       f"0x{Yp[bad[0]]:08x}")
                if lookup:
                    bad = np.flatnonzero(R != D)
                    assert bad.size == 0, f"{name} {rows}x{cols}: row lookup differs at {bad[0]}"
                finite += int(((Ys & 0x7F800000) != 0x7F800000).sum())
                outputs.append(Yp)
    assert finite > 0, "every sum was NaN or inf: the comparison tested nothing"
    return outputs


def _configs():
    """Every target unchecked, and the default build checked (what the model loader uses)."""
    return [(t, False) for t in _targets()] + [("2", True)]


@pytest.mark.parametrize("target,checked", _configs())
def test_qgemm_equals_scalar_on_c(target, checked):
    opt, _, march = target.partition("/")
    mod = nxc.load(REF, opt=opt, checked=checked, march=march or None)
    check_module(mod, SHAPES, seed=1)


def test_qgemm_equals_scalar_random_shapes():
    mod = nxc.load(REF, checked=False)
    rng = np.random.default_rng(5)
    shapes = [(int(rng.integers(1, 100)), int(rng.integers(1, 4)), int(rng.choice([1, 2, 3, 5, 8])))
              for _ in range(12)]
    check_module(mod, shapes, seed=6)


def test_qgemm_equals_scalar_on_python():
    """On the Python backend too, and its outputs are the C backend's, word for word."""
    shapes = [(18, 1, 1), (5, 1, 3)]
    py = check_module(nxc.load(REF, backend="py"), shapes, seed=3, lookup=False)
    c = check_module(nxc.load(REF, checked=False), shapes, seed=3, lookup=False)
    assert len(py) == len(c) and all(np.array_equal(a, b) for a, b in zip(py, c))


@pytest.mark.parametrize("checked", [False, True])
def test_qgemm_same_bits_on_any_thread_count(checked):
    """The kernel's items (panels; pairs of panels for one token) split across the runtime's
    threads (sys_parallel_for): every thread count gives the scalar reference's words, and the
    same words as one thread; shapes with an odd number of panels, so a chunk can end inside a
    decode pair's range."""
    shapes = [(83, 2, 1), (70, 3, 1), (37, 2, 3), (33, 1, 64)]
    runs = {n: check_module(nxc.load(REF, checked=checked, threads=n), shapes, seed=21, lookup=False)
            for n in (1, 2, 3, 7)}
    for n, out in runs.items():
        assert len(out) == len(runs[1]) and all(np.array_equal(a, b) for a, b in zip(out, runs[1])), n


def test_qgemm_qwen3_width():
    """A Qwen3-4B-wide row (2560 columns: 80 Q8_0 blocks, 10 K-quant blocks), 1 and 64 tokens."""
    mod = nxc.load(REF, checked=False)
    check_module(mod, [(40, 2560 // 256, 1), (21, 2560 // 256, 64)], seed=11, names=("q4_k", "q6_k"), lookup=False)
    check_module(mod, [(40, 2560 // 32, 1), (21, 2560 // 32, 64)], seed=12, names=("q8_0", "q4_0"), lookup=False)


@pytest.mark.parametrize("checked,threads", [(False, 1), (True, 3)])
def test_qgemm_spans_of_columns_in_groups_of_panels(checked, threads):
    """Many tokens over many columns (1,280 columns at 300 tokens): nx_qgemm_tokens runs the
    panels in groups (21 panels, 13 a group) span by span (five spans of 256 columns), as
    nx_gemm_task does; every word equals the scalar kernel's."""
    mod = nxc.load(REF, checked=checked, threads=threads)
    check_module(mod, [(333, 5, 300)], seed=31, names=("q4_k",), lookup=False)
    check_module(mod, [(333, 40, 300)], seed=32, names=("q8_0",), lookup=False)


def test_qgemm_gate_catches_a_wrong_scale(tmp_path):
    """The bundled gate fails when a tile takes the wrong Q6_K scale (the test can fail)."""
    src = open(QGEMM, encoding="utf-8").read()
    broken = src.replace("let fo: i64 = 16 * (g / 4)", "let fo: i64 = 0")
    assert broken != src
    path = tmp_path / "nx_f32_qgemm.nx"
    path.write_text(broken)
    outcome = execute(check_file(str(path), diags=Diagnostics()), "c", timeout=120)[0]
    assert outcome.status == "FAIL" and outcome.value == 60, (outcome.status, outcome.value)
    assert execute(check_file(QGEMM, diags=Diagnostics()), "c", timeout=120)[0].status == "PASS"


def test_tile_loops_vectorized_without_fma(tmp_path):
    """GCC vectorizes every 16-lane loop of the tiles and the decode kernel with nxc's -O2
    flags, and the object has separate multiplies and adds and no fused multiply-add."""
    lines, obj = vectorized_lines(QGEMM, tmp_path)
    text = open(QGEMM, encoding="utf-8").read().splitlines()
    gate = next(i for i, l in enumerate(text) if l.startswith("// ===== Self-test"))
    inner = [i + 1 for i, l in enumerate(text[:gate]) if l.strip() in ("while r < 16 {", "while r < 16 { f[r] = nx_gemm_f16_lane(d[r]) as u32; r = r + 1 }")]
    assert len(inner) >= 9 and set(inner) <= lines, f"not vectorized: lines {sorted(set(inner) - lines)}"
    asm = subprocess.run(["objdump", "-d", obj], capture_output=True, text=True).stdout
    if not asm:
        pytest.skip("objdump not installed")
    assert "vfmadd" not in asm and "vfnmadd" not in asm and "vfmsub" not in asm
    assert "mulps" in asm and "addps" in asm and "subps" in asm
