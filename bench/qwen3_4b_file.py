#!/usr/bin/env python3
"""A Qwen3-4B-shaped quantized GGUF through nxc.models.qwen3: load time, peak RSS and the
64-token prompt time, beside numpy float32 on the same file (bench, not CI).

    python bench/qwen3_4b_file.py MODEL.gguf [--tokens 64] [--skip-numpy]
    python bench/qwen3_4b_file.py --make q8_0 [--keep DIR]   # writes the file first (make_qwen3_gguf --size 4b)
    python bench/qwen3_4b_file.py MODEL.gguf --tokens 0 --compare-read [--unchecked] --skip-numpy
        # the load alone, the file mapped (qwen3.load's default) and read (mmap=False), each in
        # its own process: wall and CPU time, page faults, peak RSS

Each side runs in its own fresh process, so a peak RSS (ru_maxrss) is that side's alone:
  nx     qwen3.load (each tensor packed from a mapping of the file, or read with --compare-read's
         second run; dequantized on use) then forward(T tokens)
  numpy  gguf.GGUFReader (memory-mapped), each layer's weights dequantized with gguf-py to
         float32 just before the layer runs (dequantization timed apart), float32 matmuls
The issue's target: peak RSS <= file size + 1.5 GB for the Q8_0 file. The machine's load
(os.getloadavg) is printed beside the figures: they mean little on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_nx(path: str, T: int, mode: str = "mapped,checked") -> dict:
    from nxc.models import qwen3
    import nxc
    from nxc import paths
    opts = set(mode.split(","))
    checked = "unchecked" not in opts
    # the build first (as qwen3.load asks for it; cached after one run), so that the load
    # time is the file's alone
    nxc.load(os.path.join(paths.bundled_dir(), "nx_gguf.nx"), checked=checked, threads=qwen3.default_threads())
    t0, c0, f0 = time.perf_counter(), _cpu_s(), _faults()
    m = qwen3.load(path, checked=checked, mmap="read" not in opts, progress=False)
    load_s, load_cpu, faults = time.perf_counter() - t0, _cpu_s() - c0, _faults() - f0
    rss_load = _rss_mb()
    if T <= 0:
        return {"load_s": load_s, "load_cpu_s": load_cpu, "faults": faults, "rss_after_load_mb": rss_load, "prompt_s": 0.0,
                "peak_rss_mb": _rss_mb(), "finite": True}
    toks = np.random.default_rng(0).integers(0, m.config["vocab"], T)
    t0 = time.perf_counter()
    _, out = m.forward(toks)
    prompt_s = time.perf_counter() - t0
    return {"load_s": load_s, "load_cpu_s": load_cpu, "faults": faults, "rss_after_load_mb": rss_load, "prompt_s": prompt_s,
            "peak_rss_mb": _rss_mb(), "finite": bool(np.isfinite(out).all())}


def _rms(x, w, eps):
    return (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w).astype(np.float32)


def run_numpy(path: str, T: int) -> dict:
    import gguf
    from gguf.quants import dequantize
    r = gguf.GGUFReader(path)
    kv = {f.name: f.parts[f.data[0]][0] for f in r.fields.values() if f.data and len(f.data) == 1}
    L = int(kv["qwen3.block_count"]); H = int(kv["qwen3.attention.head_count"])
    KV = int(kv["qwen3.attention.head_count_kv"]); D = int(kv["qwen3.attention.key_length"])
    eps = float(kv["qwen3.attention.layer_norm_rms_epsilon"]); theta = float(kv["qwen3.rope.freq_base"])
    ten = {t.name: t for t in r.tensors}
    deq_s = 0.0

    def weight(name):
        nonlocal deq_s
        t0 = time.perf_counter()
        t = ten[name]
        w = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        deq_s += time.perf_counter() - t0
        return w.reshape([int(v) for v in reversed(t.shape)]) if w.ndim != 2 else w

    t_all = time.perf_counter()
    emb = ten["token_embd.weight"]
    toks = np.random.default_rng(0).integers(0, int(emb.shape[1]), T)
    t0 = time.perf_counter()
    rows = dequantize(emb.data[toks], emb.tensor_type).astype(np.float32)   # only the looked-up rows
    deq_s += time.perf_counter() - t0
    x = rows.reshape(T, -1)
    inv = (theta ** -(np.arange(0, D, 2, dtype=np.float32) / D)).astype(np.float32)
    ang = np.arange(T, dtype=np.float32)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(v):
        a, b = v[..., :D // 2], v[..., D // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)

    mask = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    for l in range(L):
        b = f"blk.{l}."
        h = _rms(x, weight(b + "attn_norm.weight"), eps)
        q = (h @ weight(b + "attn_q.weight").T).reshape(T, H, D)
        k = (h @ weight(b + "attn_k.weight").T).reshape(T, KV, D)
        v = (h @ weight(b + "attn_v.weight").T).reshape(T, KV, D)
        q = rope(_rms(q, weight(b + "attn_q_norm.weight"), eps))
        k = rope(_rms(k, weight(b + "attn_k_norm.weight"), eps))
        att = np.empty((T, H, D), np.float32)
        for hh in range(H):
            s = q[:, hh] @ k[:, hh // (H // KV)].T * np.float32(D ** -0.5) + mask
            p = np.exp(s - s.max(axis=1, keepdims=True))
            att[:, hh] = (p / p.sum(axis=1, keepdims=True)) @ v[:, hh // (H // KV)]
        x = x + att.reshape(T, H * D) @ weight(b + "attn_output.weight").T
        h2 = _rms(x, weight(b + "ffn_norm.weight"), eps)
        g = h2 @ weight(b + "ffn_gate.weight").T
        u = h2 @ weight(b + "ffn_up.weight").T
        x = x + (g / (1 + np.exp(-g)) * u) @ weight(b + "ffn_down.weight").T
    total = time.perf_counter() - t_all
    return {"prompt_s": total - deq_s, "dequant_s": deq_s, "peak_rss_mb": _rss_mb(), "finite": bool(np.isfinite(x).all())}


def _child(side: str, path: str, T: int, mode: str = "") -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", side, path, "--tokens", str(T), "--mode", mode],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{side} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--make", choices=("q8_0", "q4_0", "q4_k", "q5_k", "q6_k"), help="write the file first")
    ap.add_argument("--keep", help="directory for the --make file (default: a temporary one, removed after)")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--skip-numpy", action="store_true")
    ap.add_argument("--unchecked", action="store_true", help="nx's C without memory checks")
    ap.add_argument("--compare-read", action="store_true",
                    help="also load with mmap=False (each tensor read first), in its own process")
    ap.add_argument("--mode", default="", help=argparse.SUPPRESS)
    ap.add_argument("--child", choices=("nx", "numpy"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        if args.child == "nx":
            print(json.dumps(run_nx(args.model, args.tokens, args.mode)))
        else:
            print(json.dumps(run_numpy(args.model, args.tokens)))
        return 0
    tmp = None
    path = args.model
    if args.make:
        d = args.keep or (tmp := tempfile.mkdtemp(prefix="qwen3-4b-"))
        try:
            os.makedirs(d, exist_ok=True)       # --keep may name a folder not made yet
        except OSError as e:
            ap.error(f"--keep {d}: {e.strerror}")
        path = os.path.join(d, f"qwen3-4b-{args.make}.gguf")
        t0 = time.perf_counter()
        if subprocess.run([sys.executable, str(ROOT / "bench" / "make_qwen3_gguf.py"), path, "--size", "4b",
                           "--dtype", args.make]).returncode != 0:
            print(f"qwen3_4b_file: error: writing {path} failed (make_qwen3_gguf.py said why above)", file=sys.stderr)
            return 1
        print(f"written in {time.perf_counter() - t0:.1f} s")
    if not path:
        ap.error("give MODEL.gguf or --make TYPE")
    try:
        size_mb = os.path.getsize(path) / 2 ** 20
        print(f"{path}: {size_mb:,.0f} MiB; load average {os.getloadavg()[0]:.2f}")
        build = "unchecked" if args.unchecked else "checked"
        for how in ("mapped", "read") if args.compare_read else ("mapped",):
            nx = _child("nx", path, args.tokens, f"{how},{build}")
            prompt = f", {args.tokens}-token prompt {nx['prompt_s']:.1f} s" if args.tokens > 0 else ""
            print(f"nx ({how}, {build}): load {nx['load_s']:.1f} s wall, {nx['load_cpu_s']:.1f} s CPU, "
                  f"{nx['faults']:,} page faults, "
                  f"peak RSS {nx['peak_rss_mb']:,.0f} MiB (file + {nx['peak_rss_mb'] - size_mb:,.0f} MiB; "
                  f"target <= file + 1536){prompt}; load average {os.getloadavg()[0]:.2f}")
        if not args.skip_numpy and args.tokens > 0:
            npy = _child("numpy", path, args.tokens)
            print(f"numpy: {args.tokens}-token prompt {npy['prompt_s']:.1f} s float32 matmuls "
                  f"(+ {npy['dequant_s']:.1f} s gguf-py dequantization), peak RSS {npy['peak_rss_mb']:,.0f} MiB; "
                  f"nx / numpy {nx['prompt_s'] / npy['prompt_s']:.1f}x")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        if tmp:
            Path(path).unlink(missing_ok=True)
            os.rmdir(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
