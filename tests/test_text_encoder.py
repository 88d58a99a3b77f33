"""The Z-Image text encoder (nxc/models/text_encoder.py) on a tiny Qwen3 GGUF that carries a
trained tokenizer and a Qwen3-style chat template; and the KV cache sized to what is asked."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import qwen3_support as qs
import tokenizer_support as ts
from nxc.models import qwen3
from nxc.models.text_encoder import (QWEN3_USER_TURN, EncoderError, TextEncoder, hf_hidden_states,
                                     render_chat_template)

PROMPT = "a photo of a cat, 4k"


@pytest.fixture(scope="module")
def hf():
    return ts.train(vocab_size=600, n_docs=800)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory, hf):
    cfg = qs.Config(n_layers=3, vocab=hf.get_vocab_size())
    path = tmp_path_factory.mktemp("enc") / "tiny-enc.gguf"
    weights = qs.write_model(path, cfg, seed=11, tokenizer=hf)
    return path, cfg, weights


@pytest.fixture(scope="module")
def encoder(model_file):
    return qwen3.text_encoder(model_file[0])


def test_template_is_z_images_and_the_files_template_renders_to_it(encoder):
    want = "<|im_start|>user\na photo of a cat, 4k<|im_end|>\n<|im_start|>assistant\n"
    assert QWEN3_USER_TURN.format(prompt=PROMPT) == want
    assert encoder.template(PROMPT) == want              # rendered from tokenizer.chat_template
    off = render_chat_template(ts.CHAT_TEMPLATE, [{"role": "user", "content": "x"}], enable_thinking=False)
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_tokens_are_hf_tokenizers_ids_of_the_templated_prompt(encoder, hf):
    ids = encoder.tokens(PROMPT)
    assert ids == hf.encode(encoder.template(PROMPT)).ids
    assert ids[0] == encoder.tokenizer.token_to_id("<|im_start|>")


def test_embeddings_are_hidden_states_minus_2_and_match_the_float64_reference(encoder, model_file):
    _, cfg, weights = model_file
    emb = encoder.encode(PROMPT)
    ids = encoder.tokens(PROMPT)
    assert emb.dtype == np.float32 and emb.shape == (len(ids), cfg.hidden)
    hidden, out = encoder.model.forward(ids)
    assert np.array_equal(emb.view(np.uint32), hidden[cfg.n_layers - 1].view(np.uint32))
    ref_hidden, ref_out = qs.forward(cfg, weights, ids)
    ref = hf_hidden_states(ref_hidden, ref_out)[-2]
    err = float(np.abs(emb.astype(np.float64) - ref).max() / np.abs(ref).max())
    assert 0 < err <= 1e-5
    last = encoder.encode(PROMPT, layer=-1)
    assert np.array_equal(last.view(np.uint32), out.view(np.uint32))
    with pytest.raises(EncoderError, match="hidden_states has 4 entries"):
        encoder.encode(PROMPT, layer=4)


def test_truncation_to_max_length(model_file):
    enc = qwen3.text_encoder(model_file[0], max_length=5)
    assert len(enc.tokens(PROMPT)) == 5
    assert enc.encode(PROMPT).shape[0] == 5


def test_python_backend_gives_the_same_bits(model_file, encoder):
    py = qwen3.text_encoder(model_file[0], backend="py", max_length=4)
    c4 = TextEncoder(encoder.model, encoder.tokenizer, max_length=4)
    assert np.array_equal(py.encode(PROMPT).view(np.uint32), c4.encode(PROMPT).view(np.uint32))


def test_unchecked_gives_the_same_bits(model_file, encoder):
    fast = qwen3.text_encoder(model_file[0], checked=False)
    assert np.array_equal(fast.encode(PROMPT).view(np.uint32), encoder.encode(PROMPT).view(np.uint32))


def test_any_thread_count_gives_the_same_bits(model_file, encoder):
    """The fixture runs on every core (the default); 1 and 3 threads give the same words."""
    for t in (1, 3):
        other = qwen3.text_encoder(model_file[0], threads=t)
        assert other.model.threads == t
        assert np.array_equal(other.encode(PROMPT).view(np.uint32), encoder.encode(PROMPT).view(np.uint32))
    with pytest.raises(qwen3.Qwen3Error, match="from 1 to 256"):
        qwen3.load(model_file[0], threads=0)


def test_a_file_without_a_tokenizer_is_a_clear_error(tmp_path):
    p = tmp_path / "notok.gguf"
    qs.write_model(p, qs.TINY, seed=2)       # placeholder tokens, no merges
    with pytest.raises(EncoderError, match="merges is absent"):
        qwen3.text_encoder(p)


def _cmd(*args):
    return subprocess.run([sys.executable, "-m", "nxc.models.qwen3", "encode", *args],
                          capture_output=True, text=True, timeout=600)


def test_command_writes_the_embeddings(model_file, encoder, tmp_path):
    out = tmp_path / "emb.npy"
    r = _cmd(str(model_file[0]), PROMPT, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    got = np.load(out)
    assert np.array_equal(got.view(np.uint32), encoder.encode(PROMPT).view(np.uint32))
    r = _cmd(str(tmp_path / "missing.gguf"), PROMPT)
    assert r.returncode == 2 and r.stderr.startswith("error:") and "Traceback" not in r.stderr
    r = _cmd(str(model_file[0]), PROMPT, "--layer", "99")
    assert r.returncode == 2 and "hidden_states has" in r.stderr


# ---- the KV cache, sized to what is asked -------------------------------------------------

def test_session_holds_what_was_asked_and_refuses_more(model_file):
    m = qwen3.load(model_file[0])
    with m.session(block_size=4, max_tokens=6) as s:
        assert s.capacity == 8                      # two blocks of four
        s.step([1, 2, 3, 4, 5])
        s.step([6, 7, 8])
        with pytest.raises(qwen3.Qwen3Error, match="exceed the session's KV cache of 8"):
            s.step([9])
    with m.session() as s:
        assert s.capacity == min(qwen3.DEFAULT_SESSION_TOKENS, m.config["n_ctx"])
    with pytest.raises(qwen3.Qwen3Error, match="exceeds the model's context length"):
        m.session(max_tokens=m.config["n_ctx"] + 1)


def test_generate_is_capped_by_the_context(model_file):
    m = qwen3.load(model_file[0])
    ctx = m.config["n_ctx"]
    with pytest.raises(qwen3.Qwen3Error, match="exceed the context length"):
        m.generate([1, 2, 3], ctx)
    assert len(m.generate([1, 2, 3], 2)) == 2


def test_a_damaged_gguf_file_is_one_error_line_or_still_encodes(tmp_path):
    """bench/gguf_damage.py --quick: the header's bytes flipped and the file cut
    short; each encode either works or says one `error:` line (never a
    traceback, a signal, a hang or a fault inside the .nx reader)."""
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "gguf_damage.py")
    done = subprocess.run([sys.executable, bench, "--quick", "--keep", str(tmp_path)], capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0 and "12 damaged files" in done.stdout and ", 0 wrong" in done.stdout, \
        done.stdout + done.stderr
    assert "one-line error" in done.stdout          # most of them are refused, each in one line
