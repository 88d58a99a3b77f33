"""The tokenizer a GGUF file carries: GPT-2 byte-level BPE with the Qwen2 pre-tokenizer.

Where it lives, and why: here, in Python beside the model, not in `.nx`. Tokenizing is
string processing over Unicode (NFC normalization, `\\p{L}` / `\\p{N}` classes in the
pre-tokenizer's regex, UTF-8 round trips) and `.nx` has neither strings nor Unicode
tables; the work is a few microseconds per word, next to seconds of model, so nothing is
gained by moving it into the kernels' language. The `regex` package gives the Unicode
classes (`re` has no `\\p{...}`).

What is read (llama.cpp's GGUF keys): `tokenizer.ggml.model` ("gpt2"; any other model is
refused), `tokenizer.ggml.pre` ("qwen2", or absent; any other pre-tokenizer is refused,
since its regex would differ), `tokenizer.ggml.tokens`, `tokenizer.ggml.token_type`,
`tokenizer.ggml.merges`, `tokenizer.ggml.bos_token_id` / `eos_token_id` /
`padding_token_id`, `tokenizer.ggml.add_bos_token`, `tokenizer.chat_template`.

Encoding, as Hugging Face `tokenizers` does for Qwen2's tokenizer.json (and llama.cpp's
LLAMA_VOCAB_PRE_TYPE_QWEN2):
1. added tokens are split out of the raw text first, leftmost and, at one place, longest
   first: CONTROL tokens (HF's special added tokens such as `<|im_start|>`) when
   `special=True`, USER_DEFINED tokens (HF's non-special added tokens such as `<think>`)
   always, as llama.cpp's `parse_special` does;
2. the text between them is NFC-normalized;
3. split by the Qwen2 pattern (`QWEN2_PATTERN`), each piece's UTF-8 bytes mapped to GPT-2's
   printable byte alphabet;
4. each piece is merged by BPE: repeatedly the adjacent pair with the lowest merge rank,
   every occurrence left to right, until no pair of the merges list is left.
tests/test_tokenizer.py checks encode and decode against `tokenizers` built from the same
vocabulary and merges on >= 10,000 strings; bench/tokenizer_check.py runs more.
"""
from __future__ import annotations

import argparse
import sys
import unicodedata
from functools import lru_cache

import regex

from nxc.models.gguf_metadata import GGUFMetadataError, read_metadata

# Qwen2's pre-tokenizer (tokenizer.json: Split, behavior "Isolated"; llama.cpp: QWEN2).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# llama.cpp's token types (llama_token_type / gguf-py TokenType).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_PRE_PATTERNS = {"qwen2": QWEN2_PATTERN}
# Pieces kept per tokenizer: the BPE of a word is memoized, a bound keeps memory flat on
# long, varied inputs.
_CACHE_SIZE = 1 << 16


class TokenizerError(ValueError):
    """The file's tokenizer is missing, damaged, or of a kind this module does not read."""


