"""Quantized weights (issue 29, nx_src/nx_f32_quant.nx): Q8_0, Q4_0, Q4_K, Q5_K and Q6_K blocks.

* Dequantization is BIT-IDENTICAL to gguf-py's gguf.quants.dequantize (ggml's reference, the
  oracle) on N_BLOCKS blocks per type -- 1,050,000 in all -- on the C backend: random bytes
  (NaN / infinite / subnormal fp16 scales come up by themselves), random blocks with sane
  scales, and crafted blocks whose scales are +-0, subnormal, +-inf and NaN. A NaN result
  must be the canonical 0x7FC00000 (numpy keeps the payload), everything else the same bits.
* The Python backend gives the same bits on a sample of every kind.
* The dot products of nx_f32_linear over a quantized matrix (one token: the fused
  nx_f32_dot_quant; several: a dequantized scratch row) equal dequantize-then-sequential-
  float32-dot replayed in numpy, bit for bit.
* Rows that are not whole blocks and types that are not read are refused.
"""
from __future__ import annotations

import numpy as np
import pytest

import nxc
import quant_support as qsup
from nxc import paths

NAN = 0x7FC00000
N_BLOCKS = {"q8_0": 300_000, "q4_0": 300_000, "q4_k": 150_000, "q5_k": 150_000, "q6_k": 150_000}
CHUNK = 25_000
# where each type keeps its fp16 scales (byte offsets in the block)
SCALE_AT = {"q8_0": (0,), "q4_0": (0,), "q4_k": (0, 2), "q5_k": (0, 2), "q6_k": (208,)}
SPECIAL_F16 = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0200, 0x7C00, 0xFC00, 0x7E00, 0x7C01,
               0xFE00, 0x7BFF, 0x3C00]


@pytest.fixture(scope="module")
def nx_c():
    return nxc.load(f"{paths.bundled_dir()}/nx_f32_quant.nx")


@pytest.fixture(scope="module")
def nx_py():
    return nxc.load(f"{paths.bundled_dir()}/nx_f32_quant.nx", backend="py")


