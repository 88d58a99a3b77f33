#!/usr/bin/env python3
"""nxc.models.tokenizer against Hugging Face `tokenizers` on many strings, and its speed.

Trains a Qwen2-style byte-level BPE (tests/tokenizer_support.py) of --vocab tokens, writes it
into a GGUF file, and compares encode (special tokens parsed and not) and decode on --count
generated strings. Prints mismatches (0 expected), load time and encode throughput of both.

  python bench/tokenizer_check.py --count 100000 --vocab 30000
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import tokenizer_support as ts  # noqa: E402
from nxc.models.tokenizer import Tokenizer  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000, help="strings to compare")
    ap.add_argument("--vocab", type=int, default=30_000, help="vocabulary size to train")
    ap.add_argument("--docs", type=int, default=30_000, help="training documents")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    hf = ts.train(vocab_size=args.vocab, n_docs=args.docs, seed=args.seed)
    print(f"trained {hf.get_vocab_size()} tokens in {time.perf_counter() - t0:.1f} s; load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "tok.gguf"
        ts.write_tokenizer_gguf(path, hf)
        t0 = time.perf_counter()
        tk = Tokenizer.from_gguf(path)
        print(f"Tokenizer.from_gguf: {time.perf_counter() - t0:.3f} s ({path.stat().st_size:,} bytes)")
    rng = random.Random(args.seed + 1)
    strings = [ts.random_text(rng) for _ in range(args.count)]
    n_bytes = sum(len(s.encode()) for s in strings)
    t0 = time.perf_counter()
    ours = [tk.encode(s) for s in strings]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = [hf.encode(s).ids for s in strings]
    t_hf = time.perf_counter() - t0
    enc_bad = sum(a != b for a, b in zip(ours, theirs))
    dec_bad = sum(tk.decode(a) != hf.decode(b, skip_special_tokens=False) for a, b in zip(ours, theirs))
    hf.encode_special_tokens = True
    plain_bad = sum(tk.encode(s, special=False) != hf.encode(s).ids for s in strings[: args.count // 10])
    print(f"{args.count} strings, {n_bytes / 1e6:.2f} MB: encode mismatches {enc_bad}, decode {dec_bad}, "
          f"special=False {plain_bad} (of {args.count // 10})")
    print(f"encode: nxc {n_bytes / t_ours / 1e6:.2f} MB/s, tokenizers (one string a call) "
          f"{n_bytes / t_hf / 1e6:.2f} MB/s; load {os.getloadavg()[0]:.1f}")
    return 1 if enc_bad or dec_bad or plain_bad else 0


if __name__ == "__main__":
    sys.exit(main())
