"""Attention over K/V rows where they are (nx_src/nx_f32_attn_rows.nx, issue 28) against the
gathered paths it replaces in the model.

A prompt, then single-token decode steps and a 3-token step, through three paths on the same
inputs: the paged seed nx_f32_attn_with_paged (each head's rows gathered through the page table,
then nx_f32_attn_multi), nx_f32_attn_rows_paged (the rows read in their blocks) and
nx_f32_attn_rows_contig over the same rows kept contiguous. Every output word must agree, at
contexts that start, end and cross 16-token blocks and 64-key tiles, in layer 1 of a 2-layer
pool (so a wrong layer offset shows), with float32 specials (NaN, infinities, subnormals, signed
zeros) in the inputs; on the C backend checked and unchecked, on the Python backend (small), and
at 1, 2, 3 and 7 threads (the kernel's items are (kv head, query block) pairs).
"""
from __future__ import annotations

import numpy as np
import pytest

import nxc

from test_vectorize import f32_words

DRIVER = 'import "nx_f32_attn_paged.nx"\nimport "nx_f32_attn_rows.nx"\n'
SCALE = int(np.float32(1 / np.sqrt(16)).view(np.uint32))     # head_dim 16 in the tests below


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    path = tmp_path_factory.mktemp("attn_rows") / "attn_rows_driver.nx"
    path.write_text(DRIVER)
    return str(path)


def clean_words(rng, n):
    return (rng.standard_normal(n) * 1.5).astype(np.float32).view(np.uint32).astype(np.int64)


def run_steps(mod, steps, H, KV, D, block, seed, special):
    """Runs the step lengths of `steps` (the first is the prompt) through the three paths; returns
    the per-step outputs of each, after checking that every call succeeded."""
    rng = np.random.default_rng(seed)
    total = sum(steps)
    words = (lambda n: f32_words(rng, n, 1.5)) if special else (lambda n: clean_words(rng, n))
    Q, K, V = words(total * H * D), words(total * KV * D), words(total * KV * D)
    junk = clean_words(rng, total * KV * D)
    n_blocks = (total + block - 1) // block + 1
    seqs = []
    for _ in range(2):                                  # the seed's pool and the kernel's
        pool = mod.nx_pkv_pool_new(2, KV, D, block, n_blocks)
        seqs.append(mod.nx_pkv_seq_new(pool))
    outs = {"gathered": [], "in place": [], "contiguous": []}
    pos = 0
    for n in steps:
        q = Q[pos * H * D:(pos + n) * H * D].copy()
        k = K[pos * KV * D:(pos + n) * KV * D].copy()
        v = V[pos * KV * D:(pos + n) * KV * D].copy()
        for seq in seqs:
            assert mod.nx_pkv_ensure_append(seq, n) == 0
            assert mod.nx_pkv_append_layer(seq, 0, junk[:n * KV * D].copy(), junk[:n * KV * D].copy(), n) == 0
        o = {name: np.zeros(n * H * D, np.int64) for name in outs}
        assert mod.nx_f32_attn_with_paged(q, k, v, n, H, KV, D, seqs[0], 1, 1, SCALE, o["gathered"]) == 0
        assert mod.nx_f32_attn_rows_paged(q, k, v, n, H, KV, D, seqs[1], 1, 1, SCALE, o["in place"]) == 0
        assert mod.nx_f32_attn_rows_contig(q, K[:(pos + n) * KV * D].copy(), V[:(pos + n) * KV * D].copy(),
                                           n, pos + n, H, KV, D, 1, SCALE, o["contiguous"]) == 0
        for seq in seqs:
            assert mod.nx_pkv_advance(seq, n) == 0
        for name in outs:
            outs[name].append(o[name])
        pos += n
    return outs


def assert_same(outs):
    ref = outs["gathered"]
    for name, got in outs.items():
        for s, (a, b) in enumerate(zip(got, ref)):
            bad = np.flatnonzero(a != b)
            assert bad.size == 0, f"{name}, step {s}: {bad.size} words differ, first at {bad[:5]}"