def blocks(name, n, rng, kind):
    """n blocks of `name`: kind 'random' (any bytes), 'sane' (random bytes, finite moderate fp16
    scales) or 'special' (every pair of special scale values, random quants)."""
    _, _, bb = qsup.TYPES[name]
    raw = rng.integers(0, 256, size=(n, bb), dtype=np.uint8)
    if kind == "sane":
        for off in SCALE_AT[name]:
            s = (rng.uniform(-2.0, 2.0, size=n) * 2.0 ** rng.integers(-20, 4, size=n)).astype(np.float16)
            raw[:, off:off + 2] = s.reshape(-1, 1).view(np.uint8)
    elif kind == "special":
        sp = np.array(SPECIAL_F16, np.uint16)
        for k, off in enumerate(SCALE_AT[name]):
            idx = (np.arange(n) // len(sp) ** k) % len(sp)
            raw[:, off:off + 2] = sp[idx].reshape(-1, 1).view(np.uint8)
    return raw


def dequant_nx(m, name, raw):
    t, qk, _ = qsup.TYPES[name]
    out = np.zeros(raw.shape[0] * qk, np.int64)
    assert m.nx_quant_dequant_rows(t, np.ascontiguousarray(raw).reshape(-1), raw.shape[0], qk, out) == 0
    return out.astype(np.uint32)


def assert_same_as_oracle(got_bits, want_f32, what):
    want = want_f32.reshape(-1).view(np.uint32)
    nan = np.isnan(want_f32.reshape(-1))
    bad = np.flatnonzero((got_bits != want) & ~nan)
    assert bad.size == 0, f"{what}: {bad.size} weights differ, first at {bad[0]}: nx {got_bits[bad[0]]:#x} gguf-py {want[bad[0]]:#x}"
    assert np.all(got_bits[nan] == NAN), f"{what}: a NaN weight is not the canonical 0x7FC00000"
    assert not np.any(np.isnan(got_bits.view(np.float32)) & ~nan), f"{what}: NaN where gguf-py has a number"


@pytest.mark.parametrize("name", list(qsup.TYPES))
def test_dequantize_bit_identical_to_gguf_py(nx_c, name):
    rng = np.random.default_rng(qsup.TYPES[name][0])
    done, seen_nan, seen_sub = 0, 0, 0
    kinds = ("random", "sane", "special")
    k = 0
    while done < N_BLOCKS[name]:
        n = min(CHUNK, N_BLOCKS[name] - done)
        kind = kinds[k % 3]
        raw = blocks(name, n, rng, kind)
        want = qsup.dequantize(raw, name)
        got = dequant_nx(nx_c, name, raw)
        assert_same_as_oracle(got, want, f"{name} {kind} blocks {done}..{done + n}")
        seen_nan += int(np.isnan(want).sum())
        for off in SCALE_AT[name]:            # fp16 scales that are subnormal (normal in float32)
            h = raw[:, off].astype(np.uint16) | (raw[:, off + 1].astype(np.uint16) << 8)
            seen_sub += int((((h & 0x7C00) == 0) & ((h & 0x3FF) != 0)).sum())
        done += n
        k += 1
    assert seen_nan > 0 and seen_sub > 0         # the special cases really were exercised


@pytest.mark.parametrize("name", list(qsup.TYPES))
def test_python_backend_bit_identical(nx_c, nx_py, name):
    rng = np.random.default_rng(100 + qsup.TYPES[name][0])
    raw = np.concatenate([blocks(name, 24, rng, kind) for kind in ("random", "sane", "special")])
    got_c = dequant_nx(nx_c, name, raw)
    got_py = dequant_nx(nx_py, name, raw)
    assert np.array_equal(got_c, got_py)
    assert_same_as_oracle(got_py, qsup.dequantize(raw, name), f"{name} (py)")


def test_crafted_scales_exact(nx_c):
    """A few hand-checked values: Q8_0 with scale -0, +inf and NaN; Q4_K with dmin = inf."""
    raw = np.zeros((1, 34), np.uint8)
    raw[0, 2:] = np.arange(-16, 16).astype(np.int8).view(np.uint8)
    raw[0, 0:2] = np.array([0x8000], np.uint16).view(np.uint8)             # d = -0
    got = dequant_nx(nx_c, "q8_0", raw)
    assert got[0] == 0 and got[17] == 0x80000000                            # -16 * -0 = +0, 1 * -0 = -0
    raw[0, 0:2] = np.array([0x7C00], np.uint16).view(np.uint8)             # d = +inf
    got = dequant_nx(nx_c, "q8_0", raw)
    assert got[16] == NAN and got[17] == 0x7F800000 and got[0] == 0xFF800000
    k = np.zeros((1, 144), np.uint8)
    k[0, 0:2] = np.array([0x3C00], np.uint16).view(np.uint8)                # d = 1
    k[0, 2:4] = np.array([0x7C00], np.uint16).view(np.uint8)                # dmin = inf
    k[0, 4] = 1                                                             # sub-block 0: sc 1, m 0
    k[0, 8] = 0
    k[0, 5] = 1; k[0, 9] = 1                                                # sub-block 1: sc 1, m 1
    got = dequant_nx(nx_c, "q4_k", k)
    assert got[0] == NAN                     # m1 = inf * 0 = NaN: the whole sub-block is NaN
    assert got[32] == 0xFF800000             # 1 * 0 - inf = -inf
    assert_same_as_oracle(got, qsup.dequantize(k, "q4_k"), "q4_k crafted")


def seq_dot(W, X):
    """Y[t, r] = sum_c W[r, c] X[t, c] in float32, column order, from +0 (nx_f32_linear's order)."""
    acc = np.zeros((X.shape[0], W.shape[0]), np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for c in range(W.shape[1]):
            acc = (acc + (X[:, c:c + 1] * W[None, :, c]).astype(np.float32)).astype(np.float32)
    return acc


@pytest.mark.parametrize("backend", ["c", "py"])
@pytest.mark.parametrize("name", list(qsup.TYPES))
def test_linear_dot_equals_dequantize_then_sequential_dot(name, backend):
    m = nxc.load(f"{paths.bundled_dir()}/nx_f32_linear.nx", backend=backend)
    _, qk, bb = qsup.TYPES[name]
    rng = np.random.default_rng(7 + qsup.TYPES[name][0])
    rows, cols = (32, 512) if backend == "c" else (6, 256)
    nb = rows * cols // qk
    raw = np.concatenate([blocks(name, nb - nb // 8, rng, "sane"), blocks(name, nb // 8, rng, "random")])
    raw = raw[rng.permutation(nb)]
    raw[0, SCALE_AT[name][0]:SCALE_AT[name][0] + 2] = (0x00, 0x7E)      # row 0 has a NaN scale
    Wv = qsup.dequantize(raw, name).reshape(rows, cols)
    data = np.ascontiguousarray(raw).reshape(-1)
    for T in (1, 3):                         # the fused dot and the dequantized scratch row
        X = rng.standard_normal((T, cols)).astype(np.float32)
        Y = np.zeros(T * rows, np.int64)
        assert m.nx_f32_linear_raw(data, qsup.TYPES[name][0], rows, cols,
                                   X.view(np.uint32).astype(np.int64), T, Y) == m.NX_F32LIN_OK
        want = seq_dot(Wv, X)
        assert_same_as_oracle(Y.astype(np.uint32), want, f"{name} linear T={T}")
        assert np.isnan(want[:, 0]).all() and not np.isnan(want[:, 1:]).all()   # NaN rows and number rows


def test_refusals(nx_c):
    m = nxc.load(f"{paths.bundled_dir()}/nx_f32_linear.nx")
    Y = np.zeros(300, np.int64)
    data = np.zeros(1000, np.uint8)
    # a Q4_K row of 128 columns is half a block; Q4_1 (3) and IQ2_XS (17) are not read
    assert m.nx_f32_linear_raw(data, 12, 1, 128, np.zeros(128, np.int64), 1, Y) == m.NX_F32LIN_ERR_TYPE
    for t in (3, 17):
        assert m.nx_f32_linear_raw(data, t, 1, 256, np.zeros(256, np.int64), 1, Y) == m.NX_F32LIN_ERR_TYPE
    assert nx_c.nx_quant_row_bytes(12, 128) == 0 and nx_c.nx_quant_row_bytes(12, 512) == 288
    assert nx_c.nx_quant_dequant_rows(8, data, 1, 33, Y) == nx_c.NX_QUANT_ERR_DIM
    assert nx_c.nx_quant_dequant_rows(3, data, 1, 32, Y) == nx_c.NX_QUANT_ERR_TYPE
