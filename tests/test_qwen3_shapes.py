"""Qwen3 files whose shapes or metadata the first tests did not cover (issue 29):
hidden > heads x head_dim (the out-of-bounds write in nx_qwen3_layer), and llama.cpp's
defaults for absent keys (key_length, rope.freq_base, head_count_kv; value_length)."""
from __future__ import annotations

import numpy as np
import pytest

import qwen3_support as qs
from nxc.models import qwen3

PROMPT = [5, 17, 200, 3, 99, 42]
# hidden 64, but 2 heads x head_dim 16 = 32: the attention width is half the model's.
WIDE = qs.Config(hidden=64, n_heads=2, n_kv_heads=1, head_dim=16)


def _rel(got, ref):
    return float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("backend", ["c", "py"])
def test_hidden_wider_than_the_attention_runs_and_matches_the_reference(tmp_path, backend):
    p = tmp_path / "wide.gguf"
    w = qs.write_model(p, WIDE, seed=3)
    # The default C build is checked: the old 32-wide buffer receiving 64-wide MLP rows
    # stopped here with an out-of-bounds write.
    m = qwen3.load(p, backend=backend)
    toks = PROMPT if backend == "c" else PROMPT[:2]
    hidden, out = m.forward(toks)
    ref_hidden, ref_out = qs.forward(WIDE, w, toks)
    errs = [_rel(hidden[i], ref_hidden[i]) for i in range(1, len(hidden))] + [_rel(out, ref_out)]
    assert max(errs) <= 1e-5, errs


def test_wide_shape_python_and_c_bit_identical(tmp_path):
    p = tmp_path / "wide.gguf"
    qs.write_model(p, WIDE, seed=4, dtype="bf16")
    h_c, o_c = qwen3.load(p).forward(PROMPT[:2])
    h_py, o_py = qwen3.load(p, backend="py").forward(PROMPT[:2])
    assert np.array_equal(h_c.view(np.uint32), h_py.view(np.uint32))
    assert np.array_equal(o_c.view(np.uint32), o_py.view(np.uint32))


@pytest.mark.parametrize("skip, cfg", [
    (("attention.key_length",), qs.TINY),                                   # 64 / 4 heads = 16
    (("attention.key_length", "attention.value_length"), qs.TINY),
    (("rope.freq_base",), qs.Config(rope_theta=10000.0)),                   # default 10000
    (("attention.head_count_kv",), qs.Config(n_kv_heads=4)),                # default n_head
])
def test_llama_cpp_defaults_for_absent_keys(tmp_path, skip, cfg):
    full = tmp_path / "full.gguf"
    part = tmp_path / "part.gguf"
    w = qs.write_model(full, cfg, seed=5)
    qs.write_model(part, cfg, seed=5, skip_keys=skip)
    a, b = qwen3.load(full), qwen3.load(part)
    assert a.config == b.config
    ha, oa = a.forward(PROMPT)
    hb, ob = b.forward(PROMPT)
    assert np.array_equal(oa.view(np.uint32), ob.view(np.uint32))
    assert _rel(ob, qs.forward(cfg, w, PROMPT)[1]) <= 1e-5


def test_key_length_default_needs_hidden_divisible_by_heads(tmp_path):
    p = tmp_path / "odd.gguf"
    cfg = qs.Config(hidden=60, n_heads=8, n_kv_heads=2, head_dim=16)    # 60 / 8 is not whole
    qs.write_model(p, cfg, seed=6, skip_keys=("attention.key_length",))
    with pytest.raises(qwen3.Qwen3Error, match="impossible model"):
        qwen3.load(p)


def test_value_length_other_than_key_length_is_refused_by_name(tmp_path):
    p = tmp_path / "vlen.gguf"
    qs.write_model(p, qs.TINY, seed=7, skip_keys=("attention.value_length",),
                   extra_kv={"qwen3.attention.value_length": 8})
    with pytest.raises(qwen3.Qwen3Error, match="qwen3.attention.value_length"):
        qwen3.load(p)
