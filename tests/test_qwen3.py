"""The Qwen3 model in .nx (issue 20): GGUF reader, layers, model, paged decode, greedy tokens.

Tiny random-weight models are written with the gguf package (tests/qwen3_support.py: hidden 64,
2 layers, 4 query / 2 kv heads, head_dim 16, intermediate 128, vocab 256) and compared with
the float64 numpy reference of the same architecture:
  * every layer's hidden state and the final-normed output within REL_TOL = 1e-5 of the
    reference, relative to the largest magnitude of that state (docs/numerics.md section 6
    derives the bound), for F32, F16, BF16 and the quantized Q8_0, Q4_0, Q4_K, Q5_K, Q6_K files
    (the reference runs over the weights as gguf-py dequantizes them);
  * the same 16 greedy tokens (and the reference's top-1 / top-2 logit gaps are far above
    the error, so the comparison means something);
  * prompt-then-decode through the paged KV cache is BIT-IDENTICAL to one contiguous pass;
  * the Python backend gives the same bits as the C backend;
  * broken files give the reader's error code and a clear Qwen3Error, never a crash.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from dataclasses import replace

import numpy as np
import pytest

import qwen3_support as qs
from nxc.models import qwen3

REL_TOL = 1e-5
PROMPT = [5, 17, 200, 3, 99, 42, 7, 128]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("qwen3")
    out = {}
    for dt in ("f32", "f16", "bf16"):
        p = d / f"tiny-{dt}.gguf"
        out[dt] = (p, qs.write_model(p, qs.TINY, seed=1, dtype=dt))
    return out


@pytest.fixture(scope="module")
def model_c(files):
    return qwen3.load(files["f32"][0])


def rel_err(got, ref):
    return float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())


def test_config_read_from_gguf(model_c):
    c = model_c.config
    assert (c["n_layers"], c["hidden"], c["n_heads"], c["n_kv_heads"], c["head_dim"], c["inter"],
            c["vocab"], c["n_ctx"]) == (2, 64, 4, 2, 16, 128, 256, 256)
    assert c["rope_theta"] == 1e6 and c["rms_eps"] == np.float32(1e-6)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_hidden_states_match_float64_reference(files, dtype):
    path, weights = files[dtype]
    m = qwen3.load(path)
    hidden, out = m.forward(PROMPT)
    ref_hidden, ref_out = qs.forward(qs.TINY, weights, PROMPT)
    assert hidden.shape == ref_hidden.shape and out.shape == ref_out.shape
    assert np.array_equal(hidden[0], ref_hidden[0].astype(np.float32))     # the embedding rows, exact
    errs = [rel_err(hidden[l], ref_hidden[l]) for l in range(1, len(hidden))] + [rel_err(out, ref_out)]
    assert max(errs) <= REL_TOL, f"{dtype}: relative errors per layer {errs}"
    assert min(errs) > 0                                                    # float32 really ran


def test_greedy_tokens_match_reference(files, model_c):
    _, weights = files["f32"]
    prompt = PROMPT[:4]
    ref, gaps = qs.greedy(qs.TINY, weights, prompt, 16)
    assert min(gaps) > 1e-2, f"reference logit gaps too small to compare: {gaps}"   # >> the error
    assert model_c.generate(prompt, 16) == ref


def test_paged_decode_is_bit_identical_to_one_pass(model_c):
    tokens = PROMPT + [1, 2, 250]
    hidden, out = model_c.forward(tokens)
    with model_c.session(block_size=4) as s:        # block 4: the steps cross block boundaries
        h0, o0 = s.step(tokens[:5])
        steps = [s.step([t]) for t in tokens[5:]]
    got_h = np.concatenate([h0] + [h for h, _ in steps], axis=1)
    got_o = np.concatenate([o0] + [o for _, o in steps], axis=0)
    assert np.array_equal(got_h.view(np.uint32), hidden.view(np.uint32))
    assert np.array_equal(got_o.view(np.uint32), out.view(np.uint32))


def test_generate_equals_session_greedy(model_c):
    prompt = PROMPT[:3]
    gen = model_c.generate(prompt, 5)
    with model_c.session() as s:
        _, out = s.step(prompt)
        toks = [s.greedy(out[-1])]
        for _ in range(4):
            _, out = s.step([toks[-1]])
            toks.append(s.greedy(out[-1]))
    assert toks == gen
    z = model_c.logits(model_c.forward(prompt)[1][-1])
    assert int(np.argmax(z)) == gen[0]


def test_python_backend_bit_identical(files, model_c):
    path, _ = files["bf16"]
    m_py = qwen3.load(path, backend="py")
    m_c = qwen3.load(path)
    toks = PROMPT[:3]
    h_py, o_py = m_py.forward(toks)
    h_c, o_c = m_c.forward(toks)
    assert np.array_equal(h_py.view(np.uint32), h_c.view(np.uint32))
    assert np.array_equal(o_py.view(np.uint32), o_c.view(np.uint32))
    assert m_py.generate(toks, 2) == m_c.generate(toks, 2)


# ---------------------------------------------------------------------------
# quantized weights (issue 29): Q8_0 / Q4_0 on the tiny shape, K-quants on TINY_K (every matrix
# whole 256-weight blocks); norms quantized too where their length is whole blocks, token_embd
# (and so the tied logits) quantized in every type
# ---------------------------------------------------------------------------

QUANT = {"q8_0": qs.TINY, "q4_0": qs.TINY, "q4_k": qs.TINY_K, "q5_k": qs.TINY_K, "q6_k": qs.TINY_K}
# the Python backend's copy: one layer, a smaller MLP (it is ~50x slower than C)
QUANT_PY = {k: replace(v, n_layers=1, inter=256 if v is qs.TINY_K else v.inter) for k, v in QUANT.items()}


@pytest.fixture(scope="module")
def qfiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("qwen3q")
    out = {}
    for dt, cfg in QUANT.items():
        p = d / f"tiny-{dt}.gguf"
        out[dt] = (p, qs.write_model(p, cfg, seed=3, dtype=dt, quant_norms=True))
    return out


@pytest.mark.parametrize("dtype", list(QUANT))
def test_quantized_model_matches_float64_reference(qfiles, dtype):
    """Hidden states and tied logits within 1e-5 of float64 over the dequantized weights; the same
    greedy tokens; paged decode bit-identical to one pass."""
    import gguf
    path, weights = qfiles[dtype]
    cfg = QUANT[dtype]
    r = gguf.GGUFReader(str(path))
    types = {t.name: t.tensor_type.name for t in r.tensors}
    assert types["token_embd.weight"] == dtype.upper() and types["blk.1.ffn_down.weight"] == dtype.upper()
    assert types["output_norm.weight"] == dtype.upper()                   # a quantized norm
    m = qwen3.load(path)
    hidden, out = m.forward(PROMPT)
    ref_hidden, ref_out = qs.forward(cfg, weights, PROMPT)
    assert np.array_equal(hidden[0], ref_hidden[0].astype(np.float32))   # dequantized embedding rows, exact
    errs = [rel_err(hidden[l], ref_hidden[l]) for l in range(1, len(hidden))] + [rel_err(out, ref_out)]
    z = m.logits(out[-1])
    errs.append(rel_err(z, qs.logits(weights, ref_out[-1].astype(np.float64))))
    assert max(errs) <= REL_TOL and min(errs) > 0, f"{dtype}: relative errors {errs}"
    ref, gaps = qs.greedy(cfg, weights, PROMPT[:4], 6)
    assert min(gaps) > 1e-3, f"reference logit gaps too small to compare: {gaps}"
    assert m.generate(PROMPT[:4], 6) == ref
    tokens = PROMPT + [1, 2]
    with m.session(block_size=4) as s:          # T = 5 (scratch rows), then T = 1 (fused dots)
        h0, o0 = s.step(tokens[:5])
        steps = [s.step([t]) for t in tokens[5:]]
    h1, o1 = m.forward(tokens)
    assert np.array_equal(np.concatenate([h0] + [h for h, _ in steps], axis=1).view(np.uint32), h1.view(np.uint32))
    assert np.array_equal(np.concatenate([o0] + [o for _, o in steps]).view(np.uint32), o1.view(np.uint32))


@pytest.mark.parametrize("dtype", list(QUANT))
def test_quantized_python_backend_bit_identical(tmp_path, dtype):
    p = tmp_path / f"py-{dtype}.gguf"
    qs.write_model(p, QUANT_PY[dtype], seed=4, dtype=dtype, quant_norms=True)
    toks = PROMPT[:2]
    h_c, o_c = qwen3.load(p).forward(toks)
    h_py, o_py = qwen3.load(p, backend="py").forward(toks)
    assert np.array_equal(h_py.view(np.uint32), h_c.view(np.uint32))
    assert np.array_equal(o_py.view(np.uint32), o_c.view(np.uint32))


def test_bench_streaming_writer(tmp_path):
    """bench/make_qwen3_gguf.py --size 4b's writer (random blocks, one tensor at a time) on a small
    shape: the weights read back with gguf-py's reader and dequantizer give the float64
    reference nx is held to."""
    import sys
    import gguf
    import quant_support as qsup
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import make_qwen3_gguf
    p = tmp_path / "stream.gguf"
    make_qwen3_gguf.write_streaming(p, qs.TINY_K, "q6_k", seed=5, log=lambda *a: None)
    weights = {}
    for t in gguf.GGUFReader(str(p)).tensors:
        w = qsup.dequantize(t.data, t.tensor_type.name.lower()) if t.tensor_type.name != "F32" else t.data
        weights[t.name] = np.asarray(w, np.float32).reshape(qs.shapes(qs.TINY_K)[t.name])
    hidden, out = qwen3.load(p).forward(PROMPT)
    ref_hidden, ref_out = qs.forward(qs.TINY_K, weights, PROMPT)
    errs = [rel_err(hidden[l], ref_hidden[l]) for l in range(1, len(hidden))] + [rel_err(out, ref_out)]
    assert max(errs) <= REL_TOL, errs


def test_quantized_rows_must_be_whole_blocks(tmp_path):
    """A quantized tensor whose rows are not whole blocks cannot be sized: refused as a shape
    error naming it (gguf-py will not write one, so a Q8_0 norm's ne0 is patched from 64 to 48);
    and Q4_K blocks (256 columns) where the metadata say 64 columns are a shape error too."""
    import gguf
    p = tmp_path / "q8.gguf"
    qs.write_model(p, qs.TINY, seed=2, dtype="q8_0", quant_norms=True)
    data = bytearray(p.read_bytes())
    name = b"blk.0.attn_norm.weight"
    info = struct.pack("<IQI", 1, 64, 8)                      # n_dims 1, ne0 64, Q8_0
    at = data.index(name) + len(name)
    assert data[at:at + len(info)] == info
    data[at:at + len(info)] = struct.pack("<IQI", 1, 48, 8)
    (tmp_path / "q8-48.gguf").write_bytes(bytes(data))
    assert _err(tmp_path / "q8-48.gguf").endswith("does not match the metadata: blk.0.attn_norm.weight")
    p = tmp_path / "k64.gguf"
    raw = np.zeros((qs.TINY.inter, 144), np.uint8)           # one Q4_K block per row = 256 columns
    qs.write_model(p, qs.TINY, seed=2, raw_tensors={"blk.0.ffn_up.weight": (raw, gguf.GGMLQuantizationType.Q4_K)})
    assert "does not match the metadata: blk.0.ffn_up.weight" in _err(p)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------

def _err(path, backend="c"):
    with pytest.raises(qwen3.Qwen3Error) as ei:
        qwen3.load(path, backend=backend)
    return str(ei.value)


def test_missing_file_and_directory(tmp_path):
    assert "cannot open" in _err(tmp_path / "none.gguf")
    assert "cannot open" in _err(tmp_path)


def test_wrong_magic_and_version(tmp_path, files):
    data = files["f32"][0].read_bytes()
    (tmp_path / "magic.gguf").write_bytes(b"GGUX" + data[4:])
    assert "not a GGUF file" in _err(tmp_path / "magic.gguf")
    (tmp_path / "version.gguf").write_bytes(data[:4] + (9).to_bytes(4, "little") + data[8:])
    assert "unsupported GGUF version" in _err(tmp_path / "version.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    assert "truncated" in _err(tmp_path / "empty.gguf")


@pytest.mark.parametrize("fraction", [0.0005, 0.003, 0.02, 0.3, 0.999])
def test_truncated_file(tmp_path, files, fraction):
    data = files["f32"][0].read_bytes()
    p = tmp_path / "cut.gguf"
    p.write_bytes(data[:max(9, int(len(data) * fraction))])
    assert "truncated" in _err(p)


READS = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K"


def test_unsupported_tensor_type(tmp_path):
    p = tmp_path / "f64.gguf"
    qs.write_model(p, qs.TINY, seed=2, override_type={"blk.1.attn_q.weight": np.float64})
    assert _err(p) == f"{p}: unsupported tensor type F64 (reads {READS}): blk.1.attn_q.weight"


def test_unsupported_quant_type_named(tmp_path):
    """A quantized type that is not read (IQ2_XS, Q4_1) is refused with its name and the tensor's."""
    import gguf
    for tname, tid, bb in (("IQ2_XS", 17, 74), ("Q4_1", 3, 20)):
        p = tmp_path / f"{tname}.gguf"
        qk = 256 if tid == 17 else 32
        raw = np.zeros((qs.TINY_K.inter, qs.TINY_K.hidden // qk * bb), np.uint8)
        qs.write_model(p, qs.TINY_K, seed=2, dtype="q8_0", raw_tensors={
            "blk.0.ffn_up.weight": (raw, gguf.GGMLQuantizationType(tid))})
        assert _err(p) == f"{p}: unsupported tensor type {tname} (reads {READS}): blk.0.ffn_up.weight"


def test_missing_tensor(tmp_path):
    p = tmp_path / "missing.gguf"
    qs.write_model(p, qs.TINY, seed=2, omit=("blk.1.ffn_up.weight",))
    assert _err(p).endswith("a required tensor is missing: blk.1.ffn_up.weight")


def test_shapes_not_matching_metadata(tmp_path):
    p = tmp_path / "shape.gguf"
    qs.write_model(p, qs.TINY, seed=2, metadata=qs.Config(inter=96))
    assert "does not match the metadata: blk.0.ffn_gate.weight" in _err(p)


def test_missing_key_and_wrong_architecture(tmp_path):
    p = tmp_path / "nokey.gguf"
    qs.write_model(p, qs.TINY, seed=2, skip_keys=("attention.head_count",))
    assert _err(p).endswith("a required metadata key is missing: qwen3.attention.head_count")
    p = tmp_path / "llama.gguf"
    qs.write_model(p, qs.TINY, seed=2, arch="llama")
    assert "general.architecture is not 'qwen3'" in _err(p)


def test_bad_input_python_backend(tmp_path, files):
    data = files["f16"][0].read_bytes()
    p = tmp_path / "cut.gguf"
    p.write_bytes(data[: len(data) // 2])
    assert "truncated" in _err(p, backend="py")


def test_bad_tokens(model_c):
    with pytest.raises(qwen3.Qwen3Error, match="token id 256 is out of range"):
        model_c.forward([1, 256])
    with pytest.raises(qwen3.Qwen3Error, match="no tokens"):
        model_c.generate([], 3)


def test_close_frees_and_refuses(files):
    with qwen3.load(files["f16"][0]) as m:
        assert m.forward([1])[1].shape == (1, 64)
    with pytest.raises(qwen3.Qwen3Error, match="closed"):
        m.forward([1])


def test_command_line(files, capsys):
    assert qwen3.main([str(files["f32"][0]), "--tokens", "5,17,200,3", "--new", "4"]) == 0
    text = capsys.readouterr().out
    assert "2 layers, hidden 64" in text and "greedy:" in text
    assert qwen3.main([os.devnull + "x", "--tokens", "1"]) == 2
    assert "cannot open" in capsys.readouterr().err
