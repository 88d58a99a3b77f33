#!/usr/bin/env python3
"""One Qwen3-4B-shaped decoder layer in nx (C backend) against numpy float32 doing the same math.

Shapes: hidden 2560, 32 query / 8 kv heads, head_dim 128, intermediate 9728 (one real
Qwen3-4B layer), BF16 weights in a GGUF written with the gguf package (tests/qwen3_support.py;
vocab cut to 1024 so the file is one layer's worth, ~200 MB), loaded by the nx reader.

  prompt   64 tokens, one causal pass (nx_qwen3_forward, contiguous)
  decode   one token at position 1023: the paged cache holds 1023 earlier rows (random K/V
           written straight into the pool: the step's cost does not depend on their values)

numpy: the same operations in float32 (weights converted to float32 once, BLAS matmuls,
OPENBLAS/MKL/OMP threads set to 1 before numpy loads, so both sides use one core). Times are
CPU seconds of this process (time.process_time), best of --repeat; GFLOP/s counts 2 flops
per multiply-add of the matmuls and of attention (scores and weighted sums), nothing else.
Also measured: nx_f32_linear on one 2560 x 9728 matrix with the weights stored BF16, F16,
F32 (converted on use) and as float32 bits in i64 words (converted on load).

nx runs the unchecked C build (as bench/run_bench.py's kernel rows); --checked: the default
build of nxc.load and the model loader (the packed linear kernel is ~3x slower there).
--threads N: nx's linear layers and attention (kv heads and query blocks) on N threads (default
1, as numpy); with N > 1 the nx times are wall seconds (CPU time would add the threads up), and
the load average is printed with them.

Usage:  python bench/qwen3_layer.py [--model PATH] [--prompt 64] [--context 1024] [--repeat 1] [--checked]
                                    [--threads N]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

for v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(v, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402

import qwen3_support as qs  # noqa: E402


def cpu(fn, repeat, clock=time.process_time):
    best = float("inf")
    for _ in range(repeat):
        t = clock()
        r = fn()
        best = min(best, clock() - t)
    return best, r


def layer_flops(cfg, n_q, n_k_for_query):
    qd, kvd = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    per_tok = 2 * cfg.hidden * (qd + 2 * kvd) + 2 * qd * cfg.hidden + 3 * 2 * cfg.hidden * cfg.inter
    att = sum(4 * cfg.n_heads * cfg.head_dim * k for k in n_k_for_query)
    return n_q * per_tok + att


def numpy_layer(cfg, W, x, Kc, Vc, pos0):
    """float32 numpy: one layer over x [T, hidden] at positions pos0.., cached K/V rows before."""
    f = np.float32
    T = x.shape[0]
    H, KV, D = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim

    def norm(v, w):
        return (v * (1 / np.sqrt(np.mean(v * v, -1, keepdims=True) + f(cfg.rms_eps)))).astype(f) * w

    h = norm(x, W["attn_norm"])
    q = (h @ W["attn_q"].T).reshape(T, H, D)
    k = (h @ W["attn_k"].T).reshape(T, KV, D)
    v = (h @ W["attn_v"].T).reshape(T, KV, D)
    q, k = norm(q, W["attn_q_norm"]), norm(k, W["attn_k_norm"])
    cos, sin = qs.rope_tables(cfg, np.arange(pos0, pos0 + T))
    cos, sin = cos.astype(f)[:, None, :], sin.astype(f)[:, None, :]
    hd = D // 2

    def rope(t):
        a, b = t[..., :hd], t[..., hd:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)

    q, k = rope(q), rope(k)
    K = np.concatenate([Kc, k], 0)
    V = np.concatenate([Vc, v], 0)
    n_k = K.shape[0]
    att = np.empty((T, H, D), f)
    vis = np.arange(n_k)[None, :] <= (pos0 + np.arange(T))[:, None]
    for hh in range(H):
        kv = hh // (H // KV)
        s = (q[:, hh] @ K[:, kv].T) * f(D ** -0.5)
        s = np.where(vis, s, -np.inf)
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        att[:, hh] = p @ V[:, kv]
    x = x + att.reshape(T, H * D) @ W["attn_output"].T
    h2 = norm(x, W["ffn_norm"])
    g = h2 @ W["ffn_gate"].T
    u = h2 @ W["ffn_up"].T
    return x + ((g / (1 + np.exp(-g))) * u) @ W["ffn_down"].T


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a GGUF of one Qwen3-4B-shaped layer (written to a temp file if absent)")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--checked", action="store_true", help="the checked C build (default: unchecked, as the other benches)")
    ap.add_argument("--threads", type=int, default=1, help="threads for nx's linear layers and attention (default 1; > 1: wall time)")
    args = ap.parse_args(argv)
    nx_clock = time.process_time if args.threads == 1 else time.perf_counter
    os.environ.setdefault("NXC_CACHE_DIR", str(ROOT / ".nxc-cache"))
    from nxc.models import qwen3
    cfg = qs.QWEN3_4B_LAYER
    tmp = None
    path = args.model
    if path is None:
        tmp = tempfile.TemporaryDirectory()
        path = os.path.join(tmp.name, "qwen3-4b-layer-bf16.gguf")
        t = time.time()
        stored = qs.write_model(path, cfg, seed=0, dtype="bf16")
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.0f} MB) in {time.time() - t:.1f} s")
    else:
        stored = None
    t, c = time.time(), time.process_time()
    model = qwen3.load(path, checked=args.checked, threads=args.threads)
    print(f"nx GGUF load (check + cached build + read): {time.time() - t:.2f} s wall, "
          f"{time.process_time() - c:.2f} s CPU")
    if stored is None:
        raise SystemExit("--model: the numpy side needs the weights; run without --model")
    W = {k.split(".")[-2] if k.startswith("blk.") else k: v for k, v in stored.items()}
    rng = np.random.default_rng(1)
    prompt = rng.integers(0, cfg.vocab, args.prompt)
    rows = []

    # prompt
    t_nx, _ = cpu(lambda: model.forward(prompt), args.repeat, nx_clock)
    x0 = stored["token_embd.weight"][prompt].astype(np.float32)
    e = np.zeros((0, cfg.n_kv_heads, cfg.head_dim), np.float32)
    t_np, _ = cpu(lambda: numpy_layer(cfg, W, x0, e, e, 0), args.repeat)
    fl = layer_flops(cfg, args.prompt, [i + 1 for i in range(args.prompt)])
    rows.append((f"prompt, {args.prompt} tokens", t_nx, t_np, fl))

    # decode at context
    past = args.context - 1
    nxm = model.nx
    K = rng.standard_normal(past * cfg.n_kv_heads * cfg.head_dim).astype(np.float32)
    V = rng.standard_normal(past * cfg.n_kv_heads * cfg.head_dim).astype(np.float32)
    Kb, Vb = K.view(np.uint32).astype(np.int64), V.view(np.uint32).astype(np.int64)
    tok = rng.integers(0, cfg.vocab, 1)

    def nx_decode():
        with model.session(block_size=16, n_blocks=-(-args.context // 16)) as s:
            assert nxm.nx_pkv_ensure_append(s.seq, past) == 0
            assert nxm.nx_pkv_append_layer(s.seq, 0, Kb, Vb, past) == 0
            assert nxm.nx_pkv_advance(s.seq, past) == 0
            s.position = past
            t = nx_clock()
            s.step(tok)
            return nx_clock() - t

    t_nx = min(nx_decode() for _ in range(args.repeat))
    Kc = K.reshape(past, cfg.n_kv_heads, cfg.head_dim)
    Vc = V.reshape(past, cfg.n_kv_heads, cfg.head_dim)
    x1 = stored["token_embd.weight"][tok].astype(np.float32)
    t_np, _ = cpu(lambda: numpy_layer(cfg, W, x1, Kc, Vc, past), args.repeat)
    rows.append((f"decode, 1 token at {args.context} context", t_nx, t_np, layer_flops(cfg, 1, [args.context])))

    print()
    clock = "CPU" if args.threads == 1 else f"wall, {args.threads} threads"
    print(f"nx: {clock}; numpy: CPU, 1 thread; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"| case | nx C (s, {clock}) | nx GFLOP/s | numpy f32 (s) | numpy GFLOP/s | nx / numpy time |")
    print("|---|---|---|---|---|---|")
    for name, a, b, fl in rows:
        print(f"| {name} | {a:.3f} | {fl / a / 1e9:.2f} | {b:.3f} | {fl / b / 1e9:.2f} | {a / b:.1f}x |")

    # weight storage: converted on use vs on load
    import nxc
    lin = nxc.load(str(ROOT / "nx_src" / "nx_f32_linear.nx"))
    Wf = stored["blk.0.ffn_gate.weight"]
    X = rng.standard_normal((4, cfg.hidden)).astype(np.float32).view(np.uint32).astype(np.int64)
    Y = np.zeros(4 * cfg.inter, np.int64)
    print()
    print("| nx_f32_linear, 9728 x 2560, 4 tokens | GFLOP/s |")
    print("|---|---|")
    for label, data, ty in (("BF16, converted on use", qs.to_bf16_bits(Wf), 30),
                            ("F16, converted on use", Wf.astype(np.float16).view(np.uint16), 1),
                            ("F32 (*u32)", np.ascontiguousarray(Wf).view(np.uint32), 0),
                            ("converted on load (f32 bits in i64)", Wf.view(np.uint32).astype(np.int64), -1)):
        t, _ = cpu(lambda: lin.nx_f32_linear_raw(data, ty, cfg.inter, cfg.hidden, X, 4, Y), 1)
        print(f"| {label} | {2 * cfg.inter * cfg.hidden * 4 / t / 1e9:.2f} |")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