# prompt lengths and steps: inside one block, ending on a block, across blocks and 64-key tiles
CASES = [
    ([1, 1, 1], 16),
    ([15, 1, 1, 1], 16),
    ([16, 1, 3], 16),
    ([17, 3, 1], 16),
    ([63, 1, 1, 3], 16),
    ([64, 1, 1], 16),
    ([20, 70, 1], 16),          # a second "prompt" of 70 rows: several query blocks, three tiles
    ([129, 1, 2], 5),           # blocks of 5: tiles and blocks never line up
]


@pytest.mark.parametrize("checked", [False, True])
def test_in_place_equals_gathered_and_contiguous(driver, checked):
    mod = nxc.load(driver, checked=checked)
    for i, (steps, block) in enumerate(CASES):
        assert_same(run_steps(mod, steps, H=4, KV=2, D=16, block=block, seed=10 + i, special=False))
        assert_same(run_steps(mod, steps, H=4, KV=2, D=16, block=block, seed=40 + i, special=True))


def test_in_place_qwen3_heads(driver):
    """Qwen3-4B's head shape (32 query heads on 8 kv heads, head_dim 128) at a context past
    two tiles and across blocks of 16."""
    mod = nxc.load(driver, checked=False)
    outs = run_steps(mod, [150, 1, 1], H=32, KV=8, D=128, block=16, seed=3, special=False)
    assert_same(outs)
    assert np.any(outs["in place"][-1] != 0)


def test_in_place_on_python(driver):
    """The Python backend: the same words as the gathered path, and as the C backend."""
    py = nxc.load(driver, backend="py")
    c = nxc.load(driver, checked=False)
    steps = [9, 1, 2]
    got = run_steps(py, steps, H=2, KV=1, D=16, block=4, seed=5, special=True)
    assert_same(got)
    ref = run_steps(c, steps, H=2, KV=1, D=16, block=4, seed=5, special=True)
    for a, b in zip(got["in place"], ref["in place"]):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("checked", [False, True])
def test_same_bits_on_any_thread_count(driver, checked):
    """1, 2, 3 and 7 threads: 8 kv heads (decode: 8 items) and a 70-row prompt (9 query blocks
    per kv head), each the gathered seed's words."""
    runs = {}
    for n in (1, 2, 3, 7):
        mod = nxc.load(driver, checked=checked, threads=n)
        outs = run_steps(mod, [70, 1, 3], H=16, KV=8, D=16, block=16, seed=8, special=True)
        assert_same(outs)
        runs[n] = outs["in place"]
    for n, got in runs.items():
        assert all(np.array_equal(a, b) for a, b in zip(got, runs[1])), n


def test_errors_change_nothing(driver):
    """Bad shapes and a missing or unreserved sequence give the kernel's codes."""
    mod = nxc.load(driver, checked=True)
    q = np.zeros(4 * 16 * 3, np.int64)
    kv = np.zeros(2 * 16 * 3, np.int64)
    out = np.full(4 * 16 * 3, 7, np.int64)
    assert mod.nx_f32_attn_rows_contig(q, kv, kv, 1, 1, 3, 2, 16, 1, SCALE, out) == mod.NX_F32_AR_ERR_BAD_GQA
    assert mod.nx_f32_attn_rows_contig(q, kv, kv, 0, 1, 4, 2, 16, 1, SCALE, out) == mod.NX_F32_AR_ERR_BAD_DIM
    assert mod.nx_f32_attn_rows_paged(q, kv, kv, 1, 4, 2, 16, None, 0, 1, SCALE, out) == mod.NX_F32_AR_ERR_SEQ
    pool = mod.nx_pkv_pool_new(1, 2, 16, 4, 4)
    seq = mod.nx_pkv_seq_new(pool)
    assert mod.nx_f32_attn_rows_paged(q, kv, kv, 3, 4, 2, 16, seq, 0, 1, SCALE, out) == mod.NX_F32_AR_ERR_SEQ
    assert mod.nx_pkv_ensure_append(seq, 3) == 0
    assert mod.nx_f32_attn_rows_paged(q, kv, kv, 3, 4, 2, 8, seq, 0, 1, SCALE, out) == mod.NX_F32_AR_ERR_BAD_DIM
    assert np.all(out == 7)
