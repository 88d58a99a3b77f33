"""Qwen3 test models (written with the gguf package) and a float64 numpy reference.

write_model(path, cfg, seed, dtype) writes a random-weight Qwen3 GGUF the way llama.cpp lays
one out (general.architecture = "qwen3", the qwen3.* keys, tensors token_embd, output_norm,
blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, ffn_norm,
ffn_gate, ffn_up, ffn_down}.weight, tied embeddings) with the matrices stored as F32, F16 or
BF16 and the norms as F32; it returns the weights as the float32 values the file holds.

forward(cfg, weights, tokens) is the same architecture in float64 (HF modeling_qwen3.py):
RMSNorm x / sqrt(mean(x^2) + eps) * w; q/k RMSNorm per head; rotate-half RoPE; causal GQA
softmax attention with scale head_dim^-0.5; SwiGLU MLP; final norm; tied logits. Two steps
follow the float32 the architecture defines, so that the comparison measures the arithmetic
and not a different model: inv_freq = float32(theta^(-float32(2i/d))) and the angle
float32(float32(pos) * inv_freq), as HF computes them in float32 (the cos / sin of that angle
are then float64).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Config:
    n_layers: int = 2
    hidden: int = 64
    n_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 16
    inter: int = 128
    vocab: int = 256
    n_ctx: int = 256
    rope_theta: float = 1_000_000.0
    rms_eps: float = 1e-6


TINY = Config()
# The smallest shape whose every matrix is whole 256-weight blocks (the K-quant test models)
TINY_K = Config(hidden=256, n_heads=4, n_kv_heads=2, head_dim=64, inter=512)
# One real Qwen3-4B layer (the bench): hidden 2560, 32/8 heads, head_dim 128, intermediate 9728
QWEN3_4B_LAYER = Config(n_layers=1, hidden=2560, n_heads=32, n_kv_heads=8, head_dim=128, inter=9728,
                        vocab=1024, n_ctx=40960)

LAYER_TENSORS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
                 "attn_k_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")


def shapes(cfg: Config) -> dict:
    """name -> numpy shape (rows, cols) / (n,) of every tensor, llama.cpp names."""
    qd, kvd = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    out = {"token_embd.weight": (cfg.vocab, cfg.hidden), "output_norm.weight": (cfg.hidden,)}
    for l in range(cfg.n_layers):
        b = f"blk.{l}."
        out.update({b + "attn_norm.weight": (cfg.hidden,), b + "attn_q.weight": (qd, cfg.hidden),
                    b + "attn_k.weight": (kvd, cfg.hidden), b + "attn_v.weight": (kvd, cfg.hidden),
                    b + "attn_output.weight": (cfg.hidden, qd), b + "attn_q_norm.weight": (cfg.head_dim,),
                    b + "attn_k_norm.weight": (cfg.head_dim,), b + "ffn_norm.weight": (cfg.hidden,),
                    b + "ffn_gate.weight": (cfg.inter, cfg.hidden), b + "ffn_up.weight": (cfg.inter, cfg.hidden),
                    b + "ffn_down.weight": (cfg.hidden, cfg.inter)})
    return out


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even (the way converters store BF16)."""
    b = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def from_bf16_bits(h: np.ndarray) -> np.ndarray:
    return (h.astype(np.uint32) << 16).view(np.float32)


def random_weights(cfg: Config, seed: int) -> dict:
    """float32 weights: matrices N(0, 1/cols) (activations stay O(1)), norms 1 + N(0, 0.1)."""
    rng = np.random.default_rng(seed)
    w = {}
    for name, shp in shapes(cfg).items():
        if len(shp) == 1:
            w[name] = (1.0 + 0.1 * rng.standard_normal(shp)).astype(np.float32)
        else:
            w[name] = (rng.standard_normal(shp) / math.sqrt(shp[1])).astype(np.float32)
    return w


