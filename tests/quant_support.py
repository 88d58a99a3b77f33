"""Quantized weight blocks for the tests and the bench (ggml's Q8_0, Q4_0, Q4_K, Q5_K, Q6_K).

quantize(x, name) -> uint8 [rows, row_bytes]: Q8_0 / Q4_0 through gguf-py's quantizer (it is
bit-exact with ggml-quants.c); gguf-py cannot quantize K-quants, so for those random_k_blocks
writes random VALID blocks with sane scales instead: a zero-mean matrix of about the standard
deviation asked (sub-block scale and min chosen so that d*sc*q - dmin*m is centred on 0), or,
with positive=True, values in about [0.85, 1.15] (norm weights). dequantize(raw, name) is
gguf-py's reference dequantization (the oracle), as float32.
"""
from __future__ import annotations

import numpy as np

# name -> (ggml type id, weights per block, bytes per block)
TYPES = {"q8_0": (8, 32, 34), "q4_0": (2, 32, 18), "q4_k": (12, 256, 144), "q5_k": (13, 256, 176),
         "q6_k": (14, 256, 210)}
K_QUANTS = ("q4_k", "q5_k", "q6_k")


def qtype(name: str):
    import gguf
    return gguf.GGMLQuantizationType(TYPES[name][0])


def row_bytes(name: str, cols: int) -> int:
    _, qk, bb = TYPES[name]
    if cols % qk:
        raise ValueError(f"{name}: {cols} columns are not a multiple of the block size {qk}")
    return cols // qk * bb


def dequantize(raw: np.ndarray, name: str) -> np.ndarray:
    from gguf.quants import dequantize as gdq
    with np.errstate(invalid="ignore", over="ignore"):
        return gdq(np.ascontiguousarray(raw, np.uint8), qtype(name)).astype(np.float32)


def pack_scale_min(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """[n, 8] 6-bit scales and mins -> the 12 bytes of ggml's K-quant scale block (inverse of
    get_scale_min_k4)."""
    sc = sc.astype(np.uint8)
    m = m.astype(np.uint8)
    out = np.empty((sc.shape[0], 12), np.uint8)
    out[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    return out


def _f16(v) -> np.ndarray:
    return np.asarray(v, np.float16).reshape(-1, 1).view(np.uint8)


def random_k_blocks(name: str, n_blocks: int, rng, sigma: float = 1.0, positive: bool = False) -> np.ndarray:
    """n_blocks random valid blocks [n_blocks, bytes] of K-quant `name`."""
    n = n_blocks
    if name in ("q4_k", "q5_k"):
        top = 15 if name == "q4_k" else 31
        if positive:
            sc = np.full((n, 8), 63)
            m = np.zeros((n, 8), np.int64)
            q = rng.integers(top - top // 4, top + 1, size=(n, 256), dtype=np.uint8)
            d = np.full(n, 1.0 / (63 * (top - top // 8)))
            dmin = np.zeros(n)
        else:
            sc = rng.integers(40, 64, size=(n, 8), dtype=np.uint8)
            m = sc.copy()
            q = rng.integers(0, top + 1, size=(n, 256), dtype=np.uint8)
            d = sigma / (0.58 * (top + 1) / 2 * 52) * rng.uniform(0.8, 1.2, size=n)
            dmin = d * top / 2          # d*sc*q - dmin*sc = d*sc*(q - top/2): centred
        qs = np.empty((n, 128), np.uint8)
        qh = np.zeros((n, 32), np.uint8)
        for k in range(4):           # sub-blocks 2k (low nibbles) and 2k+1 (high) share 32 bytes
            lo, hi = q[:, 64 * k: 64 * k + 32], q[:, 64 * k + 32: 64 * k + 64]
            qs[:, 32 * k: 32 * k + 32] = (lo & 15) | ((hi & 15) << 4)
            qh |= (((lo >> 4) & 1) << (2 * k)) | (((hi >> 4) & 1) << (2 * k + 1))
        parts = [_f16(d), _f16(dmin), pack_scale_min(sc, m)]
        if name == "q5_k":
            parts.append(qh)
        parts.append(qs)
        return np.concatenate(parts, axis=1)
    if name == "q6_k":
        if positive:
            u = rng.integers(58, 64, size=(n, 256), dtype=np.uint8)      # q = u - 32 in 26..31
            sc = np.full((n, 16), 100)
            d = np.full(n, 1.0 / (100 * 28.5))
        else:
            u = rng.integers(0, 64, size=(n, 256), dtype=np.uint8)       # q = u - 32 in -32..31
            sc = rng.integers(60, 128, size=(n, 16)) * rng.choice([-1, 1], size=(n, 16))
            d = sigma / (18.5 * 94) * rng.uniform(0.8, 1.2, size=n)
        ql = np.empty((n, 128), np.uint8)
        qh = np.zeros((n, 64), np.uint8)
        for h in range(2):
            g = u[:, 128 * h: 128 * h + 128]
            c = [g[:, 32 * i: 32 * i + 32] for i in range(4)]
            ql[:, 64 * h: 64 * h + 32] = (c[0] & 15) | ((c[2] & 15) << 4)
            ql[:, 64 * h + 32: 64 * h + 64] = (c[1] & 15) | ((c[3] & 15) << 4)
            qh[:, 32 * h: 32 * h + 32] = (c[0] >> 4) | ((c[1] >> 4) << 2) | ((c[2] >> 4) << 4) | ((c[3] >> 4) << 6)
        return np.concatenate([ql, qh, sc.astype(np.int8).view(np.uint8), _f16(d)], axis=1)
    raise ValueError(name)


def random_blocks(name: str, n_blocks: int, rng, sigma: float = 1.0) -> np.ndarray:
    """n_blocks random valid zero-mean blocks of any type (Q8_0 / Q4_0: random quants and one
    scale per block; K-quants: random_k_blocks), without a float matrix to quantize (the bench's
    Qwen3-4B-sized files)."""
    if name in K_QUANTS:
        return random_k_blocks(name, n_blocks, rng, sigma)
    _, _, bb = TYPES[name]
    raw = rng.integers(0, 256, size=(n_blocks, bb), dtype=np.uint8)
    spread = 73.9 if name == "q8_0" else 4.6          # std of a uniform int8 / 4-bit quant
    raw[:, 0:2] = _f16(np.full(n_blocks, sigma / spread))
    return raw


def quantize(x: np.ndarray, name: str, rng=None, positive: bool = False) -> np.ndarray:
    """uint8 [rows, row_bytes] of a float32 matrix (or vector) in quantized type `name`.

    Q8_0 / Q4_0 quantize x itself (gguf-py); K-quants ignore x's values and write random valid
    blocks of x's standard deviation (positive: around 1, for norm weights)."""
    x2 = np.atleast_2d(np.asarray(x, np.float32))
    rows, cols = x2.shape
    rb = row_bytes(name, cols)
    if name in K_QUANTS:
        rng = rng if rng is not None else np.random.default_rng(0)
        sigma = float(x2.std()) or 1.0
        return random_k_blocks(name, rows * cols // 256, rng, sigma, positive).reshape(rows, rb)
    from gguf.quants import quantize as gq
    return np.ascontiguousarray(gq(x2, qtype(name))).reshape(rows, rb)
