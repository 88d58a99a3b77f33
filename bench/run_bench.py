#!/usr/bin/env python3
"""nxc benchmarks: one table, every figure measured side by side in one run.

    python bench/run_bench.py            # the full table (several minutes)
    python bench/run_bench.py --quick    # smaller sizes, for a smoke test

Sections: 1. GQA attention, nx C (unchecked) vs hand-written C vs numpy; 1c-1e. linear
layers (nx's packed kernel vs numpy sgemm on 1 and 2 threads and torch), 1f. one
Qwen3-4B-shaped layer vs numpy, 1g. nx vs llama.cpp on one GGUF (where installed); 2.
paged vs contiguous KV cache per decode step; 2b. checked C (the default)
vs unchecked C vs the Python backend; 3. build times; 4. front-end
throughput; 5. Python backend vs C backend. Times are medians over repeats.
Not part of the test suite: these machines are shared and noisy, so targets
are read off ratios measured in the same run, never asserted in tests.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

# One core for everyone: BLAS would otherwise use every CPU while nx C uses one
# (issue 19 compares single-core throughput). Set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import nxc  # noqa: E402
from nxc.backend.c.build import build, compiler, flags_for, load  # noqa: E402
from nxc.diagnostics import Diagnostics  # noqa: E402
from nxc.backend.c.emit import EmittedC, emit_c  # noqa: E402
from nxc.check.frontend import check_file  # noqa: E402
from nxc.paths import bundled_dir, runtime_dir  # noqa: E402

sys.path.insert(0, HERE)
from linear_ab import packed  # noqa: E402  (a weight packed as the kernel reads it)

ROWS: list[tuple[str, str, str]] = []


def row(section: str, what: str, value: str) -> None:
    ROWS.append((section, what, value))
    print(f"  {what:<58} {value}", flush=True)


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def in_child(fn, clock=time.perf_counter) -> float:
    """Seconds `fn()` takes in a freshly forked child (its memory state is the parent's);
    clock=time.thread_time: the child's CPU time (what a loaded machine disturbs least)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        t0 = clock()
        fn()
        os.write(w, struct.pack("d", clock() - t0))
        os._exit(0)
    os.close(w)
    data = os.read(r, 8)
    os.close(r)
    os.waitpid(pid, 0)
    return struct.unpack("d", data)[0]


def paired_medians(fns, repeats: int, measured: bool = False, clock=time.perf_counter) -> list[float]:
    """Median time of each of `fns`, run in turns (a, b, c, a, b, c, ...);
    measured=True: each fn returns its own time (in_child); clock=time.process_time
    for CPU time (single-threaded code on a machine shared with other work).

    The ratios in the table compare such functions: taking turns means a
    slow spell of the shared machine slows both sides of a ratio alike,
    instead of landing on whichever ran during it.
    """
    times: list[list[float]] = [[] for _ in fns]
    for r in range(repeats):
        order = list(enumerate(fns))
        if r % 2:
            order.reverse()          # neither side always runs first
        for i, fn in order:
            t0 = clock()
            t = fn()
            times[i].append(t if measured else clock() - t0)
    return [statistics.median(t) for t in times]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def machine() -> str:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cc = subprocess.run([*compiler(), "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return (f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, {cc}, numpy {np.__version__}")


def bits(x: np.ndarray) -> np.ndarray:
    return nxc.f32.to_bits(x)


# ---------------------------------------------------------------- 1. GQA
def hand_c():
    """bench/hand_gqa.c, built with nxc's flags and loaded the same way (cffi)."""
    with open(os.path.join(HERE, "hand_gqa.c"), encoding="utf-8") as f:
        text = f.read()
    cdef = ("int64_t hand_gqa_attention(const int64_t *, const int64_t *, const int64_t *, int64_t, "
            "int64_t, int64_t, int64_t, int64_t, int64_t *);\n")
    lib, ffi = load(build(EmittedC(text, cdef, [])))
    return lib, ffi


def peak_c():
    """bench/peak_mul_add.c (independent vector mul and add chains, no FMA), nxc's flags."""
    with open(os.path.join(HERE, "peak_mul_add.c"), encoding="utf-8") as f:
        text = f.read()
    cdef = ("int64_t peak_lanes(void);\nfloat peak_mul_add(int64_t, float, float);\n"
            "int64_t peak_fma_available(void);\nfloat peak_fma(int64_t, float, float);\n")
    lib, _ = load(build(EmittedC(text, cdef, [])))
    return lib


def stream_c():
    """bench/stream_read.c, nxc's flags."""
    with open(os.path.join(HERE, "stream_read.c"), encoding="utf-8") as f:
        text = f.read()
    cdef = "uint64_t stream_read(const uint64_t *, int64_t);\nuint64_t stream_read_one(const uint64_t *, int64_t);\n"
    lib, ffi = load(build(EmittedC(text, cdef, [])))
    return lib, ffi


def last_level_cache() -> int:
    """Bytes of the largest cache (sysfs), 0 if unknown."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    for name in (os.listdir(base) if os.path.isdir(base) else []):
        try:
            with open(os.path.join(base, name, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        best = max(best, int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
    return best


def read_bandwidth(nbytes: int) -> float:
    """GB/s of bench/stream_read.c over a buffer of nbytes: the faster of its two readers (four
    streams side by side, one stream), best of 3 each (the buffer touched first)."""
    lib, ffi = stream_c()
    buf = np.ones(nbytes // 8, np.uint64)
    ptr = ffi.cast("const uint64_t *", buf.ctypes.data)
    lib.stream_read(ptr, buf.size)
    t = min(in_child(lambda f=f: f(ptr, buf.size), clock=time.process_time)
            for f in (lib.stream_read, lib.stream_read_one) for _ in range(3))
    return nbytes / t / 1e9


def numpy_gqa(Q, K, V, n, hq, hkv, d, scale):
    q = Q.reshape(n, hq, d).transpose(1, 0, 2)
    k = np.repeat(K.reshape(n, hkv, d).transpose(1, 0, 2), hq // hkv, axis=0)
    v = np.repeat(V.reshape(n, hkv, d).transpose(1, 0, 2), hq // hkv, axis=0)
    s = (q @ k.transpose(0, 2, 1)) * scale
    p = np.exp(s - s.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    return (p @ v).transpose(1, 0, 2).reshape(n, hq * d)


class NumpyGqaInPlace:
    """numpy_gqa with every temporary allocated once and reused (out=): numpy's best case.

    A fresh n x n x heads float32 temporary is 128 MB at n=1024; the kernel zeroes its pages on
    first touch each call, which can cost numpy_gqa as much as its matrix products (CPU time in
    the kernel counts in process_time). This variant shows numpy without that cost."""

    def __init__(self, Q, K, V, n, hq, hkv, d, scale):
        self.q = np.ascontiguousarray(Q.reshape(n, hq, d).transpose(1, 0, 2))
        self.kt = np.ascontiguousarray(np.repeat(K.reshape(n, hkv, d).transpose(1, 2, 0), hq // hkv, axis=0))
        self.v = np.ascontiguousarray(np.repeat(V.reshape(n, hkv, d).transpose(1, 0, 2), hq // hkv, axis=0))
        self.s = np.empty((hq, n, n), Q.dtype)
        self.m = np.empty((hq, n, 1), Q.dtype)
        self.o = np.empty((hq, n, d), Q.dtype)
        self.scale = Q.dtype.type(scale)

    def __call__(self):
        s, m = self.s, self.m
        np.matmul(self.q, self.kt, out=s)
        np.multiply(s, self.scale, out=s)
        np.max(s, axis=2, keepdims=True, out=m)
        np.subtract(s, m, out=s)
        np.exp(s, out=s)
        np.sum(s, axis=2, keepdims=True, out=m)
        np.divide(s, m, out=s)
        np.matmul(s, self.v, out=self.o)
        return self.o


def bench_gqa(sizes, repeats):
    print("1. GQA attention (32 query heads, 8 kv heads, head_dim 128)")
    hq, hkv, d = 32, 8, 128
    nx = nxc.load(os.path.join(bundled_dir(), "nx_f32_gqa_attention.nx"), checked=False)
    lib, ffi = hand_c()
    rng = np.random.default_rng(1)
    scale = float(np.float32(1 / np.sqrt(d)))
    sbits = int(bits(np.float32(scale)))
    prev = None
    for n in sizes:
        Q = rng.standard_normal((n, hq * d), dtype=np.float32)
        K = rng.standard_normal((n, hkv * d), dtype=np.float32)
        V = rng.standard_normal((n, hkv * d), dtype=np.float32)
        qb, kb, vb = bits(Q.ravel()), bits(K.ravel()), bits(V.ravel())
        out_nx = np.zeros(n * hq * d, np.int64)
        out_c = np.zeros(n * hq * d, np.int64)
        p = lambda a: ffi.cast("int64_t *", a.ctypes.data)  # noqa: E731
        reps = max(1, repeats if n <= 128 else repeats // 2)
        t_nx, t_c, t_np, t_re = paired_medians(
            [lambda: nx.nx_f32_gqa_attention(qb, kb, vb, n, hq, hkv, d, sbits, out_nx),
             lambda: lib.hand_gqa_attention(p(qb), p(kb), p(vb), n, hq, hkv, d, sbits, p(out_c)),
             lambda: numpy_gqa(Q, K, V, n, hq, hkv, d, scale),
             NumpyGqaInPlace(Q, K, V, n, hq, hkv, d, scale)], max(3, reps))
        same = np.array_equal(out_nx, out_c)
        row("gqa", f"n={n}: nx C (unchecked) / hand C / numpy",
            f"{ms(t_nx)} / {ms(t_c)} / {ms(t_np)}   nx/hand = {t_nx / t_c:.3f}"
            f"{'' if same else '  (OUTPUTS DIFFER)'}")
        row("gqa", f"n={n}: nx C / numpy with its buffers reused", f"{ms(t_nx)} / {ms(t_re)}   ratio = {t_nx / t_re:.2f}")
        if prev is not None:
            row("gqa", f"n={n}: growth vs n={prev[0]} (nx C; 4.0 = quadratic)", f"{t_nx / prev[1]:.2f}x")
        prev = (n, t_nx)


def bench_simd(sizes, repeats):
    """Issue 19: vectorized nx C against the scalar code and the float libraries, GFLOP/s."""
    print("1b. GQA attention, vectorized nx C vs scalar C, numpy float32/float64, torch (CPU time)")
    hq, hkv, d = 32, 8, 128
    path = os.path.join(bundled_dir(), "nx_f32_gqa_attention.nx")
    # unchecked, as section 1 (memory checks keep GCC from vectorizing: see docs/performance.md);
    # the first build is the default one (-O2 for the host, --march native)
    builds = [("nx C -O2 (default: native)", nxc.load(path, checked=False)),
              ("nx C -O2 --march x86-64-v3", nxc.load(path, march="x86-64-v3", checked=False)),
              ("nx C -O2 --march x86-64", nxc.load(path, march="x86-64", checked=False))]
    lib, ffi = hand_c()
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    rng = np.random.default_rng(1)
    scale = float(np.float32(1 / np.sqrt(d)))
    sbits = int(bits(np.float32(scale)))
    p = lambda a: ffi.cast("int64_t *", a.ctypes.data)  # noqa: E731
    for n in sizes:
        Q = rng.standard_normal((n, hq * d), dtype=np.float32)
        K = rng.standard_normal((n, hkv * d), dtype=np.float32)
        V = rng.standard_normal((n, hkv * d), dtype=np.float32)
        Q64, K64, V64 = Q.astype(np.float64), K.astype(np.float64), V.astype(np.float64)
        qb, kb, vb = bits(Q.ravel()), bits(K.ravel()), bits(V.ravel())
        outs = [np.zeros(n * hq * d, np.int64) for _ in builds]
        out_c = np.zeros(n * hq * d, np.int64)
        fns = [(lambda m=m, o=o: m.nx_f32_gqa_attention(qb, kb, vb, n, hq, hkv, d, sbits, o))
               for (_, m), o in zip(builds, outs)]
        names = [name for name, _ in builds]
        fns.append(lambda: lib.hand_gqa_attention(p(qb), p(kb), p(vb), n, hq, hkv, d, sbits, p(out_c)))
        names.append("hand-written scalar C")
        fns.append(lambda: numpy_gqa(Q, K, V, n, hq, hkv, d, scale))
        names.append("numpy float32")
        fns.append(NumpyGqaInPlace(Q, K, V, n, hq, hkv, d, scale))
        names.append("numpy float32, buffers reused")
        fns.append(lambda: numpy_gqa(Q64, K64, V64, n, hq, hkv, d, scale))
        names.append("numpy float64")
        if torch is not None:
            tq = torch.from_numpy(Q).reshape(n, hq, d).transpose(0, 1)
            tk = torch.from_numpy(K).reshape(n, hkv, d).transpose(0, 1).repeat_interleave(hq // hkv, 0)
            tv = torch.from_numpy(V).reshape(n, hkv, d).transpose(0, 1).repeat_interleave(hq // hkv, 0)
            fns.append(lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv))
            names.append("torch SDPA")
        # CPU time: every row runs on one thread, and the machine may be busy with other work
        times = dict(zip(names, paired_medians(fns, max(3, repeats if n <= 256 else repeats // 2),
                                               clock=time.process_time)))
        flops = 4.0 * n * n * d * hq
        same = all(np.array_equal(o, out_c) for o in outs)
        for name, t in times.items():
            row("simd", f"n={n}: {name}", f"{ms(t)}   {flops / t / 1e9:.1f} GFLOP/s")
        f32 = times["numpy float32"]
        f32_reused = times["numpy float32, buffers reused"]
        best = min(times[name] for name, _ in builds)
        row("simd", f"n={n}: nx C / numpy float32 (default build, best build)",
            f"{times[builds[0][0]] / f32:.2f} / {best / f32:.2f}"
            f"   bits: {'every nx build == scalar C' if same else 'OUTPUTS DIFFER'}")
        row("simd", f"n={n}: nx C default / numpy float32, buffers reused", f"{times[builds[0][0]] / f32_reused:.2f}")
        if torch is not None:
            row("simd", f"n={n}: best nx C / torch SDPA", f"{best / times['torch SDPA']:.2f}")
        else:
            row("simd", f"n={n}: torch SDPA", "not installed")


# ---------------------------------------------------------------- 1c. linear layers
def bench_linear(shapes, tokens, repeats):
    """Issue 28: the packed linear kernel (nx_f32_gemm.nx, unchecked C, one thread) per shape
    and weight type, against numpy sgemm on one thread (float32 weights), and the memory
    bandwidth measured in the same run (a numpy sum over 256 MB: read only)."""
    print("1c. Linear layers: packed nx kernel vs numpy sgemm (1 thread, CPU time)")
    try:
        import threadpoolctl
        info = "; ".join(f"{d.get('internal_api')} {d.get('version')} {d.get('architecture')} "
                         f"threads={d.get('num_threads')}" for d in threadpoolctl.threadpool_info())
    except ImportError:
        info = "threadpoolctl not installed"
    row("linear", "numpy BLAS", f"{info}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}")
    m = nxc.load(os.path.join(bundled_dir(), "nx_f32_gemm.nx"), checked=False)
    # The weights of one of these matrices (25-100 MB) stay in a large last-level cache between
    # calls (480 MiB on the Xeon of the eleventh session), so the decode rows below read them at
    # the cache's rate: the yardstick for them is a read of a buffer of their size, and the
    # decode rows from memory (bench_decode_dram) stream weights four times the cache's size.
    llc = last_level_cache()
    bw = read_bandwidth(64 << 20)
    row("linear", "read bandwidth, one thread, 64 MiB buffer (bench/stream_read.c)", f"{bw:.1f} GB/s   "
        f"(last-level cache {llc >> 20} MiB)")
    peak = peak_c()
    iters = 20_000_000
    t_pk = min(in_child(lambda: peak.peak_mul_add(iters, 1.0, 0.0), clock=time.process_time) for _ in range(3))
    peak_gf = iters * 12 * peak.peak_lanes() / t_pk / 1e9
    row("linear", f"FP peak, separate vector mul + add ({peak.peak_lanes()} lanes, 12 chains, no FMA)",
        f"{peak_gf:.1f} GFLOP/s   load average {os.getloadavg()[0]:.1f}")
    if peak.peak_fma_available():
        # what a BLAS may use and the bit-exact kernels may not (numpy's sgemm is measured against
        # this one: where it is twice the row above, numpy at half its own peak is at ours)
        t_fma = min(in_child(lambda: peak.peak_fma(iters, 1.0, 0.0), clock=time.process_time) for _ in range(3))
        fma_gf = iters * 24 * peak.peak_lanes() / t_fma / 1e9
        row("linear", "FP peak, fused multiply-add (what numpy's BLAS uses; 12 chains)",
            f"{fma_gf:.1f} GFLOP/s   mul + add / FMA = {peak_gf / fma_gf:.2f}")
    rng = np.random.default_rng(3)
    for R, C in shapes:
        Wf = (rng.standard_normal((R, C)) * 0.05).astype(np.float32)
        for T in tokens:
            Xf = rng.standard_normal((T, C)).astype(np.float32)
            X = bits(Xf.ravel())
            t_np = paired_medians([lambda: Xf @ Wf.T], repeats, clock=time.process_time)[0]
            flops = 2.0 * R * C * T
            row("linear", f"{R}x{C}, {T} tok: numpy sgemm f32", f"{ms(t_np)}   {flops / t_np / 1e9:.1f} GFLOP/s")
            for name in ("bf16", "f16", "f32"):
                P, es = packed(m, Wf, name)
                Y = np.zeros(T * R, np.int64)
                if es == 4:
                    fn = lambda: m.nx_gemm_f32(P, R, C, X, T, Y)  # noqa: E731
                else:
                    fn = lambda b=(name == "bf16"): m.nx_gemm_u16(P, b, R, C, X, T, Y)  # noqa: E731
                t = paired_medians([fn], repeats, clock=time.process_time)[0]
                extra = (f"{R * C * es / t / 1e9:.1f} GB/s of weights ({R * C * es / t / 1e9 / bw:.0%} of bandwidth)"
                         if T == 1 else f"nx/numpy {t / t_np:.2f}   {flops / t / 1e9 / peak_gf:.0%} of peak")
                row("linear", f"{R}x{C}, {T} tok: nx {name} packed", f"{ms(t)}   {flops / t / 1e9:.1f} GFLOP/s   {extra}")
    bench_decode_dram(shapes[0][1], repeats)
    bench_linear_threads(shapes, tokens, repeats)
    bench_linear_others(shapes, tokens, repeats)
    bench_linear_quant(shapes, tokens, repeats, bw)


def bench_linear_threads(shapes, tokens, repeats, counts=(1, 2)):
    """The packed kernel (bf16, unchecked C) at 1 and 2 threads, wall time (CPU time adds the
    threads' times up), in turns; the ratio is the speed-up (issue 28's target: >= 1.8x on the
    prompt, 2 cores idle). The load average is printed beside it: on a shared machine the
    second core is often someone else's, and the ratio then says so."""
    print(f"1d. Linear layers on threads (bf16, wall time); load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    path = os.path.join(bundled_dir(), "nx_f32_gemm.nx")
    mods = {t: nxc.load(path, checked=False, threads=t) for t in counts}
    rng = np.random.default_rng(4)
    for R, C in shapes:
        Wf = (rng.standard_normal((R, C)) * 0.05).astype(np.float32)
        P, _ = packed(mods[1], Wf, "bf16")
        for T in tokens:
            X = bits(rng.standard_normal((T, C)).astype(np.float32).ravel())
            Ys = {t: np.zeros(T * R, np.int64) for t in counts}
            fns = [lambda t=t: mods[t].nx_gemm_u16(P, True, R, C, X, T, Ys[t]) for t in counts]
            times = paired_medians(fns, repeats)
            same = all(np.array_equal(Ys[t], Ys[counts[0]]) for t in counts)
            flops = 2.0 * R * C * T
            for t, s in zip(counts, times):
                row("linear", f"{R}x{C}, {T} tok: nx bf16, {t} thread{'s' if t > 1 else ''} (wall)",
                    f"{ms(s)}   {flops / s / 1e9:.1f} GFLOP/s")
            row("linear", f"{R}x{C}, {T} tok: {counts[-1]} threads / 1 thread",
                f"{times[0] / times[-1]:.2f}x   same bits: {'yes' if same else 'NO'}   "
                f"load {os.getloadavg()[0]:.2f}")


def bench_decode_dram(cols: int, repeats: int):
    """Issue 28's "decode at memory speed": one token through a weight of `cols` columns and as
    many rows as make it four times the last-level cache (at least 1 GiB), so that every call
    streams it from memory, as a decode step of a real model does (a Qwen3-4B is 8 GB in BF16),
    against the read bandwidth of the same memory measured in the same run; bf16, f16, f32 and
    the quantized Q8_0, Q4_K and Q6_K (unchecked C, one thread, CPU time)."""
    llc = last_level_cache()
    size = max(1 << 30, 4 * llc)
    bw = read_bandwidth(size)
    row("linear", f"read bandwidth, one thread, {size >> 20} MiB buffer (memory)", f"{bw:.1f} GB/s")
    m = nxc.load(os.path.join(bundled_dir(), "nx_f32_gemm.nx"), checked=False)
    rng = np.random.default_rng(6)
    x = bits(rng.standard_normal(cols).astype(np.float32))
    for name, es in (("bf16", 2), ("f16", 2), ("f32", 4)):
        R = size // (cols * es) // 16 * 16
        Rp = R
        buf = np.zeros(Rp * cols * es + 64, np.uint8)
        P = buf[(-buf.ctypes.data) % 64:][:Rp * cols * es].view(np.uint32 if es == 4 else np.uint16)
        # the packed weights themselves (one MiB of a weight's values repeated: packing a GiB from a
        # source matrix would double the memory for nothing). Values of a real weight's size: no
        # subnormal floats, which the CPU multiplies through a slow microcode assist (nx keeps
        # them, as IEEE says, and a matrix full of them is slow to multiply whatever its source)
        w = (rng.standard_normal(1 << 18) * 0.05).astype(np.float32)
        tile = (w.view(np.uint32) if es == 4 else
                (w.view(np.uint32) >> 16).astype(np.uint16) if name == "bf16" else w.astype(np.float16).view(np.uint16))
        for at in range(0, P.size, tile.size):
            P[at:at + tile.size] = tile[:P.size - at]
        Y = np.zeros(R, np.int64)
        fn = ((lambda: m.nx_gemm_f32(P, R, cols, x, 1, Y)) if es == 4 else
              (lambda b=(name == "bf16"): m.nx_gemm_u16(P, b, R, cols, x, 1, Y)))
        fn()
        t = paired_medians([fn], max(3, repeats // 2), clock=time.process_time)[0]
        gbs = R * cols * es / t / 1e9
        row("linear", f"decode, {R}x{cols} {name} ({R * cols * es >> 20} MiB): nx packed, from memory",
            f"{ms(t)}   {gbs:.1f} GB/s ({gbs / bw:.0%} of the read bandwidth)")
        del P, buf
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    try:
        from quant_support import TYPES, random_blocks
    except ImportError as e:
        row("linear", "decode from memory, quantized", f"skipped: {e}")
        return
    q = nxc.load(os.path.join(bundled_dir(), "nx_f32_qgemm.nx"), checked=False)
    for name in ("q8_0", "q4_k", "q6_k"):       # Q4_K_M files hold Q4_K and Q6_K tensors
        t_id, qk, bb = TYPES[name]
        per_row = cols // qk * bb
        R = size // per_row // 16 * 16
        raw = random_blocks(name, R * cols // qk, rng, 0.05).reshape(R, -1)
        buf = np.zeros(q.nx_qgemm_packed_bytes(t_id, R, cols), np.uint8)
        P = buf[(-buf.ctypes.data) % 64:]
        q.nx_qgemm_pack(t_id, raw, R, cols, P)
        del raw
        Y = np.zeros(R, np.int64)
        fn = lambda: q.nx_qgemm(t_id, P, R, cols, x, 1, Y)  # noqa: E731
        fn()
        t = paired_medians([fn], max(3, repeats // 2), clock=time.process_time)[0]
        gbs = R * per_row / t / 1e9
        row("linear", f"decode, {R}x{cols} {name} ({R * per_row >> 20} MiB): nx packed, from memory",
            f"{ms(t)}   {gbs:.1f} GB/s of {name} bytes ({gbs / bw:.0%} of the read bandwidth)")
        del P, buf


NUMPY_THREADS_CHILD = r"""
import os, sys, time
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = sys.argv[1]
import numpy as np
R, C, T, repeats = map(int, sys.argv[2:6])
rng = np.random.default_rng(3)
W = (rng.standard_normal((R, C)) * 0.05).astype(np.float32)
X = rng.standard_normal((T, C)).astype(np.float32)
X @ W.T
best = min((lambda t0: (X @ W.T, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(repeats))
print(best)
"""


def bench_linear_others(shapes, tokens, repeats):
    """The same shapes in numpy's sgemm on 2 threads (a child process: the BLAS thread count is
    fixed when numpy loads) and in torch where installed (F.linear, float32 and bfloat16, 1 and 2
    threads; bfloat16 goes through oneDNN's AMX/AVX-512 BF16 kernels where the CPU has them: not
    bit-exact, the yardstick of what the hardware does with rounding left to it). Wall times."""
    print(f"1e. Linear layers elsewhere: numpy on 2 threads, torch (wall time); load {os.getloadavg()[0]:.2f}")
    try:
        import torch
    except ImportError:
        torch = None
        row("linear", "torch", "not installed (pip install torch==2.13.0, the CPU wheel)")
    for R, C in shapes:
        for T in tokens:
            flops = 2.0 * R * C * T
            out = subprocess.run([sys.executable, "-c", NUMPY_THREADS_CHILD, "2", str(R), str(C), str(T),
                                  str(repeats)], capture_output=True, text=True)
            if out.returncode == 0:
                t = float(out.stdout.split()[-1])
                row("linear", f"{R}x{C}, {T} tok: numpy sgemm f32, 2 threads (wall)",
                    f"{ms(t)}   {flops / t / 1e9:.1f} GFLOP/s")
            if torch is None:
                continue
            rng = np.random.default_rng(3)
            Wt = torch.from_numpy((rng.standard_normal((R, C)) * 0.05).astype(np.float32))
            Xt = torch.from_numpy(rng.standard_normal((T, C)).astype(np.float32))
            for dtype in (torch.float32, torch.bfloat16):
                w, x = Wt.to(dtype), Xt.to(dtype)
                name = "f32" if dtype == torch.float32 else "bf16"
                for threads in (1, 2):
                    torch.set_num_threads(threads)
                    torch.nn.functional.linear(x, w)
                    t = paired_medians([lambda: torch.nn.functional.linear(x, w)], repeats)[0]
                    row("linear", f"{R}x{C}, {T} tok: torch {name}, {threads} thread{'s' if threads > 1 else ''} (wall)",
                        f"{ms(t)}   {flops / t / 1e9:.1f} GFLOP/s")
            torch.set_num_threads(1)


def bench_linear_quant(shapes, tokens, repeats, bw):
    """Issues 28 / 29: the packed kernel for quantized weights (nx_f32_qgemm.nx, unchecked C, one
    thread) on Q8_0 and Q4_K blocks of the Qwen3-4B shapes, against numpy sgemm on the same
    weights dequantized to float32 (gguf-py), and, for one token, the GB/s of quantized bytes
    read. The machine's load average is printed beside the rows (other work shares it)."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    try:
        from quant_support import TYPES, dequantize, random_blocks
    except ImportError as e:                        # gguf-py missing
        row("linear", "quantized weights", f"skipped: {e}")
        return
    m = nxc.load(os.path.join(bundled_dir(), "nx_f32_qgemm.nx"), checked=False)
    rng = np.random.default_rng(4)
    for R, C in shapes:
        for name in ("q8_0", "q4_k"):
            t_id, qk, _ = TYPES[name]
            raw = random_blocks(name, R * C // qk, rng, 0.05).reshape(R, -1)
            Wf = dequantize(raw, name).reshape(R, C)
            buf = np.zeros(m.nx_qgemm_packed_bytes(t_id, R, C), np.uint8)
            P = buf[(-buf.ctypes.data) % 64:]
            t0 = time.process_time()
            m.nx_qgemm_pack(t_id, raw, R, C, P)
            t_pack = time.process_time() - t0
            row("linear", f"{R}x{C} {name}: pack at load", f"{ms(t_pack)}   load average {os.getloadavg()[0]:.1f}")
            for T in tokens:
                Xf = rng.standard_normal((T, C)).astype(np.float32)
                X = bits(Xf.ravel())
                Y = np.zeros(T * R, np.int64)
                t_np, t = paired_medians([lambda: Xf @ Wf.T, lambda: m.nx_qgemm(t_id, P, R, C, X, T, Y)], repeats,
                                         clock=time.process_time)
                flops = 2.0 * R * C * T
                row("linear", f"{R}x{C}, {T} tok: numpy sgemm f32 on dequantized {name}",
                    f"{ms(t_np)}   {flops / t_np / 1e9:.1f} GFLOP/s")
                parts = [ms(t), f"{flops / t / 1e9:.1f} GFLOP/s", f"nx/numpy {t / t_np:.2f}"]
                if T == 1:
                    gbs = raw.nbytes / t / 1e9
                    parts.append(f"{gbs:.1f} GB/s of {name} bytes ({gbs / bw:.0%} of bandwidth)")
                parts.append(f"load average {os.getloadavg()[0]:.1f}")
                row("linear", f"{R}x{C}, {T} tok: nx {name} packed", "   ".join(parts))


# ---------------------------------------------------------------- 1f. the layer, and llama.cpp
def table_rows(text: str) -> list[list[str]]:
    """The data rows of the markdown tables a bench printed."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set(line) <= set("|-: ") and len(cells) > 2:
            out.append(cells)
    return out


def bench_layer(prompt: int, context: int, threads=(1, 2)):
    """bench/qwen3_layer.py (one Qwen3-4B-shaped layer, BF16, unchecked C, against numpy doing
    the same float32 math on one thread): its prompt and decode rows, at each thread count
    (one thread: CPU time; more: wall time)."""
    print(f"1f. One Qwen3-4B-shaped layer vs numpy (bench/qwen3_layer.py); load {os.getloadavg()[0]:.2f}")
    for t in threads:
        out = subprocess.run([sys.executable, os.path.join(HERE, "qwen3_layer.py"), "--prompt", str(prompt),
                              "--context", str(context), "--repeat", "2", "--threads", str(t)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            row("layer", f"qwen3_layer.py --threads {t}", f"failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        for cells in table_rows(out.stdout):
            if cells[0].startswith(("prompt", "decode")):
                row("layer", f"{cells[0]}, nx {t} thread{'s' if t > 1 else ''} / numpy 1 thread",
                    f"{cells[1]} s / {cells[3]} s   nx/numpy {cells[5]}   load {os.getloadavg()[0]:.2f}")


def bench_llama(prompt: int, steps: int):
    """bench/llama_cpp_compare.py on the same one-layer F16 GGUF for both: llama.cpp's prompt
    and decode step against nx's at 1 and 2 threads (wall). llama-cpp-python is an optional
    extra built from source; without it the row says how to install it."""
    print(f"1g. nx vs llama.cpp on one GGUF (bench/llama_cpp_compare.py); load {os.getloadavg()[0]:.2f}")
    out = subprocess.run([sys.executable, os.path.join(HERE, "llama_cpp_compare.py"), "--threads", "1,2",
                          "--prompt", str(prompt), "--steps", str(steps), "--repeat", "2"],
                         capture_output=True, text=True)
    if out.returncode == 2:
        row("llama", "llama.cpp", "not installed: " + " ".join(out.stdout.split()[-8:]))
        return
    if out.returncode != 0:
        row("llama", "llama_cpp_compare.py", f"failed: {out.stderr.strip().splitlines()[-1:]}")
        return
    for cells in table_rows(out.stdout):
        if not cells[0].isdigit():
            continue
        t = cells[0]
        row("llama", f"{t} thread{'s' if t != '1' else ''}: prompt {prompt}, nx / llama.cpp",
            f"{cells[1]} s / {cells[2]} s = {cells[3]}")
        row("llama", f"{t} thread{'s' if t != '1' else ''}: decode step, nx / llama.cpp",
            f"{cells[4]} / {cells[5]} = {cells[6]}   {cells[7] if len(cells) > 7 else ''}")


# ---------------------------------------------------------------- 2. paged vs contiguous
PAGED_DRIVER = '''
import "nx_f32_attn_paged.nx"
import "nx_f32_attn_with_cache.nx"
import "nx_f32_attn_rows.nx"
'''


def bench_paged(contexts, repeats):
    print("2. Paged vs contiguous KV cache, one decode step (32/8 heads, head_dim 128, 1 layer)")
    hq, hkv, d, block = 32, 8, 128, 16
    kvd = hkv * d
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "paged_bench.nx")
        with open(path, "w") as f:
            f.write(PAGED_DRIVER)
        m = nxc.load(path, checked=False)
    rng = np.random.default_rng(2)
    sbits = int(bits(np.float32(1 / np.sqrt(d))))
    for L in contexts:
        Kp = bits(rng.standard_normal(L * kvd, dtype=np.float32))
        Vp = bits(rng.standard_normal(L * kvd, dtype=np.float32))
        q = bits(rng.standard_normal(hq * d, dtype=np.float32))
        k1 = bits(rng.standard_normal(kvd, dtype=np.float32))
        v1 = bits(rng.standard_normal(kvd, dtype=np.float32))
        cache = m.nx_kvc_new(1, hkv, d, L + 1)
        m.nx_kvc_ensure_append(cache, L)
        m.nx_kvc_append_layer(cache, 0, Kp, Vp, L)
        m.nx_kvc_advance(cache, L)
        m.nx_kvc_ensure_append(cache, 1)
        pool = m.nx_pkv_pool_new(1, hkv, d, block, (L + 1) // block + 2)
        seq = m.nx_pkv_seq_new(pool)
        m.nx_pkv_ensure_append(seq, L)
        m.nx_pkv_append_layer(seq, 0, Kp, Vp, L)
        m.nx_pkv_advance(seq, L)
        m.nx_pkv_ensure_append(seq, 1)
        out_c = np.zeros(hq * d, np.int64)
        out_p = np.zeros(hq * d, np.int64)
        out_r = np.zeros(hq * d, np.int64)
        # Each call appends this step's row at position L (not advanced), so
        # every repeat does the same work. The third: the model's decode attention
        # (nx_f32_attn_rows_paged: the rows read in their blocks, no gather), one thread.
        t_c, t_p, t_r = paired_medians(
            [lambda: m.nx_f32_attn_with_cache(q, k1, v1, 1, hq, hkv, d, cache, 0, 1, sbits, out_c),
             lambda: m.nx_f32_attn_with_paged(q, k1, v1, 1, hq, hkv, d, seq, 0, 1, sbits, out_p),
             lambda: m.nx_f32_attn_rows_paged(q, k1, v1, 1, hq, hkv, d, seq, 0, 1, sbits, out_r)], repeats,
            clock=time.process_time)
        same = np.array_equal(out_c, out_p)
        row("paged", f"context {L}: paged / contiguous",
            f"{ms(t_p)} / {ms(t_c)}   ratio = {t_p / t_c:.3f}{'' if same else '  (OUTPUTS DIFFER)'}")
        row("paged", f"context {L}: paged in place / paged gathered",
            f"{ms(t_r)} / {ms(t_p)}   ratio = {t_r / t_p:.3f}{'' if np.array_equal(out_r, out_p) else '  (OUTPUTS DIFFER)'}")


# ---------------------------------------------------------------- 2b. checked C
def gqa_inputs(n, hq, hkv, d, seed=5):
    rng = np.random.default_rng(seed)
    return (bits(rng.standard_normal(n * hq * d, dtype=np.float32)),
            bits(rng.standard_normal(n * hkv * d, dtype=np.float32)),
            bits(rng.standard_normal(n * hkv * d, dtype=np.float32)))


def bench_checked_linear(repeats, R=9728, C=2560, tokens=(64, 1)):
    """The packed linear kernel (bf16, one thread, CPU time), checked C (what nxc.load and the
    model loader build by default) against unchecked C, on the same packed weights."""
    path = os.path.join(bundled_dir(), "nx_f32_gemm.nx")
    mods = {"checked": nxc.load(path), "unchecked": nxc.load(path, checked=False)}
    rng = np.random.default_rng(8)
    P, _ = packed(mods["unchecked"], (rng.standard_normal((R, C)) * 0.05).astype(np.float32), "bf16")
    for T in tokens:
        X = bits(rng.standard_normal((T, C)).astype(np.float32).ravel())
        Ys = {k: np.zeros(T * R, np.int64) for k in mods}
        t_chk, t_unc = paired_medians([lambda k=k: mods[k].nx_gemm_u16(P, True, R, C, X, T, Ys[k]) for k in mods],
                                      max(3, repeats), clock=time.process_time)
        same = np.array_equal(Ys["checked"], Ys["unchecked"])
        row("checked", f"linear {R}x{C} bf16, {T} tok: checked C / unchecked C",
            f"{ms(t_chk)} / {ms(t_unc)}   checked/unchecked = {t_chk / t_unc:.3f}{'' if same else '  (OUTPUTS DIFFER)'}")


def bench_checked(n, n_py, repeats):
    """Checked C (the default) against unchecked C and the Python backend."""
    print(f"2b. Checked C vs unchecked C vs the Python backend (GQA 32/8 heads, head_dim 128; paged gate)")
    hq, hkv, d = 32, 8, 128
    path = os.path.join(bundled_dir(), "nx_f32_gqa_attention.nx")
    mods = {"checked": nxc.load(path), "unchecked": nxc.load(path, checked=False)}
    sbits = int(bits(np.float32(1 / np.sqrt(d))))
    Q, K, V = gqa_inputs(n, hq, hkv, d)
    outs = {k: np.zeros(n * hq * d, np.int64) for k in mods}
    t_chk, t_unc = paired_medians(
        [lambda: mods["checked"].nx_f32_gqa_attention(Q, K, V, n, hq, hkv, d, sbits, outs["checked"]),
         lambda: mods["unchecked"].nx_f32_gqa_attention(Q, K, V, n, hq, hkv, d, sbits, outs["unchecked"])],
        max(3, repeats))
    same = np.array_equal(outs["checked"], outs["unchecked"])
    row("checked", f"GQA n={n}: checked C / unchecked C",
        f"{ms(t_chk)} / {ms(t_unc)}   checked/unchecked = {t_chk / t_unc:.3f}{'' if same else '  (OUTPUTS DIFFER)'}")
    bench_checked_linear(repeats)
    # The Python backend takes ~1 us per inner-loop step: measured at a smaller n
    # (same heads and head_dim), against checked C at that n.
    Q, K, V = gqa_inputs(n_py, hq, hkv, d)
    py = nxc.load(path, backend="py")
    out_py, out_c = np.zeros(n_py * hq * d, np.int64), np.zeros(n_py * hq * d, np.int64)
    t_py = median_time(lambda: py.nx_f32_gqa_attention(Q, K, V, n_py, hq, hkv, d, sbits, out_py), 1)
    t_c = median_time(lambda: mods["checked"].nx_f32_gqa_attention(Q, K, V, n_py, hq, hkv, d, sbits, out_c),
                      max(3, repeats))
    same = np.array_equal(out_py, out_c)
    row("checked", f"GQA n={n_py}: Python backend / checked C",
        f"{ms(t_py)} / {ms(t_c)}   py/checked = {t_py / t_c:.0f}x{'' if same else '  (OUTPUTS DIFFER)'}")
    # The paged KV-cache gate: main() timed inside a fresh forked child each
    # time, as a gate runs (a gate does not free all it maps: run in one
    # process, mappings would pile up from run to run).
    gate = os.path.join(bundled_dir(), "nx_paged_kv_gate.nx")
    g = {"checked": nxc.load(gate), "unchecked": nxc.load(gate, checked=False), "py": nxc.load(gate, backend="py")}
    t_chk, t_unc = paired_medians([lambda: in_child(g["checked"].main), lambda: in_child(g["unchecked"].main)],
                                  max(9, repeats), measured=True)
    t_py = statistics.median(in_child(g["py"].main) for _ in range(max(1, repeats // 3)))
    row("checked", "gate nx_paged_kv_gate.nx main(): checked C / unchecked C / Python",
        f"{ms(t_chk)} / {ms(t_unc)} / {ms(t_py)}   checked/unchecked = {t_chk / t_unc:.3f}, "
        f"py/checked = {t_py / t_chk:.0f}x")
    # The same pair in the child's CPU time (time.thread_time), which the
    # other processes of a busy machine disturb far less than wall time.
    c_chk, c_unc = paired_medians([lambda: in_child(g["checked"].main, time.thread_time),
                                   lambda: in_child(g["unchecked"].main, time.thread_time)],
                                  max(15, repeats), measured=True)
    row("checked", "gate nx_paged_kv_gate.nx main(), CPU time: checked C / unchecked C",
        f"{ms(c_chk)} / {ms(c_unc)}   checked/unchecked = {c_chk / c_unc:.3f}")
    # A gate as nxc test builds it (issue 21: one object per module, the small
    # straight-line helpers copied into importers, linked) against the same gate
    # as one C file (GCC free to inline anything across modules), checked.
    from nxc.backend.registry import backend_for
    for name in ("nx_paged_kv_gate.nx", "nx_f32_attn_multi.nx", "nx_f32_gqa_attention.nx"):
        prog = check_file(os.path.join(bundled_dir(), name), diags=Diagnostics())
        sep = backend_for("c").prepare(prog, purpose="gate").loaded
        one = backend_for("c").prepare(prog, purpose="gate", emitted=emit_c(prog, checked=True)).loaded
        # A linked gate's library is opened lazily, where it is first used (a gate host's
        # child opens it; nxc/backend/c/backend.py CLoaded). Opened here, in the parent, as the
        # one-file build is: otherwise every timed child pays dlopen, relocation and binding
        # and the row compares loading with running (it read 2.9-7.7 after d250a16).
        sep.lib, one.lib
        t_sep, t_one = paired_medians([lambda: in_child(sep.run_main, time.thread_time),
                                       lambda: in_child(one.run_main, time.thread_time)],
                                      max(15, repeats), measured=True)
        row("checked", f"gate {name} main(), CPU time: separately compiled / one file",
            f"{ms(t_sep)} / {ms(t_one)}   ratio = {t_sep / t_one:.3f}")


# ---------------------------------------------------------------- 3. builds
def bench_build(repeats):
    print("3. Build: one gate cold (front end, C compile, total) vs plain cc on the same C")
    from nxc.syntax import loader
    loader.USE_PARSE_CACHE = False      # a cold build parses every module
    gate = os.path.join(bundled_dir(), "nx_f32_gqa_attention.nx")
    fronts, totals, composes, plains = [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            os.environ["NXC_CACHE_DIR"] = cache
            t0 = time.perf_counter()
            program = check_file(gate, diags=Diagnostics())
            t1 = time.perf_counter()
            emitted = emit_c(program)
            built = build(emitted, abi=True)          # what `nxc run` / `nxc test` do
            t2 = time.perf_counter()
            fronts.append(t1 - t0)
            composes.append(built.seconds)
            totals.append(t2 - t0)
            # the plain compiler call on the very C file nxc compiled
            c_file = os.path.join(cache, "plain.c")
            with open(c_file, "w") as f:
                f.write(emitted.text)
            cmd = [*compiler(), "-O2", "-fwrapv", "-DNX_FLAGS_CHECKED", "-shared", "-fPIC", "-I", runtime_dir(), c_file,
                   "-o", os.path.join(cache, "plain.so")]
            t3 = time.perf_counter()
            subprocess.run(cmd, check=True)
            plains.append(time.perf_counter() - t3)
    loader.USE_PARSE_CACHE = True
    f, c, t, p = (statistics.median(x) for x in (fronts, composes, totals, plains))
    row("build", "cold build of the gqa gate: front end+emit / C build / total", f"{ms(t - c)} / {ms(c)} / {ms(t)}")
    row("build", "plain `cc -O2 -shared` on the same C", f"{ms(p)}   total/plain = {t / p:.2f}, C build/plain = {c / p:.2f}")
    # warm load: a fresh process finds the cached build and imports it
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NXC_CACHE_DIR=cache)
        code = ("import time,sys; sys.path.insert(0, %r)\n"
                "from nxc.check.frontend import check_file; from nxc.backend.c.emit import emit_c\n"
                "from nxc.backend.c.build import build, load\n"
                "e = emit_c(check_file(%r)); t0 = time.perf_counter(); b = build(e, abi=True); load(b)\n"
                "print(time.perf_counter() - t0, b.cached)") % (ROOT, gate)
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        loads = []
        for _ in range(max(3, repeats)):
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
            seconds, cached = out.stdout.split()
            assert cached == "True"
            loads.append(float(seconds))
        row("build", "warm load of a built module (cache lookup + import)", ms(statistics.median(loads)))
        for label in ("cold", "warm"):
            if label == "cold":
                shutil.rmtree(os.path.join(cache, "c"), ignore_errors=True)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "nxc", "test", "-q", bundled_dir()], env=env,
                                  capture_output=True, text=True, cwd=ROOT)
            dt = time.perf_counter() - t0
            last = (proc.stdout.strip().splitlines() or ["?"])[-1]
            row("build", f"`nxc test nx_src`, {label} cache", f"{dt:.2f} s   ({last})")


def bench_build_options(repeats):
    """The three ways to get C into Python with cffi, on the same generated C."""
    print("3b. cffi build options on the gqa gate's C (build, then load in a fresh process)")
    import contextlib
    import io
    import sysconfig

    import cffi
    gate = os.path.join(bundled_dir(), "nx_f32_gqa_attention.nx")
    emitted = emit_c(check_file(gate, diags=Diagnostics()))
    inc = ["-I", runtime_dir(), "-I", sysconfig.get_paths()["include"]]
    flags = [f for f in flags_for("2")]
    results = {}
    for option in ("setuptools API mode", "emit_c_code + cc (nxc.load)", "ABI mode, cdef parsed at load"):
        builds, loads = [], []
        for r in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                name = f"_opt{abs(hash(option)) % 10**6}_{r}"
                t0 = time.perf_counter()
                if option.startswith("setuptools"):
                    ffi = cffi.FFI()
                    ffi.cdef(emitted.cdef)
                    ffi.set_source(name, emitted.text, include_dirs=[runtime_dir()],
                                   extra_compile_args=[f for f in flags if f not in ("-shared", "-fPIC")])
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        so = ffi.compile(tmpdir=tmp)
                    load_code = (f"import sys,time; sys.path.insert(0,{tmp!r}); t=time.perf_counter(); "
                                 f"import {name}; print(time.perf_counter()-t)")
                elif option.startswith("emit"):
                    ffi = cffi.FFI()
                    ffi.cdef(emitted.cdef)
                    ffi.set_source(name, emitted.text)
                    c_file = os.path.join(tmp, name + ".c")
                    with contextlib.redirect_stdout(io.StringIO()):
                        ffi.emit_c_code(c_file)
                    import importlib.machinery
                    so = os.path.join(tmp, name + importlib.machinery.EXTENSION_SUFFIXES[0])
                    subprocess.run([*compiler(), *flags, *inc, c_file, "-o", so, "-lm"], check=True)
                    load_code = (f"import sys,time; sys.path.insert(0,{tmp!r}); t=time.perf_counter(); "
                                 f"import {name}; print(time.perf_counter()-t)")
                else:
                    c_file = os.path.join(tmp, "abi.c")
                    with open(c_file, "w") as f:
                        f.write(emitted.text.replace("-fvisibility", ""))
                    so = os.path.join(tmp, "abi.so")
                    subprocess.run([*compiler(), *[f for f in flags if f != "-fvisibility=hidden"], *inc,
                                    c_file, "-o", so, "-lm"], check=True)
                    load_code = (f"import time,cffi; t=time.perf_counter(); ffi=cffi.FFI(); "
                                 f"ffi.cdef({emitted.cdef!r}); lib=ffi.dlopen({so!r}); lib.nxc_gate_site; "
                                 f"print(time.perf_counter()-t)")
                builds.append(time.perf_counter() - t0)
                out = subprocess.run([sys.executable, "-c", load_code], capture_output=True, text=True, check=True)
                loads.append(float(out.stdout.split()[-1]))
        results[option] = (statistics.median(builds), statistics.median(loads))
        row("build", f"{option}: build / load", f"{ms(results[option][0])} / {ms(results[option][1])}")


# ---------------------------------------------------------------- 4. front end
def synthetic_module(lines: int) -> str:
    """A valid module of about `lines` lines: many small functions."""
    body = []
    i = 0
    while sum(b.count("\n") for b in body) < lines:
        body.append(f"""func f{i}(p: *i64, n: i64, s: i64) -> i64 {{
    var acc: i64 = s
    var j: i64 = 0
    while j < n {{
        if (p[j] & 0xFF) > {i % 200} {{ acc = acc + p[j] * 3 }} else {{ acc = acc ^ (p[j] >> 2) }}
        j = j + 1
    }}
    let q: i64 = acc % 1000 + {i}
    return q - (n as i32) as i64
}}
""")
        i += 1
    return "".join(body)


def python_yardstick() -> int:
    """A fixed piece of plain Python (dicts, calls, tuples, ints): the
    kind of work a front end does, to tell a slow machine from slow code."""
    table = {}
    total = 0
    for i in range(200_000):
        key = (i % 97, i % 89)
        table[key] = table.get(key, 0) + i
        total += len(key) + (i & 7)
    return total + len(table)


def bench_frontend(sizes, repeats):
    print("4. Front end: parse + check throughput")
    from nxc.syntax import loader, parse
    # Once per process: Lark's table for grammar/nx.lark, from the cache
    # folder (or built by Lark when the cache is cold). Timed on its own so
    # that it is not charged to the first module size.
    for state in ("cold: Lark builds the table", "warm: table from the cache folder"):
        parse._parser.cache_clear()
        t0 = time.perf_counter()
        parse._parser()
        row("front end", f"parser set-up, once per process ({state})", ms(time.perf_counter() - t0))
    loader.USE_PARSE_CACHE = False     # measure the parser, not the parse cache
    with tempfile.TemporaryDirectory() as tmp:
        paths, lines = {}, {}
        for n in sizes:
            paths[n] = os.path.join(tmp, f"gen{n}.nx")
            text = synthetic_module(n)
            with open(paths[n], "w") as f:
                f.write(text)
            lines[n] = text.count("\n")
        # Rounds over all sizes rather than all repeats of one size in a
        # row: a slow spell of the shared machine then lands on every size
        # alike instead of on one (the largest size runs in the first and
        # last round only).
        times: dict[int, list[float]] = {n: [] for n in sizes}
        yardstick: list[float] = []
        for r in range(repeats):
            for n in sizes:
                if n >= 100_000 and r not in (0, repeats - 1):
                    continue
                t0 = time.perf_counter()
                check_file(paths[n], diags=Diagnostics())
                times[n].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            python_yardstick()
            yardstick.append(time.perf_counter() - t0)
        # How fast this machine ran plain Python during these rounds: the
        # same fixed work every time, so runs can be compared with each other.
        row("front end", "yardstick: fixed pure-Python work, same rounds", f"{ms(statistics.median(yardstick))}")
        for n in sizes:
            dt = statistics.median(times[n])
            row("front end", f"{lines[n]} lines", f"{dt:.3f} s   {lines[n] / dt:,.0f} lines/s  "
                f"(median of {len(times[n])}; best {lines[n] / min(times[n]):,.0f})")
    loader.USE_PARSE_CACHE = True


# ---------------------------------------------------------------- 5. Python backend
def bench_python(repeats):
    print("5. Python backend vs C backend")
    from nxc.gates.run import execute
    for name in ("nx_f32_gqa_attention.nx", "nx_f32_attention.nx", "nx_paged_kv_gate.nx", "nx_kvcache.nx"):
        program = check_file(os.path.join(bundled_dir(), name), diags=Diagnostics())
        c = statistics.median(execute(program, "c")[0].seconds for _ in range(repeats))
        py = statistics.median(execute(program, "py")[0].seconds for _ in range(max(1, repeats // 2)))
        row("python", f"gate {name}: py / c", f"{ms(py)} / {ms(c)}   ratio = {py / c:.0f}")
    n, d = 32, 16
    rng = np.random.default_rng(3)
    q, k, v = (bits(rng.standard_normal(n * d, dtype=np.float32)) for _ in range(3))
    path = os.path.join(bundled_dir(), "nx_f32_attention.nx")
    times = {}
    for backend in ("c", "py"):
        m = nxc.load(path, backend=backend)
        out, sr, pr = np.zeros(n * d, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        times[backend] = median_time(lambda: m.nx_f32_attention(q, k, v, n, d, 0x3E800000, out, sr, pr),
                                     repeats if backend == "c" else 1)
    row("python", f"kernel nx_f32_attention n={n} d={d}: py / c",
        f"{ms(times['py'])} / {ms(times['c'])}   ratio = {times['py'] / times['c']:.0f}")
    sys.path.insert(0, runtime_dir())
    import nx_f32  # noqa: E402  (runtime/nx_f32.py)
    a, b = 0x3FC00000, 0x40100000
    ops = ("nx_f32_add", "nx_f32_mul", "nx_f32_div")
    count = 50_000
    per_op: dict[str, list[float]] = {op: [] for op in ops}
    for _ in range(7):                      # rounds over the ops, as in section 4
        for op in ops:
            fn = getattr(nx_f32, op)
            t0 = time.perf_counter()
            for _ in range(count):
                fn(a, b)
            per_op[op].append((time.perf_counter() - t0) / count)
    for op in ops:
        row("python", f"Python runtime {op}",
            f"{statistics.median(per_op[op]) * 1e9:.0f} ns/op  (median of 7; best {min(per_op[op]) * 1e9:.0f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument("--only", choices=["gqa", "simd", "linear", "threads", "layer", "llama", "paged", "checked", "build",
                                       "frontend", "python"],
                    action="append", help="sections to run (linear includes threads: the linear kernel at 1 and 2 threads)")
    args = ap.parse_args()
    os.environ.setdefault("NXC_CACHE_DIR", tempfile.mkdtemp(prefix="nxc-bench-"))
    only = set(args.only or ["gqa", "simd", "linear", "layer", "llama", "paged", "checked", "build", "frontend",
                             "python"])
    print("machine:", machine())
    print("flags:", " ".join(flags_for("2")))
    q = args.quick
    if "gqa" in only:
        bench_gqa([32, 64] if q else [64, 128, 256, 512], 3 if q else 5)
    if "simd" in only:
        bench_simd([64, 128] if q else [256, 1024], 3 if q else 5)
    if "linear" in only:
        bench_linear([(512, 256)] if q else [(9728, 2560), (2560, 9728), (4096, 2560)], [64, 1] if q else [64, 1],
                     3 if q else 5)
    if "threads" in only and "linear" not in only:
        bench_linear_threads([(512, 256)] if q else [(9728, 2560), (2560, 9728), (4096, 2560)], [64, 1],
                             3 if q else 5)
    if "layer" in only:
        bench_layer(16 if q else 64, 256 if q else 1024, (1,) if q else (1, 2))
    if "llama" in only:
        bench_llama(16 if q else 64, 4 if q else 15)
    if "paged" in only:
        bench_paged([256, 1024] if q else [256, 1024, 4096], 3 if q else 9)
    if "checked" in only:
        bench_checked(64 if q else 256, 8 if q else 16, 3 if q else 7)
    if "build" in only:
        bench_build(1 if q else 3)
        bench_build_options(1 if q else 3)
    if "frontend" in only:
        bench_frontend([1000, 10000] if q else [1000, 10000, 100000], 3 if q else 7)
    if "python" in only:
        bench_python(2 if q else 5)
    print("\n| section | measurement | result |\n|---|---|---|")
    for section, what, value in ROWS:
        print(f"| {section} | {what} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
