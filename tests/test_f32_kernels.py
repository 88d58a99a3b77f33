"""The Qwen3 building blocks against numpy (issue 20): nx_f32_linear over F32 / F16 / BF16
weights, nx_f32_rmsnorm, nx_f32_rope, nx_f32_mlp, and the runtime's file externs.

Each kernel's documented op order is replayed in numpy float32 where that is cheap (linear:
a sequential dot product; rmsnorm) and must then match BIT FOR BIT; the others are held to a
float64 reference with a tolerance that follows from the op count.
"""
from __future__ import annotations

import numpy as np
import pytest

import nxc
import qwen3_support as qs
from nxc import paths

U = 2.0 ** -24


def bundled(name, backend="c"):
    return nxc.load(f"{paths.bundled_dir()}/{name}", backend=backend)


def to_bits(x):
    return np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.int64)


def f32(b):
    return (np.asarray(b) & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def seq_dot_f32(W, X):
    """Y[t, r] = sum_c W[r, c] X[t, c] accumulated in float32 in c order (nx's order)."""
    acc = np.zeros((X.shape[0], W.shape[0]), np.float32)
    for c in range(W.shape[1]):
        acc = (acc + (X[:, c:c + 1] * W[None, :, c]).astype(np.float32)).astype(np.float32)
    return acc


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_linear_bit_exact_sequential_order(dtype):
    m = bundled("nx_f32_mlp.nx")     # imports nx_f32_linear
    rng = np.random.default_rng(3)
    rows, cols, T = 24, 40, 3
    W = (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
    if dtype == "f16":
        packed = W.astype(np.float16)
        Wv = packed.astype(np.float32)
        data, gtype = packed.view(np.uint16), 1
    elif dtype == "bf16":
        packed = qs.to_bf16_bits(W)
        Wv = qs.from_bf16_bits(packed)
        data, gtype = packed, 30
    else:
        Wv, data, gtype = W, W.view(np.uint32), 0
    X = rng.standard_normal((T, cols)).astype(np.float32)
    Y = np.zeros(T * rows, np.int64)
    st = m.nx_f32_linear_raw(data, gtype, rows, cols, to_bits(X), T, Y)
    assert st == m.NX_F32LIN_OK
    assert np.array_equal(f32(Y).reshape(T, rows), seq_dot_f32(Wv, X))
    ref = X.astype(np.float64) @ Wv.T.astype(np.float64)
    bound = cols * U * (np.abs(X).astype(np.float64) @ np.abs(Wv).T.astype(np.float64)) * 1.01
    assert np.all(np.abs(f32(Y).reshape(T, rows) - ref) <= bound)


def test_linear_rejects_unknown_type():
    m = bundled("nx_f32_mlp.nx")
    Y = np.zeros(4, np.int64)
    assert m.nx_f32_linear_raw(np.zeros(4, np.uint16), 3, 2, 2, np.zeros(2, np.int64), 1, Y) == m.NX_F32LIN_ERR_TYPE   # Q4_1


@pytest.mark.parametrize("backend", ["c", "py"])
def test_rmsnorm_bit_exact(backend):
    m = bundled("nx_f32_rms_norm.nx", backend)
    rng = np.random.default_rng(4)
    n_rows, n = 3, 48
    x = rng.standard_normal((n_rows, n)).astype(np.float32) * 3
    w = (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    out = np.zeros(n_rows * n, np.int64)
    eps = int(to_bits(np.float32(1e-6))[0])
    assert m.nx_f32_rmsnorm_rows(to_bits(x), to_bits(w), n_rows, n, eps, out) == 0
    # float32 replay of the documented order; rsqrt is correctly rounded here (0.5 ulp max,
    # and the reference rounds the float64 1/sqrt)
    ss = np.zeros(n_rows, np.float32)
    for i in range(n):
        ss = (ss + x[:, i] * x[:, i]).astype(np.float32)
    mean = (ss / np.float32(n)).astype(np.float32) + np.float32(1e-6)
    r = (1.0 / np.sqrt(mean.astype(np.float32).astype(np.float64))).astype(np.float32)
    want = (w[None, :] * (x * r[:, None]).astype(np.float32)).astype(np.float32)
    assert np.array_equal(f32(out).reshape(n_rows, n), want)


@pytest.mark.parametrize("backend", ["c", "py"])
def test_rope_against_float64(backend):
    m = bundled("nx_f32_rope.nx", backend)
    cfg = qs.Config(head_dim=16)
    T, H, D = 5, 3, 16
    rng = np.random.default_rng(5)
    pos = np.array([0, 1, 7, 300, 40000], np.int64)
    x = rng.standard_normal((T, H, D)).astype(np.float32)
    inv = np.zeros(D // 2, np.int64)
    theta = int(to_bits(np.float32(1e6))[0])
    assert m.nx_f32_rope_inv_freq(D, theta, inv) == 0
    c = np.zeros(T * D // 2, np.int64)
    s = np.zeros(T * D // 2, np.int64)
    assert m.nx_f32_rope_table(pos, T, inv, D // 2, c, s) == 0
    xb = to_bits(x).ravel().copy()
    assert m.nx_f32_rope_apply(xb, T, H, D, c, s) == 0
    cos, sin = qs.rope_tables(cfg, pos)
    # the angles: nx's inv_freq within 1 ulp of the correctly rounded one used by the reference
    e = (np.arange(0, D, 2, dtype=np.float32) / np.float32(D)).astype(np.float32)
    want_inv = np.array([np.float32(1e6 ** -float(v)) for v in e], np.float32)
    assert np.array_equal(f32(inv), want_inv)                 # pow is correctly rounded here
    # same float32 angles: cos / sin within their 0.62 ulp, even at position 40000
    assert np.abs(f32(c).reshape(T, -1) - cos).max() <= U
    assert np.abs(f32(s).reshape(T, -1) - sin).max() <= U
    h = D // 2
    a, b = x[..., :h].astype(np.float64), x[..., h:].astype(np.float64)
    ref = np.concatenate([a * cos[:, None] - b * sin[:, None], b * cos[:, None] + a * sin[:, None]], -1)
    # cos / sin (<= 1 ulp each), two products and one sum: a few U of |a| + |b|
    got = f32(xb).reshape(T, H, D)
    bound = 4 * U * (np.abs(a) + np.abs(b)).max()
    assert 0 < np.abs(got - ref).max() <= bound


def test_mlp_against_float64():
    m = bundled("nx_f32_mlp.nx")
    rng = np.random.default_rng(6)
    T, hid, inter = 2, 32, 64
    X = rng.standard_normal((T, hid)).astype(np.float32)
    G = (rng.standard_normal((inter, hid)) / np.sqrt(hid)).astype(np.float32)
    Up = (rng.standard_normal((inter, hid)) / np.sqrt(hid)).astype(np.float32)
    Dn = (rng.standard_normal((hid, inter)) / np.sqrt(inter)).astype(np.float32)
    out = np.zeros(T * hid, np.int64)
    assert m.nx_f32_mlp_raw(to_bits(X), T, hid, inter, G.view(np.uint32), Up.view(np.uint32),
                            Dn.view(np.uint32), 0, out) == 0
    g = X.astype(np.float64) @ G.T
    u = X.astype(np.float64) @ Up.T
    ref = (g / (1 + np.exp(-g)) * u) @ Dn.T.astype(np.float64)
    err = np.abs(f32(out).reshape(T, hid) - ref).max() / np.abs(ref).max()
    assert 0 < err < 1e-5


@pytest.mark.parametrize("backend", ["c", "py"])
def test_file_externs(tmp_path, backend):
    m = bundled("nx_file.nx", backend)
    p = tmp_path / "data.bin"
    payload = bytes(range(256)) * 5
    p.write_bytes(payload)
    name = np.frombuffer(str(p).encode(), np.uint8).copy()
    h = m.nx_file_open(name, len(name))
    assert h >= 0
    assert m.nx_file_size(h) == len(payload)
    buf = np.zeros(300, np.uint8)
    assert m.nx_file_read(h, 100, buf, 300) == 300
    assert bytes(buf) == payload[100:400]
    assert m.nx_file_read(h, len(payload) - 10, buf, 300) == 10         # short only at the end
    assert bytes(buf[:10]) == payload[-10:]
    assert m.nx_file_read(h, len(payload) + 5, buf, 4) == 0
    assert m.nx_file_read_exact(h, len(payload) - 2, buf, 4) == m.NX_FILE_ERR_SHORT
    assert m.nx_file_read(h, -1, buf, 4) == m.NX_FILE_ERR_ARG
    assert m.nx_file_close(h) == 0
    assert m.nx_file_close(h) == m.NX_FILE_ERR_OPEN
    assert m.nx_file_read(h, 0, buf, 4) == m.NX_FILE_ERR_OPEN
    hs = [m.nx_file_open(name, len(name)) for _ in range(64)]
    assert all(x >= 0 for x in hs) and m.nx_file_open(name, len(name)) == m.NX_FILE_ERR_TOO_MANY
    for x in hs:
        assert m.nx_file_close(x) == 0
