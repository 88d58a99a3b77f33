"""The packed linear kernel (nx_src/nx_f32_gemm.nx, issue 28) against the scalar one.

nx_f32_linear on a weight repacked by nx_weight_pack (panels of 16 rows) must give every output
word of the scalar dot-product kernel (tests/nx/ref/nx_f32_linear_scalar.nx, the kernel as it
was) for F32, F16 and BF16 weights, on shapes off every block size (rows not a multiple of 16
or 64, columns not a multiple of 8, 1 token, token counts not a multiple of 4), with NaN,
infinities, subnormals and signed zeros in weights and inputs; on the C backend at each target
this CPU runs (x86-64, x86-64-v3, x86-64-v4, native; -O0), checked and unchecked, and on the
Python backend. Also: GCC vectorizes the kernel's inner loops, and the hot loop multiplies
and adds separately (no FMA).
"""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import nxc
from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics
from nxc.lower.effects import memory_free
from nxc.lower.hoist import plan_loops
from nxc.paths import bundled_dir

from test_vectorize import _targets, f32_words
from vectorize_support import loop_own_lines, vector_report, vectorized_lines

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "nx", "ref", "nx_f32_linear_scalar.nx")
GEMM = os.path.join(bundled_dir(), "nx_f32_gemm.nx")

# (rows, cols, n_tokens): tails of every block (16-row panels, 4-panel decode groups, 8 columns
# per pass, 4 tokens per block, the f16 decode's 32-column chunks: 75 = 32 + 32 + 11) and none
SHAPES = [(37, 21, 1), (70, 17, 1), (16, 8, 4), (37, 21, 2), (33, 40, 5), (5, 3, 3), (64, 24, 8),
          (1, 9, 3), (130, 13, 7), (37, 75, 1)]
TYPES = {"f32": 0, "f16": 1, "bf16": 30}


def clean_words(rng, n: int, spread: float) -> np.ndarray:
    return (rng.standard_normal(n) * spread).astype(np.float32).view(np.uint32).astype(np.int64)