def write_model(path, cfg: Config = TINY, seed: int = 0, dtype: str = "f32", weights: dict | None = None,
                omit: tuple = (), override_type: dict | None = None, extra_kv: dict | None = None,
                arch: str = "qwen3", skip_keys: tuple = (), metadata: Config | None = None,
                quant_norms: bool = False, raw_tensors: dict | None = None, tokenizer=None) -> dict:
    """Write a Qwen3 GGUF; returns the weights as stored (float32 values after F16 / BF16 rounding).

    omit: tensor names left out; override_type: name -> numpy float dtype to store it as (e.g.
    np.float64 for an unsupported type); metadata: a config written to the keys instead of cfg
    (shapes that do not match); skip_keys: qwen3.* key suffixes not written; tokenizer: a
    Hugging Face `tokenizers.Tokenizer` (tests/tokenizer_support.py) whose vocabulary, merges and
    chat template the file carries (cfg.vocab must be its size), instead of placeholder tokens.
    dtype q8_0 / q4_0 / q4_k / q5_k / q6_k: the matrices quantized (tests/quant_support.py: K-quants
    are random valid blocks, so the weights returned are those blocks dequantized by gguf-py);
    quant_norms: the norm vectors too, where their length is whole blocks; raw_tensors: name ->
    (uint8 bytes, GGMLQuantizationType) written as they are (a type the reader refuses)."""
    import gguf
    import quant_support as qsup
    w = dict(weights) if weights is not None else random_weights(cfg, seed)
    md = metadata or cfg
    writer = gguf.GGUFWriter(str(path), arch)
    keys = {"block_count": lambda: writer.add_block_count(md.n_layers),
            "context_length": lambda: writer.add_context_length(md.n_ctx),
            "embedding_length": lambda: writer.add_embedding_length(md.hidden),
            "feed_forward_length": lambda: writer.add_feed_forward_length(md.inter),
            "attention.head_count": lambda: writer.add_head_count(md.n_heads),
            "attention.head_count_kv": lambda: writer.add_head_count_kv(md.n_kv_heads),
            "attention.key_length": lambda: writer.add_key_length(md.head_dim),
            "attention.value_length": lambda: writer.add_value_length(md.head_dim),
            "rope.freq_base": lambda: writer.add_rope_freq_base(md.rope_theta),
            "attention.layer_norm_rms_epsilon": lambda: writer.add_layer_norm_rms_eps(md.rms_eps)}
    for k, add in keys.items():
        if k not in skip_keys:
            add()
    if tokenizer is not None:
        import tokenizer_support
        tokenizer_support.add_tokenizer_kv(writer, tokenizer)
    else:
        writer.add_string("tokenizer.ggml.model", "gpt2")
        writer.add_array("tokenizer.ggml.tokens", [f"<t{i}>" for i in range(cfg.vocab)])
    ftypes = {"f32": 0, "f16": 1, "bf16": 32, "q8_0": 7, "q4_0": 2, "q4_k": 15, "q5_k": 17, "q6_k": 18}
    writer.add_file_type(ftypes[dtype])
    qrng = np.random.default_rng(seed + 7919)
    for k, v in (extra_kv or {}).items():
        writer.add_uint32(k, v)
    stored = {}
    for name, x in w.items():
        if name in omit:
            continue
        if raw_tensors and name in raw_tensors:
            raw, qt = raw_tensors[name]
            writer.add_tensor(name, raw, raw_dtype=qt)
            stored[name] = x
            continue
        if override_type and name in override_type:
            writer.add_tensor(name, x.astype(override_type[name]))
            stored[name] = x
            continue
        if dtype in qsup.TYPES and (x.ndim == 2 or (quant_norms and len(x) % qsup.TYPES[dtype][1] == 0)):
            raw = qsup.quantize(x, dtype, qrng, positive=x.ndim == 1)
            writer.add_tensor(name, raw.reshape(-1) if x.ndim == 1 else raw, raw_dtype=qsup.qtype(dtype))
            stored[name] = qsup.dequantize(raw, dtype).reshape(x.shape)
        elif x.ndim == 1 or dtype == "f32":
            writer.add_tensor(name, np.ascontiguousarray(x, np.float32))
            stored[name] = x
        elif dtype == "f16":
            h = x.astype(np.float16)
            writer.add_tensor(name, h)
            stored[name] = h.astype(np.float32)
        elif dtype == "bf16":
            h = to_bf16_bits(x)
            writer.add_tensor(name, h, raw_dtype=gguf.GGMLQuantizationType.BF16)
            stored[name] = from_bf16_bits(h)
        else:
            raise ValueError(dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return stored


# ---------------------------------------------------------------------------
# float64 reference
# ---------------------------------------------------------------------------

def _rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_tables(cfg: Config, positions):
    d = cfg.head_dim
    e = (np.arange(0, d, 2, dtype=np.float32) / np.float32(d)).astype(np.float32)
    inv = np.array([np.float32(cfg.rope_theta ** -float(v)) for v in e], np.float32)
    ang = (np.asarray(positions, np.float32)[:, None] * inv[None, :]).astype(np.float32)
    return np.cos(ang.astype(np.float64)), np.sin(ang.astype(np.float64))


def _rope(x, cos, sin):
    # x [T, heads, d]; cos / sin [T, d/2]
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)


