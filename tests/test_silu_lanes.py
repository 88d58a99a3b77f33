"""nx_f32_swiglu's vectorized silu (nx_f32_silu_lanes, nx_src/nx_f32_mlp.nx) gives nx_f32_silu's
bits, on every backend:

- over a strided sample of all 2^32 inputs and every input near the edges of the range the
  lanes take (nx_f32_silu_fits: 2^-25 <= |x|, x <= 20, x > -69), the lanes against the scalar
  function, and the accepted count against the same predicate written here in Python
  (bench/silu_lanes_exhaustive.py runs every input: 506,068,993 accepted, 0 differ);
- nx_f32_swiglu over more than one block, in place (out = G, as nx_f32_mlp calls it) and not,
  with NaNs, infinities, zeros, subnormals and the cut-offs mixed in, against
  mul(nx_f32_silu(g), u) element by element;
- the same on each target this CPU runs (x86-64, x86-64-v3, x86-64-v4, native; -O0);
- GCC vectorizes the lanes' loop (the speed comes from there).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import nxc
from nxc.paths import bundled_dir

from test_vectorize import _targets
from vectorize_support import loop_line, vectorized_lines

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = os.path.join(HERE, "nx", "silu_lanes_batch.nx")
MLP = os.path.join(bundled_dir(), "nx_f32_mlp.nx")
BACKENDS = ["c", "c-unchecked", "py"]       # c-unchecked: the build whose loop vectorizes
EDGES = (0x33000000, 0x41A00000, 0xB3000000, 0xC28A0000)    # 2^-25, 20, -2^-25, -69


def _load(path, backend):
    return nxc.load(path, backend=backend.split("-")[0], checked=backend != "c-unchecked")


def _fits(words: np.ndarray) -> np.ndarray:
    mag = words & 0x7FFFFFFF
    positive = words < 0x80000000
    return (mag >= 0x33000000) & np.where(positive, mag <= 0x41A00000, mag < 0x428A0000)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lanes_give_the_scalar_bits(backend):
    mod = _load(BATCH, backend)
    out = np.zeros(2, np.int64)
    step = 65_537 if backend.startswith("c") else 16_777_259
    count = (1 << 32) // step
    assert mod.silu_lanes_mismatches(0, count, step, out) == 0, hex(out[1])
    assert out[0] == _fits(np.arange(count, dtype=np.int64) * step).sum() > 0
    half = 3_000 if backend.startswith("c") else 40
    for edge in EDGES:
        assert mod.silu_lanes_mismatches(edge - half, 2 * half + 1, 1, out) == 0, hex(out[1])
        assert out[0] == _fits(np.arange(edge - half, edge + half + 1, dtype=np.int64)).sum() > 0


@pytest.mark.parametrize("target", [t for t in _targets() if t != "2"])      # "2" (native): above
def test_lanes_give_the_scalar_bits_on_each_target(target):
    """The lanes' loop is vectorized 16, 8 or 4 lanes wide (or not at all at -O0) by target:
    the same bits on each, over a coarser sample and the edges."""
    opt, _, march = target.partition("/")
    mod = nxc.load(BATCH, opt=opt, march=march or None, checked=False)
    out = np.zeros(2, np.int64)
    assert mod.silu_lanes_mismatches(0, (1 << 32) // 1_048_583, 1_048_583, out) == 0, hex(out[1])
    for edge in EDGES:
        assert mod.silu_lanes_mismatches(edge - 500, 1_001, 1, out) == 0, hex(out[1])


def _inputs(n: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    special = np.array([0x7FC00000, 0xFFC00001, 0x7F800000, 0xFF800000, 0, 0x80000000, 1, 0x80000001,
                        *(e + d for e in EDGES for d in (-1, 0, 1)), 0xC2DC0000, 0xC2DC0001, 0xC2900000,
                        0x42C80000], np.int64) & 0xFFFFFFFF
    normal = np.float32(rng.standard_normal(n) * 4).view(np.uint32).astype(np.int64)
    x = np.concatenate([special, normal])[:n]
    rng.shuffle(x)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_swiglu_in_place_and_not(backend):
    mod = _load(MLP, backend)
    n = 1_300 if backend.startswith("c") else 530        # more than one block of 512
    g = _inputs(n)
    u = np.float32(np.random.default_rng(12).uniform(-3, 3, n)).view(np.uint32).astype(np.int64)
    want = np.array([mod.nx_f32_mul(mod.nx_f32_silu(int(a)), int(b)) for a, b in zip(g, u)], np.int64)
    out = np.zeros(n, np.int64)
    mod.nx_f32_swiglu(g, u, n, out)
    assert (out == want).all(), np.flatnonzero(out != want)[:5]
    inplace = g.copy()
    mod.nx_f32_swiglu(inplace, u, n, inplace)
    assert (inplace == want).all()
    assert not _fits(g).all() and _fits(g).any()       # both paths were taken


def test_gcc_vectorizes_the_lanes_loop(tmp_path):
    vectorized, _ = vectorized_lines(MLP, tmp_path)
    line = loop_line(MLP, "let a: i64 = (x | (NX_F32_SIGN_MASK as u32)) as i64")     # in the lanes' loop
    assert line in vectorized, f"the lanes' loop (line {line}) was not vectorized: {sorted(vectorized)}"
