"""issue 29: the GGUF loader maps the file (nx_gguf_load_weight: each tensor packed from a
read-only sys_file_map of its bytes) and mmap=False reads it: the same model, bit for bit, on
checked C, unchecked C, the Python backend and the thread pool; and the per-layer progress line
(nx_gguf_load_qwen3_begin / _layer / _end)."""
from __future__ import annotations

import io
import os
from dataclasses import replace

import numpy as np
import pytest

import qwen3_support as qs
from nxc.models import qwen3

PROMPT = [5, 17, 200, 3, 99, 42]
SHAPES = {"f32": qs.TINY, "bf16": qs.TINY, "q8_0": qs.TINY, "q4_k": qs.TINY_K}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("mmap")
    out = {}
    for dt, shape in SHAPES.items():
        p = d / f"tiny-{dt}.gguf"
        qs.write_model(p, shape, seed=7, dtype=dt, quant_norms=dt != "f32")
        out[dt] = p
    return out


def _run(m):
    hidden, out = m.forward(PROMPT)
    logits = m.logits(out[-1])
    return [a.view(np.uint32).copy() for a in (hidden, out, logits)]


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("dtype", list(SHAPES))
def test_mapped_equals_read_on_c(files, dtype):
    read = _run(qwen3.load(files[dtype], mmap=False, threads=1))
    for checked, threads in ((True, 1), (True, 2), (False, 1), (False, 2)):
        mapped = _run(qwen3.load(files[dtype], checked=checked, threads=threads))
        assert _same(mapped, read), (dtype, checked, threads)


@pytest.mark.parametrize("dtype", ["f32", "q8_0"])
def test_mapped_equals_read_on_the_python_backend(files, dtype):
    c = _run(qwen3.load(files[dtype], mmap=False, threads=1))
    shape = replace(SHAPES[dtype], n_layers=1)
    p = files[dtype].with_name(f"py-{dtype}.gguf")
    qs.write_model(p, shape, seed=8, dtype=dtype, quant_norms=dtype != "f32")
    c = _run(qwen3.load(p, mmap=False, threads=1))
    py_read = _run(qwen3.load(p, backend="py", mmap=False, threads=2))
    py_mapped = _run(qwen3.load(p, backend="py", threads=2))
    assert _same(py_mapped, c) and _same(py_read, c)


def test_a_truncated_file_is_refused_mapped_or_read(files, tmp_path):
    data = files["q8_0"].read_bytes()
    p = tmp_path / "cut.gguf"
    p.write_bytes(data[:len(data) - 100])          # the last tensor runs past the end
    for mmap in (True, False):
        with pytest.raises(qwen3.Qwen3Error, match="truncated"):
            qwen3.load(p, mmap=mmap)


def test_progress_line_per_layer(files):
    prog = qwen3._LoadProgress(str(files["f32"]), True, stream=io.StringIO())
    m = qwen3.Qwen3.__new__(qwen3.Qwen3)
    m2 = qwen3.load(files["f32"])            # the model the steps fill in, loaded the usual way
    name = np.frombuffer(os.fsencode(str(files["f32"])), np.uint8).copy()
    m.nx, m._g, m._m = m2.nx, m2.nx.nx_gguf_new(), m2.nx.nx_qwen3_model_new()
    m.config = m2.config
    assert m._load(name, prog) == 0
    text = prog._stream.getvalue()
    n = qs.TINY.n_layers
    lines = text.split("\r")[1:]
    assert len(lines) == n + 1, text                # before each layer, and at the end
    for k, line in enumerate(lines):
        assert f"layer {k}/{n}" in line, line
    assert text.endswith("\n") and f"[{'#' * 30}]" in lines[-1]
    assert _same(_run(m), _run(m2))


def test_progress_is_off_when_asked_and_by_default_off_a_terminal(files, capfd):
    qwen3.load(files["f32"], progress=False)
    qwen3.load(files["f32"])                   # stderr is not a terminal here
    assert "loading" not in capfd.readouterr().err
    qwen3.load(files["f32"], progress=True)
    assert f"layer {qs.TINY.n_layers}/{qs.TINY.n_layers}" in capfd.readouterr().err
