"""Vectorized C (issue 19): the rewritten kernels are bit-identical to the
scalar ones they replace, on every backend and instruction set, and GCC does
vectorize their inner loops.

- nx_f32_attention (nx_src/) now runs keys innermost over a transposed K and
  output dimensions innermost for P.V; tests/nx/ref/nx_f32_attention_scalar.nx
  is the kernel as it was (dot products innermost). Both run on the same
  random inputs (with NaN, infinities, subnormals, signed zeros mixed in) on
  the C backend at -O2, -O0 and on each target this CPU can run, and on the
  Python backend: every output word must agree.
- `-fopt-info-vec` on the emitted C, built with nxc's own -O2 flags, must
  report both inner loops as vectorized (the speed comes from there).
- --march is part of the build configuration and of the cache key.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import nxc
from nxc.backend.c import build as c_build
from nxc.backend.c import objects
from nxc.backend.c.emit import emit_c
from nxc.check.frontend import check_file
from nxc.cli import main as cli_main
from nxc.diagnostics import Diagnostics
from nxc.paths import bundled_dir

from vectorize_support import loop_line, vectorized_lines

HERE = os.path.dirname(os.path.abspath(__file__))
ATTN = os.path.join(bundled_dir(), "nx_f32_attention.nx")
ATTN_REF = os.path.join(HERE, "nx", "ref", "nx_f32_attention_scalar.nx")


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _targets() -> list[str]:
    """Build configurations this machine can run: x86-64 always, AVX2/AVX-512 if present."""
    flags = _cpu_flags()
    targets = ["2", "0", "2/x86-64"]
    if {"avx2", "fma", "bmi2"} <= flags:
        targets.append("2/x86-64-v3")
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        targets.append("2/x86-64-v4")
    targets.append("native")
    return targets


def f32_words(rng, n: int, spread: float) -> np.ndarray:
    """Random float32 bit patterns as i64 words, with awkward values mixed in."""
    x = (rng.standard_normal(n) * spread).astype(np.float32).view(np.uint32).astype(np.int64)
    special = np.array([0x7FC00000, 0x7FA00001, 0xFFC00000, 0x7F800000, 0xFF800000,
                        0x00000001, 0x80000001, 0x007FFFFF, 0x80000000, 0x00000000], np.int64)
    k = max(1, n // 40)
    idx = rng.choice(n, size=k, replace=False)
    x[idx] = rng.choice(special, size=k)
    return x


def _run(mod, fn, Q, K, V, n, d, scale):
    out, sr, pr = np.zeros(n * d, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    status = getattr(mod, fn)(Q.copy(), K.copy(), V.copy(), n, d, scale, out, sr, pr)
    return status, out, sr, pr


def _same(a, b, what):
    bad = np.flatnonzero(a != b)
    assert bad.size == 0, (f"{what}: {bad.size} words differ, first at {bad[0]}: "
                           f"0x{int(a[bad[0]]):X} vs 0x{int(b[bad[0]]):X}")


@pytest.fixture(scope="module")
def attention_builds():
    mods = {}
    for opt in _targets():
        mods[("c", opt)] = (nxc.load(ATTN, opt=opt), nxc.load(ATTN_REF, opt=opt, include=[bundled_dir()]))
        # unchecked: the builds that vectorize (checked builds keep their access checks
        # inside the loops, which GCC does not vectorize across)
        mods[("c-unchecked", opt)] = (nxc.load(ATTN, opt=opt, checked=False),
                                      nxc.load(ATTN_REF, opt=opt, include=[bundled_dir()], checked=False))
    mods[("py", "")] = (nxc.load(ATTN, backend="py"),
                        nxc.load(ATTN_REF, backend="py", include=[bundled_dir()]))
    return mods


# sizes: not multiples of any vector width, a single token, a single dimension
SHAPES = [(1, 1, 1.0), (1, 5, 2.0), (3, 1, 1.0), (5, 4, 1.0), (7, 9, 3.0), (17, 16, 10.0),
          (33, 7, 0.5), (20, 33, 40.0)]


@pytest.mark.parametrize("n,d,spread", SHAPES)
def test_layout_rewrite_is_bit_identical_everywhere(attention_builds, n, d, spread):
    rng = np.random.default_rng(n * 1000 + d)
    Q, K, V = (f32_words(rng, n * d, spread) for _ in range(3))
    scale = int(np.float32(1 / np.sqrt(d)).view(np.uint32))
    reference = None
    for (backend, opt), (new, old) in attention_builds.items():
        r_new = _run(new, "nx_f32_attention", Q, K, V, n, d, scale)
        r_old = _run(old, "nx_f32_attention_scalar", Q, K, V, n, d, scale)
        assert r_new[0] == r_old[0] == 0
        for k, what in ((1, "out"), (2, "score_row"), (3, "prob_row")):
            _same(r_new[k], r_old[k], f"{backend} {opt} n={n} d={d} {what}: new vs scalar kernel")
        if reference is None:
            reference = r_old
        for k in (1, 2, 3):
            _same(r_new[k], reference[k], f"{backend} {opt} n={n} d={d}: vs the first build")
    assert np.any(reference[1] != 0)


@pytest.mark.parametrize("n,d", [(70, 128), (300, 20)])
def test_larger_case_on_the_c_targets(attention_builds, n, d):
    """A head_dim-128 case like the bench's, and more keys than one column block of the P.V
    product (nx_f32_gemm.nx's NX_GEMM_CB, 256: its sums continue across blocks); Python would
    take minutes here."""
    rng = np.random.default_rng(19 + n)
    Q, K, V = (f32_words(rng, n * d, 1.0) for _ in range(3))
    scale = int(np.float32(1 / np.sqrt(d)).view(np.uint32))
    outs = []
    for (backend, opt), (new, old) in attention_builds.items():
        if not backend.startswith("c"):
            continue
        r_new = _run(new, "nx_f32_attention", Q, K, V, n, d, scale)
        r_old = _run(old, "nx_f32_attention_scalar", Q, K, V, n, d, scale)
        for k in (1, 2, 3):
            _same(r_new[k], r_old[k], f"{opt}: new vs scalar")
        outs.append(r_new[1])
    for o in outs[1:]:
        _same(o, outs[0], "targets disagree")


ROWS = os.path.join(bundled_dir(), "nx_f32_attn_rows.nx")
MULTI = os.path.join(bundled_dir(), "nx_f32_attn_multi.nx")
MULTI_REF = os.path.join(HERE, "nx", "ref", "nx_f32_attn_multi_scalar.nx")


@pytest.fixture(scope="module")
def multi_builds():
    mods = {}
    for opt in _targets():
        mods[("c-unchecked", opt)] = (nxc.load(MULTI, opt=opt, checked=False),
                                      nxc.load(MULTI_REF, opt=opt, include=[bundled_dir()], checked=False))
    mods[("c", "2")] = (nxc.load(MULTI), nxc.load(MULTI_REF, include=[bundled_dir()]))
    mods[("py", "")] = (nxc.load(MULTI, backend="py"), nxc.load(MULTI_REF, backend="py", include=[bundled_dir()]))
    return mods


# (n_q, n_k, head_dim, causal): prefill (n_q == n_k), decode (n_q == 1), a chunk after a cache
# (n_q < n_k), more queries than keys (rows that see nothing), sizes off every vector width
MULTI_SHAPES = [(1, 1, 1, 0), (1, 9, 5, 1), (5, 5, 9, 1), (3, 17, 16, 1), (6, 4, 3, 1),
                (7, 20, 33, 0), (2, 33, 8, 1), (1, 40, 17, 0)]


@pytest.mark.parametrize("n_q,n_k,d,causal", MULTI_SHAPES)
def test_multi_rewrite_is_bit_identical_everywhere(multi_builds, n_q, n_k, d, causal):
    rng = np.random.default_rng(n_q * 10007 + n_k * 101 + d)
    Q, K, V = f32_words(rng, n_q * d, 3.0), f32_words(rng, n_k * d, 3.0), f32_words(rng, n_k * d, 3.0)
    scale = int(np.float32(1 / np.sqrt(d)).view(np.uint32))
    first = None
    for (backend, opt), (new, old) in multi_builds.items():
        if backend == "py" and n_q * n_k * d > 3000:
            continue
        o_new, o_old = np.zeros(n_q * d, np.int64), np.zeros(n_q * d, np.int64)
        assert new.nx_f32_attn_multi(Q.copy(), K.copy(), V.copy(), n_q, n_k, d, causal, scale, o_new) == 0
        assert old.nx_f32_attn_multi_scalar(Q.copy(), K.copy(), V.copy(), n_q, n_k, d, causal, scale, o_old) == 0
        _same(o_new, o_old, f"{backend} {opt} multi {n_q}x{n_k}x{d} causal={causal}: new vs scalar kernel")
        if first is None:
            first = o_old
        _same(o_new, first, f"{backend} {opt} multi: vs the first build")
    assert np.any(first != 0)


def test_multi_decode_at_head_dim_128(multi_builds):
    """A decode step (one query over a long cache) and a causal prefill at the bench's head_dim."""
    rng = np.random.default_rng(128)
    for n_q, n_k in ((1, 300), (37, 37)):
        d = 128
        Q, K, V = f32_words(rng, n_q * d, 1.0), f32_words(rng, n_k * d, 1.0), f32_words(rng, n_k * d, 1.0)
        scale = int(np.float32(1 / np.sqrt(d)).view(np.uint32))
        for (backend, opt), (new, old) in multi_builds.items():
            if backend == "py":
                continue
            o_new, o_old = np.zeros(n_q * d, np.int64), np.zeros(n_q * d, np.int64)
            new.nx_f32_attn_multi(Q.copy(), K.copy(), V.copy(), n_q, n_k, d, 1, scale, o_new)
            old.nx_f32_attn_multi_scalar(Q.copy(), K.copy(), V.copy(), n_q, n_k, d, 1, scale, o_old)
            _same(o_new, o_old, f"{opt} multi {n_q}x{n_k}")


def test_gcc_vectorizes_both_inner_loops(tmp_path):
    # nx_f32_attention: its products are nx_f32_gemm.nx's panel kernels (tests/test_linear_packed.py
    # checks those); here every step of its softmax over sixteen rows in lanes, the exp loop
    # included (scalar when the subtraction shared its loop: GCC threaded its NaN test);
    # nx_f32_attn_rows.nx: the tile loops of the in-place attention
    for path, loops in ((ATTN, {"scale and max": ("mk[r] = cur",),
                                "sub": ("a[r] = nx_f32_sub(a[r] as i64, m[r] as i64)",),
                                "exp": ("A[j] = nx_f32_attn_exp32(A[j])",),
                                "sum": ("su[r] = s as u32",),
                                "div": ("a[r] = nx_f32_div(a[r] as i64, su[r] as i64)",),
                                "Q panel": ("Qp[d * 16 + r] = q[d] as u32",)}),
                        (MULTI, {"scores": ("srow[j] = nx_f32_add(acc",), "P.V": ("oacc[d] = nx_f32_add(acc",),
                                 "exp": ("srow[j] = nx_f32_attn_exp32(srow[j])",)}),
                        (ROWS, {"scores": ("s[j] = nx_f32_add(acc",), "P.V": ("o[d] = nx_f32_add(acc",),
                                "exp": ("s[j] = nx_f32_attn_exp32(s[j])",),
                                "V tile": ("dst[d] = src[d] as u32",)})):
        vectorized, _ = vectorized_lines(path, tmp_path)
        for what, stmts in loops.items():
            for stmt in stmts:
                line = loop_line(path, stmt)
                assert line in vectorized, f"{path}: {what} loop (line {line}) not vectorized: {sorted(vectorized)}"


def test_march_is_in_the_flags_and_the_cache_key(monkeypatch):
    assert c_build.build_config("2") == "2"
    # no target named: the host's (the default build is the one that vectorizes widest)
    assert [f for f in c_build.flags_for("2") if f.startswith("-march")] == ["-march=native"]
    assert [f for f in c_build.flags_for("0") if f.startswith("-march")] == ["-march=native"]
    assert c_build.build_config("2", "x86-64-v3") == "2/x86-64-v3"
    assert c_build.flags_for("2/x86-64-v3")[-1] == "-march=x86-64-v3"
    # an explicit target replaces native's own -march
    assert [f for f in c_build.flags_for("native/x86-64") if f.startswith("-march")] == ["-march=x86-64"]
    program = check_file(ATTN, None, Diagnostics(warnings=False))
    emitted = emit_c(program)
    keys = {c_build.cache_key(emitted, opt) for opt in ("2", "2/x86-64", "2/x86-64-v3", "native")}
    assert len(keys) == 4
    # native means this CPU: another CPU (a shared cache folder) gets another key
    native_key, generic_key = c_build.cache_key(emitted, "2"), c_build.cache_key(emitted, "2/x86-64")
    # ... and so do the separately compiled objects and the runtime's object of a gate
    native_obj, generic_obj = objects.build_config_text(True, "2"), objects.build_config_text(True, "2/x86-64")
    native_rt = objects.runtime_key(True, "2")
    assert c_build.host_cpu() != ""
    monkeypatch.setattr(c_build, "host_cpu", lambda: "vendor_id=Other|flags=sse2")
    assert c_build.cache_key(emitted, "2") != native_key
    assert c_build.cache_key(emitted, "2/x86-64") == generic_key
    assert objects.build_config_text(True, "2") != native_obj
    assert objects.build_config_text(True, "2/x86-64") == generic_obj
    assert objects.runtime_key(True, "2") != native_rt
    with pytest.raises(ValueError, match="unknown target 'pentium'"):
        c_build.build_config("2", "pentium")
    with pytest.raises(ValueError, match="unknown target"):
        c_build.flags_for("2/pentium")


def test_cli_march_runs_the_gate(capsys):
    assert cli_main(["run", "--march", "x86-64", ATTN]) == 0
    with pytest.raises(SystemExit):
        cli_main(["run", "--march", "pentium", ATTN])
    assert "invalid choice: 'pentium'" in capsys.readouterr().err


EXP_DRIVER = '''
import "nx_syscalls.nx"
import "nx_f32.nx"
import "nx_f32_attention.nx"

// the same for the attention kernel's 32-bit-lane exp (inputs are float32 words: the low 32 bits)
func exp32_agree(x: *i64, n: i64, out: *i64) -> i64 {
    var i: i64 = 0
    var bad: i64 = 0
    while i < n {
        let w: i64 = x[i] & 0xFFFFFFFF
        out[i] = nx_f32_attn_exp32(w as u32) as i64
        if out[i] != nx_f32_exp(w) { bad = bad + 1 }
        i = i + 1
    }
    return bad
}

// out[i] = 1 where nx_f32_exp_lanes(x[i]) == nx_f32_exp(x[i]) bit for bit, else 0
func exp_agree(x: *i64, n: i64, out: *i64) -> i64 {
    var i: i64 = 0
    var bad: i64 = 0
    while i < n {
        out[i] = nx_f32_exp_lanes(x[i])
        if out[i] != nx_f32_exp(x[i]) { bad = bad + 1 }
        i = i + 1
    }
    return bad
}
'''


@pytest.mark.parametrize("backend", ["c", "c-unchecked", "py"])
def test_branch_free_exp_matches_nx_f32_exp(tmp_path, backend):
    """Every class of input: both signs, around the cut-offs 89 / -110, NaNs, infinities,
    subnormals, zeros, and upper bits set in the i64 word."""
    path = tmp_path / "exp_driver.nx"
    path.write_text(EXP_DRIVER)
    # c-unchecked: the build whose loops vectorize (so the lanes are checked, not only scalar code)
    mod = nxc.load(str(path), backend=backend.split("-")[0], include=[bundled_dir()],
                   checked=backend != "c-unchecked")
    rng = np.random.default_rng(5)
    n = 4_000 if backend == "py" else 200_000
    words = rng.integers(0, 1 << 32, n, dtype=np.int64)
    near = np.float32([89.0, -110.0, 88.72, -103.9, 0.0, 1.0]).view(np.uint32).astype(np.int64)
    edges = (near[:, None] + np.arange(-300, 301)[None, :]).ravel() & 0xFFFFFFFF
    special = np.array([0x7FC00000, 0xFFC00001, 0x7F800000, 0xFF800000, 0x80000000, 0,
                        1, 0x80000001, 0x1_3F800000, -1], np.int64)
    x = np.concatenate([words, edges, special, np.float32(rng.uniform(-120, 95, n // 4))
                        .view(np.uint32).astype(np.int64)])
    out = np.zeros(x.size, np.int64)
    assert mod.exp_agree(x, x.size, out) == 0
    assert len(set(out.tolist())) > 1000
    out32 = np.zeros(x.size, np.int64)
    assert mod.exp32_agree(x, x.size, out32) == 0
    assert len(set(out32.tolist())) > 1000


GATES = ["nx_f32.nx", "nx_f32_attention.nx", "nx_f32_gqa_attention.nx", "nx_f32_attn_multi.nx",
         "nx_paged_kv_gate.nx"]


@pytest.mark.parametrize("opt", ["2/x86-64", "2/x86-64-v3"])
@pytest.mark.parametrize("name", GATES)
def test_exact_bit_gates_pass_on_each_target(name, opt):
    """These gates check exact bits, so each vector width must give them."""
    from nxc.gates.run import execute
    if opt.endswith("v3") and not {"avx2", "fma", "bmi2"} <= _cpu_flags():
        pytest.skip("this CPU has no AVX2")
    program = check_file(os.path.join(bundled_dir(), name), None, Diagnostics())
    outcome = execute(program, "c", opt=opt, timeout=120)[0]
    assert outcome.status == "PASS", (opt, outcome.status, outcome.value)