def forward(cfg: Config, w: dict, tokens, causal: bool = True):
    """(hidden_all [n_layers + 1, T, hidden], out [T, hidden]) in float64."""
    W = {k: v.astype(np.float64) for k, v in w.items()}
    tokens = np.asarray(tokens)
    T = len(tokens)
    H, KV, D = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    x = W["token_embd.weight"][tokens]
    cos, sin = rope_tables(cfg, np.arange(T))
    states = [x.copy()]
    mask = np.tril(np.ones((T, T), bool)) if causal else np.ones((T, T), bool)
    scale = D ** -0.5
    for l in range(cfg.n_layers):
        b = f"blk.{l}."
        h = _rmsnorm(x, W[b + "attn_norm.weight"], cfg.rms_eps)
        q = (h @ W[b + "attn_q.weight"].T).reshape(T, H, D)
        k = (h @ W[b + "attn_k.weight"].T).reshape(T, KV, D)
        v = (h @ W[b + "attn_v.weight"].T).reshape(T, KV, D)
        q = _rope(_rmsnorm(q, W[b + "attn_q_norm.weight"], cfg.rms_eps), cos, sin)
        k = _rope(_rmsnorm(k, W[b + "attn_k_norm.weight"], cfg.rms_eps), cos, sin)
        att = np.empty((T, H, D))
        for hh in range(H):
            kv = hh // (H // KV)
            s = q[:, hh, :] @ k[:, kv, :].T * scale
            s = np.where(mask, s, -np.inf)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            att[:, hh, :] = p @ v[:, kv, :]
        x = x + att.reshape(T, H * D) @ W[b + "attn_output.weight"].T
        h2 = _rmsnorm(x, W[b + "ffn_norm.weight"], cfg.rms_eps)
        g = h2 @ W[b + "ffn_gate.weight"].T
        u = h2 @ W[b + "ffn_up.weight"].T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ W[b + "ffn_down.weight"].T
        states.append(x.copy())
    out = _rmsnorm(x, W["output_norm.weight"], cfg.rms_eps)
    return np.stack(states), out


def logits(w: dict, out_row):
    return w["token_embd.weight"].astype(np.float64) @ out_row


def greedy(cfg: Config, w: dict, prompt, n_new: int):
    """(tokens, the top-1 minus top-2 logit gap at each step) by full float64 recomputation."""
    toks = list(prompt)
    new, gaps = [], []
    for _ in range(n_new):
        _, out = forward(cfg, w, toks)
        z = logits(w, out[-1])
        order = np.argsort(-z, kind="stable")
        new.append(int(order[0]))
        gaps.append(float(z[order[0]] - z[order[1]]))
        toks.append(int(order[0]))
    return new, gaps


def with_layers(cfg: Config, n: int) -> Config:
    return replace(cfg, n_layers=n)
