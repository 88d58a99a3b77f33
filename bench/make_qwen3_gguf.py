#!/usr/bin/env python3
"""Write a random-weight Qwen3 GGUF with the gguf package (tests/qwen3_support.write_model).

  --size tiny       hidden 64, 2 layers, 4 / 2 heads, head_dim 16, intermediate 128, vocab 256
                    (the suite's model, tests/test_qwen3.py; K-quants need whole 256-weight
                    rows, so --dtype q4_k / q5_k / q6_k writes tests' TINY_K: hidden 256,
                    head_dim 64, intermediate 512)
  --size 4b-layer   one Qwen3-4B layer: hidden 2560, 32 / 8 heads, head_dim 128,
                    intermediate 9728, vocab cut to 1024 (bench/qwen3_layer.py; ~207 MB in BF16)
  --size 4b         Qwen3-4B's exact shapes: 36 layers, hidden 2560, 32 / 8 heads, head_dim 128,
                    intermediate 9728, vocab 151,936, tied embeddings (bench/qwen3_4b_file.py).
                    Quantized types only (q8_0 ~4.3 GB, q4_k ~2.3 GB): random valid blocks
                    (tests/quant_support.random_blocks), written one tensor at a time so the
                    file is never held in memory (peak ~ the largest tensor, token_embd);
                    norms F32.

  --tokenizer       also carry a tokenizer: a Qwen2-style byte-level BPE trained here
                    (tests/tokenizer_support.py, ~600 tokens, Qwen3's special tokens and a
                    Qwen3-style chat template); the vocabulary becomes its size

Usage: python bench/make_qwen3_gguf.py OUT.gguf [--size tiny|4b-layer|4b]
           [--dtype f32|f16|bf16|q8_0|q4_0|q4_k|q5_k|q6_k] [--seed N] [--tokenizer]
Then:  python -m nxc.models.qwen3 OUT.gguf --tokens 1,2,3 --new 16
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import qwen3_support as qs  # noqa: E402
import quant_support as qsup  # noqa: E402

QWEN3_4B = qs.Config(n_layers=36, hidden=2560, n_heads=32, n_kv_heads=8, head_dim=128, inter=9728,
                     vocab=151936, n_ctx=40960)
DTYPES = ("f32", "f16", "bf16") + tuple(qsup.TYPES)


def write_streaming(path, cfg: qs.Config, dtype: str, seed: int = 0, log=print) -> None:
    """A quantized Qwen3 GGUF of cfg's shapes with random blocks, one tensor in memory at a time."""
    import gguf
    if dtype not in qsup.TYPES:
        raise SystemExit(f"--size 4b writes quantized files only (--dtype {', '.join(qsup.TYPES)})")
    rng = np.random.default_rng(seed)
    shapes = qs.shapes(cfg)
    w = gguf.GGUFWriter(str(path), "qwen3")
    w.add_block_count(cfg.n_layers); w.add_context_length(cfg.n_ctx); w.add_embedding_length(cfg.hidden)
    w.add_feed_forward_length(cfg.inter); w.add_head_count(cfg.n_heads); w.add_head_count_kv(cfg.n_kv_heads)
    w.add_key_length(cfg.head_dim); w.add_value_length(cfg.head_dim); w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_eps)
    w.add_file_type({"q8_0": 7, "q4_0": 2, "q4_k": 15, "q5_k": 17, "q6_k": 18}[dtype])
    qt = qsup.qtype(dtype)
    for name, shp in shapes.items():
        if len(shp) == 1:
            w.add_tensor_info(name, shp, np.dtype(np.float32), shp[0] * 4)
        else:
            rb = qsup.row_bytes(dtype, shp[1])
            w.add_tensor_info(name, (shp[0], rb), np.dtype(np.uint8), shp[0] * rb, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    t0 = time.perf_counter()
    for name, shp in shapes.items():
        if len(shp) == 1:
            w.write_tensor_data((1.0 + 0.1 * rng.standard_normal(shp)).astype(np.float32))
            continue
        rows, cols = shp
        qk = qsup.TYPES[dtype][1]
        buf = np.empty((rows, qsup.row_bytes(dtype, cols)), np.uint8)
        step = max(1, (1 << 22) // cols)               # ~4M weights of temporaries at a time
        for r in range(0, rows, step):
            n = min(step, rows - r)
            buf[r:r + n] = qsup.random_blocks(dtype, n * cols // qk, rng, 1.0 / math.sqrt(cols)).reshape(n, -1)
        w.write_tensor_data(buf)
        if name.endswith("ffn_down.weight") or name == "token_embd.weight":
            log(f"  {name} ({time.perf_counter() - t0:.0f} s)")
    w.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size", choices=("tiny", "4b-layer", "4b"), default="tiny")
    ap.add_argument("--dtype", choices=DTYPES, default="bf16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", action="store_true", help="carry a trained tokenizer and chat template")
    args = ap.parse_args(argv)
    if args.size == "4b":
        if args.tokenizer:
            ap.error("--tokenizer is for the small sizes (the 4b file is streamed without one)")
        write_streaming(args.out, QWEN3_4B, args.dtype, args.seed)
    else:
        cfg = qs.TINY if args.size == "tiny" else qs.QWEN3_4B_LAYER
        if args.size == "tiny" and args.dtype in qsup.K_QUANTS:
            cfg = qs.TINY_K
        tok = None
        if args.tokenizer:
            import dataclasses
            import tokenizer_support
            tok = tokenizer_support.train(vocab_size=600, n_docs=800)
            cfg = dataclasses.replace(cfg, vocab=tok.get_vocab_size())
        qs.write_model(args.out, cfg, seed=args.seed, dtype=args.dtype, quant_norms=True, tokenizer=tok)
    print(f"wrote {args.out}: {os.path.getsize(args.out):,} bytes ({args.size}, {args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