def weights(rng, kind: str, rows: int, cols: int, special: bool = True) -> np.ndarray:
    n = rows * cols
    if not special:
        w = clean_words(rng, n, 0.5).astype(np.uint32)
        if kind == "f32":
            return w
        if kind == "bf16":
            return (w >> 16).astype(np.uint16)
        return w.view(np.float32).astype(np.float16).view(np.uint16).copy()
    if kind == "f32":
        return f32_words(rng, n, 0.5).astype(np.uint32)
    if kind == "bf16":
        return (f32_words(rng, n, 0.5).astype(np.uint32) >> 16).astype(np.uint16)
    h = (rng.standard_normal(n) * 0.5).astype(np.float16).view(np.uint16).copy()
    special = np.array([0x7E00, 0x7C01, 0xFE00, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x8000, 0x0000], np.uint16)
    k = max(1, n // 30)
    h[rng.choice(n, size=k, replace=False)] = rng.choice(special, size=k)
    return h


def both(mod, kind, W, rows, cols, X, T):
    Ys, Yp = np.zeros(T * rows, np.int64), np.zeros(T * rows, np.int64)
    st = mod.nx_f32_linear_both(W, TYPES[kind], rows, cols, X, T, Ys, Yp)
    assert st == 0, f"nx_f32_linear_both failed at step {st}"
    return Ys, Yp


def check_module(mod, shapes, seed):
    """Every shape twice: with special values mixed in (which make many sums NaN or inf) and
    without (ordinary sums, where a reordered addition would show)."""
    rng = np.random.default_rng(seed)
    finite = 0
    for rows, cols, T in shapes:
        for special in (True, False):
            X = f32_words(rng, T * cols, 2.0) if special else clean_words(rng, T * cols, 2.0)
            for kind in TYPES:
                W = weights(rng, kind, rows, cols, special)
                Ys, Yp = both(mod, kind, W, rows, cols, X, T)
                bad = np.flatnonzero(Ys != Yp)
                assert bad.size == 0, (f"{kind} {rows}x{cols} T={T} special={special}: {bad.size} words "
                                       f"differ, first at {bad[0]}: scalar 0x{Ys[bad[0]]:08x}, packed "
                                       f"0x{Yp[bad[0]]:08x}")
                finite += int(((Ys & 0x7F800000) != 0x7F800000).sum())
    assert finite > 0, "every sum was NaN or inf: the comparison tested nothing"


@pytest.mark.parametrize("target", _targets())
@pytest.mark.parametrize("checked", [True, False])
def test_packed_equals_scalar_on_c(target, checked):
    opt, _, march = target.partition("/")
    mod = nxc.load(REF, opt=opt, checked=checked, march=march or None)
    check_module(mod, SHAPES, seed=1)


def test_packed_equals_scalar_random_shapes():
    mod = nxc.load(REF, checked=False)
    rng = np.random.default_rng(7)
    shapes = [(int(rng.integers(1, 90)), int(rng.integers(1, 70)), int(rng.integers(1, 11))) for _ in range(40)]
    check_module(mod, shapes, seed=8)


def test_packed_token_counts_and_rows_off_the_panel():
    """Every token count 1 .. 13 (the tokens kernel's blocks of 4 and their repeated last token,
    and decode) on rows off the 16-row panel and its two 8-row halves (1, 7, 8, 9, 15, 17, 24,
    31), columns off the 8-column pass."""
    mod = nxc.load(REF, checked=False)
    rows = [1, 7, 8, 9, 15, 17, 24, 31]
    shapes = [(rows[T % len(rows)], 11 + T, T) for T in range(1, 14)]
    check_module(mod, shapes, seed=13)


def test_packed_equals_scalar_on_python():
    mod = nxc.load(REF, backend="py")
    check_module(mod, [(37, 21, 1), (18, 9, 5), (5, 3, 2)], seed=3)


def test_packed_qwen3_shape_one_row_block():
    """A wide matrix (cols past a panel's 16 x 8 block many times, and past the 1,024-column
    blocks of nx_gemm_panel_tokens: a block boundary with a short last block), C only."""
    mod = nxc.load(REF, checked=False)
    check_module(mod, [(48, 2560, 1), (48, 1000, 6), (40, 2100, 5), (19, 1025, 13)], seed=11)


@pytest.mark.parametrize("checked,threads,march", [(False, 1, None), (False, 3, None), (True, 2, None),
                                                   (False, 2, "x86-64-v3")])
def test_packed_spans_of_columns_in_groups_of_panels(checked, threads, march):
    """Many tokens over many columns: X's packed copy (1,216 bytes a column at 300 tokens) is
    past twice NX_GEMM_SPAN_BYTES, so nx_gemm_task runs the panels in groups (21 panels, 13 a
    group: two groups, or more with the items split across threads) span by span (five spans of
    columns, the last one short), each panel's sums waiting between its spans. Every word must
    equal the scalar kernel's; on AVX2 too (x86-64-v3: X's rows through the four-token kernel)."""
    if march and f"2/{march}" not in _targets():
        pytest.skip(f"this CPU does not run {march}")
    mod = nxc.load(REF, checked=checked, threads=threads, march=march)
    check_module(mod, [(333, 1100, 300)], seed=21)


def test_kernel_loops_vectorized_without_fma(tmp_path):
    """GCC vectorizes the panel loops (tokens and decode kernels) with nxc's -O2 flags, and the
    object has separate vector multiplies and adds and no fused multiply-add."""
    lines, obj = vectorized_lines(GEMM, tmp_path)
    text = open(GEMM, encoding="utf-8").read().splitlines()
    # the panel loops: 16 rows (decode, tails) or the two halves of 8 (the tokens kernel)
    inner = [i + 1 for i, l in enumerate(text) if l.strip() in ("while r < 16 {", "while r < 8 {")]
    assert any(l.strip() == "while r < 8 {" for l in text), "the tokens kernel's 8-row loop is gone"
    missed = [head for head in inner if not loop_own_lines(GEMM, head) & lines]
    assert inner and not missed, f"not vectorized: the loops at lines {missed}"
    asm = subprocess.run(["objdump", "-d", obj], capture_output=True, text=True).stdout
    if not asm:
        pytest.skip("objdump not installed")
    assert "vfmadd" not in asm and "vfnmadd" not in asm
    assert "vmulps" in asm and "vaddps" in asm


def lane_loop_heads(path: str, function: str) -> list[int]:
    """Lines of the `while r < 16 {` lane loops in `function` of the module at `path`."""
    text = open(path, encoding="utf-8").read().splitlines()
    start = next(i for i, l in enumerate(text) if l.startswith(f"func {function}("))
    end = next(i for i in range(start + 1, len(text)) if text[i].startswith("func "))
    return [i + 1 for i in range(start, end) if text[i].strip() == "while r < 16 {"]


@pytest.mark.parametrize("function", ["nx_gemm_decode_bf16", "nx_gemm_decode_group"])
def test_checked_decode_checks_once_per_group(function):
    """The decode kernels' column loops count passes (q) and index by multiples of q (the f16 /
    f32 one in two loops, with and without the next chunk's prefetches), so the checked build
    plans the pass loop and the loops in it as one nest: their range checks run once per group
    of four panels (a chunk), not once every eight columns (they were a quarter of the checked
    bf16 call, which ran 1.5x the unchecked one)."""
    program = check_file(GEMM, None, Diagnostics(warnings=False))
    fn = next(f for f in program.functions if f.sym.name == function)
    nests = [[c.sym.name for c in p.counters] for p in plan_loops(fn, program, memory_free(program)).values()]
    assert any(n[0] == "q" and n[-1] == "r" for n in nests), nests


@pytest.mark.parametrize("function", ["nx_gemm_tokens8"])
def test_checked_lane_loops_need_no_alias_test(tmp_path, function):
    """In the checked build too, GCC knows a kernel's accumulators alias nothing (a fresh
    sys_mmap block: the runtime's checked sys_mmap is declared malloc, and checked C keeps the
    provenance of `&p[i]`, here nx_gemm_line32's): the lane loops are vectorized without a
    run-time overlap test. Versioned, the checked panel kernel kept its broadcast token values
    in spilled registers and ran 1.7x the unchecked one (without either of the two)."""
    vectorized, versioned, _ = vector_report(GEMM, tmp_path, checked=True)
    heads = lane_loop_heads(GEMM, function)
    assert heads, f"{function} has no lane loop"
    own = {head: loop_own_lines(GEMM, head) for head in heads}
    missed = [head for head in heads if not own[head] & vectorized]
    assert not missed, f"not vectorized: the loops at lines {missed}"
    versions = [head for head in heads if own[head] & versioned]
    assert not versions, f"versioned for aliasing: the loops at lines {versions}"
