#!/usr/bin/env python3
"""nx against llama.cpp on the same GGUF file: a 64-token prompt, then decode steps.

The file: one Qwen3-4B-shaped layer (hidden 2560, 32 / 8 heads, head_dim 128, intermediate
9728; tests/qwen3_support.py) with a small trained vocabulary (~600 tokens), F16 weights by default, written once to
a temporary folder (or --model PATH). Both sides run the same tokens:

  prompt   --prompt tokens in one pass (nx: a paged Session.step; llama.cpp: Llama.eval with
           n_batch = the prompt)
  decode   --steps single-token steps after it (median per step)

at each thread count of --threads (llama.cpp's n_threads and n_threads_batch; nx's
`threads=` of the model loader, where the runtime has threads). Times are wall seconds
(best of --repeat for the prompt), measured side by side in one run; the load average is
printed beside them, since the machine is shared.

nx runs the unchecked C build (`checked=False`, as the other kernel benches) unless --checked.

llama.cpp comes from the llama-cpp-python sdist, an optional extra built from source
(~25 min on 2 cores):

    CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=OFF" pip install --no-binary llama-cpp-python llama-cpp-python

Without it the bench prints how to install it and exits 2.

Quantized files (--dtype q8_0 ... q6_k): on the AVX-512 host of the fifteenth session, a native
build puts their weights in ggml's AMX buffer ("ggml_backend_amx_buffer_set_tensor: amx repack"),
and the process dies at the first matrix product (SIGILL / SIGSEGV: the guest does not let it
use the AMX tiles); the F16 / BF16 / F32 files run. A build without AMX (ggml's GGML_AMX_TILE /
GGML_AMX_INT8 / GGML_AMX_BF16 off, which GGML_NATIVE turns on here) should avoid it: not tried.
--no-extra-bufts runs llama.cpp with use_extra_bufts = false instead, which keeps the weights out
of the AMX buffer (and out of ggml's CPU repacking: llama.cpp below its best on these files).

Usage:  python bench/llama_cpp_compare.py [--dtype f16|bf16|f32|q8_0|q4_0|q4_k|q5_k|q6_k] [--threads 1,2]
            [--prompt 64] [--steps 15] [--repeat 2] [--model PATH] [--checked] [--no-extra-bufts]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

INSTALL = ('CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=OFF" '
           "pip install --no-binary llama-cpp-python llama-cpp-python")


def load_avg() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def nx_side(path, tokens, steps, threads, repeat, checked):
    from nxc.models import qwen3
    try:
        m = qwen3.load(path, checked=checked, threads=threads)     # (its default is every core)
    except qwen3.Qwen3Error as e:
        return None, None, str(e)
    prompt = float("inf")
    for _ in range(repeat):
        with m.session(max_tokens=len(tokens) + steps + 1) as s:
            t0 = time.perf_counter()
            _, out = s.step(tokens)
            prompt = min(prompt, time.perf_counter() - t0)
    with m.session(max_tokens=len(tokens) + steps + 1) as s:
        _, out = s.step(tokens)
        tok = s.greedy(out[-1])
        per = []
        for _ in range(steps):
            t0 = time.perf_counter()
            _, out = s.step([tok])
            per.append(time.perf_counter() - t0)
            tok = s.greedy(out[-1])
    m.close()
    return prompt, statistics.median(per), None


def llama_side(path, tokens, steps, threads, repeat, extra_bufts=True):
    from llama_cpp import Llama
    import llama_cpp.llama_cpp as low
    defaults = low.llama_model_default_params
    if not extra_bufts:                 # llama.cpp's use_extra_bufts = false: no AMX, no repacking
        def without():
            p = defaults()
            p.use_extra_bufts = False
            return p
        low.llama_model_default_params = without
    try:
        llm = Llama(model_path=str(path), n_ctx=len(tokens) + steps + 8, n_batch=len(tokens),
                    n_ubatch=len(tokens), n_threads=threads, n_threads_batch=threads, verbose=False,
                    # every token's output, as nx computes: otherwise llama.cpp computes the last layer's
                    # attention output and MLP for the last token only (the rows the logits need), which
                    # on a one-layer file is most of the work
                    logits_all=True)
    finally:
        low.llama_model_default_params = defaults
    prompt = float("inf")
    for _ in range(repeat):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(tokens)
        prompt = min(prompt, time.perf_counter() - t0)
    llm.reset()
    llm.eval(tokens)
    per = []
    tok = tokens[-1]
    for _ in range(steps):
        t0 = time.perf_counter()
        llm.eval([tok])
        per.append(time.perf_counter() - t0)
        tok = (tok * 7 + 1) % 500 + 1      # the token's value does not change the step's cost
    del llm
    return prompt, statistics.median(per)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a GGUF to use (default: one Qwen3-4B-shaped layer, written here)")
    ap.add_argument("--dtype", default="f16", choices=("f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k"))
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--checked", action="store_true", help="nx's checked C build (default unchecked)")
    ap.add_argument("--no-extra-bufts", action="store_true",
                    help="llama.cpp without its extra buffer types (use_extra_bufts = false: no AMX "
                         "buffer, no weight repacking; see above)")
    args = ap.parse_args(argv)
    try:
        threads = [int(t) for t in args.threads.split(",")]
        if not threads or min(threads) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--threads: a comma-separated list of positive counts, not {args.threads!r}")
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        print("llama-cpp-python is not installed (an optional extra, built from source):\n  " + INSTALL,
              file=sys.stderr)
        return 2
    os.environ.setdefault("NXC_CACHE_DIR", str(ROOT / ".nxc-cache"))
    import qwen3_support as qs
    tmp = None
    path = args.model
    if path is None:
        tmp = tempfile.TemporaryDirectory()
        path = os.path.join(tmp.name, f"qwen3-4b-layer-{args.dtype}.gguf")
        # llama.cpp refuses a "gpt2" vocabulary without merges: the file carries a small
        # trained BPE (tests/tokenizer_support.py), and the vocabulary becomes its size
        import dataclasses
        import tokenizer_support
        tok = tokenizer_support.train(vocab_size=600, n_docs=800)
        cfg = dataclasses.replace(qs.QWEN3_4B_LAYER, vocab=tok.get_vocab_size())
        qs.write_model(path, cfg, seed=0, dtype=args.dtype, tokenizer=tok)
    tokens = [(7 * i + 3) % 500 + 1 for i in range(args.prompt)]
    print(f"file {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.0f} MB), prompt {args.prompt}, "
          f"{args.steps} decode steps; nx {'checked' if args.checked else 'unchecked'} C; wall seconds"
          + ("; llama.cpp without extra buffer types" if args.no_extra_bufts else ""))
    print("| threads | prompt nx | prompt llama.cpp | nx / llama.cpp | decode step nx | decode llama.cpp "
          "| nx / llama.cpp | load |")
    print("|---|---|---|---|---|---|---|---|")
    for t in threads:
        lp, ld = llama_side(path, tokens, args.steps, t, args.repeat, not args.no_extra_bufts)
        np_, nd, why = nx_side(path, tokens, args.steps, t, args.repeat, args.checked)
        if why:
            print(f"| {t} | - | {lp:.3f} | - | - | {ld * 1e3:.1f} ms | - | {load_avg()} |  nx: {why}")
            continue
        print(f"| {t} | {np_:.3f} | {lp:.3f} | {np_ / lp:.2f} | {nd * 1e3:.1f} ms | {ld * 1e3:.1f} ms "
              f"| {nd / ld:.2f} | {load_avg()} |")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
