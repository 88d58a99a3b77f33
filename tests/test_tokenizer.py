"""nxc.models.tokenizer against Hugging Face `tokenizers` built from the same vocabulary
and merges (tests/tokenizer_support.py trains a Qwen2-style byte-level BPE and writes it
into a GGUF file as llama.cpp's converter does)."""
from __future__ import annotations

import random
import struct
import subprocess
import sys

import pytest

import tokenizer_support as ts
from nxc.models.gguf_metadata import GGUFMetadataError, read_metadata
from nxc.models.tokenizer import Tokenizer, TokenizerError

N_STRINGS = 10_000


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    hf = ts.train()
    path = tmp_path_factory.mktemp("tok") / "tok.gguf"
    ts.write_tokenizer_gguf(path, hf)
    return hf, Tokenizer.from_gguf(path), path


def test_encode_and_decode_agree_with_tokenizers_on_10000_strings(pair):
    hf, tk, _ = pair
    rng = random.Random(20261203)
    strings = [ts.random_text(rng) for _ in range(N_STRINGS)]
    enc_bad = [s for s in strings if tk.encode(s) != hf.encode(s).ids]
    assert not enc_bad, [(s, tk.encode(s), hf.encode(s).ids) for s in enc_bad[:3]]
    dec_bad = [s for s in strings
               if tk.decode(tk.encode(s)) != hf.decode(hf.encode(s).ids, skip_special_tokens=False)]
    assert not dec_bad, dec_bad[:3]
    # The strings exercise what they claim to (a generator that lost a class would pass).
    joined = "".join(strings)
    for needle in ("<|im_start|>", "<think>", "\u200d", "\u0301", "\r\n", "\t", "一", "'S"):
        assert needle in joined, needle
    assert any(len(tk.encode(s)) > 20 for s in strings)


def test_special_false_reads_control_tokens_as_text_and_keeps_user_defined_ones(pair):
    hf, tk, _ = pair
    text = "<|im_start|>user\nhi<think>x</think><|im_end|>"
    with_specials = tk.encode(text)
    assert with_specials[0] == tk.token_to_id("<|im_start|>")
    assert tk.token_to_id("<think>") in with_specials
    plain = tk.encode(text, special=False)
    assert tk.token_to_id("<|im_start|>") not in plain
    assert tk.token_to_id("<think>") in plain            # user-defined: always matched
    hf.encode_special_tokens = True                      # HF's equivalent of parse_special=False
    try:
        rng = random.Random(5)
        for _ in range(2000):
            s = ts.random_text(rng)
            assert tk.encode(s, special=False) == hf.encode(s).ids, s
    finally:
        hf.encode_special_tokens = False


def test_decode_of_any_ids_agrees_including_broken_utf8(pair):
    hf, tk, _ = pair
    rng = random.Random(9)
    broken = 0
    for _ in range(3000):
        ids = [rng.randrange(tk.vocab_size) for _ in range(rng.randint(1, 10))]
        for skip in (False, True):
            got = tk.decode(ids, skip_special=skip)
            assert got == hf.decode(ids, skip_special_tokens=skip), (ids, skip)
            broken += "\ufffd" in got
    assert broken > 0        # random byte tokens do split UTF-8 sequences


def test_lookups_and_file_fields(pair):
    _, tk, _ = pair
    assert tk.vocab_size == len(ts.vocab_of(pair[0])[0])
    i = tk.token_to_id("<|im_end|>")
    assert tk.id_to_token(i) == "<|im_end|>" and tk.is_special(i)
    assert not tk.is_special(tk.token_to_id("<think>"))
    assert tk.eos_id == i and tk.bos_id == tk.token_to_id("<|endoftext|>")
    assert tk.chat_template == ts.CHAT_TEMPLATE
    assert tk.encode("") == []
    assert tk.decode(tk.encode("héllo wörld 你好 👍🏽")) == "héllo wörld 你好 👍🏽"
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        tk.decode([tk.vocab_size])


def _gguf(path, kv: dict):
    import gguf
    w = gguf.GGUFWriter(str(path), "qwen3")
    for k, v in kv.items():
        if isinstance(v, str):
            w.add_string(k, v)
        elif isinstance(v, list):
            w.add_array(k, v)
        else:
            w.add_uint32(k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.parametrize("kv, message", [
    ({}, "no tokenizer"),
    ({"tokenizer.ggml.model": "llama"}, "tokenizer model 'llama' is not read"),
    ({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe",
      "tokenizer.ggml.tokens": ["a", "b"], "tokenizer.ggml.merges": ["a b"]}, "pre-tokenizer 'llama-bpe' is not read"),
    ({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": ["a"]}, "merges is absent"),
    ({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": ["a", "b"],
      "tokenizer.ggml.merges": ["ab"]}, "merge 0 is not two tokens"),
    ({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": ["a", "b"], "tokenizer.ggml.merges": ["a b"],
      "tokenizer.ggml.eos_token_id": 7}, "eos_token_id = 7 is not a token id"),
])
def test_refusals_name_what_is_wrong(tmp_path, kv, message):
    p = tmp_path / "t.gguf"
    _gguf(p, kv)
    with pytest.raises(TokenizerError, match=message):
        Tokenizer.from_gguf(p)


def test_damaged_files_are_errors_not_crashes(pair, tmp_path):
    _, _, good = pair
    data = good.read_bytes()
    for cut in (3, 10, 30, len(data) // 3, len(data) // 2, 2 * len(data) // 3):
        p = tmp_path / f"cut{cut}.gguf"
        p.write_bytes(data[:cut])
        with pytest.raises((TokenizerError, GGUFMetadataError)):
            Tokenizer.from_gguf(p)
    # A string whose length says 2^60 bytes.
    p = tmp_path / "huge.gguf"
    p.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 60) + b"x" * 16)
    with pytest.raises(GGUFMetadataError, match="truncated"):
        read_metadata(p)
    with pytest.raises(TokenizerError, match="cannot open"):
        Tokenizer.from_gguf(tmp_path / "missing.gguf")


def test_command_encodes_decodes_and_reports_errors(pair, tmp_path):
    _, tk, path = pair
    run = lambda *a: subprocess.run([sys.executable, "-m", "nxc.models.tokenizer", *a],
                                    capture_output=True, text=True, timeout=300)
    r = run(str(path), "a photo of a cat<|im_end|>")
    assert r.returncode == 0, r.stderr
    ids = [int(x) for x in r.stdout.strip().split(",")]
    assert ids == tk.encode("a photo of a cat<|im_end|>")
    r = run(str(path), "--decode", ",".join(map(str, ids)), "--skip-special")
    assert r.returncode == 0 and r.stdout == "a photo of a cat\n"
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all, really")
    r = run(str(bad), "x")
    assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr
    r = run(str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
