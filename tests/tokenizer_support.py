"""A Qwen2-style byte-level BPE trained here (no model hub on these machines), written
into a GGUF file, and the Hugging Face `tokenizers` oracle built from the same vocabulary
and merges. Used by tests/test_tokenizer.py, bench/tokenizer_check.py and the encoder tests.
"""
from __future__ import annotations

import json
import random
import unicodedata

from nxc.models.tokenizer import CONTROL, NORMAL, QWEN2_PATTERN, USER_DEFINED

# Qwen3's added tokens: the first three special (CONTROL in GGUF), the think tags not.
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
NON_SPECIAL = ["<think>", "</think>"]

# A Qwen3-style chat template, reduced to what the encoder uses (user turns, the
# generation prompt, enable_thinking); the real file's template is used when present.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}")

_WORDS = ("the quick brown fox jumps over lazy dog photo of a cat sitting on windowsill "
          "sunset mountain river lake city street night rain neon light portrait woman man "
          "child robot dragon castle forest painting oil watercolor cinematic 4k highly "
          "detailed don't it's we're they've I'm you'll he'd HELLO World Python tokenizer").split()
_CJK = "一只猫坐在窗台上夕阳山河湖城市街道夜晚雨霓虹灯光肖像女人男人孩子机器人龙城堡森林油画水彩"
_KANA = "ねこがまどにすわっているカタカナひらがな"
_HANGUL = "고양이가창문에앉아있다"
_EMOJI = ["😀", "🐱", "🌅", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇯🇵", "✨"]
_COMBINING = ["e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "\u0915\u093f", "Å", "ﬁ"]
_SPACES = [" ", "  ", "\t", "\n", "\r\n", "\n\n", "   \n", " \t ", "\u00a0", "\u3000", "\u2009"]


def random_code_point(rng: random.Random) -> str:
    """A code point assigned in this Python's Unicode database (unicodedata), any plane.

    Surrogates are left out (UTF-8 cannot hold them), and so are code points unassigned in
    that version: a character assigned later is \\p{L} or \\p{N} to one Unicode table and
    not to another, so `regex`, `tokenizers` and llama.cpp, each with its own Unicode tables, can
    each classify it differently (docs/qwen3.md, "Tokenizer")."""
    while True:
        cp = rng.choice([rng.randint(0x20, 0x7F), rng.randint(0xA0, 0x2FFF),
                         rng.randint(0x3000, 0xD7FF), rng.randint(0xE000, 0x10FFFF)])
        if unicodedata.category(chr(cp)) not in ("Cn", "Cs"):
            return chr(cp)


def random_text(rng: random.Random, n_parts: int | None = None, specials: bool = True) -> str:
    """One test string: words, CJK, emoji, combining marks, digits, whitespace runs,
    contractions in both cases, added tokens inside the text, random code points."""
    parts = []
    for _ in range(n_parts if n_parts is not None else rng.randint(1, 12)):
        k = rng.random()
        if k < 0.30:
            w = rng.choice(_WORDS)
            parts.append(w.upper() if rng.random() < 0.1 else w)
        elif k < 0.40:
            parts.append("".join(rng.choice(_CJK) for _ in range(rng.randint(1, 6))))
        elif k < 0.44:
            parts.append("".join(rng.choice(_KANA + _HANGUL) for _ in range(rng.randint(1, 5))))
        elif k < 0.50:
            parts.append(rng.choice(_EMOJI) * rng.randint(1, 2))
        elif k < 0.55:
            parts.append(rng.choice(_COMBINING))
        elif k < 0.63:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 14))))
        elif k < 0.75:
            parts.append(rng.choice(_SPACES) * rng.randint(1, 3))
        elif k < 0.80:
            parts.append(rng.choice(["'s", "'T", "'re", "'VE", "'m", "'Ll", "'d", "n't", "'S"]))
        elif k < 0.85 and specials:
            parts.append(rng.choice(SPECIAL + NON_SPECIAL + ["<|im_start", "<think", "|>"]))
        elif k < 0.92:
            parts.append(rng.choice([".", ",", "!?", "...", "--", "(", ")", "\"", "#", "$%", "@", "~~"]))
        else:
            parts.append("".join(random_code_point(rng) for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.5:
            parts.append(" ")
    return "".join(parts)


def corpus(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [random_text(rng, specials=False) for _ in range(n)]


def train(vocab_size: int = 3000, n_docs: int = 3000, seed: int = 1):
    """A trained Qwen2-style tokenizer (`tokenizers.Tokenizer`) with Qwen3's added tokens."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(n_docs, seed), trainer=trainer)
    tok = _with_rule_probes(tok)
    from tokenizers import AddedToken
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in NON_SPECIAL])
    return tok


# Merges no trainer learns under the Qwen2 pattern, appended so that a broken rule shows in the
# ids: digit pairs (the pattern takes one digit at a time: with them, reading digits in runs
# would give other tokens) and upper-case contractions (matched case-insensitively: read
# case-sensitively, "'S" would be split before BPE ever sees it).
_PROBE_MERGES = [("1", "2"), ("3", "4"), ("5", "6"), ("7", "8"), ("9", "0"), ("12", "34"),
                 ("'", "S"), ("'", "T"), ("'", "D"), ("'", "M")]


def _with_rule_probes(tok):
    from tokenizers import Tokenizer
    data = json.loads(tok.to_str())
    vocab, merges = data["model"]["vocab"], data["model"]["merges"]
    as_pairs = bool(merges) and not isinstance(merges[0], str)
    b2c = {ch: ch for ch in "0123456789'STDM"}     # printable ASCII is itself in GPT-2's alphabet
    for a, b in _PROBE_MERGES:
        a, b = "".join(b2c[c] for c in a), "".join(b2c[c] for c in b)
        if a + b in vocab:
            continue
        merges.append([a, b] if as_pairs else f"{a} {b}")
        vocab[a + b] = len(vocab)
    # An upper-case contraction glued to the next word ("'Sthe"): one piece if the contraction
    # rule were case-sensitive, two pieces as it is; a merge across them tells which.
    for c in ("'S", "'T", "'D", "'M"):
        for w in ("the", "a", "cat", "of", "photo", "sunset", "dog"):
            if w in vocab and c + w not in vocab:
                merges.append([c, w] if as_pairs else f"{c} {w}")
                vocab[c + w] = len(vocab)
    return Tokenizer.from_str(json.dumps(data))


def vocab_of(hf) -> tuple[list[str], list[str], list[int]]:
    """tokens (by id), merges ("a b"), GGUF token types, as convert_hf_to_gguf writes them."""
    data = json.loads(hf.to_str())
    vocab = dict(data["model"]["vocab"])
    added = {a["content"]: a for a in data["added_tokens"]}
    for a in added.values():
        vocab[a["content"]] = a["id"]
    tokens = [None] * (max(vocab.values()) + 1)
    for t, i in vocab.items():
        tokens[i] = t
    assert all(t is not None for t in tokens)
    types = [NORMAL] * len(tokens)
    for t, a in added.items():
        types[a["id"]] = CONTROL if a["special"] else USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    return tokens, merges, types


def add_tokenizer_kv(writer, hf) -> None:
    """The tokenizer.* keys of `hf` into a gguf.GGUFWriter, as llama.cpp's converter does."""
    tokens, merges, types = vocab_of(hf)
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_string("tokenizer.ggml.pre", "qwen2")
    writer.add_array("tokenizer.ggml.tokens", tokens)
    writer.add_array("tokenizer.ggml.token_type", types)
    writer.add_array("tokenizer.ggml.merges", merges)
    writer.add_uint32("tokenizer.ggml.eos_token_id", tokens.index("<|im_end|>"))
    writer.add_uint32("tokenizer.ggml.padding_token_id", tokens.index("<|endoftext|>"))
    writer.add_uint32("tokenizer.ggml.bos_token_id", tokens.index("<|endoftext|>"))
    writer.add_bool("tokenizer.ggml.add_bos_token", False)
    writer.add_string("tokenizer.chat_template", CHAT_TEMPLATE)


def write_tokenizer_gguf(path, hf) -> None:
    """A GGUF with only the tokenizer's metadata (no tensors)."""
    import gguf
    w = gguf.GGUFWriter(str(path), "qwen3")
    add_tokenizer_kv(w, hf)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