@lru_cache(maxsize=1)
def byte_alphabet() -> tuple[dict[int, str], dict[str, int]]:
    """GPT-2's reversible map of the 256 byte values to printable characters, and back.

    Printable Latin-1 bytes stand for themselves; the other 68 take the characters from
    U+0100 on, in byte order, so no byte maps to whitespace or a control character."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1))
            + list(range(0xAE, 0xFF + 1)))
    to_char, n = {}, 0
    for b in range(256):
        if b in keep:
            to_char[b] = chr(b)
        else:
            to_char[b] = chr(256 + n)
            n += 1
    return to_char, {c: b for b, c in to_char.items()}


class Tokenizer:
    def __init__(self, tokens: list[str], merges: list[str], token_types: list[int] | None = None,
                 *, pre: str = "qwen2", bos_id: int | None = None, eos_id: int | None = None,
                 pad_id: int | None = None, add_bos: bool = False, chat_template: str | None = None):
        if pre not in _PRE_PATTERNS:
            raise TokenizerError(f"pre-tokenizer {pre!r} is not read (reads: {', '.join(_PRE_PATTERNS)})")
        if token_types is not None and len(token_types) != len(tokens):
            raise TokenizerError(f"{len(token_types)} token types for {len(tokens)} tokens")
        self._tokens = list(tokens)
        self._types = list(token_types) if token_types is not None else [NORMAL] * len(tokens)
        self._ids: dict[str, int] = {}
        for i, t in enumerate(self._tokens):
            self._ids.setdefault(t, i)       # a duplicate string keeps its first id, as HF's vocab
        self._ranks: dict[tuple[str, str], int] = {}
        for rank, m in enumerate(merges):
            a, sep, b = m.partition(" ")
            if not sep or not a or not b:
                raise TokenizerError(f"merge {rank} is not two tokens separated by a space: {m!r}")
            self._ranks.setdefault((a, b), rank)
        self._pre = regex.compile(_PRE_PATTERNS[pre])
        self.bos_id, self.eos_id, self.pad_id = bos_id, eos_id, pad_id
        self.add_bos = add_bos
        self.chat_template = chat_template
        self._byte_to_char, self._char_to_byte = byte_alphabet()
        self._added_split = {True: self._added_pattern((CONTROL, USER_DEFINED)),
                             False: self._added_pattern((USER_DEFINED,))}
        self._piece_cache: dict[str, tuple[int, ...]] = {}

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_gguf(cls, path) -> "Tokenizer":
        """The tokenizer stored in the GGUF file at `path`."""
        try:
            meta = read_metadata(path)
        except GGUFMetadataError as e:
            raise TokenizerError(str(e)) from None
        return cls.from_metadata(meta, source=str(path))

    @classmethod
    def from_metadata(cls, meta: dict, source: str = "the file") -> "Tokenizer":
        model = meta.get("tokenizer.ggml.model")
        if model is None:
            raise TokenizerError(f"{source}: no tokenizer (tokenizer.ggml.model is absent)")
        if model != "gpt2":
            raise TokenizerError(f"{source}: tokenizer model {model!r} is not read (reads: 'gpt2', byte-level BPE)")
        pre = meta.get("tokenizer.ggml.pre", "qwen2")
        if pre not in _PRE_PATTERNS:
            raise TokenizerError(f"{source}: pre-tokenizer {pre!r} is not read (reads: {', '.join(_PRE_PATTERNS)})")
        tokens = meta.get("tokenizer.ggml.tokens")
        merges = meta.get("tokenizer.ggml.merges")
        if not isinstance(tokens, list) or not tokens:
            raise TokenizerError(f"{source}: tokenizer.ggml.tokens is absent or empty")
        if not isinstance(merges, list):
            raise TokenizerError(f"{source}: tokenizer.ggml.merges is absent (a BPE tokenizer needs it)")
        if not all(isinstance(t, str) for t in tokens) or not all(isinstance(m, str) for m in merges):
            raise TokenizerError(f"{source}: tokenizer.ggml.tokens and .merges must be string arrays")
        types = meta.get("tokenizer.ggml.token_type")
        if types is not None and (not isinstance(types, list) or len(types) != len(tokens)):
            raise TokenizerError(f"{source}: tokenizer.ggml.token_type does not have one entry per token")

        def token_id(key):
            v = meta.get(key)
            if v is None:
                return None
            if not isinstance(v, int) or not 0 <= v < len(tokens):
                raise TokenizerError(f"{source}: {key} = {v!r} is not a token id")
            return v

        try:
            return cls(tokens, merges, types, pre=pre,
                       bos_id=token_id("tokenizer.ggml.bos_token_id"),
                       eos_id=token_id("tokenizer.ggml.eos_token_id"),
                       pad_id=token_id("tokenizer.ggml.padding_token_id"),
                       add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", False)),
                       chat_template=meta.get("tokenizer.chat_template"))
        except TokenizerError as e:
            raise TokenizerError(f"{source}: {e}") from None

    def _added_pattern(self, kinds):
        texts = sorted({t for t, k in zip(self._tokens, self._types) if k in kinds and t},
                       key=lambda t: (-len(t), t))
        if not texts:
            return None
        # Longest first: at one position the longest added token wins, as HF's matcher does.
        return regex.compile("|".join(regex.escape(t) for t in texts))

    # ---- lookups ----------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self._tokens)

    def token_to_id(self, token: str) -> int | None:
        return self._ids.get(token)

    def id_to_token(self, i: int) -> str:
        if not 0 <= i < len(self._tokens):
            raise TokenizerError(f"token id {i} is outside the vocabulary (0 .. {len(self._tokens) - 1})")
        return self._tokens[i]

    def is_special(self, i: int) -> bool:
        return self._types[i] == CONTROL

    # ---- encode -----------------------------------------------------------------------

    def encode(self, text: str, *, special: bool = True, add_bos: bool | None = None) -> list[int]:
        """Token ids of `text`. special=False reads control tokens' text as plain text."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, not {type(text).__name__}")
        ids: list[int] = []
        if self.add_bos if add_bos is None else add_bos:
            if self.bos_id is None:
                raise TokenizerError("add_bos asked for, but the file names no bos token")
            ids.append(self.bos_id)
        split = self._added_split[special]
        pos = 0
        if split is not None:
            for m in split.finditer(text):
                if m.start() > pos:
                    self._encode_text(text[pos:m.start()], ids)
                ids.append(self._ids[m.group()])
                pos = m.end()
        if pos < len(text):
            self._encode_text(text[pos:], ids)
        return ids

    def _encode_text(self, text: str, out: list[int]) -> None:
        text = unicodedata.normalize("NFC", text)
        cache = self._piece_cache
        for piece in self._pre.findall(text):
            got = cache.get(piece)
            if got is None:
                got = self._bpe(piece)
                if len(cache) >= _CACHE_SIZE:
                    cache.clear()
                cache[piece] = got
            out.extend(got)

    def _bpe(self, piece: str) -> tuple[int, ...]:
        b2c = self._byte_to_char
        word = [b2c[b] for b in piece.encode("utf-8", errors="surrogatepass")]
        ranks = self._ranks
        while len(word) > 1:
            best, best_rank = None, None
            for pair in zip(word, word[1:]):
                r = ranks.get(pair)
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = pair, r
            if best is None:
                break
            a, b = best
            merged, i, n = [], 0, len(word)
            while i < n:
                if i + 1 < n and word[i] == a and word[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        ids = []
        for sym in word:
            i = self._ids.get(sym)
            if i is not None:
                ids.append(i)
                continue
            # A symbol the vocabulary lacks: its bytes one by one (a vocabulary without every
            # byte is damaged; this keeps the text rather than dropping it).
            for ch in sym:
                j = self._ids.get(ch)
                if j is None:
                    raise TokenizerError(f"the vocabulary has no token for byte 0x{self._char_to_byte[ch]:02X}")
                ids.append(j)
        return tuple(ids)

    # ---- decode -----------------------------------------------------------------------

    def decode(self, ids, *, skip_special: bool = False) -> str:
        """The text of `ids`; invalid UTF-8 becomes U+FFFD. skip_special drops control tokens."""
        c2b = self._char_to_byte
        out = bytearray()
        for i in ids:
            i = int(i)
            tok = self.id_to_token(i)
            kind = self._types[i]
            if kind == CONTROL:
                if not skip_special:
                    out += tok.encode("utf-8", errors="surrogateescape")
            elif kind == USER_DEFINED:
                out += tok.encode("utf-8", errors="surrogateescape")
            else:
                for ch in tok:
                    b = c2b.get(ch)
                    out += bytes((b,)) if b is not None else ch.encode("utf-8", errors="surrogateescape")
        return out.decode("utf-8", errors="replace")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m nxc.models.tokenizer",
        description="Tokenize text with the tokenizer a GGUF file carries (GPT-2 byte-level BPE, "
                    "Qwen2 pre-tokenizer), or decode token ids.")
    ap.add_argument("model", metavar="MODEL.gguf", help="a GGUF file with tokenizer.ggml.* metadata")
    ap.add_argument("text", nargs="?", help="the text to encode (omit with --decode)")
    ap.add_argument("--decode", metavar="IDS", help="comma-separated token ids to turn back into text")
    ap.add_argument("--no-special", action="store_true",
                    help="read control tokens such as <|im_start|> in TEXT as plain text")
    ap.add_argument("--skip-special", action="store_true", help="with --decode: leave control tokens out")
    ap.add_argument("--show", action="store_true", help="print each id with its token string")
    args = ap.parse_args(argv)
    if (args.text is None) == (args.decode is None):
        ap.error("give either TEXT or --decode IDS")
    try:
        tok = Tokenizer.from_gguf(args.model)
        if args.decode is not None:
            try:
                ids = [int(x) for x in args.decode.split(",") if x.strip()]
            except ValueError:
                ap.error(f"--decode: not a comma-separated list of integers: {args.decode!r}")
            print(tok.decode(ids, skip_special=args.skip_special))
            return 0
        ids = tok.encode(args.text, special=not args.no_special)
    except TokenizerError as e:
        print(f"nxc tokenizer: error: {e}", file=sys.stderr)
        return 2
    if args.show:
        for i in ids:
            print(f"{i}\t{tok.id_to_token(i)!r}")
    else:
        print(",".join(map(str, ids)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
