#!/usr/bin/env python3
"""Write a random-weight Qwen3 GGUF with the gguf package (tests/qwen3_support.write_model).

  --size tiny       hidden 64, 2 layers, 4 / 2 heads, head_dim 16, intermediate 128, vocab 256
                    (the suite's model, tests/test_qwen3.py)
  --size 4b-layer   one Qwen3-4B layer: hidden 2560, 32 / 8 heads, head_dim 128,
                    intermediate 9728, vocab cut to 1024 (bench/qwen3_layer.py; ~207 MB in BF16)

  --tokenizer       also carry a tokenizer: a Qwen2-style byte-level BPE trained here
                    (tests/tokenizer_support.py, ~600 tokens, Qwen3's special tokens and a
                    Qwen3-style chat template); the vocabulary becomes its size

Usage: python bench/make_qwen3_gguf.py OUT.gguf [--size tiny|4b-layer] [--dtype f32|f16|bf16] [--seed N] [--tokenizer]
Then:  python -m nxc.models.qwen3 OUT.gguf --tokens 1,2,3 --new 16
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import qwen3_support as qs  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size", choices=("tiny", "4b-layer"), default="tiny")
    ap.add_argument("--dtype", choices=("f32", "f16", "bf16"), default="bf16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", action="store_true", help="carry a trained tokenizer and chat template")
    args = ap.parse_args(argv)
    cfg = qs.TINY if args.size == "tiny" else qs.QWEN3_4B_LAYER
    tok = None
    if args.tokenizer:
        import dataclasses
        import tokenizer_support
        tok = tokenizer_support.train(vocab_size=600, n_docs=800)
        cfg = dataclasses.replace(cfg, vocab=tok.get_vocab_size())
    qs.write_model(args.out, cfg, seed=args.seed, dtype=args.dtype, tokenizer=tok)
    print(f"wrote {args.out}: {os.path.getsize(args.out):,} bytes ({args.size}, {args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
